"""Schema fuzzing of the real API with schemathesis: every check, counted, bounded in time.

``fuzz(app, issue_token, ...)`` loads the app's own OpenAPI document, and for every operation
draws ``max_examples`` cases in each generation mode (positive: what the document allows;
negative: what it forbids), sends each to the app in-process (ASGI) with an admin token,
and runs all of schemathesis's checks on the answer. Nothing stops at the first failure:
every case counts, and the result says how many cases ran, how many got a 5xx, how many
broke the document (a body or status it does not declare) and how many failed another check.

Allowed, and counted apart (``semantic``): a 422 for schema-valid input whose problem the
document cannot express — an opaque ``cursor`` that is not one this API issued, a ``since``
that is not a date or not before ``until``, an unknown ``by`` key, a tuning run over a
window without finished jobs. These operations are
listed in ``SEMANTIC_422``. A submission (or its quote) may also be refused for what only the
price table knows — its burst would cost more per hour than the job ceiling, or no cloud
prices its GPU type or cloud choice: those 422s are allowed by their words
(``SEMANTIC_422_WORDS``). Anywhere else a rejected valid request is a failure.

A ``DELETE /v1/tokens/{id}`` may revoke the fuzzer's own token: it takes a fresh one after
every delete. ``time_limit`` bounds the whole run, shared out fairly: each operation and mode
gets an equal part of the time left, and always at least its first case, so a slow machine
fuzzes every operation less deeply but never leaves one out (``unreached`` lists any that got
no case at all; ``skipped_operations`` those cut short).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SEMANTIC_422 = {"GET /v1/jobs", "GET /v1/costs", "GET /v1/costs/savings", "POST /v1/tuning/runs"}
#: the spend guards' refusals of a schema-valid submission, by the words of their detail
PRICE_REFUSALS = (
    "above the per-job ceiling",
    "above its ceiling",
    "cannot burst",
    "unknown GPU type",
)
SEMANTIC_422_WORDS = {"POST /v1/jobs": PRICE_REFUSALS, "POST /v1/jobs/quote": PRICE_REFUSALS}
SCHEMA_FAILURES = {
    "JsonSchemaError",
    "UndefinedStatusCode",
    "UndefinedContentType",
    "MissingHeaders",
    "MalformedJson",
    "MissingContentType",
}


@dataclass
class FuzzResult:
    cases: int = 0
    server_errors: int = 0
    schema_violations: int = 0
    other_failures: int = 0
    semantic: int = 0
    skipped_operations: list[str] = field(default_factory=list)
    operations: list[str] = field(default_factory=list)
    per_operation: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        lines = [
            f"cases {self.cases}, 5xx {self.server_errors}, schema violations "
            f"{self.schema_violations}, other check failures {self.other_failures}, "
            f"allowed semantic 422s {self.semantic}"
        ]
        lines += [
            f"  {n} × {kind}\n      {self.examples[kind]}"
            for kind, n in self.failures.most_common()
        ]
        if self.skipped_operations:
            lines.append(f"  cut short in time: {', '.join(self.skipped_operations)}")
        if self.unreached:
            lines.append(f"  never fuzzed: {', '.join(self.unreached)}")
        return "\n".join(lines)

    @property
    def unreached(self) -> list[str]:
        """Operations of the document that got no case at all, in either mode."""
        return [op for op in self.operations if not self.per_operation[op]]


class _OutOfTime(Exception):
    pass


def fuzz(
    app: Any,
    issue_token: Callable[[], str],
    *,
    max_examples: int,
    seed: int = 0,
    time_limit: float = 60.0,
) -> FuzzResult:
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    result = FuzzResult()
    token = [issue_token()]
    give_up = time.monotonic() + time_limit
    modes = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
    operations = [loaded.ok() for loaded in schema.get_all_operations()]
    result.operations = [operation.label for operation in operations]
    runs = [(operation, mode) for operation in operations for mode in modes]
    for done, (operation, mode) in enumerate(runs):
        label, kind = operation.label, mode.value
        # an equal share of the time left, and always the first case
        deadline = time.monotonic() + max(0.0, give_up - time.monotonic()) / (len(runs) - done)
        ran = [0]

        @hypothesis_seed(seed)
        @settings(
            max_examples=max_examples,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(generation_mode=mode))
        def run(case: Any) -> None:
            if ran[0] and time.monotonic() > deadline:  # noqa: B023 (run now)
                raise _OutOfTime
            ran[0] += 1  # noqa: B023
            result.per_operation[label] += 1  # noqa: B023
            _one(case, label, kind, token, issue_token, result)  # noqa: B023

        try:
            run()
        except _OutOfTime:
            result.skipped_operations.append(f"{label} ({kind}, partly)")
        except Exception as exc:  # Unsatisfiable: an operation without inputs to vary
            if type(exc).__name__ != "Unsatisfiable":
                raise
    return result


def _one(
    case: Any,
    label: str,
    mode: str,
    token: list[str],
    issue_token: Callable[[], str],
    result: FuzzResult,
) -> None:
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token[0]}"}
    result.cases += 1
    response = case.call()
    if response.status_code >= 500:
        result.server_errors += 1
    if case.method.upper() == "DELETE" and response.status_code == 204:
        token[0] = issue_token()
    try:
        case.validate_response(response)
    except BaseException as exc:  # a FailureGroup (an ExceptionGroup) of every failed check
        for failure in getattr(exc, "exceptions", [exc]):
            _count(failure, label, mode, response, case, result)


def _semantic(label: str, response: Any) -> bool:
    """A 422 for schema-valid input whose problem the document cannot express."""
    if label in SEMANTIC_422:
        return True
    words = SEMANTIC_422_WORDS.get(label, ())
    text = response.text if hasattr(response, "text") else ""
    return any(word in text for word in words)


def _count(
    failure: BaseException, label: str, mode: str, response: Any, case: Any, result: FuzzResult
) -> None:
    kind = type(failure).__name__
    if (
        kind == "RejectedPositiveData"
        and response.status_code == 422
        and _semantic(label, response)
    ):
        result.semantic += 1
        return
    if kind in SCHEMA_FAILURES:
        result.schema_violations += 1
    elif kind != "ServerError":  # 5xx are counted from the status itself
        result.other_failures += 1
    key = f"{mode} {label}: {kind} [{response.status_code}]"
    result.failures[key] += 1
    if key not in result.examples:
        body = response.text[:200] if hasattr(response, "text") else ""
        headers = {k: v for k, v in (case.headers or {}).items() if k != "Authorization"}
        result.examples[key] = f"{case.as_curl_command()[:400]} headers={headers!r:.200} -> {body}"
