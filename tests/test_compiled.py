"""The compiled wheel (``setup.py``): its hot modules are C extensions, and they decide exactly
as the pure-Python modules of the checkout do.

The wheel is built once, from a copy of the sources, with the machine's C compiler (``uv
build``: mypyc, then the compiler) and unpacked; child processes put it first on
``PYTHONPATH``, so ``starburst`` is the wheel's, beside the same commands on this checkout's
pure-Python modules (an editable install compiles nothing): the same outputs, byte for byte.
The core's own tests then run once more on the compiled modules.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.wheel import build_wheel

ROOT = Path(__file__).resolve().parents[1]
#: where ``adapters.db.migrate`` is told the migrations are: never, for the wheel's commands
MIGRATIONS_ENV = "STARBURST_MIGRATIONS_DIR"

#: one worker builds the wheel (the module's fixture) for every test here
pytestmark = pytest.mark.xdist_group("compiled")


def _compiled_modules() -> list[str]:
    """``setup.COMPILED``, read without running the build (``setup.py`` builds as a script)."""
    spec = importlib.util.spec_from_file_location("starburst_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)
    return [path.removesuffix(".py").replace("/", ".") for path in setup.COMPILED]


def _run(argv: list[str], *, compiled: Path | None, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", MIGRATIONS_ENV)}
    if compiled is not None:
        env["PYTHONPATH"] = str(compiled)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The wheel's files, unpacked (a folder to put on ``PYTHONPATH``)."""
    uv = shutil.which("uv")
    if uv is None:
        if os.environ.get("CI"):
            pytest.fail("no uv on PATH: the README's install step puts it there")
        pytest.skip("no uv on PATH")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the wheel would carry the pure-Python modules alone")
    scratch = tmp_path_factory.mktemp("compiled")
    wheel, said = build_wheel(uv, scratch / "source", scratch / "dist")
    assert "not compiled" not in said, said
    site = scratch / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    yield site


def test_the_wheel_compiles_the_hot_modules_and_imports_them(compiled: Path) -> None:
    modules = _compiled_modules()
    assert "starburst.core.cycle" in modules and "starburst.sim.engine" in modules
    for module in modules:
        folder = compiled / Path(*module.split(".")[:-1])
        assert list(folder.glob(f"{module.split('.')[-1]}.cpython-*.so")), module
        assert (folder / f"{module.split('.')[-1]}.py").exists(), "the source ships beside it"
    code = (
        "import importlib, json; "
        f"print(json.dumps([importlib.import_module(m).__file__ for m in {modules!r}]))"
    )
    done = _run([sys.executable, "-c", code], compiled=compiled, cwd=compiled)
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stdout)
    assert all(f.startswith(str(compiled)) and f.endswith(".so") for f in files), files


def test_the_wheel_migrates_a_database_outside_any_checkout(compiled: Path, tmp_path: Path) -> None:
    """A user's ``pip install`` has no checkout beside it: the wheel carries every migration,
    and ``starburst db upgrade`` finds them without ``STARBURST_MIGRATIONS_DIR``."""
    shipped = compiled / "starburst" / "adapters" / "db" / "migrations"
    versions = sorted(p.name for p in (ROOT / "migrations" / "versions").glob("*.py"))
    assert sorted(p.name for p in (shipped / "versions").glob("*.py")) == versions
    assert not list(shipped.rglob("__pycache__")) and not (shipped / "alembic.ini").exists()
    newest = versions[-1].split("_")[0]
    url = f"sqlite:///{tmp_path / 'state.db'}"
    cli = [sys.executable, "-m", "starburst.cli", "db"]
    done = _run([*cli, "upgrade", "--url", url], compiled=compiled, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    current = _run([*cli, "current", "--url", url], compiled=compiled, cwd=tmp_path)
    assert f"revision {newest} (newest: {newest})" in current.stdout, current


def test_the_checkouts_editable_install_runs_the_modules_as_edited() -> None:
    """``uv sync`` (the test command) installs the checkout editable: nothing compiled, so the
    module that runs is the module edited."""
    import starburst.core.cycle
    import starburst.sim.engine

    assert starburst.core.cycle.__file__ == str(ROOT / "starburst" / "core" / "cycle.py")
    assert starburst.sim.engine.__file__ == str(ROOT / "starburst" / "sim" / "engine.py")
    assert not list((ROOT / "starburst").rglob("*.so"))


@pytest.mark.parametrize(
    "setting",
    [{"STARBURST_PURE_PYTHON": "1"}, {"CC": "false"}],
    ids=["asked for pure Python", "no working C compiler"],
)
def test_a_wheel_asked_for_pure_python_or_without_a_compiler_ships_plain_modules(
    tmp_path: Path, setting: dict[str, str]
) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("no uv on PATH (the fixture above fails the run under CI)")
    wheel, said = build_wheel(uv, tmp_path / "source", tmp_path / "dist", setting)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "starburst/core/cycle.py" in names
    assert "starburst/adapters/db/migrations/env.py" in names  # with or without a compiler
    assert not [n for n in names if n.endswith(".so")], "no extension, not even some"
    if "CC" in setting:  # the build tried, failed, and said so
        assert "not compiled, pure Python instead" in said
    else:  # nothing tried: a wheel for any platform
        assert wheel.name.endswith("-py3-none-any.whl"), wheel.name


def _trace(path: Path) -> None:
    """600 jobs of mixed shapes: GPU types, CPUs, multi-node sizes, none at all."""
    rng = random.Random(7)
    rows = ["job_id,submit_time,runtime,gpus,cpus,gpu_type"]
    t = 0.0
    for i in range(600):
        t += rng.expovariate(1 / 40)
        gpus = rng.choice([0, 1, 1, 1, 2, 4, 8, 12])
        kind = rng.choice(["", "", "a100", "v100"])
        rows.append(
            f"j{i:04d},{t:.3f},{rng.expovariate(1 / 1800):.3f},{gpus},"
            f"{rng.choice([0, 2, 8])},{kind}"
        )
    path.write_text("\n".join(rows) + "\n")


CLUSTER = """nodes:
  - {count: 3, gpus: 8, cpus: 64, gpu_type: a100}
  - {count: 2, gpus: 4, cpus: 32, gpu_type: v100}
  - {count: 2, gpus: 8, cpus: 48}
"""

RUNS = [
    ["--cluster", "cluster.yaml"],
    ["--cluster", "cluster.yaml", "--placement", "best-fit", "--order", "sjf"],
    ["--cluster", "cluster.yaml", "--in-order", "--queue-cap", "none"],
    ["--nodes", "4", "--gpus-per-node", "8", "--policy", "star", "--startup-delay", "90"],
    ["--nodes", "4", "--gpus-per-node", "8", "--order", "edf", "--estimate-error", "0.3"],
    ["--nodes", "2", "--gpus-per-node", "8", "--policy", "constant", "--budget", "0.5"],
    ["--cluster", "cluster.yaml", "--engine", "controller"],
]


@pytest.mark.parametrize("options", RUNS, ids=lambda o: " ".join(o))
def test_the_compiled_modules_decide_as_the_pure_ones(
    compiled: Path, tmp_path: Path, options: list[str]
) -> None:
    _trace(tmp_path / "trace.csv")
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    outputs = {}
    for name, where in (("pure", None), ("compiled", compiled)):
        argv = [sys.executable, "-m", "starburst.cli", "simulate", "trace.csv", *options]
        done = _run([*argv, "--json", "--per-job", f"{name}.csv"], compiled=where, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        summary.pop("simulation_seconds")
        outputs[name] = (summary, (tmp_path / f"{name}.csv").read_bytes())
    assert outputs["compiled"] == outputs["pure"]
    assert outputs["pure"][0]["jobs"] == 600


def test_a_parallel_sweep_of_the_compiled_modules_matches_the_pure_one(
    compiled: Path, tmp_path: Path
) -> None:
    """The sweep's worker processes are handed its tasks pickled: the values they carry
    (nodes, the scheduler's configuration, the run's options) stay plain classes."""
    tables = {}
    for name, where in (("pure", None), ("compiled", compiled)):
        argv = [
            sys.executable,
            "-m",
            "starburst.cli",
            "sweep",
            "--jobs",
            "300",
            "--nodes",
            "4",
            "--policies",
            "compute,constant,star",
            "--budgets",
            "0.1,0.5",
            "--processes",
            "2",
            "--out",
            name,
        ]
        done = _run(argv, compiled=where, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        tables[name] = (tmp_path / name / "results.csv").read_text()
    assert tables["compiled"] == tables["pure"]
    assert tables["pure"].count("\n") == 8, tables["pure"]  # the header, No-Wait and 3 × 2


def test_the_cores_own_tests_pass_on_the_compiled_modules(compiled: Path, tmp_path: Path) -> None:
    """The pass's and the engine's tests, with the wheel's ``starburst`` ahead of the checkout
    (``-o pythonpath``: the wheel first, the checkout after it for ``tests``), and one more
    test that says the modules they ran on were the compiled ones."""
    check = tmp_path / "test_ran_compiled.py"
    check.write_text(
        "import starburst.core.cycle, starburst.sim.engine\n"
        "def test_ran_on_the_compiled_modules():\n"
        "    assert starburst.core.cycle.__file__.endswith('.so')\n"
        "    assert starburst.sim.engine.__file__.endswith('.so')\n"
    )
    tests = [
        "tests/unit/test_cycle.py",
        "tests/unit/test_carried_facts.py",
        "tests/sim/test_engine.py",
        "tests/sim/test_dependencies.py",
        str(check),
    ]
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"]
    argv += ["-o", f"pythonpath={compiled} {ROOT}", *tests]
    done = _run(argv, compiled=None, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " failed" not in done.stdout
