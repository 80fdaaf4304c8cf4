"""The wheelhouse takes ``uv.lock``'s pins for the base image's interpreter, not the tests'."""

from __future__ import annotations

from tests.support.image_wheels import platform_tags, requirements_for

EXPORTED = """\
numpy==2.4.6 ; python_full_version < '3.12' \\
    --hash=sha256:aaaa \\
    --hash=sha256:bbbb
numpy==2.5.5 ; python_full_version >= '3.12' \\
    --hash=sha256:cccc
pywin32==311 ; sys_platform == 'win32' \\
    --hash=sha256:dddd
typer==0.20.0 \\
    --hash=sha256:eeee
"""
DEBIAN_BOOKWORM = {
    "implementation_name": "cpython",
    "implementation_version": "3.11.2",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_system": "Linux",
    "python_full_version": "3.11.2",
    "python_version": "3.11",
    "sys_platform": "linux",
}


def test_markers_are_evaluated_for_the_images_python_and_dropped() -> None:
    assert requirements_for(EXPORTED, DEBIAN_BOOKWORM) == [
        "numpy==2.4.6 --hash=sha256:aaaa --hash=sha256:bbbb",
        "typer==0.20.0 --hash=sha256:eeee",
    ]
    newer = {**DEBIAN_BOOKWORM, "python_full_version": "3.12.1", "python_version": "3.12"}
    assert requirements_for(EXPORTED, newer)[0] == "numpy==2.5.5 --hash=sha256:cccc"


def test_platform_tags_cover_every_manylinux_the_glibc_accepts() -> None:
    tags = platform_tags("2.36", "x86_64")
    assert tags[0] == "manylinux_2_36_x86_64" and "manylinux_2_17_x86_64" in tags
    assert "manylinux_2_37_x86_64" not in tags and tags[-1] == "manylinux2014_x86_64"
