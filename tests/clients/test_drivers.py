"""The drivers use each library as its own documentation and examples do: every call into the library has a
comment citing that documentation or example above it (in the comment block the call's block of lines hangs
from), and a library that hands a sender's drain to the application has a driver that answers it (checked in
the source here, and against the real library below when it is provisioned)."""

from __future__ import annotations

import re

import pytest

from conformance.cases import load_clients
from conformance.casekit.executor import run_case
from conformance.clients import LIBRARIES, ClientSubject, resolve
from conformance.clients.library import DRIVERS
from conformance.clients.provision import provisioned
from conformance.options import RunOptions

# A call into the library, per driver file (the driver's own helpers and the language's library are not).
API_CALL = {
    "python-qpid-proton/driver.py": r"BlockingConnection\(|self\.conn\.\w+\(|self\.receiver\.\w+\(|"
                                    r"self\.sender\.\w+\(|Message\(body",
    "rhea/driver.js": r"rhea\.\w+\(|container\.\w+\(|\bconn\.\w+\(|\breceiver\.\w+\(|\bsender\.\w+\(",
    "qpid-jms/Driver.java": r"JmsConnectionFactory\(|\bf\.\w+\(|\bconn\.\w+\(|\bsession\.\w+\(|\bconsumer\.\w+\(|"
                            r"\bproducer\.\w+\(",
    "protonj2/Driver.java": r"Client\.create\(|\bclient\.\w+\(|\bconn\.\w+\(|\breceiver\.\w+\(|\bsender\.\w+\(|"
                            r"Message\.create\(|new (Receiver|Connection)Options\(|\bo\.\w+\(",
    "go-amqp/main.go": r"amqp\.\w+\(|\bconn\.\w+\(|\bsession\.\w+\(|\breceiver\.\w+\(|\bsender\.\w+\(",
    "fe2o3-amqp/src/main.rs": r"Connection::\w+\(|Session::\w+\(|Receiver::\w+\(|Sender::\w+\(|\breceiver\.\w+\(|"
                              r"\bsender\.\w+\(|\.(end|close)\(\)",
    "qpid-proton-cpp/driver.cpp": r"container\.\w+\(|\bconn\.\w+\(|\brcv\.\w+\(|\bsnd\.\w+\(|\bs\.(send|credit|"
                                  r"return_credit)\(|\bco\.\w+\(|receiver_options\(\)|\bwq->",
    "azure-servicebus/driver.py": r"Connection\(|ReceiveClient\(|SendClient\(|\bclient\.\w+\(|self\.conn\.\w+\(|"
                                  r"self\.receiver\.\w+\(|self\.sender\.\w+\(|Message\(value",
    "rhea-promise/driver.js": r"rp\.Connection\(|\bconn\.\w+\(|\breceiver\.\w+\(|\bsender\.\w+\(|\bs\.\w+\(",
    "vertx-proton/Driver.java": r"ProtonClient\.\w+\(|\bc\.\w+\(|\bconn\.\w+\(|\breceiver\.\w+\(|\bsender\.\w+\(|"
                                r"ProtonHelper\.\w+\(|new ProtonClientOptions\(",
    "vertx-amqp-client/Driver.java": r"AmqpClient\.\w+\(|\bclient\.\w+\(|\bconn\.\w+\(|\breceiver\.\w+\(|"
                                     r"\bsender\.\w+\(|AmqpMessage\.\w+\(|new Amqp\w+Options\(",
}
# What a citation names: the library's README / docs / typings / javadoc / godoc comment / example file.
CITATION = re.compile(r"README|Readme|\.md\b|[Jj]avadoc|typings/|[Ee]xample|\w\.(py|go|java|js|ts|rs|hpp|cpp|adoc)\b|"
                      r"JMS API|docstring|godoc|rustdoc")
COMMENT = re.compile(r"^\s*(#|//|\*|/\*)")
LOOKBACK = 14


def _calls(path: str, pattern: str, base=DRIVERS) -> list[int]:
    """The line numbers (0-based) of the calls into the library in a driver file."""
    lines = (base / path).read_text().splitlines()
    call = re.compile(pattern)
    return [n for n, line in enumerate(lines)
            if not COMMENT.match(line) and call.search(line.split("//")[0].split("  # ")[0])]


def _uncited(path: str, pattern: str, base=DRIVERS) -> list[str]:
    lines = (base / path).read_text().splitlines()
    bad = []
    for n in _calls(path, pattern, base):
        line = lines[n]
        cited = False
        for above in reversed(lines[max(0, n - LOOKBACK):n]):
            if not above.strip():
                break
            if COMMENT.match(above) and CITATION.search(above):
                cited = True
                break
        if not cited:
            bad.append(f"{path}:{n + 1}: {line.strip()}")
    return bad


@pytest.mark.parametrize("path", sorted(API_CALL))
def test_every_library_call_of_a_driver_cites_the_librarys_docs(path):
    assert len(_calls(path, API_CALL[path])) >= 10, "the rule must see the driver's calls into the library"
    assert _uncited(path, API_CALL[path]) == []


def test_the_rule_finds_an_uncited_call(tmp_path):
    (tmp_path / "d.js").write_text("// README open_receiver\nconn.open_receiver('q');\n\n// a remark\n"
                                   "conn.open_sender('q');\n")
    assert _uncited("d.js", API_CALL["rhea/driver.js"], base=tmp_path) == ["d.js:5: conn.open_sender('q');"]


def test_every_driver_is_checked():
    assert {lib.driver for lib in LIBRARIES} <= {path.split("/")[0] for path in API_CALL}


# the libraries whose API hands a sender's drain to the application: the event and the answer in the driver
HANDED = {"rhea": ("sender_draining", "set_drained(true)"),
          "rhea-promise": ("senderDraining", "setDrained(true)"),
          "qpid-proton-cpp": ("on_sender_drain_start", "return_credit()")}


def test_a_library_that_hands_drains_to_the_application_has_a_driver_that_answers_them():
    for lib in LIBRARIES:
        if "handed to the application" in lib.flow_api:
            assert lib.name in HANDED, f"{lib.name}: its flow_api says it hands drains to the application"
            source = next(p for p in (DRIVERS / lib.driver).iterdir() if p.is_file()).read_text()
            for needed in (*HANDED[lib.name], "drains"):
                assert needed in source, f"{lib.driver}: no {needed!r}"


@pytest.mark.parametrize("label", ["rhea-3.0.5"])
def test_the_real_library_answers_the_drain_it_hands_the_application(label):
    """rhea hands a sender's drain to the application: used as its README says, the drain is answered (the
    cell is the library's, not our driver's). A driver that did not answer it fails here, and the case says
    `error` when the driver reports a drain it left (tests/clients/test_client_cases.py)."""
    lib = resolve(label)
    if not provisioned(lib):
        pytest.skip(f"{label} is not provisioned; `./dev test` provisions it")
    subject = ClientSubject(lib)
    try:
        result = run_case(load_clients()["2.6.7/105"], subject, RunOptions(frame_timeout=3.0, quiet_period=0.2))
    finally:
        subject.discard()
    assert result.verdict.value == "pass", result.reason
    handed = result.observations.get("drains_handed_to_the_application")
    assert handed and handed[0]["handed"] == "sender_draining" and handed[0]["answered"] == "sender.set_drained(true)"
