"""Array ids: how a name a user types resolves to the elements of one of their job arrays.

Terms: every array submitted with ``starburst submit --array`` has an *array id*: the
idempotency key it was submitted with, else ``<name>-<8 hex digits>`` (the CLI prints it).
The store keeps it scoped to its user (``<user>/<array id>``, ``JobSubmit.to_spec``), so a
user names their own arrays by the short id and one user's array id never reaches another
user's jobs; finance and admins name anyone's as ``<user>/<array id>``.

Any job command may act on a whole array through ``array_elements``: it expands the typed
id to the element jobs (in index order), or raises 404 as an unknown job id does.
"""

from __future__ import annotations

from fastapi import HTTPException

from starburst.api.context import ApiContext
from starburst.api.deps import is_privileged
from starburst.core.records import Principal, StoredJob

#: the most elements one array id expands to (``max_array_size``'s own ceiling)
MAX_ELEMENTS = 10_000


def scoped(text: str, caller: Principal) -> list[str]:
    """The stored array ids ``text`` may name for ``caller``, most likely first."""
    own = f"{caller.user}/{text}"
    if "/" in text and (is_privileged(caller) or text.startswith(f"{caller.user}/")):
        return [own, text]
    return [own]


def array_elements(ctx: ApiContext, text: str, caller: Principal) -> tuple[str, list[StoredJob]]:
    """The stored array id ``text`` names for ``caller`` and its elements in index order;
    404 when it names none of the arrays the caller may see."""
    for array in scoped(text, caller):
        found = ctx.store.jobs.array_elements(array, limit=MAX_ELEMENTS)
        if found:
            return array, found
    raise HTTPException(404, f"no job or array {text}")
