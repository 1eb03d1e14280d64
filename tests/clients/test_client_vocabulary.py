"""Client cases are written in the broker cases' language, and each context has only what its subject can
honour: the client context is no broker context (no queues, alarms or broker hooks), both keep their record
in `casekit.record.CaseRecord`, and the client cases use `link.flow`, `ctx.require`, `link.expect_transfers`."""

from __future__ import annotations

import inspect
import re

from conformance.cases import load_clients
from conformance.casekit.client_context import ClientCaseContext
from conformance.casekit.context import CaseContext
from conformance.casekit.record import CaseRecord


def test_each_context_has_only_what_its_subject_can_honour():
    assert issubclass(ClientCaseContext, CaseRecord) and issubclass(CaseContext, CaseRecord)
    assert not issubclass(ClientCaseContext, CaseContext)
    for broker_only in ("queue", "preload", "alarm", "need_hook", "drain_queue", "session", "queue_depth"):
        assert hasattr(CaseContext, broker_only) and not hasattr(ClientCaseContext, broker_only), broker_only
    for verb in ("require", "add_finding", "halt", "passed", "informational", "unobservable"):
        assert getattr(ClientCaseContext, verb) is getattr(CaseRecord, verb)


def test_client_cases_speak_the_broker_cases_verbs():
    sources = {spec.module: inspect.getsource(inspect.getmodule(spec.func)) for spec in load_clients().values()}
    for module, source in sources.items():
        assert not re.search(r"\bconn\.flow\(|ctx\.finding\(|for \w+ in conn\.", source), module
    joined = "\n".join(sources.values())
    for verb in ("link.flow(", "ctx.require(", "link.expect_transfers(", "link.expect_no_transfer("):
        assert verb in joined, verb
