"""``EmulatedCloud``: bursting without a cloud account — local processes at cloud prices.

The default cloud when none is configured. It implements the core's ``Cloud`` port: a burst
job runs as a local process group (same conventions as ``LocalCluster``: ``processes.py``),
while quotes and cost entries use the price table, as if the job had rented the cheapest
option for its GPUs. So the whole product — waiting, bursting, metering, budgets, reports —
can be tried on one machine.

Terms:
- *emulated*: every ``Quote`` has ``emulated=True`` and ``where`` starting with
  ``emulated``; every log starts with a header saying so; every ``BilledLaunch`` (hence every
  cost entry) carries ``emulated=True``. Nothing emulated can be mistaken for a real bill.
- *launch name*: ``starburst-emulated-<job id>``, deterministic, so launching a job twice
  returns the first launch's handle.

Invariants: ``launch`` returns as soon as the process exists; ``poll`` reads process state
and never waits; the process gets no GPUs (``CUDA_VISIBLE_DEVICES`` is empty) — only the price
is a cloud's. After a restart, a launch this object did not start is answered from its
``exit_code`` file in the state directory, else reported failed as lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from starburst.adapters.local.cluster import WallClock
from starburst.adapters.local.processes import JobProcess, job_dirname, spawn
from starburst.core.errors import PermanentError
from starburst.core.job import Job
from starburst.core.ports import Clock, CloudHandle, CloudStatus, Quote
from starburst.metering import BilledLaunch
from starburst.pricing import PriceTable, default_price_table

EMULATED = "emulated"


@dataclass(slots=True)
class _Launch:
    job: Job
    quote: Quote
    handle: CloudHandle
    process: JobProcess
    launched_at: float
    ended_at: float | None = None


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
    ) -> None:
        self.state_dir = Path(state_dir)
        self._prices = prices
        self.default_gpu = default_gpu
        self.cloud = cloud
        self.spot = spot
        self._clock: Clock = clock or WallClock()
        self._grace = grace
        self._launches: dict[str, _Launch] = {}

    # -- the Cloud port ----------------------------------------------------------------------
    def quote(self, job: Job) -> Quote:
        gpu = job.gpu_type or self.default_gpu
        if job.gpus == 0:
            return Quote(0.0, f"{EMULATED} (CPU only)", "none", emulated=True)
        table = self._prices or default_price_table()
        options = table.options(gpu, job.gpus, self.cloud, self.spot)
        if not options:
            raise PermanentError(
                f"job {job.id}: no price for {gpu}:{job.gpus} in the price table; "
                "the emulated cloud prices bursts from it"
            )
        best = options[0]
        return Quote(best.price_per_hour, f"{EMULATED} {best.where}", best.accelerators, True)

    def launch(self, job: Job, reason: str) -> CloudHandle:
        existing = self._launches.get(job.id)
        if existing is not None:
            return existing.handle
        quote = self.quote(job)
        name = f"starburst-emulated-{job_dirname(job.id)}"
        header = (
            f"# {EMULATED} cloud: job {job.id} runs as a local process, metered as "
            f"{quote.accelerators} on {quote.where.removeprefix(EMULATED + ' ')} at "
            f"${quote.price_per_hour:.2f}/h; no cloud GPUs are used. {reason}"
        )
        env = {"CUDA_VISIBLE_DEVICES": "", "STARBURST_EMULATED": "1"}
        process = spawn(job, self.state_dir / "emulated", env, header, self._grace)
        handle = CloudHandle(job.id, name, None, f"{EMULATED}-pid-{process.pid}")
        self._launches[job.id] = _Launch(job, quote, handle, process, self._clock.now())
        return handle

    def poll(self, handle: CloudHandle) -> CloudStatus:
        launch = self._launches.get(handle.job_id)
        if launch is None:
            return self._poll_lost(handle)
        outcome = launch.process.poll()
        if outcome is None:
            return CloudStatus.RUNNING
        if launch.ended_at is None:
            launch.ended_at = self._clock.now()
        if outcome.cancelled:
            return CloudStatus.CANCELLED
        return CloudStatus.SUCCEEDED if outcome.succeeded else CloudStatus.FAILED

    def cancel(self, handle: CloudHandle) -> None:
        launch = self._launches.get(handle.job_id)
        if launch is not None:
            launch.process.kill()

    def logs(self, handle: CloudHandle) -> str:
        launch = self._launches.get(handle.job_id)
        if launch is not None:
            return launch.process.logs()
        log = self._directory(handle) / "output.log"
        return log.read_text("utf-8", errors="replace") if log.exists() else ""

    # -- more than the port: metering and explanations ------------------------------------
    def billed_launch(self, handle: CloudHandle) -> BilledLaunch:
        """What the cost meter bills for this launch (always marked emulated)."""
        launch = self._known(handle)
        quote = launch.quote
        return BilledLaunch(
            handle.name,
            launch.job.id,
            launch.job.team,
            quote.where,
            quote.accelerators,
            quote.price_per_hour,
            launch.launched_at,
            emulated=True,
        )

    def ended_at(self, handle: CloudHandle) -> float | None:
        return self._known(handle).ended_at

    def reason(self, handle: CloudHandle) -> str:
        """Why the launch is in its state (the exit code of an ended one)."""
        launch = self._launches.get(handle.job_id)
        if launch is None:
            return f"{EMULATED} launch {handle.name} is not known to this process"
        outcome = launch.process.poll()
        if outcome is None:
            return f"{EMULATED}: running as local pid {launch.process.pid}"
        return f"{EMULATED}: {outcome.reason}"

    # -- internals --------------------------------------------------------------------------
    def _known(self, handle: CloudHandle) -> _Launch:
        launch = self._launches.get(handle.job_id)
        if launch is None:
            raise PermanentError(f"{EMULATED} launch {handle.name} is not known to this process")
        return launch

    def _directory(self, handle: CloudHandle) -> Path:
        return self.state_dir / "emulated" / job_dirname(handle.job_id)

    def _poll_lost(self, handle: CloudHandle) -> CloudStatus:
        exit_file = self._directory(handle) / "exit_code"
        if exit_file.exists():
            code = int(exit_file.read_text("utf-8").strip() or "1")
            return CloudStatus.SUCCEEDED if code == 0 else CloudStatus.FAILED
        return CloudStatus.FAILED
