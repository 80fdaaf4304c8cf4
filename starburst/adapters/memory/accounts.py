"""Users, teams, API tokens, team budgets and budget alerts in memory (the ``Accounts``
port). As in the SQL store: only a token's SHA-256 is kept; a revoked or expired token
authenticates nobody; its last use is noted at most once a minute; a budget alert is claimed
once per (team, month, threshold to the permille).
"""

from __future__ import annotations

import hashlib
import secrets
from decimal import Decimal

from starburst.core.billing import from_micros, to_micros
from starburst.core.errors import ConfigError
from starburst.core.records import IssuedToken, Principal, Role, TeamBudget, TokenInfo, User

from .tables import MemoryDatabase, TokenRow

TOKEN_PREFIX = "sb_"
LAST_USED_RESOLUTION_S = 60.0


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class MemoryAccounts:
    """The ``Accounts`` port: users, teams, tokens and budgets over the shared
    ``MemoryDatabase``."""

    def __init__(self, db: MemoryDatabase) -> None:
        self._db = db
        self._t = db.tables
        self._lock = db.lock

    def ensure_team(self, name: str, *, at: float | None = None) -> None:
        with self._lock:
            self._t.teams.add(name)

    def save_user(
        self,
        name: str,
        *,
        team: str | None = None,
        email: str | None = None,
        at: float | None = None,
    ) -> User:
        if not name.strip():
            raise ConfigError("a user needs a non-empty name")
        with self._lock:
            if team is not None:
                self._t.teams.add(team)
            self._t.users[name] = User(name, team, email)
            return self._t.users[name]

    def user(self, name: str) -> User | None:
        with self._lock:
            return self._t.users.get(name)

    def users(self, *, team: str | None = None) -> list[User]:
        with self._lock:
            found = sorted(self._t.users.values(), key=lambda u: u.name)
        return [u for u in found if team is None or u.team == team]

    def teams(self) -> list[str]:
        with self._lock:
            return sorted(self._t.teams)

    def tokens(self, *, user: str | None = None) -> list[TokenInfo]:
        with self._lock:
            rows = sorted(self._t.tokens.items())
            return [
                TokenInfo(
                    token_id,
                    row.user,
                    row.role,
                    row.label,
                    row.created_at,
                    row.expires_at,
                    row.revoked_at,
                    row.last_used_at,
                )
                for token_id, row in rows
                if user is None or row.user == user
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
        if secret is None:
            secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        elif not secret.startswith(TOKEN_PREFIX) or len(secret) < len(TOKEN_PREFIX) + 32:
            raise ConfigError(f"a token must be {TOKEN_PREFIX!r} followed by 32+ characters")
        with self._lock:
            if user not in self._t.users:
                raise ConfigError(f"no user {user!r}: create the user first")
            token_id = len(self._t.tokens) + 1
            row = TokenRow(user, Role(role), label, self._db.now(at), expires_at)
            self._t.tokens[token_id] = row
            self._t.token_by_hash[hash_secret(secret)] = token_id
            return IssuedToken(token_id, secret, user, Role(role))

    def authenticate(self, secret: str, *, at: float | None = None) -> Principal | None:
        with self._lock:
            now = self._db.now(at)
            token_id = self._t.token_by_hash.get(hash_secret(secret))
            if token_id is None:
                return None
            row = self._t.tokens[token_id]
            if row.revoked_at is not None:
                return None
            if row.expires_at is not None and row.expires_at <= now:
                return None
            if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION_S:
                row.last_used_at = now
            owner = self._t.users[row.user]
            return Principal(token_id, row.user, owner.team, row.role)

    def revoke_token(self, token_id: int, *, at: float | None = None) -> bool:
        with self._lock:
            row = self._t.tokens.get(token_id)
            if row is None or row.revoked_at is not None:
                return False
            row.revoked_at = self._db.now(at)
            return True

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
        budget = TeamBudget(team, from_micros(to_micros(monthly_limit)), currency)
        with self._lock:
            self._t.teams.add(team)
            self._t.budgets[team] = budget
            return budget

    def team_budgets(self) -> list[TeamBudget]:
        with self._lock:
            return [self._t.budgets[team] for team in sorted(self._t.budgets)]

    def team_budget(self, team: str) -> TeamBudget | None:
        with self._lock:
            return self._t.budgets.get(team)

    def claim_budget_alert(
        self, team: str, month: str, threshold: float, spent: Decimal, *, at: float | None = None
    ) -> bool:
        key = (team, month, round(threshold * 1000))
        with self._lock:
            if key in self._t.alerts:
                return False
            self._t.alerts[key] = to_micros(spent)
            return True

    def budget_alerts(self, month: str) -> dict[str, list[float]]:
        with self._lock:
            crossed = sorted((t, p) for t, m, p in self._t.alerts if m == month)
        out: dict[str, list[float]] = {}
        for team, permille in crossed:
            out.setdefault(team, []).append(permille / 1000)
        return out
