"""Sans-IO AMQP 1.0 codec: types, composite types, frames and RFC 1982 serial numbers.

Everything here is pure: bytes in, values out, and back. No sockets, threads or clocks.
"""

from .decode import DecodeError, decode_all, decode_value
from .encode import EncodeError, encode_composite, encode_field, encode_message, encode_value
from .frames import (
    AMQP_FRAME, AMQP_HEADER, MAX_FRAME_SIZE, MIN_MAX_FRAME_SIZE, NotAProtocolHeader, PROTOCOL_AMQP, PROTOCOL_SASL, PROTOCOL_TLS, SASL_FRAME,
    SASL_HEADER, TLS_HEADER, Frame, FrameDecoder, ProtocolHeader, decode_frame, encode_frame, heartbeat,
)
from .performatives import *  # noqa: F401,F403  (the composite classes and constants)
from .performatives import COMPOSITES, Composite, FieldSpec, ValueSection
from .serial import (
    SequenceNo, SerialUndefined, in_uint_range, serial_add, serial_diff, serial_ge, serial_gt, serial_le, serial_lt,
    serial_room,
)
from .types import (
    Array, Binary, Byte, Char, Decimal32, Decimal64, Decimal128, Described, Double, Float, Int, Long, Raw,
    Short, String, Symbol, Timestamp, UByte, UInt, ULong, UShort,
)
