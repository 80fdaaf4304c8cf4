"""``helm install`` with its pods running on the real node, as a cluster admin would see it.

The product image (``tests.support.image``, named as the chart's default image) is imported
into the node's containerd; the chart is installed with ``imagePullPolicy: Never`` and a
PostgreSQL the test starts on the node's address (pods reach the host through their bridge's
gateway). Then, with nothing played by the test:

1. the migration hook Job's pod runs ``starburst db upgrade`` and the bootstrap on the node and
   succeeds (Helm deletes the Job then; its Events and the database show it ran);
2. the controller and API pods pass their probes (``helm install --wait``);
3. the controller takes the Lease in the cluster, with the ServiceAccount token the kubelet
   mounts, under the chart's RBAC (no request of that account is forbidden);
4. a suspended GPU Job created with the queue label is admitted and pinned to the node by the
   controller pod; the kubelet runs the user's command with the GPUs the device plugin chose,
   the Job completes, ``kubectl logs`` and ``starburst logs`` (to the API pod's IP) show it;
5. a Job that does not fit (the node's GPUs held by another) waits its budget (the ``constant``
   policy: ``BUDGET_S`` seconds) and bursts to the chart's ``emulated`` cloud (a process in the
   controller pod, metered at cloud prices): ``starburst status`` shows it ran in the cloud
   after waiting its budget, the Job stays suspended with no pod, annotated ``burst``;
6. ``helm upgrade`` rolls the pods (new ReplicaSets, new pods, the new API pod serves the jobs
   run before); ``helm uninstall`` removes them (no pod, Job, ConfigMap or Secret of the
   release left, the migration hook's included).

Terms: *release*, ``sb`` in a namespace of its own that enforces PodSecurity ``restricted``.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from starburst.adapters.db.store import SqlStore
from starburst.core.lifecycle import JobState
from tests.helm.conftest import CHART
from tests.helm.install_support import FULLNAME, RELEASE, clean_env, starburst
from tests.realkube.test_controller_real import pinned_nodes
from tests.realnode.pods import busybox_job
from tests.support import helmtool
from tests.support.image import product_image_archive
from tests.support.image_tools import ImageBuildError, NoImageTools
from tests.support.postgres import ThrowawayPostgres, find_bindir, fresh_database
from tests.support.realnode import NODE, RealNode
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.realnode, pytest.mark.postgres, pytest.mark.slow]

PASSWORD = "node-s3cret"
BUDGET_S = 12.0  # every job's wait budget (the ``constant`` policy's coefficient, seconds)


@dataclass
class Release:
    node: RealNode
    namespace: str
    values: Path
    database: str
    helm: Path
    kubectl: Path

    def run(self, tool: Path, *args: str, timeout: float = 420, explain: bool = True) -> str:
        done = subprocess.run(
            [str(tool), *args, "--kubeconfig", str(self.node.kube.admin_kubeconfig)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            why = self.diagnosis() if explain else ""
            pytest.fail(f"{tool.name} {' '.join(args)}:\n{done.stdout}{done.stderr}{why}")
        return done.stdout

    def diagnosis(self) -> str:
        """``kubectl get pods`` and the last lines of every container that is not ready."""
        shown = self.kubectl_run("get", "pods", "-o", "wide", explain=False)
        core = client.CoreV1Api(self.node.kube.api_client())
        try:
            for pod in core.list_namespaced_pod(self.namespace).items:
                for status in pod.status.container_statuses or ():
                    if not status.ready and pod.status.phase != "Succeeded":
                        name = pod.metadata.name
                        last = _last_lines(core, self.namespace, name, status.name)
                        shown += f"\n$ kubectl logs {name} -c {status.name} --tail 15\n{last}"
        finally:
            core.api_client.close()
        return f"\n$ kubectl get pods -o wide\n{shown}"

    def helm_run(self, verb: str) -> str:
        return self.run(
            self.helm,
            verb,
            RELEASE,
            str(CHART),
            "-n",
            self.namespace,
            "-f",
            str(self.values),
            "--wait",
            "--timeout",
            "5m",
        )

    def kubectl_run(self, *args: str, explain: bool = True) -> str:
        return self.run(self.kubectl, "-n", self.namespace, *args, explain=explain)


def _last_lines(core: client.CoreV1Api, namespace: str, pod: str, container: str) -> str:
    """What a container printed last, or its previous run if it is waiting to restart."""
    for previous in (False, True):
        try:
            return str(
                core.read_namespaced_pod_log(
                    pod, namespace, container=container, tail_lines=15, previous=previous
                )
            )
        except client.ApiException as err:
            reason = str(err.body)
    return reason


def _image_on_the_node(node: RealNode) -> None:
    try:
        archive = product_image_archive()
    except (NoImageTools, ImageBuildError) as err:
        pytest.fail(f"the product image cannot be built here, so no pod can run: {err}")
    node.ctr("images", "import", str(archive))


def _values(database: str) -> dict[str, Any]:
    on_the_node = {"nodeSelector": {"kubernetes.io/hostname": NODE}}
    return {
        "image": {"pullPolicy": "Never"},  # the chart's default name, imported above
        "database": {"url": database},
        "controller": {"replicas": 1, **on_the_node},
        "api": {"replicas": 1, **on_the_node},
        "cloud": {"provider": "emulated"},
        "settings": {
            "policy": "constant",
            "coefficient": BUDGET_S,
            "pass_interval_s": 0.5,
            # bursts run as processes in the controller pod, as its own uid (a trial's setup:
            # deploy/values-trial.yaml)
            "allow_shared_uid_jobs": True,
        },
        "priceTable": yaml.safe_load(
            resources.files("starburst.pricing").joinpath("prices.yaml").read_text()
        ),
    }


@pytest.fixture
def release(real_node: RealNode, tmp_path: Path) -> Iterator[Release]:
    """The inputs of a release on the real node (image imported, database up); uninstalled
    and its namespace deleted afterwards."""
    helm, kubectl = helmtool.require("helm"), helmtool.require("kubectl")
    _image_on_the_node(real_node)
    bindir = find_bindir()
    if bindir is None:
        pytest.fail("no PostgreSQL binaries: the release needs a database its pods can reach")
    server = ThrowawayPostgres(bindir, password=PASSWORD, host=real_node.kube.host).start()
    namespace = real_node.kube.create_namespace("helm")
    try:
        database = fresh_database(server.url)
        values = tmp_path / "values.yaml"
        values.write_text(yaml.safe_dump(_values(database)))
        made = Release(real_node, namespace, values, database, helm, kubectl)
        yield made
        kubeconfig = str(real_node.kube.admin_kubeconfig)
        subprocess.run(
            [str(helm), "uninstall", RELEASE, "-n", namespace, "--kubeconfig", kubeconfig],
            capture_output=True,
            timeout=180,
            check=False,
        )
    finally:
        real_node.kube.delete_namespace(namespace, timeout=180)
        server.stop()


def _pods(core: client.CoreV1Api, namespace: str, component: str) -> list[Any]:
    selector = f"app.kubernetes.io/component={component}"
    return list(core.list_namespaced_pod(namespace, label_selector=selector).items)


def _events(core: client.CoreV1Api, namespace: str, name: str) -> set[str]:
    return {
        e.reason
        for e in core.list_namespaced_event(namespace).items
        if e.involved_object.name == name or e.involved_object.name.startswith(f"{name}-")
    }


def _holder(core: client.CoreV1Api, namespace: str) -> str:
    """Who holds the release's Lease (``host:pid``; in a pod, the host is the pod's name)."""
    leases = client.CoordinationV1Api(core.api_client)
    lease = leases.read_namespaced_lease(f"starburst-{FULLNAME}", namespace)
    return str(lease.spec.holder_identity or "")


def _admin_token(core: client.CoreV1Api, namespace: str) -> str:
    data = core.read_namespaced_secret(FULLNAME, namespace).data
    return base64.b64decode(data["admin-token"]).decode()


def _no_forbidden(node: RealNode, namespace: str) -> None:
    calls = node.kube.audit_events(user=f"system:serviceaccount:{namespace}:{FULLNAME}")
    assert calls, "nothing made a request as the chart's ServiceAccount"
    forbidden = [
        (e["verb"], e["requestURI"])
        for e in calls
        if e.get("responseStatus", {}).get("code") == 403
    ]
    assert forbidden == []


def test_helm_install_runs_the_release_on_the_real_node(release: Release) -> None:
    node, ns = release.node, release.namespace
    admin = node.kube.api_client()
    core, batch = client.CoreV1Api(admin), client.BatchV1Api(admin)
    try:
        out = release.helm_run("install")
        print(f"\n$ helm install {RELEASE} helm/starburst -n {ns} --wait\n{out}")
        shown = release.kubectl_run("get", "pods", "-o", "wide")
        print(f"$ kubectl get pods -n {ns} -o wide\n{shown}")

        # 1. the hook Job's pod ran the migrations on the node, and Helm deleted the Job
        hook = f"{FULLNAME}-hook-migrate"
        assert {"SuccessfulCreate", "Completed"} <= _events(core, ns, hook), _events(core, ns, hook)
        store = SqlStore.open(release.database)
        try:
            holder = store.accounts.authenticate(_admin_token(core, ns))
            assert holder is not None and holder.role.value == "admin"
        finally:
            store.close()

        # 2. the controller and API pods run on the node and are Ready (their probes pass)
        running = {c: _pods(core, ns, c) for c in ("controller", "api")}
        for component, found in running.items():
            assert len(found) == 1, (component, shown)
            pod = found[0]
            assert pod.spec.node_name == NODE
            assert all(s.ready for s in pod.status.container_statuses), (component, shown)

        # 3. the controller pod holds the Lease (in-cluster config, mounted token, chart RBAC)
        controller = running["controller"][0].metadata.name
        assert wait_for(lambda: _holder(core, ns).startswith(f"{controller}:"), timeout=60)
        print(f"lease starburst-{FULLNAME}: held by {_holder(core, ns)}")

        # 4. a suspended GPU Job with the queue label: admitted, pinned, run, completed
        script = 'echo "training on $NVIDIA_VISIBLE_DEVICES"'
        batch.create_namespaced_job(ns, busybox_job("train", script, gpus=2))

        def complete() -> bool:
            status = batch.read_namespaced_job("train", ns).status
            return bool(status.succeeded)

        assert wait_for(complete, timeout=180), release.kubectl_run(
            "logs", f"deploy/{FULLNAME}-controller", "--tail", "40"
        )
        job = batch.read_namespaced_job("train", ns)
        assert pinned_nodes(job) == {NODE}
        logs = release.kubectl_run("logs", "job/train")
        print(f"$ kubectl logs job/train -n {ns}\n{logs}")
        assert logs.startswith("training on gpu-"), logs
        assert len(logs.split()[-1].split(",")) == 2, logs

        store = SqlStore.open(release.database)
        try:
            assert wait_for(
                lambda: store.jobs.get(f"{ns}/train").state is JobState.SUCCEEDED, timeout=60
            )
        finally:
            store.close()
        api_ip = running["api"][0].status.pod_ip
        server = f"http://{api_ip}:8080"
        token = _admin_token(core, ns)
        shown_by_api = starburst(
            ["logs", f"{ns}/train", "--server", server, "--token", token], clean_env()
        )
        print(f"$ starburst logs {ns}/train --server http://{api_ip}:8080\n{shown_by_api.stdout}")
        assert shown_by_api.returncode == 0, shown_by_api.stderr
        assert logs.strip() in shown_by_api.stdout
        burst_after_waiting_its_budget(release, core, batch, server, token)
        _no_forbidden(node, ns)
        before = {c: p[0].metadata.name for c, p in running.items()}
        upgrade_rolls_the_pods(release, core, before, token)
        uninstall_removes_them(release, core, batch)
    finally:
        admin.close()


def _starburst_json(server: str, token: str, command: str, job_id: str) -> dict[str, Any]:
    """``starburst COMMAND JOB --json`` through the API pod."""
    done = starburst([command, job_id, "--json", "--server", server, "--token", token], clean_env())
    assert done.returncode == 0, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown


def _status(server: str, token: str, job_id: str) -> dict[str, Any]:
    return _starburst_json(server, token, "status", job_id)


def burst_after_waiting_its_budget(
    release: Release, core: client.CoreV1Api, batch: client.BatchV1Api, server: str, token: str
) -> None:
    """``hold`` takes the node's 4 GPUs; ``away`` (2 GPUs) fits the node but not now: it waits
    its budget, then bursts to the emulated cloud, which runs its command in the controller
    pod. The Job stays suspended (Kubernetes never runs it), annotated with where it went."""
    ns = release.namespace
    batch.create_namespaced_job(ns, busybox_job("hold", "sleep 600", gpus=4))
    assert wait_for(lambda: bool(batch.read_namespaced_job("hold", ns).status.active), 120)
    batch.create_namespaced_job(ns, busybox_job("away", 'echo "away ran on $(hostname)"', gpus=2))
    assert wait_for(
        lambda: _status(server, token, f"{ns}/away")["state"] == JobState.SUCCEEDED.value,
        timeout=120,
    ), release.kubectl_run("logs", f"deploy/{FULLNAME}-controller", "--tail", "40")
    shown = starburst(["status", f"{ns}/away", "--server", server, "--token", token], clean_env())
    print(f"$ starburst status {ns}/away --server {server}\n{shown.stdout}")
    status = _status(server, token, f"{ns}/away")
    assert status["ran_on"] == "cloud", status
    assert status["wait_budget_s"] == BUDGET_S, status
    assert status["placement"] == [], status
    (run,) = status["cloud"]
    assert run["provider"].startswith("emulated") and run["status"] == "succeeded", run
    explained = _starburst_json(server, token, "explain", f"{ns}/away")
    moves = {e["to_state"]: e for e in explained["events"]}
    print("$ starburst explain " + f"{ns}/away\n" + "\n".join(
        f"  {e['at']}  {e['from_state']} -> {e['to_state']}: {e['reason']}"
        for e in explained["events"]
    ))  # fmt: skip
    # its budget counts from its submission (the Job's creation): it waited all of it
    waited = datetime.fromisoformat(moves["bursting"]["at"]) - datetime.fromisoformat(
        moves["submitted"]["at"]
    )
    assert waited.total_seconds() >= BUDGET_S, explained
    assert moves["bursting"]["reason"].startswith("waited 12s of a 12s budget: burst to emulated")
    assert moves["succeeded"]["reason"] == "finished in the cloud", explained
    job = batch.read_namespaced_job("away", ns)
    notes = job.metadata.annotations
    print(f"$ kubectl get job away -n {ns} -o yaml | grep starburst.io\n{_notes(notes)}")
    assert notes["starburst.io/state"] == "burst", notes
    assert notes["starburst.io/burst-to"].startswith("emulated"), notes
    assert job.spec.suspend is True and not job.status.active and not job.status.succeeded
    assert core.list_namespaced_pod(ns, label_selector="job-name=away").items == []
    assert "Burst" in _events(core, ns, "away"), _events(core, ns, "away")
    assert batch.read_namespaced_job("hold", ns).status.active  # it still has the GPUs
    batch.delete_namespaced_job("hold", ns, propagation_policy="Background")


def _notes(annotations: dict[str, str]) -> str:
    return "\n".join(f"    {k}: {v}" for k, v in sorted(annotations.items()) if "starburst" in k)


def _replica_sets(release: Release) -> set[str]:
    apps = client.AppsV1Api(release.node.kube.api_client())
    try:
        found = apps.list_namespaced_replica_set(
            release.namespace, label_selector=f"app.kubernetes.io/instance={RELEASE}"
        ).items
        return {rs.metadata.name for rs in found if rs.spec.replicas}
    finally:
        apps.api_client.close()


def upgrade_rolls_the_pods(
    release: Release, core: client.CoreV1Api, before: dict[str, str], token: str
) -> None:
    """A new setting changes the pods' config checksum: both Deployments roll to new
    ReplicaSets, the new controller pod takes the Lease, and the new API pod serves the jobs
    of before (they are in the database, not in a pod)."""
    ns = release.namespace
    sets_before = _replica_sets(release)
    values = yaml.safe_load(release.values.read_text())
    values["settings"]["coefficient"] = 2 * BUDGET_S
    release.values.write_text(yaml.safe_dump(values))
    release.helm_run("upgrade")

    def rolled() -> dict[str, str]:
        return {
            c: pod.metadata.name
            for c in before
            for pod in _pods(core, ns, c)
            if pod.metadata.deletion_timestamp is None
        }

    assert wait_for(lambda: set(rolled().values()).isdisjoint(before.values()), timeout=120)
    assert wait_for(lambda: len(rolled()) == 2, timeout=60), rolled()
    shown = release.kubectl_run("get", "pods")
    print(f"$ helm upgrade {RELEASE} helm/starburst -n {ns} --wait (coefficient: 24)\n{shown}")
    sets_after = _replica_sets(release)
    assert len(sets_after) == 2 and sets_after.isdisjoint(sets_before), (sets_before, sets_after)
    controller = rolled()["controller"]
    assert wait_for(lambda: _holder(core, ns).startswith(f"{controller}:"), timeout=90)
    (api,) = (p for p in _pods(core, ns, "api") if p.metadata.name == rolled()["api"])
    server = f"http://{api.status.pod_ip}:8080"
    for name in ("train", "away"):
        assert _status(server, token, f"{ns}/{name}")["state"] == JobState.SUCCEEDED.value
    assert not _hook_jobs(release)  # the upgrade's migration hook ran and was deleted


def _hook_jobs(release: Release) -> list[str]:
    batch = client.BatchV1Api(release.node.kube.api_client())
    try:
        jobs = batch.list_namespaced_job(release.namespace).items
        return [j.metadata.name for j in jobs if "hook" in j.metadata.name]
    finally:
        batch.api_client.close()


def uninstall_removes_them(
    release: Release, core: client.CoreV1Api, batch: client.BatchV1Api
) -> None:
    ns = release.namespace
    release.run(release.helm, "uninstall", RELEASE, "-n", ns, "--wait")
    selector = f"app.kubernetes.io/instance={RELEASE}"
    assert wait_for(
        lambda: not core.list_namespaced_pod(ns, label_selector=selector).items,
        timeout=120,
    ), release.kubectl_run("get", "pods")
    assert batch.list_namespaced_job(ns, label_selector=selector).items == []
    assert core.list_namespaced_config_map(ns, label_selector=selector).items == []
    assert core.list_namespaced_secret(ns, label_selector=selector).items == []
    assert _hook_jobs(release) == []
    left = release.kubectl_run("get", "pods,jobs")
    print(f"$ helm uninstall {RELEASE} -n {ns} --wait\n$ kubectl get pods,jobs -n {ns}\n{left}")
