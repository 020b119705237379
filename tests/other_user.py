"""A second real user for permission tests: created with ``useradd``, removed after.

The tests run as root in CI; a child process switches to the user (setuid) and
tries to read. Without root or ``useradd`` the test is skipped, never faked.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def other_user() -> Iterator[str]:
    """The name of a fresh system user with no home directory, deleted afterwards."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root and useradd to create a second user")
    name = f"e3r{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                   check=True, capture_output=True)
    try:
        pwd.getpwnam(name)
        yield name
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def run_as(user: str, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` as ``user`` (uid and gid switched in the child before exec); output as bytes."""
    pw = pwd.getpwnam(user)
    return subprocess.run(argv, user=pw.pw_uid, group=pw.pw_gid, extra_groups=[],
                          capture_output=True, timeout=30, cwd="/")


@contextmanager
def shared_dir() -> Iterator[Path]:
    """A directory every user may traverse (pytest's tmp_path is owner-only)."""
    d = Path(tempfile.mkdtemp(prefix="e3shared-", dir="/tmp"))
    os.chmod(d, 0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)
