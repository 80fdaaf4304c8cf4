"""A pass meters only the chunks of a cloud launch that are new since the last pass of its term:
the cost of metering stays flat however long a launch runs (it once rewrote every chunk since
the launch, 4,320 rows a pass for a three-day burst at the default one-minute chunk, which the
store then ignored). A restarted controller meters the whole launch again, which the store
deduplicates, so a crash still loses no chunk and bills none twice."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import pytest

from starburst.core.records import CostEntry, JobSpec
from tests.controller.test_metering_late_end import PRICE, bursting

CHUNK = 10.0


def test_each_pass_writes_only_the_new_chunks_and_a_restart_loses_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, cloud, clock, loop = bursting(tmp_path, CHUNK)
    written: list[int] = []
    record = store.ledger.record_costs

    def counting(entries: Sequence[CostEntry]) -> None:
        written.append(len(entries))
        record(entries)

    monkeypatch.setattr(store.ledger, "record_costs", counting)

    store.submissions.submit(JobSpec(id="j1", gpus=1, command="true"))
    live = loop()
    live.run_pass()  # bursts at once: nothing on-prem
    (launch,) = store.ledger.launches("j1")
    clock.advance(10 * CHUNK + 1)
    live.run_pass()
    assert written == [10]  # ten whole chunks since the launch
    for _ in range(5):
        clock.advance(CHUNK)
        live.run_pass()
    assert written == [10, 1, 1, 1, 1, 1]  # then one new chunk a pass, not all of them again

    written.clear()
    live = loop()
    live.run_pass()  # a restart: every chunk once more, none billed twice
    assert written == [15]
    cloud.end = clock.now()
    clock.advance(0.5)
    live.run_pass()  # the end: only the last, partial chunk is new
    assert written == [15, 1]
    billed = sum(store.ledger.job_costs(["j1"])["j1"].values(), Decimal(0))
    seconds = Decimal(str(cloud.end - launch.launched_at))
    assert billed == (Decimal(str(PRICE)) * seconds / 3600).quantize(Decimal("0.000001"))
    store.close()
