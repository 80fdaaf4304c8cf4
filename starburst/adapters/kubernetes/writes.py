"""The adapter's calls that change the cluster: Job creates, patches and reads, and Events.

Bodies go out and come back as plain JSON dicts (``_preload_content=False``; no model
(de)serialisation). Every response is read fully before its connection goes back to the pool
(a half-read one would corrupt the next request on it). Events are a courtesy: a failure to
write one is logged, never raised (the decision itself is already recorded).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from starburst.adapters.kubernetes import conversion as conv
from starburst.core.ports import Clock

log = logging.getLogger(__name__)
Obj = dict[str, Any]
#: What a namespace may be named (an RFC 1123 label).
NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def read_json(response: Any) -> Obj:
    """The body of a raw response, read fully before the connection goes back to the pool."""
    try:
        result: Obj = json.loads(response.data)
    finally:
        response.release_conn()
    return result


class Writes:
    def __init__(self, batch: Any, core: Any, clock: Clock) -> None:
        self._batch, self._core, self._clock = batch, core, clock

    def create(self, namespace: str, body: Obj) -> Obj:
        return read_json(self._batch.create_namespaced_job(namespace, body, _preload_content=False))

    def patch(self, meta: Obj, body: Obj) -> Obj:
        return read_json(
            self._batch.patch_namespaced_job(
                meta["name"], meta["namespace"], body, _preload_content=False
            )
        )

    def read(self, meta: Obj) -> Obj:
        return read_json(
            self._batch.read_namespaced_job(meta["name"], meta["namespace"], _preload_content=False)
        )

    def left_queue(self, meta: Obj) -> bool:
        """Whether the Job a queue-labelled watch reported DELETED still exists without the
        queue label (``kubectl label job X starburst.io/queue-``: a watch with a label
        selector sends an object that stops matching as DELETED); a failed read: no."""
        try:
            labels = self.read(meta)["metadata"].get("labels") or {}
        except Exception:  # gone (404), or unknown: it was deleted, as the watch said
            return False
        return conv.QUEUE_LABEL not in labels

    def event(self, obj: Obj, reason: str, message: str, kind: str = "Normal") -> None:
        body = conv.event_body(obj, reason, message, self._clock.now(), kind)
        try:
            read_json(
                self._core.create_namespaced_event(
                    obj["metadata"]["namespace"], body, _preload_content=False
                )
            )
        except Exception:  # an Event is a courtesy: the decision itself is already recorded
            log.warning(
                "could not record the %s event on %s",
                reason,
                obj["metadata"]["name"],
                exc_info=True,
            )

    def namespace_event(self, namespace: str, fallback: str, reason: str, message: str) -> None:
        """An Event about a whole namespace (a team's budget) in ``namespace``, or in
        ``fallback`` when the name cannot be a namespace or the namespace is not there."""
        for where in ([namespace] if NAMESPACE.fullmatch(namespace) else []) + [fallback]:
            body = conv.namespace_event_body(where, reason, message, self._clock.now())
            try:
                read_json(self._core.create_namespaced_event(where, body, _preload_content=False))
                return
            except Exception:  # an Event is a courtesy: the alert is logged and counted
                log.warning("could not record the %s event in %s", reason, where, exc_info=True)
