"""The predictor and the store: train from finished jobs, load the active model, record predictions.

The store is used through its ``ModelRegistry`` port only (``starburst.core.ports``): any
store implementation will do, and nothing here imports SQLAlchemy.

Terms and conversions:
- A *history job* (``store.history()``) becomes a training ``Job`` whose
  ``extra["finish_time"]`` is its real end time, so the history features stay leak-free with
  queueing delays included. Its ``estimate`` is dropped: in the store a job's estimate is the
  latest *prediction* (else the declaration), and training on our own predictions would feed
  the model its past output. What the user gave at submit time goes to ``extra`` as in a
  trace: ``image``, ``command`` and ``declared_runtime`` (the declaration, kept in its own
  column, never a prediction).
- A *queued job* (``StoredJob``) becomes a prediction input the same way, so training and
  prediction see the same features.
- The active model is the store's active version of ``MODEL_NAME``; its ``artifact_uri`` is
  the artifact path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from starburst.core.job import Job
from starburst.core.ports import Estimate, ModelRegistry
from starburst.core.records import HistoryJob, Prediction, StoredJob
from starburst.predictor.artifact import ModelArtifact, save_artifact
from starburst.predictor.estimator import LoadedEstimator, load_estimator
from starburst.predictor.model import TrainParams
from starburst.predictor.training import train_artifact

MODEL_NAME = "runtime"
DEFAULT_LIMIT = 100_000


def _submitted(record: HistoryJob | StoredJob) -> dict[str, str]:
    """What the user gave at submit time beyond the core job, as trace-style ``extra``."""
    given = {"image": record.image, "command": record.command}
    extra = {key: value for key, value in given.items() if value}
    if record.declared_runtime is not None:
        extra["declared_runtime"] = repr(float(record.declared_runtime))
    return extra


def history_job(record: HistoryJob) -> Job:
    """A store ``HistoryJob`` as a training job (real end time; no estimate)."""
    job = record.job
    extra = {**job.extra, **_submitted(record), "finish_time": repr(float(record.ended_at))}
    return replace(job, estimate=None, extra=extra)


def queued_job(stored: StoredJob) -> Job:
    """A store ``StoredJob`` as a prediction input (image, command, declaration in ``extra``)."""
    job = stored.job
    return replace(job, extra={**job.extra, **_submitted(stored)})


def completed_jobs(store: ModelRegistry, limit: int = DEFAULT_LIMIT) -> list[Job]:
    """The most recent ``limit`` finished jobs of the store, as training jobs."""
    return [history_job(h) for h in store.history(limit=limit)]


def train_from_store(
    store: ModelRegistry,
    path: str | Path,
    *,
    limit: int = DEFAULT_LIMIT,
    params: TrainParams | None = None,
    trained_at: datetime | None = None,
    activate: bool = True,
    isolated: bool = False,
    reader: Callable[[], Sequence[Job]] | None = None,
) -> ModelArtifact:
    """Train on the store's history, write the artifact, register it as the active version
    (``isolated``: train in a niced child process, ``predictor.isolated``; ``reader``: with
    ``isolated``, a picklable callable the child calls to read the history itself, which must
    return what ``completed_jobs(store, limit)`` would, so this process never holds it)."""
    if isolated:
        from starburst.predictor.isolated import train_isolated

        source = reader if reader is not None else completed_jobs(store, limit)
        artifact = train_isolated(source, path, params, trained_at).artifact
    else:
        artifact = train_artifact(completed_jobs(store, limit), params, trained_at)
        save_artifact(artifact, path)
    store.register_model(
        MODEL_NAME,
        artifact.version,
        trained_on=artifact.jobs,
        metrics=artifact.metrics,
        artifact_uri=str(path),
        activate=activate,
    )
    return artifact


def load_from_store(store: ModelRegistry, limit: int = DEFAULT_LIMIT) -> LoadedEstimator:
    """Start-up: the store's active model over its recent history (never raises)."""
    active = store.active_model(MODEL_NAME)
    uri = active.artifact_uri if active is not None else None
    return load_estimator(uri, completed_jobs(store, limit))


def record_estimates(
    store: ModelRegistry,
    jobs: Sequence[Job],
    estimates: Sequence[Estimate],
    at: float,
    model_version_id: int | None = None,
    *,
    set_runtime: bool = True,
) -> None:
    """Record each estimate with its source (and the model version it came from);
    ``set_runtime``: ``ModelRegistry.record_predictions``'s."""
    store.record_predictions(
        [
            Prediction(
                job_id=j.id,
                value=e.value,
                low=e.low,
                high=e.high,
                source=e.source,
                created_at=at,
                model_version_id=model_version_id if e.source.startswith("model:") else None,
                quantiles={"p10": e.low, "p50": e.value, "p90": e.high},
            )
            for j, e in zip(jobs, estimates, strict=True)
        ],
        set_runtime=set_runtime,
    )


def record_as_active(
    store: ModelRegistry,
    jobs: Sequence[Job],
    estimates: Sequence[Estimate],
    at: float,
    *,
    set_runtime: bool = True,
) -> None:
    """``record_estimates`` with the active model's version: how every controller pass
    that predicts (the scheduling pass, Kueue's) records what it predicted."""
    model = store.active_model(MODEL_NAME)
    record_estimates(
        store, jobs, estimates, at, model.id if model else None, set_runtime=set_runtime
    )
