"""Settings: environment variables (``STARBURST_`` prefix) and an optional YAML file.

Precedence: explicit arguments > environment > the YAML file named by ``STARBURST_CONFIG`` (or
``--config``) > defaults. Defaults are the embedded single-machine set-up: SQLite, the local
cluster with a few GPU slots, and the emulated cloud, so ``starburst server`` runs anywhere.

Invalid values fail at start-up with one message per field (``SettingsError``), never later.
``scheduler_config()`` turns the policy knobs into the core's frozen ``SchedulerConfig``.
"""

from __future__ import annotations

import ipaddress
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from starburst.core import defaults
from starburst.core.account_names import ACCOUNT_NAME, MAX_ACCOUNT_NAME
from starburst.core.capacity import PlacementStrategy
from starburst.core.cycle import SchedulerConfig
from starburst.core.errors import ConfigError
from starburst.core.estimates import EstimateUse
from starburst.core.identity import Grant, IdentityMap
from starburst.core.job import Job
from starburst.core.ordering import QueueOrder
from starburst.core.policy import POLICIES, PolicyKind, WaitPolicy, calibrate
from starburst.core.price_ceilings import JobCeilings, job_ceilings
from starburst.core.records import Role
from starburst.core.submit_limits import SubmitLimits

if TYPE_CHECKING:
    from starburst.pricing import PriceTable

DEFAULT_STATE_DIR = Path.home() / ".local" / "share" / "starburst"
MAX_UID = 2**31 - 1
# the bounds of numeric settings: generous, but finite (the API's own limits where it has one)
HOUR, DAY, MONTH = 3600.0, 86400.0, 30 * 86400.0
MAX_RUNTIME_S = 10 * 365 * DAY
MAX_GPUS = 4096
MAX_COUNT = 1_000_000
MAX_BUDGET = 100.0
MAX_COEFFICIENT = 1e9
MAX_PRICE = 1e6  # $/GPU-hour
MAX_CEILING = 1e9  # $/h
Ceiling = Annotated[float, Field(gt=0, le=MAX_CEILING, allow_inf_nan=False)]  # $/h


AccountName = Annotated[str, Field(min_length=1, max_length=MAX_ACCOUNT_NAME, pattern=ACCOUNT_NAME)]


class SettingsError(ConfigError):
    """Settings that cannot work; the message lists every bad field."""


class KubernetesGrant(BaseModel):
    """What a Kubernetes user or group becomes in Starburst (``core.identity.Grant``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: AccountName | None = Field(
        default=None, description="The Starburst user name (user grants only)."
    )
    team: AccountName | None = Field(default=None, description="The Starburst team.")
    role: Literal["admin", "user", "finance"] | None = Field(
        default=None, description="The Starburst role."
    )

    def grant(self) -> Grant:
        return Grant(self.user, self.team, Role(self.role) if self.role else None)


class StoreSettings(BaseModel):
    """Where Starburst keeps its state: the database and the state directory."""

    database_url: str = Field(
        default=f"sqlite:///{DEFAULT_STATE_DIR / 'starburst.db'}",
        description="SQLAlchemy URL; PostgreSQL in deployments, SQLite for one machine.",
    )
    state_dir: Path = Field(
        default=DEFAULT_STATE_DIR, description="Logs and work files of the local backends."
    )

    @field_validator("database_url")
    @classmethod
    def _url_has_a_scheme(cls, value: str) -> str:
        if "://" not in value:
            raise ValueError("must be a URL such as sqlite:///path.db or postgresql://host/db")
        return value


class ClusterSettings(BaseModel):
    """The on-prem cluster: the local one (GPU slots, job uids, work dirs, output) or Kubernetes."""

    cluster: Literal["local", "kubernetes"] = "local"
    local_gpus: int = Field(
        default=4, ge=0, le=MAX_GPUS, description="GPU slots of the local cluster (≤ 4096)."
    )
    local_gpu_type: str = "gpu"
    local_job_uids: str = Field(
        default="60000-60999",
        description="When the controller runs as root, every running local job (and "
        "emulated burst) runs as a uid and gid of its own from this range (first-last; no "
        "account or group may use one), given back when it ends; empty: jobs run as the "
        "controller's own user (refused with auth on unless allow_shared_uid_jobs).",
    )
    allow_shared_uid_jobs: bool = Field(
        default=False,
        description="Start although auth is on and local jobs would run as the "
        "controller's own uid (they could read its state directory); logged as a warning.",
    )
    local_work_dir: Path = Field(
        default=Path(tempfile.gettempdir()) / "starburst-jobs",
        description="Where jobs with a uid of their own get their private working directories.",
    )
    local_job_output_max_mb: int = Field(
        default=100,
        ge=1,
        le=1_000_000,
        description="The most output (stdout and stderr, MiB) a local job or emulated burst "
        "keeps in its log; beyond it the output is dropped, with a line where it was cut.",
    )
    kubeconfig: str | None = Field(default=None, description="Kubeconfig (in-cluster if unset).")
    kubernetes_namespace_teams: dict[str, list[str]] = Field(
        default_factory=dict,
        description="The teams a kubectl Job may name with the label starburst.io/team, per "
        'namespace (e.g. {"research": ["ml", "vision"]}); a Job is otherwise in the team of '
        "its namespace's name, and a label naming another team is ignored with an Event.",
    )

    @field_validator("local_job_uids")
    @classmethod
    def _uid_range(cls, value: str) -> str:
        if not value.strip():
            return ""
        first, last = parse_uid_range(value)
        return f"{first}-{last}"

    def job_uid_range(self) -> tuple[int, int] | None:
        """``local_job_uids`` as (first, last); None when it is empty."""
        return parse_uid_range(self.local_job_uids) if self.local_job_uids else None


class CloudSettings(BaseModel):
    """The cloud jobs burst to: the backend, its prices, spot, SkyPilot's API server."""

    cloud: Literal["emulated", "skypilot", "none"] = "emulated"
    price_table: Path | None = Field(default=None, description="YAML price table override.")
    use_spot: bool = Field(
        default=False,
        description="Burst on spot GPUs unless a job says "
        "otherwise (extra use_spot); SkyPilot managed jobs recover them.",
    )
    skypilot_api_server: str | None = Field(
        default=None,
        description="URL of the SkyPilot API server (http[s]://host[:port]); "
        "basic-auth credentials may be inline (https://user:pass@host).",
    )
    skypilot_api_token: SecretStr | None = Field(
        default=None,
        description="SkyPilot service-account token (sky_...), e.g. from a "
        "Secret through STARBURST_SKYPILOT_API_TOKEN.",
    )
    skypilot_api_token_file: Path | None = Field(
        default=None, description="File holding that token (a mounted Secret); read at start."
    )

    @field_validator("skypilot_api_server")
    @classmethod
    def _endpoint_is_http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL of a SkyPilot API server")
        return value

    @model_validator(mode="after")
    def _token_is_readable(self) -> Self:
        self.skypilot_token()
        return self

    def skypilot_token(self) -> str | None:
        """The service-account token: the setting, else the file's first line (checked)."""
        token = self.skypilot_api_token.get_secret_value() if self.skypilot_api_token else None
        source = "skypilot_api_token"
        if token is None and self.skypilot_api_token_file is not None:
            source = f"skypilot_api_token_file {self.skypilot_api_token_file}"
            try:
                token = self.skypilot_api_token_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ValueError(f"{source}: cannot read it ({exc.strerror})") from None
        if token is not None and not token.startswith("sky_"):
            raise ValueError(f"{source}: a SkyPilot service-account token starts with sky_")
        return token

    def price_list(self) -> PriceTable:
        """The price table in force: the admin's ``price_table``, else the shipped one."""
        from starburst.pricing import default_price_table, load_price_table

        return load_price_table(self.price_table) if self.price_table else default_price_table()


class PolicySettings(BaseModel):
    """The scheduling policy: Compute-Wait and its budget, out of order, the queue cap, the order,
    placement, and the runtime estimates budgets are computed from."""

    policy: PolicyKind = defaults.POLICY
    budget: float = Field(
        default=defaults.BUDGET, ge=0, le=MAX_BUDGET, description="Waiting budget b (0–100)."
    )
    coefficient: float | None = Field(
        default=None, ge=0, le=MAX_COEFFICIENT, description="Overrides the budget (≤ 1e9)."
    )
    out_of_order: bool = defaults.OUT_OF_ORDER
    estimate: EstimateUse = Field(
        default=EstimateUse.P50,
        description="Runtime estimate runtime and compute budgets use: p50, p70, p80, p90 or "
        "mean (starburst tune chooses it).",
    )
    queue_cap: int | None = Field(default=defaults.QUEUE_CAP, ge=0, le=MAX_COUNT)
    order: QueueOrder = defaults.ORDER
    placement: PlacementStrategy = defaults.PLACEMENT
    default_runtime_s: float = Field(
        default=3600.0,
        gt=0,
        le=MAX_RUNTIME_S,
        description="Prior runtime before any history exists (≤ ten years).",
    )
    model_path: Path | None = Field(
        default=None, description="Runtime model artifact (predictor train)."
    )
    calibration_window: int = Field(
        default=1000, ge=1, le=MAX_COUNT, description="Recent jobs the coefficient is fitted on."
    )

    def scheduler_config(self, reference: Sequence[Job] = ()) -> SchedulerConfig:
        """The core config; the coefficient is explicit or calibrated on ``reference`` jobs."""
        if self.coefficient is not None:
            coefficient = self.coefficient
        elif POLICIES[self.policy].reference_free:
            coefficient = calibrate(self.policy, self.budget, [])
        elif reference:
            coefficient = calibrate(self.policy, self.budget, reference)
        else:  # cold start: a job like the prior gets b × its runtime
            prior = Job("prior", 0.0, 1, runtime=self.default_runtime_s)
            coefficient = calibrate(self.policy, self.budget, [prior])
        return SchedulerConfig(
            WaitPolicy(self.policy, coefficient, estimate=self.estimate),
            self.out_of_order,
            self.queue_cap,
            self.order,
            self.placement,
        )


class SpendSettings(BaseModel):
    """Money: on-prem showback rates, budget alerts and their webhook, and the ceilings on cloud
    spend."""

    onprem_rates: dict[str, float] = Field(
        default_factory=dict,
        description="Internal price of on-prem GPUs for showback, "
        '$/GPU-hour per GPU type (\'*\': any other type), e.g. {"A100": 1.1, "*": 0.6}.',
    )
    budget_alerts: list[float] = Field(
        default_factory=lambda: [0.8, 1.0],
        description="Budget shares (0.8 = 80%) that "
        "raise an alert once per month per team: a log line, a metric, a Kubernetes Event.",
    )
    budget_webhook: str | None = Field(
        default=None,
        description="URL that budget alerts are POSTed to as JSON (no redirects followed; "
        "an internal address is refused unless in budget_webhook_allow).",
    )
    budget_webhook_allow: list[str] = Field(
        default_factory=list,
        description="Host names or networks (10.0.0.0/8) the budget webhook may reach "
        "although they are loopback, link-local or private.",
    )
    max_job_cloud_price: float | None = Field(
        default=None,
        gt=0,
        le=MAX_CEILING,
        allow_inf_nan=False,
        description="Ceiling on one job's cloud "
        "$/h: a submission whose cheapest cloud quote is above it is refused (422), and a "
        "Kubernetes Job above it waits on-prem. Unset: one full node of the dearest GPU type "
        "in the price table ($55.04/h, 8 x H100, with the shipped table).",
    )
    team_job_cloud_price: dict[str, Ceiling] = Field(
        default_factory=dict,
        description="Per-team ceilings on one job's cloud $/h, over max_job_cloud_price "
        '(e.g. {"ml": 500} lets team ml burst jobs of up to $500/h).',
    )
    no_team_cloud_budget: float = Field(
        default=100.0,
        ge=0,
        le=MAX_CEILING,
        allow_inf_nan=False,
        description="Monthly cloud budget (USD) shared by users with no team; once spent, "
        "their jobs wait on-prem. 0: users with no team never burst.",
    )
    max_team_cloud_price: float | None = Field(
        default=None,
        gt=0,
        le=MAX_CEILING,
        allow_inf_nan=False,
        description="Ceiling on a team's cloud $/h: "
        "its jobs in the cloud now plus the new job's quote; above it, refused (422).",
    )

    @field_validator("onprem_rates")
    @classmethod
    def _rates_not_negative(cls, value: dict[str, float]) -> dict[str, float]:
        bad = [k for k, v in value.items() if not 0 <= v <= MAX_PRICE]
        if bad:
            raise ValueError(f"the rate of {bad[0]!r} is not from 0 to {MAX_PRICE:g} $/GPU-hour")
        return value

    @field_validator("budget_alerts")
    @classmethod
    def _shares(cls, value: list[float]) -> list[float]:
        if any(not 0 < v <= MAX_BUDGET for v in value):
            raise ValueError("alert thresholds are shares of a budget above 0 and up to 100")
        return sorted(set(value))

    @field_validator("budget_webhook")
    @classmethod
    def _webhook_is_http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _webhook_not_internal(self) -> Self:
        from starburst.webhook_targets import WebhookRefused, check_url

        if self.budget_webhook is not None:
            try:
                check_url(self.budget_webhook, self.budget_webhook_allow)
            except WebhookRefused as exc:
                raise ValueError(str(exc)) from None
        return self

    def job_ceilings(self, prices: PriceTable) -> JobCeilings:
        """The per-job cloud $/h ceilings (``core.price_ceilings``), the default from ``prices``."""
        node = prices.dearest_node()
        return job_ceilings(
            setting=self.max_job_cloud_price,
            per_team=self.team_job_cloud_price,
            dearest=(node.price_per_hour, node.shape) if node is not None else None,
        )


class ApiSettings(BaseModel):
    """The REST API: where it listens, who may call it (tokens, Kubernetes identities), and what one
    user or team may pile up (0: no limit)."""

    api_host: str = "127.0.0.1"
    api_port: int = Field(default=8080, ge=0, le=65535)
    api_reuse_port: bool = Field(
        default=False,
        description="Let several processes of this user on one machine listen on api_port "
        "together (SO_REUSEPORT: the kernel spreads new connections over them), so "
        "`starburst api` run twice serves on both cores, and a new process can start "
        "before the old one stops.",
    )
    auth: bool = Field(
        default=False,
        description="Require bearer tokens (off for the "
        "single-machine default, which listens on 127.0.0.1 only).",
    )
    kubernetes_auth: bool = Field(
        default=False,
        description="Also accept Kubernetes bearer tokens (needs auth): each is checked "
        "with a TokenReview on the cluster's API server (kubeconfig, else in-cluster) and "
        "mapped by kubernetes_auth_users and kubernetes_auth_groups; Starburst's own tokens "
        "keep working.",
    )
    kubernetes_auth_groups: dict[str, KubernetesGrant] = Field(
        default_factory=dict,
        description="Kubernetes groups → Starburst team and role, e.g. "
        '{"ml-team": {"team": "ml", "role": "user"}, "starburst-admins": {"role": "admin"}}; '
        "the highest role of a caller's groups wins, the team of the first group listed. "
        "An identity no user or group grant names is refused (403); map "
        "system:authenticated to admit every one.",
    )
    kubernetes_auth_users: dict[str, KubernetesGrant] = Field(
        default_factory=dict,
        description="Kubernetes user names → Starburst user, team and role, over its "
        'groups\' grants, e.g. {"system:serviceaccount:ml:trainer": {"user": "trainer", '
        '"team": "ml"}}; otherwise the Kubernetes name is the user name, each : written .',
    )
    kubernetes_auth_audiences: list[str] = Field(
        default_factory=list,
        description="Audiences a Kubernetes token must be meant for (TokenReview "
        "spec.audiences); empty: the API server's own.",
    )
    kubernetes_auth_cache_s: float = Field(
        default=10.0,
        ge=0,
        le=HOUR,
        description="How long the API trusts a TokenReview's answer, a refusal included "
        "(seconds, at most an hour; 0: review every request). A deleted ServiceAccount's "
        "token keeps working for up to this long.",
    )
    allow_insecure_no_auth: bool = Field(
        default=False,
        description="Allow auth: false on an api_host other than loopback "
        "(every caller is then admin and can run commands through the local cluster).",
    )
    max_waiting_jobs_per_user: int = Field(
        default=10_000,
        ge=0,
        le=MAX_COUNT,
        description="Jobs one user may have waiting (submitted or queued); past it a "
        "submission is refused with 429 until some have started.",
    )
    max_waiting_jobs_per_team: int = Field(
        default=20_000, ge=0, le=MAX_COUNT, description="The same for a whole team."
    )
    max_array_size: int = Field(
        default=10_000,
        ge=0,
        le=MAX_COUNT,
        description="Elements one job array may have (422 past it).",
    )
    max_dependency_depth: int = Field(
        default=100,
        ge=0,
        le=MAX_COUNT,
        description="Longest chain of unfinished jobs a new job may wait at the end of "
        "(--after; 422 past it).",
    )

    @model_validator(mode="after")
    def _auth_off_only_on_loopback(self) -> Self:
        if not self.auth and not is_loopback(self.api_host) and not self.allow_insecure_no_auth:
            raise ValueError(
                f"auth is off but api_host {self.api_host!r} is not a loopback address: every "
                "caller would be admin (and could run commands on this machine). Turn auth "
                "on, listen on 127.0.0.1, or set allow_insecure_no_auth: true to accept that"
            )
        return self

    @field_validator("kubernetes_auth_groups")
    @classmethod
    def _groups_name_no_user(cls, value: dict[str, KubernetesGrant]) -> dict[str, KubernetesGrant]:
        named = [g for g, grant in value.items() if grant.user is not None]
        if named:
            raise ValueError(
                f"group {named[0]!r}: a group grant names a team and a role, not a user"
            )
        return value

    @model_validator(mode="after")
    def _kubernetes_auth_needs_auth(self) -> Self:
        if self.kubernetes_auth and not self.auth:
            raise ValueError(
                "kubernetes_auth needs auth: true (with auth off every caller is already admin)"
            )
        return self

    def identity_map(self) -> IdentityMap:
        """The Kubernetes user and group grants as the core's ``IdentityMap``."""
        return IdentityMap(
            users={name: g.grant() for name, g in self.kubernetes_auth_users.items()},
            groups={name: g.grant() for name, g in self.kubernetes_auth_groups.items()},
        )

    def insecure_no_auth(self) -> bool:
        """True when the API is open to other machines without authentication."""
        return not self.auth and not is_loopback(self.api_host)

    def submit_limits(self) -> SubmitLimits:
        """The submission limits as the core's ``SubmitLimits``."""
        return SubmitLimits(
            waiting_per_user=self.max_waiting_jobs_per_user,
            waiting_per_team=self.max_waiting_jobs_per_team,
            array_size=self.max_array_size,
            dependency_depth=self.max_dependency_depth,
        )


class ControllerSettings(BaseModel):
    """The controller process: how often its periodic work runs (bounded, so a typo like 1e308 is
    refused rather than never running the work), its log format, and leadership among replicas."""

    pass_interval_s: float = Field(default=2.0, gt=0, le=HOUR, description="At most an hour.")
    recalibrate_interval_s: float = Field(
        default=600.0, gt=0, le=MONTH, description="At most 30 days."
    )
    retrain_interval_s: float = Field(
        default=3600.0, gt=0, le=MONTH, description="At most 30 days."
    )
    log_format: Literal["json", "text"] = "json"
    leader_name: str = "controller"
    leader_election: Literal["store", "lease"] = Field(
        default="store",
        description="Who elects the leader among replicas: the database's "
        "lock, or a Kubernetes Lease (replicas in the cluster; fencing stays in the database).",
    )
    lease_namespace: str = Field(default="default", description="Namespace of the Lease.")
    lease_duration_s: float = Field(
        default=15.0,
        ge=1.0,
        le=HOUR,
        description="A dead leader is replaced within this long (1 s to an hour).",
    )


class Settings(
    ControllerSettings,
    ApiSettings,
    SpendSettings,
    PolicySettings,
    CloudSettings,
    ClusterSettings,
    StoreSettings,
    BaseSettings,
):
    """Every setting, grouped by concern (one class per group above, in this order in the
    reference); each is read as ``STARBURST_<NAME>`` whatever its group."""

    model_config = SettingsConfigDict(
        env_prefix="STARBURST_", extra="forbid", validate_default=True, allow_inf_nan=False
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, values: Any) -> Any:
        if isinstance(values, dict) and "local_run_as" in values:
            raise ValueError(
                "local_run_as is gone: every local job now runs as a uid of its own from "
                "local_job_uids (e.g. 60000-60999)"
            )
        return values


def parse_uid_range(text: str) -> tuple[int, int]:
    """``"60000-60999"`` (or one uid, ``"60000"``) as (first, last); ``ValueError`` otherwise."""
    first, dash, last = text.strip().partition("-")
    try:
        low, high = int(first), int(last if dash else first)
    except ValueError:
        raise ValueError(f"{text!r} is not a uid range such as 60000-60999") from None
    if not 1 <= low <= high <= MAX_UID:
        raise ValueError(f"{text!r}: uids from 1 to {MAX_UID}, the first not above the last")
    return low, high


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Settings from the YAML file, the environment and ``overrides``, validated."""
    import os

    import yaml

    path = config_file or (
        Path(os.environ["STARBURST_CONFIG"]) if os.environ.get("STARBURST_CONFIG") else None
    )
    file_values: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise SettingsError(f"{path}: no such settings file") from None
        except yaml.YAMLError as exc:
            raise SettingsError(f"{path}: not valid YAML: {exc}") from None
        if not isinstance(loaded, dict):
            raise SettingsError(f"{path}: expected a mapping of setting: value")
        file_values = {k.replace("-", "_"): v for k, v in loaded.items()}
    env_set = {
        k.removeprefix("STARBURST_").lower() for k in os.environ if k.startswith("STARBURST_")
    }
    values = {k: v for k, v in file_values.items() if k not in env_set}
    values.update({k: v for k, v in overrides.items() if v is not None})
    if "STARBURST_LOCAL_RUN_AS" in os.environ:  # refused like the file's key, not ignored
        values["local_run_as"] = os.environ["STARBURST_LOCAL_RUN_AS"]
    try:
        return Settings(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}"
            for err in exc.errors()
        )
        where = f" (from {path} and STARBURST_* variables)" if path else ""
        raise SettingsError(f"invalid settings{where}: {problems}") from None


#: The groups of ``Settings``, in the order the reference lists them.
SETTINGS_GROUPS: tuple[type[BaseModel], ...] = (
    StoreSettings,
    ClusterSettings,
    CloudSettings,
    PolicySettings,
    SpendSettings,
    ApiSettings,
    ControllerSettings,
)
