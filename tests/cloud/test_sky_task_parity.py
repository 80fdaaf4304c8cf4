"""A SkyPilot task file means to Starburst what it means to SkyPilot (issue 34, item 5): the
same YAML parsed by SkyPilot's own parser (``sky.Task.from_yaml_config``, the installed SDK,
offline) and by ``starburst.cli.jobfile`` gives the same resources, envs, name, image, and a
command that prints what SkyPilot's ``setup`` then ``run`` print under bash.

Importing ``sky`` takes seconds and emits its own deprecation warnings; it happens once, in
the fixture below, with those warnings silenced.
"""

from __future__ import annotations

import os
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from starburst.cli import jobfile

TASKS = {
    "gpu": """\
name: resnet
resources:
  accelerators: A100:2
  cpus: 8+
  memory: 32+
  image_id: docker:pytorch/pytorch:2.4
envs:
  SEED: 7
  HF_TOKEN: hf_abcdef
setup: |
  deps=(torch numpy)
  echo "setup ${#deps[@]}"
run: |
  echo "seed $SEED token ${HF_TOKEN:0:3}"
""",
    "cpu": """\
name: prep
resources:
  cpus: 4
envs:
  N: 3
run: |
  for ((i = 0; i < N; i++)); do echo "row $i"; done
""",
    "accelerator map": """\
resources:
  accelerators: {H100: 8}
run: echo big
""",
    "run only": "run: echo ${PWD:0:1}\n",
}


@pytest.fixture(scope="module")
def sky() -> Iterator[ModuleType]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import sky as real_sky

        yield real_sky


def _amount(text: Any, scale: float) -> float:
    return 0.0 if text is None else float(str(text).rstrip("+")) * scale


def _bash(script: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        ["bash", "-c", script], env={**os.environ, **env}, cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("name", sorted(TASKS))
def test_skypilot_and_starburst_read_a_task_alike(
    sky: ModuleType, name: str, tmp_path: Path
) -> None:
    text = TASKS[name]
    task = sky.Task.from_yaml_config(yaml.safe_load(text))
    (resources,) = list(task.resources)
    path = tmp_path / "task.yaml"
    path.write_text(text)
    ours = jobfile.read(path)
    wanted = resources.accelerators or {}
    assert ours["gpus"] == sum(int(n) for n in wanted.values())  # no accelerators: 0 GPUs
    assert ours.get("gpu_type") == (next(iter(wanted)) if wanted else None)
    assert ours.get("cpus", 0.0) == _amount(resources.cpus, 1.0)
    assert ours.get("memory_mb", 0.0) == _amount(resources.memory, 1024.0)
    assert ours.get("image") == resources.extract_docker_image()
    assert ours.get("name") == task.name
    assert ours.get("env", {}) == {k: str(v) for k, v in task.envs.items()}
    # SkyPilot runs setup, then run, each a bash script; ours is one command for /bin/sh
    env = {k: str(v) for k, v in task.envs.items()}
    expected = (_bash(task.setup, env, tmp_path) if task.setup else "") + _bash(
        task.run, env, tmp_path
    )
    done = subprocess.run(
        ["/bin/sh", "-c", ours["command"]],
        env={**os.environ, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout) == (0, expected), done.stderr
    assert expected.strip()
