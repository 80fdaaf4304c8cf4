"""The rule every user and team name meets, wherever it comes from (the API, the admin CLI).

Terms: an *account name* is 1 to ``MAX_ACCOUNT_NAME`` characters from ``[A-Za-z0-9_.@-]``:
no spaces or control characters, so it reads the same in a table, a log line, a URL path and
a Kubernetes label. A *label* (an e-mail, a token's label) is free text of at most its limit
without control characters (as the API's ``Label256`` and ``Label128``). The API's schemas
declare ``ACCOUNT_NAME`` in OpenAPI; the CLI checks names with ``check_account_name`` before
anything is stored.
"""

from __future__ import annotations

import re

from starburst.core.errors import ConfigError

ACCOUNT_NAME = r"^[A-Za-z0-9_.@-]+$"
MAX_ACCOUNT_NAME = 128
MAX_EMAIL = 256
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_account_name(name: str, *, what: str = "name") -> str:
    """``name`` if it meets the rule, else ``ConfigError`` saying what is wrong with it."""
    if not 1 <= len(name) <= MAX_ACCOUNT_NAME or not re.fullmatch(ACCOUNT_NAME, name):
        raise ConfigError(
            f"{what} {name!r}: use 1 to {MAX_ACCOUNT_NAME} letters, digits and _ . @ - "
            "(no spaces or control characters)"
        )
    return name


def check_label(text: str, *, what: str, limit: int = MAX_EMAIL) -> str:
    """``text`` if it is 1 to ``limit`` characters without control characters (an e-mail, a
    token's label), else ``ConfigError``."""
    if not 1 <= len(text) <= limit or _CONTROL.search(text):
        raise ConfigError(f"{what} {text!r}: use 1 to {limit} characters, no control characters")
    return text
