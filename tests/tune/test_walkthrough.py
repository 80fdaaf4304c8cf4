"""The "choose your budget" walkthrough of docs/tune.md (``bench/tune_walkthrough.py``) runs end to
end, and the live run it starts recalibrates on the virtual period it is given, as the
daemon's recalibration job does."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from types import ModuleType

import pytest

from starburst.core.capacity import uniform_nodes
from tests.tune.live import start_controller, workload

ROOT = Path(__file__).resolve().parents[2]
DAY = 86_400.0
SETTINGS = {"policy": "compute", "budget": 0.25, "out_of_order": True, "queue_cap": 6}


def walkthrough() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "tune_walkthrough", ROOT / "bench" / "tune_walkthrough.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_live_run_recalibrates_on_its_virtual_period(tmp_path: Path) -> None:
    first = round(time.time()) - 10 * DAY
    run = start_controller(tmp_path, SETTINGS, uniform_nodes(2, 8), first)
    cold = run.controller.config.policy.coefficient
    jobs = workload("a", first, 60, 16, seed=5)
    end = run.run(jobs, recalibrate_every=600.0)
    span = end - first
    assert 2 <= run.recalibrations <= span / 600.0 + 1
    warm = run.controller.config.policy.coefficient
    assert warm != pytest.approx(cold)  # refitted on the finished jobs, not the prior
    # what ``tune`` reads as today's coefficient is the one the controller ran with last
    scheduler = run.store.tuning.state("scheduler")
    assert scheduler is not None and scheduler["coefficient"] == pytest.approx(warm)


def test_without_a_period_the_live_run_never_recalibrates(tmp_path: Path) -> None:
    first = round(time.time()) - 10 * DAY
    run = start_controller(tmp_path, SETTINGS, uniform_nodes(2, 8), first)
    cold = run.controller.config.policy.coefficient
    run.run(workload("a", first, 30, 16, seed=5))
    assert run.recalibrations == 0 and run.controller.config.policy.coefficient == cold
    with pytest.raises(ValueError, match="recalibrate_every"):
        run.run([], recalibrate_every=0.0)


@pytest.mark.slow
def test_the_walkthrough_runs_and_writes_a_small_copy_of_its_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figure = tmp_path / "figures" / "tune-pareto.png"
    walkthrough().main(["--jobs", "30", "--out", str(tmp_path / "demo"), "--figure", str(figure)])
    out = capsys.readouterr().out
    assert "$ starburst history export --since 40d" in out
    assert "$ starburst tune --since 40d --max-jct-increase 5%" in out
    assert "wrote 30 finished jobs" in out and "cheapest within tolerance" in out
    assert "(today, c=" in out  # today's row carries the coefficient it really ran with
    plot = tmp_path / "demo" / "pareto.png"
    assert figure.read_bytes()[:4] == b"\x89PNG"
    assert figure.stat().st_size < plot.stat().st_size
    # the few colours keep the rings' own: today's red and the recommendation's green
    from PIL import Image

    with Image.open(figure) as image:
        palette = {rgb for _, rgb in image.convert("RGB").getcolors(256) or []}
    for ring in ((0xD6, 0x27, 0x28), (0x2C, 0xA0, 0x2C)):
        assert min(sum(abs(a - b) for a, b in zip(ring, c, strict=True)) for c in palette) < 24
