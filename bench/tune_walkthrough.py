"""The "choose your budget" walkthrough of docs/tune.md, on a live controller's own history.

A real controller (SQLite store, the simulator's cluster and cloud, virtual time: see
``tests/tune/live.py``) runs a month of a synthetic workload — 8 nodes × 8 GPUs, bursty
arrivals, runtime predictions off by up to ±60% — at Starburst b = 0.25, recalibrating every
10 minutes as the daemon does. Then the admin's commands run on its database, as printed:

    starburst history export --since 40d -o out/tune-demo/trace.csv --cluster ...
    starburst tune --since 40d --max-jct-increase 5%

The tune plot is also written, in 64 colours to stay small, to ``--figure``
(``bench/figures/tune-pareto.png``, the one ``docs/tune.md`` shows).

Usage: python bench/tune_walkthrough.py [--jobs 600] [--out out/tune-demo] [--figure PATH]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from starburst.cli.main import main as cli
from starburst.core.capacity import uniform_nodes
from tests.tune.live import start_controller, workload

DAY = 86_400.0
FIGURE = Path(__file__).resolve().parent / "figures" / "tune-pareto.png"


def run(argv: list[str]) -> None:
    print(f"$ starburst {' '.join(argv)}", flush=True)
    try:
        cli(argv)
    except SystemExit as exc:
        if exc.code:
            raise
    print(flush=True)


def small_copy(plot: Path, figure: Path) -> None:
    """The plot in an adaptive 64-colour palette: a fraction of the size, the same look."""
    from PIL import Image

    figure.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(plot) as image:
        # octree keeps the rings' rare colours (median cut greys them out)
        small = image.convert("RGB").quantize(colors=64, method=Image.Quantize.FASTOCTREE)
        small.save(figure, optimize=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=600)
    parser.add_argument("--out", type=Path, default=Path("out/tune-demo"))
    parser.add_argument("--figure", type=Path, default=FIGURE)
    args = parser.parse_args(argv)
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    first = round(time.time()) - 35 * DAY
    started = time.perf_counter()
    live = start_controller(
        args.out,
        {"policy": "compute", "budget": 0.25, "out_of_order": True, "queue_cap": 30},
        uniform_nodes(8, 8),
        first,
    )
    live.run(workload("j", first, args.jobs, 64, seed=11), recalibrate_every=600.0)
    print(
        f"(live controller on virtual time: {args.jobs} jobs in "
        f"{time.perf_counter() - started:.0f} s)\n"
    )
    url = str(live.store.engine.url)
    run(
        [
            "history",
            "export",
            "--since",
            "40d",
            "-o",
            str(args.out / "trace.csv"),
            "--cluster",
            str(args.out / "cluster.yaml"),
            "--url",
            url,
        ]
    )
    run(
        ["tune", "--since", "40d", "--max-jct-increase", "5%", "--out", str(args.out), "--url", url]
    )
    small_copy(args.out / "pareto.png", args.figure)
    print(f"(the plot, in 64 colours: {args.figure})")


if __name__ == "__main__":
    main()
