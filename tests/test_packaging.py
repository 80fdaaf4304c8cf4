"""What the wheel ships: the product's packages, and no test harness.

The packages are found the way the build finds them: setuptools' discovery with the
``[tool.setuptools.packages.find]`` table of ``pyproject.toml`` (``namespaces`` defaults to
true there, so a folder without ``__init__.py`` ships too). Test harnesses (the Kubernetes API
stand-in, pytest fixtures, builders) live under ``tests/`` and run from a checkout.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from setuptools import find_namespace_packages, find_packages

ROOT = Path(__file__).resolve().parents[1]
#: package names that say "test support", wherever they sit in a dotted name
HARNESS_NAMES = {"testing", "tests", "kubeapi", "fixtures"}
#: modules only a test run needs; nothing shipped may import them
TEST_ONLY_IMPORTS = {"pytest", "hypothesis", "_pytest"}


def shipped_packages() -> list[str]:
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"][
        "find"
    ]
    discover = find_namespace_packages if find.get("namespaces", True) else find_packages
    packages: list[str] = []
    for where in find.get("where", ["."]):
        packages += discover(
            where=str(ROOT / where),
            include=find.get("include", ["*"]),
            exclude=find.get("exclude", []),
        )
    return sorted(packages)


def shipped_modules() -> dict[str, Path]:
    modules = {}
    for package in shipped_packages():
        for path in sorted((ROOT / package.replace(".", "/")).glob("*.py")):
            modules[f"{package}.{path.stem}"] = path
    return modules


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_wheel_ships_the_product_packages() -> None:
    packages = shipped_packages()
    assert {"starburst", "starburst.core", "starburst.adapters.kubernetes"} <= set(packages)
    assert all(p == "starburst" or p.startswith("starburst.") for p in packages), packages


def test_no_test_harness_package_ships() -> None:
    harness = [p for p in shipped_packages() if HARNESS_NAMES & set(p.split("."))]
    assert harness == [], f"test support in the wheel (move it under tests/): {harness}"


def test_no_shipped_module_imports_a_test_framework() -> None:
    offenders = {
        name: sorted(imported_roots(path) & TEST_ONLY_IMPORTS)
        for name, path in shipped_modules().items()
        if imported_roots(path) & TEST_ONLY_IMPORTS
    }
    assert offenders == {}, f"shipped modules importing test frameworks: {offenders}"


def test_product_classes_carry_no_methods_only_tests_call() -> None:
    """Readers served only by tests live in test support (``tests/kube/adapter_support.py``:
    ``waiting_jobs``; ``tests/support/cost_reference.py``: ``report_from_entries``)."""
    from starburst.adapters.db.costs import SqlLedger
    from starburst.adapters.kubernetes.cluster import KubernetesCluster

    test_only = {
        (KubernetesCluster, "queued"),
        (SqlLedger, "cost_report_from_entries"),
    }
    assert sorted(f"{c.__name__}.{m}" for c, m in test_only if hasattr(c, m)) == []
