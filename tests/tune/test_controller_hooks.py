"""The controller's side of tune on the local backend: it records the GPU slots it runs on
and its configuration, and follows applied settings from the moment it starts."""

from __future__ import annotations

from pathlib import Path

from starburst.adapters.db.store import SqlStore
from starburst.adapters.local import LocalCluster
from starburst.controller.daemon import Controller
from starburst.controller.metrics import ControllerMetrics
from starburst.controller.wiring import wire_controller
from starburst.core.policy import PolicyKind
from starburst.core.setting import PolicySetting
from starburst.settings import Settings
from tests.support.clock import ManualClock
from tests.support.databases import upgrade


def controller(tmp: Path, clock: ManualClock) -> Controller:
    url = f"sqlite:///{tmp / 'sb.db'}"
    upgrade(url)
    settings = Settings(
        database_url=url,
        state_dir=tmp,
        local_gpus=3,
        cloud="none",
        local_gpu_type="l4",
        queue_cap=12,
    )
    store = SqlStore.open(url, clock=clock)
    return wire_controller(
        settings,
        store,
        LocalCluster(tmp / "cluster", 3, gpu_type="l4", clock=clock),
        None,
        clock=clock,
        metrics=ControllerMetrics.create(),
    )


def test_the_local_cluster_records_its_gpu_slots_and_configuration(tmp_path: Path) -> None:
    clock = ManualClock()
    c = controller(tmp_path, clock)
    try:
        assert c.run_pass() is not None
        records = c.store.tuning
        assert [(n.gpus, n.gpu_type) for n in records.cluster_shape() or []] == [(3, "l4")]
        scheduler = records.state("scheduler")
        assert scheduler is not None
        assert (scheduler["policy"], scheduler["budget"], scheduler["queue_cap"]) == (
            "compute",
            0.25,
            12,
        )
        assert scheduler["coefficient"] == c.config.policy.coefficient
    finally:
        c.stop()
        c.store.close()


def test_a_setting_applied_before_start_is_in_force_at_once(tmp_path: Path) -> None:
    clock = ManualClock()
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    store = SqlStore.open(url, clock=clock)
    store.tuning.apply_setting(
        PolicySetting(PolicyKind.CONSTANT, None, 120.0, False),
        actor="t",
        reason="before the restart",
    )
    store.close()
    c = controller(tmp_path, clock)
    try:
        assert c.config.policy.kind is PolicyKind.CONSTANT
        assert c.config.policy.coefficient == 120.0 and not c.config.out_of_order
        assert c.config.queue_cap == 12  # what tune does not change stays as deployed
    finally:
        c.stop()
        c.store.close()


def test_a_recalibration_records_when_and_why_the_coefficient_changed(tmp_path: Path) -> None:
    """What ``explain`` reads (``api.budget_notes``): the real controller's recalibration on
    its store's finished jobs records the new coefficient with the time, the value before
    and the window it was fitted on."""
    from tests.tune.histories import record_history

    clock = ManualClock()
    c = controller(tmp_path, clock)
    try:
        assert c.run_pass() is not None
        first = c.store.tuning.state("scheduler")
        assert first is not None and first["coefficient_changed_at"] == clock.t
        assert first["previous_coefficient"] is None
        assert "no finished jobs yet" in first["coefficient_why"]
        record_history(c.store, clock.t, jobs=30)
        later = clock.advance(3600)
        c.recalibrate()
        now = c.store.tuning.state("scheduler")
        assert now is not None and now["coefficient"] != first["coefficient"]
        assert now["coefficient"] == c.config.policy.coefficient
        assert (now["coefficient_changed_at"], now["previous_coefficient"]) == (
            later,
            first["coefficient"],
        )
        window = len(c.store.models.history(limit=c.settings.calibration_window))
        assert now["coefficient_why"] == (
            f"recalibrated on the last {window} finished jobs so that wait budgets add up to "
            "25% of their runtimes"
        )
    finally:
        c.stop()
        c.store.close()
