"""List chunking: ``limit`` and ``continue`` with consistent snapshots.

Terms: the first page of a chunked list takes a *snapshot* (the full sorted result at one
resourceVersion); later pages, named by an opaque ``continue`` token, read the same snapshot,
so a chunked list is consistent even while objects change (as with etcd). Only the newest
``capacity`` snapshots are kept: a token whose snapshot was dropped answers 410 Gone
(``Expired``), exactly as a real server does once the revision is compacted.
``remainingItemCount`` is set only for lists without selectors, as on a real server.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from tests.kubeapi.status import bad_request, expired

_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter."
)


@dataclass(frozen=True, slots=True)
class Page:
    items: list[dict[str, Any]]
    resource_version: int
    continue_token: str | None
    remaining: int | None


class Pager:
    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._snapshots: OrderedDict[str, tuple[list[dict[str, Any]], int]] = OrderedDict()
        self._lock = threading.Lock()

    def first(self, items: list[dict[str, Any]], rv: int, limit: int, selected: bool) -> Page:
        if limit <= 0 or len(items) <= limit:
            return Page(items, rv, None, None)
        snap = uuid.uuid4().hex
        with self._lock:
            self._snapshots[snap] = (items, rv)
            while len(self._snapshots) > self.capacity:
                self._snapshots.popitem(last=False)
        return self._cut(snap, items, rv, 0, limit, selected)

    def next(self, token: str, limit: int, selected: bool) -> Page:
        try:
            state = json.loads(base64.urlsafe_b64decode(token.encode()))
            snap, offset = str(state["s"]), int(state["o"])
        except (ValueError, KeyError, TypeError, binascii.Error):
            raise bad_request(f"continue key is not valid: {token!r}") from None
        with self._lock:
            found = self._snapshots.get(snap)
        if found is None:
            raise expired(_EXPIRED)
        items, rv = found
        return self._cut(snap, items, rv, offset, limit, selected)

    def _cut(
        self,
        snap: str,
        items: list[dict[str, Any]],
        rv: int,
        offset: int,
        limit: int,
        selected: bool,
    ) -> Page:
        end = len(items) if limit <= 0 else offset + limit
        page = items[offset:end]
        if end >= len(items):
            return Page(page, rv, None, None)
        token = base64.urlsafe_b64encode(json.dumps({"s": snap, "o": end}).encode()).decode()
        return Page(page, rv, token, None if selected else len(items) - end)

    def forget_all(self) -> None:
        """Drop every snapshot, as a compaction does (pending tokens then expire)."""
        with self._lock:
            self._snapshots.clear()
