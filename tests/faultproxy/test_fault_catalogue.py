"""One fault catalogue (conformance.catalogue.faults) for the fault-injecting proxy and the reference broker: every
fault either implements is listed there once, with the requirement it breaks, and nothing else is."""

from __future__ import annotations

import dataclasses

import pytest

from conformance import catalogue
from conformance.catalogue import faults as fault_catalogue
from conformance.faultproxy import FAULTS as PROXY_FAULTS
from conformance.faultproxy.proxy import Transport, transport_for
from conformance.reference.__main__ import parse_faults
from conformance.reference.broker import Faults


def test_the_catalogue_is_well_formed():
    fault_catalogue.check()
    for f in fault_catalogue.FAULTS:
        if f.kind != "transport":
            assert catalogue.get(f.requirement).id == f.requirement and f.level in catalogue.LEVELS


def test_the_proxys_protocol_faults_are_the_catalogues():
    listed = {f.name for f in fault_catalogue.of_kind("protocol", proxy=True)}
    assert set(PROXY_FAULTS) == listed
    for name, cls in PROXY_FAULTS.items():
        assert cls.requirement == fault_catalogue.get(name).requirement
        assert cls.summary == fault_catalogue.get(name).summary


def test_the_proxys_transport_faults_are_the_catalogues():
    for f in fault_catalogue.of_kind("transport"):
        t = transport_for(f.name)
        assert isinstance(t, Transport) and (t.delay, t.reset, t.stall) == (f.delay, f.reset, f.stall)
        assert f.expect == ("error" if (f.reset or f.stall) else "unchanged")
    with pytest.raises(KeyError):
        transport_for("drain-stripped")


def test_every_reference_broker_switch_is_one_catalogue_entry():
    switches = [k for f in fault_catalogue.FAULTS for k in f.reference]
    assert len(switches) == len(set(switches)), "a switch listed under two faults"
    assert set(switches) == {f.name for f in dataclasses.fields(Faults)}, "a switch without an entry, or the reverse"
    default = Faults()
    for f in fault_catalogue.of_kind("protocol", "variant", reference=True):
        faulted = Faults.named(f.name)
        assert faulted != default and all(getattr(faulted, k) == v for k, v in f.reference.items())


def test_the_reference_broker_process_takes_catalogue_names_and_switches():
    assert parse_faults(["drain-stripped"]) == Faults(ignore_drain=True) == parse_faults(["ignore_drain"])
    assert parse_faults(["transfer-beyond-credit", "echo-with-echo"]) == Faults(extra_transfers=1, echo_with_echo=True)
    with pytest.raises(SystemExit):
        parse_faults(["no-such-fault"])
    with pytest.raises(KeyError):
        Faults.named("reset")                     # a transport fault is the proxy's only
