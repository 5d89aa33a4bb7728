"""File names of NFS handles (dissectors/nfs_names.py): learnt from MOUNT, LOOKUP, CREATE, READDIRPLUS,
RENAME, LINK replies in capture order, shown as nfs.name and nfs.full_name beside every handle, in the
tree, JSON and filters; bounded and charged to the memory budget.

The conversation is built from the declarations (craft, over RPC-over-RDMA); tshark's values on the real
captures are compared in tests/test_nfs_tshark.py (with its name snooping on).
"""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))

from analysis_build import CLIENT, SERVER, Wire  # noqa: E402
from conftest import ROOT, capture  # noqa: E402
from rdmaspy import craft  # noqa: E402
from rdmaspy.budget import Budget  # noqa: E402
from rdmaspy.dissectors import nfs, nfs3, nfs4, nfs_side, onc_rpc, rpcrdma, xdrlang as x  # noqa: E402
from rdmaspy.dissectors.nfs_names import NameMap  # noqa: E402
from rdmaspy.engine import Engine  # noqa: E402
from rdmaspy.fieldview import layer_nodes  # noqa: E402
from rdmaspy.packet import Layer  # noqa: E402
from rdmaspy.readers import open_capture  # noqa: E402

ROOT_FH = b"\x01\x00\x01\x00\x00\x00\x00\x00"
DIR = b"\x01\x00\x01\x01" + b"D" * 12
FILE = b"\x01\x00\x01\x01" + b"F" * 12
OTHER = b"\x01\x00\x01\x01" + b"O" * 12
EARLY = b"\x01\x00\x01\x01" + b"E" * 12
WCC = {"before": None, "after": None}
EXPORT = f"{SERVER}:/export"


def _read(fh: bytes) -> tuple[int, int, int, dict, tuple]:
    return (nfs.NFS_PROG, 3, 6, {"file": fh, "offset": 0, "count": 4},
            (0, {"file_attributes": None, "count": 0, "eof": True, "data": b""}))


def _dirop(proc: int, key: str, d: bytes, name: str, fh: bytes) -> tuple[int, int, int, dict, tuple]:
    args = {key: {"dir": d, "name": name}}
    if proc == 3:
        return nfs.NFS_PROG, 3, 3, args, (0, {"object": fh, "obj_attributes": None, "dir_attributes": None})
    args["how"] = (2, b"\0" * 8)
    return nfs.NFS_PROG, 3, proc, args, (0, {"obj": fh, "obj_attributes": None, "dir_wcc": WCC})


def _entry(name: str, fh: bytes) -> dict:
    return {"fileid": 7, "name": name, "cookie": 1, "name_attributes": None, "name_handle": fh}


# (program, version, procedure, arguments, results), one call and its reply each, in this order
CONVERSATION = [
    _read(EARLY),                                                      # frames 4 and 6 (each SEND is ACKed)
    (nfs.MOUNT_PROG, 3, 1, "/export", (0, {"fhandle": ROOT_FH, "auth_flavors": [1]})),
    _dirop(3, "what", ROOT_FH, "dir", DIR),
    _dirop(8, "where", DIR, "data.bin", FILE),
    (nfs.NFS_PROG, 3, 17, {"dir": DIR, "cookie": 0, "cookieverf": b"\0" * 8, "dircount": 512, "maxcount": 4096},
     (0, {"dir_attributes": None, "cookieverf": b"\0" * 8, "eof": True,
          "entries": [_entry(".", DIR), _entry("..", ROOT_FH), _entry("other.txt", OTHER)]})),
    _read(FILE),                                                                          # frames 24, 26
    (nfs.NFS_PROG, 3, 14, {"from": {"dir": DIR, "name": "other.txt"}, "to": {"dir": ROOT_FH, "name": "moved.txt"}},
     (0, {"fromdir_wcc": WCC, "todir_wcc": WCC})),
    (nfs.NFS_PROG, 3, 15, {"file": FILE, "link": {"dir": ROOT_FH, "name": "hard"}},
     (0, {"file_attributes": None, "linkdir_wcc": WCC})),
    (nfs.NFS_PROG, 3, 1, {"object": OTHER}, (0, {"type": 1, "mode": 0o644, "nlink": 1, "uid": 0, "gid": 0,
                                                   "size": 0, "used": 0,
                                                   "rdev": {"specdata1": 0, "specdata2": 0}, "fsid": 0,
                                                   "fileid": 9, **{t: {"seconds": 0, "nseconds": 0}
                                                                   for t in ("atime", "mtime", "ctime")}})),
    _dirop(3, "what", DIR, "early", EARLY),
    _read(EARLY),
]


def _decls(prog: int, vers: int, proc: int) -> tuple[x.XdrType, x.XdrType]:
    if prog == nfs.MOUNT_PROG:
        args, res = nfs_side.PROGRAMS[prog][vers]
        return args[proc], res[proc]
    return nfs3.ARGS[proc], nfs3.RES[proc]


def build(path: Path) -> Path:
    w = Wire()
    w.cm()
    cred = onc_rpc.encode_auth_sys(0, "client", 0, 0)
    for xid, (prog, vers, proc, args, res) in enumerate(CONVERSATION, 0x6E000001):
        a, r = _decls(prog, vers, proc)
        w.send(CLIENT, rpcrdma.encode_v1(xid, 0, 32, payload=onc_rpc.encode_call(xid, prog, vers, proc,
                                                                                  x.encode(a, args), cred)))
        w.send(SERVER, rpcrdma.encode_v1(xid, 0, 32, payload=onc_rpc.encode_reply(xid, x.encode(r, res))))
    craft.write_pcap(str(path), w.out())
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("names") / "nfs_names.pcap")


def names_by_frame(path: Path, fill_late: bool = False, engine: Engine | None = None) -> dict[int, list]:
    """frame -> [(hash, name, full name)] of every handle its NFS or MOUNT layer shows."""
    engine = engine or Engine(strict=True)
    pkts = []
    out: dict[int, list] = {}
    with open_capture(str(path)) as cap:
        for frame in cap:
            pkt = engine.dissect(frame)
            pkts.append(pkt)
            if not fill_late:
                _names(pkt, out)     # filled now, as a sink fills it
    if fill_late:
        for pkt in pkts:
            _names(pkt, out)
    return {k: [tuple(v) for v in vs] for k, vs in out.items()}


def _names(pkt, out: dict[int, list]) -> None:
    if True:
        for lay in pkt.layers:
            if lay.proto not in ("nfs", "mount"):
                continue
            for _d, item, value, _o, _l in layer_nodes(lay):
                if isinstance(item, Layer):
                    continue
                if item.name == "nfs.fh.hash":
                    out.setdefault(pkt.frame.num, []).append([value, None, None])
                elif item.name == "nfs.name" and out.get(pkt.frame.num) and _in_handle(out, pkt, 1):
                    out[pkt.frame.num][-1][1] = value
                elif item.name == "nfs.full_name":
                    out[pkt.frame.num][-1][2] = value


def _in_handle(out: dict, pkt, slot: int) -> bool:
    """An nfs.name right after a handle's hash is the handle's (a diropargs' name follows its handle's bytes)."""
    return out[pkt.frame.num][-1][slot] is None


def _h(fh: bytes) -> int:
    return nfs3.fh_hash(fh)


def test_handles_are_named_from_mount_lookup_create_and_readdirplus(built):
    frames = names_by_frame(built)
    # the READ of the created file (frame 24): its name and its path from the export's root
    assert (_h(FILE), "data.bin", f"{EXPORT}/dir/data.bin") in frames[24]
    # the MOUNT reply names the root as tshark does (server:path); the LOOKUP reply names the directory
    assert (_h(ROOT_FH), EXPORT, EXPORT) in frames[10]
    assert (_h(DIR), "dir", f"{EXPORT}/dir") in frames[14]
    # a READDIRPLUS entry's handle, named in the reply that lists it; "." and ".." name nothing
    assert (_h(OTHER), "other.txt", f"{EXPORT}/dir/other.txt") in frames[22]
    assert (_h(DIR), "dir", f"{EXPORT}/dir") in frames[22]


def test_a_handle_used_before_its_name_is_seen_has_none(built):
    frames = names_by_frame(built)
    assert frames[4] == [(_h(EARLY), None, None)]                      # READ before any LOOKUP named it
    assert (_h(EARLY), "early", f"{EXPORT}/dir/early") in frames[max(frames)]


def test_rename_moves_a_name_and_a_hard_link_keeps_the_first(built):
    frames = names_by_frame(built)
    getattr_call = 36
    assert frames[getattr_call] == [(_h(OTHER), "moved.txt", f"{EXPORT}/moved.txt")]
    link_call = 32
    assert (_h(FILE), "data.bin", f"{EXPORT}/dir/data.bin") in frames[link_call]


def test_a_packet_filled_late_shows_what_was_known_when_it_went_by(built):
    assert names_by_frame(built, fill_late=True) == names_by_frame(built)


def test_names_reach_filters_and_json(built):
    def decode(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "rdmaspy", "decode", str(built), *args], capture_output=True,
                              text=True, check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
                              ).stdout
    fields = decode("-Y", 'nfs.full_name contains "data"', "-T", "fields", "-e", "frame.number")
    assert fields.split() == ["18", "24", "32"]        # CREATE's reply, the READ call, LINK's call
    objs = [json.loads(line) for line in decode("-Y", "frame.number == 24", "-T", "json").splitlines()]
    assert _values(objs, "nfs.full_name") == [f"{EXPORT}/dir/data.bin"]
    assert _values(objs, "nfs.name") == ["data.bin"]
    tree = decode("-Y", "frame.number == 24", "-V")
    assert "Full Name: 192.0.2.40:/export/dir/data.bin" in tree


def _values(obj: object, key: str) -> list:
    """Every value of ``key`` anywhere in a JSON document."""
    if isinstance(obj, list):
        return [v for o in obj for v in _values(o, key)]
    if isinstance(obj, dict):
        return [v for k, o in obj.items() for v in ((o if isinstance(o, list) else [o]) if k == key
                                                    else _values(o, key))]
    return []


def test_the_map_is_bounded_and_charged_to_the_budget():
    budget = Budget(1 << 20)
    names = NameMap(limit=100, budget=budget)
    for i in range(1000):
        names.bind(i.to_bytes(8, "big"), b"dir", f"file-{i}", i)
    assert len(names.by_fh) == 100 and len(names.by_name) == 100
    assert names.held == budget.used > 0
    assert names.of((999).to_bytes(8, "big"), 999) == ("file-999", None)     # its directory has no name
    assert names.of((0).to_bytes(8, "big"), 999) == (None, None)             # the oldest forgotten
    freed = names.shed(names.held // 2)
    assert freed > 0 and names.held == budget.used and len(names.by_fh) == 100 - freed


def test_a_full_name_is_not_made_of_a_loop():
    names = NameMap()
    names.bind(b"a", b"b", "a", 1)
    names.bind(b"b", b"a", "b", 1)
    assert names.of(b"a", 5) == ("a", None)


def test_hostile_naming_replies_mark_the_packet_and_name_nothing(tmp_path):
    w = Wire()
    w.cm()
    cred = onc_rpc.encode_auth_sys(0, "client", 0, 0)
    call = x.encode(nfs3.ARGS[3], {"what": {"dir": DIR, "name": "x"}})
    replies = [b"\0\0\0\0\0\0\1\0",                          # a handle of 256 bytes
               b"\0\0\0\0\0\0\0\x10" + FILE + b"\0" * 8,      # well formed
               b"\0\0\0\0"]                                      # the handle missing
    for xid, reply in enumerate(replies, 0x6F000001):
        w.send(CLIENT, rpcrdma.encode_v1(xid, 0, 32, payload=onc_rpc.encode_call(xid, nfs.NFS_PROG, 3, 3, call, cred)))
        w.send(SERVER, rpcrdma.encode_v1(xid, 0, 32, payload=onc_rpc.encode_reply(xid, reply)))
    path = tmp_path / "hostile.pcap"
    craft.write_pcap(str(path), w.out())
    engine = Engine()
    with open_capture(str(path)) as cap:
        pkts = [engine.dissect(f) for f in cap]
    names = engine.session.state["nfs.names"]
    assert list(names.by_fh) == [FILE]                 # only the well-formed reply binds
    malformed = [v for p in pkts for lay in p.layers if lay.proto == "nfs"
                 for _d, item, v, _o, _l in layer_nodes(lay) if getattr(item, "name", "") == "nfs.malformed"]
    assert len(malformed) == 2                         # the tree says why; the summary is as before


def test_real_capture_names_the_file_written_and_read():
    frames = names_by_frame(capture("nfs/rxe-nfsv3-full.pcap"))
    named = {n for vs in frames.values() for _h2, n, _f in vs if n}
    assert {"v3", "io.bin"} <= named
    # the export's root came by a MOUNT over TCP (not decoded): no full names, as tshark in one pass
    # until that MOUNT
    fulls = {f for vs in frames.values() for _h2, _n, f in vs if f}
    assert fulls == set()


# --- NFSv4: the current handle followed through each COMPOUND ---------------------------------------------
V4_ROOT = b"\x01\x00\x01\x00" + b"R" * 8
V4_EXP = b"\x01\x00\x01\x00" + b"X" * 8
V4_FILE = b"\x01\x00\x01\x00" + b"F" * 8
V4_NEW = b"\x01\x00\x01\x00" + b"N" * 8
V4_LISTED = b"\x01\x00\x01\x00" + b"L" * 8
NOENT = 2


def _v4(op: int, args: object = None, res: object = None, status: int = 0) -> tuple[int, bytes, bytes]:
    """One operation of a built COMPOUND: (number, encoded arguments, encoded status and results); values not
    given are made from the declaration (nfs_procs_build.example)."""
    from nfs_procs_build import example
    a, r = nfs4.ARGS[op], nfs4.RES[op]
    body = x.encode(r, res if res is not None else example(r, 0)) if status == 0 else b""
    return op, x.encode(a, args if args is not None else example(a, 0)), status.to_bytes(4, "big") + body


def _open(name: str) -> dict:
    from nfs_procs_build import example
    args = example(nfs4.ARGS[18], 0)
    args["claim"] = (0, name)
    return args


def _readdir_res(entries: list[tuple[str, bytes]]) -> dict:
    return {"cookieverf": 0, "reply": {"eof": True, "entries": [
        {"cookie": i + 1, "name": n, "attrs": {"filehandle": fh}} for i, (n, fh) in enumerate(entries)]}}


# Each COMPOUND (its operations after SEQUENCE), in order
V4_CONVERSATION = [
    [_v4(24), _v4(10, res={"object": V4_ROOT})],                                  # frames 4, 6: the root, /
    [_v4(22, {"object": V4_ROOT}), _v4(15, {"objname": "export"}), _v4(10, res={"object": V4_EXP})],
    [_v4(22, {"object": V4_EXP}), _v4(18, _open("data.bin")), _v4(10, res={"object": V4_FILE})],
    [_v4(22, {"object": V4_EXP}), _v4(15, {"objname": "missing"}, status=NOENT)],    # frames 16, 18
    [_v4(22, {"object": V4_FILE}), _v4(32), _v4(22, {"object": V4_ROOT}), _v4(11, {"newname": "hard"})],
    [_v4(22, {"object": V4_EXP}), _v4(26, {"cookie": 0, "cookieverf": 0, "dircount": 512, "maxcount": 4096,
                                            "attr_request": [1 << 19]}),
     ],                                                                               # frames 24, 26
    [_v4(22, {"object": V4_EXP}), _v4(32), _v4(22, {"object": V4_ROOT}),
     _v4(29, {"oldname": "listed.txt", "newname": "moved.txt"})],                    # frames 28, 30
    [_v4(22, {"object": V4_NEW}), _v4(25)],                                          # frames 32, 34
    [_v4(22, {"object": V4_LISTED}), _v4(25)],                                       # frames 36, 38
]


def build_v4(path: Path) -> Path:
    from rdmaspy.dissectors.xdr import p32
    w = Wire()
    w.cm()
    cred = onc_rpc.encode_auth_sys(0, "client", 0, 0)
    listing = _readdir_res([("listed.txt", V4_LISTED)])
    for xid, ops in enumerate(V4_CONVERSATION, 0x7E000001):
        if ops[-1][0] == 26:            # READDIR: its listing
            ops = [*ops[:-1], (26, ops[-1][1], p32(0) + x.encode(nfs4.RES[26], listing))]
        status = next((int.from_bytes(r[:4], "big") for _o, _a, r in ops if r[:4] != b"\0\0\0\0"), 0)
        call = nfs.encode_compound([(o, a) for o, a, _r in ops], minor=1)
        reply = nfs.encode_compound([(o, r) for o, _a, r in ops], minor=1, status=status)
        w.send(CLIENT, rpcrdma.encode_v1(xid, 0, 32, payload=onc_rpc.encode_call(xid, nfs.NFS_PROG, 4, 1, call, cred)))
        w.send(SERVER, rpcrdma.encode_v1(xid, 0, 32, payload=onc_rpc.encode_reply(xid, reply)))
    craft.write_pcap(str(path), w.out())
    return path


@pytest.fixture(scope="module")
def built_v4(tmp_path_factory) -> Path:
    return build_v4(tmp_path_factory.mktemp("names4") / "nfs4_names.pcap")


def test_nfsv4_names_follow_the_current_handle_through_each_compound(built_v4):
    frames = names_by_frame(built_v4)
    assert (_h(V4_ROOT), "/", "/") in frames[6]                                  # PUTROOTFH, GETFH
    assert (_h(V4_EXP), "export", "/export") in frames[10]                       # PUTFH, LOOKUP, GETFH
    assert (_h(V4_FILE), "data.bin", "/export/data.bin") in frames[14]           # OPEN (CLAIM_NULL), GETFH
    # a LOOKUP that failed names nothing: its COMPOUND stopped there
    assert all(n != "missing" for vs in frames.values() for _h2, n, _f in vs)
    # LINK (the saved file, named in the current directory) keeps the file's first name
    assert (_h(V4_FILE), "data.bin", "/export/data.bin") in frames[20]
    # READDIR's entries named by their filehandle attribute, then RENAME moves one
    assert frames[36] == [(_h(V4_LISTED), "moved.txt", "/moved.txt")]
    assert frames[32] == [(_h(V4_NEW), None, None)]                              # never named


def test_nfsv4_names_against_tshark(built_v4):
    """tshark 4.0 names NFSv4 handles from OPEN alone, with the name as its full name: rdmaspy's full name
    ends with tshark's."""
    from conftest import tshark_fields
    rows = tshark_fields(built_v4, ["nfs.name", "nfs.full_name"], "-o", "nfs.file_name_snooping:TRUE",
                         "-o", "nfs.file_full_name_snooping:TRUE", "-o", "nfs.fhandle_find_both_reqrep:TRUE")
    ours = names_by_frame(built_v4)
    theirs_full = {(i, f) for i, row in enumerate(rows, 1) for f in row["nfs.full_name"]}
    assert (14, "data.bin") in theirs_full
    for num, full in theirs_full:
        assert any(f is not None and f.endswith("/" + full) for _h2, _n, f in ours.get(num, [])), (num, full)


def test_the_names_are_kept_in_a_tui_checkpoint(built):
    """The TUI's checkpoints pickle the session: the names go with it, still charged to its budget."""
    import pickle
    engine = Engine()
    with open_capture(str(built)) as cap:
        for frame in cap:
            engine.dissect(frame)
    session = pickle.loads(pickle.dumps(engine.session))
    names = session.state["nfs.names"]
    assert names.of(FILE, 1 << 30) == ("data.bin", f"{EXPORT}/dir/data.bin")
    assert names in session.budget.holders and names.held > 0


def _names_learnt(sink_of, matcher: str | None = None) -> NameMap | None:
    from rdmaspy.filter import compile_filter
    from rdmaspy.output.lines import LineWriter
    from rdmaspy.pipeline import Options, Pipeline
    out = LineWriter(io.BytesIO(), False)
    opts = Options(matcher=compile_filter(matcher) if matcher else None)
    with open_capture(str(capture("nfs/rxe-nfsv3-full.pcap"))) as cap:
        pipe = Pipeline(cap, opts, [sink_of(out)])
        pipe.run()
    return pipe.engine.session.state.get("nfs.names")


def test_summary_lines_learn_no_names_a_tree_a_filter_or_stats_does():
    from rdmaspy.commands.stats import Stats
    from rdmaspy.output.sinks import SummarySink, TextSink
    assert _names_learnt(SummarySink) is None           # no line shows a name: nothing learnt
    for names in (_names_learnt(lambda out: TextSink(out, True, False)),
                  _names_learnt(SummarySink, "nfs.name == \"io.bin\""),
                  _names_learnt(lambda out: Stats())):     # stats reads records only, and groups them by file
        assert names is not None and names.held > 0
