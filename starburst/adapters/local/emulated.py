"""``EmulatedCloud``: bursting without a cloud account — local processes at cloud prices.

The default cloud when none is configured. It implements the core's ``Cloud`` port: a burst
job runs as a local process group (same conventions as ``LocalCluster``: ``processes.py``),
while quotes and cost entries use the price table, as if the job had rented the cheapest
option the job's cloud choice allows (``starburst.pricing.choice``: its clouds, regions and
spot-ness, else the server's ``use_spot``), so a spot job is priced and metered as spot. So the
whole product — waiting, bursting, metering, budgets, reports —
can be tried on one machine.

Terms:
- *emulated*: every ``Quote`` has ``emulated=True`` and ``where`` starting with
  ``emulated``; every log starts with a header saying so; every ``BilledLaunch`` (hence every
  cost entry) carries ``emulated=True``. Nothing emulated can be mistaken for a real bill.
- *region*: the emulated cloud prices each cloud in the price table's region for it only; a
  job that names another region of that cloud is refused (its price is not known).
- *launch name*: ``starburst-emulated-<job id>``, deterministic, so launching a job twice
  returns the first launch's handle.

- *adopt*: after a restart (a new object on the same ``state_dir``), take over a launch an
  earlier life made, from its spawn record in ``<state_dir>/emulated/<job>/`` (layout:
  ``statedir.py``). The record holds the launch name, the team, the quote and the launch
  time, so billing needs nothing but the state directory.

Restart safety — a burst is never run twice and never lost: ``launch`` returns the handle of
the earlier launch of the job (running or ended) if the state directory holds one whose
process ran the command (``processes.adopt``), and launches only otherwise; ``poll``,
``cancel``, ``logs``, ``billed_launch``, ``ended_at`` and ``reason`` adopt a launch they do
not know from the state directory. ``billed_launch`` bills from the recorded launch time and
quote; ``ended_at`` is when the end was seen, or, for an end found after a restart, when the
exit status was written — so metered cost is what really ran — and once dated it is the same
in every later life (``ended_at`` in the state directory): a life that billed up to the end
and died before closing the launch leaves entries the next life's end agrees with.

Prompt ends: once the controller subscribes, an ``EndWatch`` calls its listener as soon as a
launch's process ends, so its end is recorded (and its metering closed) by the very next pass.

Invariants: ``launch`` returns as soon as the process exists; ``poll`` reads process state
and never waits; the process gets no GPUs (``CUDA_VISIBLE_DEVICES`` is empty) — only the price
is a cloud's. A handle whose job has no launch in the state directory polls as failed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from starburst.adapters.local.jobusers import JobUsers
from starburst.adapters.local.processes import (
    DEFAULT_OUTPUT_MAX,
    JobProcess,
    Outcome,
    adopt,
    spawn,
    spawn_record,
)
from starburst.adapters.local.statedir import ENDED, LOG, job_dirname, read_float, write_atomically
from starburst.adapters.local.watch import EndWatch
from starburst.core import time_limit
from starburst.core.billing import BilledLaunch
from starburst.core.cloud_choice import CLOUDS
from starburst.core.errors import PermanentError
from starburst.core.failure import with_output
from starburst.core.job import Job
from starburst.core.ports import Clock, CloudHandle, CloudStatus, Quote
from starburst.pricing import PriceTable, default_price_table
from starburst.pricing.choice import chosen_clouds, chosen_regions, launch_options
from starburst.wallclock import WallClock

EMULATED = "emulated"
log = logging.getLogger("starburst.cloud")
BACKEND = "emulated-cloud"


@dataclass(slots=True)
class _Launch:
    job_id: str
    team: str | None
    quote: Quote
    handle: CloudHandle
    process: JobProcess
    launched_at: float
    ended_at: float | None = None
    time_limit: float | None = None  # --time-limit, from the launch
    timed_out: bool = False  # killed at its --time-limit: a failure, not a cancel


class EmulatedCloud:
    """Runs burst jobs locally and prices them from the price table (``Cloud`` port)."""

    def __init__(
        self,
        state_dir: str | Path,
        prices: PriceTable | None = None,
        *,
        default_gpu: str = "A100",
        cloud: str | None = None,
        spot: bool = False,
        clock: Clock | None = None,
        grace: float = 5.0,
        users: JobUsers | None = None,
        output_max_bytes: int = DEFAULT_OUTPUT_MAX,
    ) -> None:
        self.state_dir = Path(state_dir)
        self._prices = prices
        self.default_gpu = default_gpu
        self.cloud = cloud
        self.spot = spot
        self._clock: Clock = clock or WallClock()
        self._grace = grace
        self._users = users
        self._output_max = output_max_bytes
        self._launches: dict[str, _Launch] = {}
        self._watch = EndWatch()

    def subscribe(self, listener: Callable[[], None]) -> None:
        """``ChangeNotifier``: call ``listener`` (from a watcher thread) soon after a
        launch's process ends."""
        live = [x.process for x in self._launches.values() if x.process.outcome is None]
        self._watch.listen(listener, ((p.pid, p.token) for p in live))

    # -- the Cloud port ----------------------------------------------------------------------
    def quote(self, job: Job) -> Quote:
        if job.gpus == 0:
            return Quote(0.0, f"{EMULATED} (CPU only)", "none", emulated=True)
        table = self._prices or default_price_table()
        if self.cloud is not None and not chosen_clouds(job):
            job = replace(job, extra={**job.extra, CLOUDS: self.cloud})
        best = launch_options(job, table, self.default_gpu, self.spot)[0]
        for cloud, regions in chosen_regions(job).items():
            priced_in = table.regions.get(cloud)
            wrong = [r for r in regions if priced_in is not None and r != priced_in.lower()]
            if wrong:
                raise PermanentError(
                    f"job {job.id}: the {EMULATED} cloud prices {cloud} in {priced_in} only "
                    f"(the price table's region), not {wrong[0]}"
                )
        return Quote(best.price.price_per_hour, f"{EMULATED} {best.where}", best.price.shape, True)

    def launch(self, job: Job, reason: str) -> CloudHandle:
        existing = self._find(job.id)
        if existing is not None:
            return existing.handle
        quote = self.quote(job)
        name = f"starburst-emulated-{job_dirname(job.id)}"
        header = (
            f"# {EMULATED} cloud: job {job.id} runs as a local process, metered as "
            f"{quote.accelerators} on {quote.where.removeprefix(EMULATED + ' ')} at "
            f"${quote.price_per_hour:.2f}/h; no cloud GPUs are used. {reason}"
        )
        now = self._clock.now()
        record = {
            "backend": BACKEND,
            "job_id": job.id,
            "team": job.team,
            "name": name,
            "quote": {
                "price_per_hour": quote.price_per_hour,
                "where": quote.where,
                "accelerators": quote.accelerators,
            },
            "spawned_at": now,
        }
        env = {"CUDA_VISIBLE_DEVICES": "", "STARBURST_EMULATED": "1"}
        process = spawn(
            job,
            self._root,
            env,
            header,
            record,
            self._grace,
            self._users,
            output_max=self._output_max,
        )
        handle = CloudHandle(job.id, name, None, f"{EMULATED}-pid-{process.pid}")
        self._remember(
            _Launch(
                job.id,
                job.team,
                quote,
                handle,
                process,
                now,
                time_limit=time_limit.time_limit_of(job),
            )
        )
        return handle

    def poll(self, handle: CloudHandle) -> CloudStatus:
        launch = self._find(handle.job_id)
        if launch is None:
            return CloudStatus.FAILED  # no launch of this job ever ran here: lost
        outcome = self._outcome(launch)
        if outcome is None:
            return CloudStatus.RUNNING
        if outcome.cancelled and not launch.timed_out:
            return CloudStatus.CANCELLED
        if launch.timed_out:
            return CloudStatus.FAILED
        return CloudStatus.SUCCEEDED if outcome.succeeded else CloudStatus.FAILED

    def cancel(self, handle: CloudHandle) -> None:
        launch = self._find(handle.job_id)
        if launch is not None:
            launch.process.kill()

    def logs(self, handle: CloudHandle) -> str:
        launch = self._find(handle.job_id)
        if launch is not None:
            return launch.process.logs()
        log = self._root / job_dirname(handle.job_id) / LOG
        return log.read_text("utf-8", errors="replace") if log.exists() else ""

    # -- more than the port: metering and explanations ------------------------------------
    def billed_launch(self, handle: CloudHandle) -> BilledLaunch:
        """What the cost meter bills for this launch (always marked emulated)."""
        launch = self._known(handle)
        quote = launch.quote
        return BilledLaunch(
            launch.handle.name,
            launch.job_id,
            launch.team,
            quote.where,
            quote.accelerators,
            quote.price_per_hour,
            launch.launched_at,
            emulated=True,
        )

    def ended_at(self, handle: CloudHandle) -> float | None:
        launch = self._known(handle)
        self._outcome(launch)
        return launch.ended_at

    def reason(self, handle: CloudHandle) -> str:
        """Why the launch is in its state (the exit code of an ended one)."""
        launch = self._find(handle.job_id)
        if launch is None:
            return f"{EMULATED} launch {handle.name} never ran on this machine"
        outcome = self._outcome(launch)
        if outcome is None:
            return f"{EMULATED}: running as local pid {launch.process.pid}"
        if launch.timed_out:
            limit = launch.time_limit or 0.0
            why = with_output(time_limit.killed_after(limit), launch.process.output_tail())
            return f"{EMULATED}: {why}"
        return f"{EMULATED}: {launch.process.failure(outcome)}"

    # -- internals --------------------------------------------------------------------------
    @property
    def _root(self) -> Path:
        return self.state_dir / EMULATED

    def _known(self, handle: CloudHandle) -> _Launch:
        launch = self._find(handle.job_id)
        if launch is None:
            raise PermanentError(f"{EMULATED} launch {handle.name} never ran on this machine")
        return launch

    def _outcome(self, launch: _Launch) -> Outcome | None:
        """The launch's outcome (None while it runs), dating its end the first time it is seen."""
        process = launch.process
        if (
            not launch.timed_out
            and process.outcome is None
            and launch.time_limit is not None
            and self._clock.now() - launch.launched_at >= launch.time_limit
        ):
            launch.timed_out = True
            process.kill()
        outcome = process.poll()
        if outcome is not None and launch.ended_at is None:
            launch.ended_at = self._dated_end(launch)
        return outcome

    def _dated_end(self, launch: _Launch) -> float:
        """When the launch ended, the same in every life: the first life to see the end
        dates it and writes that date to the state directory (``ENDED``); later lives read
        it. A life that dated an end may have billed up to it before dying: an end dated
        again later would not match the cost entries already written."""
        path = launch.process.directory / ENDED
        recorded = read_float(path)
        if recorded is not None:
            return recorded
        now = self._clock.now()
        process = launch.process
        at = max(launch.launched_at, now if process.watched else now - process.ended_ago)
        try:
            write_atomically(path, f"{at!r}\n")
        except OSError as exc:  # a read-only state directory: this life's date only
            log.warning("recording the end of %s: %s", launch.handle.name, exc)
        return at

    def _find(self, job_id: str) -> _Launch | None:
        """The launch of ``job_id``: this life's, else adopted from the state directory."""
        launch = self._launches.get(job_id)
        if launch is not None:
            return launch
        record = spawn_record(self._root, job_id)
        if record is None or record.get("backend") != BACKEND:
            return None
        process = adopt(self._root, job_id, record, self._grace, self._users)
        if process is None:
            return None
        q = record["quote"]
        quote = Quote(float(q["price_per_hour"]), str(q["where"]), str(q["accelerators"]), True)
        handle = CloudHandle(job_id, str(record["name"]), None, f"{EMULATED}-pid-{process.pid}")
        team = record.get("team")
        launch = _Launch(job_id, team, quote, handle, process, float(record["spawned_at"]))
        self._remember(launch)
        return launch

    def _remember(self, launch: _Launch) -> None:
        self._launches[launch.job_id] = launch
        self._watch.add(launch.process.pid, launch.process.token)
