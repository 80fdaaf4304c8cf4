"""The doctor's leader line under ``leader_election: lease``, on any Kubernetes API.

One scenario for the stand-in (``test_doctor_lease.py``) and the real control plane
(``test_doctor_real_kube.py``): nobody has led (no Lease); a replica takes the Lease through the
controller's own wiring (``build_leader_lock``) and holds it (the store's lock is never taken:
the old line said "nobody holds the lock now"); the holder dies without handing it back (judged
at a later time: expired); the holder releases it (released, nobody leads).
"""

from __future__ import annotations

import time
from pathlib import Path

from starburst.adapters.db.store import SqlStore
from starburst.adapters.kubernetes.lease import LeaseLock
from starburst.controller.wiring import build_leader_lock
from starburst.doctor import Check, run_checks
from starburst.settings import Settings, load_settings


def lease_settings(db: str, kubeconfig: Path, namespace: str) -> Settings:
    return load_settings(
        database_url=db,
        kubeconfig=str(kubeconfig),
        leader_election="lease",
        lease_namespace=namespace,
        lease_duration_s=15.0,
    )


def leader_line(settings: Settings, now: float | None = None) -> Check:
    (line,) = [c for c in run_checks(settings, now=now) if c.name == "leader"]
    return line


def run(settings: Settings) -> None:
    where = f"{settings.lease_namespace}/starburst-controller"
    nobody = leader_line(settings)
    assert not nobody.ok and f"no Lease {where}" in nobody.detail, nobody
    assert "starburst server" in (nobody.fix or "")

    store = SqlStore.open(settings.database_url)
    lock = build_leader_lock(settings, store)
    try:
        assert lock.try_acquire() == 1
        assert isinstance(lock, LeaseLock)
        holder = lock.identity
        held = leader_line(settings)
        assert held.ok, held
        assert held.detail.startswith(f"{holder} holds Lease {where}, renewed "), held
        assert "expires in" in held.detail and "term 1 since" in held.detail, held

        later = leader_line(settings, now=time.time() + 60)  # it stopped renewing a minute ago
        assert not later.ok and f"held by {holder}" in later.detail, later
        assert "expired" in later.detail and "it lasts 15s" in later.detail, later
        assert "standby" in (later.fix or "")
    finally:
        lock.close()  # hands the Lease back
        store.close()
    released = leader_line(settings)
    assert not released.ok and f"Lease {where} was released" in released.detail, released
    assert "nobody leads" in released.detail and "term 1 since" in released.detail
