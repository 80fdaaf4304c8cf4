"""The doctor's leader line under ``leader_election: lease`` (what the Helm chart sets).

Replicas then elect their leader on the Kubernetes Lease ``starburst-<leader_name>`` in
``lease_namespace`` (``starburst.adapters.kubernetes.lease``); the store's lock is never taken,
so probing it would say nobody leads. This reads the Lease instead (a ``get``, which
``rbac.yaml`` grants), without writing it:
- *holder*: ``spec.holderIdentity`` (``host:pid:id`` of the replica); empty once released;
- *renewed*: ``spec.renewTime``, which the holder moves every third of
  ``spec.leaseDurationSeconds``;
- *expired*: ``renewTime + leaseDurationSeconds`` is past, by this machine's clock (a standby
  judges by its own observations instead; a clock far off from the holder's can make this line
  wrong, so the detail shows both times).
The fencing term of the current leader still comes from the database (``leader_terms``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starburst.doctor.checks import Check, failed
from starburst.settings import Settings

START = "start the controller: starburst server (or starburst controller)"


def lease_name(settings: Settings) -> str:
    return f"starburst-{settings.leader_name}"


def lease_leader(settings: Settings, now: float, term: str | None) -> Check:
    """The leader line from the Lease; ``term`` is the database's newest term, if any."""
    from starburst.controller.wiring import kube_api_client

    where = f"{settings.lease_namespace}/{lease_name(settings)}"
    try:
        api = kube_api_client(settings)
    except Exception as exc:
        return failed("leader", exc, "set kubeconfig (or run in the cluster)")
    try:
        lease = _read(api, settings)
    except Exception as exc:
        return failed(
            "leader",
            exc,
            f"let this identity get leases in {settings.lease_namespace} (rbac.yaml) "
            "and check the kubeconfig",
        )
    finally:
        api.close()
    if lease is None:
        return Check("leader", False, f"no Lease {where}: no controller has led here", START)
    spec = lease.spec
    holder, renewed = spec.holder_identity or "", spec.renew_time
    duration = float(spec.lease_duration_seconds or settings.lease_duration_s)
    terms = f"; {term}" if term else ""
    if not holder:
        return Check(
            "leader", False, f"Lease {where} was released{_at(renewed)}; nobody leads{terms}", START
        )
    if renewed is None:
        return Check("leader", False, f"Lease {where} held by {holder}, never renewed", START)
    age = now - renewed.astimezone(UTC).timestamp()
    left = duration - age
    stamp = f"renewed {renewed.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC ({age:.0f}s ago)"
    if left < 0:
        return Check(
            "leader",
            False,
            f"Lease {where} held by {holder}, {stamp}: expired {-left:.0f}s ago "
            f"(it lasts {duration:.0f}s){terms}",
            "its holder is gone or cannot reach the API server: check the controller pods; a "
            "standby takes the Lease over within its duration",
        )
    return Check(
        "leader", True, f"{holder} holds Lease {where}, {stamp}, expires in {left:.0f}s{terms}"
    )


def _read(api: Any, settings: Settings) -> Any:
    from kubernetes import client

    try:
        return client.CoordinationV1Api(api).read_namespaced_lease(
            lease_name(settings), settings.lease_namespace, _request_timeout=10
        )
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise RuntimeError(
            f"reading Lease {settings.lease_namespace}/{lease_name(settings)}: "
            f"HTTP {exc.status} {exc.reason}"
        ) from None


def _at(moment: datetime | None) -> str:
    return f" at {moment.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" if moment else ""
