"""The plain decoders of transfer, flow and disposition bodies (`decode._PLAIN`, tried first by
`decode_performative`) against the generic decoder (`decode_value`), which stays the reference: on list8
bodies built from each field's usual encodings and from others (null where a field is mandatory, booleans as
0x56, wider or other types, described states with fields, too few or too many fields, sizes that disagree),
both give the same value (same type, same repr, same field types) or the same DecodeError."""

from __future__ import annotations

import struct

from hypothesis import given, settings, strategies as st

from conformance.wire import DecodeError, decode_value
from conformance.wire.decode import _PLAIN, decode_performative

ENCODINGS = st.one_of(
    st.just(b"\x40"), st.just(b"\x43"), st.integers(0, 255).map(lambda v: b"\x52" + bytes([v])),
    st.integers(0, 0xFFFFFFFF).map(lambda v: b"\x70" + struct.pack(">I", v)),
    st.just(b"\x41"), st.just(b"\x42"), st.sampled_from([b"\x56\x00", b"\x56\x01", b"\x56\x02"]),
    st.binary(max_size=6).map(lambda b: b"\xa0" + bytes([len(b)]) + b),
    st.sampled_from([b"\x00\x53\x24\x45", b"\x00\x53\x25\x45", b"\x00\x53\x26\x45", b"\x00\x53\x27\x45",
                     b"\x00\x53\x23\x45", b"\x00\x53\x28\x45", b"\x00\x53\x24\xc0\x01\x00", b"\x00\x53\x99\x45",
                     b"\x00\x53\x27\xc0\x02\x01\x40", b"\x00\x53\x23\xc0\x03\x01\x52\x01"]),
    st.sampled_from([b"\x44", b"\x53\x01", b"\x60\x00\x01", b"\xa1\x01a", b"\xa3\x01a", b"\xc1\x01\x00", b"\x71\x00\x00\x00\x01"]),
)


@st.composite
def plain_bodies(draw):
    code = draw(st.sampled_from(sorted(_PLAIN)))
    fields = draw(st.lists(ENCODINGS, max_size=13))
    content = b"".join(fields)
    size = len(content) + 1 + draw(st.sampled_from([0, 0, 0, 0, -1, 1, -3]))
    count = len(fields) + draw(st.sampled_from([0, 0, 0, 0, -1, 1]))
    body = bytes([0x00, 0x53, code, 0xC0, size & 0xFF, count & 0xFF]) + content
    return body + draw(st.sampled_from([b"", b"", b"\x40", b"payload"]))


def _outcome(fn, buf, offset, end):
    try:
        value, pos = fn(buf, offset, end)
    except DecodeError as exc:
        return ("error", exc.offset, exc.reason)
    fields = [type(v) for v in value.field_values()] if hasattr(value, "field_values") else None
    return ("value", type(value), repr(value), fields, pos)


@settings(max_examples=1500)
@given(plain_bodies())
def test_plain_bodies_decode_as_the_generic_decoder_does(body):
    for end in (len(body), len(body) - 1):
        assert _outcome(decode_performative, body, 0, end) == _outcome(decode_value, body, 0, end), body.hex()


def test_every_usual_frame_body_takes_the_plain_path():
    """The bodies proton-c and the suite's peer send most: decoded plain, to the reference's value."""
    for body in ("005314c00a04435264a00331303143", "005313c0130943707fffffff43707fffffff434352054042",
                 "005315c00a05414352044100532445"):
        raw = bytes.fromhex(body)
        assert _PLAIN[raw[2]](raw, 4, len(raw)) == decode_value(raw)
