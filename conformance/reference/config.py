"""The reference broker's switches: `Faults` (one deliberate deviation at a time, each the broker's side of
an entry of the fault catalogue), `BrokerConfig` (how it is configured: windows, credit, SASL, and the
behaviours real brokers show that are not faults), and the constants `HANDLE_MAX` and the link roles."""

from __future__ import annotations

from dataclasses import dataclass

from ..catalogue import faults as fault_catalogue

HANDLE_MAX = 1023
ROLE_SENDER = False
ROLE_RECEIVER = True


@dataclass(frozen=True)
class Faults:
    """Deliberate deviations. All off = a broker that keeps every requirement the suite checks.

    Each switch is the reference broker's side of an entry of the one fault catalogue
    (`conformance.catalogue.faults`, which names the requirement it breaks); `Faults.named("drain-stripped")`
    switches on catalogue entries by name. tests/faultproxy/test_fault_catalogue.py keeps the two in step."""

    @classmethod
    def named(cls, *names: str) -> "Faults":
        """The switches of the catalogue's faults `names` (KeyError: unknown, or not the reference broker's)."""
        values: dict = {}
        for name in names:
            entry = fault_catalogue.get(name)
            if not entry.reference:
                raise KeyError(f"fault {name} is not one of the reference broker's")
            values.update(entry.reference)
        return cls(**values)

    cumulative_credit: bool = False       # 2.6.7/credit-formula: link-credit added instead of set
    ignore_drain: bool = False            # 2.6.7/drain-advance: drain flag ignored
    drain_without_advance: bool = False   # 2.6.7/drain-advance: drain answered but delivery-count not advanced
    drain_overshoot: bool = False         # 2.6.7/drain-advance: drain advances delivery-count one past the limit
    ignore_echo: bool = False             # 2.7.4/echo: echo requests never answered
    echo_with_echo: bool = False          # 2.7.4/echo-no-loop: echo answered with echo=true
    delivery_count_offset: int = 0        # 2.7.4/sender-delivery-count-set: flows carry a shifted delivery-count
    stale_count_as_credit: bool = False   # 2.6.7/credit-formula: receiver's delivery-count ignored (credit = c)
    extra_transfers: int = 0              # 2.6.7/no-send-without-credit: send this many beyond credit
    ignore_incoming_window: bool = False  # 2.5.6: peer's session incoming-window ignored
    ignore_unattached_handle: bool = False  # 2.7.4/unattached-handle: flow on unknown handle ignored
    no_sender_credit: bool = False        # never grants credit to publishers
    close_on_alarm: bool = False          # alarm closes the connection instead of flow control
    window_violation_tolerated: bool = False  # broker accepts transfers beyond its incoming-window
    detach_on_excess: bool = True         # excess transfers from publisher: detach (True) or accept (False)
    omit_next_incoming_id: bool = False   # 2.7.4/next-incoming-id-set
    drop_resume: bool = False             # 2.6.10: after credit 0 then new credit, deliver nothing
    ignore_stale_stop: bool = False       # 2.6.7/no-send-without-credit: a flow(link-credit=0) whose delivery-count is
                                          # behind ours (it crossed transfers in flight) is ignored (ActiveMQ Artemis)
    answer_after_session_error: bool = False  # 2.5.4/session-error-end: keeps answering after its end
    drop_on_window_excess: bool = False   # 2.5.4/session-error-end: drops the connection, no end frame
    next_outgoing_id_offset: int = 0      # 2.5.6/next-outgoing-id-serial: flows carry a shifted next-outgoing-id
    plain_arithmetic: bool = False        # 2.6.7/delivery-count-serial: credit computed without wrap at 2^32
    receiver_delivery_count_offset: int = 0  # 2.7.4/receiver-delivery-count: reports the publisher's count shifted
    drop_on_excess: bool = False          # 2.6.5/link-error-detach: no credit top-ups; drops the connection on excess
    ignore_handle_max: bool = False       # 2.7.2/handle-max: attaches whatever handle it gets
    omit_initial_delivery_count: bool = False  # 2.7.3/initial-delivery-count-sender
    link_fields_in_session_flow: bool = False  # 2.7.4/link-fields-need-handle: session echo carries link-credit
    ignore_flow_without_delivery_count: bool = False  # 2.6.7/unknown-delivery-count
    unsettled_in_settled_mode: bool = False   # 2.7.5/settled-mode-settled
    no_delivery_id: bool = False          # 2.7.5/delivery-id-first: first transfer of a delivery lacks it
    end_session_on_drain: bool = False    # 2.6.7/drain-advance: a drain it cannot fill: all but one message, then
                                          # end(error=amqp:internal-error) instead of the drained flow (RabbitMQ 3.10)
    omit_receiver_delivery_count: bool = False  # 2.7.4/receiver-delivery-count: publisher flows lack delivery-count
    drain_leaves_credit: bool = False     # 2.6.7/drain-advance: a drain answered with one message fewer than the
                                          # credit allows (though it has them), then nothing: 1 credit left undrained
    lose_after: int = 0                   # accepts, then loses every transfer beyond the first N of a publisher link


@dataclass
class BrokerConfig:
    initial_delivery_count: int = 0xFFFFFFFB   # like RabbitMQ 4: wraps within a few messages
    next_outgoing_id: int = 0xFFFFFFFC
    incoming_window: int = 400
    outgoing_window: int = 0xFFFFFFFF
    publisher_credit: int = 100
    # Not a fault: a publisher's credit is topped up (to publisher_credit again) once this much of it is left;
    # None: half of it. ActiveMQ Artemis tops up at 300 of 1000, so its top-up crosses a pipelined burst
    # (casekit/top_up.py learns that mark and crosses it alone).
    publisher_top_up_at: int | None = None
    max_frame_size: int = 65536
    channel_max: int = 63
    product: str = "amqp-conformance-reference-broker"
    version: str = "1.0"
    require_sasl: bool = True
    # Not a fault (the spec orders frames per session, not a broker's work across links and queues): answers
    # to echo and drain, and transfers beyond credit (the extra_transfers fault), are written only after the
    # broker has handled this many more frames of the peer's, as by a broker whose queues run apart from its
    # sessions (RabbitMQ): they come after its answer to a later request (a barrier). 0: at once.
    late_by_frames: int = 0
    # Not judged by any case (session lifecycle is not the suite's subject): False leaves the peer's end of a
    # session unanswered, as RabbitMQ 3.10 sometimes does for the begin/end barrier's session.
    answer_ends: bool = True
    # Not a fault either: a queue at its length limit rejects the transfers beyond it (RabbitMQ's reject-publish
    # overflow) instead of withholding the publisher's credit.
    reject_on_overflow: bool = False
    # Not a fault: False sends no flow after a drain whose credit the transfers used up (Artemis, qpid-proton-c);
    # the transfers carry the new delivery-count, and a drained flow is owed only when credit is left (2.6.7).
    drained_flow_after_transfers: bool = True
    # Not a fault: True answers a drain with its link state (drain=true, the credit it has) before the transfers
    # for it, as RabbitMQ 3.10 does; that flow is not the one after the transfers.
    flow_before_drain_transfers: bool = False
    # Not a fault either: a queue at its length limit withdraws the publisher's credit with
    # flow(link-credit=0, drain=true) once it is full (Qpid Broker-J's producer flow control) instead of
    # granting no more than the room left.
    withdraw_on_full: bool = False
    # Not a fault: during an alarm a publisher's transfer is not taken at all, and nothing after it on that
    # connection is read, until the alarm clears (no window 0, no credit change): ActiveMQ Classic at its store
    # limit, whose connection thread waits in Queue.checkUsage / waitForSpace ("Persistent store is Full").
    hold_connection_on_alarm: bool = False
    # Configurations real brokers are run with (not faults: each refuses what it does not allow, with an error
    # a case reads as a refusal by configuration). A non-durable store refuses a durable message as Qpid
    # Broker-J 9.2.1 with a Memory virtual host does: detach(amqp:precondition-failed, NON_DURABLE), then
    # end(amqp:session:errant-link) and close(amqp:session:unattached-handle).
    durable_store: bool = True
    # False: an attach to an address with no queue is refused with detach(amqp:not-found) (no auto-creation).
    create_on_attach: bool = True
    # What SASL offers: ("SCRAM-SHA-256", "CRAM-MD5") is a broker that offers PLAIN over TLS only.
    sasl_mechanisms: tuple = ("ANONYMOUS", "PLAIN")
    # The condition the end_session_on_drain fault ends the session with (a refusal condition: the spec
    # still forbids ending the session while the drain is unanswered).
    drain_end_condition: str = "amqp:internal-error"
