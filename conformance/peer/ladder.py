"""Text ladder diagrams of a transcript, in the style of the spec's Figures 2.43–2.46.

One row per frame: the receiver of the link under study on the left, the sender on the right, an arrow in
the direction the frame travelled, and the flow-control fields that matter. Pure formatting, no I/O.
"""

from __future__ import annotations

from ..wire import Frame, ProtocolHeader

# Fields shown per performative, in order, with their short labels.
KEY_FIELDS = {
    "flow": [("handle", "handle"), ("delivery_count", "delivery-count"), ("link_credit", "link-credit"),
             ("available", "available"), ("drain", "drain"), ("echo", "echo"),
             ("next_incoming_id", "next-incoming-id"), ("incoming_window", "incoming-window"),
             ("next_outgoing_id", "next-outgoing-id"), ("outgoing_window", "outgoing-window")],
    "transfer": [("handle", "handle"), ("delivery_id", "delivery-id"), ("settled", "settled"), ("more", "more"),
                 ("aborted", "aborted")],
    "attach": [("name", "name"), ("handle", "handle"), ("role", "role"),
               ("initial_delivery_count", "initial-delivery-count"), ("snd_settle_mode", "snd-settle-mode")],
    "begin": [("remote_channel", "remote-channel"), ("next_outgoing_id", "next-outgoing-id"),
              ("incoming_window", "incoming-window"), ("outgoing_window", "outgoing-window"),
              ("handle_max", "handle-max")],
    "disposition": [("role", "role"), ("first", "first"), ("last", "last"), ("settled", "settled"),
                    ("state", "state")],
    "open": [("container_id", "container-id"), ("max_frame_size", "max-frame-size"),
             ("channel_max", "channel-max"), ("idle_time_out", "idle-time-out")],
    "detach": [("handle", "handle"), ("closed", "closed"), ("error", "error")],
    "end": [("error", "error")],
    "close": [("error", "error")],
    "sasl-mechanisms": [("sasl_server_mechanisms", "mechanisms")],
    "sasl-init": [("mechanism", "mechanism")],
    "sasl-outcome": [("code", "code")],
}

SEQUENCE_FIELDS = {"delivery_count", "next_incoming_id", "next_outgoing_id", "initial_delivery_count"}


def _value(attr: str, value) -> str:
    if attr == "role":
        return "receiver" if value else "sender"
    if attr == "error" and value is not None:
        return str(getattr(value, "condition", value))
    if attr == "state" and value is not None:
        return getattr(value, "NAME", type(value).__name__)
    if isinstance(value, bool):
        return "true" if value else "false"
    if attr in SEQUENCE_FIELDS and isinstance(value, int) and value > 0xFFFF0000:
        return f"{int(value):#010x}"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if hasattr(value, "items") and not isinstance(value, dict):
        return ",".join(str(v) for v in value.items)
    if isinstance(value, int):
        return str(int(value))
    return str(value)


def summarize(item, fields: bool = True) -> str:
    """`flow(handle=0, delivery-count=0xfffffffb, link-credit=1)`, `header(AMQP)`, `empty frame`..."""
    if isinstance(item, ProtocolHeader):
        return f"header({item.name} {item.major}.{item.minor}.{item.revision})"
    if isinstance(item, (bytes, bytearray)):
        head = bytes(item[:16]).hex()
        return f"raw bytes({len(item)}: {head}{'...' if len(item) > 16 else ''})"
    if isinstance(item, Frame):
        if item.body is None:
            return "empty frame"
        body = item.body
    else:
        body = item
    name = getattr(body, "NAME", type(body).__name__)
    if not fields:
        return name
    shown = []
    for attr, label in KEY_FIELDS.get(name, []):
        v = getattr(body, attr, None)
        if v is None or (attr in ("drain", "echo", "more", "aborted", "closed") and v is False):
            continue
        shown.append(f"{label}={_value(attr, v)}")
    extra = ""
    if isinstance(item, Frame) and item.channel and name not in ("open", "close") and not item.frame_type:
        extra = f"ch{item.channel} "
    return f"{extra}{name}(" + ", ".join(shown) + ")"


def render(entries, *, left: str = "peer", left_label: str = "Receiver (peer)",
           right_label: str = "Sender (broker)", width: int = 110) -> str:
    """Render transcript entries as a ladder. `left` says which side ("peer" or "broker") is drawn left.

    A frame from the left side is written left of a `---------->` arrow; a frame from the right side right
    of a `<----------` arrow; a left-hand text too long for its column goes on its own line above its arrow.
    Times are milliseconds since the transcript began; `[auto]` marks heartbeats the peer sent on its own.
    """
    col = max(24, (width - 24) // 2)
    arrow_right, arrow_left = "-" * 10 + ">", "<" + "-" * 10
    lines = [f"{'t (ms)':>9}  {left_label:<{col}}  {'':<11}  {right_label}", f"{'':>9}  " + "=" * (width - 11)]
    for e in entries:
        text = summarize(e.item)
        if e.auto:
            text += " [auto]"
        if e.note and e.note != "raw bytes":
            text += f" ({e.note})"
        stamp = f"{e.t * 1000:9.1f}"
        if (e.direction == "out") == (left == "peer"):
            if len(text) > col:
                lines.append(f"{stamp}  {text}")
                lines.append(f"{'':>9}  {'':<{col}}  {arrow_right}")
            else:
                lines.append(f"{stamp}  {text:<{col}}  {arrow_right}")
        else:
            lines.append(f"{stamp}  {'':<{col}}  {arrow_left}  {text}")
    lines.append(f"{'':>9}  " + "-" * (width - 11))
    return "\n".join(line.rstrip() for line in lines)
