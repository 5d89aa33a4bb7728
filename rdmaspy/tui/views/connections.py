"""View 3, the connections learnt from the CM and MPA exchanges: endpoints, QPNs, service, private
data, the inline thresholds and remote invalidation they negotiated, state, packets and bytes each
way.  Enter on a connection focuses every view on it (the packet list through a display filter);
Enter on it again shows all connections once more."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from textual.app import ComposeResult
from textual.widgets import Static

from ...analysis.model import Connection, Endpoint
from ...dissectors.ib_cm import REJ_REASONS
from ...dissectors.rdma_cm import service_text
from ...dissectors.rpcrdma_pdata import RpcRdmaPdata
from ...output.ulp import ulp_service, ulp_text
from ..messages import ApplyFilter
from . import register_view
from .common import AnalysisView, bytes_text, duration_text
from .rows import Column, RowSource, RowTable

if TYPE_CHECKING:
    from ..model import CaptureModel

# State second: on an 80-column terminal the list shows a connection's state and both ends (as far as the
# server's QPN); service, counts and inline sizes follow to the right.
COLUMNS = (Column("Id", 3, True), Column("State", 12), Column("Client", 21), Column("QPN", 8), Column("Server", 21),
           Column("QPN", 8), Column("Service", 30), Column("Pkts →", 7, True), Column("Bytes →", 10, True),
           Column("Pkts ←", 7, True), Column("Bytes ←", 10, True), Column("Inline →/←", 11), Column("R", 1))


def endpoint_text(c: Connection, e: Endpoint) -> str:
    return f"{e.address}:{e.tcp_port}" if c.transport == "iwarp" and e.tcp_port is not None else e.address


def qpn_text(c: Connection, qpn: int | None) -> str:
    if c.transport == "iwarp":
        return "-"
    return "?" if qpn is None else f"0x{qpn:06x}"


def service_of(c: Connection) -> str:
    if c.transport == "iwarp":
        return (f"iWARP TCP {c.port}" if c.port is not None else "iWARP") + ulp_service(c, named=True)
    return service_text(c.service_id) + ulp_service(c) if c.service_id is not None else \
        ("-" if not c.ulp else ulp_service(c, named=True).strip())


def state_of(c: Connection) -> str:
    if c.reject_reason is not None:
        return f"{c.state.value} ({REJ_REASONS.get(c.reject_reason, c.reject_reason)})"
    return c.state.value


def pdata_text(p: RpcRdmaPdata | None) -> str:
    if p is None:
        return "none"
    text = f"v{p.version} send={p.send_size} recv={p.recv_size} R={int(p.remote_invalidate)}"
    return text if p.valid else f"{text} (ignored: {p.problem or 'invalid'})"


def connection_filter(c: Connection) -> str:
    """The display filter that shows this connection's packets (its two hosts; on InfiniBand transports
    its two queue pairs, on iWARP its TCP ports)."""
    a, b = c.client.address, c.server.address
    field = "ipv6" if ":" in a else "ip"
    hosts = f"(({field}.src == {a} and {field}.dst == {b}) or ({field}.src == {b} and {field}.dst == {a}))"
    if c.transport == "iwarp":
        ports = [p for p in (c.client.tcp_port, c.server.tcp_port) if p is not None]
        if len(ports) == 2:
            return f"{hosts} and (tcp.srcport == {ports[0]} or tcp.srcport == {ports[1]})"
        return hosts
    qps = [q for q in (c.client.qpn, c.server.qpn) if q is not None]
    if not qps:
        return hosts
    qp = " or ".join(f"bth.destqp == 0x{q:x}" for q in qps)
    # CM MADs travel to QP 1: keep the setup with the connection.
    return f"{hosts} and ({qp} or bth.destqp == 0x1)"


class ConnectionsView(AnalysisView):
    DEFAULT_CSS = """
    ConnectionsView > #connections-title { height: 1; background: $primary-darken-2; text-style: bold; padding: 0 1; }
    ConnectionsView > RowTable { height: 1fr; min-height: 4; }
    ConnectionsView > #connection-detail { height: auto; max-height: 12; border-top: solid $primary-darken-2;
                                           padding: 0 1; }
    """

    def __init__(self, model: "CaptureModel", *, id: str | None = None) -> None:
        super().__init__(model, id=id)
        self.rows: list[Connection] = []

    def compose(self) -> ComposeResult:
        yield Static("Connections", id="connections-title")
        yield RowTable(COLUMNS, RowSource(lambda: len(self.rows), self._cells), id="connections-table")
        yield Static("", id="connection-detail")

    @property
    def table(self) -> RowTable:
        return self.query_one("#connections-table", RowTable)

    def _cells(self, i: int) -> Sequence[str]:
        c = self.rows[i]
        mark = "*" if self.focus_state.connection == c.id else ""
        return (f"{mark}{c.id}", state_of(c), endpoint_text(c, c.client), qpn_text(c, c.client.qpn),
                endpoint_text(c, c.server), qpn_text(c, c.server.qpn), service_of(c), str(c.packets_c2s), str(c.bytes_c2s),
                str(c.packets_s2c), str(c.bytes_s2c),
                f"{c.inline_c2s}/{c.inline_s2c}" if c.inline_applies else "-",
                ("1" if c.remote_invalidate else "0") if c.inline_applies else "-")

    def refresh_view(self) -> None:
        self.rows = self.model.analysis.connection_list()
        title = f"Connections: {len(self.rows)}"
        if self.focus_state.connection is not None:
            title += f" — focused on connection {self.focus_state.connection} (Enter on it again: all)"
        self.query_one("#connections-title", Static).update(title)
        self.table.reload()
        self._show_detail(self.table.cursor)

    def _show_detail(self, row: int) -> None:
        detail = self.query_one("#connection-detail", Static)
        if not 0 <= row < len(self.rows):
            detail.update("No RDMA connection was set up in this capture (CM or MPA)." if not self.rows else "")
            return
        c = self.rows[row]
        lines = [
            f"[b]Connection {c.id}[/b] ({'iWARP' if c.transport == 'iwarp' else 'InfiniBand/RoCE'}), "
            f"{state_of(c)}, service {service_of(c)}",
            f"client {endpoint_text(c, c.client)}  QPN {qpn_text(c, c.client.qpn)}"
            f"{'  GID ' + c.client.gid if c.client.gid else ''}",
            f"server {endpoint_text(c, c.server)}  QPN {qpn_text(c, c.server.qpn)}"
            f"{'  GID ' + c.server.gid if c.server.gid else ''}",
            *((f"private data: client {pdata_text(c.pdata_client)}; server {pdata_text(c.pdata_server)}",
               f"inline thresholds: client→server {c.inline_c2s} B, server→client {c.inline_s2c} B; "
               f"remote invalidation {'on' if c.remote_invalidate else 'off'}") if c.inline_applies
              else (ulp_text(c) or "",)),
            f"traffic: → {c.packets_c2s} packets {bytes_text(c.bytes_c2s)}, "
            f"← {c.packets_s2c} packets {bytes_text(c.bytes_s2c)}; "
            f"seen for {duration_text(c.t_end - c.t_start)}",
        ]
        detail.update("\n".join(lines))

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        event.stop()
        self._show_detail(event.row)

    def on_row_table_chosen(self, event: RowTable.Chosen) -> None:
        event.stop()
        c = self.rows[event.row]
        focus = self.focus_state
        if focus.connection == c.id:
            focus.connection = None
            self.post_message(ApplyFilter(""))
        else:
            focus.connection = c.id
            self.post_message(ApplyFilter(connection_filter(c)))
        for view in self.screen.query(".analysis-view"):
            if isinstance(view, AnalysisView):
                view.refresh_view()


register_view("3", lambda model: ConnectionsView(model))
