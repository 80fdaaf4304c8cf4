"""The doctor's leader line under ``leader_election: lease``, on the API stand-in (the same
scenario runs on the real control plane in ``test_doctor_real_kube.py``)."""

from __future__ import annotations

from pathlib import Path

from tests.doctor import lease_scenario
from tests.kubeapi import KubeApiServer
from tests.support.databases import upgrade


def test_the_leader_line_reads_the_lease_under_lease_election(
    tmp_path: Path, kube: KubeApiServer
) -> None:
    db = f"sqlite:///{tmp_path / 'sb.db'}"
    upgrade(db)
    config = kube.write_kubeconfig(tmp_path / "kubeconfig")
    lease_scenario.run(lease_scenario.lease_settings(db, config, "default"))
