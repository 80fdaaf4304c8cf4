"""Users, teams, API tokens and team budgets.

Invariants:
- A token's secret is shown once (``IssuedToken.secret``) and only its SHA-256 is stored.
  SHA-256 without salt is enough because secrets are 256 random bits (not guessable
  passwords), and it lets ``authenticate`` find a token with one indexed lookup.
- A revoked or expired token authenticates nobody.
- A team's budget is a monthly cloud limit in one currency; what was spent comes from the
  cost entries (``cost_report``), never from a running counter.
- A budget alert is claimed once per (team, month, threshold): the first claim wins, so an
  alert fires once per period even across restarts and replicas.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime
from decimal import Decimal

import sqlalchemy as sa

from starburst.core.billing import from_micros, to_micros
from starburst.core.errors import ConfigError
from starburst.core.records import IssuedToken, Principal, Role, TeamBudget, TokenInfo, User

from .base import Database, new_id
from .convert import maybe_time, to_epoch, to_time
from .engine import run
from .models import ApiTokenRow, BudgetAlertRow, TeamBudgetRow, TeamRow, UserRow, table

TEAMS = table(TeamRow)
USERS = table(UserRow)
TOKENS = table(ApiTokenRow)
BUDGETS = table(TeamBudgetRow)
ALERTS = table(BudgetAlertRow)
TOKEN_PREFIX = "sb_"
#: ``last_used_at`` is kept to this many seconds: at most one write per token per minute.
LAST_USED_RESOLUTION_S = 60.0


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _epoch_or_none(moment: datetime | None) -> float | None:
    return None if moment is None else to_epoch(moment)


class SqlAccounts:
    """The ``Accounts`` port: users, teams, tokens and budgets over the shared ``Database``."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._engine = db.engine

    def ensure_team(self, name: str, *, at: float | None = None) -> None:
        now = to_time(self._db.now(at))
        run(self._engine, lambda c: self._upsert_team(c, name, now))

    def _upsert_team(self, conn: sa.Connection, name: str, now: datetime) -> None:
        conn.execute(
            self._db.insert(TEAMS).on_conflict_do_nothing(), {"name": name, "created_at": now}
        )

    def save_user(
        self,
        name: str,
        *,
        team: str | None = None,
        email: str | None = None,
        at: float | None = None,
    ) -> User:
        """Create the user, or update their team and e-mail."""
        if not name.strip():
            raise ConfigError("a user needs a non-empty name")
        now = to_time(self._db.now(at))

        def write(conn: sa.Connection) -> User:
            if team is not None:
                self._upsert_team(conn, team, now)
            conn.execute(
                self._db.insert(USERS).on_conflict_do_nothing(),
                {"name": name, "team_name": team, "email": email, "created_at": now},
            )
            conn.execute(
                sa.update(USERS).where(USERS.c.name == name).values(team_name=team, email=email)
            )
            return User(name, team, email)

        return run(self._engine, write)

    def user(self, name: str) -> User | None:
        query = sa.select(USERS).where(USERS.c.name == name)
        row = run(self._engine, lambda c: c.execute(query).mappings().first())
        return None if row is None else User(row["name"], row["team_name"], row["email"])

    def users(self, *, team: str | None = None) -> list[User]:
        query = sa.select(USERS).order_by(USERS.c.name)
        if team is not None:
            query = query.where(USERS.c.team_name == team)
        rows = run(self._engine, lambda c: c.execute(query).mappings().all())
        return [User(r["name"], r["team_name"], r["email"]) for r in rows]

    def teams(self) -> list[str]:
        query = sa.select(TEAMS.c.name).order_by(TEAMS.c.name)
        return list(run(self._engine, lambda c: c.execute(query).scalars().all()))

    def tokens(self, *, user: str | None = None) -> list[TokenInfo]:
        """Every token without its hash (the secret never was stored)."""
        query = sa.select(TOKENS).order_by(TOKENS.c.id)
        if user is not None:
            query = query.where(TOKENS.c.user_name == user)
        rows = run(self._engine, lambda c: c.execute(query).mappings().all())
        return [
            TokenInfo(
                r["id"],
                r["user_name"],
                Role(r["role"]),
                r["label"],
                to_epoch(r["created_at"]),
                _epoch_or_none(r["expires_at"]),
                _epoch_or_none(r["revoked_at"]),
                _epoch_or_none(r["last_used_at"]),
            )
            for r in rows
        ]

    def issue_token(
        self,
        user: str,
        role: Role,
        *,
        label: str | None = None,
        expires_at: float | None = None,
        at: float | None = None,
        secret: str | None = None,
    ) -> IssuedToken:
        """A new API token for an existing user; the returned secret is not stored.

        ``secret`` registers a secret chosen outside (a deployment's bootstrap token kept in a
        Kubernetes Secret); it must look like a generated one: ``sb_`` and 32+ characters.
        """
        if secret is None:
            secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        elif not secret.startswith(TOKEN_PREFIX) or len(secret) < len(TOKEN_PREFIX) + 32:
            raise ConfigError(f"a token must be {TOKEN_PREFIX!r} followed by 32+ characters")
        now = to_time(self._db.now(at))

        def write(conn: sa.Connection) -> IssuedToken:
            if conn.execute(sa.select(USERS.c.name).where(USERS.c.name == user)).first() is None:
                raise ConfigError(f"no user {user!r}: create the user first")
            token_id = new_id(
                conn.execute(
                    sa.insert(TOKENS).values(
                        user_name=user,
                        token_hash=hash_secret(secret),
                        prefix=secret[:10],
                        role=Role(role).value,
                        label=label,
                        created_at=now,
                        expires_at=maybe_time(expires_at),
                        revoked_at=None,
                        last_used_at=None,
                    )
                )
            )
            return IssuedToken(token_id, secret, user, Role(role))

        return run(self._engine, write)

    def authenticate(self, secret: str, *, at: float | None = None) -> Principal | None:
        """Who holds this secret, if it is a live token (and note when it was used, to the
        minute: a busy client's every request would otherwise be a write)."""
        now_epoch = self._db.now(at)

        def read(conn: sa.Connection) -> Principal | None:
            query = (
                sa.select(TOKENS, USERS.c.team_name)
                .join(USERS, USERS.c.name == TOKENS.c.user_name)
                .where(TOKENS.c.token_hash == hash_secret(secret), TOKENS.c.revoked_at.is_(None))
            )
            row = conn.execute(query).mappings().first()
            if row is None:
                return None
            if row["expires_at"] is not None and to_epoch(row["expires_at"]) <= now_epoch:
                return None
            last = row["last_used_at"]
            if last is None or now_epoch - to_epoch(last) >= LAST_USED_RESOLUTION_S:
                conn.execute(
                    sa.update(TOKENS)
                    .where(TOKENS.c.id == row["id"])
                    .values(last_used_at=to_time(now_epoch))
                )
            return Principal(row["id"], row["user_name"], row["team_name"], Role(row["role"]))

        return run(self._engine, read)

    def revoke_token(self, token_id: int, *, at: float | None = None) -> bool:
        """Revoke a token; False if there is no such live token."""
        now = to_time(self._db.now(at))
        statement = (
            sa.update(TOKENS)
            .where(TOKENS.c.id == token_id, TOKENS.c.revoked_at.is_(None))
            .values(revoked_at=now)
        )
        return run(self._engine, lambda c: c.execute(statement).rowcount == 1)

    def set_team_budget(
        self,
        team: str,
        monthly_limit: Decimal,
        *,
        currency: str = "USD",
        at: float | None = None,
    ) -> TeamBudget:
        if monthly_limit < 0:
            raise ConfigError(f"budget of team {team!r} cannot be negative")
        now = to_time(self._db.now(at))
        micros = to_micros(monthly_limit)
        values = {"monthly_limit_micros": micros, "currency": currency, "updated_at": now}

        def write(conn: sa.Connection) -> TeamBudget:
            self._upsert_team(conn, team, now)
            conn.execute(
                self._db.insert(BUDGETS)
                .values(team_name=team, **values)
                .on_conflict_do_update(index_elements=["team_name"], set_=values)
            )
            return TeamBudget(team, from_micros(micros), currency)

        return run(self._engine, write)

    def team_budgets(self) -> list[TeamBudget]:
        """Every team's budget, by team name."""
        query = sa.select(BUDGETS).order_by(BUDGETS.c.team_name)
        rows = run(self._engine, lambda c: c.execute(query).mappings().all())
        return [
            TeamBudget(r["team_name"], from_micros(r["monthly_limit_micros"]), r["currency"])
            for r in rows
        ]

    def claim_budget_alert(
        self, team: str, month: str, threshold: float, spent: Decimal, *, at: float | None = None
    ) -> bool:
        """Record that ``team`` crossed ``threshold`` (a share of its limit) in ``month``;
        True only for the first claim, so an alert fires once per period."""
        statement = (
            self._db.insert(ALERTS)
            .values(
                team_name=team,
                month=month,
                threshold_permille=round(threshold * 1000),
                spent_micros=to_micros(spent),
                fired_at=to_time(self._db.now(at)),
            )
            .on_conflict_do_nothing(index_elements=["team_name", "month", "threshold_permille"])
            .returning(ALERTS.c.team_name)
        )  # rowcount is not reliable here on every driver
        return run(self._engine, lambda c: c.execute(statement).first() is not None)

    def budget_alerts(self, month: str) -> dict[str, list[float]]:
        """The thresholds each team crossed in ``month`` (``YYYY-MM``)."""
        query = (
            sa.select(ALERTS.c.team_name, ALERTS.c.threshold_permille)
            .where(ALERTS.c.month == month)
            .order_by(ALERTS.c.team_name, ALERTS.c.threshold_permille)
        )
        rows = run(self._engine, lambda c: c.execute(query).all())
        out: dict[str, list[float]] = {}
        for team, permille in rows:
            out.setdefault(team, []).append(permille / 1000)
        return out

    def team_budget(self, team: str) -> TeamBudget | None:
        query = sa.select(BUDGETS).where(BUDGETS.c.team_name == team)
        row = run(self._engine, lambda c: c.execute(query).mappings().first())
        if row is None:
            return None
        return TeamBudget(team, from_micros(row["monthly_limit_micros"]), row["currency"])
