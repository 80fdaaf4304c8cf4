"""Plain-text and CSV renderings of comparison rows, for terminals, READMEs and files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from starburst.spreadsheet import writer as csv_writer

Row = dict[str, float | int | str]

_COLUMNS = (
    ("label", "policy", "{}"),
    ("load", "load", "{:.2f}"),
    ("cloud_cost_usd", "cloud $", "{:,.0f}"),
    ("cloud_gpu_hours", "cloud GPU-h", "{:,.0f}"),
    ("burst_jobs", "burst", "{}"),
    ("savings", "saved vs No-Wait", "{:.1%}"),
    ("saving_vs_today", "saved vs today", "{:+.1%}"),
    ("mean_jct_s", "mean JCT", "{:.3f}h"),
    ("jct_change", "JCT vs No-Wait", "{:+.1%}"),
    ("p90_jct_change", "p90 vs No-Wait", "{:+.1%}"),
    ("mean_wait_s", "mean wait", "{:.3f}h"),
    ("cluster_utilization", "util", "{:.1%}"),
    ("note", "note", "{}"),
)
_HOURS = {"mean_jct_s", "mean_wait_s"}
_LEFT = {"label", "note"}


def render(rows: Sequence[Row]) -> str:
    cols = [c for c in _COLUMNS if any(c[0] in r for r in rows)]
    cells = [[c[1] for c in cols]]
    for row in rows:
        line = []
        for key, _, fmt in cols:
            value = row.get(key, "")
            if value == "":
                line.append("")
                continue
            line.append(fmt.format(float(value) / 3600.0 if key in _HOURS else value))
        cells.append(line)
    widths = [
        len(c[1]) if c[0] == "note" else max(len(r[i]) for r in cells) for i, c in enumerate(cols)
    ]
    lines = []
    for n, line in enumerate(cells):
        parts = [
            v.ljust(w) if cols[i][0] in _LEFT else v.rjust(w)
            for i, (v, w) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_csv(rows: Sequence[Row], path: Path) -> None:
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv_writer(fh)
        writer.writerow(keys)
        writer.writerows([row.get(k, "") for k in keys] for row in rows)
