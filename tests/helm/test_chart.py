"""The chart renders, lints and validates for every set-up in the values matrix.

- ``helm lint --strict`` passes for each case;
- every rendered object is valid against the OpenAPI schema of Kubernetes ``KUBERNETES_VERSION``
  (``kubernetes-validate --strict``: unknown fields are errors); the ServiceMonitor (a CRD the
  validator has no schema for) is checked for the fields Prometheus Operator needs;
- every pod template passes the PodSecurity ``restricted`` profile;
- the objects each case promises are there (PDBs with replicas, Ingress, NetworkPolicies...).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.helm.conftest import CASES, CHART, KUBERNETES_VERSION, Render, by_kind, named, run_helm
from tests.helm.podsecurity import violations

WORKLOADS = {"Deployment", "StatefulSet", "Job", "DaemonSet"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_lint_strict(case: str, helm: Path, tmp_path: Path) -> None:
    done = run_helm(helm, "lint", "--strict", str(CHART), values=CASES[case], tmp=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_object_is_valid_kubernetes(case: str, render: Render) -> None:
    objects = render(CASES[case])
    assert objects
    for obj in objects:
        if obj["kind"] == "ServiceMonitor":
            check_service_monitor(obj)
            continue
        try:
            kubernetes_validate.validate(copy.deepcopy(obj), KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(
                f"{obj['kind']} {obj['metadata']['name']}: {exc.message} at "
                f"{'.'.join(str(p) for p in exc.path)}"
            )


def check_service_monitor(obj: dict[str, Any]) -> None:
    assert obj["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(obj["spec"]) == {"selector", "namespaceSelector", "endpoints"}
    assert [e["port"] for e in obj["spec"]["endpoints"]] == ["http"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_pod_passes_podsecurity_restricted(case: str, render: Render) -> None:
    pods = [o for o in render(CASES[case]) if o["kind"] in WORKLOADS]
    assert pods
    for obj in pods:
        assert violations(obj["spec"]["template"]["spec"]) == [], obj["metadata"]["name"]


def test_the_restricted_checker_catches_a_root_container() -> None:
    spec = {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "securityContext": {"runAsUser": 0, "privileged": True}}],
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
    }
    found = violations(spec)
    assert "c: privileged" in found
    assert "c: runAsUser must not be 0" in found
    assert "c: allowPrivilegeEscalation must be false" in found
    assert "volume h: type not allowed" in found


def test_defaults_run_two_leader_electing_controllers_with_probes(render: Render) -> None:
    objects = render(CASES["defaults"])
    deploy = named(objects, "Deployment", "-controller")
    assert deploy["spec"]["replicas"] == 2
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["controller"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"] and container["resources"]["limits"]
    api = named(objects, "Deployment", "-api")
    assert api["spec"]["template"]["spec"]["containers"][0]["args"] == ["api"]
    assert {p["metadata"]["name"] for p in by_kind(objects, "PodDisruptionBudget")} == {
        "sb-starburst-controller",
        "sb-starburst-api",
    }
    assert not by_kind(objects, "Ingress") and not by_kind(objects, "NetworkPolicy")
    assert not by_kind(objects, "StatefulSet"), "the in-chart PostgreSQL is off by default"


def test_migration_is_a_pre_install_and_pre_upgrade_hook(render: Render) -> None:
    job = named(render(CASES["defaults"]), "Job", "-migrate")
    hooks = job["metadata"]["annotations"]["helm.sh/hook"]
    assert set(hooks.split(",")) == {"pre-install", "pre-upgrade"}
    spec = job["spec"]["template"]["spec"]
    assert [c["args"] for c in spec["initContainers"]] == [["db", "upgrade"]]
    assert spec["containers"][0]["args"] == ["admin", "bootstrap", "--user", "admin"]
    # the hook reads hook-scoped copies: the release's own ConfigMap/Secret do not exist yet
    config = next(v for v in spec["volumes"] if v["name"] == "config")["configMap"]["name"]
    assert config == "sb-starburst-hook"


def test_optional_objects_appear_when_enabled(render: Render) -> None:
    ha = render(CASES["ha"])
    assert len(by_kind(ha, "NetworkPolicy")) == 2 and len(by_kind(ha, "ServiceMonitor")) == 1
    env = named(ha, "Deployment", "-controller")["spec"]["template"]["spec"]["containers"][0]["env"]
    endpoint = next(e for e in env if e["name"] == "STARBURST_SKYPILOT_API_SERVER")
    assert endpoint["valueFrom"]["secretKeyRef"] == {"name": "skypilot-api", "key": "endpoint"}
    ingress = named(render(CASES["ingress"]), "Ingress", "sb-starburst")
    assert ingress["spec"]["rules"][0]["host"] == "sb.example.com"
    assert not by_kind(render(CASES["no-cloud"]), "PodDisruptionBudget"), "one replica: no PDB"


def test_existing_secrets_are_used_and_no_secret_is_created(render: Render) -> None:
    objects = render(CASES["existing-secret"])
    assert not by_kind(objects, "Secret")
    spec = named(objects, "Deployment", "-controller")["spec"]["template"]["spec"]
    env = {e["name"]: e for e in spec["containers"][0]["env"]}
    assert env["STARBURST_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {
        "name": "sb-db",
        "key": "url",
    }
    mounts = {m["mountPath"]: m for m in spec["containers"][0]["volumeMounts"]}
    assert mounts["/home/starburst/.aws/credentials"]["subPath"] == "aws"
    job = named(objects, "Job", "-migrate")["spec"]["template"]["spec"]
    token = next(e for e in job["containers"][0]["env"] if e["name"] == "STARBURST_BOOTSTRAP_TOKEN")
    assert token["valueFrom"]["secretKeyRef"] == {"name": "sb-admin", "key": "token"}


def test_a_price_table_is_checked_by_the_hook_before_the_migration(render: Render) -> None:
    table = {"taken": "2026-01-05", "gpus": {"H100": {"aws": {"on_demand": 6.5}}}}
    objects = render({**CASES["defaults"], "priceTable": table})
    job = named(objects, "Job", "-migrate")["spec"]["template"]["spec"]
    check, upgrade = job["initContainers"]
    assert check["command"] == ["python", "-m", "starburst.pricing"]
    assert check["args"] == ["check", "/etc/starburst/prices.yaml"]
    assert upgrade["args"] == ["db", "upgrade"]
    assert job["containers"][0]["args"][:2] == ["admin", "bootstrap"]


#: The postgres user of the official images: alpine's adduser -u 70, Debian's 999.
POSTGRES_UID = {"alpine": 70, "debian": 999}


@pytest.mark.parametrize(
    ("image", "uid"), [(None, None), ("postgres:17", 999), ("postgres:16-alpine3.21", 70)]
)
def test_evaluation_postgresql_runs_as_its_image_user(
    image: str | None, uid: int | None, render: Render
) -> None:
    postgresql: dict[str, Any] = {"enabled": True}
    if image:
        postgresql.update(image=image, uid=uid)
    sts = named(render({"postgresql": postgresql}), "StatefulSet", "-postgresql")
    pod = sts["spec"]["template"]["spec"]
    image = pod["containers"][0]["image"]
    expected = POSTGRES_UID["alpine" if "alpine" in image else "debian"]
    context = pod["securityContext"]
    assert (context["runAsUser"], context["runAsGroup"], context["fsGroup"]) == (expected,) * 3
    assert context["runAsNonRoot"] is True


def test_evaluation_postgresql_migrates_from_the_pods(render: Render) -> None:
    objects = render(CASES["evaluation"])
    assert named(objects, "StatefulSet", "-postgresql")
    assert not by_kind(objects, "Job"), "no database exists before install: no pre-install hook"
    spec = named(objects, "Deployment", "-controller")["spec"]["template"]["spec"]
    assert [c["args"] for c in spec["initContainers"]] == [
        ["db", "upgrade"],
        ["admin", "bootstrap", "--user", "admin"],
    ]
    token = next(
        e for e in spec["initContainers"][1]["env"] if e["name"] == "STARBURST_BOOTSTRAP_TOKEN"
    )
    assert token["valueFrom"]["secretKeyRef"] == {"name": "sb-starburst", "key": "admin-token"}
    api = named(objects, "Deployment", "-api")["spec"]["template"]["spec"]
    assert [c["args"] for c in api["initContainers"]] == [["db", "upgrade"]]
