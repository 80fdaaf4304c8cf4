"""How the suite shares its costly inputs under xdist (``tests/conftest.py``,
``tests.support.shared``): a module's module-scoped fixture stays on one worker, and
``once_per_run`` builds once for all workers of a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.shared import once_per_run


@pytest.fixture(scope="module")
def module_input() -> str:
    return "built once for this module"


def test_a_test_asking_for_a_module_fixture_is_grouped_by_its_module(
    request: pytest.FixtureRequest, module_input: str
) -> None:
    groups = [m.args[0] for m in request.node.iter_markers("xdist_group")]
    assert groups == ["module:tests/test_suite_scheduling.py"]


def test_a_test_without_one_is_left_to_the_scheduler(request: pytest.FixtureRequest) -> None:
    assert list(request.node.iter_markers("xdist_group")) == []


class Factory:
    """The part of ``pytest.TempPathFactory`` that ``once_per_run`` reads: a worker's base."""

    def __init__(self, base: Path) -> None:
        self._base = base

    def getbasetemp(self) -> Path:
        return self._base


def test_the_workers_of_a_run_build_once_and_read_the_same_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[Path] = []

    def build(directory: Path) -> None:
        builds.append(directory)
        (directory / "value").write_text("42")

    made = []
    for worker in ("gw0", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        base = tmp_path / f"popen-{worker}"
        base.mkdir()
        made.append(once_per_run(Factory(base), "input", build))  # type: ignore[arg-type]
    assert len(builds) == 1
    assert made[0] == made[1] == tmp_path / "shared" / "input"
    assert (made[1] / "value").read_text() == "42"


def test_a_failed_build_leaves_nothing_and_the_next_worker_builds_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    base = tmp_path / "popen-gw0"
    base.mkdir()

    def broken(directory: Path) -> None:
        (directory / "half").write_text("")
        raise RuntimeError("the build broke")

    with pytest.raises(RuntimeError, match="the build broke"):
        once_per_run(Factory(base), "input", broken)  # type: ignore[arg-type]
    assert not (tmp_path / "shared" / "input").exists()
    made = once_per_run(Factory(base), "input", lambda d: (d / "value").write_text("ok"))
    assert (made / "value").read_text() == "ok" and not (made / "half").exists()
