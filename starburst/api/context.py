"""What every request handler may use: the store, the clock, the auth switch, the probes.

``ApiContext`` is built once by ``create_app`` and stored on ``app.state``; handlers reach it
through the ``Annotated`` dependencies in ``starburst.api.deps``, never through globals, so two
apps in one process (tests, a standby) never share state.

Terms:
- *caller*: the ``Principal`` a request acts as; with ``auth`` off it is ``anonymous``, an
  admin named ``local`` (the embedded single-machine default, where whoever can reach
  127.0.0.1 already owns the machine).
- *health probe*: a callable the controller supplies for ``/readyz``; it returns ``None``
  when this process is ready, else the reason it is not ("not leader", "database
  unavailable").
- *degraded probe*: a callable returning why this process, though ready, runs degraded (the
  cloud side cannot burst: "no cloud enabled in SkyPilot: run `sky check`"), else ``None``;
  ``/readyz`` reports it under ``cloud`` and stays 200.
- *job logs*: a callable returning the ``starburst.controller.job_output.JobLogs`` that reads job
  output through the backends (the controller's own in ``starburst server``; built on first
  use from the settings in ``starburst api``); None: this API serves no job output.
- *kube*: the checker of Kubernetes bearer tokens (``starburst.api.kubeauth``) when the
  ``kubernetes_auth`` setting is on, else None.
- *quote*: a callable returning the cloud port's ``quote`` (the burst's own price rule,
  which the savings counterfactual must reuse), or None when no cloud is configured.
- *wake*: what a successful write calls (``starburst server``: the controller's ``poke``,
  ``starburst.api.wake``), or None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starburst.api.kubeauth import KubernetesTokens
from starburst.api.submissions import SubmissionBatcher
from starburst.api.tokens import TokenCache
from starburst.core.ports import Clock, Store
from starburst.core.records import Principal, Role
from starburst.settings import Settings

HealthProbe = Callable[[], "str | None"]


@dataclass(frozen=True)
class ApiContext:
    settings: Settings
    store: Store
    clock: Clock
    auth: bool = True
    health: HealthProbe | None = None
    degraded: HealthProbe | None = None
    registry: Any = None
    prices: Any = None  # a starburst.pricing.PriceTable, loaded on first use when None
    job_logs: Callable[[], Any] | None = None
    quote: Callable[[], Any] | None = None  # returns the burst's quote function, or None
    #: group commit for submissions; ``create_app`` builds one
    submissions: SubmissionBatcher | None = None
    #: successful token lookups, trusted for a second (``starburst.api.tokens``)
    tokens: TokenCache = field(default_factory=TokenCache)
    #: Kubernetes bearer tokens, when ``kubernetes_auth`` is on (``starburst.api.kubeauth``)
    kube: KubernetesTokens | None = None
    #: called after a successful write (``starburst.api.wake``)
    wake: Callable[[], None] | None = None
    anonymous: Principal = field(
        default_factory=lambda: Principal(token_id=0, user="local", team=None, role=Role.ADMIN)
    )
