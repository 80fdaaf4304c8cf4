"""A Job carrying Kueue's queue label as well as Starburst's is left to Kueue (the Job book):
never offered to the controller, never counted as running when Kueue admits it, never
reported as ended; one Warning Event says why. A Job Starburst already acted on stays its
own even if Kueue's label is added afterwards."""

from __future__ import annotations

from typing import Any

from starburst.adapters.kubernetes import conversion as conv
from starburst.adapters.kubernetes import kueue
from starburst.adapters.kubernetes.jobbook import JobBook
from tests.kube.adapter_support import queued_job
from tests.support.clock import ManualClock


def book_with_warnings() -> tuple[JobBook, list[tuple[str, str]]]:
    warned: list[tuple[str, str]] = []
    book = JobBook(
        clock=ManualClock(1_000.0),
        conventions=conv.Conventions(),
        notify=lambda: None,
        pods_of=lambda uid: 0,
        mark=lambda *a: None,
        warn=lambda obj, problem: warned.append((obj["metadata"]["name"], problem)),
    )
    return book, warned


def both_labels(name: str, version: int = 1) -> dict[str, Any]:
    obj = queued_job(name, labels={conv.KUEUE_QUEUE_LABEL: "team-a"})
    obj["metadata"].update(namespace="ml", uid=f"uid-{name}", resourceVersion=str(version))
    return obj


def run_followups(book: JobBook) -> None:
    for write in book.take_followups():
        write()


def test_a_job_with_both_labels_is_left_to_kueue_with_one_warning() -> None:
    book, warned = book_with_warnings()
    book.on_job("ADDED", both_labels("both"))
    book.on_job("MODIFIED", both_labels("both", version=2))
    run_followups(book)

    assert book.submissions == []
    assert len(warned) == 1
    name, problem = warned[0]
    assert name == "both" and "left to Kueue" in problem and "team-a" in problem


def test_kueue_admitting_it_does_not_make_it_starbursts() -> None:
    book, _ = book_with_warnings()
    book.on_job("ADDED", both_labels("both"))
    admitted = both_labels("both", version=2)
    admitted["spec"]["suspend"] = False  # Kueue admitted it
    book.on_job("MODIFIED", admitted)
    finished = both_labels("both", version=3)
    finished["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    book.on_job("MODIFIED", finished)
    book.on_job("DELETED", finished)

    assert book.running == {} and book.ended == [] and book.submissions == []


def test_a_job_with_starbursts_label_only_is_queued() -> None:
    book, warned = book_with_warnings()
    obj = queued_job("mine")
    obj["metadata"].update(namespace="ml", uid="uid-mine", resourceVersion="1")
    book.on_job("ADDED", obj)

    assert [j.id for j in book.submissions] == ["ml/mine"] and warned == []


def test_a_job_starburst_started_stays_its_own_after_kueues_label_is_added() -> None:
    book, warned = book_with_warnings()
    obj = both_labels("late")
    obj["metadata"]["annotations"] = {conv.STATE: "running", conv.PLACEMENT: "gpu-a×1"}
    obj["spec"]["suspend"] = False
    book.on_job("ADDED", obj)

    assert "ml/late" in book.running and warned == []


def workload_with(conditions: dict[str, str], active: bool = True, decided: bool = False) -> Any:
    annotations = {kueue.DECIDED: "budget spent"} if decided else {}
    return {
        "metadata": {"name": "w", "annotations": annotations},
        "spec": {"active": active},
        "status": {"conditions": [{"type": k, "status": v} for k, v in conditions.items()]},
    }


def test_a_workloads_state_as_the_burst_policy_reads_it() -> None:
    assert kueue.workload_state(workload_with({})) == "pending"
    assert kueue.workload_state(workload_with({"QuotaReserved": "False"})) == "pending"
    assert kueue.workload_state(workload_with({"QuotaReserved": "True"})) == "admitted"
    assert kueue.workload_state(workload_with({"Admitted": "True"})) == "admitted"
    assert kueue.workload_state(workload_with({"Finished": "True"})) == "finished"
    assert kueue.workload_state(workload_with({}, active=False)) == "inactive"
    assert kueue.workload_state(workload_with({}, active=False, decided=True)) == "burst"
