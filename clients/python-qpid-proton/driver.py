"""Client driver for python-qpid-proton (its BlockingConnection API), speaking the suite's JSON-lines
command protocol (clients/PROTOCOL.md) on stdin/stdout. Started by the suite with the library on sys.path."""

import json
import select
import sys
import time

import proton
from proton import Message
from proton.utils import BlockingConnection


class Driver:
    def __init__(self):
        self.conn = None
        self.receiver = None
        self.sender = None

    def connect(self, url, timeout_ms=5000, **_):
        self.conn = BlockingConnection(url, timeout=timeout_ms / 1000.0, allowed_mechs="ANONYMOUS")
        return {}

    def receiver_open(self, address, credit=0, **_):
        self.receiver = self.conn.create_receiver(address, credit=credit or None)
        return {"api": f"create_receiver(credit={credit or None})"}

    def receive(self, timeout_ms=1000, count=1, **_):
        got = []
        for _ in range(count):
            try:
                msg = self.receiver.receive(timeout=timeout_ms / 1000.0)
            except proton.Timeout:
                return {"messages": got, "timeout": True}
            got.append(str(msg.body))
            self.receiver.accept()
        return {"messages": got, "timeout": False}

    def stop(self, **_):
        self.receiver.close()
        return {"api": "receiver.close()"}

    def sender_open(self, address, **_):
        self.sender = self.conn.create_sender(address)
        return {}

    def send(self, count=1, timeout_ms=5000, **_):
        sent = 0
        for i in range(count):
            self.sender.send(Message(body=f"m{i}"), timeout=timeout_ms / 1000.0)
            sent += 1
        return {"sent": sent}

    def pump(self):
        """Between commands, let proton process the network as an application's event loop would (the
        blocking API does I/O only inside its calls): 20 ms of wait() on a condition that never holds."""
        if self.conn is None:
            return
        try:
            self.conn.wait(lambda: False, timeout=0.02)
        except proton.Timeout:
            pass
        except Exception:      # an error the connection reported: the next command sees it
            pass

    def close(self, **_):
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        return {}


OPS = {"connect": "connect", "receiver": "receiver_open", "receive": "receive", "stop": "stop",
       "sender": "sender_open", "send": "send", "close": "close"}


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
            out = getattr(driver, OPS[op])(**req)
            answer = {"id": rid, "ok": True, **out}
        except Exception as exc:           # what the application saw
            answer = {"id": rid, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
        answer["ms"] = round((time.monotonic() - t0) * 1000)
        print(json.dumps(answer), flush=True)
    driver.close()


if __name__ == "__main__":
    main()
