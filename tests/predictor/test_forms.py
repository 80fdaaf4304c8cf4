"""The predictor's form: chosen on the held-out recent slice, never worse than a baseline there,
recorded in the artifact and shown by ``predictor show``."""

from __future__ import annotations

import numpy as np
import pytest

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.estimator import ModelEstimator
from starburst.predictor.evaluation import evaluate, time_split
from starburst.predictor.forms import FORMS, SEGMENT_JOBS, Baselines, centres, choose
from starburst.predictor.history import HistoryIndex
from starburst.predictor.training import train_artifact
from tests.predictor.conftest import SMALL

N = 300


def _candidates(target: np.ndarray, **errors: np.ndarray) -> dict[str, np.ndarray]:
    """Every form's centre = target + a constant error, unless given."""
    out = {name: target + 1.0 for name in FORMS}
    out.update({name.replace("_", "-"): target + e for name, e in errors.items()})
    return out


def test_a_model_form_that_wins_overall_but_not_over_time_loses_to_the_baseline() -> None:
    target = np.zeros(N)
    lucky = np.where(np.arange(N) < N // 3, 0.1, 0.55)  # great in block 1 only
    candidates = _candidates(target, user_median=np.full(N, 0.5), model=lucky)
    assert np.median(np.abs(lucky)) < 0.5 + 0.1  # (the overall win is small but real)
    choice = choose(candidates, target, np.ones(N, dtype=bool))
    assert choice.chosen == {"new": "user-median", "known": "user-median"}


def test_a_model_form_that_wins_in_every_block_is_chosen() -> None:
    target = np.zeros(N)
    candidates = _candidates(target, user_median=np.full(N, 0.5), residual=np.full(N, 0.3))
    choice = choose(candidates, target, np.ones(N, dtype=bool))
    assert choice.chosen["known"] == "residual" and choice.needs_residual
    assert choice.scores["known"]["residual"] == pytest.approx(0.3)


def test_the_reference_baseline_comes_from_all_of_history_not_the_slice() -> None:
    target = np.zeros(N)
    candidates = _candidates(
        target, user_median=np.full(N, 0.6), global_median=np.full(N, 0.4), model=np.full(N, 0.5)
    )
    judged = choose(
        candidates,
        target,
        np.ones(N, dtype=bool),
        {"global-median": 0.9, "user-median": 0.5, "shrunk-median": 0.7},
    )
    assert judged.chosen["known"] == "model"  # beats user-median, history's best baseline
    plain = choose(candidates, target, np.ones(N, dtype=bool))
    assert plain.chosen["known"] == "global-median"  # the slice's best baseline beats it


def test_small_segments_take_the_overall_choice() -> None:
    target = np.zeros(N)
    known = np.arange(N) >= SEGMENT_JOBS - 1  # one job short of its own choice
    new_good = np.where(known, 0.5, 0.0)
    candidates = _candidates(target, user_median=np.full(N, 0.4), model=new_good)
    choice = choose(candidates, target, known)
    assert choice.chosen["new"] == choice.chosen["known"] == "user-median"
    assert "new" not in choice.scores and choice.jobs["new"] == SEGMENT_JOBS - 1


def test_baselines_shrink_users_with_little_history_towards_their_team() -> None:
    done = [
        Job(id=f"t{i}", submit_time=float(i), gpus=1, runtime=100.0, user=f"u{i}", team="vc")
        for i in range(5)
    ]
    done.append(Job(id="a0", submit_time=10.0, gpus=1, runtime=10_000.0, user="ann", team="vc"))
    probe = [
        Job(id="p", submit_time=1e6, gpus=1, user="ann", team="vc"),
        Job(id="q", submit_time=1e6, gpus=1, user="zed", team="other"),
    ]
    base = Baselines.of(probe, HistoryIndex(done), global_log=np.log(500.0))
    assert base.user[0] == pytest.approx(np.log(10_000.0))  # ann's one job
    # one job of ann's against three of shrinkage towards vc's median (100 s)
    assert base.shrunk[0] == pytest.approx((np.log(10_000.0) + 3 * np.log(100.0)) / 4)
    assert base.user[1] == base.shrunk[1] == pytest.approx(np.log(500.0))  # nobody: global
    assert not base.known.any()
    forms = centres(np.zeros(2), np.ones(2), base, np.log(500.0))
    assert forms["residual"] == pytest.approx(base.user + 1)
    assert forms["blend-0.5"] == pytest.approx(base.user / 2)


def test_training_records_the_choice_and_predicts_with_it(artifact: ModelArtifact) -> None:
    form = artifact.model.form
    assert set(form.chosen) == {"new", "known"} and set(form.chosen.values()) <= set(FORMS)
    assert any(k.startswith("val_malr[all:") for k in artifact.metrics)
    text = artifact.describe()
    assert "chosen form" in text and "validation MALR (all users)" in text
    assert (artifact.model.residual is not None) == form.needs_residual


def test_never_worse_than_a_baseline_where_the_model_has_nothing_to_learn() -> None:
    """Runtimes are a per-user constant times noise: nothing but the user's history helps."""
    rng = np.random.default_rng(3)
    users = [f"u{i}" for i in range(30)]
    scale = {u: float(rng.lognormal(8, 1.5)) for u in users}
    jobs = []
    for i in range(1200):
        user = users[int(rng.integers(len(users)))]
        jobs.append(
            Job(
                id=f"j{i}",
                submit_time=600.0 * i,
                gpus=int(rng.choice([1, 2, 4, 8])),
                runtime=scale[user] * float(rng.lognormal(0, 0.8)),
                user=user,
            )
        )
    train, _ = time_split(jobs, 0.7)
    ev = evaluate(jobs, 0.7, artifact=train_artifact(train, SMALL))
    assert ev.model.median_abs_log_ratio <= 1.05 * ev.best_baseline.median_abs_log_ratio


def test_estimates_carry_the_chosen_forms_centre(
    artifact: ModelArtifact, split: tuple[list[Job], list[Job]]
) -> None:
    train, test = split
    history = HistoryIndex(train + test)
    estimator = ModelEstimator(artifact, history)
    low, mid, high = artifact.model.predict_log(test, history)
    values = [e.value for e in estimator.estimate(test)]
    np.testing.assert_allclose(np.log(values), mid, rtol=1e-9)
    assert (low <= mid).all() and (mid <= high).all()
