"""Client driver for python-qpid-proton (its BlockingConnection API), speaking the suite's JSON-lines
command protocol (clients/PROTOCOL.md) on stdin/stdout. Started by the suite with the library on sys.path.

Every call into the library carries a comment citing the library's own documentation or example for it, at
the pinned releases (0.39.0, 0.40.0): `proton/_utils.py` is the module `proton.utils` documents, and
`examples/python/helloworld_blocking.py` is the library's example of this API. BlockingConnection hands the
application no drain of a sender to answer (its BlockingSender has `send` only; proton-c leaves a drain to the
application's `Link.drained()`, which only the event API's handlers see): this driver reports no `drains`.
"""

import json
import select
import sys
import time

import proton
from proton import Link, Message
from proton.utils import BlockingConnection


class Driver:
    def __init__(self):
        self.conn = None
        self.receiver = None
        self.sender = None
        self.events = []        # errors the library told the application between commands, not yet reported

    def connect(self, url, timeout_ms=5000, **_):
        # helloworld_blocking.py: conn = BlockingConnection("localhost:5672"); _utils.py BlockingConnection:
        # "timeout" and "**kwargs: Container keyword arguments" (Container.connect: allowed_mechs)
        self.conn = BlockingConnection(url, timeout=timeout_ms / 1000.0, allowed_mechs="ANONYMOUS")
        return {}

    def receiver_open(self, address, credit=0, **_):
        # helloworld_blocking.py: receiver = conn.create_receiver("examples"); _utils.py create_receiver:
        # ":param credit: Initial link flow credit. If not set, will default to 1."
        self.receiver = self.conn.create_receiver(address, credit=credit or None)
        return {"api": f"create_receiver(credit={credit or None})"}

    def receive(self, timeout_ms=1000, count=1, **_):
        got, settle_errors = [], []
        for _ in range(count):
            try:
                # helloworld_blocking.py: msg = receiver.receive(timeout=30); _utils.py BlockingReceiver.receive:
                # "Blocking receive call which will return only when a message is received or a timeout
                # (if supplied) occurs" (the timeout raises proton.Timeout)
                msg = self.receiver.receive(timeout=timeout_ms / 1000.0)
            except proton.Timeout:
                return {"messages": got, "timeout": True, **({"settle_errors": settle_errors} if settle_errors else {})}
            got.append(str(msg.body))          # what the library returned to the application
            # _endpoints.py Link.remote_snd_settle_mode: "The remote sender settle mode for this link"; _utils.py
            # Fetcher.pop: "If the message is unsettled, its delivery object is moved onto the unsettled queue,
            # and can be settled with a call to settle()": a sender that settles every message (SND_SETTLED)
            # leaves nothing to settle
            if self.receiver.link.remote_snd_settle_mode != Link.SND_SETTLED:
                try:
                    # helloworld_blocking.py: receiver.accept(); _utils.py accept: "Accept and settle the
                    # received message"
                    self.receiver.accept()
                except Exception as exc:      # the application's settle failed; the message was still received
                    settle_errors.append(f"{type(exc).__name__}: {exc}"[:200])
        return {"messages": got, "timeout": False, **({"settle_errors": settle_errors} if settle_errors else {})}

    def stop(self, **_):
        # _utils.py BlockingLink.close: "Close the link."
        self.receiver.close()
        return {"api": "receiver.close()"}

    def sender_open(self, address, **_):
        # helloworld_blocking.py: sender = conn.create_sender("examples")
        self.sender = self.conn.create_sender(address)
        return {}

    def send(self, count=1, timeout_ms=5000, **_):
        sent = 0
        for i in range(count):
            # helloworld_blocking.py: sender.send(Message(body="Hello World!")); _utils.py BlockingSender.send:
            # "Blocking send which will return only when the send is complete and the message settled"
            self.sender.send(Message(body=f"m{i}"), timeout=timeout_ms / 1000.0)
            sent += 1
        return {"sent": sent}

    def pump(self):
        """Between commands, let proton process the network as an application that keeps its connection
        serviced does: 20 ms of `wait()` on a condition that never holds. An error the library raises there is
        what the application was told (`events`); once it says the connection is gone (ConnectionException:
        "disconnected", ConnectionClosed) the application closes it, as an application does with a dead
        connection (proton then writes the close its transport holds)."""
        if self.conn is None:
            return
        try:
            # _utils.py BlockingConnection.wait: "Process events until condition() returns True"
            self.conn.wait(lambda: False, timeout=0.02)
        except proton.Timeout:
            pass
        except proton.ConnectionException as exc:
            self.events.append(f"{type(exc).__name__}: {exc}"[:300])
            try:
                # helloworld_blocking.py: conn.close(); _utils.py BlockingConnection.close: "Close the connection."
                self.conn.close()
            except Exception as again:
                self.events.append(f"{type(again).__name__}: {again}"[:300])
            self.conn = None
        except Exception as exc:      # another error the library raised: the application was told
            self.events.append(f"{type(exc).__name__}: {exc}"[:300])

    def poll(self, **_):
        return {}

    def close(self, **_):
        if self.conn is not None:
            # helloworld_blocking.py: conn.close()
            self.conn.close()
            self.conn = None
        return {}


OPS = {"connect": "connect", "receiver": "receiver_open", "receive": "receive", "stop": "stop",
       "sender": "sender_open", "send": "send", "close": "close", "poll": "poll"}


def main():
    driver = Driver()
    print(json.dumps({"id": 0, "ok": True, "ready": True, "library": "python-qpid-proton",
                      "version": proton.VERSION and ".".join(map(str, proton.VERSION))}), flush=True)
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
            out = getattr(driver, OPS[op])(**req) if op in OPS else None
            answer = {"id": rid, "ok": True, **out} if out is not None else {"id": rid, "ok": False,
                                                                            "error": f"unknown op {op}"}
        except Exception as exc:           # what the application was told (the library's exception)
            answer = {"id": rid, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
        if driver.events:
            answer["events"], driver.events = driver.events, []
        answer["ms"] = round((time.monotonic() - t0) * 1000)
        print(json.dumps(answer), flush=True)
    driver.close()


if __name__ == "__main__":
    main()
