"""The composition root: settings in, a wired controller out. Nothing else builds backends.

- ``cluster = "local"``: ``LocalCluster`` with ``local_gpus`` slots under ``state_dir``;
  its jobs (and the emulated cloud's) each run as a uid of their own from ``local_job_uids``
  when this process is root (``job_users_of``); a controller whose jobs would share its own
  uid refuses to start with auth on, unless ``allow_shared_uid_jobs`` (``check_job_users``);
  ``"kubernetes"``: ``KubernetesCluster`` watching suspended Jobs labelled
  ``starburst.io/queue`` (kubeconfig from ``kubeconfig`` or in-cluster; the teams a Job's
  label may name per namespace from ``kubernetes_namespace_teams``).
- ``cloud = "emulated"``: local processes metered at cloud prices (labelled emulated);
  ``"skypilot"``: managed jobs through SkyPilot; ``"none"``: never burst (jobs wait).
- The runtime estimator: the predictor's model when one is configured, else its fallback
  chain (declared runtime → the user's history → the global median).
- Leadership (``leader_election``): the store's lock, or a Kubernetes Lease
  (``LeaseLock``) whose winners take their fencing tokens from the store; a controller whose
  local jobs would live elsewhere than the last leader's refuses to start while jobs are in
  flight (``locality``).
- Job output for an API without a controller (``job_logs_from``): the same backends, built
  on first use, the Kubernetes one without watching.
- Capabilities: what the built backends can do beyond their ports (``Capabilities.of``),
  resolved here once and handed to the controller and the job-output reader.

- The store (``SqlStore``) and what hangs on its database: the leader lock, the recorded
  locality, the training history the retraining child reads over its own connection
  (``history_reader``). This module is the only one of ``starburst.controller`` that imports
  ``starburst.adapters.db`` (an import contract checks it): the controller itself is handed
  ports, a lock and a locality (``wire_controller``).

A new backend is added here: a branch in ``build_cluster`` or ``build_cloud`` (and its name
in ``Settings``); the capabilities it implements are then found by ``Capabilities.of``.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starburst.adapters.db import migrate
from starburst.adapters.db.engine import in_memory
from starburst.adapters.db.leader import (
    default_holder,
    leader_lock,
    local_state,
    next_term,
    record_local_state,
)
from starburst.adapters.db.store import SqlStore
from starburst.controller.daemon import Controller
from starburst.controller.locality import Locality, locality_of
from starburst.controller.loop.burst_ceiling import TeamCeiling
from starburst.controller.loop.capabilities import Capabilities
from starburst.controller.metrics import ControllerMetrics
from starburst.core.errors import ConfigError, StarburstError
from starburst.core.job import Job
from starburst.core.leadership import LeaderLock
from starburst.core.ports import Clock, Cloud, Cluster, RuntimeEstimator
from starburst.settings import Settings
from starburst.wallclock import WallClock

MIB = 1024 * 1024

if TYPE_CHECKING:
    from starburst.adapters.local.jobusers import JobUsers
    from starburst.controller.job_output import JobLogs
    from starburst.controller.kueue_burst import KueueBurst
    from starburst.pricing import PriceTable

log = logging.getLogger("starburst.controller")


def build_cluster(
    settings: Settings, clock: Clock, *, watch: bool = True, users: JobUsers | None = None
) -> Cluster:
    """The configured cluster; ``watch=False`` builds a Kubernetes one that only answers
    direct calls (job output), without watching the cluster. Local jobs run as ``users``
    (``job_users_of``), else as this process's user."""
    if settings.cluster == "local":
        from starburst.adapters.local import LocalCluster

        return LocalCluster(
            settings.state_dir / "cluster",
            settings.local_gpus,
            gpu_type=settings.local_gpu_type,
            clock=clock,
            users=users,
            output_max_bytes=settings.local_job_output_max_mb * MIB,
        )
    from starburst.adapters.kubernetes.cluster import KubernetesCluster, KubernetesSettings
    from starburst.adapters.kubernetes.conversion import Conventions

    teams = {ns: frozenset(t) for ns, t in settings.kubernetes_namespace_teams.items()}
    kube = KubernetesSettings(conventions=Conventions(namespace_teams=teams))
    cluster = KubernetesCluster(kube_api_client(settings), clock, kube)
    if not watch:
        return cluster
    cluster.start_watching()
    if not cluster.wait_synced(timeout=60):
        raise ConfigError("the Kubernetes API did not answer the initial list within 60 s")
    return cluster


def job_users_of(settings: Settings, *, euid: int | None = None) -> JobUsers | None:
    """The per-job uids of ``local_job_uids`` when this process is root (``jobusers.py``)."""
    from starburst.adapters.local.jobusers import default_lock_dir, resolve_job_users

    return resolve_job_users(
        settings.job_uid_range(), settings.local_work_dir, default_lock_dir(), euid=euid
    )


def check_job_users(settings: Settings, users: JobUsers | None) -> None:
    """Refuse (``ConfigError``) a controller with auth on whose local jobs — on the local
    cluster, or bursts to the emulated cloud, which run beside the controller — would run as
    its own uid: any user's job could read what the controller can (its state directory and
    files; in a pod, its service-account token). ``allow_shared_uid_jobs`` accepts that,
    with a loud warning."""
    local = settings.cluster == "local" or settings.cloud == "emulated"
    if users is not None or not local or not settings.auth:
        return
    why = "the controller does not run as root" if os.geteuid() != 0 else "local_job_uids is empty"
    what = "local jobs" if settings.cluster == "local" else "emulated-cloud bursts"
    if not settings.allow_shared_uid_jobs:
        raise ConfigError(
            f"auth is on but {what} would run as the controller's own uid ({why}): any "
            "user's job could read what the controller can (its state directory and files; "
            "in a pod, its service-account token). Run the controller as root with "
            "local_job_uids (each job its own uid), or set allow_shared_uid_jobs: true to "
            "accept that"
        )
    log.warning(
        "INSECURE: auth is on but %s run as the controller's own uid (%s, "
        "allow_shared_uid_jobs): a job can read what the controller can",
        what,
        why,
    )


def secure_state_dir(settings: Settings) -> None:
    """The state directory 0700 (created if missing), so no job (or other OS user) reads the
    SQLite file, spawn records or job output in it; ``serve.run`` also sets the umask."""
    from starburst.adapters.local.isolation import private_dir

    private_dir(Path(settings.state_dir))


def kube_api_client(settings: Settings) -> Any:
    """An official Kubernetes ``ApiClient`` from ``kubeconfig``, else the in-cluster config."""
    from kubernetes import client, config

    try:
        if settings.kubeconfig:
            return config.new_client_from_config(config_file=settings.kubeconfig)
        config.load_incluster_config()
        return client.ApiClient()
    except (config.ConfigException, OSError) as exc:
        raise ConfigError(f"cannot configure the Kubernetes client: {exc}") from None


def build_leader_lock(settings: Settings, store: SqlStore) -> LeaderLock:
    """The store's lock, or a Kubernetes Lease whose leaders take fencing tokens from the store."""
    if settings.leader_election == "store":
        return leader_lock(store.engine, settings.leader_name)
    from starburst.adapters.kubernetes.lease import LeaseLock

    identity = f"{default_holder()}:{uuid.uuid4().hex[:8]}"  # unique per replica object
    return LeaseLock(
        kube_api_client(settings),
        settings.lease_namespace,
        f"starburst-{settings.leader_name}",
        identity,
        lambda: next_term(store.engine, settings.leader_name, identity),
        settings.lease_duration_s,
        owns_client=True,
    )


def build_cloud(
    settings: Settings,
    clock: Clock,
    prices: PriceTable | None = None,
    users: JobUsers | None = None,
) -> Cloud | None:
    """The cloud the settings name, pricing from ``prices`` (default: the settings' price
    table, else the shipped one); emulated bursts run as ``users``, like local jobs."""
    if settings.cloud == "none":
        return None
    from starburst.pricing import load_price_table

    if prices is None and settings.price_table:
        prices = load_price_table(settings.price_table)
    if settings.cloud == "emulated":
        from starburst.adapters.local import EmulatedCloud

        return EmulatedCloud(
            settings.state_dir / "cloud",
            prices,
            spot=settings.use_spot,
            clock=clock,
            users=users,
            output_max_bytes=settings.local_job_output_max_mb * MIB,
        )
    from starburst.adapters.skypilot import SkyPilotCloud, load_sky

    endpoint, token = settings.skypilot_api_server, settings.skypilot_token()
    return SkyPilotCloud(
        clock, prices, spot=settings.use_spot, connect=lambda: load_sky(endpoint, token)
    )


def job_logs_from(settings: Settings) -> Callable[[], JobLogs]:
    """For an API without a controller: the job-output reader, built from the settings on
    first use (a backend that cannot be reached makes each request a clear 409 instead)."""
    from starburst.controller.job_output import JobLogs, NoLogs

    built: list[JobLogs] = []
    lock = threading.Lock()

    def reader() -> JobLogs:
        with lock:
            if not built:
                try:
                    clock = WallClock()
                    cluster = build_cluster(settings, clock, watch=False)
                    cloud = build_cloud(settings, clock)
                    built.append(JobLogs(Capabilities.of(cluster, cloud).logs, cloud))
                except ConfigError as exc:
                    raise NoLogs(f"cannot reach the backends to read job output: {exc}") from None
            return built[0]

    return reader


def build_estimator(settings: Settings, store: SqlStore) -> RuntimeEstimator:
    from starburst.predictor.estimator import load_estimator

    history = [h.job for h in store.models.history(limit=10_000)]
    loaded = load_estimator(settings.model_path, history)
    log.info(loaded.message)
    return loaded.estimator


def build_locality(settings: Settings, store: SqlStore) -> Locality:
    """Where this controller's local jobs live, checked against the last leader's as
    recorded in the leader terms of the store's database."""
    engine, name = store.engine, settings.leader_name
    return Locality(
        locality_of(settings),
        store.jobs,
        recorded=partial(local_state, engine, name),
        record=partial(record_local_state, engine, name),
    )


def read_history(url: str, limit: int) -> list[Job]:
    """The most recent ``limit`` finished jobs of the database at ``url``, as training jobs
    (run in the retraining child, over its own connection)."""
    from starburst.predictor.store import completed_jobs

    store = SqlStore.open(url)
    try:
        return completed_jobs(store.models, limit)
    finally:
        store.close()


def history_reader(store: SqlStore, limit: int | None = None) -> Callable[[], Sequence[Job]] | None:
    """A reader of ``store``'s history another process can call (a picklable
    ``read_history`` over the database's URL), or None when no other process can open the
    store's database (an in-memory SQLite one): then the controller reads it itself.

    The retraining child reads the history itself because reading 100,000 finished jobs is
    a second of interpreter time, and pickling them to the child holds the lock for a fifth
    of a second in one piece: done in the controller, it competes with the pass."""
    from starburst.predictor.store import DEFAULT_LIMIT

    url = store.engine.url
    if in_memory(url):
        return None
    rendered = url.render_as_string(hide_password=False)
    return partial(read_history, rendered, DEFAULT_LIMIT if limit is None else limit)


def prepare_database(url: str) -> None:
    """Create or upgrade the database at ``url`` to the newest schema (the quick-start's)."""
    migrate.upgrade(url)


def wire_controller(
    settings: Settings,
    store: SqlStore,
    cluster: Cluster,
    cloud: Cloud | None,
    *,
    clock: Clock | None = None,
    estimator: RuntimeEstimator | None = None,
    metrics: ControllerMetrics | None = None,
    lock: LeaderLock | None = None,
    capabilities: Capabilities | None = None,
    locality: Locality | None = None,
) -> Controller:
    """A controller over ``store``'s ports and these backends, with what the store's
    database holds beside them: the leader lock (default: the store's own lock), the
    locality (``build_locality``) and the training history's reader (``history_reader``)."""
    return Controller(
        settings,
        store,
        cluster,
        cloud,
        lock=lock or leader_lock(store.engine, settings.leader_name),
        locality=locality or build_locality(settings, store),
        clock=clock,
        estimator=estimator,
        metrics=metrics,
        capabilities=capabilities,
        history=history_reader(store),
    )


def build_controller(
    settings: Settings, store: SqlStore | None = None, clock: Clock | None = None
) -> Controller:
    """Everything from the settings: the store, the backends, the estimator, the lock."""
    clock = clock or WallClock()
    secure_state_dir(settings)
    store = store or SqlStore.open(
        settings.database_url, clock=clock, leader_name=settings.leader_name
    )
    locality = build_locality(settings, store)
    locality.check_start()  # before the backends adopt anything of another controller's
    users = job_users_of(settings)
    check_job_users(settings, users)
    cluster = build_cluster(settings, clock, users=users)
    cloud = build_cloud(settings, clock, users=users)
    controller = wire_controller(
        settings,
        store,
        cluster,
        cloud,
        clock=clock,
        estimator=build_estimator(settings, store),
        lock=build_leader_lock(settings, store),
        capabilities=Capabilities.of(cluster, cloud),
        locality=locality,
    )
    controller.kueue = build_kueue_burst(settings, store, clock, controller)
    return controller


def build_kueue_burst(
    settings: Settings, store: SqlStore, clock: Clock, controller: Controller
) -> KueueBurst | None:
    """Starburst as Kueue's burst policy (``controller.kueue_burst``) where the cluster
    serves Kueue's API (``kueue.x-k8s.io/v1beta2``); None elsewhere. Only the queues an admin
    opted in are followed (docs/admins/kueue.md)."""
    if settings.cluster != "kubernetes":
        return None
    from starburst.adapters.kubernetes.conversion import Conventions
    from starburst.adapters.kubernetes.kueue import VERSION, KueueWorkloads, served
    from starburst.controller.kueue_burst import KueueBurst

    api = kube_api_client(settings)
    try:
        versions = served(api)
    except StarburstError as exc:
        log.warning("could not tell whether Kueue is installed, not following it: %s", exc)
        return None
    if VERSION not in versions:
        if versions:
            log.warning(
                "Kueue serves %s, not %s: its Workloads are not followed", versions, VERSION
            )
        return None
    teams = {ns: frozenset(t) for ns, t in settings.kubernetes_namespace_teams.items()}
    workloads = KueueWorkloads(api, clock, Conventions(namespace_teams=teams))
    loop = controller.loop
    cloud = controller.cloud
    log.info("Kueue found: the Workloads of queues annotated starburst.io/burst=true can burst")
    return KueueBurst(
        submissions=store.submissions, jobs=store.jobs, lifecycle=store.lifecycle,
        ledger=store.ledger, models=store.models, workloads=workloads,
        policy=lambda: loop.config.policy, follower=lambda: loop.cloud_side,
        estimator=lambda: loop.estimator,
        hold=controller.holds,
        ceiling=TeamCeiling(  # the scheduling pass's price ceilings, on rates of its own
            store.jobs, store.ledger, settings.max_team_cloud_price,
            cloud.quote if cloud else None,
            settings.job_ceilings(settings.price_list()) if cloud else None,
        ),
    )  # fmt: skip
