"""Training entry points: completed jobs in, a versioned model artifact out.

The store (its ``ModelRegistry`` port) and trace files both feed the same narrow function,
``train_artifact(jobs)``: a sequence of completed ``Job`` values with their true ``runtime``
(and ``extra["finish_time"]`` when known). Nothing here reads a database or a clock: the
caller passes ``trained_at``.

Held-out metrics come from the held-out split (the most recent fifth of the training jobs,
which the boosting never saw): median absolute log-ratio, share within 2×, and p10–p90
coverage (≈ 0.8 by construction, since the band is calibrated there), and every candidate
form's MALR per segment (``val_malr[segment:form]``), from which the form was chosen.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact, model_version
from starburst.predictor.history import HistoryIndex
from starburst.predictor.model import TrainParams, completed, fit_model, holdout_start


def train_artifact(
    jobs: Sequence[Job],
    params: TrainParams | None = None,
    trained_at: datetime | None = None,
    keep_history: bool = True,
) -> ModelArtifact:
    """Fit a model on completed jobs and wrap it with its training window and metrics."""
    import sklearn

    params = params or TrainParams()
    done = completed(jobs)
    model = fit_model(done, params)
    history = HistoryIndex(done)
    cut = holdout_start(len(done), params)
    held = done[cut:]
    pred = model.predict(held, history)
    truth = np.array([j.runtime for j in held], dtype=float)
    ratio = np.abs(np.log(pred.value / truth))
    metrics = {
        "holdout_jobs": float(len(held)),
        "median_abs_log_ratio": float(np.median(ratio)),
        "within_2x": float(np.mean(ratio <= np.log(2.0))),
        "p10_p90_coverage": float(np.mean((pred.low <= truth) & (truth <= pred.high))),
    }
    for segment, scores in model.form.scores.items():
        metrics.update({f"val_malr[{segment}:{name}]": v for name, v in scores.items()})
    when = trained_at or datetime.now(UTC)
    window = (done[0].submit_time, done[-1].submit_time)
    return ModelArtifact(
        model=model,
        version=model_version(when, window, len(done)),
        trained_at=when.isoformat(timespec="seconds"),
        window=window,
        jobs=len(done),
        metrics=metrics,
        history=history if keep_history else None,
        sklearn_version=sklearn.__version__,
    )
