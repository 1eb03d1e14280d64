"""python-qpid-proton applications as people write them: each connection sends M messages to its own queue and
receives them back, a sender and a receiver on that queue, with the Container's default link names (both
links to one address are then named alike, `<container-id>-<address>`) or with distinct names.

Usage: python proton_pairs.py URL CONNECTIONS MESSAGES default|distinct [QUEUE-PREFIX]
(the tests and the acceptance captures run it as a separate process while tshark captures or `observe`
forwards). Exit 0 when every connection received its M messages within 60 s, else 1 naming what is missing.
"""

import sys
import uuid

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

TIMEOUT_S = 60.0


class Pairs(MessagingHandler):
    """N connections, each a sender and a receiver on one queue (the receiver's credit is proton's prefetch)."""

    def __init__(self, url: str, connections: int, messages: int, names: str, prefix: str):
        super().__init__(prefetch=10)
        self.url, self.messages, self.names = url, messages, names
        self.queues = [f"{prefix}-{k}" for k in range(connections)]
        self.sent: dict = {}
        self.received: dict = {q: 0 for q in self.queues}
        self.closed = 0
        self.timer = None

    def on_start(self, event):
        self.timer = event.container.schedule(TIMEOUT_S, self)
        for queue in self.queues:
            conn = event.container.connect(self.url)
            # default names: proton names both links `<container-id>-<queue>` (Container._get_id), as an
            # application that passes no `name=` gets them
            distinct = self.names == "distinct"
            snd = event.container.create_sender(conn, queue, name=f"{queue}-sender" if distinct else None)
            rcv = event.container.create_receiver(conn, queue, name=f"{queue}-receiver" if distinct else None)
            self.sent[snd] = 0
            snd.queue = rcv.queue = queue

    def on_sendable(self, event):
        snd = event.sender
        while snd.credit and self.sent[snd] < self.messages:
            snd.send(Message(body=f"{snd.queue} message {self.sent[snd]}"))
            self.sent[snd] += 1

    def on_message(self, event):
        queue = event.receiver.queue
        self.received[queue] += 1
        if self.received[queue] == self.messages:
            event.connection.close()

    def on_connection_closed(self, event):
        self.closed += 1
        if self.closed == len(self.queues) and self.timer is not None:
            self.timer.cancel()

    def on_timer_task(self, event):
        for q, n in self.received.items():
            if n < self.messages:
                print(f"{q}: {n} of {self.messages} received within {TIMEOUT_S:g} s", file=sys.stderr)
        event.container.stop()


def main(url: str, connections: int, messages: int, names: str, prefix: str | None = None) -> int:
    if names not in ("default", "distinct"):
        print("names must be default or distinct", file=sys.stderr)
        return 2
    prefix = prefix or f"pairs-{uuid.uuid4().hex[:8]}"
    app = Pairs(url, connections, messages, names, prefix)
    container = Container(app)
    container.container_id = f"{prefix}-app"
    container.run()
    missing = [q for q, n in app.received.items() if n < messages]
    print(f"{connections - len(missing)} of {connections} connections received their {messages} messages")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4],
                  sys.argv[5] if len(sys.argv) > 5 else None))
