"""The embedded backends run real processes: success, failure (exit code), cancel (gone)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import pytest

from starburst.adapters.local import EmulatedCloud, LocalCluster
from starburst.core.billing import charges
from starburst.core.capacity import Part, Placement
from starburst.core.errors import PermanentError, TransientError
from starburst.core.job import Job
from starburst.core.ports import CloudStatus, JobEnded
from starburst.pricing import load_price_table
from tests.support.clock import ManualClock
from tests.support.waiting import wait_for


def job(job_id: str, command: str, gpus: int = 1, gpu_type: str | None = None, **extra: str) -> Job:
    return Job(job_id, 0.0, gpus, gpu_type=gpu_type, team="ml", extra={"command": command, **extra})


def on_local(gpus: int, node: str = "local") -> Placement:
    return (Part(0, node, gpus, 0.0, 0.0),)


def ended_until(cluster: LocalCluster, count: int) -> list[JobEnded]:
    seen: list[JobEnded] = []

    def probe() -> Sequence[JobEnded] | None:
        seen.extend(cluster.ended())
        return seen if len(seen) >= count else None

    return list(wait_for(probe))


def gone(pid: int) -> bool:
    """True when the process no longer runs (a zombie awaiting an absent reaper counts)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "\nState:\tZ" in status


def test_local_cluster_runs_jobs_on_distinct_gpu_slots(tmp_path: Path) -> None:
    clock = ManualClock(1_000.0)
    cluster = LocalCluster(tmp_path, gpus=4, clock=clock)
    env = json.dumps({"GREETING": "hello"})
    cluster.start(
        job("a", 'echo "$GREETING on $CUDA_VISIBLE_DEVICES"; sleep 0.2', 2, env=env),
        on_local(2),
        "fits",
    )
    cluster.start(job("b", 'echo "gpus=$CUDA_VISIBLE_DEVICES"; exit 3', 1), on_local(1), "fits")
    cluster.start(job("a", "echo twice", 2), on_local(2), "again")  # idempotent

    snap = cluster.snapshot()
    assert sorted(r.job.id for r in snap.running) <= ["a", "b"]
    assert cluster.slots_of("a") == (0, 1)
    with pytest.raises(TransientError, match="needs 4 GPU slots"):
        cluster.start(job("c", "true", 4), on_local(4), "stale snapshot")

    clock.set(1_050.0)
    ends = {e.job_id: e for e in ended_until(cluster, 2)}
    assert ends["a"].succeeded and ends["a"].at == 1_050.0
    assert not ends["b"].succeeded and ends["b"].reason == "exit code 3; last output:\ngpus=2"
    assert "hello on 0,1" in cluster.logs("a")
    assert "gpus=2" in cluster.logs("b")
    assert (tmp_path / "b" / "exit_code").read_text().strip() == "3"
    assert cluster.ended() == []  # each end is reported once
    assert cluster.snapshot().capacity.free_gpus == 4 and not cluster.snapshot().running


def test_cancel_kills_the_whole_process_group(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, gpus=1, grace=0.2)
    command = "sleep 30 & echo $! > child.pid; trap '' TERM; wait"  # the shell ignores SIGTERM
    cluster.start(job("c", command), on_local(1), "fits")
    child_file = tmp_path / "c" / "child.pid"
    child = int(wait_for(lambda: child_file.exists() and child_file.read_text().strip()))
    shell = cluster.process("c")
    assert shell is not None and not gone(shell.pid) and not gone(child)

    cluster.cancel("c")
    (ended,) = ended_until(cluster, 1)
    assert not ended.succeeded and ended.reason.startswith("cancelled")
    assert gone(shell.pid)
    assert wait_for(lambda: gone(child))
    assert cluster.snapshot().capacity.free_gpus == 1


def test_local_cluster_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, gpus=2)
    with pytest.raises(PermanentError, match="no command"):
        cluster.start(Job("x", 0.0, 1), on_local(1), "fits")
    with pytest.raises(PermanentError, match="only node local"):
        cluster.start(job("y", "true"), on_local(1, node="gpu-node-7"), "fits")
    with pytest.raises(PermanentError, match="not JSON"):
        cluster.start(job("z", "true", env="{oops"), on_local(1), "fits")
    assert cluster.snapshot().capacity.free_gpus == 2


def test_emulated_cloud_runs_locally_and_meters_at_cloud_prices(tmp_path: Path) -> None:
    clock = ManualClock(0.0)
    prices = load_price_table()
    cloud = EmulatedCloud(tmp_path, prices, clock=clock)
    burst = job(
        "e",
        "echo gpus=[$CUDA_VISIBLE_DEVICES] emulated=$STARBURST_EMULATED; sleep 0.1",
        8,
        gpu_type="A100-80GB",
    )
    quote = cloud.quote(burst)
    assert quote.emulated and quote.where.startswith("emulated ")
    assert quote.price_per_hour == prices.price("A100-80GB", 8).price_per_hour

    handle = cloud.launch(burst, "waited 30m of a 30m budget")
    assert cloud.launch(burst, "retry") == handle  # one launch per job
    billed = cloud.billed_launch(handle)
    clock.set(1800.0)
    status = wait_for(lambda: (s := cloud.poll(handle)) is not CloudStatus.RUNNING and s)
    assert status is CloudStatus.SUCCEEDED
    entries = charges(
        billed.launched_at, clock.t, Decimal(str(billed.price_per_hour)), 1, chunk=600, final=True
    )
    assert float(sum(e.amount for e in entries)) == pytest.approx(quote.price_per_hour / 2)
    assert billed.emulated
    logs = cloud.logs(handle)
    assert logs.startswith("# emulated cloud") and "gpus=[] emulated=1" in logs


def test_emulated_cloud_failure_and_cancel(tmp_path: Path) -> None:
    cloud = EmulatedCloud(tmp_path, load_price_table(), grace=0.2)
    failing = cloud.launch(job("f", "exit 7"), "burst")
    sleeper = cloud.launch(job("s", "sleep 30"), "burst")
    assert wait_for(lambda: cloud.poll(failing) is CloudStatus.FAILED)
    assert cloud.reason(failing) == "emulated: exit code 7"  # printed nothing
    assert cloud.poll(sleeper) is CloudStatus.RUNNING
    cloud.cancel(sleeper)
    assert wait_for(lambda: cloud.poll(sleeper) is CloudStatus.CANCELLED)
    pid = int(str(sleeper.cloud_job_id).rsplit("-", 1)[1])
    assert gone(pid)
    # a restarted controller still learns how a finished emulated launch ended
    again = EmulatedCloud(tmp_path, load_price_table())
    assert again.poll(failing) is CloudStatus.FAILED
    assert "exit 7" not in again.logs(failing) and "emulated cloud" in again.logs(failing)
    assert os.environ.get("STARBURST_EMULATED") is None


def test_emulated_quote_refuses_unpriced_gpus(tmp_path: Path) -> None:
    cloud = EmulatedCloud(tmp_path, load_price_table())
    with pytest.raises(PermanentError, match=r"no cloud prices GPU type B200, .*A100, A100-80GB"):
        cloud.quote(Job("b", 0.0, 2, gpu_type="B200", extra={"command": "true"}))
    assert cloud.quote(Job("cpu", 0.0, 0, extra={"command": "true"})).price_per_hour == 0.0
