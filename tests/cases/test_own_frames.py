"""Our own frames break no MUST or SHOULD, unless the case's subject is the broker's answer to that error.

Every case runs against the well-behaved reference broker (conformance.reference); its transcripts are read
back from the result (the raw bytes of each frame) and OUR side is judged: the flow-control model with
`FlowOracle(judge="out")`, plus the two session rules the model does not keep (a handle above the
partner's handle-max, 2.7.2; a link frame on a handle with no link attached, 2.7.4). A violation is allowed
only when the case declares it (`@case(..., deliberate=[...])`, `CaseSpec.deliberate`: the one list), e.g.
2.7.4/3 sends a flow on an unattached handle because its subject is the broker's answer to it.
"""

from __future__ import annotations

import pytest

from conformance import catalogue
from conformance.cases import load_all
from conformance.model.oracle import FlowOracle
from conformance.options import RunOptions
from conformance.casekit.executor import run_case
from conformance.wire import Attach, Begin, Detach, End, Flow, Frame, FrameDecoder, Transfer

OPTIONS = RunOptions(frame_timeout=2.0, quiet_period=0.25, connect_timeout=2.0)
CASES = load_all()
LINK_FRAMES = (Flow, Transfer, Detach)


def own_violations(frames) -> list[tuple[str, str]]:
    """(requirement id, detail) for every MUST/SHOULD our peer's frames break in one connection's
    (direction, frame) sequence ("out": ours)."""
    oracle = FlowOracle(judge="out")
    found = [(v.requirement_id, v.detail) for direction, frame in frames for v in oracle.observe(direction, frame)
             if v.level in ("MUST", "SHOULD")]
    handle_max: dict[int, int] = {}          # our channel -> the broker's handle-max
    attached: dict[int, set] = {}            # our channel -> our handles with a link attached
    theirs: dict[int, int] = {}              # the broker's channel -> ours
    for direction, frame in frames:
        body = frame.body
        if direction == "in":
            if isinstance(body, Begin) and body.remote_channel is not None:
                theirs[frame.channel] = int(body.remote_channel)
                handle_max[int(body.remote_channel)] = 0xFFFFFFFF if body.handle_max is None else int(body.handle_max)
            elif isinstance(body, End) and frame.channel in theirs:
                attached.pop(theirs[frame.channel], None)
            continue
        handles = attached.setdefault(frame.channel, set())
        if isinstance(body, Attach):
            if int(body.handle) > handle_max.get(frame.channel, 0xFFFFFFFF):
                found.append(("2.7.2/handle-max", f"attach with handle {int(body.handle)} above the broker's "
                              f"handle-max {handle_max[frame.channel]}"))
            handles.add(int(body.handle))
        elif isinstance(body, LINK_FRAMES) and getattr(body, "handle", None) is not None:
            if int(body.handle) not in handles:
                found.append(("2.7.4/unattached-handle", f"{type(body).__name__.lower()} on handle "
                              f"{int(body.handle)}, with no link attached on it"))
            elif isinstance(body, Detach):
                handles.discard(int(body.handle))
    return found


def frames_of(transcript: dict) -> list[tuple[str, Frame]]:
    """A result's transcript (JSON) back as (direction, frame), AMQP frames only."""
    out = []
    for entry in transcript["entries"]:
        if entry.get("frame_type") != "amqp":
            continue
        decoded = FrameDecoder().feed(bytes.fromhex(entry["raw"]))
        if decoded and getattr(decoded[0], "body", None) is not None:
            out.append((entry["direction"], decoded[0]))
    return out


def test_deliberate_violations_name_must_or_should_requirements():
    for spec in CASES.values():
        for rid in spec.deliberate:
            assert catalogue.get(rid).level in ("MUST", "SHOULD"), f"{spec.id}: {rid} is not a MUST or SHOULD"


@pytest.mark.parametrize("case_id", list(CASES))
def test_our_frames_break_only_what_the_case_declares(case_id, reference_broker):
    spec = CASES[case_id]
    result = run_case(spec, reference_broker, OPTIONS)
    assert result.transcripts, f"{case_id}: {result.verdict.value}: {result.reason}"
    broken = [(rid, f"connection {n + 1}: {detail}") for n, t in enumerate(result.transcripts)
              for rid, detail in own_violations(frames_of(t)) if rid not in spec.deliberate]
    assert not broken, f"{case_id}: our frames break {broken} (declare them with deliberate=[...] only if the " \
                       "case's subject is the broker's answer to that error)"


def test_the_check_catches_a_flow_without_delivery_count_after_the_senders_attach():
    """The exchange 2.6.7/6 used before issue #20: our receiver saw the broker's attach, then omitted
    delivery-count (2.7.4 forbids it); and the session rules the model does not keep."""
    from conformance.wire import Source, Target
    begin_out = Frame(0, Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100))
    begin_in = Frame(0, Begin(remote_channel=0, next_outgoing_id=0, incoming_window=100, outgoing_window=100,
                              handle_max=3))
    attach_out = Frame(0, Attach(name="l", handle=0, role=True, source=Source(address="q"), target=Target()))
    attach_in = Frame(0, Attach(name="l", handle=0, role=False, source=Source(address="q"), target=Target(),
                                initial_delivery_count=5))

    def flow(handle, **fields):
        return Frame(0, Flow(next_incoming_id=0, incoming_window=100, next_outgoing_id=0, outgoing_window=100,
                             handle=handle, link_credit=5, **fields))
    opening = [("out", begin_out), ("in", begin_in), ("out", attach_out)]
    assert own_violations(opening + [("out", flow(0)), ("in", attach_in)]) == []     # before the attach: valid
    assert [r for r, _ in own_violations(opening + [("in", attach_in), ("out", flow(0))])] == \
        ["2.7.4/receiver-delivery-count"]
    assert [r for r, _ in own_violations(opening + [("in", attach_in), ("out", flow(7, delivery_count=5))])] == \
        ["2.7.4/unattached-handle"]
    high = Frame(0, Attach(name="h", handle=4, role=True, source=Source(address="q"), target=Target()))
    assert [r for r, _ in own_violations(opening + [("out", high)])] == ["2.7.2/handle-max"]
