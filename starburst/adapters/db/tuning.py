"""What ``starburst tune`` reads and writes: finished jobs as a trace, the cloud money they
cost, the controller's observed state, and policy settings applied at run time.

Terms and invariants:
- *finished job*: submitted in ``[since, until)``, ended succeeded or failed, after running
  somewhere (``ran_on`` set). Its *measured runtime* is what it ran where it ended: on-prem,
  end − start of its last on-prem run; in the cloud, its last launch's billed duration
  (launch → end, provisioning included), so a replay charges what the job really cost. Its
  *estimate* is the runtime the controller admitted it with (the prediction, else the
  user's declaration): what its wait budget was computed from.
- *controller state*: per name, the latest JSON the controller wrote (``cluster_shape``:
  the nodes it could schedule on; ``scheduler``: the configuration it runs). Overwritten.
- *policy settings* are append-only: the table is its own audit log; the newest row is in
  force. Nothing here updates or deletes one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import sqlalchemy as sa

from starburst.core.capacity import Node
from starburst.core.estimates import EstimateUse
from starburst.core.job import Job
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind
from starburst.core.records import (
    CLUSTER_SHAPE,
    AppliedSetting,
    CloudSpend,
    node_from_json,
    node_json,
)
from starburst.core.setting import PolicySetting

from .base import Database, in_chunks, new_id
from .convert import to_epoch, to_job, to_time
from .engine import run
from .models import (
    CloudLaunchRow,
    ControllerStateRow,
    CostEntryRow,
    JobRow,
    PolicySettingRow,
    table,
)

JOBS = table(JobRow)
LAUNCHES = table(CloudLaunchRow)
COSTS = table(CostEntryRow)
SETTINGS = table(PolicySettingRow)
STATE = table(ControllerStateRow)

FINISHED = (JobState.SUCCEEDED, JobState.FAILED)


class SqlTuning:
    """The ``TuningLog`` port over the shared ``Database`` (``SqlStore.tuning``)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._engine = db.engine

    # -- history -----------------------------------------------------------------------------
    def finished_jobs(self, since: float, until: float) -> list[Job]:
        """Finished jobs submitted in ``[since, until)`` with measured runtimes, by submit
        time then id; ``extra`` says where each ran (``ran_on``) and how it ended."""
        query = (
            sa.select(JOBS)
            .where(
                JOBS.c.state.in_([s.value for s in FINISHED]),
                JOBS.c.ran_on.is_not(None),
                JOBS.c.ended_at.is_not(None),
                JOBS.c.submitted_at >= to_time(since),
                JOBS.c.submitted_at < to_time(until),
            )
            .order_by(JOBS.c.submitted_at, JOBS.c.id)
        )

        def read(conn: sa.Connection) -> list[Job]:
            rows = list(conn.execute(query).mappings())
            billed = _billed_durations(conn, [r["id"] for r in rows if r["ran_on"] == "cloud"])
            jobs = []
            for row in rows:
                runtime = billed.get(row["id"]) if row["ran_on"] == "cloud" else row["runtime"]
                if runtime is None or not math.isfinite(runtime):
                    continue  # a cloud run whose launch was never recorded: nothing to replay
                job = to_job(row)
                jobs.append(
                    replace(
                        job,
                        runtime=max(0.0, runtime),
                        extra={"ran_on": row["ran_on"], "state": row["state"]},
                    )
                )
            return jobs

        return run(self._engine, read)

    def cloud_spend(self, job_ids: Sequence[str]) -> CloudSpend:
        """Σ metered cloud money and GPU-hours of ``job_ids`` (every currency summed)."""

        def read(conn: sa.Connection) -> CloudSpend:
            amount, hours = 0, 0.0
            for clause in in_chunks(COSTS.c.job_id, job_ids):
                query = sa.select(
                    sa.func.coalesce(sa.func.sum(COSTS.c.amount_micros), 0),
                    sa.func.coalesce(sa.func.sum(COSTS.c.gpu_hours), 0.0),
                ).where(clause, COSTS.c.source == "cloud")
                micros, gpu_hours = conn.execute(query).one()
                amount += int(micros)
                hours += float(gpu_hours)
            return CloudSpend(amount / 1_000_000, hours)

        return run(self._engine, read)

    # -- controller state --------------------------------------------------------------------
    def record_state(self, name: str, value: Mapping[str, Any], at: float | None = None) -> None:
        row = {"name": name, "value": dict(value), "updated_at": to_time(self._db.now(at))}

        def write(conn: sa.Connection) -> None:
            statement = self._db.insert(STATE).values(**row)
            conn.execute(
                statement.on_conflict_do_update(
                    index_elements=["name"],
                    set_={
                        "value": statement.excluded.value,
                        "updated_at": statement.excluded.updated_at,
                    },
                )
            )

        run(self._engine, write)

    def state(self, name: str) -> dict[str, Any] | None:
        query = sa.select(STATE.c.value).where(STATE.c.name == name)
        value = run(self._engine, lambda c: c.execute(query).scalar())
        return None if value is None else dict(value)

    def record_cluster_shape(self, nodes: Sequence[Node], at: float | None = None) -> None:
        self.record_state(CLUSTER_SHAPE, {"nodes": [node_json(n) for n in nodes]}, at)

    def cluster_shape(self) -> list[Node] | None:
        value = self.state(CLUSTER_SHAPE)
        if value is None:
            return None
        return [node_from_json(n) for n in value.get("nodes", [])]

    # -- policy settings ----------------------------------------------------------------------
    def apply_setting(
        self,
        setting: PolicySetting,
        *,
        actor: str,
        reason: str,
        evidence: Mapping[str, Any] | None = None,
        at: float | None = None,
    ) -> AppliedSetting:
        """Append ``setting`` to the audit log; from now on it is the one in force."""
        values = {
            "created_at": to_time(self._db.now(at)),
            "actor": actor,
            "policy": setting.policy.value,
            "budget": setting.budget,
            "coefficient": setting.coefficient,
            "out_of_order": setting.out_of_order,
            "estimate": setting.estimate.value,
            "reason": reason,
            "evidence": dict(evidence or {}),
        }

        def write(conn: sa.Connection) -> AppliedSetting:
            setting_id = new_id(conn.execute(sa.insert(SETTINGS).values(**values)))
            return _applied(
                conn.execute(sa.select(SETTINGS).where(SETTINGS.c.id == setting_id))
                .mappings()
                .one()
            )

        return run(self._engine, write)

    def setting_in_force(self) -> AppliedSetting | None:
        query = sa.select(SETTINGS).order_by(SETTINGS.c.id.desc()).limit(1)
        row = run(self._engine, lambda c: c.execute(query).mappings().first())
        return None if row is None else _applied(row)

    def settings_log(self, limit: int = 100) -> list[AppliedSetting]:
        """The newest ``limit`` applied settings, newest first."""
        query = sa.select(SETTINGS).order_by(SETTINGS.c.id.desc()).limit(limit)
        return run(self._engine, lambda c: [_applied(r) for r in c.execute(query).mappings()])


def _billed_durations(conn: sa.Connection, job_ids: Sequence[str]) -> dict[str, float]:
    """Per job, launch → end of its last ended launch (the run it finished with)."""
    out: dict[str, float] = {}
    for clause in in_chunks(LAUNCHES.c.job_id, job_ids):
        query = (
            sa.select(LAUNCHES.c.job_id, LAUNCHES.c.launched_at, LAUNCHES.c.ended_at)
            .where(clause, LAUNCHES.c.ended_at.is_not(None))
            .order_by(LAUNCHES.c.id)
        )
        for job_id, launched, ended in conn.execute(query):
            out[job_id] = to_epoch(ended) - to_epoch(launched)  # later launches win
    return out


def _applied(row: Mapping[Any, Any]) -> AppliedSetting:
    setting = PolicySetting(
        PolicyKind(row["policy"]),
        row["budget"],
        row["coefficient"],
        bool(row["out_of_order"]),
        EstimateUse(row["estimate"] or EstimateUse.P50),  # NULL: a row from before 0013
    )
    return AppliedSetting(
        int(row["id"]),
        to_epoch(row["created_at"]),
        row["actor"],
        setting,
        row["reason"],
        dict(row["evidence"] or {}),
    )
