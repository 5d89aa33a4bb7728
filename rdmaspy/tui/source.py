"""Where the TUI's frames come from: a capture file, opened as every command opens it.

The TUI never dissects by itself: every frame goes through the one pipeline (``rdmaspy.pipeline``),
exactly as ``rdmaspy decode`` runs it, so what the screen says is what ``decode`` prints.
"""
from __future__ import annotations

from ..readers import Capture, open_capture


def open_frames(path: str) -> Capture:
    """The capture at ``path``; raises CaptureError (with a sentence for the status bar) if it is none."""
    return open_capture(path)
