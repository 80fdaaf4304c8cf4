"""Schema fuzzing of the real API on real PostgreSQL: prints how many cases, 5xx and
schema violations (the figures issue 10's closing note asks for; never pass/fail).

    .venv/bin/python bench/api_fuzz.py                      # throwaway PostgreSQL, 150/op/mode
    .venv/bin/python bench/api_fuzz.py --examples 40 --time-limit 120 --seed 3

Every operation of the app's own OpenAPI document, positive and negative cases, every
schemathesis check, an admin token (``tests/support/apifuzz.py`` says what is counted and
which 422s are allowed). The suite runs a smaller bounded version
(``tests/security/test_api_fuzz.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=150, help="cases per operation and mode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds, whole run")
    parser.add_argument("--url", help="an empty PostgreSQL database (default: a throwaway one)")
    args = parser.parse_args()

    from starburst.adapters.db import migrate
    from starburst.adapters.db.store import SqlStore
    from starburst.api import create_app
    from starburst.core.records import Role
    from starburst.settings import Settings
    from tests.support.apifuzz import fuzz
    from tests.support.postgres import fresh_database, server_url

    with server_url() as server:
        url = args.url or (fresh_database(server) if server else None)
        if url is None:
            print("no PostgreSQL server: install PostgreSQL or the test extra")
            return 2
        migrate.upgrade(url)
        store = SqlStore.open(url)
        store.accounts.save_user("fuzz-admin", team="ml")
        app = create_app(Settings(database_url=url), store, auth=True)
        started = time.perf_counter()
        result = fuzz(
            app,
            lambda: store.accounts.issue_token("fuzz-admin", Role.ADMIN).secret,
            max_examples=args.examples,
            seed=args.seed,
            time_limit=args.time_limit,
        )
        seconds = time.perf_counter() - started
        store.close()
    print(
        f"schemathesis on PostgreSQL, {args.examples} examples per operation and mode, "
        f"seed {args.seed}, {seconds:.0f} s"
    )
    print(result.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
