"""Build hook: the decoder's per-packet path compiled with mypyc, and the traffic generator's native hot path.

pyproject.toml holds the package metadata.

- The modules every packet goes through (reader, engine, packet, the RoCEv2/IB, RPC-over-RDMA,
  ONC RPC, NFS and NVMe/RDMA dissectors, summary and JSON output) are compiled to C with mypyc when the
  wheel is built: the same Python source, two to three times faster.  Editable installs
  (``pip install -e``) stay pure Python, so an edit takes effect at once.  Where no C compiler
  or mypyc is at hand the package installs as pure Python.  RDMASPY_COMPILE=0 skips the
  compilation, RDMASPY_COMPILE=1 makes a failure an error.  With them comes
  rdmaspy.dissectors._icrc, the RoCEv2 ICRC in C (CRC-32 folded with PCLMULQDQ where
  the CPU has it, else zlib's) and MPA's CRC-32c (SSE4.2's instruction, else a table), and
  rdmaspy.output._scan, the line writer's check for control characters, rdmaspy.output._line,
  a summary line's columns in one call, rdmaspy.analysis._ring, the transport analysis' PSN ring,
  rdmaspy.dissectors._hex, the Info column's hexadecimal and decimal numbers, and rdmaspy._heap,
  the C library's heap kept between a reader's chunks.
- The extension rdmaspy.traffic._hotpath is built only where the libibverbs and librdmacm
  headers exist (rdma-core's -dev packages); elsewhere ``rdmaspy serve/load`` say that this
  machine has no native RDMA path and point to the lab.  RDMASPY_NATIVE=0 skips it,
  RDMASPY_NATIVE=1 makes its absence an error.
"""
import os
import sys
import sysconfig
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The per-packet path of `rdmaspy decode` (summary and JSON).  Each must type-check under mypy:
# mypyc trusts the annotations and checks them at run time.
COMPILED = [
    "rdmaspy/records.py", "rdmaspy/fields.py", "rdmaspy/rules.py", "rdmaspy/packet.py", "rdmaspy/fieldview.py",
    "rdmaspy/engine.py", "rdmaspy/registry.py", "rdmaspy/session.py", "rdmaspy/readers/pcap.py",
    "rdmaspy/pipeline.py", "rdmaspy/output/text.py", "rdmaspy/conversation.py",
    "rdmaspy/dissectors/data.py", "rdmaspy/dissectors/ethernet.py", "rdmaspy/dissectors/ip.py",
    "rdmaspy/dissectors/transport.py", "rdmaspy/dissectors/infiniband.py",
    "rdmaspy/dissectors/rdma_reassembly.py", "rdmaspy/dissectors/rpcrdma.py", "rdmaspy/dissectors/rpcrdma_message.py",
    "rdmaspy/dissectors/xdr.py", "rdmaspy/dissectors/xdrlang.py",
    "rdmaspy/dissectors/hexfmt.py",
    "rdmaspy/dissectors/onc_rpc.py", "rdmaspy/dissectors/nfs.py", "rdmaspy/dissectors/nfs4.py",
    # the rest of NFS's declarations and walks (fattr4, NFSv4.1/4.2, v2/v3, the file names): every argument
    # of -V and JSON goes through them
    "rdmaspy/dissectors/nfs2.py", "rdmaspy/dissectors/nfs3.py", "rdmaspy/dissectors/nfs4_attrs.py",
    "rdmaspy/dissectors/nfs41.py", "rdmaspy/dissectors/nfs_names.py",
    "rdmaspy/dissectors/rpcrdma2.py",
    "rdmaspy/dissectors/rdma_cm.py", "rdmaspy/dissectors/rpcrdma_pdata.py",
    # the CM's MADs (every connection's setup; a capture of short connections is mostly these)
    "rdmaspy/dissectors/mad.py", "rdmaspy/dissectors/ib_cm.py",
    # ICMP errors (a peer gone: every retry answered) and the datagram each quotes, dissected again
    "rdmaspy/dissectors/icmp.py",
    "rdmaspy/output/jsonout.py", "rdmaspy/output/values.py", "rdmaspy/output/lines.py", "rdmaspy/output/sinks.py",
    "rdmaspy/output/jsonlines.py", "rdmaspy/output/turns.py",
    "rdmaspy/analysis/analyzer.py", "rdmaspy/analysis/rules.py", "rdmaspy/analysis/transport.py",
    "rdmaspy/analysis/transactions.py", "rdmaspy/analysis/chunks.py", "rdmaspy/analysis/credits.py",
    "rdmaspy/analysis/rpcrdma_fields.py", "rdmaspy/analysis/rpcrdma_rules.py", "rdmaspy/analysis/model.py",
    "rdmaspy/analysis/rpcrdma_state.py", "rdmaspy/analysis/connections.py", "rdmaspy/analysis/nfs_binding.py",
    # the data ledger and the RDMA operations every upper layer's transactions share
    "rdmaspy/analysis/ledger.py", "rdmaspy/analysis/correlation.py", "rdmaspy/analysis/rpcrdma_facts.py",
    "rdmaspy/analysis/nvme_transactions.py", "rdmaspy/analysis/nvme_facts.py", "rdmaspy/analysis/nfs_facts.py",
    # the pcapng reader and the iWARP path (TCP stream, MPA, DDP/RDMAP): a third of the real traffic mix
    "rdmaspy/readers/pcapng.py", "rdmaspy/budget.py", "rdmaspy/dissectors/tcp_stream.py",
    "rdmaspy/dissectors/iwarp_mpa.py", "rdmaspy/dissectors/iwarp_ddp.py", "rdmaspy/commands/stats.py",
    # expert's groups: each finding of a capture (one every few frames) is counted there
    "rdmaspy/output/expert_groups.py",
    # NVMe/RDMA: its capsule heuristic sees every SEND no other upper layer took
    "rdmaspy/dissectors/nvme_names.py", "rdmaspy/dissectors/nvme.py", "rdmaspy/dissectors/nvme_data.py",
    "rdmaspy/dissectors/nvme_rdma.py",
]


def _have_rdma_headers() -> bool:
    dirs = [sysconfig.get_config_var("INCLUDEDIR") or "/usr/include", "/usr/include", "/usr/local/include"]
    dirs += [d for d in os.environ.get("CPATH", "").split(os.pathsep) if d]
    need = (os.path.join("infiniband", "verbs.h"), os.path.join("rdma", "rdma_cma.h"))
    return all(any(os.path.exists(os.path.join(d, h)) for d in dirs) for h in need)


def _compile_wanted() -> bool:
    want = os.environ.get("RDMASPY_COMPILE", "auto")
    editable = any(a in ("editable_wheel", "develop") for a in sys.argv)
    return not (want == "0" or (editable and want != "1"))


def _mypyc_modules() -> list:
    """The compiled decoder's extensions: mypy's type check and mypyc's C generation run here.

    Called when build_ext is set up, not when setup.py is loaded, and not in pip's requirement and
    metadata steps: pip loads setup.py three times for one wheel, and only the last one builds.
    """
    want = os.environ.get("RDMASPY_COMPILE", "auto")
    try:
        from mypyc.build import mypycify
    except ImportError:
        if want == "1":
            raise SystemExit("RDMASPY_COMPILE=1 but mypyc is not installed (pip install mypy)")
        print("rdmaspy: mypyc is not installed; installing the decoder as pure Python", file=sys.stderr)
        return []
    print(f"rdmaspy: mypy and mypyc on the {len(COMPILED)} compiled modules (once per build)", file=sys.stderr)
    try:
        # The build environment has the build requirements only (not orjson, rich, ...): their modules
        # are taken as untyped; errors in modules that are not compiled do not stop the build.
        options = ["--ignore-missing-imports", "--follow-imports=silent"]
        modules, messages = _with_stdout_captured(
            lambda: mypycify(options + COMPILED, opt_level="3", debug_level="0", group_name="rdmaspy"))
    except (Exception, SystemExit) as exc:      # mypy refused a module: build the pure package
        if want == "1":
            raise
        print(f"rdmaspy: not compiling the decoder ({exc}); installing it as pure Python", file=sys.stderr)
        return []
    _refuse_materialised_generators(messages)
    if sys.platform.startswith("linux"):
        for ext in modules:
            # One generated C file holds every compiled function: without the first, each call between
            # them goes through the shared library's PLT (a function could be interposed by another
            # library, as far as the compiler knows) and none is inlined into its caller (xdr.u32, the
            # BTH's words); with the second, calls into libpython go through the GOT, not a PLT stub.
            # The third keeps every symbol but the modules' PyInit_ inside the shared object (the modules
            # reach each other through capsules): the loader resolved each of some 7,400 references to the
            # object's own symbols by name at every start.
            ext.extra_compile_args = list(ext.extra_compile_args or []) + [
                "-fno-semantic-interposition", "-fno-plt", "-fvisibility=hidden"]
    return modules


def _with_stdout_captured(fn):
    """(fn(), what it printed): mypy and mypyc print their messages on file descriptor 1."""
    sys.stdout.flush()
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(1)
        os.dup2(tmp.fileno(), 1)
        try:
            result = fn()
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            printed = tmp.read().decode(errors="replace")
            sys.stdout.write(printed)
            sys.stdout.flush()
    return result, printed


def _refuse_materialised_generators(messages: str) -> None:
    """A generator comprehension that mypyc cannot compile as one becomes a list of all its items:
    on the per-packet path that holds a whole output in memory.  It is a defect of the source, so the
    build stops (whatever RDMASPY_COMPILE says): write the loop, or a list comprehension if bounded."""
    found = [line for line in messages.splitlines() if "Treating generator comprehension as list" in line]
    if found:
        raise SystemExit("rdmaspy: mypyc would turn generator comprehensions of the compiled modules into "
                         "lists:\n  " + "\n  ".join(found))


# pip runs setup.py once for the build requirements (egg_info), once for the metadata (dist_info)
# and once to build; the first two never build an extension, so they skip mypy and mypyc.
_METADATA_ONLY = bool({"egg_info", "dist_info"} & set(sys.argv[1:2]))

ICRC = Extension("rdmaspy.dissectors._icrc", ["rdmaspy/dissectors/_icrc.c"], libraries=["z"],
                 extra_compile_args=["-O2"])
# The line writer's check for control characters (rdmaspy/output/lines.py), sixteen bytes a step
SCAN = Extension("rdmaspy.output._scan", ["rdmaspy/output/_scan.c"], extra_compile_args=["-O2"])
# A summary line's columns in one call (rdmaspy/output/text.py)
LINE = Extension("rdmaspy.output._line", ["rdmaspy/output/_line.c"], extra_compile_args=["-O2"])
# The transport analysis' PSN ring slots (rdmaspy/analysis/transport.py, PsnRing)
RING = Extension("rdmaspy.analysis._ring", ["rdmaspy/analysis/_ring.c"], extra_compile_args=["-O2"])
# Hexadecimal and decimal numbers of the Info column (rdmaspy/dissectors/hexfmt.py)
HEX = Extension("rdmaspy.dissectors._hex", ["rdmaspy/dissectors/_hex.c"], extra_compile_args=["-O2"])
# The C library's heap kept between the readers' chunks (rdmaspy/readers/base.py, keep_chunks_in_heap)
HEAP = Extension("rdmaspy._heap", ["rdmaspy/_heap.c"], extra_compile_args=["-O2"])


class OptionalBuildExt(build_ext):
    """Compiled modules that fail to build leave the Python source in charge (unless asked for).

    mypyc makes one shared library and a small module per source: either all of them are built,
    or none is kept, since a module whose shared library is missing cannot be imported.
    """

    def finalize_options(self):
        modules = self.distribution.ext_modules or []
        if any(e is ICRC for e in modules) and not _METADATA_ONLY:
            # The decoder is wanted: mypyc's modules join the ICRC now, before setuptools notes what
            # each extension needs (see _mypyc_modules).
            modules[:0] = _mypyc_modules()
        super().finalize_options()

    def build_extensions(self):
        self.check_extensions_list(self.extensions)
        decoder = [e for e in self.extensions if e.name != "rdmaspy.traffic._hotpath"]
        native = [e for e in self.extensions if e.name == "rdmaspy.traffic._hotpath"]
        try:
            for ext in decoder:
                self.build_extension(ext)
        except Exception as exc:
            if os.environ.get("RDMASPY_COMPILE") == "1":
                raise
            for ext in decoder:
                path = self.get_ext_fullpath(ext.name)
                if os.path.exists(path):
                    os.remove(path)
            print(f"rdmaspy: the decoder stays pure Python: {exc}", file=sys.stderr)
        for ext in native:
            try:
                self.build_extension(ext)
            except Exception as exc:
                if os.environ.get("RDMASPY_NATIVE") == "1":
                    raise
                print(f"rdmaspy: skipping {ext.name}: {exc}", file=sys.stderr)


want_native = os.environ.get("RDMASPY_NATIVE", "auto")
have = _have_rdma_headers()
if want_native == "1" and not have:
    raise SystemExit("RDMASPY_NATIVE=1 but the libibverbs/librdmacm headers are missing "
                     "(Debian: apt-get install libibverbs-dev librdmacm-dev)")
ext_modules = [ICRC, SCAN, LINE, RING, HEAP, HEX] if _compile_wanted() else []
if have and want_native != "0":
    ext_modules.append(Extension("rdmaspy.traffic._hotpath", ["rdmaspy/traffic/_hotpath.c"],
                                 libraries=["ibverbs", "rdmacm"], extra_compile_args=["-O2", "-std=gnu11"]))

# The manual page and the shell completions, generated from the parser (`rdmaspy manpage`, `rdmaspy
# completion bash|zsh`; tests/test_shell_integration.py checks they are current), installed where man and the
# shells look: <prefix>/share/man/man1, bash-completion's and zsh's site directories.
DATA_FILES = [
    ("share/man/man1", ["share/man/man1/rdmaspy.1"]),
    ("share/bash-completion/completions", ["share/bash-completion/completions/rdmaspy"]),
    ("share/zsh/site-functions", ["share/zsh/site-functions/_rdmaspy"]),
]

setup(ext_modules=ext_modules, cmdclass={"build_ext": OptionalBuildExt}, data_files=DATA_FILES)
