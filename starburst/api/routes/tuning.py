"""``/v1/tuning``: ``starburst tune`` for admins over HTTP.

- ``POST /v1/tuning/runs``: replay the last ``since_s`` seconds of history under the
  candidate settings (see ``starburst.sim.tune``) and return every row and the
  recommendation; with ``apply``, also append the chosen setting to the log the controller
  follows, unless the choice is today's setting (the same policy, budget and mode:
  ``already_in_force``, nothing written). Runs in the request's worker thread, one process
  (a month of a busy cluster replays in seconds). No finished jobs or no recorded cluster
  shape is a 422 saying so.
- ``GET /v1/tuning/settings``: the setting in force and the audit log, newest first.
- ``POST /v1/tuning/settings``: apply a setting by hand (with a reason, for the log).
Every route is admin-only.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter

from starburst.api.deps import AdminDep, ContextDep
from starburst.api.schemas.tuning import (
    AppliedOut,
    RecommendationOut,
    SettingIn,
    SettingsOut,
    TuneIn,
    TuneOut,
)
from starburst.core.records import AppliedSetting
from starburst.core.setting import PolicySetting

router = APIRouter(prefix="/v1/tuning", tags=["tuning"])


def applied_out(applied: AppliedSetting) -> AppliedOut:
    s = applied.setting
    return AppliedOut(
        id=applied.id,
        at=applied.at,
        actor=applied.actor,
        policy=s.policy,
        budget=s.budget,
        coefficient=s.coefficient,
        out_of_order=s.out_of_order,
        estimate=s.estimate,
        reason=applied.reason,
        evidence=dict(applied.evidence),
    )


@router.post("/runs", response_model=TuneOut)
def run_tune(body: TuneIn, admin: AdminDep, ctx: ContextDep) -> TuneOut:
    """Replay history under each candidate and recommend one (optionally apply it)."""
    from starburst.sim.history import TuneRequest, apply_choice, fallback, tune_history

    now = ctx.clock.now()
    request = TuneRequest(
        now - body.since_s,
        now,
        tuple(body.policies),
        tuple(body.budgets),
        body.max_jct_increase,
        body.price_per_gpu_hour,
        processes=1,
    )
    records = ctx.store.tuning
    with tempfile.TemporaryDirectory(prefix="starburst-tune-") as work:
        result, history = tune_history(
            records, request, fallback(ctx.settings, records.setting_in_force()), Path(work)
        )
    applied = None
    if body.apply:
        applied = apply_choice(records, result, body.choose, request, history, f"api:{admin.user}")
    rec = result.recommendation
    price = request.price if request.price is not None else history.price_per_gpu_hour
    return TuneOut(
        jobs=len(history.jobs),
        price_per_gpu_hour=price,
        rows=[dict(r) for r in result.rows],
        recommendation=RecommendationOut(
            tolerance=rec.tolerance,
            cheapest=_maybe(rec.cheapest),
            knee=_maybe(rec.knee),
            today=_maybe(rec.today),
        ),
        applied=applied_out(applied) if applied is not None else None,
        already_in_force=body.apply and applied is None,
    )


@router.get("/settings", response_model=SettingsOut)
def settings_log(_admin: AdminDep, ctx: ContextDep) -> SettingsOut:
    log = ctx.store.tuning.settings_log()
    return SettingsOut(
        in_force=applied_out(log[0]) if log else None, log=[applied_out(a) for a in log]
    )


@router.post("/settings", status_code=201, response_model=AppliedOut)
def apply_setting(body: SettingIn, admin: AdminDep, ctx: ContextDep) -> AppliedOut:
    """Apply a setting by hand; the controller adopts it on its next passes."""
    setting = PolicySetting(
        body.policy, body.budget, body.coefficient, body.out_of_order, body.estimate
    )
    applied = ctx.store.tuning.apply_setting(
        setting, actor=f"api:{admin.user}", reason=body.reason, at=ctx.clock.now()
    )
    return applied_out(applied)


def _maybe(row: dict[str, float | int | str] | None) -> dict[str, Any] | None:
    return None if row is None else dict(row)
