"""The case vocabulary: what conformance cases are written in, apart from the cases themselves.

- `spec`: the registry (`@case`, `CaseSpec`: subject, declared requirements, what the model judges);
- `findings`: findings, obligations, outcomes (enums) and the one verdict rule;
- `record`: `CaseRecord`, what every case context has (findings, obligations, outcomes, the model's judgement);
- `context`: `CaseContext`, what a broker case runs with (queues, connections, hooks);
- `client_context`, `client_links`: `ClientCaseContext`, what a client case runs with (the application, the
  scripted broker), and the scripted broker's link ends (`SendingEnd`, `ReceivingEnd`);
- `scripts`: `ConnectionScript`, `SessionScript`, `ReceiverScript`, `SenderScript` (and `Excess`);
- `crossing`: a frame of ours sent while the other side's is held unread, and the session window as a barrier;
- `producers`: publishers as people run them (synchronous, pipelined), how a broker stopped them (`Means`),
  the resume by consuming, and the facts the report's producer table reads;
- `top_up`: a publisher's credit top-up crossed alone (a broker that tops credit up while a burst arrives,
  as Artemis does, sends its own flow after every transfer of ours);
- `executor`: `run_case`, one case against one broker judged into a `CaseResult`.

`conformance.cases` holds the cases, one module per spec section.
"""

from .findings import (
    REFUSALS, CaseConclusion, CaseHalted, CaseUnsupported, Finding, Obligation, Outcome, OutcomeKind, Source,
    SubjectUnobservable, SuiteError,
)
from .spec import MODEL_REQUIREMENTS, REGISTRY, CaseSpec, case

__all__ = ["REFUSALS",
           "CaseConclusion", "CaseHalted", "CaseUnsupported", "Finding", "Obligation", "Outcome", "OutcomeKind",
           "Source", "SubjectUnobservable", "SuiteError", "MODEL_REQUIREMENTS", "REGISTRY", "CaseSpec", "case"]
