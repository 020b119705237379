"""A stage's Slurm options (``executor = "slurm"``, ``[stage.slurm]``), validated.

Kept apart from ``eagle3tui.supervisor.slurm`` (which runs Slurm's commands)
so that the configuration loader can validate them without importing the
supervisor: the core's packages must not import each other in a cycle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from eagle3tui.errors import ConfigError

#: sbatch options that eagle3tui sets itself; a user's extra_args may not.
RESERVED_OPTIONS: dict[str, str] = {
    "--parsable": "eagle3tui reads the job id from it",
    "--output": "the stage log is the job's output",
    "-o": "the stage log is the job's output",
    "--error": "stderr goes to the stage log with stdout",
    "-e": "stderr goes to the stage log with stdout",
    "--open-mode": "the stage log is appended to, never truncated",
    "--job-name": "eagle3tui names the job after the stage and attempt",
    "-J": "eagle3tui names the job after the stage and attempt",
    "--chdir": "the stage's cwd is used",
    "-D": "the stage's cwd is used",
    "--wrap": "the stage's command is the job",
    "--array": "one attempt is one job",
    "-a": "one attempt is one job",
    "--export": "the stage's env is passed through sbatch's environment",
    "--requeue": "eagle3tui's retries decide whether an attempt runs again",
    "--no-requeue": "eagle3tui always sets it",
}

_KNOWN_KEYS = ("partition", "nodes", "gpus", "gres", "time_limit", "account", "extra_args")
# Slurm's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (sbatch(1), --time).
_TIME_RE = re.compile(r"^(?:(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?|(\d+)(?::(\d+)(?::(\d+))?)?)$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.,+\-]+$")
_GRES_RE = re.compile(r"^[A-Za-z0-9_\-]+(?::[A-Za-z0-9_.\-]+)*(?::\d+)?(?:,[A-Za-z0-9_\-]+(?::[A-Za-z0-9_.\-]+)*(?::\d+)?)*$")


def parse_time_limit(text: str) -> int | None:
    """Seconds in a Slurm time limit (``30``, ``1:30:00``, ``2-00:00:00``);
    None for ``UNLIMITED``/``INFINITE``. Raises ValueError on anything else.

    Slurm reads a lone number as minutes and ``M:S`` as minutes and seconds,
    and rounds a limit up to whole minutes (``0:05`` runs for a minute).
    """
    t = text.strip()
    if t.upper() in ("UNLIMITED", "INFINITE"):
        return None
    m = _TIME_RE.match(t)
    if not m:
        raise ValueError(f"not a Slurm time: {text!r}")
    d, dh, dm, ds, a, b, c = m.groups()
    if d is not None:
        return int(d) * 86400 + int(dh) * 3600 + int(dm or 0) * 60 + int(ds or 0)
    if c is not None:
        return int(a) * 3600 + int(b) * 60 + int(c)
    if b is not None:
        return int(a) * 60 + int(b)
    return int(a) * 60


@dataclass(frozen=True)
class SlurmOptions:
    """A stage's ``executor = "slurm"`` table, validated.

    ``gpus`` asks for that many GPUs on each node (``--gres=gpu:N``); ``gres``
    is a raw gres request for typed GPUs (``gpu:h100:8``); give one or neither.
    ``extra_args`` are further ``sbatch`` options as an argv list.
    """

    partition: str | None = None
    nodes: int = 1
    gpus: int | None = None
    gres: str | None = None
    time_limit: str | None = None
    account: str | None = None
    extra_args: tuple[str, ...] = ()

    @property
    def time_limit_seconds(self) -> int | None:
        """The time limit in seconds, rounded up to whole minutes as Slurm does."""
        if self.time_limit is None:
            return None
        s = parse_time_limit(self.time_limit)
        return None if s is None else -(-s // 60) * 60

    @classmethod
    def from_table(cls, table: Mapping[str, Any], *, path: str, key: str) -> "SlurmOptions":
        """Validate a TOML table; ``key`` is where it sits (``stages.train.slurm``).

        Raises :class:`ConfigError` naming the file, the key and the fix.
        """

        def err(sub: str, message: str, fix: str) -> ConfigError:
            return ConfigError(message, path=path, key=f"{key}.{sub}", fix=fix)

        if not isinstance(table, Mapping):
            raise ConfigError("must be a table", path=path, key=key,
                              fix=f'write it as [{key}] with keys such as partition = "gpu"')
        for k in table:
            if k not in _KNOWN_KEYS:
                raise err(str(k), "unknown Slurm option",
                          f"use one of {', '.join(_KNOWN_KEYS)}; other sbatch options go in "
                          f'extra_args = ["--mem=64G"]')

        def name(k: str) -> str | None:
            v = table.get(k)
            if v is None:
                return None
            if not isinstance(v, str) or not _NAME_RE.match(v):
                raise err(k, f"{v!r} is not a Slurm {k} name",
                          f'give a name as Slurm lists it (sinfo/sacctmgr), e.g. {k} = "gpu"')
            return v

        partition, account = name("partition"), name("account")

        nodes = table.get("nodes", 1)
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise err("nodes", f"{nodes!r} is not a node count", "give a whole number >= 1, e.g. nodes = 2")

        gpus = table.get("gpus")
        if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0):
            raise err("gpus", f"{gpus!r} is not a GPU count",
                      "give the GPUs per node as a whole number, e.g. gpus = 8")
        gres = table.get("gres")
        if gres is not None and (not isinstance(gres, str) or not _GRES_RE.match(gres)):
            raise err("gres", f"{gres!r} is not a gres request",
                      'write it as sbatch --gres takes it, e.g. gres = "gpu:h100:8"')
        if gpus is not None and gres is not None:
            raise err("gres", "both gpus and gres are set",
                      'keep one: gpus = 8 for any GPU, or gres = "gpu:h100:8" for a type')

        time_limit = table.get("time_limit")
        if time_limit is not None:
            if isinstance(time_limit, int) and not isinstance(time_limit, bool) and time_limit > 0:
                time_limit = str(time_limit)  # minutes, as sbatch reads a lone number
            if not isinstance(time_limit, str):
                raise err("time_limit", f"{time_limit!r} is not a time limit",
                          'write it as sbatch --time takes it, e.g. time_limit = "4:00:00" or "1-12:00:00"')
            try:
                secs = parse_time_limit(time_limit)
            except ValueError:
                raise err("time_limit", f"{time_limit!r} is not a Slurm time",
                          'use minutes ("90"), "H:MM:SS" ("4:00:00") or "D-HH:MM:SS" ("1-12:00:00")'
                          ) from None
            if secs == 0:
                raise err("time_limit", "a time limit of 0 ends the job at once",
                          'give a positive limit, e.g. time_limit = "4:00:00", or leave the key out')

        extra = table.get("extra_args", [])
        if not isinstance(extra, (list, tuple)) or not all(isinstance(a, str) for a in extra):
            raise err("extra_args", "must be a list of strings (an argv list)",
                      'split it into items: extra_args = ["--mem=64G", "--constraint=a100"]')
        for i, arg in enumerate(extra):
            opt = arg.split("=", 1)[0]
            short = opt[:2] if re.match(r"^-[A-Za-z]", opt) else opt
            flag = opt if opt in RESERVED_OPTIONS else short
            why = RESERVED_OPTIONS.get(flag)
            if why:
                raise err(f"extra_args[{i}]", f"{arg!r}: eagle3tui sets {flag} itself ({why})",
                          f"remove {arg!r} from extra_args")
            if i == 0 and not arg.startswith("-"):
                raise err(f"extra_args[{i}]", f"{arg!r} is not an sbatch option",
                          'each item is one option or its value, e.g. ["--mem", "64G"] or ["--mem=64G"]')
            if "\n" in arg or "\0" in arg:
                raise err(f"extra_args[{i}]", "contains a line break or NUL", "remove it")
        return cls(partition=partition, nodes=nodes, gpus=gpus, gres=gres,
                   time_limit=time_limit, account=account, extra_args=tuple(extra))

    def sbatch_options(self) -> list[str]:
        """The ``sbatch`` options these settings stand for."""
        out: list[str] = []
        if self.partition:
            out.append(f"--partition={self.partition}")
        if self.account:
            out.append(f"--account={self.account}")
        out.append(f"--nodes={self.nodes}")
        if self.gpus:
            out.append(f"--gres=gpu:{self.gpus}")
        elif self.gres:
            out.append(f"--gres={self.gres}")
        if self.time_limit is not None:
            out.append(f"--time={self.time_limit}")
        out.extend(self.extra_args)
        return out
