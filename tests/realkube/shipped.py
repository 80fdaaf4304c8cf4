"""What Starburst ships for a cluster, read as a cluster admin applies it."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml


def shipped_cluster_role() -> dict[str, Any]:
    """The ClusterRole of ``rbac.yaml``, the adapter's RBAC."""
    text = resources.files("starburst.adapters.kubernetes").joinpath("rbac.yaml").read_text()
    return next(d for d in yaml.safe_load_all(text) if d and d.get("kind") == "ClusterRole")
