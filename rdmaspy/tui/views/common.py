"""What the analysis views share: the model they read, the connection the user chose, how numbers are
written (keys, times, byte counts), and the words of the upper layers in view (``UlpTerms``), so that
every view says them the same way."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable
from weakref import WeakKeyDictionary

from textual.containers import Vertical

from ...analysis.model import Transaction
from ...analysis.ulp import UlpModel, model_of, models
from ..messages import ModelUpdated

if TYPE_CHECKING:
    from ..model import CaptureModel


class ConnectionFocus:
    """The connection chosen in the connections view; every analysis view shows only its records."""

    __slots__ = ("connection",)

    def __init__(self) -> None:
        self.connection: int | None = None

    def admits(self, conn: int | None) -> bool:
        return self.connection is None or conn == self.connection


_FOCUS: "WeakKeyDictionary[CaptureModel, ConnectionFocus]" = WeakKeyDictionary()


def focus_of(model: "CaptureModel") -> ConnectionFocus:
    focus = _FOCUS.get(model)
    if focus is None:
        focus = _FOCUS[model] = ConnectionFocus()
    return focus


class AnalysisView(Vertical):
    """A view over ``model.analysis``: redrawn while the capture is indexed and when the user chooses
    another connection (``refresh_view``)."""

    def __init__(self, model: "CaptureModel", *, id: str | None = None) -> None:
        super().__init__(id=id, classes="analysis-view")
        self.model = model
        self.focus_state = focus_of(model)

    def on_model_updated(self, message: ModelUpdated) -> None:
        self.refresh_view()

    def on_show(self) -> None:
        self.refresh_view()

    def refresh_view(self) -> None:
        """Take what the analysis holds now (subclasses redraw their tables)."""


def duration_text(ns: int | None) -> str:
    """A latency or time offset: µs below a millisecond, ms below a second, then seconds."""
    if ns is None:
        return ""
    if abs(ns) < 1_000_000:
        return f"{ns / 1000:.1f} µs"
    if abs(ns) < 1_000_000_000:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e9:.3f} s"


def bytes_text(n: int | None) -> str:
    if n is None:
        return ""
    if n < 10_000:
        return f"{n} B"
    if n < 10_000_000:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 2**20:.1f} MiB"


def key_text(ulp: UlpModel, key: int) -> str:
    """A transaction's key in hexadecimal, as many digits as its upper layer declares."""
    return f"0x{key:0{ulp.key_digits}x}"


@dataclass(frozen=True, slots=True)
class UlpTerms:
    """The words of the upper layers whose transactions are in view, from their declarations: one layer's
    own (its key's name, "call"/"reply" or "command"/"completion", "Procedure" or "Command") when one is
    in view; when several are, neutral titles, each row saying its protocol and its key's name itself."""
    ulps: tuple[UlpModel, ...]

    @staticmethod
    def of(protocols: Iterable[str]) -> "UlpTerms":
        """The terms of ``protocols`` (none yet: the first upper layer declared)."""
        found = {p: model_of(p) for p in protocols}
        ulps = tuple(sorted(found.values(), key=lambda m: m.rank)) or (models()[0],)
        return UlpTerms(ulps)

    @property
    def mixed(self) -> bool:
        return len(self.ulps) > 1

    def _one(self, own: str, neutral: str) -> str:
        return neutral if self.mixed else own

    @property
    def key(self) -> str:
        return self._one(self.ulps[0].key, "Key")

    @property
    def key_width(self) -> int:
        if self.mixed:
            return max(len(m.key) + 3 + m.key_digits for m in self.ulps)
        return max(len(self.ulps[0].key), self.ulps[0].key_digits + 2)

    @property
    def operation(self) -> str:
        return self._one(self.ulps[0].operation_label, "Operation")

    @property
    def request(self) -> str:
        return self._one(self.ulps[0].request.capitalize(), "Request")

    @property
    def response(self) -> str:
        return self._one(self.ulps[0].response.capitalize(), "Response")

    @property
    def label_width(self) -> int:
        return max(len(m.label) for m in self.ulps)

    def key_of(self, protocol: str, key: int) -> str:
        """A row's key: its upper layer's name of it too when several are in view ("CID 0x0001")."""
        ulp = model_of(protocol)
        text = key_text(ulp, key)
        return f"{ulp.key} {text}" if self.mixed else text


def fact_text(ulp: UlpModel, label: str, value: object) -> str:
    """A fact's value as a view writes it: the key in hexadecimal, lists by commas, flags as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and label == ulp.key:
        return key_text(ulp, value)
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def facts_of(t: Transaction) -> list[tuple[str, str]]:
    """The facts its upper layer declares of a transaction and knows, as (label, text); not its key,
    which the transaction is named by."""
    ulp = model_of(t.protocol)
    known: list[tuple[str, str]] = []
    for fact in ulp.shown_facts():
        value = fact.get(t)
        if value is None or fact.label == ulp.key or (isinstance(value, (str, list, tuple)) and not value):
            continue
        known.append((fact.label, fact_text(ulp, fact.label, value)))
    return known


def groups_of(t: Transaction) -> list[tuple[str, str]]:
    """The dimensions its upper layer groups a transaction by (a namespace, a controller) it is in."""
    ulp = model_of(t.protocol)
    return [(g.name, fact_text(ulp, g.name, v)) for g in ulp.groups if (v := g.get(t)) is not None]
