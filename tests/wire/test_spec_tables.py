"""The codec's tables agree with the AMQP type definitions (the OASIS XML kept in the repository's spec/xml): every format
code and its width, every list-based composite (descriptor, field names, types, mandatory, multiple,
requires, default) and every restricted type's wire type."""

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.wire import COMPOSITES, Composite, ValueSection, decode_value
from conformance.wire.performatives import RESTRICTED_TYPES, wire_type
from conformance.wire.types import FORMAT_CODES

SPEC_XML = Path(__file__).resolve().parents[2] / "spec" / "xml"


def _types():
    paths = sorted(SPEC_XML.glob("*.xml"))
    assert [p.name for p in paths] == ["messaging.xml", "security.xml", "transactions.xml", "transport.xml",
                                       "types.xml"], f"the spec XML of the repository ({SPEC_XML}) is incomplete"
    for path in paths:
        for node in ET.parse(path).getroot().iterfind(".//{*}type"):     # the XML has a namespace
            yield node


TYPES = {node.get("name"): node for node in _types()}
OURS = {cls.NAME: cls for cls in COMPOSITES.values()}


def test_every_format_code_of_types_xml_is_known_with_its_type():
    spec = {int(enc.get("code"), 16): node.get("name") for node in TYPES.values()
            if node.get("class") == "primitive" for enc in node.iterfind("{*}encoding")}
    assert len(spec) == 39
    assert spec == FORMAT_CODES


@pytest.mark.parametrize("code,width", [(int(e.get("code"), 16), int(e.get("width"))) for n in TYPES.values()
                                        if n.get("class") == "primitive" for e in n.iterfind("{*}encoding")
                                        if e.get("category") == "fixed"])
def test_fixed_width_codes_consume_exactly_their_width(code, width):
    body = {0x56: b"\x01", 0x73: b"\x00\x00\x00\x41"}.get(code, b"\x00" * width)
    if code == 0x45:
        body = b""
    value, end = decode_value(bytes([code]) + body + b"\xff")
    assert end == 1 + width


def test_every_list_composite_of_the_spec_matches_our_field_table():
    composites = {name: node for name, node in TYPES.items()
                  if node.get("class") == "composite" and node.get("source") == "list"}
    assert set(composites) == {name for name, cls in OURS.items() if issubclass(cls, Composite)}
    for name, node in composites.items():
        cls = OURS[name]
        descriptor = node.find("{*}descriptor")
        assert descriptor.get("name") == cls.SYMBOLIC_DESCRIPTOR
        assert int(descriptor.get("code").split(":")[1], 16) == cls.DESCRIPTOR
        assert (node.get("provides") or None) == cls.PROVIDES, name
        spec_fields = [(f.get("name"), f.get("type"), f.get("mandatory") == "true", f.get("multiple") == "true",
                        f.get("requires"), f.get("default")) for f in node.iterfind("{*}field")]
        ours = [(f.name, f.type, f.mandatory, f.multiple, f.requires, f.default) for f in cls.FIELDS]
        assert ours == spec_fields, name


def test_value_sections_match_the_restricted_section_types():
    sections = {name: node for name, node in TYPES.items() if node.get("provides") == "section"
                and node.get("class") == "restricted"}
    assert set(sections) == {name for name, cls in OURS.items() if issubclass(cls, ValueSection)}
    for name, node in sections.items():
        cls = OURS[name]
        assert int(node.find("{*}descriptor").get("code").split(":")[1], 16) == cls.DESCRIPTOR
        assert node.get("source") == cls.VALUE_TYPE


def test_restricted_types_resolve_to_their_wire_type():
    for name, node in TYPES.items():
        if node.get("class") != "restricted" or node.get("provides") == "section":
            continue
        source = node.get("source")
        while TYPES.get(source) is not None and TYPES[source].get("class") == "restricted":
            source = TYPES[source].get("source")
        assert name in RESTRICTED_TYPES, name
        assert wire_type(name) == source, name
