"""Hostile pcapng clocks and comments (tests/fixtures/hostile_pcapng_build.py) through every command:
no traceback; times exact where 64-bit nanoseconds (and pcapng ticks) hold them, clamped and said so
where not; comments too long for one option split and said so."""
from __future__ import annotations

import os
import subprocess

import orjson
import pytest

from conftest import FIXTURES, require_tshark
from rdmaspy.cli import main
from rdmaspy.readers import open_capture

import sys
sys.path.insert(0, str(FIXTURES))
import hostile_pcapng_build as build  # noqa: E402

SOURCE_FRAMES = build.FRAMES


def commands(path: str, out_dir) -> list[list[str]]:
    return [["decode", path], ["decode", "-V", path], ["decode", "-T", "json", path], ["decode", "-x", path],
            ["decode", "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.comment", path],
            ["decode", path, "-w", str(out_dir / "w.pcapng")], ["stats", path], ["stats", "-T", "json", path],
            ["expert", path], ["expert", "-T", "json", path], ["conversations", path],
            ["conversations", "-T", "json", path], ["flows", path, "-o", str(out_dir / "f.json")],
            ["flows", path, "-T", "jsonl"], ["annotate", path, "-o", str(out_dir / "a.pcapng")]]


@pytest.mark.parametrize("fixture", build.ALL, ids=lambda p: p.stem)
def test_every_command_runs_on_the_hostile_pcapng(fixture, tmp_path, capsys):
    for args in commands(str(fixture), tmp_path):
        rc = main(args)
        cap = capsys.readouterr()
        assert rc == 0, (args, cap.err)
        assert all(line.startswith("rdmaspy: warning: ") for line in cap.err.splitlines()), (args, cap.err)
        if "json" in args and "-T" in args and args[0] != "decode":
            orjson.loads(cap.out)
    doc = orjson.loads((tmp_path / "f.json").read_bytes())
    assert doc["capture"]["frames"] == SOURCE_FRAMES if "capture" in doc else True
    for name in ("w.pcapng", "a.pcapng"):
        assert len(list(open_capture(str(tmp_path / name)))) == SOURCE_FRAMES


def _epochs(path) -> list[str]:
    out = subprocess.run([require_tshark(), "-r", str(path), "-T", "fields", "-e", "frame.time_epoch"],
                         capture_output=True, text=True, check=True, env={**os.environ, "LC_ALL": "C"}).stdout
    return out.split()


def test_times_beyond_64_bits_are_clamped_and_said_so(tmp_path, capsys):
    frames = list(open_capture(str(build.TSRESOL_ZERO)))
    assert {f.ts for f in frames} == {(1 << 63) - 1}
    assert main(["stats", str(build.TSRESOL_ZERO)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "30 frames give a time more than 292 years from 1970" in err
    out = tmp_path / "a.pcapng"
    assert main(["annotate", str(build.TSRESOL_ZERO), "-o", str(out)]) == 0
    assert [f.ts for f in open_capture(str(out))] == [f.ts for f in frames]


def test_times_before_1970_are_written_exactly_with_the_interface_offset(tmp_path, capsys):
    src = list(open_capture(str(build.TSOFFSET_NEGATIVE)))
    assert all(f.ts < 0 for f in src)
    for args in (["annotate", str(build.TSOFFSET_NEGATIVE), "-o"], ["decode", str(build.TSOFFSET_NEGATIVE), "-w"]):
        out = tmp_path / "out.pcapng"
        assert main([*args, str(out)]) == 0
        assert capsys.readouterr().err == ""
        assert [f.ts for f in open_capture(str(out))] == [f.ts for f in src]
        assert _epochs(out) == _epochs(build.TSOFFSET_NEGATIVE)


@pytest.mark.parametrize("fixture", [build.COMMENT_65535, build.TWO_COMMENTS], ids=lambda p: p.stem)
def test_comments_too_long_for_one_option_are_split_and_said_so(fixture, tmp_path, capsys):
    original = next(iter(open_capture(str(fixture)))).comment
    assert len(original.encode()) > 65535
    for args in (["annotate", str(fixture), "-o"], ["decode", str(fixture), "-w"]):
        out = tmp_path / "out.pcapng"
        assert main([*args, str(out)]) == 0
        err = capsys.readouterr().err
        assert "1 packet comment longer than one pcapng option (65,535 bytes) was split" in err
        first = next(iter(open_capture(str(out)))).comment
        # the pieces, joined again, are the comment (a reader joins options with "; ")
        assert first.replace("; ", "").startswith(original.replace("; ", ""))
        rows = subprocess.run([require_tshark(), "-r", str(out), "-c", "1", "-T", "fields", "-e", "frame.comment",
                               "-E", "occurrence=a", "-E", "aggregator=|"], capture_output=True, text=True,
                              check=True).stdout
        assert rows.count("|") >= 1 and len(rows.encode()) > 65535


def test_the_builder_makes_the_committed_fixtures(tmp_path, monkeypatch):
    before = {p: p.read_bytes() for p in build.ALL}
    build.build()
    assert {p: p.read_bytes() for p in build.ALL} == before
