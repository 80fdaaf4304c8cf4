"""The simulator's cloud: the core's ``Cloud`` port with unlimited capacity and a flat price.

A launch starts at once, becomes RUNNING after the configured start-up delay and SUCCEEDED
after the job's runtime (or the length of the stint it was granted, for a Star-Wait job that
will be pulled back). Cost is billed on the GPU-time the job runs, the paper's unit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from starburst.core.job import Job
from starburst.core.port_values import CloudHandle, CloudStatus, Quote

if TYPE_CHECKING:
    from starburst.core.ports import Clock


class SimCloud:
    def __init__(
        self,
        clock: Clock,
        price_per_gpu_hour: float,
        startup_delay: float = 0.0,
        runtimes: Mapping[str, float] | None = None,
    ) -> None:
        self._clock = clock
        self._runtimes = runtimes if runtimes is not None else {}
        self.price_per_gpu_hour = price_per_gpu_hour
        self.startup_delay = startup_delay
        self._launches: dict[str, tuple[float, float]] = {}  # name → (launched, run seconds)
        self._seen_ended: set[str] = set()  # launches a poll reported ended, or cancelled
        self.gpu_seconds = 0.0
        self.launches = 0

    def quote(self, job: Job) -> Quote:
        return Quote(self.price_per_gpu_hour * job.gpus, "sim", f"gpu:{job.gpus}")

    def launch(self, job: Job, reason: str = "", run_for: float | None = None) -> CloudHandle:
        """Launch the job; ``run_for`` limits the stint (Star-Wait pull-back), else runtime."""
        runtime = job.runtime if job.runtime is not None else self._runtimes.get(job.id, 0.0)
        seconds = runtime if run_for is None else run_for
        name = f"sb-{job.id}-{self.launches}"
        self.launches += 1
        self._launches[name] = (self._clock.now(), seconds or 0.0)
        self.gpu_seconds += job.gpus * (seconds or 0.0)
        return CloudHandle(job.id, name)

    def finish_time(self, handle: CloudHandle) -> float:
        launched, seconds = self._launches[handle.name]
        return launched + self.startup_delay + seconds

    def poll(self, handle: CloudHandle) -> CloudStatus:
        launched, _ = self._launches[handle.name]
        now = self._clock.now()
        if now >= self.finish_time(handle):
            self._seen_ended.add(handle.name)
            return CloudStatus.SUCCEEDED
        if now >= launched + self.startup_delay:
            return CloudStatus.RUNNING
        return CloudStatus.PROVISIONING

    def cancel(self, handle: CloudHandle) -> None:
        launched, _ = self._launches.get(handle.name, (0.0, 0.0))
        if handle.name in self._launches:  # it ran until now
            self._launches[handle.name] = (launched, self._clock.now() - launched)
            self._seen_ended.add(handle.name)

    def next_finish(self) -> float | None:
        """When the next launch whose end no poll has reported yet ends: possibly now or
        earlier (a run of zero seconds), so a caller on virtual time polls again at once."""
        ends = [
            launched + self.startup_delay + seconds
            for name, (launched, seconds) in self._launches.items()
            if name not in self._seen_ended
        ]
        return min(ends, default=None)

    def logs(self, handle: CloudHandle) -> str:
        return f"simulated run {handle.name}\n"

    @property
    def cost_usd(self) -> float:
        return self.gpu_seconds / 3600.0 * self.price_per_gpu_hour
