"""Client driver for the Azure Service Bus SDK's pure-Python AMQP 1.0 stack (`azure.servicebus._pyamqp`), speaking
the suite's JSON-lines command protocol (clients/PROTOCOL.md) on stdin/stdout. Started by the suite with the
release's `pip install --target` folder on sys.path.

The SDK's public clients (`ServiceBusClient`, `ServiceBusReceiver`, `ServiceBusSender`) authenticate with CBS
(a `$cbs` node that only Service Bus has), so the driver uses the stack below them the way the SDK does
(`azure/servicebus/_transport/_pyamqp_transport.py`, `_servicebus_receiver.py`, `_servicebus_sender.py`): one
`Connection` that the handlers share, `ReceiveClient` with `link_credit`, `receive_message_batch`,
`SendClient.send_message`. Citations are to the files of the installed release (7.15.0 line numbers unless said otherwise).

Event Hubs' copy (`azure.eventhub._pyamqp`, azure-eventhub 5.15.1) has the same link.py, sender.py and
session.py; its receiver.py differs only in settlement-outcome checks, so this driver judges both stacks' flow
control.
"""

import json
import select
import sys
import time
import traceback

from azure.servicebus import __version__ as VERSION
from azure.servicebus._pyamqp import ReceiveClient, SendClient
from azure.servicebus._pyamqp._connection import Connection
from azure.servicebus._pyamqp.authentication import SASLPlainAuth
from azure.servicebus._pyamqp.constants import ConnectionState, ReceiverSettleMode, SenderSettleMode
from azure.servicebus._pyamqp.message import Message
from azure.servicebus._pyamqp.sasl import SASLAnonymousCredential


def _body(message) -> str:
    value = message.value if message.value is not None else message.data
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    return str(value)


class Driver:
    def __init__(self):
        self.conn = None
        self.host = None
        self.receiver = None
        self.sender = None
        self.pull = False
        self.events = []

    # -- connection ---------------------------------------------------------------------------------------

    def connect(self, url, timeout_ms=5000, **_):
        # The SDK's shared connection: PyamqpTransport.create_connection (_pyamqp_transport.py:464-473) builds
        # `Connection(endpoint=host, sasl_credential=auth.sasl, ...)`; SASL ANONYMOUS is the credential the SDK's
        # CBS auth carries (authentication.py:78 `self.sasl = SASLAnonymousCredential()`); `use_tls=False` is
        # the emulator's plain-TCP option (client.py:214 `self._use_tls`, since 7.13.0).
        self.host = url.split("://", 1)[-1]
        # socket_timeout: the SDK's documented client option ("The time in seconds that the underlying socket on the
        # connection should wait when sending and receiving data before timing out. The default value is 0.2",
        # ServiceBusClient docstring), passed on as Connection(socket_timeout=...) (_connection.py:112): 0.05 s,
        # so that each read the stack makes while idle costs 50 ms instead of 200 ms; flow control is the same.
        self.conn = Connection(url, sasl_credential=SASLAnonymousCredential(), use_tls=False,
                               container_id="amqp-conformance-client", socket_timeout=0.05)
        # Connection.open() sends the header and open (pipelined, _connection.py:829); listen() reads frames
        # (_connection.py:712) until the remote open arrives, as AMQPClient.client_ready() does (client.py:409).
        self.conn.open()
        deadline = time.monotonic() + timeout_ms / 1000.0
        while self.conn.state != ConnectionState.OPENED:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no open from the broker within {timeout_ms} ms (state {self.conn.state})")
            self.conn.listen(wait=0.05)
        return {}

    def _handler_open(self, client, timeout_s=5.0):
        # ServiceBusReceiver._open / ServiceBusSender._open (_servicebus_receiver.py:360-380,
        # _servicebus_sender.py:260-279): `self._handler.open(connection=self._connection)`, then
        # `while True: if self._handler.client_ready(): break; time.sleep(0.05)` (bounded by a deadline). The
        # driver leaves out the sleep: client_ready() itself waits for the broker's frames (AMQPClient.client_ready
        # listens with the socket timeout, client.py:409-426), so the loop is not busy.
        client.open(connection=self.conn)
        deadline = time.monotonic() + timeout_s
        while not client.client_ready():
            if time.monotonic() > deadline:
                raise TimeoutError("the link did not attach within 5 s")

    @staticmethod
    def _auth():
        # AMQPClient.open() reads `self._auth.auth_type` (client.py:355) even when it is given the connection (whose
        # SASL credential is then the only one used); the auth must not be CBS: a plain broker has no $cbs node.
        return SASLPlainAuth("", "")

    # -- receiver -----------------------------------------------------------------------------------------

    def receiver_open(self, address, credit=0, **_):
        # PyamqpTransport.create_receive_client (_pyamqp_transport.py:679-700): `ReceiveClient(hostname, source,
        # receive_settle_mode=..., send_settle_mode=..., link_credit=...)`. The driver uses the SDK's
        # RECEIVE_AND_DELETE mode, ReceiverSettleMode.First with SenderSettleMode.Settled (_pyamqp_transport.py:
        # 189-192, 687-692): its attach asks for pre-settled transfers, so the application settles nothing.
        # With no prefetch the SDK asks for `link_credit=self._prefetch_count + 1` ("set link_credit to at least 1
        # so that messages can be received", _servicebus_receiver.py:343-344) and sets the credit per receive call.
        self.pull = not credit
        self.receiver = ReceiveClient(self.host, address, auth=self._auth(), link_credit=credit or 1,
                                      receive_settle_mode=ReceiverSettleMode.First,
                                      send_settle_mode=SenderSettleMode.Settled, client_name="amqp-conformance")
        self._handler_open(self.receiver)
        if not self.pull:
            # The link attaches with link_credit=0 (client.py:855 "link_credit=0 on flow frame sent before client is
            # ready"); the window is granted by the first connection iteration, AMQPClient.do_work() (public: "Run a
            # single connection iteration", client.py:428) -> ReceiveClient._client_run: `if
            # self._link.current_link_credit <= 0: self._link.flow(link_credit=self._link_credit)` (client.py:
            # 879-880), which every receive method runs first. An application that opens a consumer runs it.
            self.receiver.do_work()
        if self.pull:
            return {"api": "ReceiveClient(link_credit=1) as ServiceBusReceiver with prefetch_count=0; per receive "
                           "_link.flow(link_credit=n) then do_work() until the wait ends (no drain in the API)"}
        return {"api": f"ReceiveClient(link_credit={credit}), do_work() once after the attach (the credit is granted "
                       "there), receive_message_batch(max_batch_size=1, timeout)"}

    def receive(self, timeout_ms=1000, count=1, **_):
        got = []
        timeout_s = timeout_ms / 1000.0
        for _ in range(count):
            if self.pull:
                batch = self._pull_one(timeout_s)
            else:
                # ReceiveClient.receive_message_batch (client.py:960-994): "This method will return as soon as some
                # messages are available"; `timeout` is in seconds in the code (client.py:913 `time.time() +
                # timeout`), whatever its docstring says.
                batch = self.receiver.receive_message_batch(max_batch_size=1, timeout=timeout_s)
            if not batch:
                return {"messages": got, "timeout": True}
            got.extend(_body(m) for m in batch)
        return {"messages": got, "timeout": False}

    def _pull_one(self, timeout_s):
        """ServiceBusReceiver._receive with prefetch_count 0 and max_message_count 1 (_servicebus_receiver.py:
        393-470): take what is buffered; else reset the link credit to what is still needed
        (PyamqpTransport.reset_link_credit: `handler._link.flow(link_credit=link_credit)`, _pyamqp_transport.py:
        842-849) and run `do_work()` until a message came or the wait is over."""
        queue = self.receiver._received_messages
        if not queue.empty():
            return [queue.get()[1]]
        self.receiver._link.flow(link_credit=1)
        deadline = time.monotonic() + timeout_s
        while queue.empty() and time.monotonic() < deadline:
            # ServiceBusReceiver._receive: `receiving = amqp_receive_client.do_work()` (_servicebus_receiver.py:445)
            if not self.receiver.do_work():
                break
        return [queue.get()[1]] if not queue.empty() else []

    def stop(self, **_):
        # ServiceBusReceiver.close() -> ReceiveClient.close() (client.py:956, AMQPClient.close client.py:364):
        # detaches the link (closed=True) and ends the session; the shared connection stays open.
        self.receiver.close()
        return {"api": "ReceiveClient.close() (detach, end)"}

    # -- sender -------------------------------------------------------------------------------------------

    def sender_open(self, address, **_):
        # PyamqpTransport.create_send_client (_pyamqp_transport.py:529): `SendClient(hostname, target, ...)`,
        # opened on the shared connection as ServiceBusSender._open does.
        self.sender = SendClient(self.host, address, auth=self._auth(), client_name="amqp-conformance")
        self._handler_open(self.sender)
        return {"api": "SendClient(target), send_message(message, timeout)"}

    def send(self, count=1, timeout_ms=5000, **_):
        sent = 0
        for i in range(count):
            # SendClient.send_message (client.py:719-727): sends and waits for the outcome; `timeout` in seconds.
            # pyamqp's Message is the AMQP message type (message.py: `value` is the amqp-value body).
            try:
                self.sender.send_message(Message(value=f"m{i}"), timeout=timeout_ms / 1000.0)
            except Exception as exc:       # what the application was told
                return {"sent": sent, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
            sent += 1
        return {"sent": sent}

    # -- between commands ---------------------------------------------------------------------------------

    def pump(self):
        """Between commands, read the network as the SDK's keep-alive thread does (AMQPClient._keep_alive,
        client.py:246-257: `self._connection.listen(wait=..., batch=...)`), every 20 ms: the stack processes frames
        only inside its calls."""
        if self.conn is None or self.conn.state in (ConnectionState.END, None):
            return
        try:
            # AMQPClient._keep_alive: `self._connection.listen(wait=...)` (client.py:253)
            self.conn.listen(wait=0.02)
        except Exception as exc:           # an error the connection reported: the next answer carries it
            text = f"{type(exc).__name__}: {exc}"[:300]
            if text not in self.events:
                self.events.append(text)

    def poll(self, **_):
        """What happened since the last answer (`events`); _pyamqp hands the application no drain to report."""
        return {}

    def close(self, **_):
        for client in (self.receiver, self.sender):
            if client is not None:
                try:
                    # AMQPClient.close (client.py:364): detach, end; the shared connection stays
                    client.close()
                except Exception:          # already closed by the broker
                    pass
        self.receiver = self.sender = None
        if self.conn is not None:
            # Connection.close (_connection.py:846): sends close and disconnects the transport.
            self.conn.close()
            self.conn = None
        return {}


OPS = {"connect": "connect", "receiver": "receiver_open", "receive": "receive", "stop": "stop",
       "sender": "sender_open", "send": "send", "close": "close", "poll": "poll"}


def main():
    driver = Driver()
    print(json.dumps({"id": 0, "ok": True, "ready": True, "library": "azure-servicebus", "version": VERSION}),
          flush=True)
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], 0 if driver.conn is not None else None)
        if not ready:
            driver.pump()
            continue
        line = sys.stdin.readline()
        if not line:
            break
        if not line.strip():
            continue
        req = json.loads(line)
        rid, op = req.pop("id", None), req.pop("op", "")
        if op == "exit":
            break
        t0 = time.monotonic()
        try:
            if op not in OPS:
                raise ValueError(f"unknown op {op}")
            out = getattr(driver, OPS[op])(**req)
            answer = {"id": rid, "ok": True, **out}
        except Exception as exc:           # what the application was told
            answer = {"id": rid, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
            traceback.print_exc(file=sys.stderr)      # the driver's log (log_tail)
        if driver.events:
            answer["events"], driver.events = driver.events, []
        answer["ms"] = round((time.monotonic() - t0) * 1000)
        print(json.dumps(answer), flush=True)
    try:
        driver.close()
    except Exception:
        pass


if __name__ == "__main__":
    main()
