"""Leader election with a Kubernetes Lease, for controller replicas running in the cluster.

The same contract as the store's leader lock (``starburst.adapters.db.leader.LeaderLock``):
one replica holds it, its fencing token guards every write it makes, a standby takes over
within a bounded time when the holder dies. Election happens on a
``coordination.k8s.io/v1`` Lease; fencing stays in the database, so a deposed leader's writes
are refused however late they arrive.

Terms:
- *holder*: ``spec.holderIdentity`` (``host:pid`` of the replica); empty when released.
- *duration*: ``spec.leaseDurationSeconds``. The holder renews ``spec.renewTime`` every third
  of it from a background thread; a holder that could not renew for two thirds of it stops
  calling itself leader (it fences itself before anyone can take over).
- *expired*: as in client-go's leader election, a standby judges by its own clock, not the
  holder's timestamps (clocks differ between nodes): a Lease whose holder and renew time
  have not changed for ``duration`` seconds *since this replica first saw them* is expired.
  So a standby takes over within ``duration`` (plus one attempt) of the holder's last renewal
  it observed.
- *fencing token*: on every acquisition the store hands out the next token of the lock's
  name (``next_token``), after the Lease is won, so tokens grow in the order leaders won.

Invariants: every write to the Lease is an optimistic update on the ``resourceVersion`` just
read (a 409 means someone else wrote first: this attempt lost); ``spec.leaseTransitions``
counts changes of holder; the API's errors never escape as SDK exceptions (``try_acquire``
raise Starburst's ``TransientError``/``PermanentError``, the renewal thread retries).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from starburst.adapters.kubernetes.retry import status_of, translate
from starburst.core.leadership import LeaderLockBusy

log = logging.getLogger(__name__)
Obj = dict[str, Any]


class LeaseBusy(LeaderLockBusy):
    """Another replica holds the Lease (``acquire`` timed out)."""


def _now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseLock:
    """A ``LeaderLock`` on the Lease ``name`` in ``namespace`` (see the module docstring)."""

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        name: str,
        identity: str,
        next_token: Callable[[], int],
        duration: float = 15.0,
        owns_client: bool = False,
    ) -> None:
        from kubernetes import client

        self._client = api_client if owns_client else None  # closed by ``close``
        self._api = client.CoordinationV1Api(api_client)
        self.namespace, self.name, self.identity = namespace, name, identity
        self.duration = duration
        self._next_token = next_token
        self._lock = threading.Lock()
        self._token: int | None = None
        self._renewed = 0.0  # monotonic time of the last successful write as holder
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the LeaderLock contract -------------------------------------------------------------
    @property
    def token(self) -> int | None:
        return self._token if self.is_held() else None

    def try_acquire(self) -> int | None:
        if self.is_held():
            return self._token
        try:
            won = self._take()
        except Exception as err:  # transient: the daemon steps down and retries
            raise translate(err, f"taking the lease {self.namespace}/{self.name}") from err
        if not won:
            return None
        token = self._next_token()
        with self._lock:
            self._token, self._renewed = token, time.monotonic()
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=self._renew_loop, args=(self._stop,), name="starburst-lease", daemon=True
            )
            self._thread.start()
        return token

    def acquire(self, timeout: float | None = None) -> int:
        give_up = None if timeout is None else time.monotonic() + timeout
        while True:
            token = self.try_acquire()
            if token is not None:
                return token
            if give_up is not None and time.monotonic() >= give_up:
                raise LeaseBusy(f"lease {self.namespace}/{self.name} is held by another replica")
            time.sleep(min(1.0, self.duration / 10))

    def is_held(self) -> bool:
        with self._lock:
            if self._token is None:
                return False
            if time.monotonic() - self._renewed > self.duration * 2 / 3:
                self._lose("could not renew the lease in time")
                return False
            return True

    def release(self) -> None:
        """Stop renewing and, if this replica still holds the Lease, hand it back at once."""
        with self._lock:
            held, self._token = self._token is not None, None
            self._stop.set()
            thread = self._thread
        if not held:
            return
        # a renewal in flight would write a newer version of the Lease after our read, and
        # our hand-back would then fail as a conflict, leaving the Lease to expire
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self.duration)
        try:
            for _ in range(3):  # another write in between (409): read again
                lease, version = self._read()
                if lease is None or _spec(lease).get("holderIdentity") != self.identity:
                    return
                if self._hand_back(lease, version):
                    return
        except Exception as err:  # the lease then simply expires
            log.info("lease %s/%s: release failed: %s", self.namespace, self.name, err)

    def close(self) -> None:
        """Release, and close the API client if this lock was given it to own (after the
        renewal thread, which may be mid-request, has finished)."""
        self.release()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self.duration)
        if self._client is not None:
            self._client.close()
            self._client = None

    def abandon(self) -> None:
        """Stop renewing without handing the Lease back, as a replica that died would."""
        with self._lock:
            self._stop.set()

    # -- election ------------------------------------------------------------------------------
    def _take(self) -> bool:
        lease, version = self._read()
        now = _now_text()
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._holding(now, now, 0),
            }
            return self._write(lambda: self._api.create_namespaced_lease(self.namespace, body))
        spec = _spec(lease)
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity and not self._expired(holder, spec):
            return False
        transitions = int(spec.get("leaseTransitions") or 0) + (holder != self.identity)
        return self._write(
            lambda: self._replace(lease, version, self._holding(now, now, transitions))
        )

    def _expired(self, holder: str, spec: Obj) -> bool:
        """Judged by this replica's clock and the holder's announced duration."""
        seen = (holder, str(spec.get("renewTime")))
        if seen != self._observed:
            self._observed, self._observed_at = seen, time.monotonic()
            return False
        limit = float(spec.get("leaseDurationSeconds") or self.duration)
        return time.monotonic() - self._observed_at > limit

    def _holding(self, acquired: str, renewed: str, transitions: int) -> Obj:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": _seconds(self.duration),
            "acquireTime": acquired,
            "renewTime": renewed,
            "leaseTransitions": transitions,
        }

    # -- renewal -------------------------------------------------------------------------------
    def _renew_loop(self, stop: threading.Event) -> None:
        while not stop.wait(self.duration / 3):
            try:
                renewed = self._renew()
            except Exception as err:  # transient: retried until two thirds of the duration
                log.info("lease %s/%s: renewal failed: %s", self.namespace, self.name, err)
                continue
            with self._lock:
                if stop.is_set():
                    return
                if renewed:
                    self._renewed = time.monotonic()
                else:
                    self._lose("another replica holds the lease")
                    return

    def _hand_back(self, lease: Obj, version: str | None) -> bool:
        spec = {**_spec(lease), "holderIdentity": None, "renewTime": _now_text()}
        return self._write(lambda: self._replace(lease, version, spec))

    def _renew(self) -> bool:
        lease, version = self._read()
        if lease is None or _spec(lease).get("holderIdentity") != self.identity:
            return False
        spec = {
            **_spec(lease),
            "renewTime": _now_text(),
            "leaseDurationSeconds": _seconds(self.duration),
        }
        return self._write(lambda: self._replace(lease, version, spec))

    def _lose(self, why: str) -> None:
        """Called with ``_lock`` held."""
        if self._token is not None:
            log.warning("lease %s/%s lost: %s", self.namespace, self.name, why)
        self._token = None
        self._stop.set()

    # -- API calls -----------------------------------------------------------------------------
    def _read(self) -> tuple[Obj | None, str | None]:
        # typed responses (not ``_preload_content=False``): an error answer is read in full
        # and its connection goes back to the pool
        try:
            typed = self._api.read_namespaced_lease(self.name, self.namespace)
        except Exception as err:
            if status_of(err) == 404:
                return None, None
            raise
        lease: Obj = self._api.api_client.sanitize_for_serialization(typed)
        return lease, lease["metadata"].get("resourceVersion")

    def _replace(self, lease: Obj, version: str | None, spec: Obj) -> Any:
        body = {
            **lease,
            "metadata": {**lease["metadata"], "resourceVersion": version},
            "spec": spec,
        }
        return self._api.replace_namespaced_lease(self.name, self.namespace, body)

    @staticmethod
    def _write(call: Callable[[], Any]) -> bool:
        """True if the write went through; False if another replica wrote first (409)."""
        try:
            call()
        except Exception as err:
            if status_of(err) == 409:
                return False
            raise
        return True


def _spec(lease: Obj) -> Obj:
    spec: Obj = lease.get("spec") or {}
    return spec


def _seconds(duration: float) -> int:
    return max(1, round(duration))
