"""What the runtime predictor reads and writes, in memory (the ``ModelRegistry`` port):
history, predictions and model versions, with the SQL store's rules (``history`` holds only
measured runtimes, oldest end first; a prediction sets the job's estimate; one active
version per model name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from starburst.core.lifecycle import JobState
from starburst.core.records import HistoryJob, ModelVersion, Prediction

from .tables import JobRow, MemoryDatabase


class MemoryModels:
    """The ``ModelRegistry`` port: training history, predictions and model versions over
    the shared ``MemoryDatabase``."""

    def __init__(self, db: MemoryDatabase) -> None:
        self._db = db
        self._t = db.tables
        self._lock = db.lock

    def history(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        limit: int | None = None,
        states: Sequence[JobState] = (JobState.SUCCEEDED,),
    ) -> list[HistoryJob]:
        def wanted(row: JobRow) -> bool:
            end = row.ended_at
            return (
                row.state in states
                and row.started_at is not None
                and end is not None
                and (since is None or end >= since)
                and (until is None or end < until)
            )

        with self._lock:
            rows = sorted(
                (r for r in self._t.jobs.values() if wanted(r)),
                key=lambda r: (r.ended_at or 0.0, r.id),
            )
            if limit is not None:
                rows = rows[len(rows) - limit :] if limit > 0 else []
            return [_history(r) for r in rows]

    def record_predictions(
        self, predictions: Sequence[Prediction], *, set_runtime: bool = True
    ) -> None:
        with self._lock:
            for p in predictions:
                self._t.row(p.job_id)
            for p in predictions:
                if set_runtime:
                    self._t.jobs[p.job_id].predicted_runtime = p.value
                self._t.predictions.setdefault(p.job_id, []).append(
                    replace(p, quantiles=dict(p.quantiles))
                )

    def predictions(self, job_id: str) -> list[Prediction]:
        with self._lock:
            return list(self._t.predictions.get(job_id, []))

    def register_model(
        self,
        name: str,
        version: str,
        *,
        trained_on: int,
        metrics: Mapping[str, float] | None = None,
        artifact_uri: str | None = None,
        activate: bool = True,
        at: float | None = None,
    ) -> ModelVersion:
        with self._lock:
            if activate:
                self._t.models = [
                    replace(m, active=False) if m.name == name else m for m in self._t.models
                ]
            model = ModelVersion(
                id=len(self._t.models) + 1,
                name=name,
                version=version,
                active=activate,
                trained_on=trained_on,
                created_at=self._db.now(at),
                metrics=dict(metrics or {}),
                artifact_uri=artifact_uri,
            )
            self._t.models.append(model)
            return model

    def active_model(self, name: str) -> ModelVersion | None:
        with self._lock:
            return next((m for m in self._t.models if m.name == name and m.active), None)

    def model_versions(self, name: str) -> list[ModelVersion]:
        with self._lock:
            return [m for m in self._t.models if m.name == name]


def _history(row: JobRow) -> HistoryJob:
    return HistoryJob(
        job=row.job(),
        state=row.state,
        ran_on=row.ran_on,
        started_at=row.started_at or 0.0,
        ended_at=row.ended_at or 0.0,
        image=row.image,
        command=row.command,
        declared_runtime=row.declared_runtime,
    )
