"""A publisher's credit top-up, crossed alone: how a sender case gets a broker's own flow sent after the broker
received every transfer of ours, so the delivery-count it carries can be checked exactly.

This module owns `send_pipelined` (transfers within credit without waiting for outcomes, stopping when the
broker ends the link or, on request, as soon as it sends a flow for the link) and `cross_top_up_alone` (learn
the point at which a broker tops a publisher's credit up and cross it one transfer at a time). A broker that
tops the credit up when what it granted beyond the deliveries it settled falls to a low mark (ActiveMQ
Artemis: 300 of 1000) sends that flow while a pipelined burst is still arriving, so its delivery-count is
behind ours and proves nothing about the count after the last transfer. A broker that never tops up is left
as it is (the case asks for an echo next). Every wait is bounded: a few rounds, the granted credit, and one
named wait for the top-up.

Used by 2.6.7/11 (a publisher's delivery-count across the serial wrap).
"""

from __future__ import annotations

from ..peer import ConnectionLost, ExpectationTimeout
from ..wire import Flow, serial_add, serial_diff
from .sender_script import SenderScript

TOP_UP_ROUNDS = 3     # the top-up point is learnt at most this often
SINGLE_STEPS = 5      # ... and crossed one transfer at a time from this many before it to this many after


def send_pipelined(link: SenderScript, until: int, *, stop_at_flow: bool = False,
                   body: str = "wrap-{n}") -> bool:
    """Send transfers (`body` with `{n}` the transfer's number on the link) within credit, without waiting for
    outcomes, until `until` are sent in all (`stop_at_flow`: or a flow for the link arrived meanwhile); False
    when the broker ended the link or dropped the connection. Each look reads only the frames that arrived
    since the last one."""
    seen = 0

    def news() -> tuple[bool, bool]:      # (the link ended, a flow for it came) since the last look
        nonlocal seen
        fresh = link.peer.arrived[seen:]
        seen += len(fresh)
        frames = [f for f in fresh if getattr(f, "body", None) is not None]
        return any(link.ended_by(f) for f in frames), any(link.is_flow_for(f) for f in frames)

    if news()[0]:                 # everything so far: ended already?
        return False
    while len(link.sent) < until and link.credit > 0:
        ended, flowed = news()
        if ended:
            return False
        if stop_at_flow and flowed:
            break
        try:
            link.transfer(body.format(n=len(link.sent)).encode())
        except ConnectionLost:      # dropped: what arrived before it is judged
            return False
    return not link.ended_by_broker()


def cross_top_up_alone(link: SenderScript, *, body: str = "wrap-{n}") -> None:
    """After a pipelined burst: make the broker's next credit top-up for `link` come after it received every
    transfer of ours. Learn the low mark from the last top-up: a broker that restores the credit of its first
    grant, counted from the deliveries it settled (as Artemis does), had settled the new limit minus that
    grant, so the mark is the replaced limit minus those. Then send within the new credit until just before
    the next crossing, let the broker settle everything, and cross it one transfer at a time, each followed
    by its outcome and a barrier round trip; then wait (bounded) for the top-up."""
    for _ in range(TOP_UP_ROUNDS):
        flows = own_flows(link)
        if len(flows) < 2 or _behind(link, flows[-1]) == 0:
            return              # no top-up at all, or one sent after every transfer: judged as it is
        before, top_up = flows[-2], flows[-1]
        granted = _relative(link, _limit(top_up))
        settled = granted - int(flows[0].link_credit)     # when it topped up, restoring its first grant
        mark = _relative(link, _limit(before)) - settled  # credit beyond the settled deliveries left then
        due = granted - mark                              # the transfer whose settlement brings the next top-up
        if mark <= 0 or due <= len(link.sent):
            return
        if not send_pipelined(link, due - SINGLE_STEPS, stop_at_flow=True, body=body):
            return
        link.await_outcomes(len(link.sent))
        link.session.settle_by_barrier()
        if len(own_flows(link)) > len(flows):
            continue            # it came early: learn again from it
        while len(link.sent) < due + SINGLE_STEPS and len(own_flows(link)) == len(flows):
            if not send_pipelined(link, len(link.sent) + 1, body=body):
                return
            link.await_outcomes(len(link.sent))
            link.session.settle_by_barrier()
        if len(own_flows(link)) == len(flows):
            await_top_up(link)


def await_top_up(link: SenderScript) -> None:
    """The broker's next credit top-up for the link, waited for within twice the quiet period (none: the
    case goes on without it)."""
    try:
        link.peer.expect(Flow, channel=link.session.remote_channel, handle=link.broker_handle,
                         after=link.peer.mark(), timeout=link.ctx.options.quiet_period * 2)
    except (ExpectationTimeout, ConnectionLost):
        pass


def own_flows(link: SenderScript) -> list:
    """The broker's flows for the link that carry a delivery-count and a link-credit, in arrival order."""
    return [f.body for f in link.peer.received(Flow) if link.is_flow_for(f)
            and f.body.delivery_count is not None and f.body.link_credit is not None]


def _limit(flow) -> int:
    return serial_add(int(flow.delivery_count), int(flow.link_credit))


def _relative(link: SenderScript, count: int) -> int:
    """A delivery-count as the number of our transfers it stands for (the initial delivery-count is 0)."""
    return serial_diff(link.state.initial_delivery_count, count)


def _behind(link: SenderScript, flow) -> int:
    """How many of our transfers the flow's delivery-count does not count."""
    return serial_diff(int(flow.delivery_count), link.state.delivery_count)


__all__ = ["SINGLE_STEPS", "TOP_UP_ROUNDS", "await_top_up", "cross_top_up_alone", "own_flows", "send_pipelined"]
