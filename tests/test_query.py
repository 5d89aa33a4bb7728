"""``rdmaspy query``: SQL on DuckDB over an export; the named queries; one line for each mistake."""
from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import capture

from rdmaspy import cli
from rdmaspy.commands import query as query_cmd

NFS = "rxe-nfsv3-rdma.pcap"


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    out = tmp_path_factory.mktemp("q") / "tables"
    assert cli.main(["export", str(capture(NFS)), "-o", str(out), "-q"]) == 0
    return str(out)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(["query", *argv])
    got = capsys.readouterr()
    return rc, got.out, got.err


def test_csv_counts_agree_with_flows(tables, capsys, tmp_path):
    rc, out, _err = _run(capsys, tables, "SELECT count(*) AS n, count(DISTINCT xid) AS xids FROM transactions", "-T",
                         "csv")
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    flows = tmp_path / "flows.json"
    assert cli.main(["flows", str(capture(NFS)), "-o", str(flows)]) == 0
    doc = json.loads(flows.read_text())
    assert int(rows[0]["n"]) == doc["summary"]["transactions"]


def test_json_lines_one_object_per_row_with_lists_and_times(tables, capsys):
    rc, out, _err = _run(capsys, tables, "SELECT frame, time, call_frames FROM transactions t JOIN packets p "
                         "ON p.frame = t.first_frame ORDER BY frame LIMIT 3", "-T", "json")
    assert rc == 0
    lines = [json.loads(x) for x in out.splitlines()]
    assert len(lines) == 3 and lines[0]["frame"] in lines[0]["call_frames"]
    assert lines[0]["time"].startswith("20") and [x["frame"] for x in lines] == sorted(x["frame"] for x in lines)


@pytest.mark.parametrize("name", sorted(query_cmd.NAMED))
def test_every_named_query_runs(tables, capsys, name):
    rc, out, err = _run(capsys, tables, name, "-T", "csv")
    assert rc == 0 and not err
    rows = list(csv.reader(io.StringIO(out)))
    assert len(rows) >= 2, out


def test_findings_by_rule_counts_the_expert_warnings(tables, capsys):
    rc, out, _err = _run(capsys, tables, "findings-by-rule", "-T", "json")
    rows = [json.loads(x) for x in out.splitlines()]
    assert {(r["what"], r["findings"]) for r in rows if r["what"] == "rpcrdma.invalidate_not_negotiated"} == \
        {("rpcrdma.invalidate_not_negotiated", 10)}


def test_list_names_the_queries(capsys):
    rc, out, _err = _run(capsys, "--list")
    assert rc == 0 and [line.split()[0] for line in out.splitlines()] == list(query_cmd.NAMED)


def test_table_on_a_terminal(tables, capsys):
    rc, out, _err = _run(capsys, tables, "SELECT 7 AS seven", "-T", "table")
    assert rc == 0 and "seven" in out and "7" in out and "1 rows" in out


@pytest.mark.parametrize("argv, says", [
    (("{missing}", "SELECT 1"), "no such directory"),
    (("{tables}", "SELEC frame FROM packets"), "Parser Error"),
    (("{tables}", "SELECT no_such_column FROM packets"), "no_such_column"),
    (("{tables}", "SELECT * FROM no_such_table"), "no_such_table"),
    (("{empty}", "SELECT 1"), "holds no tables"),
    (("{damaged}", "SELECT count(*) FROM packets"), "packets.parquet"),
])
def test_mistakes_are_one_line_and_exit_1(tables, capsys, tmp_path, argv, says):
    (tmp_path / "empty").mkdir()
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "packets.parquet").write_bytes(b"not a parquet file")
    names = {"missing": str(tmp_path / "nothing"), "tables": tables, "empty": str(tmp_path / "empty"),
             "damaged": str(tmp_path / "damaged")}
    rc, out, err = _run(capsys, *[a.format(**names) for a in argv])
    assert rc == 1 and not out
    assert err.count("\n") == 1 and err.startswith("rdmaspy: error:") and says in err
