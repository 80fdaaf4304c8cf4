"""Field types with the limits every API input meets, written so OpenAPI shows them.

Every constraint is in the JSON Schema (``maxLength``, ``pattern``, ``maximum``, ...), so a
client — or a schema fuzzer — that follows the document is never refused, and anything the
document forbids is a 422 naming the field, never a 500 further down.

Terms and limits:
- *label*: a short free text (names, images, GPU types, labels): no control characters.
- *account name* (``AccountName``): users and teams, ``[A-Za-z0-9_.@-]``, at most 128.
- *command*: at most ``MAX_COMMAND`` characters (64 KiB; the kernel refuses one argument
  over 128 KiB), no NUL byte (the kernel cannot pass one), not blank. Newlines and tabs are
  fine: a command may be a script.
- *env*: at most ``MAX_ENV_VARS`` variables named like shell variables, each value at most
  ``MAX_ENV_VALUE`` characters without NUL — so a whole job always fits the kernel's limits.
- *numbers*: finite, within ``MAX_*`` below (an infinite or 1e308 runtime once made budget
  recalibration overflow).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema

from starburst.api.limits import NO_CONTROL
from starburst.core.account_names import ACCOUNT_NAME, MAX_ACCOUNT_NAME
from starburst.core.billing import MAX_MONEY

MAX_COMMAND = 64 * 1024
MAX_ENV_VARS = 64
MAX_ENV_VALUE = 16 * 1024
MAX_RUNTIME_S = 10 * 365 * 86400.0  # ten years
MAX_CPUS = 100_000.0
MAX_MEMORY_MB = 1e9  # a petabyte
MAX_GPUS = 4096
MAX_EXPIRES_S = 100 * 365 * 86400.0  # a century
INT64_MAX = 2**63 - 1

#: search patterns (as JSON Schema reads them) a command or env value must NOT match; long
#: strings are documented with ``not`` rather than an anchored pattern, which schema-driven
#: generators can only satisfy slowly
HAS_NUL = r"\x00"
#: whitespace as both Python (``str.isspace``: also U+001C–U+001F, U+0085) and JSON Schema's
#: ECMA-262 regexes (also U+FEFF) read it, so the document and the check agree
BLANK = r"^[\s\x1c-\x1f\x85\ufeff]*$"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain a NUL byte")
    return value


def _not_blank(value: str) -> str:
    if re.fullmatch(BLANK, value):
        raise ValueError("must be a non-empty command")
    return value


def encodable(value: str) -> str:
    """Lone surrogates (valid in JSON, not in UTF-8) cannot be stored or passed on."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    return value


def whole_number(value: object) -> object:
    """JSON Schema's ``integer``: 2 and 2.0 are whole numbers; true, "2" and 2.5 are not
    (pydantic's lax mode would take the first two, its strict mode would refuse 2.0)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a whole number")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("must be a whole number")
        return int(value)
    return value


#: A count in JSON: a whole number, written 2 or 2.0. Bounds go in the field's default
#: (``gpus: WholeNumber = Field(ge=0)``); where there is no such default (a nullable
#: count), put the bounds *before* the validator (as ``jobs.ArrayLimit``), else pydantic writes
#: them into the schema as its own ``ge``/``le`` keys, which no JSON Schema reader knows.
WholeNumber = Annotated[int, BeforeValidator(whole_number)]

Label256 = Annotated[
    str, Field(min_length=1, max_length=256, pattern=NO_CONTROL), AfterValidator(encodable)
]
Label128 = Annotated[
    str, Field(min_length=1, max_length=128, pattern=NO_CONTROL), AfterValidator(encodable)
]
Label64 = Annotated[
    str, Field(min_length=1, max_length=64, pattern=NO_CONTROL), AfterValidator(encodable)
]
AccountName = Annotated[str, Field(min_length=1, max_length=MAX_ACCOUNT_NAME, pattern=ACCOUNT_NAME)]
CommandText = Annotated[
    str,
    Field(min_length=1, max_length=MAX_COMMAND),
    AfterValidator(_no_nul),
    AfterValidator(_not_blank),
    AfterValidator(encodable),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_COMMAND,
            "not": {"anyOf": [{"pattern": HAS_NUL}, {"pattern": BLANK}]},
        }
    ),
]
#: a command given as a list: at most 64 arguments of 200 characters, so that even quoted by
#: ``shlex.join`` (a ``'`` becomes five characters) it stays within ``MAX_COMMAND``
CommandArg = Annotated[
    str,
    Field(max_length=200),
    AfterValidator(_no_nul),
    AfterValidator(encodable),
    WithJsonSchema({"type": "string", "maxLength": 200, "not": {"pattern": HAS_NUL}}),
]
CommandArgs = Annotated[list[CommandArg], Field(min_length=1, max_length=64)]
EnvName = Annotated[str, Field(min_length=1, max_length=256, pattern=ENV_NAME)]
EnvValue = Annotated[
    str,
    Field(max_length=MAX_ENV_VALUE),
    AfterValidator(_no_nul),
    AfterValidator(encodable),
    WithJsonSchema({"type": "string", "maxLength": MAX_ENV_VALUE, "not": {"pattern": HAS_NUL}}),
]
EnvVars = Annotated[
    dict[EnvName, EnvValue],
    Field(max_length=MAX_ENV_VARS, json_schema_extra={"additionalProperties": False}),
]


def _micro_units(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.000001"))


#: an amount of money: 0 to 10^12, rounded to six decimal places; a JSON number or a
#: decimal string (``"12.50"``), so no float rounding reaches a bill
Money = Annotated[
    Decimal,
    Field(ge=0, le=MAX_MONEY, allow_inf_nan=False),
    AfterValidator(_micro_units),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": 0, "maximum": MAX_MONEY},
                {"type": "string", "pattern": r"^[0-9]{1,12}(\.[0-9]{1,6})?$"},
            ]
        }
    ),
]
