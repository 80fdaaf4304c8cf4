"""A new ``EmulatedCloud`` on the same state directory adopts the launches of an earlier one.

"Never run twice": each burst appends a line to a file. "Billed as it ran": the adopted launch
keeps its original launch time and quote, and ends when the process really ended.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from starburst.adapters.local import EmulatedCloud
from starburst.core.billing import charges
from starburst.core.ports import CloudHandle, CloudStatus
from starburst.pricing import load_price_table
from tests.local.lives import appends, earlier_life, gone, job, lines
from tests.support.clock import ManualClock
from tests.support.waiting import wait_for

FIRST_LIFE = """
from pathlib import Path
from starburst.adapters.local import EmulatedCloud
from starburst.core.job import Job
cloud = EmulatedCloud(Path(state), grace=0.2)
handle = cloud.launch(Job(job_id, 0.0, 1, gpu_type="A100", team="ml",
                          extra={"command": command}), "burst")
billed = cloud.billed_launch(handle)
print("ready", json.dumps({"handle": [handle.job_id, handle.name, handle.cloud_job_id],
                           "launched_at": billed.launched_at}), flush=True)
import time
time.sleep(60)
"""


def finished(cloud: EmulatedCloud, handle: CloudHandle) -> CloudStatus:
    return wait_for(lambda: (s := cloud.poll(handle)) is not CloudStatus.RUNNING and s)


def test_a_running_launch_is_adopted_and_billed_from_its_start(tmp_path: Path) -> None:
    runs, prices = tmp_path / "runs.txt", load_price_table()
    burst = job("e", appends(runs, "sleep 1"), gpu_type="A100")
    first = EmulatedCloud(tmp_path, prices, clock=ManualClock(100.0))
    handle = first.launch(burst, "waited out its budget")

    clock = ManualClock(1_000.0)
    second = EmulatedCloud(tmp_path, load_price_table(), clock=clock)
    assert second.poll(handle) is CloudStatus.RUNNING  # a handle from an earlier life works
    assert second.launch(burst, "resumed by a new leader") == handle
    billed = second.billed_launch(handle)
    assert billed.launched_at == 100.0 and billed.emulated
    assert billed == first.billed_launch(handle)
    clock.set(1_900.0)
    assert finished(second, handle) is CloudStatus.SUCCEEDED
    assert second.ended_at(handle) == 1_900.0
    entries = charges(
        billed.launched_at, 1_900.0, Decimal(str(billed.price_per_hour)), 1, chunk=600, final=True
    )
    assert float(sum(e.amount for e in entries)) == pytest.approx(
        billed.price_per_hour * 1_800.0 / 3600
    )
    assert lines(runs) == ["run e"]
    assert finished(first, handle) is CloudStatus.SUCCEEDED  # the first life reaps its child


def test_a_launch_that_ended_unwatched_is_answered_from_the_state_dir(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    burst = job("f", appends(runs, "exit 7"))
    first = EmulatedCloud(tmp_path, load_price_table(), clock=ManualClock(100.0))
    handle = first.launch(burst, "burst")
    wait_for(lambda: (tmp_path / "emulated" / "f" / "exit_code").exists())

    second = EmulatedCloud(tmp_path, load_price_table(), clock=ManualClock(500.0))
    assert second.launch(burst, "resumed") == handle
    assert second.poll(handle) is CloudStatus.FAILED
    assert second.reason(handle) == "emulated: exit code 7"
    ended = second.ended_at(handle)
    assert ended is not None and 100.0 <= ended <= 500.0
    assert second.billed_launch(handle).launched_at == 100.0
    assert lines(runs) == ["run f"]
    assert finished(first, handle) is CloudStatus.FAILED


def test_launches_of_a_killed_controller_are_adopted(tmp_path: Path) -> None:
    runs = tmp_path / "runs.txt"
    command = appends(runs, "sleep 0.5")
    life = earlier_life(FIRST_LIFE, state=str(tmp_path), job_id="k", command=command)
    handle = CloudHandle(life["handle"][0], life["handle"][1], None, life["handle"][2])

    cloud = EmulatedCloud(tmp_path, load_price_table())
    assert cloud.poll(handle) is CloudStatus.RUNNING
    assert cloud.billed_launch(handle).launched_at == life["launched_at"]
    relaunched = cloud.launch(job("k", command, gpu_type="A100"), "resumed by a new leader")
    assert relaunched == handle
    assert finished(cloud, handle) is CloudStatus.SUCCEEDED
    ended = cloud.ended_at(handle)
    assert ended is not None and ended >= life["launched_at"] + 0.5
    assert lines(runs) == ["run k"]


def test_cancel_of_an_adopted_launch_kills_its_group(tmp_path: Path) -> None:
    command = "sleep 30 & echo $! > child.pid; trap '' TERM; wait"
    life = earlier_life(FIRST_LIFE, state=str(tmp_path), job_id="c", command=command)
    handle = CloudHandle(life["handle"][0], life["handle"][1], None, life["handle"][2])
    child_file = tmp_path / "emulated" / "c" / "child.pid"
    child = int(wait_for(lambda: child_file.exists() and child_file.read_text()))

    cloud = EmulatedCloud(tmp_path, load_price_table(), grace=0.2)
    cloud.cancel(handle)
    assert finished(cloud, handle) is CloudStatus.CANCELLED
    assert wait_for(lambda: gone(child))
    pid = int(str(handle.cloud_job_id).rsplit("-", 1)[1])
    assert gone(pid)
    # and a later life still knows it was cancelled
    assert EmulatedCloud(tmp_path, load_price_table()).poll(handle) is CloudStatus.CANCELLED


def test_a_handle_without_any_launch_polls_as_failed(tmp_path: Path) -> None:
    cloud = EmulatedCloud(tmp_path, load_price_table())
    handle = CloudHandle("ghost", "starburst-emulated-ghost")
    assert cloud.poll(handle) is CloudStatus.FAILED
    assert "never ran" in cloud.reason(handle)


def test_an_end_dated_by_one_life_is_the_same_in_the_next(tmp_path: Path) -> None:
    # a controller that metered a launch to its end and died before closing it: the next
    # life must date the end as the first did, else the ledger's end and its cost entries
    # disagree (the crash-safety test caught 16 ms of money billed past the recorded end)
    burst = job("g", "true")
    clock = ManualClock(100.0)
    first = EmulatedCloud(tmp_path, load_price_table(), clock=clock)
    handle = first.launch(burst, "burst")
    clock.set(400.0)
    assert finished(first, handle) is CloudStatus.SUCCEEDED
    assert first.ended_at(handle) == 400.0

    second = EmulatedCloud(tmp_path, load_price_table(), clock=ManualClock(9_000.0))
    assert second.poll(handle) is CloudStatus.SUCCEEDED
    assert second.ended_at(handle) == 400.0


def test_an_unreadable_end_record_is_dated_again(tmp_path: Path) -> None:
    burst = job("h", "true")
    first = EmulatedCloud(tmp_path, load_price_table(), clock=ManualClock(100.0))
    handle = first.launch(burst, "burst")
    wait_for(lambda: (tmp_path / "emulated" / "h" / "exit_code").exists())
    (tmp_path / "emulated" / "h" / "ended_at").write_text("nan\n")
    second = EmulatedCloud(tmp_path, load_price_table(), clock=ManualClock(500.0))
    assert second.poll(handle) is CloudStatus.SUCCEEDED
    ended = second.ended_at(handle)
    assert ended is not None and 100.0 <= ended <= 500.0
