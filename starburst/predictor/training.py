"""Training entry points: completed jobs in, a versioned model artifact out.

The store (its ``ModelRegistry`` port) and trace files both feed the same narrow function,
``train_artifact(jobs)``: a sequence of completed ``Job`` values with their true ``runtime``
(and ``extra["finish_time"]`` when known). Nothing here reads a database or a clock: the
caller passes ``trained_at``.

Metrics are *cross-validated* (``fitting``): out-of-fold predictions of the chosen form over the
rolling-origin validation blocks of the training jobs, each by models fitted only on earlier
jobs — never the final model scored on the jobs it was fitted on. ``cv_malr`` and
``cv_within_2x``: the chosen form's error; ``cv_coverage_calibrated_on``: the band's p10–p90
coverage on the jobs it was calibrated on (≈ 0.8 by construction); ``cv_coverage_last_fold``:
on the last block with the band calibrated on the earlier ones only (out of sample);
``cv_malr[form]``: every candidate form's pooled CV MALR, from which the form was chosen.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from starburst.core.job import Job
from starburst.predictor.artifact import ModelArtifact, model_version
from starburst.predictor.fitting import fit_with_validation
from starburst.predictor.model import TrainParams, completed


def train_artifact(
    jobs: Sequence[Job],
    params: TrainParams | None = None,
    trained_at: datetime | None = None,
    keep_history: bool = True,
) -> ModelArtifact:
    """Fit a model on completed jobs and wrap it with its training window and metrics."""
    params = params or TrainParams()
    done = completed(jobs)
    fitted = fit_with_validation(done, params)  # too few jobs: refused before any import
    import sklearn

    model, history = fitted.model, fitted.history
    when = trained_at or datetime.now(UTC)
    window = (done[0].submit_time, done[-1].submit_time)
    return ModelArtifact(
        model=model,
        version=model_version(when, window, len(done)),
        trained_at=when.isoformat(timespec="seconds"),
        window=window,
        jobs=len(done),
        metrics=fitted.cv.metrics(model.shift),
        history=history if keep_history else None,
        sklearn_version=sklearn.__version__,
    )
