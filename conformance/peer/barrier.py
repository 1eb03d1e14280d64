"""Round trips that order a wait, and proving that an answer is not coming without waiting the frame timeout.

This module owns the barrier machinery beside the peer's expectations: `begin_end_round_trip` (a session
begun and ended on a free channel: the broker's begin is the answer that orders it), `link_round_trip` (a
link attached and detached on a session, optionally as a receiver on a queue so that the answer comes after
what the queue did), `answer_or_absence` (the answer to a request, or proof by a barrier that none is coming)
and `absence_window` (how long an answer may still come after the barrier's). Each wait is bounded by the
peer's frame timeout; a broker that ends the session or closes the connection first is `Precluded`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..wire import Attach, Begin, Close, Detach, End, Source, Target
from .errors import ExpectationTimeout
from .expectations import Precluded

if TYPE_CHECKING:
    from .connection import Peer


def begin_end_round_trip(peer: "Peer", channel: int) -> int:
    """A round trip on the connection: begin a session on `channel`; the broker's begin is the answer that
    orders it. The session is ended at once, but its end's answer is not part of the round trip: the caller
    takes it when it comes, on the broker's channel returned here."""
    mark = peer.mark()
    peer.send(Begin(next_outgoing_id=0, incoming_window=0, outgoing_window=0), channel)
    gone = lambda f: isinstance(f.body, Close)
    reply = peer.expect(Begin, after=mark, where=lambda f: f.body.remote_channel == channel, unless=gone)
    peer.send(End(), channel)
    return reply.channel


def link_round_trip(peer: "Peer", channel: int, remote_channel: int, handle: int, name: str, *, address: str,
                    through_queue: bool, gone: Callable[[Any], bool], timeout: float | None = None,
                    give_up: Callable[[], bool] | None = None) -> None:
    """A link named `name` attached on `handle` and detached at once, on the session on `channel`: as a
    receiver from `address` (`through_queue`: the broker answers only once its queue took it as a consumer)
    or as a sender to it. `gone` says which frame ends the session or connection (`Precluded`). The barrier
    link's own frames (a credit flow) are taken, so that they are not taken for a later link's on a reused
    handle. `timeout` (with `give_up`): a first, shorter bound on the attach's answer, for a caller that holds
    the broker's own evidence that it is not reading this connection; when it runs out, `give_up()` says
    whether that evidence still holds (ExpectationTimeout there) or not (the answer is waited for up to the
    frame timeout in all, as without it)."""
    if through_queue:
        attach = Attach(name=name, handle=handle, role=True, rcv_settle_mode=0,
                        source=Source(address=address), target=Target())
    else:
        attach = Attach(name=name, handle=handle, role=False, source=Source(),
                        target=Target(address=address), initial_delivery_count=0)
    mark = peer.mark()
    peer.send(attach, channel)
    def answer(bound: float | None):
        return peer.expect(Attach, channel=remote_channel, after=mark, where=lambda f: f.body.name == name,
                           unless=gone, timeout=bound)
    if timeout is None or give_up is None:
        reply = answer(None)
    else:
        try:
            reply = answer(timeout)
        except ExpectationTimeout:
            if give_up():
                raise
            reply = answer(max(0.0, peer.timeouts.frame - timeout))
    peer.send(Detach(handle=handle, closed=True), channel)
    theirs = reply.body.handle
    peer.expect(Detach, channel=remote_channel, handle=theirs, after=mark, unless=gone)
    # the barrier link's own frames (a credit flow) must not be taken for a later link's on a reused handle
    own = {id(f) for f in peer.arrived[mark:] if getattr(f, "channel", None) == remote_channel
           and getattr(getattr(f, "body", None), "handle", None) == theirs}
    while own:
        try:
            own.discard(id(peer.expect(channel=remote_channel, after=mark, timeout=0,
                                       where=lambda f: id(f) in own)))
        except ExpectationTimeout:
            break


def answer_or_absence(expect: Callable[[float | None], Any], barrier: Callable[[], None], window: float) -> Any:
    """The answer to a request just sent, or proof that none is coming, without waiting the frame timeout:
    `expect(timeout)` waits for the answer (raising ExpectationTimeout when it does not come). If it is not
    here yet, a barrier round trip (`barrier()`) shows the broker processed the request, then the answer
    may still come within `window` (`absence_window`): an answer the broker sends on another path than the
    barrier's (another process, queue or link) lands in it. A broker that answers neither the request nor
    the barrier: ExpectationTimeout after the frame timeout, as before."""
    try:
        return expect(0)
    except Precluded:
        raise
    except ExpectationTimeout:
        pass
    try:
        barrier()
    except Precluded:             # the session or connection ended: the answer came before it, or never
        return expect(0)
    return expect(window)


def absence_window(peer: "Peer", quiet_period: float) -> float:
    """How long an answer may still come after the barrier's: the quiet period plus the round trip measured
    at the handshake (as `expect_nothing` watches)."""
    return quiet_period + peer.round_trip
