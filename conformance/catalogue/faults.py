"""The fault catalogue: every deliberate fault the suite uses to check itself, each naming what it breaks.

One list for both places a fault can be put: between the suite and a broker (the fault-injecting proxy,
`conformance.faultproxy`: frames rewritten on the wire, or the network itself broken) and inside the suite's
reference broker (`conformance.reference`: a switch of `reference.broker.Faults`). An entry says which of the
two implement it (`proxy`, `reference`: the Faults switch as keyword arguments) and what it breaks:

- kind "protocol": the broker breaks `requirement` (an id of requirements.toml); some case must notice it
  (fail or non-strict, by the requirement's level). `selfcheck` checks it through the proxy,
  tests/cases/test_case_verdicts.py through the reference broker.
- kind "variant": a behaviour the spec allows (`requirement` is the MAY / informative sentence whose
  latitude it uses); the reference broker can act like brokers that choose it. No case may fail on it.
- kind "client": a client library breaks `requirement`: the reference client (`conformance.reference.client`,
  our peer in the client role) with the switch `client` on; some client case must notice it.
- kind "transport": the network, not the broker (`requirement` None): `delay` seconds per frame, or a
  `reset` / `stall` of the connection in the middle of a case. `expect` says what the verdicts must then
  be: "unchanged" (as on a direct connection) or "error" (the case cannot conclude; never pass or fail).

Pure data; it imports only the requirement catalogue. tests/faultproxy/test_fault_catalogue.py checks that the
proxy's and the reference broker's faults are exactly the ones listed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import get as requirement
from ..verdict import Verdict

EXPECT_ERROR = Verdict.ERROR.value   # a transport fault's `expect`: the error verdict where it fired

KINDS = ("protocol", "variant", "transport", "client")


@dataclass(frozen=True)
class Fault:
    name: str                          # kebab-case: `selfcheck --fault NAME`, `python -m conformance.reference --fault NAME`
    kind: str
    requirement: str | None            # the requirement broken (protocol) or whose latitude is used (variant)
    summary: str
    proxy: bool = False                # the fault-injecting proxy implements it (conformance.faultproxy)
    reference: dict = field(default_factory=dict)   # the reference broker's switch: Faults(**reference)
    delay: float = 0.0                 # transport: seconds each frame is held, both directions
    reset: bool = False                # transport: TCP reset in the middle of a case
    stall: bool = False                # transport: nothing forwarded any more from the middle of a case
    expect: str = "detected"           # protocol: "detected"; variant/transport: "unchanged" or EXPECT_ERROR
    client: dict = field(default_factory=dict)      # the reference client's switch: ClientFaults(**client)

    @property
    def level(self) -> str | None:
        return requirement(self.requirement).level if self.requirement else None


def _p(name, req, summary, *, proxy=False, **reference) -> Fault:
    return Fault(name, "protocol", req, summary, proxy=proxy, reference=reference)


def _v(name, req, summary, **reference) -> Fault:
    return Fault(name, "variant", req, summary, reference=reference, expect="unchanged")


FAULTS: tuple[Fault, ...] = (
    # -- both: the proxy rewrites frames so that the broker appears to do it; the reference broker does it --
    _p("cumulative-credit", "2.6.7/credit-formula",
       "link-credit of the receiver's flows added to the credit left instead of replacing it",
       proxy=True, cumulative_credit=True),
    _p("drain-stripped", "2.6.7/drain-advance", "the drain flag of the receiver's flows is ignored",
       proxy=True, ignore_drain=True),
    _p("echo-stripped", "2.7.4/echo", "echo requests are never answered (SHOULD: shows as non-strict)",
       proxy=True, ignore_echo=True),
    _p("delivery-count-shifted", "2.7.4/sender-delivery-count-set",
       "the sender's flows carry its delivery-count + 1", proxy=True, delivery_count_offset=1),
    _p("incoming-window-raised", "2.5.6/remote-incoming-window-decrement",
       "the receiver's session incoming-window is not honoured (the proxy raises it by 10000)",
       proxy=True, ignore_incoming_window=True),
    _p("transfer-beyond-credit", "2.6.7/no-send-without-credit",
       "one transfer more than the link-credit allows", proxy=True, extra_transfers=1),
    _p("alarm-drops-connection", "2.4.3/close-frame-first",
       "a resource alarm drops the connection (no close frame) instead of closing the session's incoming-window",
       proxy=True, close_on_alarm=True),
    # -- the reference broker only ------------------------------------------------------------------------
    _p("drain-without-advance", "2.6.7/drain-advance",
       "drain answered, but the delivery-count not advanced by the unused credit", drain_without_advance=True),
    _p("drain-overshoot", "2.6.7/drain-advance",
       "drain answered with the delivery-count advanced one past the delivery-limit (also at link-credit 0)",
       drain_overshoot=True),
    _p("echo-with-echo", "2.7.4/echo-no-loop", "echo answered with echo=true", echo_with_echo=True),
    _p("stale-count-as-credit", "2.6.7/credit-formula",
       "the receiver's delivery-count ignored: link-credit taken as the credit left", stale_count_as_credit=True),
    _p("plain-arithmetic", "2.6.7/delivery-count-serial",
       "credit computed with plain integers, wrong across the 2^32 wrap", plain_arithmetic=True),
    _p("ignore-stale-stop", "2.6.7/no-send-without-credit",
       "a receiver's flow(link-credit=0) whose delivery-count is behind the sender's (it crossed transfers in "
       "flight, Figure 2.46) is ignored: the sender goes on to its old delivery-limit", ignore_stale_stop=True),
    _p("stopped-link-stays-stopped", "2.6.7/credit-formula",
       "after a flow with link-credit 0, new credit delivers nothing", drop_resume=True),
    _p("ignore-flow-without-delivery-count", "2.6.7/unknown-delivery-count",
       "a receiver's flow without delivery-count is ignored", ignore_flow_without_delivery_count=True),
    _p("ignore-unattached-handle", "2.7.4/unattached-handle", "a flow on an unattached handle is ignored",
       ignore_unattached_handle=True),
    _p("omit-next-incoming-id", "2.7.4/next-incoming-id-set", "flows lack next-incoming-id",
       omit_next_incoming_id=True),
    _p("next-outgoing-id-offset", "2.5.6/next-outgoing-id-serial", "flows carry next-outgoing-id + 1",
       next_outgoing_id_offset=1),
    _p("receiver-delivery-count-offset", "2.7.4/receiver-delivery-count",
       "the receiver's flows report the sender's delivery-count + 1", receiver_delivery_count_offset=1),
    _p("answer-after-session-error", "2.5.4/session-error-end",
       "keeps answering on a session it ended with an error", answer_after_session_error=True),
    _p("drop-on-window-excess", "2.5.4/session-error-end",
       "drops the connection (no end frame) once a sender exceeds its incoming-window",
       drop_on_window_excess=True),
    _p("drop-on-excess", "2.6.5/link-error-detach",
       "no credit top-ups, and the connection dropped (no detach) on a transfer beyond credit",
       drop_on_excess=True),
    _p("ignore-handle-max", "2.7.2/handle-max", "attaches a handle above its handle-max", ignore_handle_max=True),
    _p("omit-initial-delivery-count", "2.7.3/initial-delivery-count-sender",
       "the sender's attach lacks initial-delivery-count", omit_initial_delivery_count=True),
    _p("link-fields-in-session-flow", "2.7.4/link-fields-need-handle",
       "a session flow (no handle) carries link-credit", link_fields_in_session_flow=True),
    _p("unsettled-in-settled-mode", "2.7.5/settled-mode-settled",
       "transfers unsettled on a link in settled mode", unsettled_in_settled_mode=True),
    _p("no-delivery-id", "2.7.5/delivery-id-first", "the first transfer of a delivery lacks delivery-id",
       no_delivery_id=True),
    _p("end-session-on-drain", "2.6.7/drain-advance", "a drain it cannot fill: all but one message, then "
       "end(error=amqp:internal-error) instead of the drained flow", end_session_on_drain=True),
    _p("drain-leaves-credit", "2.6.7/drain-advance", "a drain answered with one message fewer than the credit "
       "allows, though more are queued, then nothing: the last credit neither used nor advanced",
       drain_leaves_credit=True),
    _p("omit-receiver-delivery-count", "2.7.4/receiver-delivery-count",
       "the flows granting a publisher credit lack delivery-count", omit_receiver_delivery_count=True),
    _p("lose-accepted", "3.2.1/durable-not-lost",
       "a publisher's durable transfers accepted (settled), but all after the first lost", lose_after=1),
    # -- behaviours the spec allows (the reference broker acting like brokers that choose them) -----------
    _v("accept-excess-transfers", "2.6.7/excess-transfers",
       "transfers beyond credit from a publisher are taken, not refused with a detach", detach_on_excess=False),
    _v("window-violation-tolerated", "2.8.17/window-violation",
       "transfers beyond its incoming-window are taken, the session not ended", window_violation_tolerated=True),
    _v("no-publisher-credit", "2.6.7/initial-flow-state", "publishers are never granted credit",
       no_sender_credit=True),
    # -- the network (the proxy only) -------------------------------------------------------------------
    Fault("delay-50ms", "transport", None, "every frame held 50 ms, both directions", proxy=True, delay=0.05,
          expect="unchanged"),
    Fault("delay-200ms", "transport", None, "every frame held 200 ms, both directions", proxy=True, delay=0.2,
          expect="unchanged"),
    Fault("reset", "transport", None, "TCP reset of the connection at the first frame the peer sends after "
          "the broker attached a link", proxy=True, reset=True, expect=EXPECT_ERROR),
    Fault("stall", "transport", None, "nothing forwarded any more, either way, from the first frame the peer "
          "sends after the broker attached a link (sockets left open)", proxy=True, stall=True, expect=EXPECT_ERROR),
)



def _c(name, req, summary, **client) -> Fault:
    return Fault(name, "client", req, summary, client=client)


# -- a client library's faults: the reference client (conformance.reference.client) with one switch on ----------
FAULTS += (
    _c("client-receiver-count-zero", "2.7.4/receiver-delivery-count",
       "the receiving client's flows carry delivery-count 0 whatever the sender's attach said", receiver_count_zero=True),
    _c("client-send-without-credit", "2.6.7/no-send-without-credit",
       "the sending client sends every message at once, whatever its link-credit", ignore_credit=True),
    _c("client-ignore-session-window", "2.5.6/remote-incoming-window-decrement",
       "the sending client ignores the broker's session incoming-window", ignore_session_window=True),
    _c("client-ignore-drain", "2.6.7/drain-advance", "an idle sending client leaves the broker's drain unanswered",
       ignore_drain=True),
    _c("client-ignore-echo", "2.7.4/echo", "the client never answers echo (SHOULD: non-strict)", ignore_echo=True),
    _c("client-ignore-unattached-handle", "2.7.4/unattached-handle",
       "the client ignores a flow on a handle it never attached", ignore_unattached_handle=True),
    _c("client-credit-uint32", "2.6.7/no-send-without-credit",
       "the sending client computes its credit in uint32: a withdrawal that crossed its transfers in flight "
       "(delivery-count(rcv) + 0 - delivery-count(snd) < 0) wraps to ~2^32 and it sends on", credit_uint32=True),
    _c("client-late-without-echo", "2.6.7/no-send-without-credit",
       "the sending client never answers echo, and ignores a withdrawal whose delivery-count is behind its own: "
       "it sends on to the old delivery-limit after reading the stop", late_without_echo=True),
)

BY_NAME: dict[str, Fault] = {f.name: f for f in FAULTS}


def get(name: str) -> Fault:
    """The catalogue entry `name` (KeyError for an unknown one)."""
    return BY_NAME[name]


def of_kind(*kinds: str, proxy: bool | None = None, reference: bool | None = None) -> list[Fault]:
    """Entries of the given kinds, optionally only those the proxy / the reference broker implements."""
    return [f for f in FAULTS if f.kind in kinds and (proxy is None or f.proxy == proxy)
            and (reference is None or bool(f.reference) == reference)]


def check() -> None:
    """Every entry is well formed: known kind, a known requirement for protocol/variant faults, none for
    transport ones, and at least one implementation (ValueError / UnknownRequirement otherwise)."""
    for f in FAULTS:
        if f.kind not in KINDS:
            raise ValueError(f"fault {f.name}: unknown kind {f.kind!r}")
        if f.kind == "transport":
            if f.requirement is not None or not f.proxy or f.reference:
                raise ValueError(f"fault {f.name}: a transport fault is the proxy's and breaks no requirement")
        elif f.kind == "client":
            if not f.client or f.proxy or f.reference:
                raise ValueError(f"fault {f.name}: a client fault is the reference client's switch only")
            requirement(f.requirement)
        else:
            requirement(f.requirement)
        if not (f.proxy or f.reference or f.client):
            raise ValueError(f"fault {f.name}: neither the proxy nor the reference broker implements it")
    if len(BY_NAME) != len(FAULTS):
        raise ValueError("a fault name is listed twice")
