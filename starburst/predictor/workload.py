"""A synthetic GPU workload with learnable runtime structure, to train and judge the predictor.

The public traces (Philly, Helios) cannot be downloaded here, and the paper's generator draws
runtimes independently of everything a predictor could see. This generator instead builds a
population whose runtimes depend on what is known at submit time, the way real clusters do:

- **Teams** (``team-00`` …) each use a small set of container images.
- **Users** belong to a team, submit at different rates (a Zipf-like activity weight), have a
  personal runtime habit (log-normal factor, σ = 0.3) and some join late (cold start: a quarter
  of the users appear uniformly during the trace).
- **Projects**: each user works on 1–5 projects. A project is a model (``resnet50``,
  ``llama-7b`` …, each with a per-epoch time and a typical GPU count — bigger models run longer
  *and* ask for more GPUs), a kind (``debug`` ×0.05, ``eval`` ×0.2, ``finetune`` ×0.6, ``train``
  ×1, ``pretrain`` ×3), a dataset, a GPU type (V100 ×1.6, A100 ×1, H100 ×0.7, T4 ×2.5 slower or
  faster) and an image from the user's team. The job name is ``{model}-{kind}-{dataset}-{n}``;
  the command is ``python {kind}.py --model {model} --data {dataset} --epochs {e} --bs {b}``.
- **Runtime** (seconds) = per-epoch time × epochs × kind × GPU-type factor × user habit ×
  time-of-day factor (submitted 18:00–24:00: ×1.5, overnight runs; weekends ×1.3) × drift ×
  log-normal noise (σ = ``noise``), and a ``crash_share`` of jobs die early (×U(0.01, 0.2)).
  Clipped to [30 s, 7 days].
- **Drift**: every model's runtime drifts by exp(N(0, 0.25) × t / 30 days) (datasets and models
  grow or get optimised), so a model trained on the past is slightly stale on the future.
- **Declared estimates**: a ``declare_share`` of users state a runtime for 90% of their jobs,
  usually an over-estimate (true × exp(N(0.8, 0.6)), rounded *up* to a ladder of round values
  15 min … 7 days) — what users type into Slurm's ``--time``.
- **Arrivals**: Poisson at ``jobs_per_hour`` on average, modulated by time of day (busier in
  office hours) and quieter at weekends. Time 0 is a Monday 00:00 UTC (``features.calendar``).

Invariants: the same ``WorkloadSpec`` (seed included) always gives the same jobs; job ids are
``job-000000`` … in submit order; every job has a true ``runtime`` and no ``estimate`` (the
declared value sits in ``extra["declared_runtime"]``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from starburst.core.job import Job
from starburst.predictor.features import calendar

#: model → (seconds per epoch on an A100, typical GPU count).
MODELS: dict[str, tuple[float, int]] = {
    "mnist-cnn": (20.0, 1),
    "resnet18": (90.0, 1),
    "unet": (150.0, 1),
    "t5-small": (200.0, 1),
    "resnet50": (300.0, 2),
    "bert-base": (400.0, 2),
    "whisper-small": (500.0, 2),
    "vit-large": (700.0, 4),
    "gpt2-medium": (900.0, 4),
    "bert-large": (800.0, 4),
    "llama-7b": (1500.0, 8),
    "sd-xl": (1200.0, 8),
}
KINDS: dict[str, float] = {
    "debug": 0.05,
    "eval": 0.2,
    "finetune": 0.6,
    "train": 1.0,
    "pretrain": 3.0,
}
GPU_TYPES: dict[str, float] = {"A100": 1.0, "V100": 1.6, "H100": 0.7, "T4": 2.5}
DATASETS = ("imagenet", "coco", "squad", "wiki", "c4", "librispeech", "cifar10", "laion")
FRAMEWORKS = (
    "pytorch:2.1-cuda12",
    "pytorch:1.13-cuda11",
    "tensorflow:2.14-gpu",
    "jax:0.4-cuda12",
    "deepspeed:0.12",
    "megatron:23.10",
)
EPOCHS = (1, 2, 3, 5, 10, 20, 30, 50)
DECLARE_LADDER = tuple(h * 3600.0 for h in (0.25, 0.5, 1, 2, 4, 8, 12, 24, 48, 72, 168))


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """Size and character of a synthetic workload; see the module docstring."""

    jobs: int = 10_000
    users: int = 120
    teams: int = 12
    jobs_per_hour: float = 12.0
    noise: float = 0.35
    crash_share: float = 0.03
    declare_share: float = 0.3
    drift: float = 0.25
    seed: int = 0


@dataclass(frozen=True, slots=True)
class _Project:
    model: str
    kind: str
    dataset: str
    gpu_type: str
    image: str
    gpus: int
    epochs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _User:
    name: str
    team: str
    habit: float
    joins_at: float
    declares: bool
    projects: tuple[_Project, ...]


def generate(spec: WorkloadSpec) -> list[Job]:
    """The jobs of a synthetic workload, in submit order (deterministic for a spec)."""
    rng = np.random.default_rng(spec.seed)
    submit = _arrivals(spec, rng)
    span = float(submit[-1]) if len(submit) else 0.0
    users = _population(spec, rng, span)
    who = _choose_users(rng, users, submit)
    drift = {m: rng.normal(0.0, spec.drift) for m in MODELS}
    hours, weekdays = calendar(submit)
    noise = np.exp(rng.normal(0.0, spec.noise, len(submit)))
    crash = np.where(
        rng.random(len(submit)) < spec.crash_share, rng.uniform(0.01, 0.2, len(submit)), 1.0
    )
    clock = np.where(hours >= 18, 1.5, 1.0) * np.where(weekdays >= 5, 1.3, 1.0)
    jobs: list[Job] = []
    for i, t in enumerate(submit.tolist()):
        user = users[who[i]]
        proj = user.projects[int(rng.integers(len(user.projects)))]
        epochs = int(rng.choice(proj.epochs))
        runtime = (
            MODELS[proj.model][0]
            * epochs
            * KINDS[proj.kind]
            * GPU_TYPES[proj.gpu_type]
            * user.habit
            * math.exp(drift[proj.model] * t / (30 * 86400.0))
        )
        runtime *= float(clock[i] * noise[i] * crash[i])
        runtime = min(max(runtime, 30.0), 7 * 86400.0)
        jobs.append(_job(i, t, runtime, user, proj, epochs, rng))
    return jobs


def _choose_users(
    rng: np.random.Generator, users: Sequence[_User], submit: np.ndarray
) -> list[int]:
    """Who submits each job: Zipf-like activity, among users who have joined by then."""
    weights = 1.0 / np.arange(1, len(users) + 1) ** 0.8
    weights /= weights.sum()
    joins = np.array([u.joins_at for u in users])
    who = rng.choice(len(users), size=len(submit), p=weights)
    late = joins[who] > submit
    while late.any():
        who[late] = rng.choice(len(users), size=int(late.sum()), p=weights)
        late = joins[who] > submit
    return [int(w) for w in who]


def _job(
    i: int,
    t: float,
    runtime: float,
    user: _User,
    proj: _Project,
    epochs: int,
    rng: np.random.Generator,
) -> Job:
    extra = {
        "image": proj.image,
        "command": (
            f"python {proj.kind}.py --model {proj.model} --data {proj.dataset} "
            f"--epochs {epochs} --bs {int(rng.choice((16, 32, 64, 128)))}"
        ),
    }
    if user.declares and rng.random() < 0.9:
        guess = runtime * math.exp(rng.normal(0.8, 0.6))
        extra["declared_runtime"] = str(
            next((v for v in DECLARE_LADDER if v >= guess), DECLARE_LADDER[-1])
        )
    return Job(
        id=f"job-{i:06d}",
        submit_time=t,
        gpus=proj.gpus,
        cpus=float(proj.gpus * 8),
        memory_mb=float(proj.gpus * 32_768),
        gpu_type=proj.gpu_type,
        runtime=runtime,
        user=user.name,
        team=user.team,
        name=f"{proj.model}-{proj.kind}-{proj.dataset}-{int(rng.integers(1000)):03d}",
        extra=extra,
    )


def _arrivals(spec: WorkloadSpec, rng: np.random.Generator) -> np.ndarray:
    """Poisson arrivals by thinning, busier in office hours and quieter at weekends."""
    peak = 2.0 * spec.jobs_per_hour / 3600.0
    out: list[float] = []
    t = 0.0
    while len(out) < spec.jobs:
        t += rng.exponential(1.0 / peak)
        hour = (t / 3600.0) % 24
        weekend = (t // 86400) % 7 >= 5
        level = 0.5 + 0.5 * math.exp(-(((hour - 14.0) / 5.0) ** 2))
        if weekend:
            level *= 0.5
        if rng.random() < level:
            out.append(t)
    return np.asarray(out, dtype=float)


def _population(spec: WorkloadSpec, rng: np.random.Generator, span: float) -> list[_User]:
    team_images = [
        [f"registry.local/team-{k:02d}/{rng.choice(FRAMEWORKS)}" for _ in range(2)]
        for k in range(spec.teams)
    ]
    users: list[_User] = []
    for u in range(spec.users):
        team = int(rng.integers(spec.teams))
        projects = tuple(_project(rng, team_images[team]) for _ in range(int(rng.integers(1, 6))))
        late = rng.random() < 0.25 and u > 0  # user-000 is always there from the start
        joins = float(rng.uniform(0.0, span)) if late else 0.0
        users.append(
            _User(
                name=f"user-{u:03d}",
                team=f"team-{team:02d}",
                habit=math.exp(rng.normal(0.0, 0.3)),
                joins_at=joins,
                declares=bool(rng.random() < spec.declare_share),
                projects=projects,
            )
        )
    return users


def _project(rng: np.random.Generator, images: Sequence[str]) -> _Project:
    model = str(rng.choice(list(MODELS)))
    typical = MODELS[model][1]
    gpus = int(min(8, max(1, typical * 2 ** int(rng.integers(-1, 2)))))
    start = int(rng.integers(0, len(EPOCHS) - 2))
    return _Project(
        model=model,
        kind=str(rng.choice(list(KINDS), p=[0.1, 0.15, 0.3, 0.35, 0.1])),
        dataset=str(rng.choice(DATASETS)),
        gpu_type=str(rng.choice(list(GPU_TYPES))),
        image=str(rng.choice(images)),
        gpus=gpus,
        epochs=EPOCHS[start : start + 3],
    )


def write_trace(jobs: Sequence[Job], path: str | Path) -> Path:
    """Write jobs as a trace CSV in the project's format (``starburst.sim.trace``).

    ``image``, ``command`` and ``declared_runtime`` become extra columns, which
    ``load_trace`` carries back into ``Job.extra``.
    """
    from starburst.sim.trace import write_trace as write_csv

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(jobs, out)
    return out
