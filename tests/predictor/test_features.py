"""Submit-time features: unseen and missing values, declared estimates, command tokens."""

from __future__ import annotations

import math

import numpy as np

from starburst.core.job import Job
from starburst.predictor.baselines import HistoryView
from starburst.predictor.features import (
    CATEGORICAL,
    FeatureEncoder,
    calendar,
    declared_runtime,
)
from starburst.predictor.history import HistoryIndex


def job(i: int, **kw: object) -> Job:
    base: dict[str, object] = dict(
        id=f"j{i}",
        submit_time=float(i),
        gpus=1,
        runtime=60.0,
        user="ann",
        team="t",
        gpu_type="A100",
        name="n",
        extra={"image": "img", "command": "python a.py"},
    )
    base.update(kw)
    return Job(**base)  # type: ignore[arg-type]


def column(encoder: FeatureEncoder, name: str) -> int:
    return encoder.names.index(name)


def test_unseen_rare_and_missing_categories() -> None:
    train = [job(i) for i in range(5)] + [job(9, user="rare")]
    enc = FeatureEncoder.fit(train)
    probe = [
        job(10),
        job(11, user="stranger", gpu_type="TPU", extra={"image": "new"}),
        job(12, user="rare"),
        job(13, user=None, team=None, gpu_type=None, name=None, extra={}),
    ]
    x = enc.transform(probe, HistoryIndex(train))
    assert x.shape == (4, len(enc.names))
    user, gpu, image = (column(enc, c) for c in ("user", "gpu_type", "image"))
    assert x[0, user] == 0.0  # known user
    assert x[1, user] == x[2, user] == 1.0  # unseen and too-rare users share "other"
    assert x[1, gpu] == 1.0 and x[1, image] == 1.0
    assert np.isnan(x[3, [column(enc, c) for c in CATEGORICAL]]).all()
    assert enc.categorical_mask.sum() == len(CATEGORICAL)


def test_declared_runtime_ignores_junk() -> None:
    assert declared_runtime(job(0, extra={"declared_runtime": "3600"})) == 3600.0
    assert declared_runtime(job(0, extra={"time_limit": "7200"})) == 7200.0
    for bad in ("", "soon", "-5", "nan", "inf", "0"):
        assert declared_runtime(job(0, extra={"declared_runtime": bad})) is None
    assert declared_runtime(job(0, extra={})) is None


def test_command_flags_reach_the_features() -> None:
    enc = FeatureEncoder.fit([job(0)])
    a, b, c = (job(1, extra={"command": f"python t.py --epochs {e} --bs 8"}) for e in (10, 20, 10))
    x = enc.transform([a, b, c], HistoryIndex([]))
    assert not np.array_equal(x[0], x[1])
    np.testing.assert_array_equal(x[0], x[2])
    work = column(enc, "log_work")
    assert math.isclose(x[0, work], math.log(10)) and math.isclose(x[1, work], math.log(20))


def test_calendar_hour_and_weekday() -> None:
    hours, days = calendar(np.array([0.0, 3600 * 25.5, 86400 * 6 + 1]))
    assert hours.tolist() == [0, 1, 0]
    assert days.tolist() == [0, 1, 6]


def test_a_view_looked_up_once_gives_the_features_a_fresh_look_up_gives(
    workload: list[Job],
) -> None:
    train, probe = workload[:1000], workload[1000:1200]
    history = HistoryIndex(train)
    enc = FeatureEncoder.fit(train)
    view = HistoryView.of(probe, history)
    shared = enc.transform(probe, history, view)
    np.testing.assert_array_equal(shared, enc.transform(probe, history))
    # the view is what the user, team and same-GPU columns read: another one shows
    other = HistoryView.of(probe, HistoryIndex(train[:100]))
    changed = enc.transform(probe, history, other)
    assert not np.array_equal(
        changed[:, column(enc, "user_median")],
        shared[:, column(enc, "user_median")],
        equal_nan=True,
    )
    np.testing.assert_array_equal(
        changed[:, column(enc, "family_median")], shared[:, column(enc, "family_median")]
    )
