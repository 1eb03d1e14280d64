"""A small python-qpid-proton application for the capture tests: publish N messages, consume them.

Usage: python proton_app.py URL ADDRESS N  (the tests run it as a separate process while tshark captures).
"""

import sys

from proton import Message
from proton.utils import BlockingConnection


def main(url: str, address: str, n: int) -> int:
    conn = BlockingConnection(url, timeout=20)
    try:
        sender = conn.create_sender(address)
        for k in range(n):
            sender.send(Message(body=f"message {k}"))
        receiver = conn.create_receiver(address, credit=10)
        for _ in range(n):
            receiver.receive(timeout=20)
            receiver.accept()
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
