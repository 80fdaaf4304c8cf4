"""Leak-free runtime history: what a user (or a job family) ran before a given instant.

Terms:
- *finish time* of a completed job: ``extra["finish_time"]`` when the record has one (the
  store's jobs do), else ``submit_time + runtime`` (a trace records no queueing delay).
- *key*: what history is grouped by — the user, or the user's *job family* (``user|name`` with
  digit runs folded to ``#``, so ``bert-ft-017`` and ``bert-ft-018`` share a family).
- *window*: the last ``window`` finished jobs of a key (median and spread are taken over it).
  Each key is indexed once and looked up at several windows at the same cost (``WINDOWS``):
  the user at 3, 5, 10 and 30 jobs, the team (virtual cluster) at 3, 10 and 30, the user's
  jobs *at the same GPU count* (key ``user|gpus``) at 5 and 10. ``KeyStats.median`` and
  ``spread`` are at the default window; ``KeyStats.medians[k]`` at window k.
- *usual GPUs*: the median log GPU count of the user's last finished jobs.
- *in-flight GPUs at t* (the cluster load a job is submitted into): GPUs of the indexed jobs
  submitted before t and not finished before t, plus those of ``in_flight`` jobs (running or
  queued now, finish unknown) submitted before t. A trace knows every finish, so its load is
  exact; live, pass the running and queued jobs as ``in_flight``, or the load reads low.

Invariant (leak-freedom): a look-up at time t sees only jobs whose finish time is strictly
before t. Times are compared in whole milliseconds, finish rounded up and t rounded down, so
rounding can only hide a job, never reveal one early. Look-ups are vectorised: one
``searchsorted`` over (key, finish) pairs packed into int64, no per-job Python loop beyond
mapping key strings to ids.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from starburst.core.job import Job

_SHIFT = np.int64(41)  # 2**41 ms ≈ 69 years of trace time per key
_MAX_MS = (1 << 41) - 1
_DIGITS = re.compile(r"\d+")
DEFAULT_WINDOW = 10
#: the further windows each scope is indexed at, besides the default one
WINDOWS = {"user": (3, 5, 30), "team": (3, 30), "same_gpus": (5,)}


def gpus_key(user: str | None, gpus: int) -> str | None:
    """The user's jobs at one GPU count (``None`` without a user)."""
    return None if user is None else f"{user}|{gpus}"


@lru_cache(maxsize=1 << 16)
def family_key(user: str | None, name: str | None) -> str | None:
    """The user's job family: their job name with digit runs folded (``None`` without a user)."""
    if user is None:
        return None
    return f"{user}|{_DIGITS.sub('#', name or '')}"


def finish_time(job: Job) -> float:
    """When the job's runtime became known (never before submit + runtime)."""
    earliest = job.submit_time + float(job.runtime or 0.0)
    raw = job.extra.get("finish_time")
    if raw:
        try:
            return max(float(raw), earliest)
        except ValueError:
            pass  # an unreadable record time: the trace rule is the safe lower bound
    return earliest


@dataclass(frozen=True, slots=True)
class KeyStats:
    """History of one key per query row; NaN where the key had no finished job yet.

    ``median``/``spread``: over the default window; ``medians``/``spreads``: by window.
    """

    count: np.ndarray
    median: np.ndarray
    last: np.ndarray
    mean: np.ndarray
    spread: np.ndarray
    medians: dict[int, np.ndarray] = field(default_factory=dict)
    spreads: dict[int, np.ndarray] = field(default_factory=dict)


class KeyedHistory:
    """Log runtimes grouped by key and ordered by finish time, with rolling statistics."""

    def __init__(
        self,
        keys: Sequence[str | None],
        finish: np.ndarray,
        log_runtime: np.ndarray,
        window: int = DEFAULT_WINDOW,
        windows: Sequence[int] = (),
    ) -> None:
        keep = np.array([k is not None for k in keys], dtype=bool)
        kept = [k for k in keys if k is not None]
        self._ids: dict[str, int] = {}
        ids = np.fromiter(
            (self._ids.setdefault(k, len(self._ids)) for k in kept), dtype=np.int64, count=len(kept)
        )
        finish = np.asarray(finish, dtype=float)[keep]
        values = np.asarray(log_runtime, dtype=float)[keep]
        self.origin = float(finish.min()) if len(finish) else 0.0
        ms = np.clip(np.ceil((finish - self.origin) * 1000.0), 0, _MAX_MS).astype(np.int64)
        order = np.lexsort((ms, ids))
        ids, ms, values = ids[order], ms[order], values[order]
        self._packed = (ids << _SHIFT) | ms
        self._start = np.searchsorted(ids, np.arange(len(self._ids)), side="left")
        seg = self._start[ids] if len(ids) else np.zeros(0, dtype=np.int64)
        self._values = values
        self.window = window
        self.windows = tuple(dict.fromkeys((window, *windows)))
        self._medians: dict[int, np.ndarray] = {}
        self._spreads: dict[int, np.ndarray] = {}
        for w in self.windows:
            self._medians[w], self._spreads[w] = _rolling_median_spread(values, seg, w)
        sums = np.concatenate(([0.0], np.cumsum(values)))
        self._mean = (sums[1:] - sums[seg]) / (np.arange(len(values)) - seg + 1)

    def __len__(self) -> int:
        return len(self._values)

    def lookup(self, keys: Sequence[str | None] | str, at: np.ndarray) -> KeyStats:
        """Statistics of each key over jobs finished strictly before ``at`` (seconds).

        ``keys`` is one key per row, or a single string used for every row.
        """
        if isinstance(keys, str):
            ids = np.full(len(at), self._ids.get(keys, -1), dtype=np.int64)
        else:
            get = self._ids.get
            ids = np.array([get(k, -1) for k in keys], dtype=np.int64)  # type: ignore[arg-type]
        known = ids >= 0
        q_ms = np.clip(np.floor((np.asarray(at, dtype=float) - self.origin) * 1000.0), 0, _MAX_MS)
        safe = np.where(known, ids, 0)
        pos = np.searchsorted(self._packed, (safe << _SHIFT) | q_ms.astype(np.int64), "left")
        start = self._start[safe] if len(self._start) else np.zeros(len(ids), dtype=np.int64)
        count = np.where(known, pos - start, 0)
        has = count > 0
        idx = np.where(has, pos - 1, 0)

        def pick(arr: np.ndarray) -> np.ndarray:
            if not len(arr):
                return np.full(len(ids), np.nan)
            return np.where(has, arr[idx], np.nan)

        medians = {w: pick(m) for w, m in self._medians.items()}
        spreads = {w: pick(m) for w, m in self._spreads.items()}
        return KeyStats(
            count.astype(float),
            medians[self.window],
            pick(self._values),
            pick(self._mean),
            spreads[self.window],
            medians,
            spreads,
        )


def _rolling_median_spread(
    values: np.ndarray, seg: np.ndarray, window: int
) -> tuple[np.ndarray, np.ndarray]:
    """Median and p90−p10 spread of each element's last ``window`` values within its key."""
    n = len(values)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    back = np.arange(n)[:, None] - np.arange(window)[None, :]
    valid = back >= seg[:, None]
    block = np.sort(np.where(valid, values[np.clip(back, 0, None)], np.inf), axis=1)
    last = valid.sum(axis=1) - 1  # index of the largest valid value; ≥ 0 (a row sees itself)

    def quantile(q: float) -> np.ndarray:
        pos = last * q
        lo = np.floor(pos).astype(np.int64)
        hi = np.ceil(pos).astype(np.int64)
        a = np.take_along_axis(block, lo[:, None], axis=1)[:, 0]
        b = np.take_along_axis(block, hi[:, None], axis=1)[:, 0]
        out: np.ndarray = a + (b - a) * (pos - lo)
        return out

    return quantile(0.5), quantile(0.9) - quantile(0.1)


class HistoryIndex:
    """Completed jobs, indexed by user, job family and globally, for leak-free look-ups.

    Build it from completed jobs (each with a ``runtime``); jobs without a runtime are ignored.
    """

    def __init__(
        self, jobs: Sequence[Job], window: int = DEFAULT_WINDOW, in_flight: Sequence[Job] = ()
    ) -> None:
        done = [j for j in jobs if j.runtime is not None and j.runtime > 0]
        finish = np.fromiter((finish_time(j) for j in done), dtype=float, count=len(done))
        logr = np.log(
            np.fromiter((float(j.runtime or 1.0) for j in done), dtype=float, count=len(done))
        )
        self.window = window
        self.jobs = len(done)
        users = [j.user for j in done]
        self.user = KeyedHistory(users, finish, logr, window, WINDOWS["user"])
        self.family = KeyedHistory([family_key(j.user, j.name) for j in done], finish, logr, window)
        self.everyone = KeyedHistory(["*"] * len(done), finish, logr, 3 * window)
        self.team = KeyedHistory([j.team for j in done], finish, logr, window, WINDOWS["team"])
        self.same_gpus = KeyedHistory(
            [gpus_key(j.user, j.gpus) for j in done], finish, logr, window, WINDOWS["same_gpus"]
        )
        log_gpus = np.log(np.fromiter((max(j.gpus, 1) for j in done), dtype=float, count=len(done)))
        self.user_gpus = KeyedHistory(users, finish, log_gpus, window)
        self.load = InFlight(done, finish, in_flight)
        self.global_median: float | None = None
        self.global_low: float | None = None
        self.global_high: float | None = None
        if len(logr):
            low, mid, high = np.exp(np.percentile(logr, [10, 50, 90]))
            self.global_low, self.global_median, self.global_high = (
                float(low),
                float(mid),
                float(high),
            )

    def users(self, jobs: Sequence[Job], at: np.ndarray | None = None) -> KeyStats:
        at = submit_times(jobs) if at is None else at
        return self.user.lookup([j.user for j in jobs], at)

    def families(self, jobs: Sequence[Job], at: np.ndarray | None = None) -> KeyStats:
        at = submit_times(jobs) if at is None else at
        return self.family.lookup([family_key(j.user, j.name) for j in jobs], at)

    def teams(self, jobs: Sequence[Job], at: np.ndarray | None = None) -> KeyStats:
        at = submit_times(jobs) if at is None else at
        return self.team.lookup([j.team for j in jobs], at)

    def at_same_gpus(self, jobs: Sequence[Job], at: np.ndarray | None = None) -> KeyStats:
        """The user's history at the job's own GPU count."""
        at = submit_times(jobs) if at is None else at
        return self.same_gpus.lookup([gpus_key(j.user, j.gpus) for j in jobs], at)

    def recent(self, jobs: Sequence[Job], at: np.ndarray | None = None) -> KeyStats:
        at = submit_times(jobs) if at is None else at
        return self.everyone.lookup("*", at)


class InFlight:
    """GPUs submitted and not yet finished at an instant (see *in-flight GPUs* above)."""

    def __init__(
        self, done: Sequence[Job], finish: np.ndarray, in_flight: Sequence[Job] = ()
    ) -> None:
        gpus = np.fromiter((j.gpus for j in done), dtype=float, count=len(done))
        submit = submit_times(done)
        by_submit = np.argsort(submit, kind="stable")
        by_finish = np.argsort(finish, kind="stable")
        self._submit = submit[by_submit]
        self._submitted = np.concatenate(([0.0], np.cumsum(gpus[by_submit])))
        self._finish = np.asarray(finish, dtype=float)[by_finish]
        self._finished = np.concatenate(([0.0], np.cumsum(gpus[by_finish])))
        open_submit = submit_times(in_flight)
        order = np.argsort(open_submit, kind="stable")
        self._open = open_submit[order]
        open_gpus = np.fromiter((j.gpus for j in in_flight), dtype=float, count=len(in_flight))
        self._opened = np.concatenate(([0.0], np.cumsum(open_gpus[order])))

    def at(self, t: np.ndarray) -> np.ndarray:
        """In-flight GPUs just before each instant of ``t`` (strictly earlier events only)."""
        t = np.asarray(t, dtype=float)
        submitted = self._submitted[np.searchsorted(self._submit, t, "left")]
        finished = self._finished[np.searchsorted(self._finish, t, "left")]
        opened = self._opened[np.searchsorted(self._open, t, "left")]
        out: np.ndarray = np.maximum(submitted - finished, 0.0) + opened
        return out


def submit_times(jobs: Sequence[Job]) -> np.ndarray:
    return np.fromiter((j.submit_time for j in jobs), dtype=float, count=len(jobs))
