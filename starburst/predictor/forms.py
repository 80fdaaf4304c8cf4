"""The predictor's *form*: how the boosted model and the history baselines combine into one
estimate, chosen on a held-out recent slice so that the predictor is never worse than a
baseline there.

Terms (all in log seconds, per job, leak-free):
- *m*: the boosted p50 of log runtime (``model.RuntimeModel``).
- *r*: a second, more regularised boosted p50 fitted to the *residual* log runtime − u.
- *g*: the global median of the training jobs (fixed at training time).
- *u*: the user's recent median (last 10 finished jobs), else g — the "user's recent median"
  baseline of the evaluation, exactly.
- *s*: the shrunk user median, (n·u_user + k·t) / (n + k) with n the user's finished jobs,
  k = ``SHRINK`` and t the team's recent median (else g): a user with little history leans on
  their team.

| form            | centre                      |
|-----------------|-----------------------------|
| ``global-median`` | g                         |
| ``user-median`` | u                           |
| ``shrunk-median`` | s                         |
| ``model``       | m                           |
| ``residual``    | u + r                       |
| ``blend-W``     | W·m + (1 − W)·u, W ∈ ``BLEND_WEIGHTS`` |

*Choice*: first the *reference baseline*: the baseline form (first three rows) with the lowest
median absolute log-ratio (MALR) over every training job — baselines need no fit, so they are
scored leak-free on all of history, not only on one recent period. Then the model form (the
other rows) with the lowest MALR on the held-out slice replaces it only if it beats the
reference baseline there overall and in most of ``BLOCKS`` consecutive time blocks of the
slice: a validation win that does not hold over time is noise, and the aim is never to be
worse than a baseline. Each *segment*
(``new``: the user has fewer than ``SEGMENT_MIN`` finished jobs; ``known``: the rest) gets its
own choice when it has at least ``SEGMENT_JOBS`` held-out jobs, else the overall one. The band
is the model's p10/p90 offsets around the chosen centre, conformally widened on the same slice.
Few candidates on purpose: every extra one is another chance to win the slice by luck.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from starburst.core.job import Job
from starburst.predictor.history import HistoryIndex, submit_times

SHRINK = 3.0
SEGMENT_MIN = 3
BLEND_WEIGHTS = (0.5,)
BASELINE_FORMS = ("global-median", "user-median", "shrunk-median")
FORMS = (*BASELINE_FORMS, "model", "residual", *(f"blend-{w:g}" for w in BLEND_WEIGHTS))
SEGMENTS = ("new", "known")
#: a segment gets its own choice only with this many held-out jobs (else the overall one)
SEGMENT_JOBS = 50
#: time blocks of the held-out slice a model form must mostly win against the best baseline
BLOCKS = 3


@dataclass(frozen=True, slots=True)
class Baselines:
    """The history baselines of a batch of jobs, and which segment each job is in."""

    user: np.ndarray
    shrunk: np.ndarray
    known: np.ndarray

    @classmethod
    def of(cls, jobs: Sequence[Job], history: HistoryIndex, global_log: float) -> Baselines:
        at = submit_times(jobs)
        users = history.users(jobs, at)
        teams = history.teams(jobs, at)
        seen = users.count > 0
        user = np.where(seen, users.median, global_log)
        team = np.where(teams.count > 0, teams.median, global_log)
        n = users.count
        shrunk = np.where(
            seen, (n * np.nan_to_num(users.median) + SHRINK * team) / (n + SHRINK), team
        )
        return cls(user, shrunk, n >= SEGMENT_MIN)


@dataclass(frozen=True, slots=True)
class FormChoice:
    """The chosen form per segment, with every candidate's validation MALR per segment."""

    chosen: Mapping[str, str]
    scores: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    jobs: Mapping[str, int] = field(default_factory=dict)

    @property
    def needs_residual(self) -> bool:
        return "residual" in self.chosen.values()

    def describe(self) -> str:
        parts = []
        for seg in SEGMENTS:
            name = self.chosen.get(seg, "model")
            best = self.scores.get(seg, self.scores.get("all", {})).get(name)
            score = f", MALR {best:.3f}" if best is not None else ""
            parts.append(f"{seg} users: {name} ({self.jobs.get(seg, 0)} held-out jobs{score})")
        return "; ".join(parts)


def centres(
    m: np.ndarray, r: np.ndarray | None, base: Baselines, global_log: float
) -> dict[str, np.ndarray]:
    """Every form's centre (log seconds); ``residual`` only when ``r`` is given."""
    out = {
        "global-median": np.full(len(m), global_log),
        "user-median": base.user,
        "shrunk-median": base.shrunk,
        "model": m,
    }
    if r is not None:
        out["residual"] = base.user + r
    for w in BLEND_WEIGHTS:
        out[f"blend-{w:g}"] = w * m + (1.0 - w) * base.user
    return out


def choose(
    candidates: Mapping[str, np.ndarray],
    target: np.ndarray,
    known: np.ndarray,
    history_scores: Mapping[str, float] | None = None,
) -> FormChoice:
    """Per segment, the form to use (see *Choice* in the module docstring).

    ``history_scores``: each baseline form's MALR over every training job (leak-free, so no
    slice is needed); when given, it picks the baseline a model form must beat.
    """
    overall = _pick(candidates, target, np.ones(len(target), dtype=bool), history_scores)
    chosen: dict[str, str] = {}
    scores: dict[str, dict[str, float]] = {"all": overall[1]}
    jobs: dict[str, int] = {"all": len(target)}
    for seg, mask in (("new", ~known), ("known", known)):
        jobs[seg] = int(mask.sum())
        if jobs[seg] < SEGMENT_JOBS:
            chosen[seg] = overall[0]
            continue
        chosen[seg], scores[seg] = _pick(candidates, target, mask, history_scores)
    return FormChoice(chosen, scores, jobs)


def _pick(
    candidates: Mapping[str, np.ndarray],
    target: np.ndarray,
    mask: np.ndarray,
    history_scores: Mapping[str, float] | None,
) -> tuple[str, dict[str, float]]:
    """The lowest-MALR form on ``mask``; a model form must also beat the best baseline form
    in most of the ``BLOCKS`` consecutive time blocks, or the baseline is kept."""
    rows = np.flatnonzero(mask)
    scores = {n: float(np.median(np.abs(c[rows] - target[rows]))) for n, c in candidates.items()}
    ranked = sorted(scores, key=lambda n: (scores[n], FORMS.index(n)))
    judge = history_scores or scores
    baseline = min(BASELINE_FORMS, key=lambda n: (judge.get(n, np.inf), FORMS.index(n)))
    best = next(n for n in ranked if n not in BASELINE_FORMS)
    if scores[best] >= scores[baseline]:
        return baseline, scores
    blocks = [b for b in np.array_split(rows, BLOCKS) if len(b)]
    wins = sum(
        _malr(candidates[best], target, b) < _malr(candidates[baseline], target, b) for b in blocks
    )
    return (best if 2 * wins > len(blocks) else baseline), scores


def baseline_scores(base: Baselines, target: np.ndarray, global_log: float) -> dict[str, float]:
    """Each baseline form's MALR over ``target`` (every training job: baselines need no fit)."""
    forms = {
        "global-median": np.full(len(target), global_log),
        "user-median": base.user,
        "shrunk-median": base.shrunk,
    }
    return {n: float(np.median(np.abs(c - target))) for n, c in forms.items()}


def _malr(centre: np.ndarray, target: np.ndarray, rows: np.ndarray) -> float:
    return float(np.median(np.abs(centre[rows] - target[rows])))


def apply(
    choice: FormChoice, candidates: Mapping[str, np.ndarray], known: np.ndarray
) -> np.ndarray:
    """Each job's centre under its segment's chosen form."""
    new = candidates[choice.chosen["new"]]
    old = candidates[choice.chosen["known"]]
    out: np.ndarray = np.where(known, old, new)
    return out
