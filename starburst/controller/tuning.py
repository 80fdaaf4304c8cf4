"""The controller's side of ``starburst tune``: follow applied settings, record what it sees.

- *Applied settings* (``starburst tune --apply``, or ``POST /v1/tuning/apply``) are rows in
  the store's append-only ``policy_settings`` log; the newest is in force. The controller
  reads it at start-up and then at most every ``ttl_s`` seconds during its passes; a newer
  one replaces the policy, budget (or coefficient), runtime estimate and mode of its
  settings and the coefficient is refitted at once — no restart. Jobs already queued keep
  the budgets they were admitted with; new arrivals get the new ones.
- *Observed state*: the cluster's shape (the nodes the controller can schedule on) and the
  scheduler configuration it runs (with when its coefficient last changed, from what, and
  why: ``explain`` shows it beside each budget) are written to the store whenever they
  change, checked
  when the controller becomes leader, when it recalibrates and when a setting is applied;
  ``starburst history export`` turns them into the simulator's cluster file and today's
  setting.
"""

from __future__ import annotations

import logging
from typing import Any

from starburst.core.cycle import SchedulerConfig
from starburst.core.errors import StarburstError, TransientError
from starburst.core.policy import POLICIES
from starburst.core.ports import Cluster, TuningLog
from starburst.core.records import SCHEDULER, AppliedSetting, node_json
from starburst.settings import Settings

log = logging.getLogger("starburst.controller")
#: what the scheduler record says about its coefficient's last change (``explain`` reads it)
CHANGE_KEYS = ("coefficient_changed_at", "previous_coefficient", "coefficient_why")


def _without_change(recorded: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in recorded.items() if k not in CHANGE_KEYS}


def with_setting(settings: Settings, applied: AppliedSetting) -> Settings:
    s = applied.setting
    return settings.model_copy(
        update={
            "policy": s.policy,
            "out_of_order": s.out_of_order,
            "estimate": s.estimate,
            "coefficient": s.coefficient,
            "budget": s.budget if s.budget is not None else settings.budget,
        }
    )


class TuningHooks:
    def __init__(self, records: TuningLog, ttl_s: float = 10.0) -> None:
        self.records = records
        self.ttl_s = ttl_s
        self._seen: int | None = None
        self._checked_at = float("-inf")
        self._recorded: dict[str, Any] = {}

    def settings_in_force(self, settings: Settings) -> Settings:
        """``settings`` with the newest applied setting, if any (at start-up)."""
        try:
            applied = self.records.setting_in_force()
        except StarburstError as exc:  # e.g. a database not migrated yet: the static settings
            log.warning("could not read the applied policy setting: %s", exc)
            return settings
        if applied is None:
            return settings
        self._seen = applied.id
        return with_setting(settings, applied)

    def follow(self, settings: Settings, now: float) -> Settings | None:
        """New settings if a setting was applied since the last look, else None."""
        if now - self._checked_at < self.ttl_s:
            return None
        self._checked_at = now
        try:
            applied = self.records.setting_in_force()
        except TransientError:
            raise  # the database is down: the pass fails and is retried
        except StarburstError as exc:
            log.warning("could not read the applied policy setting: %s", exc)
            return None
        if applied is None or applied.id == self._seen:
            return None
        self._seen = applied.id
        log.info(
            "applied policy setting %d: %s (by %s: %s)",
            applied.id,
            applied.setting.describe(),
            applied.actor,
            applied.reason,
        )
        return with_setting(settings, applied)

    def record(
        self,
        cluster: Cluster,
        config: SchedulerConfig,
        settings: Settings,
        now: float,
        *,
        calibrated_on: int | None = None,
    ) -> None:
        """Write the cluster's shape and the running configuration if either changed; the
        configuration with when and why its coefficient last changed (``coefficient_note``,
        read by ``explain``). ``calibrated_on``: the finished jobs a recalibration fitted
        the coefficient on (0: none yet, the prior)."""
        try:
            nodes = [n for n in cluster.snapshot().capacity.nodes if n.schedulable]
            shape = {"nodes": [node_json(n) for n in nodes]}
            scheduler = {
                "policy": config.policy.kind.value,
                "coefficient": config.policy.coefficient,
                "budget": settings.budget if settings.coefficient is None else None,
                "out_of_order": config.out_of_order,
                "estimate": config.policy.estimate.value,
                "queue_cap": config.queue_cap,
                "order": config.order.value,
                "placement": config.placement.value,
                "setting_id": self._seen,
            }
            for name, value in (("cluster_shape", shape), (SCHEDULER, scheduler)):
                recorded = self._recorded.get(name)
                if recorded is None or _without_change(recorded) != value:
                    written = value
                    if name == SCHEDULER:
                        written = {**value, **self._change(value, settings, now, calibrated_on)}
                    self.records.record_state(name, written, at=now)
                    self._recorded[name] = written
        except StarburstError as exc:  # a courtesy to ``tune``: never fatal to the controller
            log.warning("could not record the controller's state: %s", exc)

    def _change(
        self, scheduler: dict[str, Any], settings: Settings, now: float, fitted_on: int | None
    ) -> dict[str, Any]:
        """When and why the coefficient took its value: kept from the last record while the
        coefficient is unchanged (a new order or cap is no news about budgets)."""
        before = self._recorded.get(SCHEDULER) or self._stored_scheduler()
        if before is not None and before.get("coefficient") == scheduler["coefficient"]:
            return {k: before[k] for k in CHANGE_KEYS if k in before}
        if settings.coefficient is not None:
            why = "set explicitly (coefficient)"
        elif POLICIES[settings.policy].budgetless:
            why = f"none: {settings.policy.value} needs no coefficient"
        elif POLICIES[settings.policy].reference_free:
            why = f"follows from the waiting budget {settings.budget:.0%} alone"
        elif fitted_on is None:
            why = f"calibrated to a waiting budget of {settings.budget:.0%}"
        elif fitted_on:
            why = (
                f"recalibrated on the last {fitted_on} finished jobs so that wait budgets add "
                f"up to {settings.budget:.0%} of their runtimes"
            )
        else:
            why = (
                f"fitted to a waiting budget of {settings.budget:.0%} on the prior "
                f"({settings.default_runtime_s:g} s jobs): no finished jobs yet"
            )
        if self._seen is not None:
            why += f"; policy setting {self._seen} in force"
        return {
            "coefficient_changed_at": now,
            "previous_coefficient": None if before is None else before.get("coefficient"),
            "coefficient_why": why,
        }

    def _stored_scheduler(self) -> dict[str, Any] | None:
        try:
            return self.records.state(SCHEDULER)
        except StarburstError:
            return None
