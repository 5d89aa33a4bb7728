"""``rdmaspy fields``: every declared field and protocol, as text, JSON and the docs/fields.md page."""
from __future__ import annotations

import json
import subprocess

from conftest import ROOT
from rdmaspy.cli import main
from rdmaspy.commands.fields import MARKDOWN_COMMAND, markdown, rows
from rdmaspy.filter import known_fields


def test_text_lists_protocols_and_fields_tab_separated(capsys):
    assert main(["fields"]) == 0
    lines = capsys.readouterr().out.splitlines()
    cols = {line.split("\t")[1]: line.split("\t") for line in lines}
    assert cols["bth"] == ["P", "bth", "Base Transport Header"]
    kind, name, label, typ, bits, unit, names = cols["bth.opcode"]
    assert (kind, label, typ, bits, unit) == ("F", "Opcode", "uint8", "8", "")
    assert "12=RC RDMA READ Request" in names.split("; ")
    assert cols["reth.dma_length"][3:6] == ["uint32", "32", "bytes"]
    assert cols["bth.destqp"][3] == "uint24, hex"
    assert cols["ip.src"][3] == "ipv4" and cols["icrc.valid"][3] == "bool"
    assert cols["frame.time_relative"][3] == "float"
    # every known name is listed once
    cat = known_fields()
    assert sorted(cols) == sorted(set(cat.fields) | set(cat.protocols))
    assert len(cols) == len(lines)


def test_prefix_restricts_to_a_protocol(capsys):
    assert main(["fields", "reth"]) == 0
    names = [line.split("\t")[1] for line in capsys.readouterr().out.splitlines()]
    assert names == ["reth", "reth.va", "reth.r_key", "reth.dma_length"]


def test_json_describes_each_field(capsys):
    assert main(["fields", "-T", "json", "aeth"]) == 0
    entries = json.loads(capsys.readouterr().out)
    by = {e["name"]: e for e in entries}
    assert by["aeth"]["kind"] == "protocol" and by["aeth"]["label"] == "ACK Extended Transport Header"
    nak = by["aeth.nak"]
    assert nak["kind"] == "field" and nak["type"] == "uint5" and nak["bits"] == 5
    assert nak["names"]["0"] == "PSN Sequence Error" and nak["module"] == "rdmaspy.dissectors.infiniband"


def test_docs_fields_md_is_up_to_date():
    """A field added without regenerating the page fails here."""
    page = ROOT / "docs" / "fields.md"
    want = markdown(rows(known_fields()))
    have = page.read_text() if page.exists() else ""
    assert have == want, f"docs/fields.md is out of date: run `{MARKDOWN_COMMAND}`"


def test_markdown_from_the_command_equals_the_page():
    out = subprocess.run(["rdmaspy", "fields", "--markdown"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("# Fields\n") and "| `bth.opcode` | Opcode | uint8 | 8 |" in out
    assert "| 0x81 (129) | CNP |" not in out and "| 129 | CNP |" in out     # bth.opcode is decimal
    assert "Values of `bth.opcode`:" in out
