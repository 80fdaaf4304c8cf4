"""The product image, built for real (``tests/support/image.py``) and run as a container.

Built once per machine from a debootstrapped Debian base and the wheelhouse of ``uv.lock``,
with buildah and no network inside the build; cached under ``~/.cache/starburst/images``.
The container runs as the image says (its entrypoint, user, environment), through
``buildah run --isolation chroot`` (no OCI runtime to install). Without root or the tools
the tests skip, except with ``CI`` set (then they fail).
"""

from __future__ import annotations

import json
import os
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from starburst import __version__
from tests.support.image import IMAGE_REF, cache_root, product_image_archive
from tests.support.image_tools import Container, NoImageTools, container_of

ROOT = Path(__file__).resolve().parents[2]

#: one worker builds (or finds) the image and runs its container for all of them; the group is
#: handed out first (``LONG_GROUPS`` in tests/conftest.py), as the build may take minutes
pytestmark = [pytest.mark.image, pytest.mark.slow, pytest.mark.xdist_group("image")]


@pytest.fixture(scope="module")
def archive() -> Path:
    try:
        return product_image_archive()
    except NoImageTools as err:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and the image cannot be built: {err}")
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def container(archive: Path) -> Iterator[Container]:
    cache_root().mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="run-", dir=cache_root()))
    with container_of(archive, workdir=workdir) as running:
        yield running


def test_the_image_says_its_version(container: Container) -> None:
    done = container.run("--version")
    assert (done.returncode, done.stdout) == (0, f"starburst {__version__}\n"), done.stderr


def test_the_quickstart_runs_end_to_end_in_the_image(container: Container) -> None:
    done = container.run("quickstart", "--speed", "2")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "ran on-prem" in done.stdout
    assert "burst to the emulated cloud" in done.stdout
    assert "saved $" in done.stdout


def test_the_image_runs_the_compiled_pass_and_loop(container: Container) -> None:
    """The image's wheel is built as a user's install builds it (``setup.py``): the pass and
    the simulator's loop are the compiled modules, and they run."""
    code = (
        "import starburst.core.cycle as c, starburst.sim.engine as e; print(c.__file__, e.__file__)"
    )
    done = container.run("python", "-c", code, entrypoint=False)
    assert done.returncode == 0, done.stderr
    assert all(path.endswith(".so") for path in done.stdout.split()), done.stdout
    script = (
        "starburst synth /tmp/t.csv --jobs 300 --cluster-gpus 16 --seed 3 >/dev/null && "
        "starburst simulate /tmp/t.csv --nodes 2 --gpus-per-node 8 --json"
    )
    done = container.run("sh", "-c", script, entrypoint=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["jobs"] == 300


def test_the_image_migrates_a_database_with_its_wheels_migrations(container: Container) -> None:
    """The migrations come inside the project's wheel: no copy beside it, no
    ``STARBURST_MIGRATIONS_DIR`` (the chart's hook runs ``starburst db upgrade``)."""
    newest = sorted((ROOT / "migrations" / "versions").glob("0*.py"))[-1].name.split("_")[0]
    script = (
        'test -z "$STARBURST_MIGRATIONS_DIR" && test ! -e /opt/starburst/migrations && '
        "starburst db upgrade --url sqlite:////tmp/m.db >/dev/null && "
        "starburst db current --url sqlite:////tmp/m.db"
    )
    done = container.run("sh", "-c", script, entrypoint=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"revision {newest} (newest: {newest})" in done.stdout, done.stdout


def test_the_container_runs_as_the_unprivileged_user(container: Container) -> None:
    done = container.run("id", "-u", entrypoint=False)
    assert done.stdout.strip() == "10001", done.stderr


def test_the_archive_names_the_image_for_containerd(archive: Path) -> None:
    """``ctr -n k8s.io images import`` names it as the chart's default values pull it."""
    with tarfile.open(archive) as tar:
        member = tar.extractfile("index.json")
        assert member is not None
        index = json.load(member)
    names = [m.get("annotations", {}).get("io.containerd.image.name") for m in index["manifests"]]
    assert names == [IMAGE_REF]
