"""What ``starburst tune`` reads and writes, in memory (the ``TuningLog`` port): finished jobs
as a trace, their cloud spend, the controller's observed state and the append-only log of
policy settings, with the SQL store's rules (``adapters/db/tuning.py``). Values kept as JSON
there are kept here as a JSON round-trip, so both hand back the same shapes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from starburst.core.billing import from_micros
from starburst.core.capacity import Node
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.records import (
    CLUSTER_SHAPE,
    AppliedSetting,
    CloudSpend,
    node_from_json,
    node_json,
)
from starburst.core.setting import PolicySetting

from .tables import JobRow, MemoryDatabase

FINISHED = (JobState.SUCCEEDED, JobState.FAILED)


def as_json(value: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(dict(value)))
    return result


class MemoryTuning:
    """The ``TuningLog`` port over the shared ``MemoryDatabase`` (``MemoryStore.tuning``)."""

    def __init__(self, db: MemoryDatabase) -> None:
        self._db = db
        self._t = db.tables
        self._lock = db.lock

    def finished_jobs(self, since: float, until: float) -> list[Job]:
        with self._lock:
            rows = sorted(
                (r for r in self._t.jobs.values() if _finished_in(r, since, until)),
                key=lambda r: (r.submitted_at, r.id),
            )
            billed = self._billed_durations({r.id for r in rows if r.ran_on == "cloud"})
            jobs = []
            for row in rows:
                runtime = billed.get(row.id) if row.ran_on == "cloud" else row.runtime
                if runtime is None or not math.isfinite(runtime):
                    continue  # a cloud run whose launch was never recorded: nothing to replay
                extra = {"ran_on": row.ran_on or "", "state": row.state.value}
                jobs.append(replace(row.job(), runtime=max(0.0, runtime), extra=extra))
            return jobs

    def _billed_durations(self, job_ids: set[str]) -> dict[str, float]:
        """Per job, launch → end of its last ended launch (the run it finished with)."""
        out: dict[str, float] = {}
        for launch in self._t.launches.values():
            if launch.job_id in job_ids and launch.ended_at is not None:
                out[launch.job_id] = launch.ended_at - launch.launched_at  # later ones win
        return out

    def cloud_spend(self, job_ids: Sequence[str]) -> CloudSpend:
        wanted = set(job_ids)
        with self._lock:
            rows = [c for c in self._t.costs if c.job_id in wanted and c.source == "cloud"]
            micros = sum(c.micros for c in rows)
            return CloudSpend(float(from_micros(micros)), sum(c.gpu_hours for c in rows))

    def record_state(self, name: str, value: Mapping[str, Any], at: float | None = None) -> None:
        with self._lock:
            self._t.controller_state[name] = as_json(value)

    def state(self, name: str) -> dict[str, Any] | None:
        with self._lock:
            value = self._t.controller_state.get(name)
            return None if value is None else as_json(value)

    def record_cluster_shape(self, nodes: Sequence[Node], at: float | None = None) -> None:
        self.record_state(CLUSTER_SHAPE, {"nodes": [node_json(n) for n in nodes]}, at)

    def cluster_shape(self) -> list[Node] | None:
        value = self.state(CLUSTER_SHAPE)
        if value is None:
            return None
        return [node_from_json(n) for n in value.get("nodes", [])]

    def apply_setting(
        self,
        setting: PolicySetting,
        *,
        actor: str,
        reason: str,
        evidence: Mapping[str, Any] | None = None,
        at: float | None = None,
    ) -> AppliedSetting:
        with self._lock:
            applied = AppliedSetting(
                id=len(self._t.settings) + 1,
                at=self._db.now(at),
                actor=actor,
                setting=setting,
                reason=reason,
                evidence=as_json(evidence or {}),
            )
            self._t.settings.append(applied)
            return applied

    def setting_in_force(self) -> AppliedSetting | None:
        with self._lock:
            return self._t.settings[-1] if self._t.settings else None

    def settings_log(self, limit: int = 100) -> list[AppliedSetting]:
        with self._lock:
            return list(reversed(self._t.settings))[: max(limit, 0)]


def _finished_in(row: JobRow, since: float, until: float) -> bool:
    return (
        row.state in FINISHED
        and row.ran_on is not None
        and row.ended_at is not None
        and since <= row.submitted_at < until
    )
