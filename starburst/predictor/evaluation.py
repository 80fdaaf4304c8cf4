"""Judging the predictor: a time-ordered split, the model against simple baselines.

Terms:
- *time-ordered split*: completed jobs sorted by submit time; the first ``train_share`` train,
  the rest test. Test-time history features see every job (train or test) that finished before
  the test job was submitted — what the live system would know — and nothing later.
- *median absolute log-ratio* (MALR): median of |log(predicted / true)|; 0.69 means "typically
  off by 2×". *Within 2×*: share of jobs with predicted/true in [1/2, 2]. *Coverage*: share of
  jobs whose true runtime lies in the predicted p10–p90 band (0.8 is ideal).
- Baselines: every history baseline of ``baselines`` (global median, the user's median over
  their last 3, 5, 10 and 30 jobs, the user's median at the job's GPU count over 5 and 10, the
  user's median shrunk to the team's), each with its band; *declared* (the user's own value,
  on the jobs that have one; no band). The *best baseline* is the one with the lowest MALR on
  the test jobs — chosen in hindsight, so a demanding reference.
- *Gap*: model MALR / best baseline MALR − 1, with its 90% interval from the paired block
  bootstrap over the test jobs (``selection.gap_interval``).
- *Reference*: the baseline training ranked best on its own held-out recent slice (the form
  choice's reference, ``selection``): the best baseline a deployable method can know.
  *Hindsight*: where the test's best baseline stood among the baselines on that slice; a low
  rank means the best baseline could only have been picked by looking at the test jobs.

Invariants: every row of one report is computed on the same jobs (the "declared subset" rows
share the subset), so the numbers compare like with like.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.baselines import BASELINES, LABELS, USER, HistoryView
from starburst.predictor.estimator import ModelEstimator
from starburst.predictor.features import declared_runtime
from starburst.predictor.history import HistoryIndex
from starburst.predictor.model import TrainParams, completed
from starburst.predictor.selection import gap_interval
from starburst.predictor.training import train_artifact

LN2 = math.log(2.0)


@dataclass(frozen=True, slots=True)
class ErrorRow:
    name: str
    jobs: int
    median_abs_log_ratio: float
    within_2x: float
    coverage: float | None


def error_row(
    name: str,
    truth: np.ndarray,
    value: np.ndarray,
    low: np.ndarray | None = None,
    high: np.ndarray | None = None,
) -> ErrorRow:
    if len(truth) == 0:
        return ErrorRow(name, 0, math.nan, math.nan, None)
    ratio = np.abs(np.log(value / truth))
    coverage = None
    if low is not None and high is not None:
        coverage = float(np.mean((low <= truth) & (truth <= high)))
    return ErrorRow(
        name, len(truth), float(np.median(ratio)), float(np.mean(ratio <= LN2)), coverage
    )


@dataclass(frozen=True, slots=True)
class Hindsight:
    """The test's best baseline as training saw it: its 1-based ``rank`` among the ``of``
    baselines by cross-validated MALR, its ``cv_malr`` and the reference's."""

    baseline: str
    rank: int
    of: int
    cv_malr: float
    reference_cv_malr: float

    @property
    def cv_gap(self) -> float:
        """Its CV MALR / the reference's − 1 (positive: training ranked it worse)."""
        return self.cv_malr / self.reference_cv_malr - 1.0


@dataclass(frozen=True, slots=True)
class Evaluation:
    """``rows``: the model, then every baseline (``BASELINES`` order); ``gap``: the 90%
    interval of the model's gap against the best baseline."""

    train_jobs: int
    test_jobs: int
    artifact: ModelArtifact
    rows: list[ErrorRow]
    declared_rows: list[ErrorRow]
    test_start: float = 0.0
    gap: tuple[float, float] = (math.nan, math.nan)

    @property
    def overlaps(self) -> bool:
        """The artifact was trained on jobs submitted in the test part (a leaky evaluation)."""
        return self.artifact.window[1] > self.test_start

    @property
    def model(self) -> ErrorRow:
        return self.rows[0]

    @property
    def best_baseline(self) -> ErrorRow:
        return min(self.rows[1:], key=lambda r: r.median_abs_log_ratio)

    def row(self, baseline: str) -> ErrorRow:
        """The row of a baseline by its ``baselines`` name."""
        return next(r for r in self.rows[1:] if r.name == LABELS[baseline])

    @property
    def improvement(self) -> float:
        """1 − model MALR / best baseline MALR (0.25 = a quarter lower)."""
        return self.improvement_over(self.best_baseline)

    def improvement_over(self, row: ErrorRow) -> float:
        return 1.0 - self.model.median_abs_log_ratio / row.median_abs_log_ratio

    @property
    def reference(self) -> ErrorRow:
        """The test row of the baseline training ranked best (see *Reference*)."""
        return self.row(self.artifact.model.form.reference)

    @property
    def hindsight(self) -> Hindsight | None:
        """Where the test's best baseline ranked in training (None without CV scores)."""
        form = self.artifact.model.form
        scores = {b: form.scores[b] for b in BASELINES if b in form.scores}
        best = next(b for b in BASELINES if LABELS[b] == self.best_baseline.name)
        reference = scores.get(form.reference, math.nan)
        if best not in scores or not reference > 0:
            return None
        ranked = sorted(scores, key=lambda b: (scores[b], BASELINES.index(b)))
        return Hindsight(best, ranked.index(best) + 1, len(ranked), scores[best], reference)


def time_split(jobs: Sequence[Job], train_share: float) -> tuple[list[Job], list[Job]]:
    """Completed jobs in submit order, cut at ``train_share``."""
    if not 0.0 < train_share < 1.0:
        raise ValueError(f"train share must be in (0, 1), got {train_share}")
    done = completed(jobs)
    cut = int(len(done) * train_share)
    return done[:cut], done[cut:]


def evaluate(
    jobs: Sequence[Job],
    train_share: float = 0.7,
    params: TrainParams | None = None,
    artifact: ModelArtifact | None = None,
) -> Evaluation:
    """Train on the past part of ``jobs`` (unless ``artifact`` is given), score the rest."""
    train, test = time_split(jobs, train_share)
    artifact = artifact or train_artifact(train, params, keep_history=False)
    history = HistoryIndex(train + test)
    pred = ModelEstimator(artifact, history).predict(test)
    truth = np.array([j.runtime for j in test], dtype=float)
    train_logs = np.log(np.array([j.runtime for j in train], dtype=float))
    g_mid, g_low, g_high = (float(np.percentile(train_logs, q)) for q in (50, 10, 90))
    view = HistoryView.of(test, history)
    bands = {}
    for name in BASELINES:
        low, high = view.band(name, g_mid, (g_low, g_high))
        bands[name] = (np.exp(view.centre(name, g_mid)), np.exp(low), np.exp(high))
    rows = [error_row("model (p50, p10–p90)", truth, pred.value, pred.low, pred.high)]
    rows += [error_row(LABELS[name], truth, *bands[name]) for name in BASELINES]
    declared = np.array([declared_runtime(j) or math.nan for j in test], dtype=float)
    has = ~np.isnan(declared)
    user = [b[has] for b in bands[USER]]
    declared_rows = [
        error_row("model", truth[has], pred.value[has], pred.low[has], pred.high[has]),
        error_row(LABELS[USER], truth[has], *user),
        error_row("declared by user", truth[has], declared[has]),
    ]
    best = min(rows[1:], key=lambda r: r.median_abs_log_ratio)
    best_value = bands[next(n for n in BASELINES if LABELS[n] == best.name)][0]
    gap = gap_interval(np.abs(np.log(pred.value / truth)), np.abs(np.log(best_value / truth)))
    return Evaluation(
        len(train),
        len(test),
        artifact,
        rows,
        declared_rows,
        test[0].submit_time if test else math.inf,
        gap,
    )


def format_rows(rows: Sequence[ErrorRow]) -> list[str]:
    lines = [f"  {'predictor':<28} {'jobs':>7} {'MALR':>7} {'within 2x':>10} {'p10-p90 cov':>12}"]
    for r in rows:
        cov = f"{r.coverage:.3f}" if r.coverage is not None else "—"
        lines.append(
            f"  {r.name:<28} {r.jobs:>7} {r.median_abs_log_ratio:>7.3f} "
            f"{r.within_2x:>10.3f} {cov:>12}"
        )
    return lines


def format_evaluation(ev: Evaluation) -> str:
    best = ev.best_baseline
    form = ev.artifact.model.form
    reference = ev.reference
    lo, hi = ev.gap
    lines = [
        f"time-ordered split: train {ev.train_jobs} jobs (model {ev.artifact.version}), "
        f"test {ev.test_jobs} jobs",
        "MALR = median |log(predicted / true)|, lower is better",
        *format_rows(ev.rows),
        f"gap vs the best baseline on the test jobs ({best.name}): {-ev.improvement:+.1%}, "
        f"90% interval {lo:+.1%} … {hi:+.1%} (paired block bootstrap; negative = model lower)",
        f"form chosen by training: {form.name()}; gap vs the baseline training ranked best "
        f"({reference.name}): {-ev.improvement_over(reference):+.1%}",
    ]
    seen = ev.hindsight
    if seen is not None and seen.baseline != form.reference:
        lines.append(
            f"hindsight: the test's best baseline ranked {seen.rank} of {seen.of} baselines on "
            f"training's held-out slice (CV MALR {seen.cv_malr:.3f}, {seen.cv_gap:+.1%} vs "
            f"{seen.reference_cv_malr:.3f} for {form.reference}, which scores "
            f"{reference.median_abs_log_ratio:.3f} on the test jobs)"
        )
    if ev.overlaps:
        lines.append(
            "caution: the model was trained on part of the test period; these "
            "figures flatter it (train on the past only, or lower --train-share)"
        )
    if ev.declared_rows and ev.declared_rows[0].jobs:
        lines += ["jobs with a user-declared runtime:", *format_rows(ev.declared_rows)]
    else:
        lines.append("no test job has a user-declared runtime")
    return "\n".join(lines)
