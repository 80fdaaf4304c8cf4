"""Identities from outside Starburst (a Kubernetes user and its groups) as Starburst callers.

An admin maps *external* identities to Starburst users, teams and roles; the API checks the
external credential (``starburst.api.kubeauth``) and asks ``map_identity`` who the caller is.

Terms:
- *external identity*: a user name and the groups an identity provider vouches for
  (``alice@example.org`` in ``ml-team``; ``system:serviceaccount:ml:trainer`` in
  ``system:serviceaccounts:ml``).
- *grant*: what a user name or a group becomes: a Starburst ``user`` name (user grants only),
  a ``team`` and a ``role``; each part optional.
- *identity map*: the admin's user grants and group grants (group grants in the admin's order).

Rules (``map_identity``):
1. The grants that apply are the user's own grant, if any, and the grant of every group the
   identity is in. None applies: the identity is refused (``IdentityRefused``, naming it).
2. Role: the user grant's role; else the highest role among the group grants
   (admin > finance > user); else ``user``.
3. Team: the user grant's team; else that of the first group grant, in the admin's order,
   that names one; else none.
4. User name: the user grant's ``user``; else the external name with each ``:`` written
   ``.`` (``system:serviceaccount:ml:trainer`` → ``system.serviceaccount.ml.trainer``).
   A name that still breaks the account-name rule is refused, saying how to map it.

Invariant: pure; the same identity and map always give the same caller.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from starburst.core.account_names import ACCOUNT_NAME, MAX_ACCOUNT_NAME
from starburst.core.errors import StarburstError
from starburst.core.records import Principal, Role

#: the rank of roles when several group grants name one (rule 2)
RANK = {Role.USER: 0, Role.FINANCE: 1, Role.ADMIN: 2}
#: the ``token_id`` of a caller who holds no Starburst token
NO_TOKEN = 0


class IdentityRefused(StarburstError):
    """An external identity the map does not admit; the message names it and the fix."""


@dataclass(frozen=True, slots=True)
class Grant:
    """What a user name or a group becomes (see the module docstring)."""

    user: str | None = None
    team: str | None = None
    role: Role | None = None


@dataclass(frozen=True, slots=True)
class IdentityMap:
    """The admin's grants: per external user name, and per group (in the admin's order)."""

    users: Mapping[str, Grant] = field(default_factory=dict)
    groups: Mapping[str, Grant] = field(default_factory=dict)


def map_identity(user: str, groups: Sequence[str], mapping: IdentityMap) -> Principal:
    """The Starburst caller ``user`` in ``groups`` is, by the rules of the module docstring."""
    own = mapping.users.get(user)
    member = set(groups)
    by_group = [grant for name, grant in mapping.groups.items() if name in member]
    if own is None and not by_group:
        shown = ", ".join(sorted(member)) or "none"
        raise IdentityRefused(
            f"Kubernetes user {user!r} (groups: {shown}) is not mapped to Starburst: an admin "
            "maps the user (kubernetes_auth_users) or one of its groups (kubernetes_auth_groups)"
        )
    role = own.role if own is not None and own.role is not None else None
    if role is None:
        roles = [g.role for g in by_group if g.role is not None]
        role = max(roles, key=RANK.__getitem__) if roles else Role.USER
    team = own.team if own is not None and own.team is not None else None
    if team is None:
        team = next((g.team for g in by_group if g.team is not None), None)
    name = own.user if own is not None and own.user is not None else user.replace(":", ".")
    if not 1 <= len(name) <= MAX_ACCOUNT_NAME or not re.fullmatch(ACCOUNT_NAME, name):
        raise IdentityRefused(
            f"Kubernetes user {user!r} has no valid Starburst name ({name!r}): an admin names "
            "it in kubernetes_auth_users (user: a name of letters, digits and _ . @ -)"
        )
    return Principal(token_id=NO_TOKEN, user=name, team=team, role=role)
