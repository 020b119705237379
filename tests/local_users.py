"""Real second users for the tests of what other local users can and cannot do.

CI runs the tests as root, so a test makes a real system user (and a group)
with ``useradd``, runs real processes as it (``setpriv``, or a setuid child with
:func:`run_as`), and deletes it afterwards. Without root (or without useradd)
those tests are skipped, never faked.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class User:
    name: str
    uid: int
    gid: int

    def run(self, argv: list[str], *, groups: list[int] | None = None, umask: int = 0o022,
            timeout: float = 30, **kw) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` as this user (real uid and gid, only ``groups`` as supplementary groups)."""
        extra = ["--groups", ",".join(map(str, groups))] if groups else ["--clear-groups"]
        return subprocess.run(["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", *extra,
                               "--", "sh", "-c", f"umask {umask:03o}; exec \"$@\"", "sh", *argv],
                              capture_output=True, text=True, timeout=timeout, check=False, **kw)

    def python(self, code: str, *args: str, **kw) -> subprocess.CompletedProcess[str]:
        """Run ``python -c code args...`` as this user (the system's Python: the
        test's own interpreter may sit in a home directory others cannot enter)."""
        exe = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
        return self.run([exe, "-I", "-c", code, *args], **kw)


def _need_root(setpriv: bool = True) -> None:
    if os.geteuid() != 0 or not shutil.which("useradd") or (setpriv and not shutil.which("setpriv")):
        pytest.skip("needs root with useradd" + (" and setpriv" if setpriv else "") + " (CI runs the tests as root)")


def make_group(name: str) -> int:
    _need_root()
    subprocess.run(["groupadd", "-f", name], check=True, capture_output=True)
    return grp.getgrnam(name).gr_gid


def make_user(name: str, group: str | None = None, *, setpriv: bool = True) -> User:
    """A fresh system user ``name`` (removed first if a failed run left it), in ``group`` if given."""
    _need_root(setpriv)
    remove_user(name)
    argv = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
    if group:
        argv += ["--gid", group]
    else:
        argv += ["--user-group"]
    subprocess.run([*argv, name], check=True, capture_output=True)
    pw = pwd.getpwnam(name)
    return User(name, pw.pw_uid, pw.pw_gid)


def remove_user(name: str) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return
    subprocess.run(["userdel", name], capture_output=True, check=False)


def remove_group(name: str) -> None:
    subprocess.run(["groupdel", name], capture_output=True, check=False)


@contextmanager
def other_user() -> Iterator[str]:
    """The name of a fresh system user with no home directory, deleted afterwards (for :func:`run_as`)."""
    name = f"e3r{uuid.uuid4().hex[:8]}"
    make_user(name, setpriv=False)
    try:
        yield name
    finally:
        remove_user(name)


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
    """Set the process's umask for the block, then put the old one back."""
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)
