"""The status bar, in Wireshark's words: the file, ``Packets: M``, ``Displayed: N``, the load progress."""
from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static


@dataclass(slots=True)
class Status:
    name: str = ""
    packets: int = 0
    displayed: int = 0
    loading: float | None = None      # 0..1 while the capture is indexed
    filtering: bool = False
    problem: str = ""                 # what is wrong with the capture, if anything
    live: str = ""                    # live mode: drops and rate
    note: str = ""                    # the outcome of the last action (export...)


def status_text(s: Status) -> Text:
    t = Text()
    t.append(s.name or "(no file)", style="bold")
    t.append(f"  Packets: {s.packets}")
    t.append(f"  Displayed: {s.displayed}")
    if s.filtering:
        t.append("  (filtering...)", style="italic")
    if s.loading is not None:
        t.append(f"  Loading: {s.loading * 100:.0f}%", style="italic")
    if s.live:
        t.append(f"  {s.live}")
    if s.problem:
        t.append(f"  {s.problem}", style="bold red")
    if s.note:
        t.append(f"  {s.note}", style="green")
    return t


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.status = Status()
        self._shown: Text | None = None

    def show(self, status: Status) -> None:
        self.status = status
        text = status_text(status)
        # The app shows the status ten times a second: repaint only when it says something new, so
        # an idle TUI left open all day costs no CPU.
        if text != self._shown:
            self._shown = text
            # one line as wide as the screen whatever it says: no layout of the screen (a tick's most of it)
            self.update(text, layout=False)
