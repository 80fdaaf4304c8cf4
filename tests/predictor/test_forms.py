"""Forms and baselines: what each candidate estimate is, computed leak-free from history."""

from __future__ import annotations

import math

import numpy as np
import pytest

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact
from starburst.predictor.baselines import BASELINES, HistoryView
from starburst.predictor.estimator import ModelEstimator
from starburst.predictor.forms import FORMS, MODEL_FORMS, centre, model_centres
from starburst.predictor.history import HistoryIndex

LOG500 = math.log(500.0)


def test_baselines_fall_back_from_gpus_to_user_to_global_and_shrink_to_the_team() -> None:
    done = [
        Job(id=f"t{i}", submit_time=float(i), gpus=1, runtime=100.0, user=f"u{i}", team="vc")
        for i in range(5)
    ]
    done += [
        Job(id="a0", submit_time=10.0, gpus=8, runtime=10_000.0, user="ann", team="vc"),
        Job(id="a1", submit_time=20.0, gpus=1, runtime=1_000.0, user="ann", team="vc"),
    ]
    probe = [
        Job(id="p", submit_time=1e6, gpus=8, user="ann", team="vc"),
        Job(id="q", submit_time=1e6, gpus=2, user="ann", team="vc"),
        Job(id="r", submit_time=1e6, gpus=1, user="zed", team="other"),
    ]
    view = HistoryView.of(probe, HistoryIndex(done))
    got = view.centres(LOG500)
    assert set(got) == set(BASELINES)
    ann = (math.log(10_000.0) + math.log(1_000.0)) / 2
    assert got["user-median-10"][:2] == pytest.approx([ann, ann])
    assert got["user-gpus-median-10"][0] == pytest.approx(math.log(10_000.0))  # her 8-GPU job
    assert got["user-gpus-median-5"][1] == pytest.approx(ann)  # no 2-GPU job: her median
    assert got["user-median-3"][2] == got["global-median"][2] == LOG500  # nobody: global
    # two jobs of ann's against three of shrinkage towards vc's median (100 s)
    assert got["shrunk-median"][0] == pytest.approx((2 * ann + 3 * math.log(100.0)) / 5)
    assert view.user_jobs.tolist() == [2, 2, 0]
    low, high = view.band("global-median", LOG500, (1.0, 9.0))
    assert low.tolist() == [1.0] * 3 and high.tolist() == [9.0] * 3


def test_model_forms_combine_the_model_and_the_reference_baseline() -> None:
    m, r, b, n = np.array([2.0, 2.0]), np.array([1.0, 1.0]), np.array([4.0, 4.0]), np.array([0, 5])
    got = model_centres(m, r, b, n)
    assert set(got) == set(MODEL_FORMS) and set(FORMS) == set(BASELINES) | set(MODEL_FORMS)
    assert got["residual"].tolist() == [5.0, 5.0] and got["residual-0.5"].tolist() == [4.5, 4.5]
    assert got["blend-0.25"].tolist() == [3.5, 3.5]
    assert got["shrink-5"].tolist() == [2.0, 3.0]  # a new user gets the model, others lean home
    assert set(model_centres(None, r, b, n)) == {"residual", "residual-0.5"}


def test_a_form_without_its_model_output_is_an_error() -> None:
    view = HistoryView.of([Job(id="p", submit_time=1.0, gpus=1)], HistoryIndex([]))
    assert centre("global-median", "global-median", view, 3.0, None, None).tolist() == [3.0]
    with pytest.raises(ValueError, match="needs a model output"):
        centre("blend-0.5", "global-median", view, 3.0, None, np.zeros(1))


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
