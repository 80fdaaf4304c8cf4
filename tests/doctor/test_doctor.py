"""``starburst doctor``: each line OK or a problem with its fix; exit 1 on any problem.

Database, prices, runtime model and leader lines on SQLite; Kubernetes lines on the API
stand-in (SelfSubjectAccessReview answered from its ``denied`` set). The SkyPilot lines run
against a real API server in ``tests/skypilot_real/test_doctor_skypilot.py``.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from starburst.adapters.db import migrate
from starburst.adapters.db.leader import leader_lock
from starburst.adapters.db.store import SqlStore
from starburst.cli.main import main
from starburst.doctor import run_checks
from starburst.doctor.cluster import rbac_rules
from starburst.settings import load_settings
from tests.kubeapi import KubeApiServer
from tests.support.databases import upgrade


def doctor(capsys: pytest.CaptureFixture[str], *env: tuple[str, str]) -> tuple[int, str]:
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env:
            patch.setenv(key, value)
        with pytest.raises(SystemExit) as done:
            main(["doctor"])
    return int(done.value.code or 0), capsys.readouterr().out


def lines(out: str) -> dict[str, str]:
    """check name -> its line (and fix), from doctor's output."""
    found: dict[str, str] = {}
    last = ""
    for line in out.splitlines():
        if line.startswith("        fix:"):
            found[last] += "\n" + line.strip()
        elif line.startswith(("OK", "WARNING", "PROBLEM")):
            last = line[8:].split(":", 1)[0]
            found[last] = line
    return found


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(url)
    return url


def test_a_healthy_single_machine_set_up(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = SqlStore.open(db)
    lock = leader_lock(store.engine, "controller", holder="replica-a")
    assert lock.try_acquire() is not None
    table = {
        "taken": datetime.now().date().isoformat(),
        "gpus": {"A100": {"aws": {"on_demand": 4.1, "spot": 1.6}}},
    }
    (tmp_path / "prices.yaml").write_text(yaml.safe_dump(table))
    try:
        code, out = doctor(
            capsys,
            ("STARBURST_DATABASE_URL", db),
            ("STARBURST_STATE_DIR", str(tmp_path)),
            ("STARBURST_PRICE_TABLE", str(tmp_path / "prices.yaml")),
        )
    finally:
        lock.release()
        store.close()
    found = lines(out)
    assert code == 0, out
    assert found["database"].startswith("OK") and "reachable" in found["database"]
    assert found["database schema"].startswith("OK") and migrate.head() in out
    assert found["prices"].startswith("OK") and "(0 days ago)" in found["prices"]
    assert found["runtime model"].startswith("OK") and "none configured" in out
    assert found["leader"].startswith("OK") and "replica-a (term 1" in found["leader"]
    assert "kubernetes" not in found and "skypilot" not in found  # not configured


def test_unreachable_database_and_old_schema_say_how_to_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = f"sqlite:///{tmp_path / 'old.db'}"
    migrate.upgrade(old, "base")
    code, out = doctor(capsys, ("STARBURST_DATABASE_URL", old))
    found = lines(out)
    assert code == 1
    assert found["database schema"].startswith("PROBLEM")
    assert "fix: run starburst db upgrade" in found["database schema"]
    assert "leader" not in found  # the database lines say what to do, alone
    gone = "postgresql://nobody@127.0.0.1:1/none"
    code, out = doctor(capsys, ("STARBURST_DATABASE_URL", gone))
    assert code == 1 and lines(out)["database"].startswith("PROBLEM")
    assert "Traceback" not in out


def test_a_leader_whose_lock_is_free_now_is_a_problem(db: str) -> None:
    store = SqlStore.open(db)
    lock = leader_lock(store.engine, "controller", holder="replica-b")
    lock.try_acquire()
    lock.release()  # it led once, then died
    store.close()
    (check,) = [c for c in run_checks(load_settings(database_url=db)) if c.name == "leader"]
    assert not check.ok and "replica-b" in check.detail and "nobody holds" in check.detail


def test_old_prices_and_an_old_or_broken_model(db: str, tmp_path: Path) -> None:
    table = {"taken": "2020-01-01", "gpus": {"A100": {"aws": {"on_demand": 4.1}}}}
    (tmp_path / "prices.yaml").write_text(yaml.safe_dump(table))
    broken = tmp_path / "model.joblib"
    broken.write_bytes(b"not a model")
    settings = load_settings(
        database_url=db, price_table=tmp_path / "prices.yaml", model_path=broken
    )
    checks = {c.name: c for c in run_checks(settings)}
    assert not checks["prices"].ok and "older than 365 days" in checks["prices"].detail
    assert not checks["runtime model"].ok and "predictor train" in (
        checks["runtime model"].fix or ""
    )


def test_a_trained_model_shows_its_version_and_age(db: str, tmp_path: Path) -> None:
    from starburst.predictor.artifact import load_artifact

    path = tmp_path / "model.joblib"
    _train(path)
    artifact = load_artifact(path)
    trained = datetime.fromisoformat(artifact.trained_at.replace("Z", "+00:00"))
    later = (trained + timedelta(days=40)).timestamp()
    checks = {
        c.name: c for c in run_checks(load_settings(database_url=db, model_path=path), now=later)
    }
    model = checks["runtime model"]
    assert artifact.version in model.detail and "40 days old" in model.detail and not model.ok
    fresh = {
        c.name: c
        for c in run_checks(
            load_settings(database_url=db, model_path=path), now=trained.timestamp() + 3600
        )
    }
    assert fresh["runtime model"].ok


def _train(path: Path) -> None:
    from starburst.cli.main import main as cli

    with pytest.raises(SystemExit) as done:
        cli(["predictor", "train", "--synthetic", "300", "--threads", "1", "--out", str(path)])
    assert not done.value.code, "training failed"


def test_kubernetes_lines_on_the_api_stand_in(db: str, tmp_path: Path, kube: KubeApiServer) -> None:
    config = kube.write_kubeconfig(tmp_path / "kubeconfig")
    settings = load_settings(database_url=db, cluster="kubernetes", kubeconfig=str(config))
    kube.add_node("cpu-1", gpus=0)
    checks = {c.name: c for c in run_checks(settings)}
    assert checks["kubernetes"].ok and kube.url in checks["kubernetes"].detail
    assert checks["kubernetes rbac"].ok
    assert f"all {len(rbac_rules())} verbs" in checks["kubernetes rbac"].detail
    gpu = checks["kubernetes gpu nodes"]
    assert not gpu.ok and "none with allocatable nvidia.com/gpu" in gpu.detail
    assert "device plugin" in (gpu.fix or "")
    assert checks["kueue"].ok and "not installed" in checks["kueue"].detail
    # every rule was asked about, by SelfSubjectAccessReview
    kube.add_node("gpu-1", gpus=8)
    kube.denied |= {("", "pods/log", "get"), ("batch", "jobs", "patch")}
    checks = {c.name: c for c in run_checks(settings)}
    rbac = checks["kubernetes rbac"]
    assert not rbac.ok and rbac.detail == "not granted: patch jobs.batch, get pods/log"
    assert "rbac.yaml" in (rbac.fix or "")
    assert checks["kubernetes gpu nodes"].ok and "8 GPUs" in checks["kubernetes gpu nodes"].detail


def test_unreachable_kubernetes_is_one_problem_line(db: str, tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "x",
                "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "x", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
            }
        )
    )
    settings = load_settings(database_url=db, cluster="kubernetes", kubeconfig=str(config))
    (kube_line,) = [c for c in run_checks(settings) if c.name.startswith("kubernetes")]
    assert not kube_line.ok and kube_line.fix and "kubeconfig" in kube_line.fix


def test_rbac_rules_are_read_from_the_shipped_file() -> None:
    rules = rbac_rules()
    assert ("batch", "jobs", "create") in rules and ("", "pods/log", "get") in rules
    assert ("coordination.k8s.io", "leases", "update") in rules
