"""How a pass moves a job: one store transition, and a move the job no longer allows skipped.

Every state change the controller makes goes through ``Moves.move`` (the pass, the cloud
follower and the failing of unstartable jobs share one instance): the store checks it
against ``core.lifecycle``'s one table and the leader's fencing token. A move refused as
illegal — the job was cancelled by a user, or already ended, meanwhile — or for a job the
store no longer knows is logged and skipped (``False``), never fatal to the pass; a deposed
leader's ``StaleLeader`` is not caught here, so the pass stops before any side effect.
"""

from __future__ import annotations

import logging

from starburst.core.lifecycle import IllegalTransition, JobState
from starburst.core.ports import Lifecycle
from starburst.core.records import JobNotFound

log = logging.getLogger("starburst.controller")

#: who the controller's moves are recorded as (the event's actor)
ACTOR = "controller"


class Moves:
    def __init__(self, store: Lifecycle) -> None:
        self.store = store

    def move(
        self,
        job_id: str,
        state: JobState,
        reason: str,
        token: int | None,
        at: float,
        wait_budget: float | None = None,
    ) -> bool:
        """Move ``job_id`` to ``state`` with ``reason``; False if the job no longer may."""
        try:
            self.store.transition(
                job_id,
                state,
                reason=reason,
                actor=ACTOR,
                fencing_token=token,
                at=at,
                wait_budget=wait_budget,
            )
        except (IllegalTransition, JobNotFound) as exc:
            log.info("skipped: %s", exc)  # e.g. cancelled by a user meanwhile
            return False
        return True
