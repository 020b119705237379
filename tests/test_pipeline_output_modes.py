"""Pipeline outputs keep the user's umask: 0644 files and 0755 directories under 022.

``mkstemp``/``mkdtemp`` make owner-only entries; renamed into place as they are,
a server running as another user cannot read the draft the pipeline exists to
produce. These write through the real helpers and read back as a second user.
"""

from __future__ import annotations

import stat
from pathlib import Path

from local_users import other_user, run_as, shared_dir, umask

from pipeline.atomic import atomic_write_bytes, current_umask, temp_dir_for
from pipeline.common import atomic_write_json


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_atomic_writes_and_temp_dirs_follow_the_umask(tmp_path: Path) -> None:
    with umask(0o022):
        assert current_umask() == 0o022
        atomic_write_bytes(tmp_path / "a.bin", b"x")
        atomic_write_json(tmp_path / "eval.json", {"ok": 1})
        d = temp_dir_for(tmp_path / "draft")
    assert _mode(tmp_path / "a.bin") == 0o644
    assert _mode(tmp_path / "eval.json") == 0o644
    assert _mode(d) == 0o755
    with umask(0o077):
        atomic_write_bytes(tmp_path / "private.bin", b"x")
        d2 = temp_dir_for(tmp_path / "private")
    assert _mode(tmp_path / "private.bin") == 0o600 and _mode(d2) == 0o700


def test_another_user_reads_files_written_atomically() -> None:
    with other_user() as user, shared_dir() as root, umask(0o022):
        atomic_write_bytes(root / "out" / "vocab.safetensors", b"weights")
        proc = run_as(user, ["/bin/cat", str(root / "out" / "vocab.safetensors")])
        assert proc.returncode == 0 and proc.stdout == b"weights", proc


def test_a_tokenized_dataset_is_readable_by_another_user() -> None:
    """The tokenized dataset (a renamed temp dir with a safetensors file, 0600 by default)."""
    from pipeline.tokenized_dataset import write_tokenized_dataset

    with other_user() as user, shared_dir() as root, umask(0o022):
        d = root / "prepared"
        write_tokenized_dataset(d, [("s0", [1, 2, 3], [0, 1, 1])], {"tokenizer": "t", "max_len": 8})
        assert _mode(d) == 0o755
        assert {p.name: _mode(p) for p in d.iterdir()} == {p.name: 0o644 for p in d.iterdir()}
        proc = run_as(user, ["/bin/cat", *(str(p) for p in sorted(d.iterdir()))])
        assert proc.returncode == 0, proc.stderr
