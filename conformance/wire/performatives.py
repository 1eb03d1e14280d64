"""AMQP 1.0 composite types: performatives, SASL frames, terminus, delivery states, message sections.

This module owns the field tables (one row per composite type, fields in spec order, from the type
definitions of Parts 2, 3, 4 and 5) and the Python classes built from them. It holds data only: encoding
and decoding use these tables but live in `encode` and `decode`.

A composite instance keeps whatever the caller puts in a field. Plain values are encoded with the field's
declared type (`Flow(handle=0)` sends handle as uint); an explicit wrapper from `types` overrides it, which
is how a negative case sends a field with the wrong type.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class FieldSpec:
    """One field of a composite type, as the spec's type definition declares it."""

    name: str            # spec name, e.g. "link-credit"
    type: str            # declared type, e.g. "uint", "handle", "*", "error"
    mandatory: bool = False
    multiple: bool = False
    requires: str | None = None
    default: str | None = None

    @property
    def attr(self) -> str:
        return self.name.replace("-", "_")


M = "mandatory"
MULTI = "multiple"


def _f(name: str, type_: str, *flags: str, requires: str | None = None, default: str | None = None) -> FieldSpec:
    return FieldSpec(name, type_, M in flags, MULTI in flags, requires, default)


# Restricted types (Part 2 §2.8, Part 3 §3.5, Part 5 §5.3.3) resolved to the primitive type on the wire.
RESTRICTED_TYPES: dict[str, str] = {
    "role": "boolean", "sender-settle-mode": "ubyte", "receiver-settle-mode": "ubyte", "handle": "uint",
    "seconds": "uint", "milliseconds": "uint", "delivery-tag": "binary", "delivery-number": "uint",
    "transfer-number": "uint", "sequence-no": "uint", "message-format": "uint", "ietf-language-tag": "symbol",
    "fields": "map", "error-condition": "symbol", "amqp-error": "symbol", "connection-error": "symbol",
    "session-error": "symbol", "link-error": "symbol", "annotations": "map", "message-id-ulong": "ulong",
    "message-id-uuid": "uuid", "message-id-binary": "binary", "message-id-string": "string",
    "address-string": "string", "terminus-durability": "uint", "terminus-expiry-policy": "symbol",
    "std-dist-mode": "symbol", "filter-set": "map", "node-properties": "map", "sasl-code": "ubyte",
    "transaction-id": "binary", "txn-capability": "symbol", "transaction-error": "symbol",
}


def wire_type(declared: str) -> str:
    """The primitive type a declared field type is sent as ("*" and composite names stay as they are)."""
    return RESTRICTED_TYPES.get(declared, declared)


# (class name, spec name, descriptor code, provides, fields) — fields in spec order.
COMPOSITE_TABLE: tuple = (
    # Part 2: transport performatives (§2.7)
    ("Open", "open", 0x10, "frame", (
        _f("container-id", "string", M), _f("hostname", "string"),
        _f("max-frame-size", "uint", default="4294967295"), _f("channel-max", "ushort", default="65535"),
        _f("idle-time-out", "milliseconds"), _f("outgoing-locales", "ietf-language-tag", MULTI),
        _f("incoming-locales", "ietf-language-tag", MULTI), _f("offered-capabilities", "symbol", MULTI),
        _f("desired-capabilities", "symbol", MULTI), _f("properties", "fields"))),
    ("Begin", "begin", 0x11, "frame", (
        _f("remote-channel", "ushort"), _f("next-outgoing-id", "transfer-number", M),
        _f("incoming-window", "uint", M), _f("outgoing-window", "uint", M),
        _f("handle-max", "handle", default="4294967295"), _f("offered-capabilities", "symbol", MULTI),
        _f("desired-capabilities", "symbol", MULTI), _f("properties", "fields"))),
    ("Attach", "attach", 0x12, "frame", (
        _f("name", "string", M), _f("handle", "handle", M), _f("role", "role", M),
        _f("snd-settle-mode", "sender-settle-mode", default="mixed"),
        _f("rcv-settle-mode", "receiver-settle-mode", default="first"),
        _f("source", "*", requires="source"), _f("target", "*", requires="target"), _f("unsettled", "map"),
        _f("incomplete-unsettled", "boolean", default="false"), _f("initial-delivery-count", "sequence-no"),
        _f("max-message-size", "ulong"), _f("offered-capabilities", "symbol", MULTI),
        _f("desired-capabilities", "symbol", MULTI), _f("properties", "fields"))),
    ("Flow", "flow", 0x13, "frame", (
        _f("next-incoming-id", "transfer-number"), _f("incoming-window", "uint", M),
        _f("next-outgoing-id", "transfer-number", M), _f("outgoing-window", "uint", M), _f("handle", "handle"),
        _f("delivery-count", "sequence-no"), _f("link-credit", "uint"), _f("available", "uint"),
        _f("drain", "boolean", default="false"), _f("echo", "boolean", default="false"),
        _f("properties", "fields"))),
    ("Transfer", "transfer", 0x14, "frame", (
        _f("handle", "handle", M), _f("delivery-id", "delivery-number"), _f("delivery-tag", "delivery-tag"),
        _f("message-format", "message-format"), _f("settled", "boolean"), _f("more", "boolean", default="false"),
        _f("rcv-settle-mode", "receiver-settle-mode"), _f("state", "*", requires="delivery-state"),
        _f("resume", "boolean", default="false"), _f("aborted", "boolean", default="false"),
        _f("batchable", "boolean", default="false"))),
    ("Disposition", "disposition", 0x15, "frame", (
        _f("role", "role", M), _f("first", "delivery-number", M), _f("last", "delivery-number"),
        _f("settled", "boolean", default="false"), _f("state", "*", requires="delivery-state"),
        _f("batchable", "boolean", default="false"))),
    ("Detach", "detach", 0x16, "frame", (
        _f("handle", "handle", M), _f("closed", "boolean", default="false"), _f("error", "error"))),
    ("End", "end", 0x17, "frame", (_f("error", "error"),)),
    ("Close", "close", 0x18, "frame", (_f("error", "error"),)),
    ("Error", "error", 0x1D, None, (
        _f("condition", "symbol", M, requires="error-condition"), _f("description", "string"),
        _f("info", "fields"))),
    # Part 3: messaging (§3.2 message format, §3.4 delivery state, §3.5 addressing)
    ("Header", "header", 0x70, "section", (
        _f("durable", "boolean", default="false"), _f("priority", "ubyte", default="4"),
        _f("ttl", "milliseconds"), _f("first-acquirer", "boolean", default="false"),
        _f("delivery-count", "uint", default="0"))),
    ("Properties", "properties", 0x73, "section", (
        _f("message-id", "*", requires="message-id"), _f("user-id", "binary"), _f("to", "*", requires="address"),
        _f("subject", "string"), _f("reply-to", "*", requires="address"),
        _f("correlation-id", "*", requires="message-id"), _f("content-type", "symbol"),
        _f("content-encoding", "symbol"), _f("absolute-expiry-time", "timestamp"),
        _f("creation-time", "timestamp"), _f("group-id", "string"), _f("group-sequence", "sequence-no"),
        _f("reply-to-group-id", "string"))),
    ("Received", "received", 0x23, "delivery-state", (
        _f("section-number", "uint", M), _f("section-offset", "ulong", M))),
    ("Accepted", "accepted", 0x24, "delivery-state, outcome", ()),
    ("Rejected", "rejected", 0x25, "delivery-state, outcome", (_f("error", "error"),)),
    ("Released", "released", 0x26, "delivery-state, outcome", ()),
    ("Modified", "modified", 0x27, "delivery-state, outcome", (
        _f("delivery-failed", "boolean"), _f("undeliverable-here", "boolean"),
        _f("message-annotations", "fields"))),
    ("Source", "source", 0x28, "source", (
        _f("address", "*", requires="address"), _f("durable", "terminus-durability", default="none"),
        _f("expiry-policy", "terminus-expiry-policy", default="session-end"),
        _f("timeout", "seconds", default="0"), _f("dynamic", "boolean", default="false"),
        _f("dynamic-node-properties", "node-properties"),
        _f("distribution-mode", "symbol", requires="distribution-mode"), _f("filter", "filter-set"),
        _f("default-outcome", "*", requires="outcome"), _f("outcomes", "symbol", MULTI),
        _f("capabilities", "symbol", MULTI))),
    ("Target", "target", 0x29, "target", (
        _f("address", "*", requires="address"), _f("durable", "terminus-durability", default="none"),
        _f("expiry-policy", "terminus-expiry-policy", default="session-end"),
        _f("timeout", "seconds", default="0"), _f("dynamic", "boolean", default="false"),
        _f("dynamic-node-properties", "node-properties"), _f("capabilities", "symbol", MULTI))),
    ("DeleteOnClose", "delete-on-close", 0x2B, "lifetime-policy", ()),
    ("DeleteOnNoLinks", "delete-on-no-links", 0x2C, "lifetime-policy", ()),
    ("DeleteOnNoMessages", "delete-on-no-messages", 0x2D, "lifetime-policy", ()),
    ("DeleteOnNoLinksOrMessages", "delete-on-no-links-or-messages", 0x2E, "lifetime-policy", ()),
    # Part 4: transactions (§4.5)
    ("Coordinator", "coordinator", 0x30, "target", (
        _f("capabilities", "symbol", MULTI, requires="txn-capability"),)),
    ("Declare", "declare", 0x31, None, (_f("global-id", "*", requires="global-tx-id"),)),
    ("Discharge", "discharge", 0x32, None, (_f("txn-id", "*", M, requires="txn-id"), _f("fail", "boolean"))),
    ("Declared", "declared", 0x33, "delivery-state, outcome", (_f("txn-id", "*", M, requires="txn-id"),)),
    ("TransactionalState", "transactional-state", 0x34, "delivery-state", (
        _f("txn-id", "*", M, requires="txn-id"), _f("outcome", "*", requires="outcome"))),
    # Part 5: SASL (§5.3.3)
    ("SaslMechanisms", "sasl-mechanisms", 0x40, "sasl-frame", (
        _f("sasl-server-mechanisms", "symbol", M, MULTI),)),
    ("SaslInit", "sasl-init", 0x41, "sasl-frame", (
        _f("mechanism", "symbol", M), _f("initial-response", "binary"), _f("hostname", "string"))),
    ("SaslChallenge", "sasl-challenge", 0x42, "sasl-frame", (_f("challenge", "binary", M),)),
    ("SaslResponse", "sasl-response", 0x43, "sasl-frame", (_f("response", "binary", M),)),
    ("SaslOutcome", "sasl-outcome", 0x44, "sasl-frame", (
        _f("code", "sasl-code", M), _f("additional-data", "binary"))),
)

# Message sections whose value is not a list (§3.2): (class name, spec name, code, value type).
VALUE_SECTION_TABLE: tuple = (
    ("DeliveryAnnotations", "delivery-annotations", 0x71, "annotations"),
    ("MessageAnnotations", "message-annotations", 0x72, "annotations"),
    ("ApplicationProperties", "application-properties", 0x74, "map"),
    ("Data", "data", 0x75, "binary"),
    ("AmqpSequence", "amqp-sequence", 0x76, "list"),
    ("AmqpValue", "amqp-value", 0x77, "*"),
    ("Footer", "footer", 0x78, "annotations"),
)


class Composite:
    """Base of every list-based composite type. Subclasses are dataclasses built from COMPOSITE_TABLE."""

    __slots__ = ()   # instances hold their fields in slots (faster to build and to encode)

    NAME: ClassVar[str]
    DESCRIPTOR: ClassVar[int]
    SYMBOLIC_DESCRIPTOR: ClassVar[str]
    PROVIDES: ClassVar[str | None]
    FIELDS: ClassVar[tuple[FieldSpec, ...]]

    def field_values(self) -> list[Any]:
        return [getattr(self, f.attr) for f in self.FIELDS]

    def replace(self, **changes: Any):
        """A copy with some fields changed (composites are treated as values)."""
        return dataclasses.replace(self, **changes)

    def present_fields(self) -> dict[str, Any]:
        """The fields that are set (not None), by attribute name, in spec order."""
        return {f.attr: v for f, v in zip(self.FIELDS, self.field_values()) if v is not None}


class ValueSection:
    """Base of the message sections whose body is a single value (data, amqp-value, annotations...)."""

    NAME: ClassVar[str]
    DESCRIPTOR: ClassVar[int]
    SYMBOLIC_DESCRIPTOR: ClassVar[str]
    VALUE_TYPE: ClassVar[str]


def _build_composite(class_name: str, name: str, code: int, provides: str | None, fields: tuple) -> type:
    cls = dataclasses.make_dataclass(
        class_name,
        [(f.attr, Any, dataclasses.field(default=None)) for f in fields],
        bases=(Composite,),
        eq=True,
        repr=False,
        slots=True,
    )
    cls.NAME = name
    cls.DESCRIPTOR = code
    cls.SYMBOLIC_DESCRIPTOR = f"amqp:{name}:list"
    cls.PROVIDES = provides
    cls.FIELDS = fields
    cls.__doc__ = f"AMQP `{name}` (descriptor 0x{code:08x}): fields " + ", ".join(f.name for f in fields) + "."
    cls.__module__ = __name__

    def __repr__(self):
        shown = ", ".join(f"{k}={v!r}" for k, v in self.present_fields().items())
        return f"{class_name}({shown})"

    cls.__repr__ = __repr__
    return cls


def _build_value_section(class_name: str, name: str, code: int, value_type: str) -> type:
    cls = dataclasses.make_dataclass(class_name, [("value", Any, dataclasses.field(default=None))],
                                     bases=(ValueSection,), eq=True)
    cls.NAME = name
    cls.DESCRIPTOR = code
    cls.SYMBOLIC_DESCRIPTOR = f"amqp:{name}:{'map' if value_type == 'annotations' else value_type}"
    cls.VALUE_TYPE = value_type
    cls.__doc__ = f"AMQP message section `{name}` (descriptor 0x{code:08x}), body of type {value_type}."
    cls.__module__ = __name__
    return cls


COMPOSITES: dict[str, type] = {}
for _row in COMPOSITE_TABLE:
    COMPOSITES[_row[0]] = _build_composite(*_row)
for _row in VALUE_SECTION_TABLE:
    COMPOSITES[_row[0]] = _build_value_section(*_row)

Open = COMPOSITES["Open"]
Begin = COMPOSITES["Begin"]
Attach = COMPOSITES["Attach"]
Flow = COMPOSITES["Flow"]
Transfer = COMPOSITES["Transfer"]
Disposition = COMPOSITES["Disposition"]
Detach = COMPOSITES["Detach"]
End = COMPOSITES["End"]
Close = COMPOSITES["Close"]
Error = COMPOSITES["Error"]
Header = COMPOSITES["Header"]
Properties = COMPOSITES["Properties"]
Received = COMPOSITES["Received"]
Accepted = COMPOSITES["Accepted"]
Rejected = COMPOSITES["Rejected"]
Released = COMPOSITES["Released"]
Modified = COMPOSITES["Modified"]
Source = COMPOSITES["Source"]
Target = COMPOSITES["Target"]
DeleteOnClose = COMPOSITES["DeleteOnClose"]
DeleteOnNoLinks = COMPOSITES["DeleteOnNoLinks"]
DeleteOnNoMessages = COMPOSITES["DeleteOnNoMessages"]
DeleteOnNoLinksOrMessages = COMPOSITES["DeleteOnNoLinksOrMessages"]
Coordinator = COMPOSITES["Coordinator"]
Declare = COMPOSITES["Declare"]
Discharge = COMPOSITES["Discharge"]
Declared = COMPOSITES["Declared"]
TransactionalState = COMPOSITES["TransactionalState"]
SaslMechanisms = COMPOSITES["SaslMechanisms"]
SaslInit = COMPOSITES["SaslInit"]
SaslChallenge = COMPOSITES["SaslChallenge"]
SaslResponse = COMPOSITES["SaslResponse"]
SaslOutcome = COMPOSITES["SaslOutcome"]
DeliveryAnnotations = COMPOSITES["DeliveryAnnotations"]
MessageAnnotations = COMPOSITES["MessageAnnotations"]
ApplicationProperties = COMPOSITES["ApplicationProperties"]
Data = COMPOSITES["Data"]
AmqpSequence = COMPOSITES["AmqpSequence"]
AmqpValue = COMPOSITES["AmqpValue"]
Footer = COMPOSITES["Footer"]

# Lookup by numeric and symbolic descriptor, for the decoder.
BY_CODE: dict[int, type] = {cls.DESCRIPTOR: cls for cls in COMPOSITES.values()}
BY_SYMBOL: dict[str, type] = {cls.SYMBOLIC_DESCRIPTOR: cls for cls in COMPOSITES.values()}

PERFORMATIVES = (Open, Begin, Attach, Flow, Transfer, Disposition, Detach, End, Close)
SASL_FRAMES = (SaslMechanisms, SaslInit, SaslChallenge, SaslResponse, SaslOutcome)

# role (§2.8.1)
SENDER = False
RECEIVER = True
# sender-settle-mode (§2.8.2) and receiver-settle-mode (§2.8.3)
SND_UNSETTLED, SND_SETTLED, SND_MIXED = 0, 1, 2
RCV_FIRST, RCV_SECOND = 0, 1
# sasl-code (§5.3.3.6)
SASL_OK, SASL_AUTH, SASL_SYS, SASL_SYS_PERM, SASL_SYS_TEMP = 0, 1, 2, 3, 4
