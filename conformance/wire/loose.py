"""Reading a frame the strict decoder refuses, to say what it was (evidence, never a value to act on).

This module owns `describe_frame(raw)`: the frame's performative and fields as the other side sent them,
with every composite read field by field against its type definition, so that a frame refused for a missing
mandatory field reads as `close(error=error(condition=<missing: mandatory>, description="..."))` instead of
raw bytes. Primitive values are decoded by `decode.decode_value`; described lists are walked here without
building composites. Sans-IO; it never raises (None when even this reading fails).
"""

from __future__ import annotations

import struct

from .decode import DecodeError, decode_value
from .performatives import BY_CODE, BY_SYMBOL
from .types import Symbol, ULong

_LIST_CODES = {0x45: (0, 0), 0xC0: (1, 1), 0xD0: (4, 4)}    # code -> (size width, count width)
_MISSING = "<missing: mandatory>"


class _Composite:
    """A described list read loosely: its class (None: unknown descriptor) and its raw elements."""

    def __init__(self, cls, descriptor, values: list):
        self.cls, self.descriptor, self.values = cls, descriptor, values

    def text(self) -> str:
        if self.cls is None:
            return f"described({self.descriptor}, [{', '.join(_text(v) for v in self.values)}])"
        parts = []
        for i, spec in enumerate(self.cls.FIELDS):
            value = self.values[i] if i < len(self.values) else None
            if value is None:
                if spec.mandatory:
                    parts.append(f"{spec.name}={_MISSING}")
                continue
            parts.append(f"{spec.name}={_text(value)}")
        return f"{self.cls.NAME}({', '.join(parts)})"

    def missing(self) -> list[str]:
        """`<composite>.<field>` for every mandatory field absent here or in a composite inside."""
        out = []
        if self.cls is not None:
            for i, spec in enumerate(self.cls.FIELDS):
                if spec.mandatory and (i >= len(self.values) or self.values[i] is None):
                    out.append(f"{self.cls.NAME}.{spec.name}")
        for v in self.values:
            if isinstance(v, _Composite):
                out += v.missing()
        return out


def _text(value) -> str:
    if isinstance(value, _Composite):
        return value.text()
    if isinstance(value, str):
        return f'"{value}"' if not isinstance(value, Symbol) else str(value)
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    return str(value)


def _read(buf: bytes, pos: int, end: int, depth: int = 0):
    if depth > 32:
        raise DecodeError(pos, "nesting too deep")
    code = buf[pos]
    if code == 0x00:
        descriptor, pos = _read(buf, pos + 1, end, depth + 1)
        cls = None
        if isinstance(descriptor, ULong) or (isinstance(descriptor, int) and not isinstance(descriptor, bool)):
            cls = BY_CODE.get(int(descriptor))
        elif isinstance(descriptor, Symbol):
            cls = BY_SYMBOL.get(descriptor)
        if pos < end and buf[pos] in _LIST_CODES:
            values, pos = _read_list(buf, pos, end, depth + 1)
            return _Composite(cls if cls is not None and hasattr(cls, "FIELDS") else None, descriptor, values), pos
        value, pos = _read(buf, pos, end, depth + 1)
        return _Composite(None, descriptor, [value]), pos
    if code in _LIST_CODES:
        return _read_list(buf, pos, end, depth + 1)
    return decode_value(buf, pos, end)


def _read_list(buf: bytes, pos: int, end: int, depth: int):
    code = buf[pos]
    size_w, count_w = _LIST_CODES[code]
    pos += 1
    if code == 0x45:
        return [], pos
    fmt = ">B" if size_w == 1 else ">I"
    size = struct.unpack_from(fmt, buf, pos)[0]
    count = struct.unpack_from(fmt, buf, pos + size_w)[0]
    stop = pos + size_w + size
    pos += size_w + count_w
    values = []
    for _ in range(count):
        value, pos = _read(buf, pos, min(stop, end), depth + 1)
        values.append(value)
    return values, stop


def read_frame(raw: bytes):
    """(the loosely read performative, its channel), or None."""
    try:
        if len(raw) < 8:
            return None
        size, doff, _ftype, channel = struct.unpack_from(">IBBH", raw, 0)
        body_start = doff * 4
        if size > len(raw) or body_start >= size:
            return None
        value, _ = _read(raw, body_start, size)
        return (value, channel) if isinstance(value, _Composite) else None
    except Exception:      # evidence only: whatever fails, there is nothing to say
        return None


def describe_frame(raw: bytes) -> str | None:
    """The frame's performative with its fields as sent, mandatory fields that are absent marked, e.g.
    `close(error=error(condition=<missing: mandatory>, description="..."))`; None if it cannot be read."""
    read = read_frame(raw)
    return read[0].text() if read is not None else None


def missing_mandatory(raw: bytes) -> list[str]:
    """The mandatory fields the frame lacks (`error.condition`), [] if none or unreadable."""
    read = read_frame(raw)
    return read[0].missing() if read is not None else []
