"""Watches: the changes after a resourceVersion, filtered as the client asked.

Terms: a watch starts either from *now with the current state* (no resourceVersion, or "0":
one synthetic ADDED per matching object, then changes) or *after rv R* (only changes with
rv > R). A watch from an rv older than the store's history window is *expired*: the stream
carries one ``ERROR`` event whose object is a ``Status`` with code 410 / reason ``Expired``.

Selector semantics follow the API server: a MODIFIED object that starts matching the
selectors arrives as ADDED, one that stops matching as DELETED carrying its *previous* state
(the last one that matched) at the change's resourceVersion, as the real watch cache sends it
(a differential finding: the stand-in once sent the new state).
A *bookmark* (``allowWatchBookmarks``) is an object of the watched kind carrying only
``metadata.resourceVersion``: the client may resume from it without missing anything.
"""

from __future__ import annotations

from typing import Any

from tests.kubeapi.resources import ResourceType
from tests.kubeapi.selectors import (
    FieldSelector,
    LabelSelector,
    fields_match,
    labels_match,
)
from tests.kubeapi.status import expired
from tests.kubeapi.store import Obj, Store

Event = tuple[str, dict[str, Any]]


def _too_old(rv: int, compacted: int) -> Exception:
    return expired(f"too old resource version: {rv} ({compacted})")


class Watcher:
    def __init__(
        self,
        store: Store,
        rt: ResourceType,
        ns: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        resource_version: str | None,
    ) -> None:
        self.store, self.rt, self.ns = store, rt, ns
        self.labels, self.fields = labels, fields
        self.initial: list[Event] = []
        with store.lock:
            if resource_version in (None, "", "0"):
                items, rv = store.select(rt, ns, labels, fields)
                self.initial = [("ADDED", obj) for obj in items]
                self.last = rv
            else:
                try:
                    self.last = int(resource_version)
                except ValueError:
                    raise expired(f"invalid resource version {resource_version!r}") from None
                if self.last < store.compacted:
                    raise _too_old(self.last, store.compacted)

    def _matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        if self.ns and obj["metadata"].get("namespace") != self.ns:
            return False
        return labels_match(self.labels, obj) and fields_match(self.fields, obj, self.rt.fields)

    def next(self, timeout: float) -> list[Event]:
        """The next batch of events (possibly empty after ``timeout`` seconds).

        Raises the 410 ``ApiError`` when the history moved past this watch.
        """
        if self.initial:
            out, self.initial = self.initial, []
            return out
        store = self.store
        with store.lock:
            if self.last < store.compacted:
                raise _too_old(self.last, store.compacted)
            changes = store.history_after(self.last)
            if not changes and not store.closed:
                store.changed.wait(timeout)
                if self.last < store.compacted:
                    raise _too_old(self.last, store.compacted)
                changes = store.history_after(self.last)
            events: list[Event] = []
            for change in changes:
                self.last = change.rv
                if change.rt is not self.rt:
                    continue
                now, before = self._matches(change.obj), self._matches(change.old)
                if change.type == "DELETED":
                    if before or now:
                        events.append(("DELETED", change.obj))
                elif now and (before or change.type == "ADDED"):
                    events.append((change.type, change.obj))
                elif now:
                    events.append(("ADDED", change.obj))
                elif before and change.old is not None:
                    events.append(("DELETED", _at(change.old, change.obj)))
            return events

    def bookmark(self) -> Event:
        rv = self.last  # every change up to here has been scanned (and sent if it matched)
        return (
            "BOOKMARK",
            {
                "kind": self.rt.kind,
                "apiVersion": self.rt.api_version,
                "metadata": {"resourceVersion": str(rv)},
            },
        )


def _at(previous: Obj, current: Obj) -> Obj:
    """``previous`` as of ``current``'s resourceVersion (what a watch that stops matching an
    object sends as its DELETED event)."""
    meta = {**previous["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
    return {**previous, "metadata": meta}
