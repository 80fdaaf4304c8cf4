"""``SkyPilotCloud``: burst jobs run as SkyPilot managed jobs (the core's ``Cloud`` port).

Each burst job moves through phases, one step per ``poll`` pass, never waiting on SkyPilot:

```
LOOKUP ──(an earlier launch of this job is in the queue)──────────────→ TRACKING
   ├─────(its launch request is still in flight on the API server)──→ LAUNCHING (adopted)
   └─────(none)──→ LAUNCHING ──(request succeeded: managed job id)───→ TRACKING
                       │  └─(no capacity: next cheapest option)──→ LAUNCHING (option k+1)
                       └─(transient error)──→ WAITING ──(backoff over)──→ LOOKUP
TRACKING ──(queue: FAILED_NO_RESOURCE and options left)──→ LAUNCHING (option k+1)
TRACKING ──(queue: terminal)──→ ENDED
LOOKUP ──(no enabled cloud offers the job's options)──→ ENDED (REFUSED)
```

Terms:
- *launch name*: ``<base name>-<option index>`` (``task.py``); the base name is a function of
  the job id only, so a restarted controller finds its earlier launches in the managed-jobs
  queue instead of launching twice. ``launch(job)`` is therefore safe to call again after a
  restart: it starts in LOOKUP and adopts what it finds.
- *option*: cloud × on-demand/spot from the price table, cheapest first; option k is tried
  only after option k-1 had no capacity.
- *billed from*: the first launch request; provisioning, recovery and failover are billed.
- *refused*: the cloud side, not the job, cannot launch: SkyPilot has no cloud enabled (or
  none of those the job's options are priced on). Nothing was launched, nothing is billed;
  ``poll`` says REFUSED with the reason, so the controller keeps the job on-prem, and
  ``degraded()`` says why the cloud side cannot burst until ``sky check`` enables a cloud.
  A later ``launch`` of a refused job starts afresh.
- *enabled clouds*: asked alongside the first lookup and then every ``clouds_ttl`` seconds
  (``clouds.py``); an option on a cloud that is not enabled is skipped, never launched.

Invariants: every SDK call returns a request id at once and is resolved on a later pass
(``requests.py``); ``poll``, ``launch`` and ``cancel`` never block on a cloud; a job is never
launched while an earlier launch of the same option might exist (LOOKUP comes first after
every restart and every transient failure); ``poll`` reports CANCELLED only once SkyPilot does
(or when nothing was ever launched); SDK exceptions never escape: they become statuses with a
reason (``reason(handle)``), or ``TransientError``/``PermanentError`` from ``logs``.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from starburst.adapters.skypilot.api import SkyApi, load_sky
from starburst.adapters.skypilot.backoff import Backoff
from starburst.adapters.skypilot.clouds import EnabledClouds
from starburst.adapters.skypilot.launch import TERMINAL, Launch, Phase
from starburst.adapters.skypilot.outcomes import (
    NO_CAPACITY_STATUSES,
    NO_CLOUD,
    PROGRAM_FAILED,
    Failure,
    FailureKind,
    classify,
    managed_status,
    program_failure,
    status_name,
)
from starburst.adapters.skypilot.requests import Requests, Resolved, field_of
from starburst.adapters.skypilot.task import (
    NAME_PREFIX,
    LaunchOption,
    base_name,
    build_task,
    launch_options,
    option_of,
)
from starburst.core.billing import BilledLaunch
from starburst.core.errors import PermanentError, StarburstError, TransientError
from starburst.core.job import Job
from starburst.core.ports import Clock, CloudHandle, CloudStatus, Quote
from starburst.core.time_limit import time_limit_of
from starburst.pricing import PriceTable, default_price_table


class SkyPilotCloud:
    """Launches, polls, cancels and reads logs of managed jobs through ``SkyApi``."""

    def __init__(
        self,
        clock: Clock,
        prices: PriceTable | None = None,
        api: SkyApi | None = None,
        *,
        default_gpu: str | None = None,
        spot: bool = False,
        backoff: Backoff | None = None,
        sync_interval: float = 2.0,
        log_lines: int = 1000,
        clouds_ttl: float = 60.0,
        connect: Callable[[], SkyApi] = load_sky,
    ) -> None:
        self._clock = clock
        self._prices = prices
        self._api = api
        self._connect = connect
        self._requests: Requests | None = None
        self.default_gpu = default_gpu
        self.spot = spot
        self.backoff = backoff or Backoff()
        self.sync_interval = sync_interval
        self.log_lines = log_lines
        self._launches: dict[str, Launch] = {}
        self._synced_at: float | None = None
        self._in_flight: dict[str, str] | None = None
        self._clouds: EnabledClouds | None = None
        self.clouds_ttl = clouds_ttl

    # -- the Cloud port ----------------------------------------------------------------------
    def quote(self, job: Job) -> Quote:
        best = self._options(job)[0]
        return Quote(best.price.price_per_hour, best.where, best.price.shape)

    def launch(self, job: Job, reason: str) -> CloudHandle:
        earlier = self._launches.get(job.id)
        if earlier is None or earlier.status is CloudStatus.REFUSED:
            requests = self._reqs()
            self._launches[job.id] = Launch(
                job, self._options(job), Phase.LOOKUP, requests.next_seq
            )
            requests.request_queue()
            self._enabled().refresh(self._clock.now())
        return self.handle(job.id)

    def poll(self, handle: CloudHandle) -> CloudStatus:
        self.sync()
        launch = self._launches.get(handle.job_id)
        if launch is None:
            raise PermanentError(
                f"cloud launch {handle.name} is unknown here; launch(job) again to find it"
            )
        return launch.status

    def cancel(self, handle: CloudHandle) -> None:
        launch = self._launches.get(handle.job_id)
        if launch is None or launch.phase is Phase.ENDED:
            return
        launch.cancel_wanted = True
        if launch.phase is Phase.WAITING:
            self._lookup(launch, "cancelling: checking nothing was launched")
        elif launch.phase is Phase.TRACKING:
            self._send_cancel(launch)

    def logs(self, handle: CloudHandle) -> str:
        """The managed job's latest output: from this object's launch, else from the handle's
        recorded managed-job id (an API process that launched nothing reads logs too)."""
        launch = self._launches.get(handle.job_id)
        managed = launch.cloud_job_id if launch is not None else None
        if managed is None and handle.cloud_job_id and handle.cloud_job_id.isdigit():
            managed = int(handle.cloud_job_id)
        if managed is None:
            return ""
        buffer = io.StringIO()
        try:
            self._sky().jobs.tail_logs(
                job_id=managed, follow=False, tail=self.log_lines, output_stream=buffer
            )
        except Exception as exc:
            failure = classify(exc)
            kind = TransientError if failure.kind is FailureKind.TRANSIENT else PermanentError
            raise kind(f"logs of {handle.name}: {failure.reason}") from exc
        return buffer.getvalue()

    # -- more than the port ------------------------------------------------------------------
    def handle(self, job_id: str) -> CloudHandle:
        """The current handle (request and managed-job ids change as the launch proceeds)."""
        launch = self._launches[job_id]
        job_id_text = str(launch.cloud_job_id) if launch.cloud_job_id is not None else None
        return CloudHandle(job_id, base_name(job_id), launch.request_id, job_id_text)

    def launch_of(self, job_id: str) -> Launch | None:
        return self._launches.get(job_id)

    def ended_at(self, handle: CloudHandle) -> float | None:
        """When the launch ended as SkyPilot reports it (None while it runs)."""
        launch = self._launches.get(handle.job_id)
        return launch.ended_at if launch is not None else None

    def degraded(self) -> str | None:
        """Why the cloud side cannot burst now (None: it can, as far as is known). Asks the
        API server again, without waiting, when its last answer is older than ``clouds_ttl``."""
        clouds = self._enabled()
        clouds.refresh(self._clock.now())
        return clouds.degraded()

    def reason(self, handle: CloudHandle) -> str:
        launch = self._launches.get(handle.job_id)
        return launch.reason if launch is not None else "not launched by this controller"

    def billed_launch(self, handle: CloudHandle) -> BilledLaunch | None:
        """What the meter bills now (None before the first launch request)."""
        launch = self._launches.get(handle.job_id)
        if launch is None or launch.launched_at is None:
            return None
        option = launch.current
        return BilledLaunch(
            handle.name,
            launch.job.id,
            launch.job.team,
            option.where,
            option.price.shape,
            option.price.price_per_hour,
            launch.launched_at,
        )

    def sync(self, force: bool = False) -> None:
        """One pass: resolve finished requests, read the queue, advance every launch."""
        now = self._clock.now()
        if not force and self._synced_at is not None and now - self._synced_at < self.sync_interval:
            return
        self._synced_at = now
        if not any(lau.phase is not Phase.ENDED for lau in self._launches.values()):
            return
        requests = self._reqs()
        self._enabled().refresh(now)
        self._in_flight = None  # read at most once per pass, and only when a lookup needs it
        for done in requests.resolve().values():
            self._on_request(done)
        for launch in self._launches.values():
            self._advance(launch, now)
        if any(
            lau.phase in (Phase.LOOKUP, Phase.LAUNCHING, Phase.TRACKING)
            for lau in self._launches.values()
        ):
            requests.request_queue()

    # -- the state machine ------------------------------------------------------------------
    def _advance(self, launch: Launch, now: float) -> None:
        snapshot = self._reqs().snapshot
        if launch.phase is Phase.WAITING and now >= launch.retry_at:
            self._lookup(launch, f"retrying after: {launch.reason}")
        elif launch.phase is Phase.LOOKUP and snapshot.seq >= launch.lookup_after:
            self._after_lookup(launch)
        elif launch.phase is Phase.TRACKING and snapshot.seq >= launch.tracked_after:
            records = [
                r
                for r in snapshot.named(launch.name)
                if launch.cloud_job_id is None or field_of(r, "job_id") == launch.cloud_job_id
            ]
            if records:
                self._on_record(launch, records[-1])

    def _after_lookup(self, launch: Launch) -> None:
        snapshot = self._reqs().snapshot
        found = [
            (k, r)
            for name, records in snapshot.by_name.items()
            if (k := option_of(name, launch.job.id)) is not None
            for r in records
        ]
        if found:
            option, record = max(found, key=lambda kr: (kr[0], field_of(kr[1], "job_id") or 0))
            launch.option, launch.cloud_job_id = option, field_of(record, "job_id")
            launch.phase, launch.tracked_after = Phase.TRACKING, snapshot.seq
            launch.reason = (
                f"found earlier launch {launch.name} (managed job {launch.cloud_job_id})"
            )
            if launch.launched_at is None:
                launch.launched_at = field_of(record, "submitted_at") or self._clock.now()
            self._on_record(launch, record)
            if launch.cancel_wanted and launch.phase is Phase.TRACKING:
                self._send_cancel(launch)
        else:
            self._adopt_or_launch(launch)

    def _adopt_or_launch(self, launch: Launch) -> None:
        """Nothing in the queue: adopt a launch request still in flight, else launch."""
        if self._in_flight is None:
            self._in_flight = self._reqs().in_flight_launches()
        if self._in_flight is None:
            return  # the API server could not say: look again next pass
        in_flight = self._in_flight.get(launch.name)
        if in_flight is not None:
            launch.request_id = self._reqs().track(in_flight)
            launch.phase, launch.status = Phase.LAUNCHING, CloudStatus.PROVISIONING
            if launch.launched_at is None:
                launch.launched_at = self._clock.now()
            launch.reason = f"adopted launch request {in_flight} of {launch.name}"
        elif launch.cancel_wanted:
            self._end(launch, CloudStatus.CANCELLED, "cancelled before anything was launched")
        else:
            self._launch_on_enabled(launch)

    def _launch_on_enabled(self, launch: Launch) -> None:
        """Launch the first option from the current one on whose cloud SkyPilot can launch."""
        enabled = self._enabled().known
        if enabled is None:
            return  # not answered yet: next pass
        usable = [
            k
            for k in range(launch.option, len(launch.options))
            if launch.options[k].price.cloud in enabled
        ]
        if not enabled:
            self._refuse(launch, NO_CLOUD)
        elif not usable:
            priced = sorted({o.price.cloud for o in launch.options})
            self._refuse(
                launch,
                f"none of the clouds priced for this job ({', '.join(priced)}) "
                f"is enabled in SkyPilot (enabled: {', '.join(sorted(enabled))}): "
                "run `sky check`",
            )
        else:
            launch.option = usable[0]
            self._send_launch(launch)

    def _on_record(self, launch: Launch, record: object) -> None:
        name = status_name(field_of(record, "status"))
        status = managed_status(name)
        launch.recovery_count = int(field_of(record, "recovery_count") or 0)
        detail = field_of(record, "failure_reason") or ""
        if name in NO_CAPACITY_STATUSES and not launch.cancel_wanted:
            self._fail_over(launch, f"{launch.current.where}: no capacity ({detail or name})")
            return
        if name != "CANCELLING":  # still billed and tearing down: keep the last status
            launch.status = status
        if status in TERMINAL:
            ended = field_of(record, "end_at")
            why = {CloudStatus.SUCCEEDED: "succeeded", CloudStatus.CANCELLED: "cancelled"}.get(
                status, f"{name.lower()}: {detail}".rstrip(": ")
            )
            if name in PROGRAM_FAILED:
                why = program_failure(name, str(detail), time_limit_of(launch.job))
            self._end(launch, status, f"{launch.current.where}: {why}", ended)
        else:
            launch.reason = f"{launch.current.where}: {name.lower()}"
            if launch.recovery_count:
                launch.reason += f" (recovered {launch.recovery_count}× from preemption)"

    def _on_request(self, done: Resolved) -> None:
        for launch in self._launches.values():
            if done.request_id == launch.cancel_request:
                launch.cancel_request = None
                if done.failure is not None and not done.failure.no_managed_jobs:
                    launch.reason = f"cancel failed ({done.failure.reason}); retrying"
                    self._send_cancel(launch)
            elif done.request_id == launch.request_id and launch.phase is Phase.LAUNCHING:
                self._on_launch_result(launch, done)

    def _on_launch_result(self, launch: Launch, done: Resolved) -> None:
        if done.lost:
            self._lookup(launch, "launch request lost by the API server; looking it up")
        elif done.failure is not None:
            self._on_failure(launch, done.failure)
        else:
            job_ids = done.value[0] if isinstance(done.value, tuple) else None
            launch.cloud_job_id = int(job_ids[0]) if job_ids else None
            launch.phase, launch.failures = Phase.TRACKING, 0
            launch.tracked_after = self._reqs().next_seq
            launch.status = CloudStatus.PROVISIONING
            launch.reason = f"{launch.current.where}: launched as {launch.name}"
            if launch.cancel_wanted:
                self._send_cancel(launch)

    def _on_failure(self, launch: Launch, failure: Failure) -> None:
        if failure.no_cloud:
            self._refuse(launch, failure.reason)
        elif failure.kind is FailureKind.NO_CAPACITY:
            self._fail_over(launch, f"{launch.current.where}: {failure.reason}")
        elif failure.kind is FailureKind.TRANSIENT:
            launch.failures += 1
            if self.backoff.exhausted(launch.failures):
                self._end(
                    launch,
                    CloudStatus.FAILED,
                    f"gave up after {launch.failures} transient failures: {failure.reason}",
                )
                return
            launch.phase, launch.status = Phase.WAITING, CloudStatus.PENDING
            launch.retry_at = self._clock.now() + self.backoff.delay(launch.failures)
            launch.reason = f"transient: {failure.reason}"
        else:
            self._end(launch, CloudStatus.FAILED, failure.reason)

    def _fail_over(self, launch: Launch, why: str) -> None:
        """To the next option on a cloud SkyPilot has enabled (never to one it has not)."""
        enabled = self._enabled().known
        left = [
            k
            for k in range(launch.option + 1, len(launch.options))
            if enabled is None or launch.options[k].price.cloud in enabled
        ]
        if not left:
            self._end(launch, CloudStatus.FAILED, f"no capacity on any allowed option; last: {why}")
            return
        launch.option = left[0]
        launch.cloud_job_id, launch.failures = None, 0
        launch.reason = f"{why}; failing over to {launch.current.where}"
        self._send_launch(launch)

    # -- SDK calls (each returns a request id at once) -------------------------------------
    def _send_launch(self, launch: Launch) -> None:
        try:
            task = build_task(self._sky(), launch.job, launch.current, launch.name)
            request_id = self._sky().jobs.launch(task, name=launch.name)
        except StarburstError as exc:
            self._end(launch, CloudStatus.FAILED, str(exc))
            return
        except Exception as exc:
            self._on_failure(launch, classify(exc))
            return
        launch.request_id = self._reqs().track(str(request_id))
        launch.phase, launch.status = Phase.LAUNCHING, CloudStatus.PROVISIONING
        if launch.launched_at is None:
            launch.launched_at = self._clock.now()
        launch.reason = f"{launch.current.where}: launching {launch.name}"

    def _send_cancel(self, launch: Launch) -> None:
        if launch.cancel_request is not None or launch.cloud_job_id is None:
            return
        try:
            request_id = self._sky().jobs.cancel(job_ids=[launch.cloud_job_id])
        except Exception as exc:
            launch.reason = f"cancel failed ({classify(exc).reason}); retrying"
            return
        launch.cancel_request = self._reqs().track(str(request_id))

    # -- helpers -----------------------------------------------------------------------------
    def _lookup(self, launch: Launch, why: str) -> None:
        requests = self._reqs()
        launch.phase, launch.lookup_after, launch.reason = Phase.LOOKUP, requests.next_seq, why
        requests.request_queue()

    def _refuse(self, launch: Launch, why: str) -> None:
        """Nothing runs and nothing is billed: the launch ends where it started."""
        self._end(launch, CloudStatus.REFUSED, why, launch.launched_at)

    def _end(self, launch: Launch, status: CloudStatus, why: str, at: float | None = None) -> None:
        launch.phase, launch.status, launch.reason = Phase.ENDED, status, why
        launch.ended_at = at if at is not None else self._clock.now()

    def _options(self, job: Job) -> list[LaunchOption]:
        table = self._prices or default_price_table()
        return launch_options(job, table, self.default_gpu, self.spot)

    def _sky(self) -> SkyApi:
        if self._api is None:
            self._api = self._connect()
        return self._api

    def _enabled(self) -> EnabledClouds:
        if self._clouds is None:
            self._clouds = EnabledClouds(self._sky(), self.clouds_ttl)
        return self._clouds

    def _reqs(self) -> Requests:
        if self._requests is None:
            self._requests = Requests(self._sky(), NAME_PREFIX)
        return self._requests
