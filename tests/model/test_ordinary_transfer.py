"""The oracle's ordinary-transfer path gives exactly what the full path gives.

`FlowOracle._beyond` decides the ordinary transfer (the earliest limit the sender may be acting on allows
it) from that limit alone, without `_candidates`, the proof or the maximum. The reference below is the
transfer handling before that path (the candidates, the proof and the maximum for every transfer, flags
computed for both sides and dropped for a side not judged), kept verbatim: on random conversations, with
transfers beyond every limit, limits moving both ways, in-flight limits and wrap, both give the same
violations, the same proofs and the same limits kept, frame by frame."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.model.oracle import IN, MASK, OUT, FlowOracle, _int, _other
from conformance.wire import Attach, Begin, Detach, Flow, Frame, Source, Target, Transfer

SETTINGS = settings(settings.default, max_examples=max(400, settings.default.max_examples), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


class Reference(FlowOracle):
    """The oracle with the full transfer path (every transfer: candidates, proof, maximum)."""

    def _on_transfer(self, d: str, channel: int, body) -> None:
        s = self._by_channel[d].get(channel)
        if s is None:
            return
        receiver = _other(d)
        tid = s.ep[d].next_outgoing_id
        if d == IN:
            self._prove_by(s, s.grants[OUT], lambda g: (g.left(tid) or 0) > 0)
        window = self._candidates(s, s.grants[receiver], receiver)
        left = self._allowance(window, tid, s.grants[receiver])
        if left is not None and left <= 0:
            limits = ", ".join(f"{(g.limit - 1) & MASK:#x}" for g in window)
            self._flag(d, "session-window", f"transfer-id {tid:#x} is beyond the incoming-window "
                       f"(last transfer-id allowed: {limits})")
        s.ep[d].on_send_transfer()
        if receiver in s.ep:
            s.ep[receiver].on_receive_transfer()
        link = s.by_handle[d].get(_int(body.handle))
        if link is None or link.sender != d or link.snd is None:
            return
        snd = link.snd
        starts = not snd.in_delivery
        delivery_id = _int(getattr(body, "delivery_id", None))
        if starts:
            if delivery_id is None:
                self._flag(d, "delivery-id", "the first transfer of a delivery has no delivery-id")
            link.delivery_id = delivery_id
            if snd.delivery_count is not None:
                self._check_credit(s, link, d)
        elif delivery_id is not None and link.delivery_id is not None and delivery_id != link.delivery_id:
            self._flag(d, "delivery-id", f"continuation transfer has delivery-id {delivery_id}, the delivery "
                       f"began with {link.delivery_id}")
        aborted = bool(getattr(body, "aborted", None))
        snd.on_transfer_frame(body.more, aborted)
        if aborted:
            link.uncounted_aborts += 1

    def _check_credit(self, s: _Session, link: _Link, d: str) -> None:
        current = link.snd.delivery_count
        if d == IN:
            self._prove_link(s, link, lambda g: (g.left(current) or 0) > 0)
        limits = self._candidates(link, link.grants, _other(d))
        left = self._allowance(limits, current, link.grants)
        if left is not None and left <= 0:
            shown = ", ".join(f"{g.limit:#x}" for g in limits)
            self._flag(d, "no-credit", f"message at delivery-count {current:#x} with no link-credit "
                       f"(delivery-limit {shown})")

    # -- flow ------------------------------------------------------------------------------------------

    _HANDLERS = {**FlowOracle._HANDLERS, "transfer": _on_transfer}     # observe() dispatches through the table


def _near(base: int):
    return st.integers(-3, 3).map(lambda k: (base + k) & MASK)


steps = st.lists(st.one_of(
    st.tuples(st.just("our_flow"), st.integers(0, 6), st.integers(-2, 2), st.booleans(), st.integers(0, 6),
              st.booleans()),
    st.tuples(st.just("broker_flow"), st.integers(0, 6), st.integers(-2, 2), st.booleans(), st.integers(0, 6),
              st.booleans()),
    st.tuples(st.just("broker_transfer"), st.booleans(), st.booleans(), st.booleans()),
    st.tuples(st.just("our_transfer"), st.booleans(), st.booleans(), st.booleans()),
    st.tuples(st.just("reattach"), st.booleans()),
), min_size=5, max_size=80)


def _conversation(script, judge, in_flight, initial_r, initial_s, our_id, broker_id):
    """(direction, frame) of one session: link "r" (the broker sends, its handle 3, ours 0) and link "s" (our
    peer sends, its handle 1, the broker's 4); flows carry counts near the real ones (behind, ahead)."""
    yield OUT, Frame(0, Begin(next_outgoing_id=our_id, incoming_window=3, outgoing_window=100))
    yield IN, Frame(0, Begin(remote_channel=0, next_outgoing_id=broker_id, incoming_window=3, outgoing_window=100))
    yield OUT, Frame(0, Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target()))
    yield IN, Frame(0, Attach(name="r", handle=3, role=False, source=Source(address="q"), target=Target(),
                              initial_delivery_count=initial_r))
    yield OUT, Frame(0, Attach(name="s", handle=1, role=False, source=Source(), target=Target(address="q"),
                               initial_delivery_count=initial_s))
    yield IN, Frame(0, Attach(name="s", handle=4, role=True, source=Source(), target=Target(address="q")))
    count = {"r": initial_r, "s": initial_s}
    sent = {IN: broker_id, OUT: our_id}
    delivery = {IN: 0, OUT: 0}
    more = {IN: False, OUT: False}
    for step in script:
        kind = step[0]
        if kind in ("our_flow", "broker_flow"):
            _, credit, skew, drain, window, echo = step
            d, link, handle = (OUT, "r", 0) if kind == "our_flow" else (IN, "s", 4)
            yield d, Frame(0, Flow(next_incoming_id=(sent[_other(d)] + skew) & MASK, incoming_window=window,
                                   next_outgoing_id=sent[d], outgoing_window=100, handle=handle,
                                   delivery_count=(count[link] + skew) & MASK, link_credit=credit, drain=drain,
                                   echo=echo))
        elif kind in ("broker_transfer", "our_transfer"):
            _, has_more, aborted, no_id = step
            d, link, handle = (IN, "r", 3) if kind == "broker_transfer" else (OUT, "s", 1)
            first = not more[d]
            yield d, Frame(0, Transfer(handle=handle, delivery_id=None if no_id and first else delivery[d],
                                       more=has_more, aborted=aborted or None))
            sent[d] = (sent[d] + 1) & MASK
            if first:
                count[link] = (count[link] + 1) & MASK
            more[d] = has_more and not aborted
            if not more[d]:
                delivery[d] += 1
        else:
            _, ours = step
            d, name, handle = (OUT, "s", 1) if ours else (IN, "r", 3)
            yield d, Frame(0, Detach(handle=handle, closed=True))
            yield _other(d), Frame(0, Detach(handle=4 if ours else 0, closed=True))
            count[name] = 0
            more = {IN: False, OUT: False}
            if ours:
                yield OUT, Frame(0, Attach(name="s", handle=1, role=False, source=Source(), target=Target(address="q"),
                                           initial_delivery_count=0))
                yield IN, Frame(0, Attach(name="s", handle=4, role=True, source=Source(), target=Target(address="q")))
            else:
                yield OUT, Frame(0, Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target()))
                yield IN, Frame(0, Attach(name="r", handle=3, role=False, source=Source(address="q"), target=Target(),
                                          initial_delivery_count=0))


def _state(oracle: FlowOracle) -> list:
    """Everything the transfer path can change, but the maximum's memo (a cache)."""
    out = []
    for d in (IN, OUT):
        for channel, s in sorted(oracle._by_channel[d].items()):
            out.append((d, channel, s.proven_out, {k: vars(v) for k, v in s.ep.items()},
                        {k: [vars(g) for g in v] for k, v in s.grants.items()}))
            for name, link in sorted(s.links.items()):
                out.append((name, link.proven_out, link.delivery_id, link.uncounted_aborts,
                            vars(link.snd) if link.snd else None, [vars(g) for g in link.grants]))
    return out


@SETTINGS
@given(steps, st.sampled_from(["in", "out", "both"]), st.sampled_from(["tolerate", "strict"]),
       st.sampled_from([0, MASK - 2]), st.sampled_from([5, MASK]), _near(0), _near(0x7FFFFFFF))
def test_the_ordinary_transfer_path_gives_what_the_full_path_gives(script, judge, in_flight, initial_r,
                                                                   initial_s, our_id, broker_id):
    fast, full = FlowOracle(judge, in_flight=in_flight), Reference(judge, in_flight=in_flight)
    for d, frame in _conversation(script, judge, in_flight, initial_r, initial_s, our_id, broker_id):
        assert fast.observe(d, frame) == full.observe(d, frame), (d, frame)
        assert _state(fast) == _state(full), (d, frame)


def _counting(oracle: FlowOracle) -> list:
    calls = []
    original = oracle._candidates
    oracle._candidates = lambda *a: calls.append(a) or original(*a)
    return calls


def _receiving(judge="in", in_flight="tolerate") -> FlowOracle:
    o = FlowOracle(judge, in_flight=in_flight)
    o.observe(OUT, Frame(0, Begin(next_outgoing_id=0, incoming_window=50, outgoing_window=100)))
    o.observe(IN, Frame(0, Begin(remote_channel=0, next_outgoing_id=7, incoming_window=50, outgoing_window=100)))
    o.observe(OUT, Frame(0, Attach(name="r", handle=0, role=True, source=Source(address="q"), target=Target())))
    o.observe(IN, Frame(0, Attach(name="r", handle=3, role=False, source=Source(address="q"), target=Target(),
                                  initial_delivery_count=0)))
    return o


def test_an_ordinary_broker_transfer_is_judged_by_its_first_limit_alone():
    """The broker's transfers within our only limit (session window, link credit), then within the last limit
    it proved while a later one is still unproved (in-flight rule), strict or not: no candidate list is built.
    (2.6.7: "a sender MUST NOT send more messages than the receiver has granted"; each is allowed.)"""
    for in_flight in ("tolerate", "strict"):
        o = _receiving(in_flight=in_flight)
        o.observe(OUT, Frame(0, Flow(next_incoming_id=7, incoming_window=50, next_outgoing_id=0, outgoing_window=100,
                                     handle=0, delivery_count=0, link_credit=5)))
        o.observe(IN, Frame(0, Transfer(handle=3, delivery_id=0)))   # proves the flow (the session's too)
        o.observe(IN, Frame(0, Transfer(handle=3, delivery_id=1)))   # the limits before it are dropped
        calls = _counting(o)
        assert o.observe(IN, Frame(0, Transfer(handle=3, delivery_id=2))) == []
        assert calls == []
        if in_flight == "tolerate":
            o.observe(OUT, Frame(0, Flow(next_incoming_id=10, incoming_window=50, next_outgoing_id=0,
                                         outgoing_window=100, handle=0, delivery_count=3, link_credit=9)))
            assert o.observe(IN, Frame(0, Transfer(handle=3, delivery_id=3))) == []
            assert calls == []


def test_an_ordinary_transfer_of_our_peer_is_judged_by_the_brokers_only_limit():
    """Our peer's transfer within the broker's one limit (judge "out"): no candidate list is built."""
    o = FlowOracle("out")
    o.observe(OUT, Frame(0, Begin(next_outgoing_id=0, incoming_window=50, outgoing_window=100)))
    o.observe(IN, Frame(0, Begin(remote_channel=0, next_outgoing_id=7, incoming_window=50, outgoing_window=100)))
    o.observe(OUT, Frame(0, Attach(name="s", handle=1, role=False, source=Source(), target=Target(address="q"),
                                   initial_delivery_count=0)))
    o.observe(IN, Frame(0, Attach(name="s", handle=4, role=True, source=Source(), target=Target(address="q"))))
    o.observe(IN, Frame(0, Flow(next_incoming_id=0, incoming_window=50, next_outgoing_id=7, outgoing_window=100,
                                handle=4, delivery_count=0, link_credit=5)))
    o.observe(OUT, Frame(0, Transfer(handle=1, delivery_id=0)))             # the lists pruned to their last limit
    calls = _counting(o)
    assert o.observe(OUT, Frame(0, Transfer(handle=1, delivery_id=1))) == []
    assert calls == []


@SETTINGS
@given(st.integers(0, MASK), st.integers(0, MASK), st.integers(0, 1 << 32),
       st.sampled_from([0, 1, 1 << 31, (1 << 31) - 1, (1 << 31) + 1, MASK]))
def test_the_inlined_limit_test_is_the_grants_own(base, current, credit, offset):
    """`_allows` (the transfer path's inlined test) answers what `_Grant.allows` answers, wrap and the
    undefined distance 2^31 included."""
    from conformance.model.oracle import _allows, _Grant
    for cur in (current, (base + offset) & MASK):
        g = _Grant(0, base, credit)
        assert _allows(g, cur) == g.allows(cur)


def test_a_transfer_without_a_handle_is_counted_on_its_session_and_judged_on_no_link():
    """A transfer whose mandatory handle is missing (a capture decodes it as None) still counts on the session
    (2.5.6: every transfer frame takes a transfer-id), names no link, and stops neither judging nor the
    transfers after it; the full path gives the same."""
    fast, full = _receiving(), _receiving()
    full.__class__ = Reference
    for o in (fast, full):
        o.observe(OUT, Frame(0, Flow(next_incoming_id=7, incoming_window=50, next_outgoing_id=0, outgoing_window=100,
                                     handle=0, delivery_count=0, link_credit=5)))
    for frame in (Transfer(handle=None, delivery_id=0), Transfer(handle=3, delivery_id=1)):
        assert fast.observe(IN, Frame(0, frame)) == full.observe(IN, Frame(0, frame)) == []
    assert fast._by_channel[IN][0].ep[IN].next_outgoing_id == 9
