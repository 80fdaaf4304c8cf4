"""A loopback TCP proxy a test can cut: the network between a client and an API server.

``TcpProxy(port)`` listens on a free loopback port and forwards every connection, byte for
byte (TLS passes through untouched: the server's certificate is valid for 127.0.0.1 whatever
the port), to ``127.0.0.1:<port>``. What a test can do to it:
- ``cut()``: close every open connection at once, in both directions, mid-stream (a dropped
  connection, a load balancer restarting); returns how many were open;
- ``down()`` / ``up(port=None)``: refuse new connections (closing each as soon as it is
  accepted) until ``up``, which may point the proxy at another server (a failover to another
  API server replica behind the same address).

Threads: one accepting, two per connection (one per direction); ``close()`` ends them all.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.accepted = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._refusing = False
        self._closing = False
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> TcpProxy:
        self._thread.start()
        return self

    def cut(self) -> int:
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            _close(sock)
        return len(sockets) // 2

    def down(self) -> int:
        """Refuse new connections and cut the open ones (how many were open)."""
        with self._lock:
            self._refusing = True
        return self.cut()

    def up(self, target_port: int | None = None) -> None:
        with self._lock:
            if target_port is not None:
                self.target_port = target_port
            self._refusing = False

    def close(self) -> None:
        self._closing = True
        self.down()
        _close(self._listener)
        self._thread.join(10)

    # -- the forwarding --------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closing:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # the listener was closed
            with self._lock:
                refusing, port = self._refusing, self.target_port
            if refusing:
                _close(client)
                continue
            try:
                server = socket.create_connection(("127.0.0.1", port), timeout=10)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            with self._lock:
                self.accepted += 1
                self._open.update((client, server))
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass  # cut, or the other side went away
        finally:
            with self._lock:
                self._open.difference_update((src, dst))
            _close(src)
            _close(dst)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
