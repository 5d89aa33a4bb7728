"""NVMe/RDMA decoding on built traffic (tests/nvme_build.py): the CM private data, capsules by SEND Only and
First..Last, Send with Invalidate, data moved by RDMA WRITE and READ, descriptor lists; hostile capsules
(lengths, offsets, descriptor counts, reused CIDs) marked malformed with their reason and never raising;
recognition without the CM; ``--decode-as`` for another port; the memory the state takes, bounded."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import nvme_build as B
from rdmaspy import conversation
from rdmaspy.budget import Budget
from rdmaspy.cli import main
from rdmaspy.dissectors import nvme, nvme_rdma
from rdmaspy.dissectors.nvme import NVME_COMMANDS, NVME_COMPLETIONS
from rdmaspy.engine import Engine
from rdmaspy.fieldview import packet_fields
from rdmaspy.packet import Frame, Packet
from rdmaspy.registry import decode_as, reset_decode_as
from rdmaspy.session import Session

IDENTIFY, GET_LOG_PAGE, READ, WRITE, DSM = 0x06, 0x02, 0x02, 0x01, 0x09


def fields(pkt) -> dict:
    return {n: v for n, (_f, v) in packet_fields(pkt, 0).items()}


def connected(**kw) -> B.Conversation:
    c = B.Conversation()
    c.setup(**kw)
    return c


def test_cm_private_data_of_request_reply_and_reject():
    c = B.Conversation()
    req_pkt, rep_pkt, _rtu = c.setup(qid=1, hsqsize=127, hrqsize=128, crqsize=128)
    facts = req_pkt.noted(nvme_rdma.NVME_RDMA_CM)
    assert (facts.kind, facts.qid, facts.hsqsize, facts.hrqsize) == ("req", 1, 127, 128)
    assert fields(req_pkt)["nvme-rdma.cm.req.hsqsize"] == [127] and "QID 1 HSQSIZE 128" in req_pkt.info_text
    assert rep_pkt.noted(nvme_rdma.NVME_RDMA_CM).crqsize == 128 and "CRQSIZE 128" in rep_pkt.info_text
    conn = req_pkt.conv
    assert conn.ulp == "nvme-rdma" and conn.ulp_client.qid == 1 and conn.ulp_server.crqsize == 128
    assert conn.pdata_client is None          # no RFC 8797 search on an NVMe/RDMA connection
    rejected = B.Conversation()
    _req, rej = rejected.setup(reject=3)
    assert rej.noted(nvme_rdma.NVME_RDMA_CM).status == 3 and "Invalid queue ID" in rej.info_text
    assert rej.conv.state == conversation.REJECTED and rej.conv.ulp_server.kind == "rej"


def test_short_cm_private_data_is_a_warning_and_keeps_what_it_has():
    # On InfiniBand a REQ's private data has a fixed size; an MPA Request's says its own (iWARP).
    req_pkt = Packet(Frame(1, 0, 1, b"", 0))
    req_pkt.add_layer("cm.req", None, b"", 0)
    data = bytes([0, 0, 2, 0, 8, 0])                  # recfmt, qid 2, hrqsize 8: 6 of 32 bytes
    nvme_rdma.dissect_cm_private(req_pkt, data, 0, len(data), None)
    facts = req_pkt.noted(nvme_rdma.NVME_RDMA_CM)
    assert facts.short and facts.qid == 2 and facts.hsqsize is None
    assert any("short of the 32-byte record" in x.text for x in req_pkt.expert)


def test_identify_with_its_data_by_rdma_write_and_completion_by_send_with_invalidate():
    c = connected()
    addr, key = 0xFFFF888800001000, 0x1234
    cmd_pkt = c.host_send(B.sqe(IDENTIFY, 0x1019, sgl=B.keyed_sgl(addr, 4096, key), dwords=(1,)))[0]
    cmd = cmd_pkt.noted(NVME_COMMANDS)[0]
    assert (cmd.qid, cmd.cid, cmd.name, cmd.sgls[0].key, cmd.sgls[0].invalidate) == (0, 0x1019, "Identify", key, True)
    assert fields(cmd_pkt)["nvme.cmd.identify.dword10.cns"] == [1] and "Identify CNS 0x01" in cmd_pkt.info_text
    from rdmaspy.dissectors import nvme_data
    data = nvme_data.IDCTRL_BASIC.encode(vid=0x1B36, sn=b"SERIAL01", mn=b"rdmaspy test", cntlid=7).ljust(768, b"\0")
    data += b"nqn.2026-11.io.rdmaspy:built".ljust(256, b"\0") + bytes(3072)
    writes = c.ctrl_write(addr, key, data)
    assert [p.noted(nvme.NVME_COMMANDS) for p in writes] == [None] * 4
    last = fields(writes[-1])
    assert last["nvme.data.cmd"] == ["Identify Controller"] and last["nvme.data_req"] == [cmd_pkt.frame.num]
    assert last["nvme.cmd.identify.ctrl.cntlid"] == [7] and last["nvme.cmd.identify.ctrl.subnqn"][0].startswith(
        b"nqn.2026-11.io.rdmaspy:built") and last["nvme.data.frames"] == [",".join(str(p.frame.num) for p in writes)]
    done = c.ctrl_send(B.cqe(0x1019, sqhd=2), invalidate=key)
    cqe = done.noted(NVME_COMPLETIONS)[0]
    assert cqe.command is cmd and cqe.invalidated == key and cqe.ok and cmd.completion is cqe
    assert fields(done)["nvme.cmd_pkt"] == [cmd_pkt.frame.num] and fields(done)["nvme-rdma.invalidate_key"] == [key]


def test_admin_connect_data_by_rdma_read_and_the_controller_id_it_gets():
    c = connected()
    addr, key = 0xFFFF888800002000, 0x358
    cmd_pkt = c.host_send(B.connect(0, qid=0, sqsize=31, sgl=B.keyed_sgl(addr, 1024, key), kato=5000))[0]
    cmd = cmd_pkt.noted(NVME_COMMANDS)[0]
    assert cmd.connect.qid == 0 and cmd.connect.sqsize == 31 and cmd.connect.kato == 5000
    _request, response = c.ctrl_read(addr, key, B.connect_data("nqn.sub", "nqn.host"))
    assert fields(response)["nvme.fabrics.cmd.connect.data.subnqn"][0].rstrip(b"\0") == b"nqn.sub"
    assert cmd.connect.hostnqn == "nqn.host" and cmd.connect.cntlid == 0xFFFF
    c.ctrl_send(B.cqe(0, dw0=1), invalidate=key)
    q = nvme.state_of(c.engine.session).queue(("conn", cmd_pkt.conv.conn_id))
    assert q.cntlid == 1 and q.qid == 0 and q.sqsize == 31 and q.learnt == "cm"


def test_in_capsule_write_over_send_first_middle_last_and_its_status():
    c = connected(qid=1)
    data = bytes(range(256)) * 16
    pkts = c.host_send(B.sqe(WRITE, 0x61, nsid=1, sgl=B.offset_sgl(0, 4096), dwords=(8, 0, 0)) + data, mtu=1024)
    assert len(pkts) == 5 and pkts[-1].noted(NVME_COMMANDS) is not None
    cmd = pkts[-1].noted(NVME_COMMANDS)[0]
    assert (cmd.name, cmd.icd, cmd.slba, cmd.blocks, cmd.frames) == ("Write", 4096, 8, 1, [p.frame.num for p in pkts])
    assert pkts[-1].layer("data").length == 4096
    err = c.ctrl_send(B.cqe(0x61, sqid=1, status=B.status(0x81, sct=2, dnr=True)))
    cqe = err.noted(NVME_COMPLETIONS)[0]
    assert (cqe.sct, cqe.sc, cqe.dnr) == (2, 0x81, True) and "Unrecovered Read Error DNR" in err.info_text
    assert fields(err)["nvme.cqe.status.name"] == ["Unrecovered Read Error"]


def test_a_last_segment_list_of_keyed_descriptors_in_the_capsule():
    c = connected(qid=1)
    descs = b"".join(B.keyed_sgl(0x1000 * (i + 1), 4096, 0x100 + i) for i in range(3))
    pkt = c.host_send(B.sqe(READ, 0x70, nsid=1, sgl=B.offset_sgl(0, 48, nvme.SGL_LAST_SEGMENT), dwords=(0, 0, 2))
                      + descs)[0]
    cmd = pkt.noted(NVME_COMMANDS)[0]
    assert [(s.address, s.key) for s in cmd.sgls] == [(0x1000, 0x100), (0x2000, 0x101), (0x3000, 0x102)]
    assert pkt.malformed is None


@pytest.mark.parametrize("capsule, reason", [
    (B.sqe(WRITE, 1, 1, B.offset_sgl(0, 4096)) + bytes(100), "runs past the 100 bytes of data in the capsule"),
    (B.sqe(WRITE, 1, 1, B.offset_sgl(200, 16)) + bytes(100), "in-capsule SGL at offset 200"),
    (B.sqe(READ, 1, 1, B.offset_sgl(0, 20, nvme.SGL_LAST_SEGMENT)) + bytes(20), "not a whole number of 16-byte"),
    (B.sqe(READ, 1, 1, B.offset_sgl(0, 0xFFFFFFF0, nvme.SGL_LAST_SEGMENT)) + bytes(32), "runs past the 32 bytes"),
    (B.sqe(READ, 1, 1)[:40], "neither a command capsule (64 bytes or more) nor a response capsule (16 bytes)"),
])
def test_hostile_capsules_are_malformed_with_their_reason(capsule, reason):
    c = connected(qid=1)
    pkt = c.host_send(capsule)[0]
    assert pkt.malformed is not None and reason in pkt.malformed, pkt.malformed


def test_a_huge_descriptor_list_shows_the_first_ones_and_keeps_them_all_bounded():
    c = connected(qid=1)
    n = 1000
    descs = b"".join(B.keyed_sgl(i * 4096, 4096, i) for i in range(n))
    pkt = c.host_send(B.sqe(READ, 2, 1, B.offset_sgl(0, 16 * n, nvme.SGL_LAST_SEGMENT)) + descs, mtu=1 << 20)[0]
    cmd = pkt.noted(NVME_COMMANDS)[0]
    assert len(cmd.sgls) == nvme.MAX_SGL_LIST and any("first 64 are shown" in x.text for x in pkt.expert)


def test_dataset_management_ranges_and_a_count_the_data_does_not_hold():
    c = connected(qid=1)
    ranges = nvme.DSM_RANGE.encode({"range.nlb": 8, "range.slba": 128})
    ok = c.host_send(B.sqe(DSM, 3, 1, B.offset_sgl(0, 16), dwords=(0, 4)) + ranges)[0]
    assert fields(ok)["nvme.dsm.range.slba"] == [128] and fields(ok)["nvme.cmd.dsm.ad"] == [True]
    claims = c.host_send(B.sqe(DSM, 4, 1, B.offset_sgl(0, 16), dwords=(255, 4)) + ranges)[0]
    assert any("names 256 ranges, the data holds 1" in x.text for x in claims.expert)


def test_a_cid_reused_while_outstanding_and_a_completion_for_no_command():
    c = connected(qid=1)
    c.host_send(B.sqe(READ, 9, 1, B.keyed_sgl(0x1000, 4096, 1)))
    again = c.host_send(B.sqe(READ, 9, 1, B.keyed_sgl(0x2000, 4096, 2)))[0]
    assert any(x.rule == "nvme.cid_reused" for x in again.expert)
    stray = c.ctrl_send(B.cqe(0x7777, sqid=1))
    assert stray.noted(NVME_COMPLETIONS)[0].command is None and fields(stray)["nvme.cqe.unmatched"] == [True]


def test_a_capsule_the_transport_sends_again_is_a_copy():
    c = connected(qid=1)
    first = c.host_send(B.sqe(READ, 5, 1, B.keyed_sgl(0x1000, 4096, 1)))[0]
    c.host_psn -= 1                                    # the requester retries the same PSN
    copy = c.host_send(B.sqe(READ, 5, 1, B.keyed_sgl(0x1000, 4096, 1)))[0]
    assert copy.noted(NVME_COMMANDS)[0].retransmission_of == first.frame.num
    assert not any(x.rule == "nvme.cid_reused" for x in copy.expert or [])


def test_recognised_without_the_cm_from_a_command_and_its_completion():
    c = B.Conversation(host_qp=0x33, ctrl_qp=0x44)       # no CM exchange: no port, no private data
    first = c.host_send(B.sqe(IDENTIFY, 0x21, sgl=B.keyed_sgl(0x1000, 4096, 7), dwords=(1,)))[0]
    assert first.noted(NVME_COMMANDS) is None and first.layer("nvme") is None
    done = c.ctrl_send(B.cqe(0x21, sqid=0), invalidate=7)
    cqe = done.noted(NVME_COMPLETIONS)[0]
    assert cqe.command is not None and cqe.command.name == "Identify" and cqe.command.frame == first.frame.num
    assert [x.rule for x in done.expert] == ["nvme-rdma.recognised"]
    later = c.host_send(B.sqe(GET_LOG_PAGE, 0x22, sgl=B.keyed_sgl(0x2000, 512, 8), dwords=(0x7F0002,)))[0]
    assert later.noted(NVME_COMMANDS)[0].name == "Get Log Page" and later.conv.ulp == "nvme-rdma"


def test_other_sends_are_not_taken_for_capsules():
    c = B.Conversation(host_qp=0x55, ctrl_qp=0x66)
    pkts = []
    for i in range(20):
        pkts += c.host_send(bytes([i]) * 64)              # opcode i, flags i: PSDT 0, or reserved bits set
        pkts.append(c.ctrl_send(i.to_bytes(2, "little") * 8))
    assert all(p.layer("nvme") is None and p.layer("nvme-rdma") is None for p in pkts)
    assert nvme_rdma._binding(c.engine.session).recognised == {}


def test_decode_as_binds_another_port(capsys):
    c = B.Conversation()
    req_pkt = c.setup(port=4421, qid=3)[0]
    assert req_pkt.noted(nvme_rdma.NVME_RDMA_CM) is None
    try:
        decode_as(4421, "nvme-rdma")
        d = B.Conversation()
        assert d.setup(port=4421, qid=3)[0].noted(nvme_rdma.NVME_RDMA_CM).qid == 3
        assert d.host_send(B.sqe(READ, 1, 1, B.keyed_sgl(0x1000, 4096, 1)))[0].noted(NVME_COMMANDS)
    finally:
        reset_decode_as()
    assert B.Conversation().setup(port=4421, qid=3)[0].noted(nvme_rdma.NVME_RDMA_CM) is None
    assert main(["--decode-as", "4421=iser", "decode", "x.pcap"]) == 1
    assert "a protocol of nvme-rdma, rpcrdma" in capsys.readouterr().err


def test_decode_as_on_the_command_line(tmp_path, capsys):
    from rdmaspy import craft
    c = B.Conversation()
    c.setup(port=4421, qid=2)
    c.host_send(B.sqe(READ, 1, 1, B.keyed_sgl(0x1000, 4096, 1)))
    path = tmp_path / "nvme4421.pcap"
    craft.write_pcap(str(path), c.frames)
    assert main(["decode", str(path)]) == 0
    assert "NVMe" not in capsys.readouterr().out
    assert main(["decode", "--decode-as", "4421=nvme-rdma", str(path)]) == 0
    out = capsys.readouterr().out
    assert "NVMe/RDMA QID 2" in out and "NVMe Read NSID 1" in out
    assert main(["decode", str(path)]) == 0 and "NVMe" not in capsys.readouterr().out   # undone after the run


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.booleans(), st.binary(min_size=0, max_size=300)), min_size=1, max_size=12))
def test_random_capsules_never_raise(sends):
    """Random Sends on an NVMe/RDMA connection, either way: decoded or marked malformed, never an exception
    (the engine runs strict: any dissector exception would fail the test)."""
    c = connected(qid=1)
    for from_host, payload in sends:
        pkts = c.host_send(payload, mtu=1024) if from_host else [c.ctrl_send(payload)]
        for p in pkts:
            packet_fields(p, 0)
            if len(payload) not in (0, 16) and len(payload) < 64:
                assert p.malformed is not None or p.layer("nvme-rdma") is None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=64, max_size=64), st.binary(min_size=0, max_size=2048), st.binary(min_size=16, max_size=16))
def test_random_commands_with_data_and_completions_never_raise(sqe, data, cqe):
    """A random SQE made a data-reading admin command (its SGL keyed, its data written back whole or not),
    then a random completion of its CID: decoded without an exception whatever the bytes say."""
    c = connected(qid=0)
    sqe = bytearray(sqe)
    sqe[0] = data[0] % 0x80 if data else IDENTIFY
    sqe[24:40] = B.keyed_sgl(0x4000, max(len(data), 1), 0x99)
    c.host_send(bytes(sqe))
    if data:
        for p in c.ctrl_write(0x4000, 0x99, data):
            packet_fields(p, 0)
    cqe = bytearray(cqe)
    cqe[12:14] = sqe[2:4]
    packet_fields(c.ctrl_send(bytes(cqe), invalidate=0x99), 0)


def test_outstanding_commands_are_bounded_and_charged_to_the_budget():
    session = Session(budget=Budget(limit=1 << 20))
    c = B.Conversation(Engine(session=session, strict=True))
    c.setup(qid=1)
    for cid in range(nvme.MAX_OUTSTANDING + 100):
        c.host_send(B.sqe(READ, cid & 0xFFFF, 1, B.keyed_sgl(0x1000, 4096, cid)))
    st = nvme.state_of(session)
    q = next(iter(st.queues.values()))
    # past the budget the oldest commands went (a notice said so); what stays is charged exactly
    assert len(q.pending) < nvme.MAX_OUTSTANDING and session.budget.shed_count > 0
    assert st.held == 512 * (len(q.pending) + len(q.recent)) and session.budget.used <= session.budget.limit


def _without(name: str, drop: tuple[str, ...]) -> list:
    """The frames of a shipped capture but those a first decode calls one of ``drop`` (the CM, MPA)."""
    from conftest import capture
    from rdmaspy.readers import open_capture
    eng = Engine()
    with open_capture(str(capture(name))) as cap:
        frames = list(cap)
    return [f for f in frames if eng.dissect(f).proto not in drop]


def test_the_rxe_capture_without_its_cm_exchanges_is_recognised_queue_by_queue():
    eng = Engine(strict=True)
    commands, notes = [], []
    for f in _without("rxe-nvme-rdma.pcap.gz", ("IB CM",)):
        pkt = eng.dissect(f)
        commands += pkt.noted(NVME_COMMANDS) or []
        notes += [x.rule for x in pkt.expert or [] if x.rule.startswith("nvme")]
    assert notes == ["nvme-rdma.recognised"] * 3                  # the three queue pairs
    assert {c.qid for c in commands} == {0, 1}
    # from each queue's first completion on, everything: only each queue's first command went by unseen
    assert len(commands) == 91 - 3


def test_the_siw_capture_taken_after_its_mpa_exchanges_is_bound_by_its_port():
    """A capture begun after the connections' set-up: each TCP connection found by its FPDUs, its server
    port 4420 known to NVMe/RDMA, every capsule decoded from the first segment on, each queue by its own."""
    from conftest import capture
    from rdmaspy.readers import open_capture
    eng = Engine()
    with open_capture(str(capture("siw-nvme-rdma.pcap.gz"))) as cap:
        frames = list(cap)
    full = [(f.num, c.cid) for f in frames for c in eng.dissect(f).noted(NVME_COMMANDS) or []]
    start = max(f.num for f in frames if b"MPA ID Rep Frame" in f.data) + 1
    later = Engine(strict=True)
    got = [(f.num, c.cid, c.qid) for f in frames[start - 1:] for c in later.dissect(f).noted(NVME_COMMANDS) or []]
    assert [(n, cid) for n, cid, _q in got] == [x for x in full if x[0] >= start]
    # a queue's QID is known from its first completion (its SQ identifier) on
    assert {q for _n, _cid, q in got} - {None} == {0, 1}
    assert sum(q is None for _n, _cid, q in got) <= 2


def test_data_that_came_only_in_part_is_shown_as_far_as_it_goes_when_the_command_completes():
    c = connected()
    addr, key = 0xFFFF888800003000, 0x77
    c.host_send(B.sqe(IDENTIFY, 0x31, sgl=B.keyed_sgl(addr, 4096, key), dwords=(1,)))
    from rdmaspy.dissectors import nvme_data
    data = nvme_data.IDCTRL_BASIC.encode(cntlid=9).ljust(4096, b"\0")
    writes = c.ctrl_write(addr, key, data)
    assert writes[-1].layer("nvme.data") is not None
    # the controller wrote the first 1 KiB only (or the capture holds no more)
    c2 = connected()
    c2.host_send(B.sqe(IDENTIFY, 0x31, sgl=B.keyed_sgl(addr, 4096, key), dwords=(1,)))
    first = c2.ctrl_write(addr, key, data[:1024])
    assert first[0].layer("nvme.data") is None
    done = c2.ctrl_send(B.cqe(0x31), invalidate=key)
    got = fields(done)
    assert got["nvme.data.length"] == [1024] and got["nvme.cmd.identify.ctrl.cntlid"] == [9]
    assert "in part" in done.layer("nvme.data").label and "nvme.cmd.identify.ctrl.nvmeof.ioccsz" not in got


def test_fabrics_property_set_disconnect_authentication_and_completions_by_command():
    c = connected()
    cc = nvme.CC.encode(cc=0x00460001)                     # EN, IOSQES 6, IOCQES 4
    prop_set = B.fabrics(nvme.FCTYPE_PROPERTY_SET, 1, tail=nvme.PROPERTY.encode(offset=0x14)[35:] + cc)
    got = fields(c.host_send(prop_set)[0])
    assert got["nvme.fabrics.prop_get_set.cc.en"] == [1] and got["nvme.fabrics.prop_get_set.cc.iosqes"] == [6]
    assert got["nvme.fabrics.cmd.prop_get_set.offset"] == [0x14]
    get_vs = B.fabrics(nvme.FCTYPE_PROPERTY_GET, 2, tail=nvme.PROPERTY.encode(offset=0x08)[35:])
    c.host_send(get_vs)
    vs = fields(c.ctrl_send(B.cqe(2, dw0=0x00010400)))
    assert (vs["nvme.fabrics.prop_get.vs.mjr"], vs["nvme.fabrics.prop_get.vs.mnr"]) == ([1], [4])
    c.host_send(B.fabrics(nvme.FCTYPE_DISCONNECT, 3))
    assert "Disconnect" in c.ctrl_send(B.cqe(3)).info_text
    auth = c.host_send(B.fabrics(nvme.FCTYPE_AUTH_SEND, 4, B.keyed_sgl(0x9000, 64, 5),
                                 nvme.AUTH.encode(secp=0xE9, al=64)))
    assert fields(auth[0])["nvme.fabrics.cmd.auth.secp"] == [0xE9]
    # completions read by their command: the asynchronous event, the keep alive timer, the queues allotted
    c.host_send(B.sqe(0x0C, 0x1F))
    aer = fields(c.ctrl_send(B.cqe(0x1F, dw0=0x00700002)))
    assert aer["nvme.cqe.dword0.aev.aet"] == [2] and aer["nvme.cqe.dword0.aev.lpi"] == [0x70]
    c.host_send(B.sqe(0x0A, 0x20, dwords=(0x0F,)))
    assert fields(c.ctrl_send(B.cqe(0x20, dw0=5000)))["nvme.cqe.dword0.get_features.kat.kato"] == [5000]
    c.host_send(B.sqe(0x09, 0x21, dwords=(0x07, 0x00030003)))
    nq = fields(c.ctrl_send(B.cqe(0x21, dw0=0x00010001)))
    assert nq["nvme.cqe.dword0.set_features.nq.nsqa"] == [1] and nq["nvme.cqe.dword0.set_features.ncqa"] == [1]
    # a Fabrics command's specific status by its name
    c.host_send(B.connect(6, qid=1, sqsize=127, sgl=B.offset_sgl(0, 1024)) + B.connect_data("nqn.s", "nqn.h"))
    refused = c.ctrl_send(B.cqe(6, status=B.status(0x82, sct=1, dnr=True)))
    assert "Connect Invalid Parameters DNR" in refused.info_text


def test_identify_data_is_spelled_out_only_when_read_and_its_facts_are_there_before():
    c = connected()
    addr, key = 0xFFFF888800004000, 0x99
    cmd_pkt = c.host_send(B.sqe(IDENTIFY, 0x41, sgl=B.keyed_sgl(addr, 4096, key), dwords=(1,)))[0]
    from rdmaspy.dissectors import nvme_data
    data = nvme_data.IDCTRL_BASIC.encode(cntlid=5).ljust(4096, b"\0")
    last = c.ctrl_write(addr, key, data)[-1]
    lay = last.layer("nvme.data")
    # a summary reads the label and the Info: neither makes the layer spell out its 4 KiB structure
    assert "Identify Controller" in lay.label and "Identify Controller of CID 0x0041" in last.info_text
    assert lay._items is None and lay.children is None and cmd_pkt.frame.num > 0
    assert fields(last)["nvme.cmd.identify.ctrl.cntlid"] == [5]
    assert [i[0].name for i in lay.items][:4] == ["nvme.data.cmd", "nvme.data_req", "nvme.data.frames",
                                                   "nvme.data.length"]


def test_data_shorter_than_its_structure_says_so_and_a_descriptor_past_the_data_is_malformed():
    c = connected()
    addr, key = 0xFFFF888800005000, 0x9A
    c.host_send(B.sqe(IDENTIFY, 0x42, sgl=B.keyed_sgl(addr, 100, key), dwords=(0,)))
    short = c.ctrl_write(addr, key, bytes(100))[-1]      # Identify Namespace is 384 bytes before its formats
    assert fields(short)["nvme.data.not_decoded"] == ["100 bytes: shorter than the structure"]
    c2 = connected()
    c2.host_send(B.sqe(IDENTIFY, 0x43, sgl=B.keyed_sgl(addr, 12, key), dwords=(3,)))
    desc = c2.ctrl_write(addr, key, bytes([1, 16, 0, 0]) + bytes(8))[-1]   # says 16 bytes, holds 8
    assert any("Namespace Identification Descriptor of 16 bytes runs past" in x.text for x in desc.expert)
    assert desc.layer("nvme.data")._items is None


def test_a_filter_on_a_field_of_the_identify_structure_matches(capsys):
    from conftest import capture
    cap = str(capture("rxe-nvme-rdma.pcap.gz"))
    main(["decode", "-Y", "nvme.cmd.identify.ctrl", cap])
    present = capsys.readouterr().out.splitlines()
    main(["decode", "-Y", "nvme.cmd.identify.ctrl.vid == 0 || nvme.cmd.identify.ctrl.vid != 0", cap])
    by_field = capsys.readouterr().out.splitlines()
    assert present and by_field == present
    main(["decode", "-Y", "nvme.fabrics.cmd.connect.data.subnqn", cap])
    assert capsys.readouterr().out.strip()
