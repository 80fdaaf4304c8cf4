"""Releasing the gated pods of multi-node Jobs onto their nodes (see ``pinning``).

``Ungater`` is fed by the pod watch (``observe``, under the cluster's lock) and decides which
gated pod goes to which node; ``send`` (outside the lock) writes the patches. Decisions are
recorded before they are sent, so two pods seen in a row never take the same slot; a patch
that fails frees its slot and the pod is gated again (tried on the next pod or Job event); a
pod that is gone is dropped by its deletion event.

Terms: *owner* — the uid of the pod's Job (its ``controller-uid`` label); *placement of an
owner* — ``(node, GPUs)`` parts and GPUs per pod, given by the cluster for the Jobs it
started, None for others (their pods are left alone, gated or not).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starburst.adapters.kubernetes import pinning
from starburst.adapters.kubernetes.retry import is_transient, status_of

log = logging.getLogger(__name__)
Obj = dict[str, Any]
Key = tuple[str, str]
#: owner uid -> (node parts, GPUs per pod), None if Starburst did not start that Job
ATTEMPTS = 3
PlacementOf = Callable[[str], tuple[list[tuple[str, int]], int] | None]


@dataclass(frozen=True, slots=True)
class Release:
    key: Key
    owner: str
    node: str
    hostname: str
    patch: list[dict[str, Any]]
    pod: Obj


class Ungater:
    def __init__(self, placement_of: PlacementOf) -> None:
        self._placement_of = placement_of
        self._pods: dict[Key, tuple[str, str | None]] = {}  # unfinished pod -> (owner, node)
        self._gated: dict[Key, Obj] = {}  # gated pods not released yet

    def observe(self, kind: str, pod: Obj, owner: str, hostnames: Mapping[str, str]) -> None:
        """Track one pod event (caller holds the cluster's lock)."""
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        finished = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if kind == "DELETED" or finished or meta.get("deletionTimestamp"):
            self._pods.pop(key, None)
            self._gated.pop(key, None)
            return
        if pinning.gated(pod):
            self._pods.setdefault(key, (owner, None))
            if self._pods[key][1] is None:
                self._gated[key] = pod
            return
        by_host = {h: n for n, h in hostnames.items()}
        self._pods[key] = (owner, pinning.assigned_node(pod, by_host))
        self._gated.pop(key, None)

    def decide(self, hostnames: Mapping[str, str]) -> list[Release]:
        """Choose nodes for the gated pods whose Job's placement is known (caller holds the
        lock); each choice is recorded at once."""
        out = []
        for key, pod in sorted(self._gated.items()):
            owner = self._pods.get(key, ("", None))[0]
            placement = self._placement_of(owner) if owner else None
            if placement is None:
                continue
            parts, per_pod = placement
            counts: dict[str, int] = {}
            for other_owner, node in self._pods.values():
                if other_owner == owner and node is not None:
                    counts[node] = counts.get(node, 0) + 1
            node = pinning.choose(pinning.quota(parts, per_pod), counts)
            if node is None:
                continue  # every slot is taken: a pod finishes first, then this one goes
            del self._gated[key]
            self._pods[key] = (owner, node)
            hostname = hostnames.get(node, node)
            out.append(
                Release(key, owner, node, hostname, pinning.release_patch(pod, hostname), pod)
            )
        return out

    def undo(self, release: Release) -> None:
        """A release that could not be written frees its slot; the pod is tried again on the
        next event (caller holds the lock)."""
        if self._pods.get(release.key) == (release.owner, release.node):
            self._pods[release.key] = (release.owner, None)
            self._gated[release.key] = release.pod

    def send(self, core: Any, releases: list[Release], undo: Callable[[Release], None]) -> None:
        """Write the releases (no lock held). A transient failure is retried a few times at
        once (a pod left gated has no event to bring it back soon); one that still fails is
        undone."""
        for release in releases:
            for attempt in range(1, ATTEMPTS + 1):
                error = self._send_one(core, release)
                if error is None or status_of(error) == 404 or not is_transient(error):
                    break
                time.sleep(0.1 * attempt)
            if error is not None:
                if status_of(error) != 404:
                    log.warning(
                        "could not release pod %s/%s onto %s: %r", *release.key, release.node, error
                    )
                undo(release)

    @staticmethod
    def _send_one(core: Any, release: Release) -> BaseException | None:
        namespace, name = release.key
        try:
            response = core.patch_namespaced_pod(
                name, namespace, release.patch, _preload_content=False
            )
            try:
                response.read()  # a half-read body would corrupt the pooled connection
            finally:
                response.release_conn()
        except Exception as err:
            return err
        return None
