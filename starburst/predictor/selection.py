"""Choosing the form (``forms``) by rolling-origin cross-validation over the training period,
so that the predictor is never worse than the best baseline on data like the training's.

Terms:
- *rolling-origin folds*: the training jobs in submit order; the last ``1 − start`` of them are
  cut into K consecutive *validation blocks*, and fold k's models are fitted only on the jobs
  before its block — a model predicting the jobs after its training, as it is used live.
- *out-of-fold (OOF) prediction*: a validation job's prediction by its own fold's models.
- *CV MALR* of a form: the median |log(predicted / true)| of its OOF predictions over every
  validation job (*pooled*), and per fold.
- *gap* of a form against the reference baseline: CV MALR(form) / CV MALR(reference) − 1
  (−0.10 = 10% lower). Its 90% interval comes from a *paired block bootstrap*: the validation
  jobs are resampled in blocks of ``BLOCK`` consecutive jobs (a user's consecutive jobs are
  alike, so resampling single jobs would understate the noise), the same resample for both.

Choice: the *reference* is the baseline with the lowest pooled CV MALR. Then model forms are
tried in order of pooled CV MALR; the first one that is (a) at least ``margin`` lower than the
reference pooled, (b) lower in at least K − ⌊K/4⌋ of the K folds (every fold of up to three,
3 of 4, 4 of 5 …) and (c) whose gap's 90% interval lies wholly below zero, is chosen. If none
passes, the reference is: a model that does not beat the best baseline consistently over the
training period is not trusted to beat it on the next one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from starburst.predictor.baselines import BASELINES, LABELS
from starburst.predictor.forms import FORMS, needs_median, needs_residual

BLOCK = 10
RESAMPLES = 1000
#: bootstrap work is bounded: fewer resamples (never under 200) on large validation sets
BOOTSTRAP_CELLS = 5_000_000
LEVEL = 0.90


def rolling_folds(n: int, folds: int, start: float, min_jobs: int) -> list[tuple[int, int]]:
    """The validation blocks ``(first, end)`` over ``n`` jobs in submit order; the fold of a
    block trains on jobs ``[0, first)``. Fewer folds when blocks would be under ``min_jobs``."""
    first = max(1, min(n - 1, int(n * start)))
    k = max(1, min(folds, (n - first) // max(min_jobs, 1)))
    edges = [first + (n - first) * i // k for i in range(k + 1)]
    return list(pairwise(edges))


def malr(centre: np.ndarray, target: np.ndarray) -> float:
    return float(np.median(np.abs(centre - target))) if len(target) else math.nan


def gap_interval(
    errors: np.ndarray,
    reference: np.ndarray,
    seed: int = 0,
    resamples: int = RESAMPLES,
    block: int = BLOCK,
) -> tuple[float, float]:
    """The ``LEVEL`` interval of median(errors) / median(reference) − 1 (absolute errors of
    the same jobs, in time order) by the paired block bootstrap."""
    n = len(errors)
    if n == 0:
        return math.nan, math.nan
    resamples = max(200, min(resamples, BOOTSTRAP_CELLS // n))
    rng = np.random.default_rng(seed)
    blocks = -(-n // block)
    chunk = max(1, 2_000_000 // n)
    ratios = []
    for done in range(0, resamples, chunk):
        r = min(chunk, resamples - done)
        starts = rng.integers(0, n, size=(r, blocks))
        idx = ((starts[:, :, None] + np.arange(block)) % n).reshape(r, -1)[:, :n]
        num = np.median(errors[idx], axis=1)
        den = np.median(reference[idx], axis=1)
        ratios.append(np.where(den > 0, num / np.where(den > 0, den, 1.0) - 1.0, 0.0))
    tail = (1.0 - LEVEL) / 2.0
    lo, hi = np.quantile(np.concatenate(ratios), [tail, 1.0 - tail])
    return float(lo), float(hi)


@dataclass(frozen=True, slots=True)
class FormChoice:
    """The chosen form and the cross-validation it was chosen on.

    ``challenger``: the model form that was chosen, else the best one that was not (None if no
    model form was tried); ``gap``: its pooled gap against the reference with the 90%
    interval (point, low, high); ``wins``: the folds it was lower in.
    """

    chosen: str
    reference: str
    scores: Mapping[str, float] = field(default_factory=dict)
    fold_scores: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    challenger: str | None = None
    gap: tuple[float, float, float] | None = None
    wins: int = 0
    folds: int = 0
    jobs: int = 0

    @property
    def needs_median(self) -> bool:
        return needs_median(self.chosen)

    @property
    def needs_residual(self) -> bool:
        return needs_residual(self.chosen)

    @property
    def is_baseline(self) -> bool:
        return self.chosen in BASELINES

    def name(self, form: str | None = None) -> str:
        """A form's readable name (the chosen one by default)."""
        form = form or self.chosen
        if form in BASELINES:
            return f"{form} ({LABELS[form]})"
        if form == "model":
            return "model (boosted p50)"
        return f"{form} over {self.reference}"

    def describe(self) -> str:
        score = self.scores.get(self.chosen, math.nan)
        head = (
            f"{self.name()}: CV MALR {score:.3f} over {self.folds} rolling-origin folds "
            f"({self.jobs} validation jobs)"
        )
        if self.challenger is None or self.gap is None:
            return head
        point, lo, hi = self.gap
        verdict = "chosen" if self.chosen == self.challenger else "not consistently better"
        return (
            f"{head}; best model form {self.name(self.challenger)}: {point:+.1%} vs "
            f"{self.reference} (90% interval {lo:+.1%} … {hi:+.1%}), lower in {self.wins} of "
            f"{self.folds} folds: {verdict}"
        )

    def table(self) -> list[str]:
        """Every candidate's pooled and per-fold CV MALR, best first."""
        ranked = sorted(self.scores, key=lambda n: (self.scores[n], FORMS.index(n)))
        return [
            f"  {n:<22} {self.scores[n]:.3f}   "
            + " ".join(f"{v:.3f}" for v in self.fold_scores.get(n, ()))
            for n in ranked
        ]


def best_baseline(candidates: Mapping[str, np.ndarray], target: np.ndarray) -> str:
    """The baseline with the lowest pooled MALR (ties: the order of ``BASELINES``)."""
    names = [n for n in BASELINES if n in candidates]
    return min(names, key=lambda n: (malr(candidates[n], target), BASELINES.index(n)))


def choose(
    candidates: Mapping[str, np.ndarray],
    target: np.ndarray,
    blocks: Sequence[tuple[int, int]],
    reference: str,
    margin: float,
    seed: int = 0,
) -> FormChoice:
    """The form to use (see *Choice* above). ``candidates``: each form's OOF centres over the
    validation jobs, in time order; ``blocks``: each fold's rows within them."""
    errors = {n: np.abs(c - target) for n, c in candidates.items()}
    scores = {n: float(np.median(e)) for n, e in errors.items()}
    folds = {n: tuple(float(np.median(e[a:b])) for a, b in blocks) for n, e in errors.items()}
    need = len(blocks) - len(blocks) // 4
    ref = errors[reference]
    tried = sorted(
        (n for n in candidates if n not in BASELINES), key=lambda n: (scores[n], FORMS.index(n))
    )
    common = (scores, folds)
    best: tuple[str, float, int, tuple[float, float] | None] | None = None
    for form in tried:
        point = scores[form] / scores[reference] - 1.0 if scores[reference] > 0 else 0.0
        wins = sum(f < r for f, r in zip(folds[form], folds[reference], strict=True))
        interval = None
        if point <= -margin and wins >= need:
            interval = gap_interval(errors[form], ref, seed)
            if interval[1] < 0.0:
                gap = (point, *interval)
                return FormChoice(form, reference, *common, form, gap, wins, len(blocks), len(ref))
        best = best or (form, point, wins, interval)
    if best is None:
        return FormChoice(reference, reference, *common, folds=len(blocks), jobs=len(ref))
    form, point, wins, interval = best
    lo, hi = interval or gap_interval(errors[form], ref, seed)
    gap = (point, lo, hi)
    return FormChoice(reference, reference, *common, form, gap, wins, len(blocks), len(ref))
