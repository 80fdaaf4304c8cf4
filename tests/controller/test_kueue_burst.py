"""The Kueue pass on its own (``controller.kueue_burst``), without Kueue: trouble reading
Kueue skips its look and never raises into the controller's pass; a followed job's runtime
prediction is recorded and its budget counts from its Job's creation; Starburst's condition
on the Workload follows the job's record (the real Kueue: ``tests/kueue``)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from starburst.adapters.kubernetes.kueue import CONDITION, KueueWorkload
from starburst.adapters.memory.store import MemoryStore
from starburst.controller.kueue_burst import KueueBurst, condition_reason
from starburst.controller.loop.burst_ceiling import TeamCeiling
from starburst.core.errors import TransientError
from starburst.core.failure import OUTPUT_MARK
from starburst.core.job import Job
from starburst.core.kueue_jobs import WORKLOAD
from starburst.core.lifecycle import JobState
from starburst.core.policy import PolicyKind, WaitPolicy
from starburst.core.ports import Estimate, Quote
from starburst.core.records import StoredJob
from tests.builders import make_job
from tests.support.clock import ManualClock


class Unreachable:
    """Kueue's API answering 503 to every list."""

    calls = 0

    def workloads(self) -> list[Any]:
        self.calls += 1
        raise TransientError("listing Kueue workloads: HTTP 503")


def test_kueue_unreachable_skips_the_look_without_failing_the_pass() -> None:
    clock = ManualClock(1_000.0)
    store = MemoryStore(clock=clock)
    kueue = Unreachable()
    burst = KueueBurst(
        submissions=store.submissions, jobs=store.jobs, lifecycle=store.lifecycle,
        ledger=store.ledger, models=store.models, workloads=kueue,  # type: ignore[arg-type]
        policy=lambda: WaitPolicy(PolicyKind.COMPUTE, 0.5), follower=lambda: None,
    )  # fmt: skip
    assert burst.run_pass(clock.now(), None) == []
    assert kueue.calls == 1


class Workloads:
    """Kueue's Workloads as ``KueueWorkloads`` hands them out, in memory: one pending
    Workload whose Job was created at ``created``; the conditions written are kept (``fail``:
    the next condition write is refused, as Kueue's webhooks refuse it while Kueue is down)."""

    def __init__(self, created: float) -> None:
        job = {"metadata": {"name": "train", "namespace": "ns", "creationTimestamp": "x"}}
        self.found = KueueWorkload("ns", "job-train", "lq", "cq", "pending", "1", "u", job)
        self.job_value = make_job(
            "ns/train", gpus=2, submit=created, extra={WORKLOAD: "job-train", "namespace": "ns"}
        )
        self.written: list[str] = []
        self.messages: list[str] = []
        self.fail = False
        self.notes: list[str] = []
        self.deactivations = 0
        self.accept = False

    def workloads(self) -> list[KueueWorkload]:
        return [self.found]

    def job(self, workload: KueueWorkload) -> Job:
        return self.job_value

    def note(self, workload: KueueWorkload, reason: str, *args: Any) -> None:
        self.notes.append(reason)

    def deactivate(self, workload: KueueWorkload, reason: str) -> bool:
        self.deactivations += 1
        if self.accept:
            self.found = replace(self.found, state="burst")
        return self.accept  # False: as if Kueue changed it meanwhile (nothing more happens)

    def set_condition(self, workload: KueueWorkload, reason: str, message: str) -> None:
        if self.fail:
            self.fail = False
            raise TransientError("admission webhook: connection refused")
        self.written.append(reason)
        self.messages.append(message)
        self.found = replace(self.found, condition={"type": CONDITION, "reason": reason})


class Model:
    """A runtime model that predicts 1000 s for every job."""

    def estimate(self, jobs: Any) -> list[Estimate]:
        return [Estimate(1000.0, 800.0, 1200.0, "model:v1") for _ in jobs]


def test_a_kueue_job_gets_a_recorded_prediction_and_a_budget_from_its_creation() -> None:
    clock = ManualClock(10_000.0)
    store = MemoryStore(clock=clock)
    kueue = Workloads(created=9_400.0)  # first seen 600 s after its Job was created

    def pass_() -> list[str]:
        return KueueBurst(
            submissions=store.submissions, jobs=store.jobs, lifecycle=store.lifecycle,
            ledger=store.ledger, models=store.models, workloads=kueue,  # type: ignore[arg-type]
            policy=lambda: WaitPolicy(PolicyKind.COMPUTE, 0.5), follower=lambda: None,
            estimator=lambda: Model(),
        ).run_pass(clock.now(), None)  # a new controller life each pass  # fmt: skip

    kueue.fail = True  # the first condition write is refused
    pass_()
    stored = store.jobs.get("ns/train")
    assert stored.state is JobState.QUEUED
    assert stored.queued_at == 9_400.0  # the Job's creation, not the first look
    assert stored.wait_budget == 1000.0  # 0.5 × 2 GPUs × 1000 s predicted
    assert stored.predicted_runtime == 1000.0  # what `starburst explain` shows
    assert [(p.value, p.source) for p in store.models.predictions("ns/train")] == [
        (1000.0, "model:v1")
    ]
    assert kueue.written == []
    clock.advance(1)
    pass_()  # the refused condition is written on the next look, and only once
    pass_()
    assert kueue.written == ["Waiting"]
    assert [p.value for p in store.models.predictions("ns/train")] == [1000.0]  # once


def test_the_condition_follows_the_record() -> None:
    def stored(state: JobState, ran_on: str | None = None) -> StoredJob:
        return StoredJob(make_job("ns/j"), state, 1, 0.0, ran_on=ran_on)

    assert condition_reason(stored(JobState.QUEUED)) == "Waiting"
    assert condition_reason(stored(JobState.RUNNING_ONPREM, "onprem")) == "AdmittedOnPrem"
    assert condition_reason(stored(JobState.SUCCEEDED, "onprem")) == "AdmittedOnPrem"
    assert condition_reason(stored(JobState.BURSTING, "cloud")) == "Burst"
    assert condition_reason(stored(JobState.RUNNING_CLOUD, "cloud")) == "Burst"
    assert condition_reason(stored(JobState.SUCCEEDED, "cloud")) == "CloudSucceeded"
    assert condition_reason(stored(JobState.FAILED, "cloud")) == "CloudFailed"
    assert condition_reason(stored(JobState.CANCELLED, "cloud")) == "CloudCancelled"
    assert condition_reason(stored(JobState.CANCELLED)) == "Cancelled"  # while waiting
    assert condition_reason(stored(JobState.SUBMITTED)) is None


def test_a_kueue_job_admitted_and_finished_between_two_looks_ends_succeeded() -> None:
    clock = ManualClock(10_000.0)
    store = MemoryStore(clock=clock)
    kueue = Workloads(created=9_990.0)

    def pass_() -> None:
        KueueBurst(
            submissions=store.submissions, jobs=store.jobs, lifecycle=store.lifecycle,
            ledger=store.ledger, models=store.models, workloads=kueue,  # type: ignore[arg-type]
            policy=lambda: WaitPolicy(PolicyKind.COMPUTE, 0.5), follower=lambda: None,
        ).run_pass(clock.now(), None)  # fmt: skip

    pass_()
    assert store.jobs.get("ns/train").state is JobState.QUEUED
    assert kueue.found.job is not None
    done = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
    kueue.found = replace(kueue.found, state="finished", job={**kueue.found.job, "status": done})
    clock.advance(5)
    pass_()
    stored = store.jobs.get("ns/train")
    assert stored.state is JobState.SUCCEEDED and stored.ran_on == "onprem"
    assert [e.to_state for e in store.jobs.events("ns/train")][-2:] == [
        JobState.RUNNING_ONPREM,
        JobState.SUCCEEDED,
    ]
    assert kueue.written[-1] == "AdmittedOnPrem"


def test_a_team_over_its_cloud_budget_keeps_its_kueue_job_in_kueues_queue() -> None:
    clock = ManualClock(10_000.0)
    store = MemoryStore(clock=clock)
    kueue = Workloads(created=9_000.0)  # 0.5 × 2 GPUs × 1000 s: spent at the first look
    held = {"ns": "team ns spent $10.00 of its $10.00 cloud budget for 2026-12"}
    burst = KueueBurst(
        submissions=store.submissions, jobs=store.jobs, lifecycle=store.lifecycle,
        ledger=store.ledger, models=store.models, workloads=kueue,  # type: ignore[arg-type]
        policy=lambda: WaitPolicy(PolicyKind.COMPUTE, 0.5),
        follower=lambda: Priced(),  # type: ignore[arg-type,return-value]
        estimator=lambda: Model(), hold=lambda now: dict(held),
    )  # fmt: skip
    kueue.job_value = replace(kueue.job_value, team="ns")

    assert burst.run_pass(clock.now(), None) == []  # budget spent at its first look: held
    clock.advance(60)
    burst.run_pass(clock.now(), None)
    assert store.jobs.get("ns/train").state is JobState.QUEUED
    assert kueue.deactivations == 0  # still in Kueue's queue: Kueue may admit it
    assert kueue.notes.count("Held") == 1  # said once

    held.clear()  # the budget was raised: the next look takes it out of Kueue's queue
    clock.advance(60)
    burst.run_pass(clock.now(), None)
    assert kueue.deactivations == 1


def test_a_failed_cloud_run_says_its_cause_on_the_workload_never_its_output() -> None:
    clock = ManualClock(10_000.0)
    store = MemoryStore(clock=clock)
    kueue = Workloads(created=9_990.0)
    burst = KueueBurst(
        submissions=store.submissions, jobs=store.jobs, lifecycle=store.lifecycle,
        ledger=store.ledger, models=store.models, workloads=kueue,  # type: ignore[arg-type]
        policy=lambda: WaitPolicy(PolicyKind.COMPUTE, 0.5), follower=lambda: None,
    )  # fmt: skip
    burst.run_pass(clock.now(), None)
    for state, why in [
        (JobState.BURSTING, "burst to sim"),
        (JobState.RUNNING_CLOUD, "running in the cloud"),
        (JobState.FAILED, f"failed in the cloud: exit code 1; {OUTPUT_MARK}\nKEY=s3cr3t"),
    ]:
        store.lifecycle.transition("ns/train", state, reason=why, actor="test")
    kueue.found = replace(kueue.found, state="burst")
    burst.run_pass(clock.advance(5), None)
    assert kueue.written[-1] == "CloudFailed"
    assert kueue.messages[-1] == "failed in the cloud: exit code 1"


class Priced:
    """A cloud side whose only use here is its quote: 2.50 $/h."""

    class cloud:  # the follower's attribute
        @staticmethod
        def quote(job: Job) -> Quote:
            return Quote(2.5, "sim", "gpu:2")


def test_a_burst_above_the_teams_price_ceiling_keeps_its_kueue_job_in_kueues_queue() -> None:
    clock = ManualClock(10_000.0)
    store = MemoryStore(clock=clock)
    kueue = Workloads(created=9_000.0)  # 0.5 × 2 GPUs × 1000 s: spent at the first look
    kueue.job_value = replace(kueue.job_value, team="ns")
    ceiling = TeamCeiling(store.jobs, store.ledger, 2.0, None)  # $2/h for the whole team
    burst = KueueBurst(
        submissions=store.submissions, jobs=store.jobs, lifecycle=store.lifecycle,
        ledger=store.ledger, models=store.models, workloads=kueue,  # type: ignore[arg-type]
        policy=lambda: WaitPolicy(PolicyKind.COMPUTE, 0.5),
        follower=lambda: Priced(),  # type: ignore[arg-type,return-value]
        estimator=lambda: Model(), ceiling=ceiling,
    )  # fmt: skip

    burst.run_pass(clock.now(), None)
    assert store.jobs.get("ns/train").state is JobState.QUEUED
    assert (kueue.deactivations, kueue.notes.count("Held")) == (0, 1)
    ceiling.ceiling = 5.0  # an admin raised it
    burst.run_pass(clock.advance(60), None)
    assert kueue.deactivations == 1


class Launching:
    """A cloud side (and its cloud) that quotes 2.50 $/h and launches every burst."""

    def __init__(self) -> None:
        self.cloud, self.launched = self, list[str]()

    def quote(self, job: Job) -> Quote:
        return Quote(2.5, "sim", "gpu:2")

    def launch(self, job: Job, reason: str) -> SimpleNamespace:
        return SimpleNamespace(name=f"sim-{job.id}")

    def record_launch(self, job: Job, handle: Any, now: float, token: int | None) -> None:
        self.launched.append(job.id)

    def track(self, job_id: str, handle: Any) -> None:
        pass


def test_a_pass_names_the_jobs_it_burst_and_no_others() -> None:
    clock = ManualClock(10_000.0)
    store = MemoryStore(clock=clock)
    kueue = Workloads(created=9_000.0)  # its budget is spent at the first look
    kueue.accept = True
    follower = Launching()
    burst = KueueBurst(
        submissions=store.submissions, jobs=store.jobs, lifecycle=store.lifecycle,
        ledger=store.ledger, models=store.models, workloads=kueue,  # type: ignore[arg-type]
        policy=lambda: WaitPolicy(PolicyKind.COMPUTE, 0.5),
        follower=lambda: follower,  # type: ignore[arg-type,return-value]
        estimator=lambda: Model(),
    )  # fmt: skip
    assert burst.run_pass(clock.now(), None) == ["ns/train"]
    assert store.jobs.get("ns/train").state is JobState.BURSTING
    assert burst.run_pass(clock.advance(5), None) == []  # still bursting: not burst again
    assert follower.launched == ["ns/train"]
