"""History baselines: runtime estimates that need no fitting, only the leak-free history.

Each baseline is a centre in log seconds per job, from what had finished before the job was
submitted (``history.HistoryIndex``); *g* is the median log runtime of the training jobs.

| name                   | centre                                         | else              |
|------------------------|------------------------------------------------|-------------------|
| ``global-median``      | g                                              | —                 |
| ``user-median-K``      | median of the user's last K finished jobs      | g                 |
| ``user-gpus-median-K`` | the same over the user's jobs at this GPU count | ``user-median-K`` |
| ``shrunk-median``      | (n·u + 3·t) / (n + 3)                          | t                 |

with K ∈ 3, 5, 10, 30 for the user and 5, 10 at the GPU count; u = ``user-median-10``, n the
user's finished jobs and t the team's median over its last 10 jobs (else g).

``user-median-10`` is the evaluation's "user's recent median", exactly. Every baseline has a
*band* too (for the evaluation's coverage column): the global one is the training jobs' p10 …
p90; the others are the centre ∓ half the p10–p90 spread of the same window (of the user's
last 10 jobs for ``shrunk-median``), else the global band.

Invariant: a baseline at a training row is leak-free (the history excludes the row's own and
every later-finishing job), so baselines are scored on training rows without any held-out fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from starburst.core.job import Job
from starburst.predictor.history import HistoryIndex, KeyStats, submit_times

USER_WINDOWS = (3, 5, 10, 30)
GPU_WINDOWS = (5, 10)
SHRINK = 3.0
GLOBAL = "global-median"
USER = "user-median-10"
SHRUNK = "shrunk-median"
BASELINES = (
    GLOBAL,
    *(f"user-median-{k}" for k in USER_WINDOWS),
    *(f"user-gpus-median-{k}" for k in GPU_WINDOWS),
    SHRUNK,
)
LABELS = {
    GLOBAL: "global median",
    **{f"user-median-{k}": f"user's median, last {k}" for k in USER_WINDOWS},
    **{f"user-gpus-median-{k}": f"user×GPUs median, last {k}" for k in GPU_WINDOWS},
    SHRUNK: "user's median shrunk to team",
}


@dataclass(frozen=True, slots=True)
class HistoryView:
    """The history every baseline reads, looked up once for a batch of jobs."""

    users: KeyStats
    same_gpus: KeyStats
    teams: KeyStats

    @classmethod
    def of(
        cls, jobs: Sequence[Job], history: HistoryIndex, at: np.ndarray | None = None
    ) -> HistoryView:
        at = submit_times(jobs) if at is None else at
        return cls(history.users(jobs, at), history.at_same_gpus(jobs, at), history.teams(jobs, at))

    def __len__(self) -> int:
        return len(self.users.count)

    @property
    def user_jobs(self) -> np.ndarray:
        """How many finished jobs each row's user had."""
        return self.users.count

    def rows(self, rows: slice | np.ndarray) -> HistoryView:
        """The view of some rows only (for a cross-validation fold)."""
        return HistoryView(*(_take(s, rows) for s in (self.users, self.same_gpus, self.teams)))

    def centre(self, name: str, global_log: float) -> np.ndarray:
        """One baseline's centre (log seconds) per row."""
        n = len(self)
        if name == GLOBAL:
            return np.full(n, global_log)
        if name == SHRUNK:
            team = _known(self.teams, self.teams.median, np.full(n, global_log))
            k = self.users.count
            mixed = (k * np.nan_to_num(self.users.median) + SHRINK * team) / (k + SHRINK)
            out: np.ndarray = np.where(k > 0, mixed, team)
            return out
        window = int(name.rsplit("-", 1)[1])
        user = _known(self.users, self.users.medians[window], np.full(n, global_log))
        if name.startswith("user-gpus-median-"):
            return _known(self.same_gpus, self.same_gpus.medians[window], user)
        return user

    def centres(self, global_log: float) -> dict[str, np.ndarray]:
        return {name: self.centre(name, global_log) for name in BASELINES}

    def band(
        self, name: str, global_log: float, global_band: tuple[float, float]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The baseline's (low, high) in log seconds (see the module docstring)."""
        n = len(self)
        lo, hi = np.full(n, global_band[0]), np.full(n, global_band[1])
        if name == GLOBAL:
            return lo, hi
        centre = self.centre(name, global_log)
        stats, window = self.users, 10
        if name != SHRUNK:
            window = int(name.rsplit("-", 1)[1])
        half = _known(stats, stats.spreads[window], np.full(n, np.nan)) / 2.0
        if name.startswith("user-gpus-median-"):
            half = _known(self.same_gpus, self.same_gpus.spreads[window] / 2.0, half)
        seen = ~np.isnan(half)
        return np.where(seen, centre - half, lo), np.where(seen, centre + half, hi)


def _known(stats: KeyStats, values: np.ndarray, otherwise: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.where(stats.count > 0, values, otherwise)
    return out


def _take(stats: KeyStats, rows: slice | np.ndarray) -> KeyStats:
    return KeyStats(
        stats.count[rows],
        stats.median[rows],
        stats.last[rows],
        stats.mean[rows],
        stats.spread[rows],
        {w: m[rows] for w, m in stats.medians.items()},
        {w: m[rows] for w, m in stats.spreads.items()},
    )
