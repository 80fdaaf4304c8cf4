"""Build hook: compile the scheduling pass's and the simulator's hot modules with mypyc.

A wheel (``pip install .``, ``uv build``) compiles ``COMPILED`` into C extensions from the
same typed source: the same decisions, ``starburst simulate`` and the controller's pass about
1.4× quicker (docs/benchmarks.md, "Compiled"). An editable install (``pip install -e .``,
``uv sync``: a checkout being worked on) compiles nothing, so the module that runs is the
module edited. ``STARBURST_PURE_PYTHON=1`` skips the compilation for a wheel too; without a C
compiler the build says so on stderr and the wheel carries the pure-Python modules alone.

A wheel also carries the repository's Alembic ``migrations/`` inside the package
(``starburst/adapters/db/migrations``, where ``adapters.db.migrate`` looks outside a
checkout), so ``starburst db upgrade`` works wherever the wheel is installed.

Invariant: a compiled module defines no value that is pickled, copied or frozen (mypyc's
native classes refuse ``object.__setattr__``): those live in plain modules beside them
(``core.nodes``, ``core.scheduler_config``, ``sim.options``) and are named here too.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

#: the modules compiled: the pass and what it calls per job, and the simulator's event loop
COMPILED = [
    "starburst/core/capacity.py",
    "starburst/core/cycle.py",
    "starburst/core/ordering.py",
    "starburst/core/queue_facts.py",
    "starburst/sim/clock.py",
    "starburst/sim/cluster.py",
    "starburst/sim/engine.py",
]


class OptionalBuildExt(build_ext):
    """``build_ext`` that leaves the pure-Python modules in place when it cannot compile."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no headers: whatever the reason
            print(f"starburst: not compiled, pure Python instead ({exc})", file=sys.stderr)
            for ext in self.extensions:  # none of them, rather than some
                built = self.get_ext_fullpath(ext.name)
                if os.path.exists(built):
                    os.remove(built)
            self.extensions = []


#: the repository's migrations, and where a wheel carries them
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SHIPPED_MIGRATIONS = Path("starburst", "adapters", "db", "migrations")


class BuildPyWithMigrations(build_py):
    """``build_py`` that puts ``migrations/`` in the package (not for an editable install,
    which finds them in the checkout)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        if not (MIGRATIONS / "env.py").exists():
            raise FileNotFoundError(f"{MIGRATIONS}/env.py: a wheel without migrations cannot work")
        shutil.copytree(
            MIGRATIONS,
            Path(self.build_lib) / SHIPPED_MIGRATIONS,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "alembic.ini"),
            dirs_exist_ok=True,
        )


def extensions() -> list[object]:
    # (setuptools runs this file with the command as argv: ``editable_wheel`` for PEP 660,
    # ``develop`` for the legacy ``pip install -e``)
    editable = any(arg in ("editable_wheel", "develop") for arg in sys.argv)
    if editable or os.environ.get("STARBURST_PURE_PYTHON", "") not in ("", "0"):
        return []
    try:
        from mypyc.build import mypycify

        return list(mypycify(COMPILED, opt_level="3"))
    except (Exception, SystemExit) as exc:  # no mypyc, or it refused a module
        print(f"starburst: not compiled, pure Python instead ({exc!r})", file=sys.stderr)
        return []


if __name__ == "__main__":  # (as setuptools runs it; a test reads ``COMPILED`` alone)
    setup(
        ext_modules=extensions(),
        cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithMigrations},
    )
