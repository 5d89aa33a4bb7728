"""Undissected bytes, shown as data (Wireshark's ``data`` protocol)."""
from __future__ import annotations

from ..fields import Field, declaring, protocol
from ..packet import Layer, Packet
from ..registry import Dissector, table
from ..typenames import Any, Final

declaring(__name__)
protocol("data", "Data", repeats=True)    # what several dissectors leave undissected in one packet

DATA: Final = Field("data.data", 0, "Data", "bytes")
DATA_LEN: Final = Field("data.len", 0, "Length", "dec", unit="bytes")


def _fill_data(lay: Layer) -> None:
    # Copy the bytes only when somebody looks at them (a summary line never does).
    off, n = lay.off, lay.length
    lay.add(DATA, bytes(lay.buf[off:off + n]), off, n)
    lay.add(DATA_LEN, n)


# Final: compiled, a C static (a function named as a value is otherwise a look-up in the module's dict)
_FILL_DATA: Final = _fill_data


class DataLayer(Layer):
    __slots__ = ()

    @property
    def label(self) -> str:
        label = self._label
        if label is not None:
            return label
        return f"Data ({self.length} bytes)"

    @label.setter
    def label(self, text: str) -> None:
        self._label = text


def data_layer(buf: bytes, off: int, end: int) -> DataLayer:
    """The layer of the undissected bytes ``buf[off:end]``, its items filled when read."""
    lay = DataLayer("data", None, buf, off, end - off)
    lay._fill = _FILL_DATA
    return lay


def add_data_layer(pkt: Packet, buf: bytes, off: int, end: int) -> None:
    pkt.push(data_layer(buf, off, end))


class _Data(Dissector):
    """Undissected bytes, called directly (``registry.Dissector``)."""

    def dissect(self, pkt: Packet, buf: bytes, off: int, end: int, ctx: Any) -> bool:
        add_data_layer(pkt, buf, off, end)
        return True


table("data").register("data", _Data(add_data_layer))
