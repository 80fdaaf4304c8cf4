"""Fixtures every test package may use, and how the suite runs in parallel.

Fixtures: the real Kubernetes control plane (``real_kube``, one per session — per worker under
xdist — built and started only when a test asks for it) and a fresh PodSecurity-restricted
namespace in it (``real_namespace``). See ``tests.support.controlplane``. The machine's real
node (``real_node``: containerd, kubelet, kube-proxy and a GPU device plugin in a control plane
of its own, one per session and per machine): see ``tests.support.realnode``. Kueue
(``kueue_kube``: its manager and CRDs on a control plane of its own): ``tests.support.kueue``.

Parallel runs (``pytest -n auto``, the README's test command, with ``--dist loadgroup`` from
``pyproject.toml``): each worker is its own session, so session fixtures (PostgreSQL, the
control plane, the SkyPilot API server) start once per worker that needs them, and what is
built once per machine (the control plane's binaries, helm, Chromium) is built under a file
lock. Tests that share an expensive server run on one worker, as an ``xdist_group``:
- ``real-kube``: every test using ``real_kube`` (marked here, from its fixtures), so a run
  starts one control plane, not one per worker;
- ``skypilot-real``: the real SkyPilot API server's tests (``tests/skypilot_real``), which also
  must run in their module order on one server;
- ``realnode``: the real node's tests (``tests/realnode``, marked ``realnode``): one worker
  owns the machine's one real node (containerd, kubelet, kube-proxy) and its control plane;
- ``kueue``: every test using ``kueue_kube`` (Kueue's manager on a control plane of its own,
  ``tests.support.kueue``; marked ``kueue``), so a run starts Kueue once;
- ``module:<path>``: the tests of a module that ask for a module-scoped fixture (a trained
  model, a live server, a browser), so that fixture is built once, not once per worker.
Every test of the real-component tiers is marked ``real`` here (see ``_is_real``), so the fast
tier is ``pytest -n 2 -m "not real"`` and the real tier ``pytest -m real``.
Timing-sensitive tests mark themselves ``xdist_group("timing")`` so they never run beside one
another.

Bytecode: where ``PYTHONDONTWRITEBYTECODE`` is set (as on the CI machines), every worker and
every child process the tests start would compile the suite's ~450 modules and the libraries
again (scikit-learn's import alone 3.6 s instead of 1.3 s). The suite writes its bytecode under
``~/.cache/starburst/pycache`` instead (``sys.pycache_prefix``, inherited by children through
the environment): nothing is written in the checkout either way.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

PYCACHE = Path.home() / ".cache" / "starburst" / "pycache"
if sys.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE"):
    sys.dont_write_bytecode = False
    sys.pycache_prefix = str(PYCACHE)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)

from tests.support.controlplane import real_kube, real_namespace  # noqa: E402, F401 (fixtures; after the bytecode set-up)
from tests.support.kueue import kueue_kube  # noqa: E402, F401 (the Kueue tier)
from tests.support.realnode import real_node  # noqa: E402, F401 (the real node's tier)

SKYPILOT_REAL = "tests/skypilot_real/"
REALNODE = "tests/realnode/"
KUEUE = "tests/kueue/"
# the real-component tiers: what the test command builds or installs (see ``real`` below)
REAL_TIERS = ("tests/realkube/", SKYPILOT_REAL, "tests/helm/", "tests/image/", REALNODE, KUEUE)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups from the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = _server_group(item)
        if group is not None and not any(item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(group))
        if _is_real(item):
            item.add_marker(pytest.mark.real)
        if item.nodeid.startswith(REALNODE):
            item.add_marker(pytest.mark.realnode)
        if item.nodeid.startswith(KUEUE) or "kueue_kube" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kueue)
        # an xdist worker under --dist loadgroup (the option exists only on workers)
        if getattr(config.option, "loadgroup", False):
            _name_group_in_nodeid(item)
    if getattr(config.option, "loadgroup", False):
        items.sort(key=_long_groups_first)  # stable: each group keeps its own order


#: the groups that run longest on one worker (the real control plane's, the SkyPilot server's,
#: the real node's, the product image's build)
LONG_GROUPS = frozenset({"real-kube", "skypilot-real", "realnode", "image", "kueue"})


def _groups(item: pytest.Item) -> set[str]:
    """The names of the item's ``xdist_group`` marks."""
    return {
        str(m.args[0] if m.args else m.kwargs.get("name", "default"))
        for m in item.iter_markers("xdist_group")
    }


def _long_groups_first(item: pytest.Item) -> int:
    """Hand the long groups out first: the scheduler gives scopes in collection order, and a
    long group collected last (``tests/realkube``, ``tests/skypilot_real``) could leave one
    worker running it while the other had nothing left to do."""
    return 0 if _groups(item) & LONG_GROUPS else 1


def _name_group_in_nodeid(item: pytest.Item) -> None:
    """Tell the xdist scheduler the item's group the way it reads it: ``<nodeid>@<group>``.

    pytest-xdist 3.8 appends the suffix by assigning ``item._nodeid``, which pytest 9.2 no
    longer reads (node ids are structured ``NodeId``s): every group is then silently ignored
    (pytest-xdist#1386). So the suffix is set here through the structured id; where xdist's
    own assignment still works it appends the same group again, and the scheduler reads the
    name after the last ``@``, so both agree.
    """
    names = sorted(_groups(item))
    if not names or "@" in item.nodeid.rpartition("]")[2] or not hasattr(item, "_id"):
        return
    from _pytest.nodeid import NodeId

    item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


def _is_real(item: pytest.Item) -> bool:
    """A test of the real-component tiers: in their directories, on the product image built
    for real (marked ``image``) or on the real control plane from elsewhere (``real_kube``
    among its fixtures, or the ``real-kube`` group, as the cluster contract's
    ``kubernetes-real`` case, which asks for the fixture at run time)."""
    return (
        item.nodeid.startswith(REAL_TIERS)
        or any(item.iter_markers("image"))
        or _server_group(item) == "real-kube"
        or "real-kube" in _groups(item)
    )


def _server_group(item: pytest.Item) -> str | None:
    if item.nodeid.startswith(SKYPILOT_REAL):
        return "skypilot-real"
    if item.nodeid.startswith(REALNODE):
        return "realnode"
    if "kueue_kube" in getattr(item, "fixturenames", ()):
        return "kueue"
    if "real_kube" in getattr(item, "fixturenames", ()):
        return "real-kube"
    if _uses_module_fixture(item):
        return f"module:{item.nodeid.partition('::')[0]}"
    return None


def _uses_module_fixture(item: pytest.Item) -> bool:
    """Whether the test asks for a module-scoped fixture (a trained model, a live server, a
    browser): its module then runs on one worker, which builds that fixture once, instead of
    being spread over the workers, each building it again for its share of the tests."""
    info = getattr(item, "_fixtureinfo", None)
    definitions = getattr(info, "name2fixturedefs", {})
    return any(d.scope == "module" for defs in definitions.values() for d in defs)
