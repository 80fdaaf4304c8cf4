"""Notice at once that a job's process ended, so the controller runs its next pass now.

The backends find ends when the controller asks (``snapshot``/``ended``/``poll``), i.e. at the
next pass. ``EndWatch`` makes that pass come promptly: a daemon thread looks at the watched
processes every ``interval`` seconds and calls the ``listener`` when one has ended. It only
*observes* — through ``/proc``, never by reaping — so the backend, on the controller's
thread, still reaps, dates and reports every end exactly once.

Terms: a *watched* process is a spawn's wrapper (pid and spawn token, ``procfs.alive``). A
zombie counts as ended: its exit status is on disk before the wrapper exits.

Invariants: nothing is watched while there is no listener; the thread runs only while some
process is watched and exits when none is (no thread, no cost for an idle backend); the
listener is called from that thread, outside the watch's lock, at most once per look however
many processes ended; an exception in it is logged, never kills the thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from starburst.adapters.local import procfs

log = logging.getLogger(__name__)


class EndWatch:
    """Calls its ``listener`` soon after any watched process ends."""

    def __init__(self, interval: float = 0.1) -> None:
        self.listener: Callable[[], None] | None = None
        self._interval = interval
        self._lock = threading.Lock()
        self._watched: dict[int, str] = {}  # pid -> spawn token
        self._thread: threading.Thread | None = None

    def listen(
        self, listener: Callable[[], None] | None, running: Iterable[tuple[int, str]] = ()
    ) -> None:
        """Set (or clear) the listener, and watch the ``(pid, token)`` processes running now."""
        self.listener = listener
        for pid, token in running:
            self.add(pid, token)

    def add(self, pid: int, token: str) -> None:
        """Watch the spawn's process until it ends (if anyone listens)."""
        if self.listener is None:
            return
        with self._lock:
            self._watched[pid] = token
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="starburst-end-watch", daemon=True
                )
                self._thread.start()

    @property
    def watching(self) -> int:
        with self._lock:
            return len(self._watched)

    def _run(self) -> None:
        while True:
            time.sleep(self._interval)
            with self._lock:
                ended = [
                    pid for pid, token in self._watched.items() if not procfs.alive(pid, token)
                ]
                for pid in ended:
                    del self._watched[pid]
                if not self._watched:
                    self._thread = None  # the next ``add`` starts a new thread
            listener = self.listener
            if ended and listener is not None:
                try:
                    listener()
                except Exception:
                    log.exception("notifying a job's end failed")
            if self._thread is not threading.current_thread():
                return
