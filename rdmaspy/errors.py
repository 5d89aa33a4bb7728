"""Errors meant for the user: one clear line, never a traceback."""


class RdmaspyError(Exception):
    """A problem the user can act on (bad path, bad option, bad filter)."""


class CaptureError(RdmaspyError):
    """A capture file that cannot be read (at all, or from some byte offset on)."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        self.offset = offset
        super().__init__(f"{message} (at byte offset {offset})" if offset is not None else message)
