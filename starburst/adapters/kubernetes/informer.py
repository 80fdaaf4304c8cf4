"""An informer: list a collection, then watch it, keeping a local cache current.

Life of an informer (one background thread):
1. *List* in pages (``limit``/``continue``); the cache becomes exactly the listed objects
   (objects missing from it are reported deleted: their DELETED event was lost); the list's
   resourceVersion becomes the informer's ``resource_version``. ``synced`` is set.
2. *Watch* from ``resource_version`` with bookmarks and a server-side timeout; every event
   and bookmark advances ``resource_version``, so a stream that ends (timeout, cut connection)
   resumes exactly where it stopped, without a relist.
3. *410 Gone* (an expired resourceVersion, as an ``ERROR`` event or an HTTP status, also for
   an expired continue token): relist from scratch.
4. *429, 5xx, lost connections*: wait (``Retry-After`` if the server sent one, else
   exponential backoff) and resume; other errors are logged and retried at the backoff cap.

Invariants: handlers see events in resourceVersion order, on the informer's thread; the cache
only changes together with a handler call; objects are plain JSON dicts (the official client
fetches with ``_preload_content=False``; no model deserialisation on hot paths).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes.watch.watch import iter_resp_lines

from starburst.adapters.kubernetes.retry import Backoff, is_transient, retry_after, status_of

log = logging.getLogger(__name__)
Obj = dict[str, Any]
Handler = Callable[[str, Obj, Obj | None], None]  # (ADDED|MODIFIED|DELETED, object, old)


class Gone(Exception):
    """The resourceVersion (or continue token) expired: relist."""


def key_of(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


class Informer:
    def __init__(
        self,
        name: str,
        list_fn: Callable[..., Any],
        handler: Handler,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        watch_timeout: int = 60,
        backoff: Backoff | None = None,
    ) -> None:
        self.name, self._list_fn, self._handler = name, list_fn, handler
        self._selectors = {
            k: v
            for k, v in (("label_selector", label_selector), ("field_selector", field_selector))
            if v
        }
        self.page_size, self.watch_timeout = page_size, watch_timeout
        self.backoff = backoff or Backoff()
        self.cache: dict[tuple[str, str], Obj] = {}
        self.resource_version: str | None = None
        self.synced = threading.Event()
        self.lists = 0
        self.failures = 0
        self.errors = 0
        self._stopping = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, name=f"informer-{name}", daemon=True)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> Informer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        response = self._response
        if response is not None:
            try:
                response.shutdown()
            except Exception:  # already closed, or an urllib3 without shutdown()
                log.debug("closing the %s watch", self.name, exc_info=True)
        self._thread.join()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                if self.resource_version is None:
                    self._relist()
                self._watch()
                self.failures = 0
            except Gone:
                log.info("%s: resourceVersion expired, relisting", self.name)
                self.resource_version = None
            except Exception as err:
                if self._stopping.is_set():
                    return
                if status_of(err) == 410:
                    self.resource_version = None
                    continue
                self.failures += 1
                self.errors += 1
                delay = self.backoff.delay(self.failures, retry_after(err))
                if not is_transient(err):
                    delay = self.backoff.cap
                    log.warning("%s: %r, retrying in %.1fs", self.name, err, delay)
                self._stopping.wait(delay)

    # -- list ------------------------------------------------------------------------------
    def _relist(self) -> None:
        items: dict[tuple[str, str], Obj] = {}
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {**self._selectors, "limit": self.page_size}
            if token:
                kwargs["_continue"] = token
            page = self._call(kwargs)
            for obj in page.get("items") or ():
                items[key_of(obj)] = obj
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                break
        self.lists += 1
        for key, gone in list(self.cache.items()):
            if key not in items:
                del self.cache[key]
                self._emit("DELETED", gone, gone)
        for key, obj in items.items():
            old = self.cache.get(key)
            self.cache[key] = obj
            if old is None:
                self._emit("ADDED", obj, None)
            elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                self._emit("MODIFIED", obj, old)
        self.resource_version = str((page.get("metadata") or {}).get("resourceVersion"))
        self.synced.set()

    def _call(self, kwargs: dict[str, Any]) -> Obj:
        response = self._list_fn(**kwargs, _preload_content=False, _request_timeout=(5, 60))
        try:
            body: Obj = json.loads(response.data)
        finally:
            response.release_conn()
        return body

    # -- watch -----------------------------------------------------------------------------
    def _watch(self) -> None:
        response = self._list_fn(
            **self._selectors,
            watch=True,
            resource_version=self.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=self.watch_timeout,
            _preload_content=False,
            _request_timeout=(5, self.watch_timeout + 10),
        )
        self._response = response
        try:
            if self._stopping.is_set():  # stop() ran while the request was on its way
                return
            for line in iter_resp_lines(response):
                if self._stopping.is_set():
                    return
                if line.strip():
                    self._apply(json.loads(line))
        finally:
            self._response = None
            response.close()  # never hand a half-read stream back to the connection pool
            response.release_conn()

    def _apply(self, event: Obj) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone(obj.get("message", ""))
            raise RuntimeError(f"watch error: {obj.get('code')} {obj.get('message')}")
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            self.resource_version = rv or self.resource_version
            return
        key = key_of(obj)
        old = self.cache.get(key)
        if kind == "DELETED":
            self.cache.pop(key, None)
        else:
            self.cache[key] = obj
        self.resource_version = rv or self.resource_version
        self._emit(str(kind), obj, old)

    def _emit(self, kind: str, obj: Obj, old: Obj | None) -> None:
        try:
            self._handler(kind, obj, old)
        except Exception:  # a handler bug must not wedge the stream on one event
            log.exception("%s: handler failed on %s %s", self.name, kind, key_of(obj))
