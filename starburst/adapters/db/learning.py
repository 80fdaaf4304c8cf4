"""What the runtime predictor reads and writes: history, predictions and model versions.

Invariants:
- ``history`` returns only jobs that ended with both a start and an end time, so every
  ``HistoryJob.job.runtime`` is a real measured runtime (end − start), ordered by end time
  then id (deterministic training sets).
- Recording a prediction also sets the job's ``predicted_runtime`` (what the waiting policy
  reads back through ``StoredJob.job.estimate``); all predictions stay, for evaluation.
- At most one version per model name is ``active``; registering an active version retires
  the previous one in the same transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa

from starburst.core.lifecycle import JobState
from starburst.core.records import HistoryJob, JobNotFound, ModelVersion, Prediction

from .base import Database, chunks, in_chunks, new_id, unnest_insert, unnest_update
from .convert import to_history, to_model_version, to_prediction, to_time
from .engine import run
from .models import JobRow, ModelVersionRow, PredictionRow, table

JOBS = table(JobRow)
PREDICTIONS = table(PredictionRow)
#: a job's latest predicted runtime (``b_id``: the job; ``predicted_runtime``: the value)
_SET_PREDICTED = sa.update(JOBS).where(JOBS.c.id == sa.bindparam("b_id"))
MODELS = table(ModelVersionRow)


def _first_unknown(conn: sa.Connection, ids: Mapping[str, object]) -> str | None:
    """The first of these jobs the store does not have, or None."""
    known: set[str] = set()
    for clause in in_chunks(JOBS.c.id, ids):
        known.update(conn.execute(sa.select(JOBS.c.id).where(clause)).scalars())
    return next((j for j in ids if j not in known), None)


class SqlModels:
    """The ``ModelRegistry`` port: training history, predictions and model versions over
    the shared ``Database``."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._engine = db.engine

    def history(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        limit: int | None = None,
        states: Sequence[JobState] = (JobState.SUCCEEDED,),
    ) -> list[HistoryJob]:
        """Finished jobs with measured runtimes, oldest end first (optionally ended in
        ``[since, until)``; ``limit`` keeps the most recent)."""
        query = sa.select(JOBS).where(
            JOBS.c.state.in_([s.value for s in states]),
            JOBS.c.started_at.is_not(None),
            JOBS.c.ended_at.is_not(None),
        )
        if since is not None:
            query = query.where(JOBS.c.ended_at >= to_time(since))
        if until is not None:
            query = query.where(JOBS.c.ended_at < to_time(until))
        if limit is not None:
            newest = query.order_by(JOBS.c.ended_at.desc(), JOBS.c.id.desc()).limit(limit)
            query = sa.select(newest.subquery())
            cols = query.selected_columns
            query = query.order_by(cols.ended_at, cols.id)
        else:
            query = query.order_by(JOBS.c.ended_at, JOBS.c.id)
        return run(self._engine, lambda c: [to_history(r) for r in c.execute(query).mappings()])

    def record_predictions(
        self, predictions: Sequence[Prediction], *, set_runtime: bool = True
    ) -> None:
        """Store predictions and set each job's ``predicted_runtime`` (last one wins; not
        when not ``set_runtime``: the port's)."""

        def write(conn: sa.Connection) -> None:
            latest = {p.job_id: p.value for p in predictions}
            if not latest:
                return
            values = [{"b_id": job_id, "predicted_runtime": v} for job_id, v in latest.items()]
            if not set_runtime:  # (an unknown job is refused all the same)
                missing = _first_unknown(conn, latest)
            else:
                if conn.dialect.name == "postgresql":  # one statement (``unnest_update``)
                    done = unnest_update(conn, JOBS, values, keys={"b_id": "id"})
                else:  # one statement executed for all
                    done = conn.execute(_SET_PREDICTED, values).rowcount
                missing = None if done == len(values) else _first_unknown(conn, latest)
            if missing is not None:
                raise JobNotFound(missing)
            rows = [
                {
                    "job_id": p.job_id,
                    "model_version_id": p.model_version_id,
                    "source": p.source,
                    "value": p.value,
                    "low": p.low,
                    "high": p.high,
                    "quantiles": dict(p.quantiles),
                    "created_at": to_time(p.created_at),
                }
                for p in predictions
            ]
            if conn.dialect.name == "postgresql":
                unnest_insert(conn, PREDICTIONS, rows)
                return
            for part in chunks(rows):
                conn.execute(sa.insert(PREDICTIONS), list(part))

        run(self._engine, write)

    def predictions(self, job_id: str) -> list[Prediction]:
        query = (
            sa.select(PREDICTIONS).where(PREDICTIONS.c.job_id == job_id).order_by(PREDICTIONS.c.id)
        )
        return run(self._engine, lambda c: [to_prediction(r) for r in c.execute(query).mappings()])

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
        now = to_time(self._db.now(at))

        def write(conn: sa.Connection) -> ModelVersion:
            if activate:
                conn.execute(sa.update(MODELS).where(MODELS.c.name == name).values(active=False))
            model_id = new_id(
                conn.execute(
                    sa.insert(MODELS).values(
                        name=name,
                        version=version,
                        artifact_uri=artifact_uri,
                        metrics=dict(metrics or {}),
                        trained_on=trained_on,
                        active=activate,
                        created_at=now,
                    )
                )
            )
            row = conn.execute(sa.select(MODELS).where(MODELS.c.id == model_id)).mappings().one()
            return to_model_version(row)

        return run(self._engine, write)

    def active_model(self, name: str) -> ModelVersion | None:
        query = sa.select(MODELS).where(MODELS.c.name == name, MODELS.c.active.is_(True))
        row = run(self._engine, lambda c: c.execute(query).mappings().first())
        return None if row is None else to_model_version(row)

    def model_versions(self, name: str) -> list[ModelVersion]:
        query = sa.select(MODELS).where(MODELS.c.name == name).order_by(MODELS.c.id)
        return run(
            self._engine, lambda c: [to_model_version(r) for r in c.execute(query).mappings()]
        )
