"""Turning declared field values into text and JSON, by each field's declared display."""
from __future__ import annotations

from ..fields import Field
from ..typenames import Any, Final
from .safe import safe_text


def _gid(b: bytes) -> str:
    if len(b) == 16 and b[:12] == b"\0" * 10 + b"\xff\xff":
        return f"::ffff:{b[12]}.{b[13]}.{b[14]}.{b[15]}"
    if len(b) != 16:
        return b.hex()
    from ..dissectors.ip import ipv6_text     # here: what reads a capture has it imported
    return ipv6_text(bytes(b))


ADDR_DISPLAYS: Final = frozenset({"ipv4", "ipv6", "gid", "mac"})
# Address text by field and bytes: a capture has few addresses and many packets (bounded).  By field
# first, a look-up of the bytes alone: no (display, bytes) tuple made and hashed per value.
_ADDR_TEXTS: Final[dict[Field, dict[bytes, str]]] = {}


def address_text(field: Field, b: bytes) -> str:
    """The text of an address (a field displayed as one of ADDR_DISPLAYS), as JSON and the tree show it."""
    known = _ADDR_TEXTS.get(field)
    if known is None:
        if len(_ADDR_TEXTS) >= 4096:
            _ADDR_TEXTS.clear()
        known = _ADDR_TEXTS[field] = {}
    text = known.get(b)
    if text is None:
        if len(known) >= 65536:
            known.clear()
        text = known[b] = _json_bytes(field.display, b)
    return text


def json_value(field: Field, value: Any) -> Any:
    """A value as JSON wants it: numbers stay numbers, addresses become their usual text, bytes hex."""
    d = field.display
    cls = type(value)
    if cls is int:          # nearly every value: no isinstance with a tuple of types (see text_value)
        if d == "bool":
            return bool(value)
        n: int = value
        if not -(1 << 63) <= n < (1 << 64):
            return f"{n:#x}"
        return value
    if cls is bytes:        # the next most: no isinstance with a tuple of types, no copy
        if d in ADDR_DISPLAYS:
            return address_text(field, value)
        b: bytes = value
        return b.decode("utf-8", "replace") if d == "str" else b.hex()
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
        if d == "str":
            return b.decode("utf-8", "replace")
        return _json_bytes(d, b)
    if d == "bool":
        return bool(value)
    if type(value) is int and not -(1 << 63) <= value < (1 << 64):
        return f"{value:#x}"        # JSON readers lose wider integers: such values go as hex text
    return value


def _json_bytes(d: str, b: bytes) -> Any:
    if d == "ipv4" and len(b) == 4:
        return f"{b[0]}.{b[1]}.{b[2]}.{b[3]}"
    if d == "ipv6" and len(b) == 16:
        from ..dissectors.ip import ipv6_text
        return ipv6_text(bytes(b))
    if d == "gid":
        return _gid(b)
    if d == "mac":
        return ":".join(f"{x:02x}" for x in b)
    return b.hex()


def text_value(field: Field, value: Any) -> str:
    """A value as the verbose tree shows it, with its name for enumerations; text from the capture
    with its control characters shown as escapes (``safe_text``), so that the tree is safe for a
    terminal as it is made: numbers, hex, addresses and the declared names and units hold none."""
    d = field.display
    # Exact class tests first: a plain int or bytes (nearly every value) takes no isinstance with a
    # tuple of types, which compiled costs a tuple and three look-ups of builtins; type(), which compiled
    # reads the object's type pointer, where .__class__ is a generic attribute look-up.
    cls = type(value)
    if cls is int:
        n: int = value              # typed: compiled, str() and the comparisons take the machine-word path
        if d == "bool":
            return "True" if n else "False"
        if d == "hex":
            width = (field.bits + 3) // 4 if field.bits else 0
            # hex() and zfill rather than a nested format spec, which compiled goes through str.format
            text = "0x" + hex(n)[2:].zfill(width) if n >= 0 else f"0x{n:0{width}x}"
        else:
            text = str(n)
        names = field.names
        if names is None:           # most integers: no name to look up, seldom a unit
            return text if not field.unit else text + " " + field.unit
        return _named(field, text, names.get(n) if type(names) is not dict else _dict_get(names, n))
    elif cls is bytes or isinstance(value, (bytes, bytearray, memoryview)):
        b = value if cls is bytes else bytes(value)
        if d == "str":
            # a fixed-size text field is padded with NULs (a MAD's NodeString): the text ends at them
            return safe_text(b.rstrip(b"\0").decode("utf-8", "replace"))
        if d in ("ipv4", "ipv6", "gid", "mac"):
            return str(json_value(field, b))
        if len(b) > 48:
            return f"{b[:48].hex()}… ({len(b)} bytes)"
        return b.hex() if b else "(empty)"
    elif d == "bool":
        return "True" if value else "False"
    elif isinstance(value, float):
        return _named(field, f"{value:.9g}", None)
    elif isinstance(value, int) and d == "hex":
        width = (field.bits + 3) // 4 if field.bits else 0
        text = f"0x{value:0{width}x}"
    elif value is None:
        text = "(none)"
    else:
        text = safe_text(str(value))
    names = field.names
    return _named(field, text, None if names is None else
                  (names.get(value) if type(names) is not dict else _dict_get(names, value)))


def _dict_get(names: Any, value: Any) -> str | None:
    d: dict[Any, str] = names
    return d.get(value)


def _named(field: Field, text: str, name: str | None) -> str:
    if name is not None:
        text = f"{name} ({text})"
    if field.unit:
        text = f"{text} {field.unit}"
    return text
