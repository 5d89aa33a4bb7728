"""The JSON objects of a host trace's join (``analysis.hostmodel``): what the flows document and the export
carry (docs/hosttrace.md, schema flows-1 revision 2)."""
from __future__ import annotations

from ..analysis.hostmodel import HostClock, HostView, Registration
from ..hosttrace.events import EVENTS
from ..hosttrace.parse import HostEvent

JSON = dict[str, object]


def host_event_record(ev: HostEvent) -> JSON:
    """A kernel event as the flows document and the export carry it."""
    return {"event": ev.name, "ts": ev.ts, "side": EVENTS[ev.name].side.value, "stage": EVENTS[ev.name].stage.value,
            "trace": ev.trace, "fields": dict(ev.fields)}


def registration_record(r: Registration) -> JSON:
    return {"handle": r.handle, "offset": r.offset, "length": r.length, "chunk": r.chunk, "mr_id": r.mr_id,
            "registered_ts": r.registered_ts, "invalidated_ts": r.invalidated_ts, "invalidation": r.invalidation,
            "unmapped_ts": r.unmapped_ts, "advertised": r.advertised, "operations": r.operations,
            "frames": list(r.frames), "bytes": r.bytes}


def host_view_record(v: HostView) -> JSON:
    """What a transaction's ``host`` says besides its events: registrations, latency shares, credits."""
    rec: JSON = {"registrations": [registration_record(r) for r in v.registrations],
                 "latency_ns": dict(v.latency), "host_share": v.host_share,
                 "credits_host": v.credits_host, "credits_server": v.credits_server, "cwnd": v.cwnd,
                 "credit_waits": v.credit_waits}
    if v.dropped:
        rec["dropped"] = v.dropped
    return rec


def host_clock_record(c: HostClock) -> JSON:
    """One trace file: the offset applied to its times, how well it is known, what was read."""
    return {"file": c.path, "trace": c.number, "form": c.form, "offset_ns": c.offset_ns, "spread_ns": c.spread_ns,
            "low_ns": c.low_ns, "high_ns": c.high_ns, "matched": c.matched, "lines": c.lines, "events": c.events,
            "kept": c.kept, "unknown": c.unknown, "skipped": c.skipped + c.too_long, "lost": c.lost,
            "first_ts": c.first_ts, "last_ts": c.last_ts, "joined": c.joined, "host_only": c.host_only,
            "wire_only": c.wire_only}
