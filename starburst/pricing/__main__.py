"""``python -m starburst.pricing``: check a price table, or print the one Starburst ships.

    python -m starburst.pricing check [FILE]   # exit 0 with a summary, or 1 naming the entry
    python -m starburst.pricing show           # the shipped prices.yaml, verbatim

``check`` reads FILE exactly as the controller does (``load_price_table``; no FILE: the
shipped table). The Helm chart's migration hook runs it on the table given as ``priceTable``,
so a table Starburst would refuse fails the install or upgrade before anything changes.
``show`` prints the defaults an admin starts a copy from (the chart uses them when
``priceTable`` is empty).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import resources

from starburst.pricing.table import PriceTableError, load_price_table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m starburst.pricing")
    verbs = parser.add_subparsers(dest="verb", required=True)
    check = verbs.add_parser("check", help="validate a price table (default: the shipped one)")
    check.add_argument("file", nargs="?", help="a price table YAML file")
    verbs.add_parser("show", help="print the shipped price table")
    args = parser.parse_args(argv)
    if args.verb == "show":
        sys.stdout.write(resources.files("starburst.pricing").joinpath("prices.yaml").read_text())
        return 0
    try:
        table = load_price_table(args.file)
    except PriceTableError as exc:
        print(f"price table refused: {exc}", file=sys.stderr)
        return 1
    where = args.file or "the shipped price table"
    print(f"{where}: {len(table.gpus)} GPU types ({', '.join(table.gpus)}), taken {table.taken}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
