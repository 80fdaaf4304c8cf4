"""Savings: what the jobs that ended in a range cost against bursting every one of them at
once (No-Wait), read from the ledger and priced by the burst's own rule.

Terms:
- *actual*: each job's cloud money in the ledger (all its launches, provisioning included).
- *No-Wait counterfactual*: a job that ran in the cloud costs under No-Wait what its launches
  cost (the same quote, the same billed time: its ledger entries). A job that ran on-prem
  costs its runtime at the price its burst would have had: the cloud port's ``quote`` (the
  same default GPU type, cheapest offer and multi-node shape), i.e. the cloud value of its
  on-prem GPU-hours. Start-up delays are not added, so the savings are never overstated.
- *unpriced*: a job left out of both sides, with why (it never ran; no price for its GPUs;
  it was billed in another currency than the prices').

Invariant: with no Star-Wait stints, saved = Σ cloud value of on-prem runs ≥ 0. The API
(``/v1/costs/savings``), the dashboard and the quick-start all call ``compare_with_no_wait``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from starburst.core.billing import per_currency
from starburst.core.errors import ConfigError, PermanentError, TransientError
from starburst.core.job import Job
from starburst.core.ports import Ledger, Quote
from starburst.core.records import StoredJob

Quoter = Callable[[Job], Quote]


@dataclass(frozen=True, slots=True)
class Unpriced:
    job: str
    reason: str


@dataclass
class SavingsFigures:
    currency: str = "USD"
    jobs: int = 0
    burst_jobs: int = 0
    onprem_jobs: int = 0
    gpu_hours: float = 0.0
    onprem_gpu_hours: float = 0.0
    onprem_cloud_value: Decimal = Decimal(0)
    actual: Decimal = Decimal(0)
    no_wait: Decimal = Decimal(0)
    unpriced: list[Unpriced] = field(default_factory=list)


def no_wait(
    ended: Sequence[StoredJob],
    costs: Mapping[str, Mapping[str, Decimal]],
    quote: Quoter | None,
    currency: str = "USD",
) -> SavingsFigures:
    """The No-Wait counterfactual of ``ended`` jobs (see the module terms) in ``currency``
    (the price table's); ``costs``: each job's cloud money from the ledger per currency. A
    job billed in another currency is unpriced: amounts are never converted."""
    out = SavingsFigures(currency=currency)
    for stored in ended:
        spent = costs.get(stored.id, {})
        other = sorted(c for c, amount in spent.items() if c != currency and amount)
        why = (
            f"billed in {', '.join(other)}; savings are in {currency}"
            if other
            else _count(out, stored, spent.get(currency, Decimal(0)), quote)
        )
        if why is not None:
            out.unpriced.append(Unpriced(stored.id, why))
    return out


def _count(
    out: SavingsFigures, stored: StoredJob, actual: Decimal, quote: Quoter | None
) -> str | None:
    """Add one job to ``out``; returns why it cannot be counted, else None."""
    job = stored.job
    runtime = (
        (stored.ended_at or 0.0) - (stored.started_at or 0.0)
        if stored.started_at is not None
        else 0.0
    )
    if stored.ran_on == "cloud" or (stored.ran_on is None and actual > 0):
        out.jobs, out.burst_jobs = out.jobs + 1, out.burst_jobs + 1
        out.actual += actual
        out.no_wait += actual  # it burst: No-Wait runs the same launch, billed the same
        out.gpu_hours += job.gpus * runtime / 3600
        return None
    if stored.ran_on != "onprem" or stored.started_at is None:
        return f"never ran ({stored.state.value} before starting): no runtime to price"
    if quote is None:
        return "no cloud is configured, so there is no burst price to compare with"
    try:
        price = quote(job).price_per_hour
    except (PermanentError, TransientError, ConfigError) as exc:
        return f"no burst price: {exc}"
    value = Decimal(str(price)) * Decimal(str(runtime)) / Decimal(3600)
    out.jobs, out.onprem_jobs = out.jobs + 1, out.onprem_jobs + 1
    out.actual += actual  # e.g. a Star-Wait cloud stint before it ran on-prem
    out.no_wait += value
    out.onprem_cloud_value += value
    out.gpu_hours += job.gpus * runtime / 3600
    out.onprem_gpu_hours += job.gpus * runtime / 3600
    return None


def fraction_saved(figures: SavingsFigures) -> float | None:
    if figures.no_wait <= 0:
        return None
    return float(1 - figures.actual / figures.no_wait)


def compare_with_no_wait(
    ledger: Ledger, since: float, until: float, quote: Quoter | None
) -> SavingsFigures:
    """The savings of the jobs that ended in ``[since, until)``, read from ``ledger``."""
    ended = ledger.ended_jobs(since, until)
    by_job = ledger.job_costs(s.id for s in ended)
    return no_wait(ended, {j: per_currency(c) for j, c in by_job.items()}, quote)
