"""Hypothesis strategies for the wire tests: legal values of each field type and instances of every
composite class (random subsets of fields set, mandatory fields always set)."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.wire import (
    COMPOSITES, Accepted, Composite, Error, Modified, Received, Rejected, Released, Source, Symbol, Target,
    Timestamp, ULong,
)
from conformance.wire.performatives import wire_type

U32 = st.integers(0, 2 ** 32 - 1)
ascii_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=12)
symbols = ascii_text.map(Symbol)
small_maps = st.dictionaries(symbols, st.one_of(st.none(), st.booleans(), st.integers(-2 ** 63, 2 ** 63 - 1),
                                                  st.text(max_size=8), symbols), max_size=3)

PRIMITIVE = {
    "uint": U32, "ulong": st.integers(0, 2 ** 64 - 1), "ushort": st.integers(0, 0xFFFF), "ubyte": st.integers(0, 255),
    "int": st.integers(-2 ** 31, 2 ** 31 - 1), "long": st.integers(-2 ** 63, 2 ** 63 - 1),
    "byte": st.integers(-128, 127), "short": st.integers(-2 ** 15, 2 ** 15 - 1), "boolean": st.booleans(),
    "string": st.text(max_size=20), "symbol": symbols, "binary": st.binary(max_size=20), "map": small_maps,
    "timestamp": st.integers(-2 ** 63, 2 ** 63 - 1).map(Timestamp), "uuid": st.uuids(),
}

errors = st.builds(Error, condition=symbols, description=st.none() | st.text(max_size=10),
                   info=st.none() | small_maps)
outcomes = st.one_of(st.builds(Accepted), st.builds(Released), st.builds(Rejected, error=st.none() | errors),
                     st.builds(Modified, delivery_failed=st.none() | st.booleans()))
delivery_states = st.one_of(outcomes, st.builds(Received, section_number=U32, section_offset=PRIMITIVE["ulong"]))
message_ids = st.one_of(PRIMITIVE["ulong"].map(ULong),
                        st.uuids(), st.binary(max_size=8), st.text(max_size=8))

ARCHETYPES = {
    "source": st.builds(Source, address=st.none() | st.text(max_size=8), durable=st.none() | st.integers(0, 2),
                        outcomes=st.none() | st.lists(symbols, max_size=3)),
    "target": st.builds(Target, address=st.none() | st.text(max_size=8), dynamic=st.none() | st.booleans()),
    "delivery-state": delivery_states, "outcome": outcomes, "address": st.text(max_size=10),
    "message-id": message_ids, "txn-id": st.binary(min_size=1, max_size=8), "global-tx-id": st.binary(max_size=8),
}


def field_values(spec):
    """A strategy of legal values for one field (of its declared type; multiple fields: one value or a list)."""
    prim = wire_type(spec.type)
    if prim == "*":
        base = ARCHETYPES.get(spec.requires, st.text(max_size=8))
    elif prim == "error":
        base = errors
    else:
        base = PRIMITIVE[prim]
    if spec.multiple:
        return st.one_of(base, st.lists(base, max_size=4))
    return base


@st.composite
def composite_instances(draw, cls):
    kwargs = {}
    for spec in cls.FIELDS:
        if spec.mandatory or draw(st.booleans()):
            kwargs[spec.attr] = draw(field_values(spec))
    return cls(**kwargs)


LIST_COMPOSITES = sorted((c for c in COMPOSITES.values() if issubclass(c, Composite)), key=lambda c: c.DESCRIPTOR)
any_composite = st.sampled_from(LIST_COMPOSITES).flatmap(composite_instances)
