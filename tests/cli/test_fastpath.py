"""``starburst simulate`` without typer (``starburst.cli.fastpath``) must be the typer command:
the same options with the same types, ranges and defaults, the same output on the same
arguments, and typer's own help and errors for anything it does not recognise."""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import typer

from starburst.cli import main as cli_main
from starburst.cli.fastpath import OPTIONS, parse_simulate
from starburst.cli.main import build_app
from starburst.cli.simulate_run import DEFAULT
from starburst.cli.simulator import simulate
from starburst.sim.synthetic import Workload, generate
from starburst.sim.trace import write_trace
from tests.builders import run_cli


def _typer_params() -> dict[str, typing.Any]:
    command = typer.main.get_command(build_app(["simulate"]))
    return {p.name: p for p in command.commands["simulate"].params}  # type: ignore[attr-defined]


def _base_type(name: str) -> type:
    hint = typing.get_type_hints(simulate)[name]
    return next(a for a in typing.get_args(hint) or (hint,) if a is not type(None))  # type: ignore[no-any-return]


def test_the_option_table_is_the_typer_commands() -> None:
    params = _typer_params()
    typer_opts = {o for p in params.values() for o in (*p.opts, *p.secondary_opts)}
    assert set(OPTIONS) == typer_opts - {"trace"}
    for option, (field, kind) in OPTIONS.items():
        param = params[field]
        assert getattr(DEFAULT, field) == param.default, option
        if isinstance(kind, bool):
            assert param.is_flag and _base_type(field) is bool
            assert kind == (option in param.opts), option  # --in-order is the False side
        elif isinstance(kind, tuple):
            assert _base_type(field) is int and kind == (param.min, param.max), option
        else:
            assert _base_type(field) is kind and param.min is None is param.max, option


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fast") / "trace.csv"
    write_trace(generate(Workload(200, 32, load=1.1, seed=4)), path)
    return path


def _both(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """(fast path, typer) results of ``starburst ARGS``, the run's own timing masked."""
    fast = run_cli(args, capsys)
    with monkeypatch.context() as m:
        m.setattr(cli_main, "_fast_path", lambda argv: False)
        slow = run_cli(args, capsys)
    return _masked(fast), _masked(slow)


def _masked(result: tuple[int, str, str]) -> tuple[int, str, str]:
    code, out, err = result
    lines = []
    for line in out.splitlines():
        if line.startswith("{"):
            data = json.loads(line)
            data["simulation_seconds"] = 0
            line = json.dumps(data, sort_keys=True)
        lines.append("simulated in" if line.startswith("simulated in") else line)
    return code, "\n".join(lines), err


def _good(trace: Path, tmp: Path) -> list[list[str]]:
    t = str(trace)
    return [
        [t, "--nodes", "4", "--gpus-per-node", "8"],
        ["--nodes=4", "--gpus-per-node=8", t, "--json"],
        [t, "--nodes", "2", "--gpus-per-node", "8", "--policy", "constant", "--coefficient", "600"],
        [t, "--nodes", "4", "--gpus-per-node", "8", "--in-order", "--queue-cap", "none"],
        [t, "--nodes", "4", "--gpus-per-node", "8", "--order", "sjf", "--placement", "best-fit"],
        [t, "--nodes", "4", "--gpus-per-node", "8", "--budget", "0.5", "--price", "3.25"],
        [t, "--nodes", "4", "--gpus-per-node", "8", "--estimate-error", "0.5", "--seed", "7"],
        [t, "--nodes", "4", "--gpus-per-node", "8", "--startup-delay", "120", "--format", "csv"],
        [t, "--nodes", "4", "--gpus-per-node", "8", "--per-job", str(tmp / "out.csv")],
        [t, "--nodes", "4", "--gpus-per-node", "8", "--cpus-per-node", "64.5", "--json"],
    ]


def test_well_formed_arguments_take_the_fast_path_and_print_what_typer_prints(
    trace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for args in _good(trace, tmp_path):
        assert parse_simulate(args) is not None, args
        fast, slow = _both(["simulate", *args], capsys, monkeypatch)
        assert fast == slow, args
        assert fast[0] == 0 and "8000" not in fast[1] and fast[1], args


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["T", "--help"],
        [],
        ["T", "--nodes", "0", "--gpus-per-node", "8"],
        ["T", "--nodes", "100001", "--gpus-per-node", "8"],
        ["T", "--nodes", "99999999999", "--gpus-per-node", "8"],
        ["T", "--nodes", "abc", "--gpus-per-node", "8"],
        ["T", "--nodes", "4", "--gpus-per-node", "1025"],
        ["T", "--nodes", "4", "--gpus-per-node", "8", "--price", "-1"],
        ["T", "--nodes", "4", "--gpus-per-node", "8", "--price", "1e3"],
        ["T", "--nodes", "4", "--gpus-per-node", "8", "--seed", "007"],
        ["T", "--nodes", "4", "--gpus-per-node", "8", "--bogus"],
        ["T", "--nodes", "4", "--gpus-per-node"],
        ["T", "--nodes", "4", "--nodes", "5", "--gpus-per-node", "8"],
        ["T", "--nodes", "4", "--gpus-per-node", "8", "--in-order", "--out-of-order"],
        ["T", "--nodes", "4", "--gpus-per-node", "8", "--json=yes"],
        ["T", "U", "--nodes", "4", "--gpus-per-node", "8"],
        ["T", "--nodes", "4", "--gpus-per-node", "8", "--", "U"],
        ["T", "--nodes=", "--gpus-per-node", "8"],
    ],
)
def test_anything_unusual_is_left_to_typer_which_refuses_or_explains(
    args: list[str],
    trace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = [str(trace) if a == "T" else a for a in args]
    assert parse_simulate(args) is None
    fast, slow = _both(["simulate", *args], capsys, monkeypatch)
    assert fast == slow
    if "--help" in args:
        assert fast[0] == 0 and "--gpus-per-node" in fast[1]
    elif not ACCEPTED.intersection(args):
        assert fast[0] != 0 and fast[2]


#: spellings typer accepts that the fast path leaves to it (a repeat: the last one counts)
ACCEPTED = {"1e3", "007", "5", "--out-of-order"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--policy", "nonsense"], "nonsense"),
        (["--budget", "0.2", "--coefficient", "3"], "either --coefficient or --budget"),
        (["--queue-cap", "many"], "--queue-cap 'many'"),
        (["--order", "lifo"], "lifo"),
        (["--format", "parquet"], "parquet"),
        (["--cluster", "shape.yaml"], "not both"),
    ],
)
def test_errors_found_while_running_read_the_same_on_both_paths(
    extra: list[str],
    message: str,
    trace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = [str(trace), "--nodes", "4", "--gpus-per-node", "8", *extra]
    assert parse_simulate(args) is not None
    fast, slow = _both(["simulate", *args], capsys, monkeypatch)
    assert fast == slow
    assert fast[0] == 2 and fast[2].startswith("error: ") and message in fast[2]


def test_a_missing_trace_reads_the_same_on_both_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = str(tmp_path / "nope.csv")
    fast, slow = _both(
        ["simulate", missing, "--nodes", "4", "--gpus-per-node", "8"], capsys, monkeypatch
    )
    assert fast == slow
    assert fast[0] == 2 and "nope.csv" in fast[2] and "no such trace file" in fast[2]


def loaded_by_simulate(trace: Path, names: tuple[str, ...]) -> list[str]:
    """Which of the modules ``names`` a fresh interpreter has loaded after ``starburst
    simulate`` of ``trace`` through the fast path (which must print the summary)."""
    probe = (
        "import json, sys; from starburst.cli.main import main\n"
        f"main(['simulate', {str(trace)!r}, '--nodes', '4', '--gpus-per-node', '8'])\n"
        f"print('LOADED', json.dumps([m for m in {names!r} if m in sys.modules]), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "burst to the cloud" in done.stdout
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    return list(json.loads(line.removeprefix("LOADED ")))


def test_the_fast_path_imports_neither_typer_nor_pydantic(trace: Path) -> None:
    heavy = ("typer", "click", "pydantic", "numpy", "sqlalchemy")
    assert loaded_by_simulate(trace, heavy) == []


def test_the_fast_path_imports_the_port_values_but_not_the_ports(trace: Path) -> None:
    # the simulator builds the values the cluster and cloud ports carry (core.port_values);
    # the ports' protocols and the store's records are the live controller's
    names = ("starburst.core.ports", "starburst.core.records", "starburst.core.port_values")
    assert loaded_by_simulate(trace, names) == ["starburst.core.port_values"]


def test_simulating_a_plain_csv_trace_imports_no_decompression_dates_or_random(
    trace: Path,
) -> None:
    # gzip and datetime serve the compressed and the Philly/Helios traces, random the estimate
    # errors: a plain run of the project's CSV pays for none of their imports
    assert loaded_by_simulate(trace, ("gzip", "datetime", "random")) == []


def test_the_dataclasses_simulate_imports_all_have_docstrings(trace: Path) -> None:
    # a dataclass without a docstring gets one made from inspect.signature at import, on
    # every start of the command; a written one is better reading and costs nothing
    probe = (
        "import dataclasses, sys; from starburst.cli.main import main\n"
        f"main(['simulate', {str(trace)!r}, '--nodes', '4', '--gpus-per-node', '8'])\n"
        "made = sorted(f'{m}.{k}' for m, mod in list(sys.modules.items())\n"
        "    if m.startswith('starburst') for k, v in vars(mod).items()\n"
        "    if dataclasses.is_dataclass(v) and isinstance(v, type) and v.__module__ == m\n"
        "    and (v.__doc__ or '').startswith(k + '('))\n"
        "print('UNDOCUMENTED', made, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "UNDOCUMENTED []" in done.stderr
