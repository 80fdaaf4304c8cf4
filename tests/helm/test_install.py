"""``helm install`` into the real API server, then the controller under the chart's identity.

The session's real control plane (``tests/support/controlplane.py``: etcd, kube-apiserver with
RBAC and PodSecurity, controller manager, scheduler) has no container runtime, so the test
plays the kubelet's part where containers would run:

1. ``helm install`` (the real binary, admin kubeconfig) into a namespace that enforces
   PodSecurity ``restricted``; Helm creates the hook-scoped ConfigMap and Secret and the
   migration Job, and waits for it;
2. the Job's pod is created by the real Job controller (so it passed PodSecurity admission)
   and scheduled on a fake GPU node; the test runs the commands of the Job's containers
   (``starburst db upgrade``, ``starburst admin bootstrap``) with the settings file and the
   secrets Helm rendered, against a throwaway PostgreSQL, then reports the pod Succeeded;
3. Helm then creates the release's objects; the controller runs out of the cluster with the
   rendered settings and a token of the chart's ServiceAccount (bound only by the chart's
   RBAC), takes the Lease, and schedules a suspended Job end to end: unsuspended, its pod
   run, the Job complete, the store's job SUCCEEDED; then the API (same identity) takes a
   ``starburst submit`` with the bootstrap admin token and the controller creates and runs
   its Job. The audit log shows no request of the ServiceAccount was forbidden;
4. ``helm upgrade`` runs the hook again and keeps the generated admin token.

The Deployments' pods never run (no kubelet runs containers and no Deployment controller
runs), so each pod template is also submitted as a dry-run Pod: the real PodSecurity admission
of the ``restricted`` namespace judges it.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from starburst.adapters.db.store import SqlStore
from starburst.adapters.kubernetes.manifest import job_name
from starburst.core.lifecycle import JobState
from tests.helm.install_support import (
    FULLNAME,
    RELEASE,
    Helm,
    Processes,
    clean_env,
    data_in,
    pods_pass_podsecurity,
    release_env,
    run_container,
    secret_data,
    starburst,
    suspended_job,
    tail,
)
from tests.support.controlplane import RealKube
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def cluster(real_kube: RealKube, real_namespace: str) -> Iterator[Any]:
    with real_kube.kubelet() as kubelet:
        kubelet.add_node("gpu-a", gpus=8)
        yield kubelet
        # pods end at once (no kubelet grace) before the namespace goes, on a loaded machine too
        api = real_kube.api_client()
        try:
            client.CoreV1Api(api).delete_collection_namespaced_pod(
                real_namespace, grace_period_seconds=0
            )
        finally:
            api.close()
        real_kube.delete_namespace(real_namespace, timeout=180)


def run_migration_hook(
    admin: Any, kubelet: Any, namespace: str, tmp: Path, *, expect_ok: bool = True
) -> dict[str, str]:
    """What the hook Job's pod would do, with what Helm rendered, step by step (its init
    containers, then its container); then the pod ends, Succeeded or, if a step failed,
    Failed. Returns the hook Secret's data."""
    job_name = f"{FULLNAME}-hook-migrate"
    assert wait_for(lambda: bool(kubelet.pods_of(namespace, job_name)), timeout=120), (
        "the real Job controller created no pod for the migration hook (PodSecurity?)"
    )
    core, batch = client.CoreV1Api(admin), client.BatchV1Api(admin)
    job = admin.sanitize_for_serialization(batch.read_namespaced_job(job_name, namespace))
    pod = job["spec"]["template"]["spec"]
    data_of = data_in(core, namespace)
    ok = True
    for n, container in enumerate([*pod.get("initContainers", []), *pod["containers"]]):
        done = run_container(pod, container, tmp / f"hook-{n}", data_of)
        shown = " ".join([*container.get("command", ["starburst"]), *container["args"]])
        print(f"hook step {container['name']}: $ {shown}\n{done.stdout}{done.stderr}".rstrip())
        if done.returncode != 0:
            assert not expect_ok, f"{container['name']}: {done.stderr}"
            ok = False
            break
    assert ok or not expect_ok, "every step succeeded"
    assert kubelet.finish_job(namespace, job_name, succeeded=ok) == 1
    return secret_data(core, namespace, f"{FULLNAME}-hook")


def check_installed(admin: Any, namespace: str) -> None:
    core = client.CoreV1Api(admin)
    deployment = client.AppsV1Api(admin).read_namespaced_deployment(
        f"{FULLNAME}-controller", namespace
    )
    assert deployment.spec.replicas == 2
    assert (
        len(client.PolicyV1Api(admin).list_namespaced_pod_disruption_budget(namespace).items) == 2
    )
    assert wait_for(
        lambda: (
            f"{FULLNAME}-hook"
            not in {c.metadata.name for c in core.list_namespaced_config_map(namespace).items}
        )
    )
    pods_pass_podsecurity(admin, namespace)


def schedule_queued_job(
    batch: client.BatchV1Api, kubelet: Any, store: SqlStore, namespace: str, log: Path
) -> None:
    """A suspended Job a user created: started by the controller, run, and recorded."""
    batch.create_namespaced_job(namespace, suspended_job("train", gpus=2))
    assert wait_for(
        lambda: batch.read_namespaced_job("train", namespace).spec.suspend is False, timeout=60
    ), tail(log)
    assert wait_for(
        lambda: any(
            p["status"].get("phase") == "Running" for p in kubelet.pods_of(namespace, "train")
        ),
        timeout=60,
    )
    pod = next(p for p in kubelet.pods_of(namespace, "train") if p["status"].get("phase"))
    print(f"job {namespace}/train: unsuspended by the controller, pod on {pod['spec']['nodeName']}")
    kubelet.finish_job(namespace, "train")
    assert wait_for(
        lambda: store.jobs.get(f"{namespace}/train").state is JobState.SUCCEEDED, timeout=60
    ), tail(log)
    record = store.jobs.get(f"{namespace}/train")
    print(f"store: {record.id} {record.state.value}")


def submit_through_the_api(
    processes: Processes,
    env: dict[str, str],
    token: str,
    admin: Any,
    kubelet: Any,
    store: SqlStore,
    log: Path,
) -> None:
    """The first job as NOTES.txt tells it: ``starburst submit`` to the API with the bootstrap
    admin token; the controller creates its Job (in ``default``: no setting picks another)."""
    port, _ = processes.start("api", env)
    done = starburst(
        [
            "submit",
            "--server",
            f"http://127.0.0.1:{port}",
            "--token",
            token,
            "--gpus",
            "1",
            "--image",
            "python:3.12-slim",
            "--runtime",
            "10m",
            "--name",
            "hello",
            "--",
            "python",
            "-c",
            "print(1)",
        ],
        clean_env(),
    )
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.split()[0]
    name = job_name(job_id)
    try:
        assert wait_for(
            lambda: any(
                p["status"].get("phase") == "Running" for p in kubelet.pods_of("default", name)
            ),
            timeout=60,
        ), tail(log)
        kubelet.finish_job("default", name)
        assert wait_for(lambda: store.jobs.get(job_id).state is JobState.SUCCEEDED, timeout=60), (
            tail(log)
        )
    finally:
        client.BatchV1Api(admin).delete_namespaced_job(
            name, "default", propagation_policy="Background"
        )
        client.CoreV1Api(admin).delete_collection_namespaced_pod(
            "default", label_selector=f"batch.kubernetes.io/job-name={name}", grace_period_seconds=0
        )


def no_forbidden_requests(kube: RealKube, namespace: str) -> None:
    calls = kube.audit_events(user=f"system:serviceaccount:{namespace}:{FULLNAME}")
    assert calls, "nothing made a request as the chart's ServiceAccount"
    forbidden = [
        (e["verb"], e["requestURI"])
        for e in calls
        if e.get("responseStatus", {}).get("code") == 403
    ]
    assert forbidden == []


def upgrade_keeps_the_token(
    install: Helm,
    values: Path,
    core: client.CoreV1Api,
    kubelet: Any,
    namespace: str,
    token: str,
    tmp: Path,
) -> None:
    settings = yaml.safe_load(values.read_text())
    settings["settings"]["budget"] = 0.5
    values.write_text(yaml.safe_dump(settings))
    install.start("upgrade", values)
    again = run_migration_hook(core.api_client, kubelet, namespace, tmp / "upgrade")
    code, out, err = install.finish()
    assert code == 0, out + err
    print(f"\n$ helm upgrade {RELEASE} helm/starburst -n {namespace} (budget: 0.5)\n{out}")
    assert again["admin-token"] == token
    assert secret_data(core, namespace, FULLNAME)["admin-token"] == token
    upgraded = core.read_namespaced_config_map(FULLNAME, namespace).data["settings.yaml"]
    assert yaml.safe_load(upgraded)["budget"] == 0.5


def upgrade_with_a_bad_price_table_fails(
    install: Helm, values: Path, core: client.CoreV1Api, kubelet: Any, namespace: str, tmp: Path
) -> None:
    """A table the schema lets through (an alias listed twice) fails the hook's price check,
    so ``helm upgrade`` fails and the running release keeps its settings and prices."""
    before = core.read_namespaced_config_map(FULLNAME, namespace).data
    bad = yaml.safe_load(values.read_text())
    bad["priceTable"]["gpus"]["A100-40GB"] = {"aws": {"on_demand": 4.0}}
    bad["migration"] = {"backoffLimit": 0}
    bad["settings"]["budget"] = 0.75
    values.write_text(yaml.safe_dump(bad))
    install.start("upgrade", values)
    run_migration_hook(core.api_client, kubelet, namespace, tmp / "bad", expect_ok=False)
    code, out, err = install.finish()
    print(f"\n$ helm upgrade ... (priceTable lists A100 twice) → exit {code}\n{err}".rstrip())
    assert code != 0 and "pre-upgrade hooks failed" in err, out + err
    assert core.read_namespaced_config_map(FULLNAME, namespace).data == before


def test_helm_install_then_the_controller_schedules_a_job_as_the_chart_account(
    helm: Path,
    real_kube: RealKube,
    real_namespace: str,
    cluster: Any,
    postgres_database: str,
    tmp_path: Path,
) -> None:
    namespace, kubelet = real_namespace, cluster
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "database": {"url": postgres_database},
                "cloud": {"provider": "none"},
                "settings": {"policy": "no-wait", "pass_interval_s": 0.5},
                "priceTable": yaml.safe_load(
                    resources.files("starburst.pricing").joinpath("prices.yaml").read_text()
                ),
            }
        )
    )
    admin = real_kube.api_client()
    core, batch = client.CoreV1Api(admin), client.BatchV1Api(admin)
    install, processes = Helm(helm, real_kube, namespace), Processes(tmp_path)
    store = SqlStore.open(postgres_database)
    try:
        install.start("install", values)
        secrets = run_migration_hook(admin, kubelet, namespace, tmp_path / "install")
        code, out, err = install.finish()
        assert code == 0, out + err
        assert "PodSecurity" not in err, err  # no "would violate PodSecurity" warning
        print(f"\n$ helm install {RELEASE} helm/starburst -n {namespace}\n{out}")
        check_installed(admin, namespace)
        holder = store.accounts.authenticate(secrets["admin-token"])
        assert holder is not None and holder.role.value == "admin"

        env = release_env(real_kube, core, namespace, tmp_path)
        _, log = processes.start("controller", env)
        lease = client.CoordinationV1Api(admin).read_namespaced_lease(
            f"starburst-{FULLNAME}", namespace
        )
        assert lease.spec.holder_identity
        print(f"lease starburst-{FULLNAME}: held by {lease.spec.holder_identity}")
        schedule_queued_job(batch, kubelet, store, namespace, log)
        submit_through_the_api(processes, env, secrets["admin-token"], admin, kubelet, store, log)
        no_forbidden_requests(real_kube, namespace)
        upgrade_keeps_the_token(
            install, values, core, kubelet, namespace, secrets["admin-token"], tmp_path
        )
        upgrade_with_a_bad_price_table_fails(install, values, core, kubelet, namespace, tmp_path)
    finally:
        processes.stop()
        store.close()
        install.uninstall()
        admin.close()
