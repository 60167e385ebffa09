"""A TCP server on 127.0.0.1 that accepts connections, reads what it is sent, and never answers:
what a firewalled or hung AWS or Kubernetes endpoint looks like to a client."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator


def start_silent_server() -> Iterator[str]:
    """Generator for a pytest fixture: yields `http://127.0.0.1:PORT`, stops it afterwards."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            held.append(connection)  # kept open, never written to

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in held:
            connection.close()
        listener.close()
