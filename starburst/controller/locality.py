"""Where a controller's local jobs live, so that two controllers never both run them.

The local cluster and the emulated cloud find their jobs only through the spawn records in
their state directory, on the machine that started them (``adapters/local/statedir.py``). A
controller on another host, or on the same host with another ``state_dir``, sees none of
them: leading, it would start again every job the store says is running (a fault run did:
9 jobs ran twice after a failover between two controllers with their own state directories).

Terms:
- *locality*: ``host:state directory`` of a controller whose cluster is local or whose cloud
  is emulated; None for one with neither (its jobs live in Kubernetes and the cloud, which
  every replica sees alike).
- *recorded* locality: the one the last leader wrote into its term (``leader_terms``).
- *in flight*: jobs running on-prem, bursting or running in the cloud.

Invariants: a leader with a locality records it in its term before it reconciles; a
controller whose locality differs from the recorded one refuses to start (``ConfigError``)
and to lead while any job is in flight, with one line naming both; once nothing is in
flight, a controller of any locality may lead (and records its own).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

from starburst.core.errors import ConfigError
from starburst.core.lifecycle import JobState
from starburst.core.ports import JobReads
from starburst.settings import Settings

IN_FLIGHT = (JobState.RUNNING_ONPREM, JobState.BURSTING, JobState.RUNNING_CLOUD)


def locality_of(settings: Settings, *, host: str | None = None) -> str | None:
    """``host:state directory`` when the settings run jobs on this machine, else None."""
    if settings.cluster != "local" and settings.cloud != "emulated":
        return None
    return f"{host or socket.gethostname()}:{Path(settings.state_dir).resolve()}"


class Locality:
    """Checks and records the locality of one controller (see the module docstring)."""

    def __init__(
        self,
        mine: str | None,
        jobs: JobReads,
        *,
        recorded: Callable[[], str | None],
        record: Callable[[int, str], object],
    ) -> None:
        """``mine``: this controller's locality; ``recorded``: reads the last leader's;
        ``record``: writes this one's into the term of a fencing token (the wiring binds
        both to the leader terms of the store's database)."""
        self.mine, self._jobs = mine, jobs
        self._recorded, self._record = recorded, record

    def conflict(self) -> str | None:
        """Why this controller must not run jobs now (None: it may)."""
        if self.mine is None:
            return None
        theirs = self._recorded()
        if theirs is None or theirs == self.mine:
            return None
        flying = sum(self._jobs.count(state) for state in IN_FLIGHT)
        if not flying:
            return None
        return (
            f"{flying} jobs in flight run from the local state {theirs} (host:state_dir), "
            f"which this controller ({self.mine}) cannot see: it would run them again. Run "
            "every controller of this database on that host with that STARBURST_STATE_DIR, "
            "or let those jobs end first"
        )

    def check_start(self) -> None:
        """Refuse to start (``ConfigError``, one line) while the conflict lasts."""
        why = self.conflict()
        if why is not None:
            raise ConfigError(f"refusing to start: {why}")

    def take(self, token: int) -> str | None:
        """On winning the term ``token``: the refusal if this controller must not lead,
        else None, with its locality recorded in the term."""
        why = self.conflict()
        if why is not None:
            return f"refusing to lead: {why}"
        if self.mine is not None:
            self._record(token, self.mine)
        return None
