"""Building the control plane: the cache key follows the sources, and a failed build is an
error carrying Go's output that leaves no cache entry behind (never a silent skip)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import controlplane_build as build

GO_MOD = "module example.invalid/cp\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes v1.34.4\n"


def module(root: Path, main: str) -> Path:
    for name in build.PROGRAMS:
        (root / "cmd" / name).mkdir(parents=True)
        (root / "cmd" / name / "main.go").write_text(main)
    (root / "go.mod").write_text(GO_MOD)
    (root / "go.sum").write_text("")
    return root


def test_the_cache_key_names_the_release_and_follows_every_source(tmp_path: Path) -> None:
    mod = module(tmp_path / "m", "package main\n\nfunc main() {}\n")
    assert build.kubernetes_version(mod) == "v1.34.4"
    before = build.source_hash(mod)
    assert build.source_hash(mod) == before
    (mod / "cmd" / "etcd" / "main.go").write_text("package main\n\nfunc main() { }\n")
    assert build.source_hash(mod) != before
    assert "gitVersion=v1.34.4" in build.ldflags(mod)


def test_a_failed_build_is_an_error_with_gos_output_and_no_cache_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    try:
        build.find_go()
    except build.NoGo as err:
        pytest.skip(str(err))
    monkeypatch.setenv("STARBURST_CONTROLPLANE_CACHE", str(tmp_path / "cache"))
    mod = module(tmp_path / "m", "package main\n\nfunc main() { this is not Go }\n")
    with pytest.raises(build.BuildError, match=r"go build .* failed \(exit 1\)") as failed:
        build.binaries(mod, log=False)
    assert "main.go" in str(failed.value) or "go.sum" in str(failed.value)  # Go's own words
    entries = [p.name for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".lock")]
    assert entries == []
