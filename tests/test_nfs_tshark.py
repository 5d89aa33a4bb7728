"""Differential against tshark 4.0: frame by frame, field by field, the values of every nfs.*, mount.*,
nlm.* and nfsacl.* field rdmaspy declares under a name tshark also has, on every shipped NFS capture
(captures/ and captures/nfs/) and the built one.

Table-driven: the fields compared are the catalog's names that ``tshark -G fields`` knows too, less
``NOT_COMPARED`` (each with the reason); declaring a new field under a tshark name adds it here.  Per
frame the *set* of values each side shows is compared (tshark dissects a Write-list reply twice in one
frame, rdmaspy shows the reduced reply and the one rebuilt with the chunk's data).

A call reduced by a Read list is shown by tshark only in the frame where the RDMA READ completes it;
rdmaspy shows it there too (compared) and in its SEND frame, reduced (checked, not compared).

tshark shows a few values under another field's name (``TSHARK_RENAMES``: the time of sattr3's set_mtime
as nfs.atime); the test moves rdmaspy's value there and compares.

MOUNT before an RDMA mount goes over plain TCP, which rdmaspy does not decode (RPC over RDMA only): those
frames are skipped.  An NFSv4 COMPOUND or CB_COMPOUND frame is compared in full where every operation in
it is declared on the engine and decoded by tshark (``v4_in_full``; its fattr4s' values included), on the
COMPOUND's own fields elsewhere (and where tshark misreads an item, ``TSHARK_MISREADS``).

Where tshark is wrong, the test names the frames and checks rdmaspy instead (``_tshark_misreads``):
an NFSv3 READ reply whose data came by RDMA Write into a Write chunk.  tshark 4.0 decodes the reduced
reply as if the data followed its length word, finds the message short and marks it malformed, so it
shows nothing past the length (its READ3resok count, eof); rdmaspy shows the reply with its data
reduced, then rebuilt with the data the RDMA WRITEs moved.  Where tshark reads an NFSv4 operation
otherwise than its RFC (``TSHARK_SKIPS``: OPEN's CLAIM_DELEG_CUR_FH, whose stateid it does not read), its
values are a subset of rdmaspy's.
"""
from __future__ import annotations

import functools
import ipaddress
import subprocess
from pathlib import Path

import pytest

from conftest import CAPTURES, capture, require_tshark, tshark_fields, tshark_int
from rdmaspy.dissectors import nfs, nfs4, nfs41
from rdmaspy.engine import Engine
from rdmaspy.fields import CATALOG
from rdmaspy.fieldview import layer_nodes
from rdmaspy.filter import known_fields
from rdmaspy.packet import Layer, Packet
from rdmaspy.readers import open_capture

# every shipped NFS capture, and every declared procedure built from its declarations (nfs_procs_build.py)
NFS_CAPTURES = sorted(p.name for p in CAPTURES.glob("*nfs*.pcap")) + \
    sorted(f"nfs/{p.name}" for p in (CAPTURES / "nfs").glob("*.pcap")) + ["nfs_all_procs.pcap"]
PREFIXES = ("nfs.", "mount.", "nlm.", "nfsacl.")
SIDE_PROGRAMS = {100003, 100005, 100021, 100227}     # what is not one of these is an NFSv4 callback program
LAYERS = ("nfs", "mount", "nlm", "nfsacl")

# rdmaspy names handles by default (nfs_names); tshark when asked to, in one pass, in capture order as
# rdmaspy does.  Its third preference, fhandle_find_both_reqrep, adds hidden copies of the other message's
# handles (a call's handle in its reply), which rdmaspy does not show: test_nfs_names compares with it on.
NAME_SNOOPING = ("-o", "nfs.file_name_snooping:TRUE", "-o", "nfs.file_full_name_snooping:TRUE")
# Names both sides have whose values are not compared here, and why.
_INDEX = ("tshark 4.0 shows, for the n-th item of this list, the word at the item's start read with n as its "
          "encoding (the first item's first word, byte-swapped for the second, 0 for the third); rdmaspy shows n")
NOT_COMPARED: dict[str, str] = {"nfs.ff.source_server_index": _INDEX, "nfs.ff.callback_id_index": _INDEX}
# Frames where tshark rebuilds an RPC message rdmaspy does not, and why tshark is wrong there.
_SQUEEZED = ("tshark rebuilds this Read-chunk call from RDMA READ responses with the lost ones' holes squeezed "
             "out (a WRITE call shorter than its Read chunk); rdmaspy rebuilds it whole from the responses sent "
             "again (captures/README.md)")
TSHARK_WRONG: dict[tuple[str, int], str] = {
    ("rxe-nfsv3-loss.pcap", 228): _SQUEEZED + ": 128,108 bytes for 131,180",
    ("rxe-nfsv3-loss.pcap", 621): _SQUEEZED + ": 127,084 bytes for 131,180",
    ("rxe-nfsv41-loss.pcap", 304): _SQUEEZED + ": 130,240 bytes for 131,248",
    ("rxe-nfsv41-loss.pcap", 371): _SQUEEZED + ": 80,064 bytes for 131,248",
    ("rxe-nfsv3-lossy.pcap", 273): _SQUEEZED + ": 129,132 bytes for 131,180",
    ("rxe-nfsv3-lossy.pcap", 629): _SQUEEZED + ": 41,068 bytes for 131,180",
}
# The COMPOUNDs of the built capture whose operations are cut in the middle (nfs_procs_build.hostile_compounds):
# not compared, tshark and rdmaspy reading on into the next operation's bytes and stopping at different places
HOSTILE_TAG = "hostile"
# tshark's options a capture needs: past a hole in a TCP stream, tshark 4.0 rebuilds iWARP's FPDUs only when told
# to reassemble out-of-order segments (captures/README.md)
TSHARK_OPTIONS: dict[str, tuple[str, ...]] = {
    "nfs/siw-nfsv42-full-loss2.pcap": ("-o", "tcp.reassemble_out_of_order:TRUE"),
}
# Where tshark 4.0 reads an NFSv4 operation otherwise than its RFC, by what rdmaspy finds in the frame:
# (field, value) -> why.  There tshark's values are a subset of rdmaspy's (which shows what tshark skips).
TSHARK_SKIPS: dict[tuple[str, int], str] = {
    ("nfs.open.claim_type", 5): "tshark 4.0 does not read OPEN's CLAIM_DELEG_CUR_FH stateid (RFC 8881 §18.16.1): "
                                "it leaves those 16 bytes undissected",
}
# Values tshark shows under another field's name, by the kind of message: (program, version, call or reply)
# -> {rdmaspy's name: the name tshark shows it under}.  rdmaspy's is right; the test checks the value is there.
TSHARK_RENAMES = {
    # sattr3's set_mtime with SET_TO_CLIENT_TIME: tshark 4.0 shows the time as nfs.atime (its atime's field)
    (100003, 3, 0): {"nfs.mtime.sec": "nfs.atime.sec", "nfs.mtime.nsec": "nfs.atime.nsec"},
}

# An NFSv4 frame is compared on these, the COMPOUND's own fields, and in full where every operation in it
# is declared on the engine (nfs4.ARGS for a call, nfs4.RES for a reply, less nfs4.PARTIAL): declaring an
# operation brings the frames it is in under comparison.
V4_COMPOUND = {"nfs.procedure_v4", "nfs.tag", "nfs.minorversion", "nfs.ops.count", "nfs.opcode", "nfs.nfsstat4",
               "nfs.status"}
CB_COMPOUND = {"nfs.cb_procedure", "nfs.tag", "nfs.minorversion", "nfs.callback.ident", "nfs.cb.operation",
               "nfs.nfsstat4", "nfs.status"}
_V4_CODES = {name: code for code, name in nfs.NFS4_OPS.items()}
_CB_CODES = {name: code for code, name in nfs.NFS_CB_OPS.items()}
# Operations tshark 4.0 does not decode.  It shows their opcode, then the rest of the COMPOUND as data
# (GET_DIR_DELEGATION, SET_SSV, WANT_DELEGATION), or reads their arguments as the next operation (the
# callback ones): rdmaspy shows them under names of its own, tshark's for the pieces they share with other
# operations, and a frame holding one is compared on the COMPOUND's own fields.
TSHARK_UNDECODED = {46, 54, 56}
TSHARK_UNDECODED_CB = {6, 7, 8, 9, 10, 12, 14}
# Items tshark 4.0 misreads, by a name rdmaspy shows them under: a frame where rdmaspy shows one is
# compared on the COMPOUND's own fields.
TSHARK_MISREADS = {
    "nfs.adb.block.count": "WRITE_SAME's app_data_block4: tshark reads its length4 items (block size and count, "
                           "relative offsets: 64 bits, RFC 7862 §15.12) as 32-bit words, and the pattern unpadded",
    "nfs.gsshandle4": "EXCHANGE_ID's ssv_prot_info4: tshark reads the spi_handles<> list as one opaque (its count "
                      "as the first handle's length) and the rest of the reply from there",
}


def v4_in_full(info) -> bool:
    """Whether every operation of this COMPOUND (or CB_COMPOUND) is declared on the engine, in full (fattr4s
    included: their values are decoded attribute by attribute, nfs4_attrs.py), and decoded by tshark."""
    if info.prog == 100003:
        decls = nfs4.RES if info.msgtype == 1 else nfs4.ARGS
        partial, undecoded, names = nfs4.PARTIAL, TSHARK_UNDECODED, _V4_CODES
    else:
        decls = nfs41.CB_RES if info.msgtype == 1 else nfs41.CB_ARGS
        partial, undecoded, names = nfs41.CB_PARTIAL, TSHARK_UNDECODED_CB, _CB_CODES
    codes = [names.get(name) for name in info.ops or ()]
    return bool(codes) and all(c in decls and c not in undecoded and not (info.msgtype == 1 and c in partial)
                               for c in codes)


@functools.lru_cache(maxsize=1)
def tshark_types() -> dict[str, str]:
    """Every tshark field of the four protocols -> its type (FT_UINT32, FT_BYTES...)."""
    out = subprocess.run([require_tshark(), "-G", "fields"], capture_output=True, text=True, check=True).stdout
    types = {}
    for line in out.splitlines():
        cols = line.split("\t")
        if len(cols) > 3 and cols[0] == "F" and cols[2].startswith(PREFIXES):
            types[cols[2]] = cols[3]
    return types


def compared_fields() -> list[str]:
    known_fields()          # every dissector module imported: the catalog complete
    types = tshark_types()
    return sorted(n for n in CATALOG.fields if n.startswith(PREFIXES) and n in types and n not in NOT_COMPARED)


def _theirs(name: str, value: str) -> object:
    kind = tshark_types()[name]
    if value == "<MISSING>":          # an item tshark expected and did not find (a short message)
        return None
    if kind == "FT_BYTES":
        return bytes.fromhex(value.replace(":", ""))
    if kind in ("FT_IPv4", "FT_IPv6"):
        return ipaddress.ip_address(value).packed
    if kind.startswith(("FT_UINT", "FT_INT", "FT_BOOLEAN")):
        return tshark_int(value)
    return value


def _ours(value: object) -> object:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def our_values(pkt: Packet, names: set[str]) -> dict[str, set]:
    out: dict[str, set] = {}
    for lay in pkt.layers:
        if lay.proto not in LAYERS:
            continue
        for _d, item, value, _o, _l in layer_nodes(lay):
            # tshark prints an empty string or byte string as nothing
            if not isinstance(item, Layer) and item.name in names and value != "" and value != b"":
                out.setdefault(item.name, set()).add(_ours(value))
    return out


@functools.lru_cache(maxsize=None)
def decoded(name: str) -> tuple[list[dict[str, list[str]]], list[dict[str, set]], list[Packet]]:
    fields = compared_fields()
    path = capture(name)
    theirs = tshark_fields(path, fields + ["_ws.col.Info", "frame.protocols"], *TSHARK_OPTIONS.get(name, ()),
                           *NAME_SNOOPING)
    engine = Engine(strict=True)
    names = set(fields)
    ours, pkts = [], []
    with open_capture(str(path)) as cap:
        for frame in cap:
            pkt = engine.dissect(frame)
            ours.append(our_values(pkt, names))
            pkts.append(pkt)
    return theirs, ours, pkts


def tcp_mount_roots(theirs: list[dict[str, list[str]]]) -> set[str]:
    """The roots tshark names from MOUNT replies over plain TCP (``server:path``), which rdmaspy does not
    decode (RPC over RDMA only): the handles named from them have no full name in rdmaspy."""
    paths = {p for row in theirs if "tcp" in "".join(row["frame.protocols"]).split(":")
             for p in row.get("mount.path", [])}
    return {n for row in theirs for n in row.get("nfs.name", []) if any(n.endswith(":" + p) for p in paths)}


def _from_tcp_mount(value: object, roots: set[str]) -> bool:
    return isinstance(value, str) and any(value == r or value.startswith(r + "/") for r in roots)


# Calls whose names rdmaspy learns and tshark 4.0 does not (it binds the replies of v2 LOOKUP, CREATE, MKDIR,
# v3 LOOKUP, CREATE, MKDIR, READDIRPLUS and v4 OPEN only, and in READDIRPLUS binds no entry): v3 SYMLINK,
# MKNOD, RENAME, LINK; v2 RENAME, LINK; in NFSv4 the root (PUTROOTFH), LOOKUP, CREATE, LINK, RENAME and
# READDIR entries.  A handle named from one of them shows a name tshark has not (or had before).
_MORE_SOURCES = {(3, 10), (3, 11), (3, 14), (3, 15), (2, 11), (2, 12)}


def names_only_rdmaspy_learns(ours: list[dict[str, set]], pkts: list[Packet]) -> set[str]:
    """Every name a source of _MORE_SOURCES, a READDIRPLUS entry or an NFSv4 operation gave in this capture
    (OPEN's name is a pathname component too: those tshark has are checked to be rdmaspy's)."""
    out: set[str] = {"/"}
    for mine, pkt in zip(ours, pkts):
        info = (pkt.extra or {}).get("rpc")
        if info is not None and info.prog == 100003 and (info.vers, info.proc) in _MORE_SOURCES:
            out |= mine.get("nfs.name", set())
        for k in ("nfs.readdirplus.entry.name", "nfs.pathname.component", "nfs.entry_name"):
            out |= mine.get(k, set())
    return out


def _names_differ_as_named(mine: dict[str, set], tv: dict[str, set], more: set[str], v4: bool) -> bool:
    """nfs.name and nfs.full_name taken out of both sides and checked: where they differ, the names
    come from sources only rdmaspy reads or replies tshark did not match to their call (``more``), or
    the frame is NFSv4, where tshark records no directory for a name and shows the name alone as its
    full name."""
    def last(full: object) -> str:
        return str(full).rsplit("/", 1)[-1]
    ours_n, theirs_n = mine.pop("nfs.name", set()), tv.pop("nfs.name", set())
    ours_f, theirs_f = mine.pop("nfs.full_name", set()), tv.pop("nfs.full_name", set())
    if not (ours_n ^ theirs_n) <= more:
        return False
    if v4:
        # tshark's NFSv4 full name is the name alone: rdmaspy's ends with it
        return theirs_f <= {last(f) for f in ours_f} | more
    return all(last(f) in more for f in ours_f ^ theirs_f)


def _tshark_misreads(row: dict[str, list[str]], pkt: Packet) -> bool:
    """An NFS READ reply whose data went into a Write chunk, which tshark 4.0 marks malformed."""
    info = (pkt.extra or {}).get("rpc")     # the rebuilt reply's facts, where rdmaspy rebuilt one
    return "[Malformed Packet]" in "".join(row["_ws.col.Info"]) and pkt.layer("rpcrdma.rebuilt") is not None \
        and info is not None and any(d.kind == "read_data" for d in info.ddp or ())


def test_the_fields_compared_cover_nfsv3_and_its_side_programs():
    fields = set(compared_fields())
    for name in ("nfs.fh.hash", "nfs.fhandle", "nfs.fh.length", "nfs.offset3", "nfs.count3", "nfs.status3",
                 "nfs.read.eof", "nfs.write.stable", "nfs.write.committed", "nfs.verifier", "nfs.name",
                 "nfs.procedure_v3", "nfs.fattr3.size", "nfs.mode3.rusr", "nfs.wcc_attr.size",
                 "nfs.readdirplus.entry.name", "nfs.access_rights", "nfs.fsinfo.rtmax", "nfs.atime.sec"):
        assert name in fields, name


@pytest.mark.parametrize("name", NFS_CAPTURES)
def test_every_declared_nfs_field_has_tsharks_values(name):
    theirs, ours, pkts = decoded(name)
    assert len(theirs) == len(ours)
    compared = misread = full4 = skipped = hostile = refused = 0
    roots = tcp_mount_roots(theirs)
    more = names_only_rdmaspy_learns(ours, pkts)
    named = 0
    for num, (row, mine, pkt) in enumerate(zip(theirs, ours, pkts), 1):
        if HOSTILE_TAG in row.get("nfs.tag", ()):
            # an operation cut in the middle: both read on into the next one's bytes, and stop elsewhere
            hostile += 1
            refused += any(e.group == "malformed" for e in pkt.expert or ())
            continue
        tv = {k: {_theirs(k, v) for v in vals} - {None, ""} for k, vals in row.items()
              if vals and k not in ("_ws.col.Info", "frame.protocols")}
        for k in ("nfs.name", "nfs.full_name"):     # names rooted in a MOUNT over TCP: not seen by rdmaspy
            if k in tv:
                tv[k] = {v for v in tv[k] if not _from_tcp_mount(v, roots)}
        tv = {k: vals for k, vals in tv.items() if vals}
        wrong = TSHARK_WRONG.get((name, num))
        if wrong is not None:
            assert tv and not mine and pkt.layer("rpcrdma.rebuilt") is None, f"{name} frame {num}: {wrong}"
            continue
        if pkt.layer("rpc") is None and not mine and tv:
            # RPC over plain TCP (MOUNT to mountd before an RDMA mount): rdmaspy decodes RPC over RDMA only
            protocols = "".join(row["frame.protocols"]).split(":")
            assert "tcp" in protocols and "rpcordma" not in protocols, f"{name} frame {num}"
            continue
        info = (pkt.extra or {}).get("rpc")
        renames = TSHARK_RENAMES.get((info.prog, info.vers, info.msgtype), {}) if info is not None else {}
        for ours_name, their_name in renames.items():
            if ours_name in mine:
                mine = dict(mine)
                mine[their_name] = mine.get(their_name, set()) | mine.pop(ours_name)
        v4 = info is not None and (info.prog == 100003 and info.vers == 4 or info.prog not in SIDE_PROGRAMS)
        if v4 and (not v4_in_full(info) or any(k in mine for k in TSHARK_MISREADS)):
            own = V4_COMPOUND if info.prog == 100003 else CB_COMPOUND
            tv = {k: v for k, v in tv.items() if k in own}
            mine = {k: v for k, v in mine.items() if k in own}
        full4 += v4 and v4_in_full(info)
        if _tshark_misreads(row, pkt):
            # tshark read the reduced reply as if its data were inline: what it shows is a subset of
            # rdmaspy's (the header, the attributes, count and eof), and rdmaspy's rebuilt copy has the data
            misread += 1
            for k, vals in tv.items():
                assert vals <= mine.get(k, set()), f"{name} frame {num} (tshark misreads a Write-chunk reply): {k}"
            assert mine.get("nfs.data"), f"{name} frame {num}: the READ data rebuilt from the Write chunk"
            lengths = mine["nfs.read.data_length"] if v4 else mine["nfs.count3"]
            assert lengths == {len(d) for d in mine["nfs.data"]}, f"{name} frame {num}"
            continue
        skips = [why for (k, v), why in TSHARK_SKIPS.items() if v in mine.get(k, ())]
        if skips:
            for k, vals in tv.items():
                assert vals <= mine.get(k, set()), f"{name} frame {num} ({skips[0]}): {k}"
            assert mine.keys() - tv.keys() or any(mine[k] - tv[k] for k in tv), f"{name} frame {num}: {skips[0]}"
            skipped += 1
            continue
        if not tv and mine:
            info = (pkt.extra or {}).get("rpc")
            # a call reduced by a Read list: tshark shows it only where the RDMA READ completes it (compared
            # there); rdmaspy shows the reduced call in its SEND frame too, its DDP item reduced
            # or a message rdmaspy rebuilt where tshark rebuilt none (the loss captures: captures/README.md)
            msg = (pkt.extra or {}).get("rpcrdma")
            if pkt.layer("rpcrdma.rebuilt") is not None:
                continue
            # or a reply to a call tshark did not rebuild (a lost RDMA READ response): tshark cannot match it
            # (nor learn the name of a handle it returns)
            protocols = "".join(row["frame.protocols"]).split(":")
            if "rpc" in protocols and info is not None and info.msgtype == 1 and info.call_frame is not None:
                more |= mine.get("nfs.name", set())
                continue
            assert msg is not None and msg.reads, f"{name} frame {num}: NFS where tshark has none"
            assert any(not d.inline for d in info.ddp or ()) or info.msgtype == 0, f"{name} frame {num}"
            continue
        mine = dict(mine)
        named += bool(tv.get("nfs.name")) and mine.get("nfs.name") == tv.get("nfs.name")
        assert _names_differ_as_named(mine, tv, more, v4), f"{name} frame {num}: nfs.name, nfs.full_name"
        assert mine == tv, f"{name} frame {num}"
        compared += bool(tv)
    assert compared > 10
    assert named > 0            # handles named alike (diropargs' names are nfs.name too)
    if "nfsv4" in name:
        assert full4 > 20          # SEQUENCE, PUTFH, READ, WRITE, GETATTR's request... compared in full
    if name == "rxe-nfsv3-rdma.pcap":
        assert misread == 7
    if name == "nfs_all_procs.pcap":
        assert hostile > 100 and refused > 40      # the built capture's cut operations: most refused, with a reason
    if name == "nfs_all_procs.pcap":
        assert skipped == 3         # the OPEN calls with CLAIM_DELEG_CUR_FH


def test_the_built_capture_is_what_its_builder_makes(tmp_path):
    """tests/fixtures/nfs_all_procs.pcap is made from the declarations: a changed or new declaration needs
    it rebuilt (``python3 tests/fixtures/nfs_procs_build.py``) to be compared with tshark."""
    import importlib.util
    from conftest import FIXTURES
    spec = importlib.util.spec_from_file_location("nfs_procs_build", FIXTURES / "nfs_procs_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    built = mod.build(tmp_path / "nfs_all_procs.pcap")
    assert built.read_bytes() == (FIXTURES / "nfs_all_procs.pcap").read_bytes(), \
        "rebuild it: python3 tests/fixtures/nfs_procs_build.py"
