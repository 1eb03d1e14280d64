"""Client cases are written in the broker cases' language, and each context has only what its subject can
honour: the client context is no broker context (no queues, alarms or broker hooks), both keep their record
in `casekit.record.CaseRecord`, and the client cases use `link.flow`, `ctx.require`, `link.expect_transfers`."""

from __future__ import annotations

import inspect
import re

import pytest

from conformance.casekit import case
from conformance.cases import load_clients
from conformance.casekit.client_context import ClientCaseContext
from conformance.casekit.client_links import ReceivingEnd, SendingEnd
from conformance.casekit.context import CaseContext
from conformance.casekit.receiver_script import ReceiverScript
from conformance.casekit.record import CaseRecord
from conformance.casekit.sender_script import SenderScript


def test_each_context_has_only_what_its_subject_can_honour():
    assert issubclass(ClientCaseContext, CaseRecord) and issubclass(CaseContext, CaseRecord)
    assert not issubclass(ClientCaseContext, CaseContext)
    for broker_only in ("queue", "preload", "alarm", "need_hook", "drain_queue", "session", "queue_depth"):
        assert hasattr(CaseContext, broker_only) and not hasattr(ClientCaseContext, broker_only), broker_only
    for verb in ("require", "add_finding", "halt", "passed", "informational", "unobservable"):
        assert getattr(ClientCaseContext, verb) is getattr(CaseRecord, verb)
    # what the executor asks of every context, each answering in its own terms (no broker words in the base)
    for asked in ("judge", "close", "subject_identity", "conversations"):
        for kind in (CaseContext, ClientCaseContext):
            assert getattr(kind, asked) is not getattr(CaseRecord, asked) or asked == "conversations", (kind, asked)
    assert "delete_queues" not in inspect.signature(CaseRecord.close).parameters
    assert (CaseRecord.noun, CaseContext.noun, ClientCaseContext.noun) == ("subject", "broker", "client library")


def test_client_cases_speak_the_broker_cases_verbs():
    sources = {spec.module: inspect.getsource(inspect.getmodule(spec.func)) for spec in load_clients().values()}
    for module, source in sources.items():
        assert not re.search(r"\bconn\.flow\(|ctx\.finding\(|for \w+ in conn\.", source), module
        # our own frames through the link's verbs, not the peer's: no raw flow, detach or hold
        assert not re.search(r"\.peer\.(flow|detach|transfer|hold_reads_after)\(|\.conn\.settle_down\(", source), module
        # a finding that ends the case halts it: no placeholder "passed" after a finding
        assert not re.search(r"ctx\.passed\(\"\(", source), module
    joined = "\n".join(sources.values())
    for verb in ("link.flow(", "ctx.require(", "ctx.halt(", "link.expect_transfers(", "link.expect_no_transfer(",
                 "link.echo(", "link.flows_after(", "link.take_arrived("):
        assert verb in joined, verb


def test_a_helper_with_a_broker_cases_name_means_the_same_on_the_client_side():
    """Where the scripted broker's link end does what a broker case's link does, it has that name (and where
    the names differ, the meanings do): a newcomer reads one vocabulary."""
    assert hasattr(SenderScript, "echo") and hasattr(SendingEnd, "echo") and hasattr(ReceivingEnd, "echo")
    for verb in ("flow", "expect_transfers", "expect_no_transfer", "hold_reads_after", "send_crossing", "take_arrived",
                 "flows_after", "await_flow"):
        assert hasattr(ReceivingEnd, verb) and hasattr(ReceiverScript, verb), verb
    assert not hasattr(ReceivingEnd, "take_transfers")      # the broker's take_transfers(n) waits for n: not this
    assert not hasattr(SendingEnd, "flows")


@pytest.mark.parametrize("broker_only", [{"needs": ("memory_alarm",)}, {"exclusive": True}, {"own_node": True},
                                         {"refusals_judged": ("amqp:not-allowed",)}])
def test_a_client_case_cannot_declare_what_only_a_broker_answers(broker_only):
    with pytest.raises(ValueError, match="a client case takes no broker hooks"):
        case("2.6.7/199", "t", ["2.6.7/no-send-without-credit"], kind="client", **broker_only)
