"""Submit-time features of a job, as one dense numpy matrix (feature schema version 3).

Only what is known when a job is submitted goes in: its resources (GPUs, CPUs, memory, GPU
type), who submits it (user, team), what it runs (image; command and job-name tokens), when
(hour of day, day of week), what the user declared (``extra["declared_runtime"]``) and the
leak-free history (``history.HistoryIndex``) of the user (at windows of 3, 5, 10 and 30 jobs),
of the user's job family, of the team (at 3, 10 and 30), of the user's jobs at the same GPU
count (at 5 and 10), the job's GPUs relative to the user's usual, and the in-flight GPUs
(cluster load) at submit. Version 2 added the team, same-GPU, window, usual-GPU and load
columns: what a bare public trace carries; version 3 the team's and the same-GPU windows.

Terms:
- *vocabulary*: the categories of a column seen often enough in training (most frequent first,
  at most ``MAX_CATEGORIES``); rarer and unseen values share the "other" code, and a missing
  value is NaN — so an unseen user or image or GPU type is a normal input, never an error.
- *token buckets*: command and name tokens hashed (CRC-32, stable across processes) into a
  fixed number of count columns. ``--flag value`` pairs hash as ``flag=value``.
- *work hint*: log of the numeric value of an ``--epochs``/``--steps``/``--iters``-like flag.

Invariants: the column layout is fixed by ``FEATURE_SCHEMA_VERSION``; a model artifact whose
schema version differs is incompatible and is refused at load time. Time 0 is read as a Monday
00:00 UTC (a Unix-epoch trace shifts weekdays by a constant, which a model learns the same).
Tokenisation is cached per distinct string, since queued jobs repeat their commands.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain, pairwise

import numpy as np

from starburst.core.job import Job
from starburst.predictor.baselines import HistoryView
from starburst.predictor.history import HistoryIndex, KeyStats, submit_times

FEATURE_SCHEMA_VERSION = 3
#: at most this many known values per categorical column, plus one "other" code: the
#: boosting's ``max_bins`` (63) bounds a native categorical column's cardinality.
MAX_CATEGORIES = 62
MIN_CATEGORY_COUNT = 3
TOKEN_BUCKETS = 16
DECLARED_KEYS = ("declared_runtime", "declared_estimate", "time_limit")
_WORK_FLAG = re.compile(r"^-{1,2}(?:num_train_)?(?:epochs?|steps?|max_steps|iters?|iterations)$")
_SPLIT = re.compile(r"[^a-z0-9_.]+")
CATEGORICAL = ("user", "team", "image", "gpu_type")
NUMERIC = ("log_gpus", "cpus", "log_memory_gb", "hour", "weekday", "log_declared", "log_work")
HISTORY = (
    *(
        f"{scope}_{stat}"
        for scope in ("user", "family")
        for stat in ("log_count", "median", "last", "mean", "spread")
    ),
    "recent_median",
    "recent_spread",
    "user_median_3",
    "user_median_5",
    "user_median_30",
    "user_spread_30",
    *(f"team_{stat}" for stat in ("log_count", "median", "last", "spread")),
    "team_median_3",
    "team_median_30",
    "team_spread_30",
    *(f"same_gpus_{stat}" for stat in ("log_count", "median", "last", "spread")),
    "same_gpus_median_5",
    "gpus_vs_user",
    "log_load",
)


def calendar(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hour of day (0–23) and weekday (0 = Monday) of trace times in seconds."""
    t = np.asarray(t, dtype=float)
    return np.floor(t / 3600.0) % 24, np.floor(t / 86400.0) % 7


def declared_runtime(job: Job) -> float | None:
    """The runtime the user declared at submit time, if any and if it is a positive number."""
    extra = job.extra
    if not extra:
        return None
    for key in DECLARED_KEYS:
        raw = extra.get(key)
        if not raw:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        if value > 0 and math.isfinite(value):
            return value
    return None


def category(job: Job, column: str) -> str | None:
    if column == "image":
        return job.extra.get("image") or None
    value = getattr(job, column)
    return str(value) if value not in (None, "") else None


def categories(jobs: Sequence[Job], column: str) -> list[str | None]:
    """One categorical column of many jobs (``category`` for each, without per-call dispatch)."""
    if column == "image":
        return [j.extra.get("image") or None for j in jobs]
    if column == "user":
        return [j.user or None for j in jobs]
    if column == "team":
        return [j.team or None for j in jobs]
    if column == "gpu_type":
        return [j.gpu_type or None for j in jobs]
    return [category(j, column) for j in jobs]


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """Codes of a categorical column: 0..n-1 for known values, n for rare or unseen ones."""

    codes: dict[str, int]

    @classmethod
    def fit(cls, values: Iterable[str | None]) -> Vocabulary:
        counts = Counter(v for v in values if v is not None)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        kept = [v for v, n in ranked if n >= MIN_CATEGORY_COUNT][:MAX_CATEGORIES]
        return cls({v: i for i, v in enumerate(kept)})

    def encode(self, values: Sequence[str | None]) -> np.ndarray:
        other = float(len(self.codes))
        lookup: dict[str | None, float] = {None: math.nan}
        lookup.update(self.codes)
        return np.array([lookup.get(v, other) for v in values], dtype=float)


@lru_cache(maxsize=1 << 16)
def _token_buckets(text: str, buckets: int) -> tuple[int, ...]:
    words = text.lower().split()
    out: list[int] = []
    for i, word in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        tokens = [t for t in _SPLIT.split(word) if t]
        if word.startswith("-") and nxt and not nxt.startswith("-"):
            tokens.append(f"{word.lstrip('-')}={nxt}")
        out.extend(zlib.crc32(t.encode()) % buckets for t in tokens)
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def _work_hint(command: str) -> float:
    words = command.split()
    for word, nxt in pairwise(words):
        if _WORK_FLAG.match(word.lower()):
            try:
                value = float(nxt)
            except ValueError:
                continue
            if value > 0 and math.isfinite(value):
                return math.log(value)
    return math.nan


def _bag(texts: Sequence[str], buckets: int) -> np.ndarray:
    hashed = [_token_buckets(t, buckets) if t else () for t in texts]
    lengths = np.fromiter(map(len, hashed), dtype=np.int64, count=len(texts))
    cols = np.fromiter(chain.from_iterable(hashed), dtype=np.int64, count=int(lengths.sum()))
    flat = np.repeat(np.arange(len(texts), dtype=np.int64) * buckets, lengths) + cols
    counts = np.bincount(flat, minlength=len(texts) * buckets)
    return counts.reshape(len(texts), buckets).astype(float)


@dataclass(frozen=True, slots=True)
class FeatureEncoder:
    """Turns jobs plus a history index into the model's input matrix."""

    vocabularies: dict[str, Vocabulary]
    buckets: int = TOKEN_BUCKETS
    schema_version: int = FEATURE_SCHEMA_VERSION
    names: tuple[str, ...] = field(default=())

    @classmethod
    def fit(cls, jobs: Sequence[Job], buckets: int = TOKEN_BUCKETS) -> FeatureEncoder:
        vocabs = {c: Vocabulary.fit(categories(jobs, c)) for c in CATEGORICAL}
        tokens = tuple(f"{src}_tok{i}" for src in ("cmd", "name") for i in range(buckets))
        return cls(
            vocabs, buckets, FEATURE_SCHEMA_VERSION, NUMERIC + HISTORY + CATEGORICAL + tokens
        )

    @property
    def categorical_mask(self) -> np.ndarray:
        return np.array([n in CATEGORICAL for n in self.names], dtype=bool)

    def transform(
        self, jobs: Sequence[Job], history: HistoryIndex, view: HistoryView | None = None
    ) -> np.ndarray:
        """The feature matrix of ``jobs``; ``view`` is their ``HistoryView`` when the caller
        has looked it up already (the baselines read it too), so it is looked up once."""
        n = len(jobs)
        submit = submit_times(jobs)
        view = HistoryView.of(jobs, history, submit) if view is None else view
        hour, weekday = calendar(submit)
        declared = [declared_runtime(j) for j in jobs]
        commands = [j.extra.get("command") or "" for j in jobs]
        numeric = [
            np.log(np.fromiter((max(j.gpus, 0) + 1.0 for j in jobs), dtype=float, count=n)),
            np.fromiter((j.cpus for j in jobs), dtype=float, count=n),
            np.log1p(np.fromiter((j.memory_mb / 1024.0 for j in jobs), dtype=float, count=n)),
            hour,
            weekday,
            np.log(np.array([d if d is not None else math.nan for d in declared], dtype=float)),
            np.fromiter((_work_hint(c) for c in commands), dtype=float, count=n),
        ]
        hist = [*_stats(view.users), *_stats(history.families(jobs, submit))]
        recent = history.recent(jobs, submit)
        hist += [recent.median, recent.spread, *_context(jobs, submit, history, view)]
        cats = [self.vocabularies[c].encode(categories(jobs, c)) for c in CATEGORICAL]
        dense = np.column_stack([*numeric, *hist, *cats])
        bags = [_bag(commands, self.buckets), _bag([j.name or "" for j in jobs], self.buckets)]
        return np.hstack([dense, *bags])


def _stats(s: KeyStats) -> list[np.ndarray]:
    return [np.log1p(s.count), s.median, s.last, s.mean, s.spread]


def _context(
    jobs: Sequence[Job], submit: np.ndarray, history: HistoryIndex, view: HistoryView
) -> list[np.ndarray]:
    """Schema-3 columns: user windows, team, same GPU count, usual GPUs, load at submit."""
    usual = history.user_gpus.lookup([j.user for j in jobs], submit)
    log_gpus = np.log(np.fromiter((max(j.gpus, 1) for j in jobs), dtype=float, count=len(jobs)))
    users, team, same = view.users, view.teams, view.same_gpus
    return [
        users.medians[3],
        users.medians[5],
        users.medians[30],
        users.spreads[30],
        np.log1p(team.count),
        team.median,
        team.last,
        team.spread,
        team.medians[3],
        team.medians[30],
        team.spreads[30],
        np.log1p(same.count),
        same.median,
        same.last,
        same.spread,
        same.medians[5],
        log_gpus - usual.median,
        np.log1p(history.load.at(submit)),
    ]
