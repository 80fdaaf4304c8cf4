"""``starburst admin``: accounts, tokens and budgets, run locally against the database.

These verbs need no running server and no token: whoever can open the database is an admin.
The database is ``--url``, else the settings' ``database_url``, read like every command's
(``$STARBURST_DATABASE_URL``, the YAML file of ``--config`` / ``$STARBURST_CONFIG``, the
embedded SQLite file). Create the schema first with ``starburst db upgrade``. User and team
names meet the API's rule (``core.account_names``); anything else is one line, nothing stored.

    starburst admin users add alice --team ml
    starburst admin users list [--team ml]      # also: users show alice
    starburst admin teams list                  # also: teams show ml (its members)
    starburst admin tokens issue alice --role user      # prints the secret, once
    starburst admin tokens list [--user alice]  # id, role, label, times; never a secret
    starburst admin tokens revoke 3
    starburst admin budgets set ml 5000 --currency USD
    starburst admin budgets show            # every team: spent, remaining, forecast
    STARBURST_BOOTSTRAP_TOKEN=sb_... starburst admin bootstrap   # deployments (the Helm hook)
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from starburst.cli.server_settings import ConfigOption, database_url
from starburst.core.account_names import check_account_name, check_label

if TYPE_CHECKING:
    from starburst.core.ports import Store

app = typer.Typer(
    help="Users, API tokens and team budgets (runs locally on the database).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
users = typer.Typer(help="Create, update, list and show users.", no_args_is_help=True)
teams = typer.Typer(help="Create, list and show teams.", no_args_is_help=True)
tokens = typer.Typer(help="Issue, list and revoke API tokens.", no_args_is_help=True)
budgets = typer.Typer(help="Teams' monthly cloud budgets.", no_args_is_help=True)
app.add_typer(users, name="users")
app.add_typer(teams, name="teams")
app.add_typer(tokens, name="tokens")
app.add_typer(budgets, name="budgets")

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="Database URL (default: the settings' database_url: $STARBURST_DATABASE_URL, "
        "else the --config file, else ~/.local/share/starburst/starburst.db).",
        show_default=False,
    ),
]
ROLES = ("user", "finance", "admin")
BOOTSTRAP_ENV = "STARBURST_BOOTSTRAP_TOKEN"


@contextmanager
def _store(url: str | None, config: Path | None) -> Iterator[Store]:
    from starburst.adapters.db.store import SqlStore

    store = SqlStore.open(database_url(url, config))
    try:
        yield store
    finally:
        store.close()


@users.command("add")
def add_user(
    name: str,
    team: Annotated[str | None, typer.Option(help="The user's team (created if new).")] = None,
    email: Annotated[str | None, typer.Option()] = None,
    url: UrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Create a user, or update their team and e-mail."""
    check_account_name(name, what="user")
    if team is not None:
        check_account_name(team, what="team")
    if email is not None:
        check_label(email, what="e-mail")
    with _store(url, config) as store:
        user = store.accounts.save_user(name, team=team, email=email)
    typer.echo(f"user {user.name} (team {user.team or '-'})")


@users.command("show")
def show_user(name: str, url: UrlOption = None, config: ConfigOption = None) -> None:
    """Show a user."""
    check_account_name(name, what="user")
    with _store(url, config) as store:
        user = store.accounts.user(name)
    if user is None:
        typer.echo(f"error: no user {name}", err=True)
        raise typer.Exit(1)
    typer.echo(f"user {user.name} (team {user.team or '-'}, e-mail {user.email or '-'})")


@users.command("list")
def list_users(
    team: Annotated[str | None, typer.Option(help="Only this team's users.")] = None,
    url: UrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Every user, with their team and e-mail."""
    from starburst.cli.jobs import table

    if team is not None:
        check_account_name(team, what="team")
    with _store(url, config) as store:
        found = store.accounts.users(team=team)
    rows = [[u.name, u.team or "-", u.email or "-"] for u in found]
    typer.echo(table(["USER", "TEAM", "E-MAIL"], rows) if rows else "no users")


@teams.command("add")
def add_team(name: str, url: UrlOption = None, config: ConfigOption = None) -> None:
    """Create a team."""
    check_account_name(name, what="team")
    with _store(url, config) as store:
        store.accounts.ensure_team(name)
    typer.echo(f"team {name}")


@teams.command("list")
def list_teams(url: UrlOption = None, config: ConfigOption = None) -> None:
    """Every team, with its members."""
    from starburst.cli.jobs import table

    with _store(url, config) as store:
        names = store.accounts.teams()
        people = store.accounts.users()
    rows = [[name, ",".join(u.name for u in people if u.team == name) or "-"] for name in names]
    typer.echo(table(["TEAM", "MEMBERS"], rows) if rows else "no teams")


@teams.command("show")
def show_team(name: str, url: UrlOption = None, config: ConfigOption = None) -> None:
    """Show a team and its members."""
    check_account_name(name, what="team")
    with _store(url, config) as store:
        known = name in store.accounts.teams()
        members = [u.name for u in store.accounts.users(team=name)]
    if not known:
        typer.echo(f"error: no team {name}", err=True)
        raise typer.Exit(1)
    typer.echo(f"team {name} (members: {', '.join(members) or '-'})")


@tokens.command("list")
def list_tokens(
    user: Annotated[str | None, typer.Option(help="Only this user's tokens.")] = None,
    url: UrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Every token: id, user, role, label, state and times (never the secret)."""
    from starburst.cli.jobs import table

    if user is not None:
        check_account_name(user, what="user")
    now = time.time()
    with _store(url, config) as store:
        found = store.accounts.tokens(user=user)
    rows = [
        [
            str(t.id),
            t.user,
            t.role.value,
            t.label or "-",
            _token_state(t.revoked_at, t.expires_at, now),
            _stamp(t.created_at),
            _stamp(t.expires_at),
            _stamp(t.last_used_at),
        ]
        for t in found
    ]
    headers = ["ID", "USER", "ROLE", "LABEL", "STATE", "CREATED", "EXPIRES", "LAST USED"]
    typer.echo(table(headers, rows) if rows else "no tokens")


def _token_state(revoked_at: float | None, expires_at: float | None, now: float) -> str:
    if revoked_at is not None:
        return "revoked"
    return "expired" if expires_at is not None and expires_at <= now else "live"


def _stamp(moment: float | None) -> str:
    return "-" if moment is None else time.strftime("%Y-%m-%d %H:%M", time.gmtime(moment))


@tokens.command("issue")
def issue(
    user: str,
    role: Annotated[str, typer.Option(help="user, finance or admin.")] = "user",
    label: Annotated[str | None, typer.Option(help="A note on what the token is for.")] = None,
    expires_in: Annotated[
        str | None,
        typer.Option("--expires-in", help="Lifetime such as 30d or 12h (default: no expiry)."),
    ] = None,
    url: UrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Issue an API token for an existing user and print its secret (shown only now)."""
    import time

    from starburst.cli.jobs import parse_duration
    from starburst.core.records import Role

    check_account_name(user, what="user")
    if label is not None:
        check_label(label, what="label", limit=128)
    if role not in ROLES:
        raise typer.BadParameter(f"{role!r}: choose {', '.join(ROLES)}", param_hint="--role")
    expires = time.time() + parse_duration(expires_in) if expires_in else None
    with _store(url, config) as store:
        issued = store.accounts.issue_token(user, Role(role), label=label, expires_at=expires)
    typer.echo(issued.secret)
    typer.echo(
        f"token {issued.id} for {issued.user} ({issued.role.value}); the secret above "
        "is shown once: store it now",
        err=True,
    )


@tokens.command("revoke")
def revoke(token_id: int, url: UrlOption = None, config: ConfigOption = None) -> None:
    """Revoke a token by its id."""
    if not 1 <= token_id < 2**63:  # a token id is a BIGINT
        typer.echo(f"error: no live token {token_id}", err=True)
        raise typer.Exit(1)
    with _store(url, config) as store:
        done = store.accounts.revoke_token(token_id)
    if not done:
        typer.echo(f"error: no live token {token_id}", err=True)
        raise typer.Exit(1)
    typer.echo(f"token {token_id} revoked")


@budgets.command("set")
def set_budget(
    team: str,
    monthly_limit: Annotated[str, typer.Argument(help="Cloud money per UTC month.")],
    currency: Annotated[str, typer.Option()] = "USD",
    url: UrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Set a team's monthly cloud budget (the team is created if new)."""
    from starburst.core.billing import MAX_MONEY
    from starburst.core.errors import ConfigError

    check_account_name(team, what="team")
    if not re.fullmatch("[A-Za-z]{3}", currency):
        raise ConfigError(f"currency {currency!r}: use a three-letter code such as USD or EUR")
    try:
        amount = Decimal(monthly_limit)
    except InvalidOperation:
        amount = Decimal("NaN")
    if not amount.is_finite() or not 0 <= amount <= MAX_MONEY:
        raise ConfigError(
            f"monthly limit {monthly_limit!r}: not an amount from 0 to {MAX_MONEY:,} "
            "(such as 5000 or 2500.50)"
        )
    from starburst.core.holds import budget_states

    with _store(url, config) as store:
        budget = store.accounts.set_team_budget(team, amount, currency=currency.upper())
        states = budget_states(store.accounts, store.ledger, time.time(), team)
    typer.echo(f"team {budget.team}: {budget.monthly_limit} {budget.currency} per month")
    if states and states[0].spent > states[0].limit:
        typer.echo(
            f"warning: team {team} already spent {states[0].spent:.2f} "
            f"{budget.currency} in {states[0].month_name}, more than the new limit: "
            "its jobs stop bursting now",
            err=True,
        )


@budgets.command("show")
def show_budget(
    team: Annotated[str | None, typer.Argument(help="One team (default: every team).")] = None,
    url: UrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Teams' monthly cloud budgets: limit, spent, remaining and month-end forecast."""
    from starburst.cli.jobs import table
    from starburst.core.holds import budget_states

    with _store(url, config) as store:
        states = budget_states(store.accounts, store.ledger, time.time(), team)
        fired = store.accounts.budget_alerts(states[0].month) if states else {}
    if not states:
        typer.echo(
            f"error: team {team} has no budget" if team else "no team has a budget", err=True
        )
        raise typer.Exit(1)
    rows = [
        [
            s.team,
            f"{s.limit:.2f}",
            f"{s.spent:.2f}",
            f"{s.remaining:.2f}",
            f"{s.forecast:.2f}",
            s.currency,
            f"{min(s.used, 99.99):.0%}",
            ",".join(f"{a:.0%}" for a in fired.get(s.team, [])) or "-",
        ]
        for s in states
    ]
    typer.echo(f"budgets for {states[0].month_name}")
    typer.echo(
        table(
            ["TEAM", "LIMIT", "SPENT", "REMAINING", "FORECAST", "CURRENCY", "USED", "ALERTS"], rows
        )
    )


@app.command()
def bootstrap(
    user: Annotated[str, typer.Option(help="The admin user (created if new).")] = "admin",
    url: UrlOption = None,
    config: ConfigOption = None,
) -> None:
    """Register the admin token in $STARBURST_BOOTSTRAP_TOKEN for USER (idempotent).

    For deployments whose first admin token lives in a secret store (the Helm chart's
    migration Job runs this): the secret never appears on a command line or in the output.
    """
    from starburst.core.records import Role

    secret = os.environ.get(BOOTSTRAP_ENV, "").strip()
    if not secret:
        typer.echo(f"error: set {BOOTSTRAP_ENV} to the admin token to register", err=True)
        raise typer.Exit(1)
    with _store(url, config) as store:
        if store.accounts.user(user) is None:
            store.accounts.save_user(user)
        holder = store.accounts.authenticate(secret)
        if holder is None:
            issued = store.accounts.issue_token(user, Role.ADMIN, label="bootstrap", secret=secret)
            typer.echo(f"token {issued.id} registered for {user} (admin)")
        elif holder.user == user and holder.role is Role.ADMIN:
            typer.echo(f"token {holder.token_id} of {user} (admin) already registered")
        else:
            typer.echo(
                f"error: {BOOTSTRAP_ENV} is token {holder.token_id} of {holder.user} "
                f"({holder.role.value}), not an admin token of {user}",
                err=True,
            )
            raise typer.Exit(1)
