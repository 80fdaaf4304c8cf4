"""The form is chosen by rolling-origin cross-validation: a model form replaces the best
baseline only if it beats it consistently, and the band is calibrated for the form used."""

from __future__ import annotations

import math

import numpy as np
import pytest

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.baselines import HistoryView
from starburst.predictor.evaluation import evaluate, time_split
from starburst.predictor.fitting import fit_regressors, fit_with_validation, openmp_threads
from starburst.predictor.forms import FORMS
from starburst.predictor.history import HistoryIndex
from starburst.predictor.model import band, calibrate
from starburst.predictor.selection import choose, gap_interval, rolling_folds
from starburst.predictor.training import train_artifact
from tests.predictor.conftest import SMALL

N = 400
BLOCKS = [(0, 100), (100, 200), (200, 300), (300, 400)]
REF = "user-median-10"


def _errors(by_form: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Candidates whose errors against a zero target are given (others: error ≈ 1)."""
    target = np.zeros(N)
    rng = np.random.default_rng(0)
    out = {name: 1.0 + rng.normal(0, 0.2, N) for name in FORMS}
    out.update(by_form)
    return out, target


def _noisy(level: float, seed: int) -> np.ndarray:
    return level * np.random.default_rng(seed).lognormal(0, 0.5, N)


def test_rolling_folds_tile_the_recent_half_and_shrink_on_little_data() -> None:
    assert rolling_folds(1000, 4, 0.5, 20) == [(500, 625), (625, 750), (750, 875), (875, 1000)]
    assert rolling_folds(100, 4, 0.5, 20) == [(50, 75), (75, 100)]  # blocks of at least 20
    assert rolling_folds(50, 4, 0.5, 20) == [(25, 50)]


def test_a_model_form_better_in_every_fold_is_chosen() -> None:
    candidates, target = _errors({"user-median-10": _noisy(0.5, 1), "residual": _noisy(0.3, 2)})
    choice = choose(candidates, target, BLOCKS, REF, margin=0.03)
    assert choice.chosen == "residual" and choice.needs_residual and not choice.is_baseline
    assert choice.wins == 4 and choice.gap is not None and choice.gap[2] < 0
    assert choice.scores["residual"] == pytest.approx(np.median(_noisy(0.3, 2)))
    assert "chosen" in choice.describe() and "4 of 4 folds" in choice.describe()


def test_a_model_form_that_wins_pooled_but_not_over_time_falls_back_to_the_baseline() -> None:
    lucky = _noisy(0.5, 3)
    lucky[:200] *= 0.5  # far better in folds 1 and 2, a little worse in folds 3 and 4
    lucky[200:] *= 1.05
    candidates, target = _errors({"user-median-10": _noisy(0.5, 3), "model": lucky})
    assert np.median(lucky) < np.median(_noisy(0.5, 3))  # the pooled win is real
    choice = choose(candidates, target, BLOCKS, REF, margin=0.03)
    assert choice.chosen == REF and choice.is_baseline
    assert choice.challenger == "model" and choice.wins == 2
    assert "not consistently better" in choice.describe()


def test_a_win_inside_the_margin_or_the_noise_is_not_enough() -> None:
    base = _noisy(0.5, 4)
    candidates, target = _errors({"user-median-10": base, "blend-0.5": base * 0.99})
    assert choose(candidates, target, BLOCKS, REF, margin=0.03).chosen == REF
    rng = np.random.default_rng(5)  # 4% lower on average, but noisy job by job
    noisy = base * rng.lognormal(-0.04, 0.8, N)
    candidates, target = _errors({"user-median-10": base, "blend-0.5": noisy})
    choice = choose(candidates, target, BLOCKS, REF, margin=0.0)
    assert choice.chosen == REF and choice.gap is not None and choice.gap[2] > 0


def test_the_next_model_form_may_pass_where_the_best_one_fails() -> None:
    lucky = _noisy(0.5, 6)
    lucky[:100] *= 0.1  # best pooled, but only through fold 1
    candidates, target = _errors(
        {"user-median-10": _noisy(0.5, 6), "model": lucky, "blend-0.5": _noisy(0.42, 7)}
    )
    choice = choose(candidates, target, BLOCKS, REF, margin=0.03)
    assert choice.scores["model"] < choice.scores["blend-0.5"]
    assert choice.chosen == "blend-0.5" and choice.needs_median


def test_the_gap_interval_brackets_the_truth() -> None:
    same = _noisy(0.5, 8)
    assert gap_interval(same, same) == (0.0, 0.0)
    lo, hi = gap_interval(same * 0.8, same)
    assert lo == pytest.approx(-0.2) and hi == pytest.approx(-0.2)
    better, worse = _noisy(0.4, 9), _noisy(0.5, 10)
    point = np.median(better) / np.median(worse) - 1
    lo, hi = gap_interval(better, worse)
    assert lo < point < hi < 0 and hi - lo < 0.3


def test_calibrated_band_misses_a_tenth_on_each_side() -> None:
    rng = np.random.default_rng(11)
    target = rng.normal(5.0, 1.0, 5000)
    low, high = np.full(5000, 4.8), np.full(5000, 5.2)  # far too narrow a raw band
    shift = calibrate(low, high, target)
    lo, mid, hi = band(low, np.full(5000, 5.0), high, shift)
    assert np.mean(target < lo) == pytest.approx(0.1, abs=0.01)
    assert np.mean(target > hi) == pytest.approx(0.1, abs=0.01)
    assert (lo <= mid).all() and (mid <= hi).all()


def per_user_noise(jobs: int = 1500, seed: int = 3) -> list[Job]:
    """Runtimes are a per-user constant times noise: nothing but the user's history helps."""
    rng = np.random.default_rng(seed)
    users = [f"u{i}" for i in range(30)]
    scale = {u: float(rng.lognormal(8, 1.5)) for u in users}
    out = []
    for i in range(jobs):
        user = users[int(rng.integers(len(users)))]
        out.append(
            Job(
                id=f"j{i}",
                submit_time=600.0 * i,
                gpus=int(rng.choice([1, 2, 4, 8])),
                cpus=float(rng.uniform(1, 64)),
                runtime=scale[user] * float(rng.lognormal(0, 0.8)),
                user=user,
                team=f"t{i % 3}",
            )
        )
    return out


@pytest.fixture(scope="module")
def baseline_world() -> tuple[list[Job], ModelArtifact]:
    jobs = per_user_noise()
    train, _ = time_split(jobs, 0.7)
    return jobs, train_artifact(train, SMALL)


def test_where_the_baseline_is_truly_best_training_chooses_it(
    baseline_world: tuple[list[Job], ModelArtifact],
) -> None:
    jobs, artifact = baseline_world
    form = artifact.model.form
    assert form.is_baseline and form.chosen.startswith("user-")
    assert artifact.model.median is None and artifact.model.residual is None  # nothing unused
    assert artifact.metrics["cv_malr"] == pytest.approx(form.scores[form.chosen])
    # the fallback predicts exactly that baseline: never above it, on any jobs
    train, test = time_split(jobs, 0.7)
    history = HistoryIndex(train + test)
    _, mid, _ = artifact.model.predict_log(test, history)
    expected = HistoryView.of(test, history).centre(form.chosen, artifact.model.global_log)
    np.testing.assert_allclose(mid, expected)
    ev = evaluate(jobs, 0.7, artifact=artifact)
    assert ev.model.median_abs_log_ratio == ev.row(form.chosen).median_abs_log_ratio


def test_the_metrics_are_out_of_fold_not_in_sample() -> None:
    """On pure noise no estimate beats ≈ 0.674 (the median |N(0, 1)|) on jobs it did not see;
    the boosted p50 fits its own training rows far better. The recorded score is the former."""
    rng = np.random.default_rng(12)
    jobs = [
        Job(
            id=f"n{i}",
            submit_time=600.0 * i,
            gpus=1,
            cpus=float(rng.uniform(1, 64)),
            runtime=float(rng.lognormal(7, 1)),
            user=f"u{i % 20}",
        )
        for i in range(1000)
    ]
    fitted = fit_with_validation(jobs, SMALL)
    assert fitted.model.form.is_baseline  # nothing to learn: a baseline it is
    cv = fitted.cv
    oof = cv.choice.scores["model"]
    assert oof > 0.62
    # the same p50 fitted on every job, scored on the validation jobs: in sample
    features = fitted.model.encoder.transform(jobs, fitted.history)
    features[:, np.isnan(features).all(axis=0)] = 0.0
    target = np.log([j.runtime for j in jobs])
    rows = slice(len(jobs) - len(cv.target), None)
    with openmp_threads(1):
        p50 = fit_regressors(SMALL, fitted.model.encoder, features, target, target, True, False)[2]
        fitted_rows = p50.predict(features[rows])
    assert np.median(np.abs(fitted_rows - target[rows])) < oof - 0.1
    metrics = cv.metrics(fitted.model.shift)
    assert metrics["cv_jobs"] == 500 and metrics["cv_malr[model]"] == oof


def test_where_the_model_is_truly_better_training_chooses_a_model_form(
    artifact: ModelArtifact,
) -> None:
    form = artifact.model.form
    assert not form.is_baseline and form.gap is not None and form.gap[2] < 0
    assert form.wins >= form.folds - form.folds // 4
    assert (artifact.model.median is not None) == form.needs_median
    assert (artifact.model.residual is not None) == form.needs_residual
    text = artifact.describe()
    assert "rolling-origin folds" in text and "cross-validated MALR by form" in text


def test_the_band_covers_about_eighty_percent_of_later_jobs() -> None:
    """A stationary workload (runtime ∝ GPUs × noise): the band calibrated on the out-of-fold
    predictions covers ≈ 80% of the later jobs, and the last-fold check says so too."""
    rng = np.random.default_rng(13)
    jobs = []
    for i in range(1500):
        gpus = int(rng.choice([1, 2, 4, 8]))
        jobs.append(
            Job(
                id=f"s{i}",
                submit_time=600.0 * i,
                gpus=gpus,
                runtime=600.0 * gpus * float(rng.lognormal(0, 0.7)),
                user=f"u{i % 25}",
            )
        )
    train, _ = time_split(jobs, 0.7)
    artifact = train_artifact(train, SMALL)
    ev = evaluate(jobs, 0.7, artifact=artifact)
    assert ev.model.coverage is not None and abs(ev.model.coverage - 0.8) < 0.06
    assert abs(artifact.metrics["cv_coverage_last_fold"] - 0.8) < 0.1
    assert math.isclose(artifact.metrics["cv_coverage_calibrated_on"], 0.8, abs_tol=0.05)
