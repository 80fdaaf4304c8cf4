"""Converters between database rows and Starburst values (core ``Job``, ``JobState``, records).

Terms: *epoch* is seconds since 1970-01-01 UTC as a float (what the core's ``Clock`` returns);
*micros* is an amount of money in millionths of its currency unit, the stored form of every
``Decimal`` amount so that SQL sums are exact on every dialect.

Invariant: these functions are the only place a row's columns are mapped to a value's fields;
a naive datetime read back from SQLite is UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from starburst.core.billing import from_micros, to_micros
from starburst.core.dependencies import array_index_in, parse_after
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.records import (
    CloudLaunch,
    HistoryJob,
    JobEvent,
    JobSpec,
    ModelVersion,
    Prediction,
    StoredJob,
)


def to_time(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def maybe_time(epoch: float | None) -> datetime | None:
    return None if epoch is None else to_time(epoch)


def to_epoch(value: datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def maybe_epoch(value: datetime | None) -> float | None:
    return None if value is None else to_epoch(value)


def spec_columns(spec: JobSpec) -> dict[str, Any]:
    """The ``jobs`` columns a submission fills (everything but id, state and times)."""
    return {
        "name": spec.name,
        "user_name": spec.user,
        "team_name": spec.team,
        "image": spec.image,
        "command": spec.command,
        "gpus": spec.gpus,
        "pods": spec.pods,
        "cpus": spec.cpus,
        "memory_mb": spec.memory_mb,
        "gpu_type": spec.gpu_type,
        "declared_runtime": spec.declared_runtime,
        "deadline": maybe_time(spec.deadline),
        "extra": dict(spec.extra),
        "depends_on": [str(d) for d in spec.after] or None,
        "array_id": spec.array,
        "array_limit": spec.array_limit,
        "held_reason": None,
    }


def to_job(row: Mapping[Any, Any]) -> Job:
    """The core job of a ``jobs`` row; its estimate is the prediction, else the declaration."""
    estimate = row["predicted_runtime"]
    extra = dict(row["extra"] or {})
    return Job(
        id=row["id"],
        submit_time=to_epoch(row["submitted_at"]),
        gpus=row["gpus"],
        cpus=row["cpus"],
        memory_mb=row["memory_mb"],
        gpu_type=row["gpu_type"],
        runtime=row["runtime"],
        estimate=estimate if estimate is not None else row["declared_runtime"],
        user=row["user_name"],
        team=row["team_name"],
        name=row["name"],
        deadline=maybe_epoch(row["deadline"]),
        pods=row["pods"],
        extra=extra,
        after=tuple(parse_after(d) for d in row["depends_on"] or ()),
        array=row["array_id"],
        array_limit=row["array_limit"],
        array_index=array_index_in(extra),
    )


def to_stored_job(row: Mapping[Any, Any]) -> StoredJob:
    return StoredJob(
        job=to_job(row),
        state=JobState(row["state"]),
        version=row["version"],
        queued_at=to_epoch(row["queued_at"]),
        idempotency_key=row["idempotency_key"],
        image=row["image"],
        command=row["command"],
        started_at=maybe_epoch(row["started_at"]),
        ended_at=maybe_epoch(row["ended_at"]),
        predicted_runtime=row["predicted_runtime"],
        declared_runtime=row["declared_runtime"],
        wait_budget=row["wait_budget"],
        ran_on=row["ran_on"],
        held=row["held_reason"],
    )


def to_history(row: Mapping[Any, Any]) -> HistoryJob:
    return HistoryJob(
        job=to_job(row),
        state=JobState(row["state"]),
        ran_on=row["ran_on"],
        started_at=to_epoch(row["started_at"]),
        ended_at=to_epoch(row["ended_at"]),
        image=row["image"],
        command=row["command"],
        declared_runtime=row["declared_runtime"],
    )


def to_event(row: Mapping[Any, Any]) -> JobEvent:
    return JobEvent(
        job_id=row["job_id"],
        at=to_epoch(row["at"]),
        from_state=JobState(row["from_state"]) if row["from_state"] else None,
        to_state=JobState(row["to_state"]),
        reason=row["reason"],
        actor=row["actor"],
        fencing_token=row["fencing_token"],
    )


def launch_columns(launch: CloudLaunch) -> dict[str, Any]:
    return {
        "job_id": launch.job_id,
        "name": launch.name,
        "provider": launch.provider,
        "region": launch.region,
        "instance_type": launch.instance_type,
        "accelerators": launch.accelerators,
        "hourly_price_micros": to_micros(launch.hourly_price),
        "currency": launch.currency,
        "spot": launch.spot,
        "request_id": launch.request_id,
        "cloud_job_id": launch.cloud_job_id,
        "status": launch.status,
        "launched_at": to_time(launch.launched_at),
        "started_at": maybe_time(launch.started_at),
        "ended_at": maybe_time(launch.ended_at),
    }


def to_launch(row: Mapping[Any, Any]) -> CloudLaunch:
    return CloudLaunch(
        id=row["id"],
        job_id=row["job_id"],
        name=row["name"],
        provider=row["provider"],
        region=row["region"],
        instance_type=row["instance_type"],
        accelerators=row["accelerators"],
        hourly_price=from_micros(row["hourly_price_micros"]),
        currency=row["currency"],
        spot=row["spot"],
        request_id=row["request_id"],
        cloud_job_id=row["cloud_job_id"],
        status=row["status"],
        launched_at=to_epoch(row["launched_at"]),
        started_at=maybe_epoch(row["started_at"]),
        ended_at=maybe_epoch(row["ended_at"]),
    )


def to_model_version(row: Mapping[Any, Any]) -> ModelVersion:
    return ModelVersion(
        id=row["id"],
        name=row["name"],
        version=row["version"],
        active=row["active"],
        trained_on=row["trained_on"],
        created_at=to_epoch(row["created_at"]),
        metrics=dict(row["metrics"] or {}),
        artifact_uri=row["artifact_uri"],
    )


def to_prediction(row: Mapping[Any, Any]) -> Prediction:
    return Prediction(
        job_id=row["job_id"],
        value=row["value"],
        low=row["low"],
        high=row["high"],
        source=row["source"],
        created_at=to_epoch(row["created_at"]),
        model_version_id=row["model_version_id"],
        quantiles=dict(row["quantiles"] or {}),
    )
