"""Display filters: ``bth.opcode == 0x0a and reth.dma_length > 4096``.

The language is Wireshark's (4.0), over the field names that JSON shows:

- ``field`` alone tests presence (of a protocol such as ``reth``, or of a field such as ``icrc.valid``);
- comparisons ``==``/``eq``/``any_eq``, ``!=``/``ne``/``all_ne``/``!==``, ``~=``/``any_ne``, ``===``/``all_eq``,
  ``<``/``lt``, ``<=``/``le``, ``>``/``gt``, ``>=``/``ge``; ``contains``; ``matches``/``~`` (a regular
  expression, case-insensitive as in Wireshark); ``in {1 2 3}`` (ranges ``4..7``) and
  ``not in {...}`` (which is ``not (... in {...})``, so true when the field is absent);
- ``and``/``&&``, ``or``/``||``, ``xor``/``^^``, ``not``/``!`` and parentheses.

A field that occurs several times in a packet matches ``==`` (and the order relations, ``contains``,
``matches``, ``in``) when ANY occurrence does; ``!=`` holds when EVERY occurrence differs (so ``a != b`` is
``not a == b`` for a present field); ``~=`` is "some occurrence differs", ``===`` "every occurrence equals".
A comparison with an absent field is false, whatever the operator.

A filter compiles once into a closure.  Per packet it collects the values of only the names the
expression mentions, in one walk over the layers, and evaluates a tree of small closures over them.
"""
from __future__ import annotations

import ipaddress
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .errors import RdmaspyError
from .fields import CATALOG, Catalog, Field
from .fieldview import Visitor, field_values
from .packet import Packet

Matcher = Callable[[Packet, int], bool]
# ``frame`` compared or sliced stands for the frame's bytes (``frame contains "NFS"``, ``frame[12:2] == 08:00``).
FRAME_BYTES = Field("frame\0bytes", 0, "Frame bytes", "bytes", catalogued=False)


class FilterError(RdmaspyError):
    """A filter that does not compile; ``column`` is 1-based, ``caret()`` points at it."""

    def __init__(self, reason: str, expr: str, pos: int) -> None:
        self.reason = reason
        self.expr = expr
        self.column = pos + 1
        super().__init__(f"bad filter: {reason} at column {pos + 1}: {expr}")

    def caret(self) -> str:
        return f"    {self.expr}\n    {' ' * (self.column - 1)}^"


# --- what names exist ---------------------------------------------------------------------------
def known_fields() -> Catalog:
    """The catalog of every filterable name, once every dissector and analysis module has declared its own."""
    from . import engine, fieldview  # noqa: F401  (fieldview declares frame.* and expert.*)
    engine.load_dissectors()
    from .analysis.analyzer import load_modules
    load_modules()          # analysis modules declare fields too (ib.analysis.*, rpcrdma.analysis.*)
    return CATALOG


def filter_needs_analysis(names: Iterable[str]) -> bool:
    """Whether a filter names an expert field or a field that an analysis module declares."""
    origin = known_fields().origin
    return any(n == "expert" or n.startswith("expert.") or origin.get(n, "").startswith("rdmaspy.analysis")
               for n in names)


# --- tokens ---------------------------------------------------------------------------------------
_WORD = re.compile(r"[A-Za-z0-9_.:/\-+]+")
_PUNCT = ("===", "!==", "==", "!=", "~=", "<=", ">=", "&&", "||", "^^", "<", ">", "!", "~", "(", ")", "{", "}", ",",
          "[", "]")


@dataclass(slots=True)
class Tok:
    kind: str      # "word" | "str" | "op" | "end"
    text: str
    pos: int
    value: Any = None   # decoded string for "str"


def _tokenize(expr: str) -> list[Tok]:
    toks: list[Tok] = []
    i, n = 0, len(expr)
    while i < n:
        c = expr[i]
        if c.isspace():
            i += 1
            continue
        if c == '"':
            j = i + 1
            out = []
            while j < n and expr[j] != '"':
                if expr[j] == "\\" and j + 1 < n:
                    nxt = expr[j + 1]
                    if nxt == "x" and j + 3 < n and re.fullmatch(r"[0-9a-fA-F]{2}", expr[j + 2:j + 4]):
                        out.append(chr(int(expr[j + 2:j + 4], 16)))
                        j += 4
                        continue
                    out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(nxt, nxt))
                    j += 2
                    continue
                out.append(expr[j])
                j += 1
            if j >= n:
                raise FilterError("unterminated string", expr, i)
            toks.append(Tok("str", expr[i:j + 1], i, "".join(out)))
            i = j + 1
            continue
        m = _WORD.match(expr, i)
        if m:
            toks.append(Tok("word", m.group(), i))
            i = m.end()
            continue
        for p in _PUNCT:
            if expr.startswith(p, i):
                toks.append(Tok("op", p, i))
                i += len(p)
                break
        else:
            raise FilterError(f"unexpected character {c!r}", expr, i)
    toks.append(Tok("end", "", n))
    return toks


# --- operators ------------------------------------------------------------------------------------
_CMP = {
    "==": "eq", "eq": "eq", "any_eq": "eq",
    "!=": "ne", "ne": "ne", "all_ne": "ne", "!==": "ne",
    "~=": "any_ne", "any_ne": "any_ne",
    "===": "all_eq", "all_eq": "all_eq",
    "<": "lt", "lt": "lt", "<=": "le", "le": "le", ">": "gt", "gt": "gt", ">=": "ge", "ge": "ge",
    "contains": "contains", "matches": "matches", "~": "matches",
}
_AND = {"and", "&&"}
_OR = {"or", "||"}
_XOR = {"xor", "^^"}
_NOT = {"not", "!"}
_KEYWORDS = _AND | _OR | _XOR | {"not", "in"} | {k for k in _CMP if k.isalpha() or "_" in k}


_MAX_DEPTH = 100
# A node evaluates over the per-packet dict name -> list of values.
Node = Callable[[dict], bool]


class _Parser:
    def __init__(self, expr: str, catalog: Catalog) -> None:
        self.expr = expr
        self.toks = _tokenize(expr)
        self.i = 0
        self.cat = catalog
        self.depth = 0
        self.names: set[str] = set()
        self.derived: dict[str, tuple[str, Callable[[Any], Any]]] = {}   # key -> (field name, function)

    # -- helpers --
    def peek(self) -> Tok:
        return self.toks[self.i]

    def next(self) -> Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def err(self, reason: str, tok: Tok | None = None) -> FilterError:
        tok = tok or self.peek()
        return FilterError(reason, self.expr, tok.pos)

    def is_kw(self, tok: Tok, words: set[str]) -> bool:
        return (tok.kind == "op" and tok.text in words) or (tok.kind == "word" and tok.text.lower() in words)

    # -- grammar: or > xor > and > not > comparison --
    def parse(self) -> Node:
        if self.peek().kind == "end":
            raise self.err("empty filter")
        node = self.parse_or()
        t = self.peek()
        if t.kind != "end":
            if t.kind == "op" and t.text == ")":
                raise self.err("unbalanced ')'", t)
            raise self.err(f"expected 'and', 'or' or the end of the filter, found {t.text!r}", t)
        return node

    # Chains become one node over a list, so a thousand terms cost no stack depth per packet.
    def _chain(self, parse_term: Callable[[], Node], keywords) -> list[Node]:
        nodes = [parse_term()]
        while self.is_kw(self.peek(), keywords):
            self.next()
            nodes.append(parse_term())
        return nodes

    def parse_or(self) -> Node:
        nodes = self._chain(self.parse_xor, _OR)
        if len(nodes) == 1:
            return nodes[0]
        if len(nodes) == 2:
            a, b = nodes
            return lambda v: a(v) or b(v)
        return lambda v: any(n(v) for n in nodes)

    def parse_xor(self) -> Node:
        nodes = self._chain(self.parse_and, _XOR)
        if len(nodes) == 1:
            return nodes[0]
        return lambda v: sum(1 for n in nodes if n(v)) % 2 == 1

    def parse_and(self) -> Node:
        nodes = self._chain(self.parse_not, _AND)
        if len(nodes) == 1:
            return nodes[0]
        if len(nodes) == 2:
            a, b = nodes
            return lambda v: a(v) and b(v)
        return lambda v: all(n(v) for n in nodes)

    def parse_not(self) -> Node:
        if self.is_kw(self.peek(), _NOT):
            tok = self.next()
            self.deeper(tok)
            inner = self.parse_not()
            self.depth -= 1
            return lambda v: not inner(v)
        return self.parse_primary()

    def deeper(self, tok: Tok) -> None:
        # nesting costs stack on every packet: refuse the absurd rather than overflow
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.err(f"nested more than {_MAX_DEPTH} deep", tok)

    def parse_primary(self) -> Node:
        t = self.peek()
        if t.kind == "op" and t.text == "(":
            self.next()
            self.deeper(t)
            if self.peek().kind == "end":
                raise self.err("expected an expression after '('")
            node = self.parse_or()
            self.depth -= 1
            close = self.peek()
            if not (close.kind == "op" and close.text == ")"):
                raise self.err(f"missing ')' for the '(' of column {t.pos + 1}", close)
            self.next()
            return node
        if t.kind == "end":
            raise self.err("expected a field name at the end of the filter" if self.i else "empty filter")
        if t.kind != "word" or t.text.lower() in _KEYWORDS:
            raise self.err(f"expected a field name, found {t.text!r}", t)
        nxt = self.toks[self.i + 1]
        field: Field | None
        if t.text.lower() == "len" and nxt.kind == "op" and nxt.text == "(":
            name, field = self.length_of(t)
        else:
            name, field = self.field_ref(t)
            self.next()
            nxt = self.peek()
            if name == "frame" and (nxt.kind in ("op", "word")) and (nxt.text == "[" or nxt.text in _CMP
                                                                    or nxt.text.lower() in _CMP):
                name, field = FRAME_BYTES.name, FRAME_BYTES      # ``frame contains "x"``: the whole frame
                self.names.add(name)
            if nxt.kind == "op" and nxt.text == "[":
                name, field = self.slice_of(name, field, nxt)
        op_tok = self.peek()
        if op_tok.kind == "word" and op_tok.text.lower() == "not" and self.toks[self.i + 1].kind == "word" \
                and self.toks[self.i + 1].text.lower() == "in":
            self.next()
            self.next()
            node = self.parse_set(name, field, op_tok)
            return lambda v: not node(v)   # Wireshark: 'a not in S' is 'not (a in S)'
        if self.is_kw(op_tok, {"in"}):
            self.next()
            return self.parse_set(name, field, op_tok)
        op = _CMP.get(op_tok.text.lower() if op_tok.kind == "word" else op_tok.text) \
            if op_tok.kind in ("word", "op") else None
        if op is None:
            return self.presence(name)
        self.next()
        return self.comparison(name, field, op, op_tok)

    def field_ref(self, t: Tok) -> tuple[str, Field | None]:
        name = t.text
        cat = self.cat
        f = cat.fields.get(name)
        if f is None and name not in cat.protocols:
            raise self.err(f"unknown field {name!r}{_suggest(name, cat)}", t)
        self.names.add(name)
        return name, f

    # -- derived values: len(field) and field[slice], computed per packet from the field's values --
    def derive(self, key: str, base: str, fn: Callable[[Any], Any], field: Field) -> tuple[str, Field]:
        self.derived[key] = (base, fn)
        return key, field

    def length_of(self, t: Tok) -> tuple[str, Field]:
        self.next()
        self.next()                     # 'len' '('
        ft = self.peek()
        if ft.kind != "word" or ft.text.lower() in _KEYWORDS:
            raise self.err("expected a field name in len(...)", ft)
        name, field = self.field_ref(ft)
        self.next()
        if name == "frame":
            name, field = FRAME_BYTES.name, FRAME_BYTES
            self.names.add(name)
        close = self.peek()
        if close.kind == "op" and close.text == "[":
            name, field = self.slice_of(name, field, close)     # derived first, so computed first
            close = self.peek()
        if not (close.kind == "op" and close.text == ")"):
            raise self.err("expected ')' after the field of len(...)", close)
        self.next()
        if field is None or _kind(field) not in ("bytes", "addr", "str"):
            raise self.err(f"len() needs a bytes, address or string field; {name} is not one", ft)
        return self.derive(f"len({name})", name, _length, Field(f"len({name})", 0, f"Length of {name}", catalogued=False))

    def slice_of(self, name: str, field: Field | None, open_tok: Tok) -> tuple[str, Field]:
        self.next()
        spec = self.peek()
        if spec.kind != "word":
            raise self.err("expected a range such as 0:2 (offset:length), 1-3 (first-last) or 4", spec)
        self.next()
        close = self.peek()
        if not (close.kind == "op" and close.text == "]"):
            raise self.err("expected ']' after the range", close)
        self.next()
        if field is None or _kind(field) not in ("bytes", "addr", "str"):
            raise self.err(f"slices need a bytes, address or string field; {name} is not one", open_tok)
        cut = _slice(spec.text)
        if cut is None:
            raise self.err(f"{spec.text!r} is not a range: write offset:length, first-last, offset, offset: or "
                           f":length", spec)
        key = f"{name}[{spec.text}]"
        return self.derive(key, name, cut, Field(key, 0, f"{name} bytes {spec.text}", "bytes", catalogued=False))

    def presence(self, name: str) -> Node:
        return lambda v: name in v

    # -- comparisons --
    def comparison(self, name: str, field: Field | None, op: str, op_tok: Tok) -> Node:
        vt = self.peek()
        if vt.kind in ("end", "op") or (vt.kind == "word" and vt.text.lower() in _KEYWORDS):
            raise self.err(f"expected a value after {op_tok.text!r}", vt)
        self.next()
        if field is None:
            raise self.err(f"{name!r} is a protocol: it can only be tested for presence (only 'frame' compares as bytes)",
                           op_tok)
        kind = _kind(field)
        # The other side may be a field (``ip.src == ip.dst``) when it is not a literal of this type.
        if vt.kind == "word" and op not in ("contains", "matches"):
            lit = None if kind == "str" else _try_literal(field, kind, vt, op)
            if lit is None and vt.text in self.cat.fields:
                other = vt.text
                self.names.add(other)
                return _field_vs_field(name, other, op, kind, _kind(self.cat.fields[other]))
        if op == "contains":
            return self.contains(name, field, kind, vt)
        if op == "matches":
            if vt.kind != "str":
                raise self.err("'matches' needs a quoted regular expression", vt)
            if kind not in ("str", "bytes"):
                raise self.err(f"'matches' needs a string or bytes field; {name} is {field.display}", op_tok)
            try:
                if kind == "str":
                    rx = re.compile(vt.value, re.IGNORECASE)
                    return _quant(name, lambda x: rx.search(_as_str(x)) is not None, "any")
                rxb = re.compile(vt.value.encode("latin-1", "replace"), re.IGNORECASE | re.DOTALL)
                return _quant(name, lambda x: rxb.search(_as_bytes(x)) is not None, "any")
            except re.error as exc:
                raise self.err(f"bad regular expression: {exc}", vt) from None
        lit = self.literal(field, kind, vt, op)
        return _compare(name, op, lit, kind)

    def contains(self, name: str, field: Field, kind: str, vt: Tok) -> Node:
        if kind == "str":
            needle = vt.value if vt.kind == "str" else vt.text
            return _quant(name, lambda x: needle in _as_str(x), "any")
        if kind in ("bytes", "addr"):
            if vt.kind == "str":
                nb = vt.value.encode("utf-8")
            else:
                nb = _parse_bytes(vt.text)
                if nb is None:
                    raise self.err(f"{vt.text!r} is not a byte string (write bytes as hex with colons: 01:02:03)",
                                   vt)
            return _quant(name, lambda x: nb in _as_bytes(x), "any")
        raise self.err(f"'contains' needs a string or bytes field; {name} is {field.display}", vt)

    def parse_set(self, name: str, field: Field | None, op_tok: Tok) -> Node:
        t = self.peek()
        if not (t.kind == "op" and t.text == "{"):
            raise self.err("expected '{' after 'in'", t)
        self.next()
        if field is None:
            raise self.err(f"{name!r} is a protocol: it can only be tested for presence (only 'frame' compares as bytes)",
                           op_tok)
        kind = _kind(field)
        preds: list[Callable[[Any], bool]] = []
        while True:
            t = self.peek()
            if t.kind == "op" and t.text == "}":
                self.next()
                break
            if t.kind == "op" and t.text == ",":
                self.next()
                continue
            if t.kind == "end":
                raise self.err("expected '}' to close the set", t)
            if t.kind not in ("word", "str"):
                raise self.err(f"expected a value in the set, found {t.text!r}", t)
            self.next()
            if t.kind == "word" and ".." in t.text and kind in ("int", "float"):
                lo_text, _, hi_text = t.text.partition("..")
                lo = self.literal(field, kind, Tok("word", lo_text, t.pos), "ge")
                hi = self.literal(field, kind, Tok("word", hi_text, t.pos + len(lo_text) + 2), "le")
                preds.append(_range_pred(lo, hi))
                continue
            lit = self.literal(field, kind, t, "eq")
            preds.append(_eq_pred(lit, kind))
        if not preds:
            raise self.err("empty set", t)
        if kind == "int" and all(isinstance(p, _Equal) and isinstance(p.lit, int) for p in preds):
            members = frozenset(p.lit for p in preds)     # type: ignore[attr-defined]
            return _quant(name, lambda x: x in members, "any")
        return _quant(name, lambda x: any(p(x) for p in preds), "any")

    def literal(self, field: Field, kind: str, vt: Tok, op: str) -> Any:
        lit = _try_literal(field, kind, vt, op)
        if lit is None:
            raise self.err(_literal_problem(field, kind, vt), vt)
        return lit


# --- literals -----------------------------------------------------------------------------------------
def _kind(field: Field) -> str:
    d = field.display
    if d in ("dec", "hex"):
        return "int"
    if d in ("float", "time"):
        return "float"
    if d in ("ipv4", "ipv6", "gid", "mac"):
        return "addr"
    return {"bool": "bool", "bytes": "bytes", "str": "str"}[d]


class _Names(frozenset):
    """The values of an enumeration name (a name may stand for several values)."""


class _Net:
    """An address prefix (``192.0.2.0/24``): matches by mask."""
    __slots__ = ("net", "mask", "size")

    def __init__(self, packed: bytes, prefix: int) -> None:
        self.size = len(packed)
        bits = self.size * 8
        self.mask = ((1 << bits) - 1) ^ ((1 << (bits - prefix)) - 1)
        self.net = int.from_bytes(packed, "big") & self.mask

    def __call__(self, x: Any) -> bool:
        b = _as_bytes(x)
        return len(b) == self.size and int.from_bytes(b, "big") & self.mask == self.net


def _parse_int(text: str) -> int | None:
    t = text.lower()
    sign = 1
    if t.startswith(("-", "+")):
        sign = -1 if t[0] == "-" else 1
        t = t[1:]
    try:
        if t.startswith(("0x", "0b", "0o")):
            return sign * int(t, 0)
        if len(t) > 1 and t.startswith("0") and t.isdigit():
            return sign * int(t, 8)       # C (and Wireshark) convention: a leading 0 is octal
        return sign * int(t, 10)
    except ValueError:
        return None


_HEXBYTES = re.compile(r"[0-9a-fA-F]{1,2}(?:[:.\-][0-9a-fA-F]{1,2})*")


def _parse_bytes(text: str) -> bytes | None:
    if not _HEXBYTES.fullmatch(text):
        return None
    if len(text) <= 2:
        return bytes([int(text, 16)])
    return bytes(int(p, 16) for p in re.split(r"[:.\-]", text))


def _parse_addr(field: Field, text: str) -> Any:
    d = field.display
    net = None
    if "/" in text:
        text, _, plen = text.partition("/")
        if not plen.isdigit():
            return None
        net = int(plen)
    packed: bytes | None = None
    if d == "mac":
        parts = re.split(r"[:\-.]", text)
        if len(parts) == 6 and all(re.fullmatch(r"[0-9a-fA-F]{1,2}", p) for p in parts):
            packed = bytes(int(p, 16) for p in parts)
    else:
        try:
            a = ipaddress.ip_address(text)
        except ValueError:
            return None
        if d == "ipv4":
            packed = a.packed if a.version == 4 else None
        elif d == "ipv6":
            packed = a.packed if a.version == 6 else None
        else:   # gid: IPv6 text, or an IPv4 address as its IPv4-mapped GID (as RoCE writes it)
            packed = a.packed if a.version == 6 else b"\0" * 10 + b"\xff\xff" + a.packed
    if packed is None:
        return None
    if net is not None:
        if d == "gid" and "." in text and ":" not in text:
            net += 96
        if net > len(packed) * 8:
            return None
        return _Net(packed, net)
    return packed


def _try_literal(field: Field, kind: str, vt: Tok, op: str) -> Any:
    """The literal as the field's values are compared, or None when it is not one."""
    text = vt.value if vt.kind == "str" else vt.text
    if kind == "int":
        if vt.kind == "word":
            v = _parse_int(text)
            if v is not None:
                return v
        if field.names:
            low = text.lower()
            hits = _Names(k for k, n in field.names.items() if n.lower() == low)
            if hits:
                if op not in ("eq", "ne", "any_ne", "all_eq"):
                    return None
                return hits
        return None
    if kind == "bool":
        low = text.lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        return None
    if kind == "float":
        if vt.kind != "word":
            return None
        try:
            return float(text)
        except ValueError:
            return None
    if kind == "addr":
        if vt.kind == "word":
            return _parse_addr(field, text)
        return None
    if kind == "bytes":
        if vt.kind == "str":
            return text.encode("utf-8")
        return _parse_bytes(text)
    # str
    return text


def _literal_problem(field: Field, kind: str, vt: Tok) -> str:
    text = vt.value if vt.kind == "str" else vt.text
    what = {"int": "an integer", "bool": "true or false (1 or 0)", "float": "a number",
            "bytes": "bytes as hex with colons (01:02:03) or a quoted string", "str": "a quoted string"}.get(kind)
    if kind == "addr":
        what = {"ipv4": "an IPv4 address or prefix", "ipv6": "an IPv6 address or prefix",
                "gid": "a GID (IPv6 or IPv4 address)", "mac": "a MAC address (aa:bb:cc:dd:ee:ff)"}[field.display]
    if kind == "int" and field.names:
        sample = next(iter(field.names.values()))
        return f"{text!r} is neither {what} nor a value name of {field.name} (such as \"{sample}\")"
    return f"{text!r} is not a valid value for {field.name}: expected {what}"


# --- value coercion ---------------------------------------------------------------------------------
def _as_bytes(x: Any) -> bytes:
    if isinstance(x, bytes):
        return x
    if isinstance(x, (bytearray, memoryview)):
        return bytes(x)
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, int):
        return x.to_bytes(max(1, (x.bit_length() + 7) // 8), "big")
    return b""


def _as_str(x: Any) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x).decode("utf-8", "replace")
    return str(x)


def _length(x: Any) -> int:
    return len(x) if isinstance(x, str) else len(_as_bytes(x))


def _slice(spec: str) -> Callable[[Any], bytes | None] | None:
    """Wireshark's ranges: ``i:n`` n bytes from offset i, ``i-j`` offsets i to j, ``i`` one byte, ``i:`` to the
    end, ``:n`` the first n.  Negative offsets count from the end.  None where the bytes are not there."""
    m = re.fullmatch(r"(-?\d+)?(?:(:)(\d+)?|-(\d+))?", spec)
    if not m or spec == "" or spec == ":":
        return None
    start_t, colon, length_t, last_t = m.groups()
    start = int(start_t) if start_t else 0
    if last_t is not None:
        if start_t is None or start < 0 or int(last_t) < start:
            return None
        length: int | None = int(last_t) - start + 1
    elif colon:
        length = int(length_t) if length_t else None
    else:
        length = 1

    def cut(x: Any) -> bytes | None:
        b = _as_bytes(x)
        i = start + len(b) if start < 0 else start
        if i < 0 or i > len(b):
            return None
        if length is None:
            return b[i:]
        if i + length > len(b):
            return None
        return b[i:i + length]
    return cut


class _Equal:
    """``x == lit`` as a callable, so that sets of plain integers can become one frozenset lookup."""
    __slots__ = ("lit",)

    def __init__(self, lit: Any) -> None:
        self.lit = lit

    def __call__(self, x: Any) -> bool:
        return x == self.lit


def _range_pred(lo: Any, hi: Any) -> Callable[[Any], bool]:
    """``lo..hi`` in a set: both ends included."""
    return lambda x: lo <= x <= hi


def _eq_pred(lit: Any, kind: str) -> Callable[[Any], bool]:
    if isinstance(lit, _Net):
        return lit
    if isinstance(lit, _Names):
        return lit.__contains__
    if kind == "bool":
        return lambda x: bool(x) is lit
    if kind == "str":
        return lambda x: _as_str(x) == lit
    if kind in ("addr", "bytes"):
        return lambda x: x == lit or (not isinstance(x, (bytes, bytearray, memoryview)) and _as_bytes(x) == lit)
    return _Equal(lit)


_ORDER = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def _compare(name: str, op: str, lit: Any, kind: str) -> Node:
    if op in ("eq", "ne", "any_ne", "all_eq"):
        eq = _eq_pred(lit, kind)
        if op == "eq":
            return _quant(name, eq, "any")
        if op == "all_eq":
            return _quant(name, eq, "all")
        neq = lambda x: not eq(x)   # noqa: E731
        return _quant(name, neq, "all" if op == "ne" else "any")
    rel = _ORDER[op]
    if isinstance(lit, _Net):
        lit = lit.net.to_bytes(lit.size, "big")
    if kind == "bool":
        lit_i = int(lit)
        return _quant(name, lambda x: rel(int(bool(x)), lit_i), "any")
    if kind == "str":
        return _quant(name, lambda x: rel(_as_str(x), lit), "any")
    if kind in ("addr", "bytes"):
        return _quant(name, lambda x: rel(_as_bytes(x), lit), "any")
    return _quant(name, lambda x: rel(x, lit), "any")


def _quant(name: str, pred: Callable[[Any], bool], how: str) -> Node:
    """Apply ``pred`` to the occurrences of ``name``: any or all of them; absent is false."""
    if how == "any":
        def node(v: dict) -> bool:
            xs = v.get(name)
            if xs is None:
                return False
            try:
                for x in xs:
                    if pred(x):
                        return True
            except (TypeError, ValueError):
                return False
            return False
    else:
        def node(v: dict) -> bool:
            xs = v.get(name)
            if xs is None:
                return False
            try:
                for x in xs:
                    if not pred(x):
                        return False
            except (TypeError, ValueError):
                return False
            return True
    return node


def _field_vs_field(a: str, b: str, op: str, ka: str, kb: str) -> Node:
    def norm(x: Any, k: str) -> Any:
        if k in ("addr", "bytes"):
            return _as_bytes(x)
        if k == "str":
            return _as_str(x)
        if k == "bool":
            return int(bool(x))
        return x

    base = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "any_ne": lambda x, y: x != y,
            "all_eq": lambda x, y: x == y, **_ORDER}.get(op)
    if base is None:
        raise ValueError(op)
    every = op in ("ne", "all_eq")

    def node(v: dict) -> bool:
        xs, ys = v.get(a), v.get(b)
        if xs is None or ys is None:
            return False
        try:
            pairs = ((norm(x, ka), norm(y, kb)) for x in xs for y in ys)
            return all(base(x, y) for x, y in pairs) if every else any(base(x, y) for x, y in pairs)
        except TypeError:
            return False
    return node


def _suggest(name: str, cat: Catalog) -> str:
    import difflib
    close = difflib.get_close_matches(name, list(cat.fields) + list(cat.protocols), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


# --- collecting only what the expression needs --------------------------------------------------
def make_extractor(names: Iterable[str], catalog: Catalog | None = None) -> Callable[[Packet, int], dict]:
    """A function giving, for a packet, ``name -> values in packet order`` for just ``names``: one visit
    of the packet that reads nothing else.  ``frame\0bytes`` is the frame's bytes (``frame contains``).
    ``catalog``: the catalog the names were checked against (by default every module is loaded first, so
    that the visit knows which names come from a layer's variable part)."""
    if catalog is None:
        known_fields()
    wanted = set(names)
    whole_frame = FRAME_BYTES.name in wanted
    visitor = Visitor(wanted - {FRAME_BYTES.name})

    def extract(pkt: Packet, t0: int) -> dict:
        out = field_values(visitor, pkt, t0)
        if whole_frame:
            out[FRAME_BYTES.name] = [pkt.frame.data]
        return out

    return extract


def compile_filter(expr: str) -> Matcher:
    """Compile a display filter into ``match(packet, t0) -> bool``; raises FilterError."""
    parser = _Parser(expr, known_fields())
    node = parser.parse()
    extract = make_extractor(parser.names)
    derived = [(key, base, fn) for key, (base, fn) in parser.derived.items()]

    if not derived:
        def match(pkt: Packet, t0: int) -> bool:
            return node(extract(pkt, t0))
    else:
        def match(pkt: Packet, t0: int) -> bool:
            v = extract(pkt, t0)
            for key, base, fn in derived:
                xs = v.get(base)
                if xs is not None:
                    ys = [y for y in map(fn, xs) if y is not None]
                    if ys:
                        v[key] = ys
            return node(v)

    match.names = frozenset(parser.names)   # type: ignore[attr-defined]
    match.expr = expr                       # type: ignore[attr-defined]
    return match
