"""The RPC each event of a trace belongs to, from what the trace itself says.

Only some events carry the XID (``xprtrdma_marshal``, ``xprtrdma_reply``, ``svcrdma_decode_rqst``,
``rpc_stats_latency``, ``nfsd_*`` ...); the others are tied to one by the way the kernel emits them
(``events.Join``): a client's chunk, MR and Send events by their RPC task (``xprt_reserve`` and the marshal
name the task's XID), an MR's completions and unmap by its id, a reply's returned segments by their R_Key,
a receive completion by the reply its thread handles next; a server's receive completion and decoded
segments by the receive context that ``svcrdma_decode_rqst`` names, its posts by the request its thread
works on, their completions by the context posted.

``Resolver.feed`` takes events in trace order and gives back each event once: at once when its XID is
known (or it belongs to no RPC), later when a following event names it, or unnamed when it waits too long.
The maps are bounded (``LIMIT`` entries each, the oldest let go first).
"""
from __future__ import annotations

from typing import Final

from .events import EVENTS, Join, Side
from .parse import HostEvent

LIMIT: Final = 4096                 # entries of each map
WAITING: Final = 1024               # tasks or contexts with events waiting for their XID ...
WAITING_EACH: Final = 16            # ... and the events each keeps waiting
_NEXT_WITHIN: Final = 50_000_000    # ns: a receive completion and the reply its thread handles next


def _put(d: dict, key: object, value: object) -> None:
    if key in d:
        del d[key]
    d[key] = value
    if len(d) > LIMIT:
        del d[next(iter(d))]


class Resolver:
    def __init__(self) -> None:
        self.tasks: dict[tuple[int, int], int] = {}        # (client, task) -> xid
        self.threads: dict[int, int] = {}                  # server thread (pid) -> the XID it works on
        self.posted: dict[tuple[str, int, int], int] = {}  # (side, cq_id, cid) -> xid
        self.mrs: dict[int, int] = {}                      # mr_id -> xid
        self.handles: dict[int, int] = {}                  # R_Key -> xid
        self.by_task: dict[tuple[int, int], list[HostEvent]] = {}   # waiting for their task's XID
        self.by_context: dict[tuple[int, int], list[HostEvent]] = {}   # waiting for decode_rqst
        self.by_thread: dict[int, HostEvent] = {}          # a receive waiting for its thread's next XID
        self.dropped = 0                                   # events given out unnamed after waiting

    def feed(self, ev: HostEvent) -> list[HostEvent]:
        decl = EVENTS[ev.name]
        out: list[HostEvent] = []
        f = ev.fields
        task = self._task(ev)
        if decl.join is Join.NEXT_ON_THREAD:
            waiting = self.by_thread.pop(ev.pid, None)
            if waiting is not None:
                out.append(waiting)
            self.by_thread[ev.pid] = ev
            if len(self.by_thread) > LIMIT:
                out.append(self.by_thread.pop(next(iter(self.by_thread))))
            return out
        xid = f.get("xid")
        if isinstance(xid, int):
            ev.xid = xid
        elif decl.join is Join.TASK and task is not None:
            ev.xid = self.tasks.get(task)
            if ev.xid is None and decl.side is Side.CLIENT:
                self._wait(self.by_task, task, ev, out)
                return out
        elif decl.join is Join.THREAD:
            ev.xid = self.threads.get(ev.pid)
        elif decl.join is Join.RECV_CONTEXT:
            key = (_int(f.get("cq_id")), _int(f.get("cid")))
            self._wait(self.by_context, key, ev, out)
            return out
        elif decl.join is Join.SEND_CONTEXT:
            ev.xid = self.posted.get((decl.side.value, _int(f.get("cq_id")), _int(f.get("cid"))))
        elif decl.join is Join.MR:
            mr = f.get("mr_id")
            ev.xid = self.mrs.get(mr) if isinstance(mr, int) else None
        elif decl.join is Join.HANDLE:
            h = f.get("handle")
            ev.xid = self.handles.get(h) if isinstance(h, int) else None
        out.append(ev)
        if ev.xid is not None:
            self._learn(ev, task, out)
        return out

    def flush(self) -> list[HostEvent]:
        """What still waits, unnamed (the end of the trace)."""
        out: list[HostEvent] = list(self.by_thread.values())
        for waiting in (self.by_task, self.by_context):
            for evs in waiting.values():
                out.extend(evs)
        self.by_thread.clear()
        self.by_task.clear()
        self.by_context.clear()
        out.sort(key=lambda e: e.host_ts)
        return out

    # -- what an event with an XID teaches --------------------------------------------------------
    def _learn(self, ev: HostEvent, task: tuple[int, int] | None, out: list[HostEvent]) -> None:
        xid = ev.xid
        assert xid is not None
        decl = EVENTS[ev.name]
        f = ev.fields
        if task is not None and decl.side is Side.CLIENT and "xid" in f:
            _put(self.tasks, task, xid)
            waiting = self.by_task.pop(task, None)
            if waiting is not None:
                for w in waiting:
                    w.xid = xid
                    out.append(w)
                    self._learn(w, task, out)
        if decl.sets_thread:
            _put(self.threads, ev.pid, xid)
        if decl.posts:
            _put(self.posted, (decl.side.value, _int(f.get("cq_id")), _int(f.get("cid"))), xid)
        if decl.side is Side.CLIENT:
            mr = f.get("mr_id")
            if isinstance(mr, int):
                _put(self.mrs, mr, xid)
            h = f.get("handle")
            if isinstance(h, int) and decl.join is not Join.HANDLE:
                _put(self.handles, h, xid)
        if decl.resolves_context:
            waiting = self.by_context.pop((_int(f.get("cq_id")), _int(f.get("cid"))), None)
            if waiting is not None:
                for w in waiting:
                    w.xid = xid
                    out.append(w)
        if "xid" in f:
            pending = self.by_thread.get(ev.pid)
            if pending is not None and 0 <= ev.host_ts - pending.host_ts <= _NEXT_WITHIN \
                    and EVENTS[pending.name].side is decl.side:
                del self.by_thread[ev.pid]
                pending.xid = xid
                out.append(pending)

    @staticmethod
    def _task(ev: HostEvent) -> tuple[int, int] | None:
        t = ev.fields.get("task")
        if not isinstance(t, int) or t == 0:
            return None
        c = ev.fields.get("client")
        return (c if isinstance(c, int) else -1, t)

    def _wait(self, table: dict, key: object, ev: HostEvent, out: list[HostEvent]) -> None:
        waiting = table.get(key)
        if waiting is None:
            waiting = table[key] = []
            if len(table) > WAITING:
                for old in table.pop(next(iter(table))):
                    self.dropped += 1
                    out.append(old)
        if len(waiting) >= WAITING_EACH:
            self.dropped += 1
            out.append(waiting.pop(0))
        waiting.append(ev)


def _int(v: object) -> int:
    return v if isinstance(v, int) else -1
