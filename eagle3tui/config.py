"""pipeline.toml: loading, variable substitution and validation.

Every problem is collected in one pass and reported with the file, the key
(``stage[extract].estimate``), the line where it can be found, and the fix.
Nothing is launched from a configuration that did not validate.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3tui.durations import parse_duration
from eagle3tui.errors import ConfigError, ConfigErrors
from eagle3tui.listen import listen_address
from eagle3tui.slurm_options import SlurmOptions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

STAGE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_VAR_RE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|\{[^}]*\}?")
TOP_KEYS = {"pipeline", "vars", "stage", "rule", "alerts", "metrics"}
PIPELINE_KEYS = {
    "name", "state_dir", "drift_threshold", "stall_floor", "stop_grace", "gpu_interval",
    "learned_rules",
}
# Rules taught from a front end live in the state directory, unless [pipeline]
# learned_rules names another file or an older eagle3tui-rules.toml sits beside
# pipeline.toml (see eagle3tui.learned_rules).
LEARNED_RULES_DEFAULT = "eagle3tui-rules.toml"  # beside pipeline.toml, where it exists already
LEARNED_RULES_IN_STATE = "learned-rules.toml"  # in the state directory otherwise
STAGE_KEYS = {
    "name", "command", "shell", "cwd", "env", "depends_on", "estimate", "gpus", "resume",
    "log", "outputs", "kind", "ready", "stop_grace", "retry", "disk", "description", "phases",
    "on_fatal",
    "executor", "slurm", "result", "acceptance",
}
ACCEPTANCE_KEYS = {"min_length", "window", "evaluated"}
METRICS_KEYS = {"listen", "allow_remote"}
READY_KEYS = {"url", "log", "timeout", "interval"}
RETRY_KEYS = {"max_attempts", "backoff", "on"}
ON_FATAL_KEYS = {"action", "grace"}
ON_FATAL_ACTIONS = ("stop", "wait")
ALERT_KEYS = {"command", "min_level", "rate_limit", "timeout", "dedup_window", "hold_fatal",
              "log_warnings", "notify", "notify_file"}
RULE_KEYS = {"id", "pattern", "kind", "explanation", "action", "stages"}
LEVELS = ("info", "warning", "critical")


@dataclass(frozen=True)
class ReadyProbe:
    """How to tell that a service is ready: an HTTP URL answering 200, or a log regex."""

    url: str | None
    log_pattern: str | None
    timeout_s: float
    interval_s: float


@dataclass(frozen=True)
class RetryPolicy:
    """Automatic resume of a failed stage (off unless configured).

    ``on`` lists what qualifies: rule ids seen in the failed attempt's log
    (e.g. ``"nccl"``), ``"exit:N"``, ``"signal:N"`` or ``"any"``.
    """

    max_attempts: int
    backoff_s: float
    on: tuple[str, ...]


@dataclass(frozen=True)
class FatalPolicy:
    """What to do with a stage that logged a fatal error but did not exit (``on_fatal``).

    ``action = "stop"``: once ``grace_s`` passes with no progress after the
    fatal event, stop the stage's whole process tree as ``stop`` does; the
    attempt then counts as failed and ``retry`` decides what follows.
    ``action = "wait"``: show the stage as failing and leave it to a person.
    The default grace (10 minutes) is longer than PyTorch's own NCCL heartbeat
    monitor (8 minutes), so a job that tears itself down gets to do so first.
    """

    action: str = "stop"
    grace_s: float = 600.0


@dataclass(frozen=True)
class AcceptancePolicy:
    """When a served draft's acceptance is too low (``[[stage]] acceptance``).

    A warning once the mean acceptance length the server reports stays below
    ``min_length`` for ``window_s``; ``evaluated`` is the offline evaluation
    (``eval.json``) to compare with, by default the output of that name of
    any stage. See eagle3tui/supervisor/acceptance_alert.py.
    """

    min_length: float = 1.3
    window_s: float = 300.0
    evaluated: Path | None = None


@dataclass(frozen=True)
class MetricsConfig:
    """``[metrics]``: the driver serves the read model on ``/metrics`` (Prometheus)."""

    listen: str | None = None  # "127.0.0.1:9464"; None serves nothing
    allow_remote: bool = False  # a non-loopback address needs this


@dataclass(frozen=True)
class GpuSpec:
    """The GPUs a stage holds while it runs: all of them, or given indices."""

    all: bool = False
    indices: frozenset[int] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.all and not self.indices

    def overlaps(self, other: GpuSpec) -> bool:
        if self.empty or other.empty:
            return False
        if self.all or other.all:
            return True
        return bool(self.indices & other.indices)

    def describe(self) -> str:
        if self.all:
            return "all"
        return ",".join(str(i) for i in sorted(self.indices)) or "-"


@dataclass(frozen=True)
class StageConfig:
    """One ``[[stage]]`` after substitution and validation."""

    name: str
    command: tuple[str, ...]
    shell: bool = False
    cwd: Path = Path(".")
    env: dict[str, str] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()
    estimate_s: float | None = None
    # Per-phase estimates, keyed by the start of a progress bar's description.
    phases: dict[str, float] = field(default_factory=dict)
    gpus: GpuSpec = GpuSpec()
    resume: tuple[str, ...] = ()
    log: Path = Path("stage.log")
    outputs: tuple[Path, ...] = ()
    kind: str = "task"
    ready: ReadyProbe | None = None
    stop_grace_s: float = 30.0
    retry: RetryPolicy | None = None
    on_fatal: FatalPolicy = FatalPolicy()
    disk: tuple[Path, ...] = ()
    description: str = ""
    line: int | None = None
    # Where the stage runs: "local" (detached on this host) or "slurm" (sbatch
    # with ``slurm``'s options); see eagle3tui.supervisor.executors.
    executor: str = "local"
    slurm: SlurmOptions | None = None
    # The ``command =`` line, for errors about the program itself.
    command_line: int | None = None
    # The [vars] (and builtins) that command, env, cwd and outputs use, with their values:
    # what a rerun's "changed" note names (supervisor/fingerprint.py).
    variables: dict[str, str] = field(default_factory=dict)
    # An RE2 pattern for the lines that state the stage's result (acceptance lengths):
    # quoted by the pipeline-complete alert (supervisor/completion.py).
    result: str | None = None
    # None: no acceptance warning (a task, or ``acceptance = false``).
    acceptance: AcceptancePolicy | None = None

    @property
    def is_service(self) -> bool:
        return self.kind == "service"

    def argv(self, resume: bool = False) -> list[str]:
        """The argv to launch; a shell stage runs through ``/bin/sh -c``."""
        if self.shell:
            script = self.command[0]
            if resume and self.resume:
                script = script + " " + " ".join(self.resume)
            return ["/bin/sh", "-c", script]
        argv = list(self.command)
        if resume:
            argv += list(self.resume)
        return argv


@dataclass(frozen=True)
class AlertsConfig:
    """``[alerts]``: where alerts go beyond stdout and the alerts file."""

    command: tuple[str, ...] | None = None
    min_level: str = "warning"
    rate_limit_per_min: int = 30
    timeout_s: float = 10.0
    dedup_window_s: float = 300.0
    # How long the command's page of a fatal line waits for the stage to end,
    # so that a death pages once (its stage-failed alert): alerts/notifier.py.
    hold_fatal_s: float = 10.0
    # Whether a WARNING line read from a stage's log (a `log-warning` alert) runs the
    # command. Off by default: a log line pages only when it is fatal; the supervisor's
    # own warnings (stall, stage-failing, retries, GPU memory lost) still page.
    log_warnings: bool = False
    # Apprise URLs ("ntfy://...", "json://host/path") that get the same pages as the
    # command; secrets come as ${NAME} from the environment or from notify_file.
    notify: tuple[str, ...] = ()
    notify_file: Path | None = None


@dataclass
class PipelineConfig:
    """A validated pipeline.toml."""

    path: Path
    name: str
    state_dir: Path
    vars: dict[str, str]
    stages: list[StageConfig]
    rules: list[dict[str, Any]]
    alerts: AlertsConfig
    drift_threshold: float = 0.25
    stall_floor_s: float = 300.0
    stop_grace_s: float = 30.0
    gpu_interval_s: float = 1.0
    overrides: dict[str, str] = field(default_factory=dict)
    learned_rules: Path | None = None  # the learned-rules file (it may not exist yet)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)

    def stage(self, name: str) -> StageConfig:
        for s in self.stages:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.stages)
        raise KeyError(f"no stage named {name!r} in {self.path} (stages: {known})")

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.stages]

    def dependents(self, name: str) -> list[StageConfig]:
        return [s for s in self.stages if name in s.depends_on]


class _Locator:
    """Finds the line of a key in the TOML text (tomllib gives no positions)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def table_line(self, header: str, index: int = 0) -> int | None:
        pat = re.compile(r"^\s*\[\[?\s*" + re.escape(header) + r"\s*\]\]?\s*(#.*)?$")
        seen = -1
        for i, line in enumerate(self.lines):
            if pat.match(line):
                seen += 1
                if seen == index:
                    return i + 1
        return None

    def key_line(self, header: str | None, key: str, index: int = 0) -> int | None:
        start = 0
        if header is not None:
            t = self.table_line(header, index)
            if t is None:
                return None
            start = t
        pat = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for i in range(start, len(self.lines)):
            line = self.lines[i]
            if i > start and header is not None and re.match(r"^\s*\[", line):
                break
            if pat.match(line):
                return i + 1
        return self.table_line(header, index) if header else None


class _Builder:
    """Collects errors while turning the raw TOML dict into a PipelineConfig."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.loc = _Locator(text)
        self.errors: list[ConfigError] = []

    def err(self, message: str, key: str, line: int | None, fix: str | None = None) -> None:
        self.errors.append(ConfigError(message, path=str(self.path), key=key, line=line, fix=fix))

    def duration(self, value: Any, key: str, line: int | None, default: Any,
                 fix: str = "use a duration such as \"22m\", \"1h30m\" or \"90s\"") -> Any:
        """``value`` in seconds; ``default`` (and an error naming ``key``) when it is no duration."""
        if value is None:
            return default
        try:
            return parse_duration(value)
        except ValueError as e:
            self.err(str(e), key, line, fix)
            return default


def one_of(got: str, known: Iterable[str]) -> str:
    """The fix for an unknown name: the closest known one first, then all of them."""
    names = sorted(known)
    close = difflib.get_close_matches(got, names, n=1)
    return (f"did you mean {close[0]!r}? " if close else "") + f"use one of: {', '.join(names)}"


# Variables every pipeline has, and what they hold; --set changes them only
# where the file declares them under [vars] (state_dir never).
BUILTIN_VARS = {"config_dir": "the directory of the pipeline file",
                "python": "the interpreter that runs eagle3tui",
                "state_dir": "the state directory"}


def _substitute(value: str, variables: dict[str, str], b: _Builder, key: str, line: int | None) -> str:
    """Replace ``{name}`` with its value; ``{{`` and ``}}`` are literal braces.

    A tiny replacer rather than str.format, so that ``{x.attr}`` or ``{x[0]}``
    can never reach into Python objects.
    """

    def repl(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok == "{{":
            return "{"
        if tok == "}}":
            return "}"
        name = m.group(1)
        if name is None:
            b.err(f"malformed placeholder {tok!r}", key, line,
                  "write {name} for a variable, or {{ and }} for literal braces")
            return tok
        if name not in variables:
            known = ", ".join(sorted(variables)) or "none"
            close = difflib.get_close_matches(name, sorted(variables), n=1)
            b.err(f"unknown variable {{{name}}}", key, line,
                  (f"did you mean {{{close[0]}}}? " if close else "")
                  + f"define it under [vars] or pass --set {name}=VALUE (known: {known})")
            return tok
        return variables[name]

    return _VAR_RE.sub(repl, value)


def load_config(path: str | os.PathLike[str], overrides: dict[str, str] | None = None,
                *, check_rules: bool = True) -> PipelineConfig:
    """Load and validate ``path``; raise ConfigError (or ConfigErrors) on any problem."""
    path = Path(path).absolute()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("configuration file not found", path=str(path),
                          fix="pass --config PATH, or create pipeline.toml (see README)") from None
    except UnicodeDecodeError as e:
        raw_bytes = path.read_bytes()
        line = raw_bytes.count(b"\n", 0, e.start) + 1
        raise ConfigError(f"the file is not UTF-8 text (byte 0x{raw_bytes[e.start]:02x} at offset "
                          f"{e.start})", path=str(path), line=line,
                          fix="save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)") from None
    except IsADirectoryError:
        raise ConfigError("the configuration path is a directory", path=str(path),
                          fix="pass --config PATH/pipeline.toml") from None
    except OSError as e:
        raise ConfigError(f"cannot read configuration: {e}", path=str(path)) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise ConfigError(f"invalid TOML: {e}", path=str(path),
                          line=int(m.group(1)) if m else None,
                          fix="correct the TOML syntax at that line") from None
    return build_config(raw, path, text, overrides or {}, check_rules=check_rules)


def build_config(raw: dict[str, Any], path: Path, text: str, overrides: dict[str, str],
                 *, check_rules: bool = True) -> PipelineConfig:
    """Validate a parsed TOML document; see load_config."""
    b = _Builder(path, text)
    for k in raw:
        if k not in TOP_KEYS:
            b.err(f"unknown top-level key {k!r}", k, b.loc.key_line(None, k) or b.loc.table_line(k),
                  one_of(k, TOP_KEYS))

    pipe = raw.get("pipeline", {})
    if not isinstance(pipe, dict):
        b.err("[pipeline] must be a table", "pipeline", None)
        pipe = {}
    for k in pipe:
        if k not in PIPELINE_KEYS:
            b.err(f"unknown key {k!r} in [pipeline]", f"pipeline.{k}", b.loc.key_line("pipeline", k),
                  one_of(k, PIPELINE_KEYS))
    config_dir = path.parent
    name = str(pipe.get("name", config_dir.name or "pipeline"))

    duration = b.duration

    drift = pipe.get("drift_threshold", 0.25)
    if not isinstance(drift, (int, float)) or isinstance(drift, bool) or not math.isfinite(drift) \
            or drift <= 0:
        b.err(f"drift_threshold must be a positive number, got {drift!r}", "pipeline.drift_threshold",
              b.loc.key_line("pipeline", "drift_threshold"), "e.g. drift_threshold = 0.25 for +25%")
        drift = 0.25
    stall_floor = duration(pipe.get("stall_floor"), "pipeline.stall_floor",
                           b.loc.key_line("pipeline", "stall_floor"), 300.0)
    stop_grace = duration(pipe.get("stop_grace"), "pipeline.stop_grace",
                          b.loc.key_line("pipeline", "stop_grace"), 30.0)
    gpu_interval = duration(pipe.get("gpu_interval"), "pipeline.gpu_interval",
                            b.loc.key_line("pipeline", "gpu_interval"), 1.0)

    # Variables: builtins, then [vars], then --set overrides.
    variables: dict[str, str] = {
        "config_dir": str(config_dir),
        "python": sys.executable,
    }
    raw_vars = raw.get("vars", {})
    if not isinstance(raw_vars, dict):
        b.err("[vars] must be a table of strings", "vars", b.loc.table_line("vars"))
        raw_vars = {}
    for k, v in raw_vars.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            b.err(f"variable {k!r} must be a string or number, got {type(v).__name__}", f"vars.{k}",
                  b.loc.key_line("vars", k), "quote the value")
            continue
        variables[k] = str(v)
    # A --set name the file never mentions is a typo (`--set sampels=400`) that
    # would otherwise change nothing, silently.
    mentioned = set(variables) | {m.group(1) for m in _VAR_RE.finditer(text) if m.group(1)}
    for k, v in overrides.items():
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k):
            b.err(f"bad variable name {k!r} in --set", f"--set {k}", None, "use --set name=value")
            continue
        if k in BUILTIN_VARS and (k not in raw_vars or k == "state_dir"):
            # A command file carries --set values too: changing {python} would
            # run another program as the pipeline's owner.
            b.err(f"--set {k}: {{{k}}} is a built-in variable ({BUILTIN_VARS[k]}) and --set "
                  "cannot change it", f"--set {k}", None,
                  "set [pipeline] state_dir in the file" if k == "state_dir" else
                  f"to make it settable, declare it in {path.name}: [vars] {k} = \"...\"")
            continue
        if k not in mentioned:
            close = difflib.get_close_matches(k, sorted(mentioned), n=1)
            known = ", ".join(sorted(set(mentioned) - {"config_dir", "python"})) or "none"
            b.err(f"--set {k}: no variable {k!r} in [vars] or in any {{placeholder}}",
                  f"--set {k}", None,
                  (f"did you mean --set {close[0]}={v}? " if close else "")
                  + f"known variables: {known}")
            continue
        variables[k] = v
    # Vars may refer to earlier builtins, e.g. data = "{config_dir}/data".
    for k in list(variables):
        if k in raw_vars or k in overrides:
            variables[k] = _substitute(variables[k], variables, b, f"vars.{k}",
                                       b.loc.key_line("vars", k))
    # The state directory may use vars too (e.g. "{out}/.eagle3tui"); stage
    # commands may then refer to it as {state_dir}.
    state_dir_raw = _substitute(str(pipe.get("state_dir", ".eagle3tui")), variables, b,
                                "pipeline.state_dir", b.loc.key_line("pipeline", "state_dir"))
    state_dir = (config_dir / state_dir_raw).resolve() if not os.path.isabs(state_dir_raw) \
        else Path(state_dir_raw)
    variables["state_dir"] = str(state_dir)
    if state_dir.exists() and not state_dir.is_dir():
        b.err(f"state_dir {state_dir} exists and is not a directory", "pipeline.state_dir",
              b.loc.key_line("pipeline", "state_dir"),
              "point state_dir at a directory (it is created if missing), or move the file away")

    raw_stages = raw.get("stage", [])
    if not isinstance(raw_stages, list):
        b.err("stages must be written as [[stage]] tables", "stage", b.loc.key_line(None, "stage"),
              "write each stage as a [[stage]] table")
        raw_stages = []
    if not raw_stages:
        b.err("no stages defined", "stage", None, "add at least one [[stage]] with name and command")

    stages: list[StageConfig] = []
    seen: dict[str, int] = {}
    for i, st in enumerate(raw_stages):
        s = _build_stage(st, i, b, variables, config_dir, state_dir, stop_grace or 30.0)
        if s is None:
            continue
        if s.name in seen:
            b.err(f"duplicate stage name {s.name!r} (also stage #{seen[s.name] + 1})",
                  f"stage[{s.name}].name", b.loc.key_line("stage", "name", i),
                  "give each stage a unique name")
            continue
        seen[s.name] = i
        stages.append(s)

    logs: dict[str, StageConfig] = {}
    for s in stages:
        # Two stages writing one file mix their lines, and the alerts of one
        # would be read as the other's.
        key = os.path.realpath(s.log)
        if key in logs:
            b.err(f"stages {logs[key].name!r} and {s.name!r} share the log {s.log}",
                  f"stage[{s.name}].log", b.loc.key_line("stage", "log", seen[s.name])
                  or b.loc.table_line("stage", seen[s.name]),
                  f"give each stage its own log, e.g. log = \"{Path(s.log).with_name(s.name + '.log')}\"")
        else:
            logs[key] = s
    names = {s.name for s in stages}
    for i, s in enumerate(stages):
        for d in s.depends_on:
            if d not in names:
                b.err(f"stage {s.name!r} depends on unknown stage {d!r}", f"stage[{s.name}].depends_on",
                      b.loc.key_line("stage", "depends_on", seen[s.name]),
                      one_of(d, names - {s.name}))
            elif d == s.name:
                b.err(f"stage {s.name!r} depends on itself", f"stage[{s.name}].depends_on",
                      b.loc.key_line("stage", "depends_on", seen[s.name]), "remove it from depends_on")
    cycle = find_cycle(stages)
    if cycle:
        first = cycle[0]
        b.err("dependency cycle: " + " -> ".join(cycle), f"stage[{first}].depends_on",
              b.loc.key_line("stage", "depends_on", seen.get(first, 0)),
              "remove one of these dependencies")

    alerts = _build_alerts(raw.get("alerts", {}), b, variables)

    rules = raw.get("rule", [])
    if not isinstance(rules, list):
        b.err("rules must be written as [[rule]] tables", "rule", None)
        rules = []
    rule_specs: list[dict[str, Any]] = []
    for i, r in enumerate(rules):
        line = b.loc.table_line("rule", i)
        if not isinstance(r, dict):
            b.err("each [[rule]] must be a table", f"rule[{i}]", line)
            continue
        rule_specs.append(dict(r))
    if check_rules and rule_specs:
        for e in validate_rules(rule_specs, path):
            b.errors.append(e)
    if "learned_rules" in pipe or (path.parent / LEARNED_RULES_DEFAULT).exists():
        learned_path = path.parent / _substitute(str(pipe.get("learned_rules", LEARNED_RULES_DEFAULT)),
                                                 variables, b, "pipeline.learned_rules",
                                                 b.loc.key_line("pipeline", "learned_rules"))
    else:
        # Taught from a front end: state, like the run records, not a file in the user's repository.
        learned_path = state_dir / LEARNED_RULES_IN_STATE
    learned = _load_learned_rules(learned_path, b)
    if check_rules and learned:
        b.errors.extend(validate_rules(learned, learned_path))
    rule_specs += learned

    _check_retry_reasons(stages, rule_specs, b, seen)
    metrics = _build_metrics(raw.get("metrics", {}), b)

    if b.errors:
        raise b.errors[0] if len(b.errors) == 1 else ConfigErrors(b.errors)
    return PipelineConfig(
        path=path, name=name, state_dir=state_dir, vars=variables, stages=stages,
        rules=rule_specs, alerts=alerts, drift_threshold=float(drift),
        stall_floor_s=stall_floor or 300.0, stop_grace_s=stop_grace or 30.0,
        gpu_interval_s=gpu_interval or 1.0, overrides=dict(overrides),
        learned_rules=learned_path, metrics=metrics,
    )


def _load_learned_rules(path: Path, b: _Builder) -> list[dict[str, Any]]:
    """The ``[[rule]]`` tables of the learned-rules file; none while it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        # Nothing taught yet; a directory above it that is not one (an unusable
        # state_dir) is reported with its own key, not as unreadable rules.
        return []
    except (OSError, UnicodeDecodeError) as e:
        b.errors.append(ConfigError(f"cannot read the learned rules: {e}", path=str(path),
                                    fix="fix or move the file; rules taught from the TUI are kept there"))
        return []
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        b.errors.append(ConfigError(f"invalid TOML: {e}", path=str(path),
                                    line=int(m.group(1)) if m else None,
                                    fix="correct the TOML at that line, or delete the rule"))
        return []
    rules = raw.get("rule", [])
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        b.errors.append(ConfigError("rules must be written as [[rule]] tables", path=str(path),
                                    fix="keep only [[rule]] tables in this file"))
        return []
    return [dict(r) for r in rules]


_RETRY_REASON_RE = re.compile(r"^(any|exit:-?\d+|signal:\d+)$")


def _check_retry_reasons(stages: list[StageConfig], rule_specs: list[dict[str, Any]], b: _Builder,
                         index: dict[str, int]) -> None:
    """A typo in ``retry.on`` would make a retry policy that never fires: reject it.

    The ids a run can report are the registry's (eagle3tui/logs/families.toml: the
    judge's, the monitor's and the stall detector's own verdicts, and every shipped
    rule) plus the user's ``[[rule]]`` ids.
    """
    if all(s.retry is None for s in stages):
        return  # nothing to check: the classifier's start-up is not paid for
    try:
        from eagle3tui.logs.catalog import verdict_ids
        from eagle3tui.logs.families import did_you_mean
        known = set(verdict_ids())
    except (ImportError, ValueError, ConfigError):
        return
    known |= {str(r.get("id")) for r in rule_specs}
    for s in stages:
        if s.retry is None:
            continue
        for reason in s.retry.on:
            if not _RETRY_REASON_RE.match(reason) and reason not in known:
                b.err(f"retry.on: {reason!r} is neither a rule id nor exit:N / signal:N / any"
                      f"{did_you_mean(reason, known)}",
                      f"stage[{s.name}].retry.on", b.loc.key_line("stage", "retry", index.get(s.name, 0)),
                      "use a verdict id such as nccl, oom, error-then-ended, or exit:137 / signal:9 / any "
                      "(eagle3tui/logs/families.toml and builtin_rules.toml list every id)")


def validate_rules(specs: list[dict[str, Any]], path: Path) -> list[ConfigError]:
    """Compile user rules with the log classifier; report each bad one by id."""
    if not specs:
        return []
    try:
        from eagle3tui.logs.rules import build_ruleset
    except ImportError:  # the classifier is optional for a bare config check
        return []
    try:
        build_ruleset(specs, str(path))
    except ConfigErrors as e:
        return list(e.errors)
    except ConfigError as e:
        return [e]
    return []


def _str_list(value: Any, b: _Builder, key: str, line: int | None, fix: str) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return list(value)
    b.err(f"expected a list of strings, got {value!r}", key, line, fix)
    return None


def _build_stage(st: Any, i: int, b: _Builder, variables: dict[str, str], config_dir: Path,
                 state_dir: Path, default_grace: float) -> StageConfig | None:
    loc = b.loc
    head = loc.table_line("stage", i)
    if not isinstance(st, dict):
        b.err("each [[stage]] must be a table", f"stage #{i + 1}", head)
        return None
    name = st.get("name")
    if not isinstance(name, str) or not STAGE_NAME_RE.match(name):
        b.err(f"stage #{i + 1} needs a name of letters, digits, '.', '_' or '-' (got {name!r})",
              f"stage #{i + 1}.name", loc.key_line("stage", "name", i) or head,
              "add name = \"extract\" (it names the log and state files)")
        return None
    k = f"stage[{name}]"

    def line(key: str) -> int | None:
        return loc.key_line("stage", key, i)

    for key in st:
        if key not in STAGE_KEYS:
            b.err(f"unknown key {key!r}", f"{k}.{key}", line(key),
                  one_of(key, STAGE_KEYS))

    used: dict[str, str] = {}

    def sub(value: str, key: str) -> str:
        if key in ("command", "env", "cwd", "outputs"):
            used.update((n, variables[n]) for n in _VAR_RE.findall(value) if n in variables)
        return _substitute(value, variables, b, f"{k}.{key}", line(key))

    shell = st.get("shell", False)
    if not isinstance(shell, bool):
        b.err("shell must be true or false", f"{k}.shell", line("shell"))
        shell = False
    cmd = st.get("command")
    command: tuple[str, ...] = ()
    if cmd is None:
        b.err("missing command", f"{k}.command", head,
              "add command = [\"python\", \"-m\", \"pipeline.extract\", ...] (an argv list)")
    elif isinstance(cmd, str):
        if not shell:
            b.err("command is a string; commands are argv lists", f"{k}.command", line("command"),
                  "write command = [\"prog\", \"arg\", ...], or set shell = true to run it through /bin/sh")
        else:
            command = (sub(cmd, "command"),)
    elif isinstance(cmd, list) and cmd and all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in cmd):
        if shell:
            b.err("shell = true needs command to be one string", f"{k}.command", line("command"),
                  "write command = \"prog --flag | other\" or drop shell = true")
        else:
            command = tuple(sub(str(x), "command") for x in cmd)
            if any("\0" in x for x in command):
                b.err("command contains a NUL byte, which no program can receive", f"{k}.command",
                      line("command"), "remove the \\u0000 from the argument")
                command = ()
    else:
        b.err(f"command must be a non-empty list of strings, got {cmd!r}", f"{k}.command",
              line("command"), "write command = [\"prog\", \"arg\", ...]")

    cwd_raw = st.get("cwd", str(config_dir))
    cwd = Path(sub(str(cwd_raw), "cwd"))
    if not cwd.is_absolute():
        cwd = config_dir / cwd

    env: dict[str, str] = {}
    raw_env = st.get("env", {})
    if not isinstance(raw_env, dict):
        b.err("env must be a table of strings", f"{k}.env", line("env"), "write env = { KEY = \"value\" }")
    else:
        for ek, ev in raw_env.items():
            if isinstance(ev, bool) or not isinstance(ev, (str, int, float)):
                b.err(f"env value for {ek!r} must be a string", f"{k}.env.{ek}", line("env"))
                continue
            if "=" in str(ek) or "\0" in str(ek) or not str(ek):
                b.err(f"env name {ek!r} cannot contain '=' or a NUL byte", f"{k}.env.{ek}", line("env"),
                      "use a plain name, e.g. env = { CUDA_VISIBLE_DEVICES = \"0\" }")
                continue
            value = sub(str(ev), "env")
            if "\0" in value:
                b.err(f"env value for {ek!r} contains a NUL byte", f"{k}.env.{ek}", line("env"),
                      "remove the \\u0000 from the value")
                continue
            env[str(ek)] = value

    deps = _str_list(st.get("depends_on", []), b, f"{k}.depends_on", line("depends_on"),
                     "write depends_on = [\"other-stage\"]") or []

    estimate = None
    if "estimate" in st:
        estimate = b.duration(st["estimate"], f"{k}.estimate", line("estimate"), estimate,
                              "use e.g. estimate = \"22m\" or \"1h30m\"")

    phases: dict[str, float] = {}
    raw_phases = st.get("phases", {})
    if not isinstance(raw_phases, dict):
        b.err("phases must be a table of progress-bar descriptions to durations", f"{k}.phases",
              line("phases"), "e.g. phases = { \"Loading safetensors checkpoint shards\" = \"22m\" }")
    else:
        for desc, value in raw_phases.items():
            got = b.duration(value, f"{k}.phases.{desc}", line("phases"), None, "use a duration such as \"22m\"")
            if got is not None:
                phases[str(desc)] = got

    gpus = GpuSpec()
    if "gpus" in st:
        g = st["gpus"]
        if g == "all":
            gpus = GpuSpec(all=True)
        elif isinstance(g, int) and not isinstance(g, bool) and g >= 0:
            gpus = GpuSpec(indices=frozenset({g}))
        elif isinstance(g, list) and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in g):
            gpus = GpuSpec(indices=frozenset(g))
        else:
            b.err(f"bad GPU spec {g!r}", f"{k}.gpus", line("gpus"),
                  "write gpus = \"all\", gpus = 0 or gpus = [0, 1]")

    resume = tuple(sub(x, "resume") for x in (_str_list(st.get("resume", []), b, f"{k}.resume",
                                                          line("resume"), "write resume = [\"--resume\"]") or []))
    log_raw = st.get("log")
    log = Path(sub(str(log_raw), "log")) if log_raw is not None else state_dir / "logs" / f"{name}.log"
    if not log.is_absolute():
        log = config_dir / log
    if log.is_dir():
        b.err(f"log {log} is a directory; it must name a file", f"{k}.log",
              line("log") or head, f"e.g. log = \"{log}/{name}.log\"")
    outputs = tuple(_abs(Path(sub(x, "outputs")), config_dir) for x in
                    (_str_list(st.get("outputs", []), b, f"{k}.outputs", line("outputs"),
                               "write outputs = [\"out/model.safetensors\"]") or []))
    disk = tuple(_abs(Path(sub(x, "disk")), config_dir) for x in
                 (_str_list(st.get("disk", []), b, f"{k}.disk", line("disk"),
                            "write disk = [\"{data}/hidden\"]") or []))

    kind = st.get("kind", "task")
    if kind not in ("task", "service"):
        b.err(f"kind must be \"task\" or \"service\", got {kind!r}", f"{k}.kind", line("kind"))
        kind = "task"

    ready = None
    if "ready" in st:
        r = st["ready"]
        if kind != "service":
            b.err("ready is only meaningful for kind = \"service\"", f"{k}.ready", line("ready"),
                  "add kind = \"service\" or remove ready")
        if isinstance(r, str):
            r = {"url": r} if r.startswith(("http://", "https://")) else {"log": r}
        if not isinstance(r, dict):
            b.err("ready must be a URL, or a table with url or log", f"{k}.ready", line("ready"))
        else:
            for rk in r:
                if rk not in READY_KEYS:
                    b.err(f"unknown key {rk!r} in ready", f"{k}.ready.{rk}", line("ready"),
                          one_of(rk, READY_KEYS))
            url = r.get("url")
            logpat = r.get("log")
            if (url is None) == (logpat is None):
                b.err("ready needs exactly one of url or log", f"{k}.ready", line("ready"),
                      "e.g. ready = { url = \"http://127.0.0.1:8000/v1/models\", timeout = \"20m\" }")
            if logpat is not None:
                try:
                    re.compile(str(logpat))
                except re.error as e:
                    b.err(f"invalid regex in ready.log: {e}", f"{k}.ready.log", line("ready"))
                else:
                    # It runs over every line of the service's log: only RE2 is linear in the line.
                    from eagle3tui.logs.rules import compile_user_pattern

                    try:
                        compile_user_pattern(str(logpat))
                    except ValueError as e:
                        b.err(f"ready.log {str(logpat)!r} is not supported by the linear-time regex engine "
                              f"(RE2): {e}", f"{k}.ready.log", line("ready"),
                              "rewrite it without backreferences and lookaround, e.g. the literal text")
            timeout = b.duration(r.get("timeout", 600), f"{k}.ready.timeout", line("ready"), 600.0,
                                 "e.g. timeout = \"20m\"")
            interval = b.duration(r.get("interval", 1), f"{k}.ready.interval", line("ready"), 1.0,
                                  "e.g. interval = \"1s\"")
            ready = ReadyProbe(url=sub(str(url), "ready") if url else None,
                               log_pattern=str(logpat) if logpat else None,
                               timeout_s=timeout, interval_s=max(interval, 0.2))

    grace = default_grace
    if "stop_grace" in st:
        grace = b.duration(st["stop_grace"], f"{k}.stop_grace", line("stop_grace"), grace,
                           "e.g. stop_grace = \"30s\"")

    retry = None
    if "retry" in st:
        r = st["retry"]
        if not isinstance(r, dict):
            b.err("retry must be a table", f"{k}.retry", line("retry"),
                  "e.g. retry = { max_attempts = 3, backoff = \"1m\", on = [\"nccl\", \"exit:137\"] }")
        else:
            for rk in r:
                if rk not in RETRY_KEYS:
                    b.err(f"unknown key {rk!r} in retry", f"{k}.retry.{rk}", line("retry"),
                          one_of(rk, RETRY_KEYS))
            ma = r.get("max_attempts", 3)
            if not isinstance(ma, int) or isinstance(ma, bool) or ma < 1:
                b.err(f"retry.max_attempts must be an integer >= 1, got {ma!r}", f"{k}.retry.max_attempts",
                      line("retry"))
                ma = 1
            backoff = b.duration(r.get("backoff", 30), f"{k}.retry.backoff", line("retry"), 30.0,
                                 "e.g. backoff = \"1m\"")
            on = _str_list(r.get("on", ["any"]), b, f"{k}.retry.on", line("retry"),
                           "e.g. on = [\"nccl\", \"exit:137\"]") or ["any"]
            retry = RetryPolicy(max_attempts=ma, backoff_s=backoff, on=tuple(on))

    on_fatal = _build_on_fatal(st, k, b, line)

    description = st.get("description", "")
    if not isinstance(description, str):
        b.err("description must be a string", f"{k}.description", line("description"))
        description = ""

    result = st.get("result")
    if result is not None:
        from eagle3tui.logs.rules import compile_user_pattern

        try:
            if not isinstance(result, str) or not result:
                raise ValueError("it must be a non-empty string")
            compile_user_pattern(result)
        except ValueError as e:
            b.err(f"result {result!r} is not a usable pattern: {e}", f"{k}.result", line("result"),
                  "write the text the result lines contain, e.g. result = \"acceptance length\"")
            result = None

    executor, slurm = _build_executor(st, i, k, b, variables)

    return StageConfig(
        name=name, command=command, shell=shell, cwd=cwd, env=env, depends_on=tuple(deps),
        estimate_s=estimate, phases=phases, gpus=gpus, resume=resume, log=log, outputs=outputs, kind=kind,
        ready=ready, stop_grace_s=grace, retry=retry, on_fatal=on_fatal, disk=disk,
        description=description, line=head, executor=executor, slurm=slurm,
        command_line=line("command") or head, variables=dict(sorted(used.items())), result=result,
        acceptance=_build_acceptance(st, k, b, line, kind, sub, config_dir),
    )


def _build_acceptance(st: dict[str, Any], k: str, b: _Builder, line: Callable[[str], int | None],
                      kind: str, sub: Callable[[str, str], str], config_dir: Path) -> AcceptancePolicy | None:
    """``acceptance = { min_length = 1.3, window = "5m" }``; on by default for services."""
    example = 'e.g. acceptance = { min_length = 1.3, window = "5m" } (or acceptance = false)'
    r = st.get("acceptance", kind == "service")
    if r is False:
        return None
    if r is True:
        return AcceptancePolicy()
    if not isinstance(r, dict):
        b.err("acceptance must be a table or false", f"{k}.acceptance", line("acceptance"), example)
        return None
    for rk in r:
        if rk not in ACCEPTANCE_KEYS:
            b.err(f"unknown key {rk!r} in acceptance", f"{k}.acceptance.{rk}", line("acceptance"),
                  one_of(rk, ACCEPTANCE_KEYS))
    low = r.get("min_length", AcceptancePolicy.min_length)
    if isinstance(low, bool) or not isinstance(low, (int, float)) or not 1.0 <= low <= 64.0:
        b.err(f"acceptance.min_length must be a number of tokens from 1 to 64, got {low!r}",
              f"{k}.acceptance.min_length", line("acceptance"), example)
        low = AcceptancePolicy.min_length
    window = b.duration(r.get("window", AcceptancePolicy.window_s), f"{k}.acceptance.window",
                        line("acceptance"), AcceptancePolicy.window_s, example)
    evaluated = None
    if "evaluated" in r:
        if not isinstance(r["evaluated"], str):
            b.err("acceptance.evaluated must be a path (the evaluate stage's eval.json)",
                  f"{k}.acceptance.evaluated", line("acceptance"), 'e.g. evaluated = "{out}/eval.json"')
        else:
            evaluated = _abs(Path(sub(r["evaluated"], "acceptance")), config_dir)
    return AcceptancePolicy(min_length=float(low), window_s=float(window), evaluated=evaluated)


def _build_metrics(raw: Any, b: _Builder) -> MetricsConfig:
    """``[metrics] listen = "127.0.0.1:9464"``: loopback unless ``allow_remote = true``."""
    if not isinstance(raw, dict):
        b.err("[metrics] must be a table", "metrics", b.loc.table_line("metrics"))
        return MetricsConfig()
    for k in raw:
        if k not in METRICS_KEYS:
            b.err(f"unknown key {k!r} in [metrics]", f"metrics.{k}", b.loc.key_line("metrics", k),
                  one_of(k, METRICS_KEYS))
    allow = raw.get("allow_remote", False)
    if not isinstance(allow, bool):
        b.err(f"allow_remote must be true or false, got {allow!r}", "metrics.allow_remote",
              b.loc.key_line("metrics", "allow_remote"))
        allow = False
    listen = raw.get("listen")
    if listen is None:
        return MetricsConfig(allow_remote=allow)
    try:
        listen_address(str(listen) if isinstance(listen, str) else repr(listen), allow)
    except ValueError as e:
        b.err(str(e), "metrics.listen", b.loc.key_line("metrics", "listen"),
              'write listen = "127.0.0.1:9464" (add allow_remote = true to serve other hosts)')
        return MetricsConfig(allow_remote=allow)
    return MetricsConfig(listen=str(listen), allow_remote=allow)


def _build_on_fatal(st: dict[str, Any], k: str, b: _Builder,
                    line: Callable[[str], int | None]) -> FatalPolicy:
    """``on_fatal = { action = "stop", grace = "10m" }``; the default when absent."""
    if "on_fatal" not in st:
        return FatalPolicy()
    example = 'e.g. on_fatal = { action = "stop", grace = "10m" }'
    r = st["on_fatal"]
    if not isinstance(r, dict):
        b.err("on_fatal must be a table", f"{k}.on_fatal", line("on_fatal"), example)
        return FatalPolicy()
    for rk in r:
        if rk not in ON_FATAL_KEYS:
            b.err(f"unknown key {rk!r} in on_fatal", f"{k}.on_fatal.{rk}", line("on_fatal"),
                  one_of(rk, ON_FATAL_KEYS))
    action = r.get("action", FatalPolicy.action)
    if action not in ON_FATAL_ACTIONS:
        b.err(f"on_fatal.action must be one of {', '.join(ON_FATAL_ACTIONS)}, got {action!r}",
              f"{k}.on_fatal.action", line("on_fatal"), example)
        action = FatalPolicy.action
    grace = b.duration(r.get("grace", FatalPolicy.grace_s), f"{k}.on_fatal.grace", line("on_fatal"),
                       FatalPolicy.grace_s, example)
    return FatalPolicy(action=str(action), grace_s=grace)


EXECUTORS = ("local", "slurm")


def _build_executor(st: dict[str, Any], i: int, k: str, b: _Builder,
                    variables: dict[str, str]) -> tuple[str, SlurmOptions | None]:
    """``executor`` and the ``[stage.slurm]`` table of stage #``i`` (named ``k``)."""
    loc = b.loc
    executor = st.get("executor", "local")
    if executor not in EXECUTORS:
        b.err(f"executor must be \"local\" or \"slurm\", got {executor!r}", f"{k}.executor",
              loc.key_line("stage", "executor", i),
              "leave it out to run the stage on this host, or write executor = \"slurm\"")
        return "local", None
    table = st.get("slurm")
    # [stage.slurm] sits after its [[stage]]; an inline slurm = { ... } on a key line.
    head = loc.table_line("stage", i) or 0
    nxt = loc.table_line("stage", i + 1) or len(loc.lines) + 1
    sub = next((n + 1 for n in range(head, nxt - 1)
                if re.match(r"^\s*\[\s*stage\s*\.\s*slurm\s*\]", loc.lines[n])), None)

    def line_of(key: str | None) -> int | None:
        if sub is not None and key:
            for n in range(sub, nxt - 1):
                if re.match(r"^\s*\[", loc.lines[n]):
                    break
                if re.match(r"^\s*" + re.escape(key) + r"\s*=", loc.lines[n]):
                    return n + 1
        return sub or loc.key_line("stage", "slurm", i)

    if executor == "local":
        if table is not None:
            b.err("[stage.slurm] is set but the stage runs locally", f"{k}.slurm", line_of(None),
                  "add executor = \"slurm\" to the stage, or remove its slurm table")
        return "local", None
    if "gpus" in st:
        b.err("gpus picks GPUs of this host; a Slurm stage gets its GPUs from Slurm", f"{k}.gpus",
              loc.key_line("stage", "gpus", i),
              "move it into the stage's Slurm table as a count: [stage.slurm] gpus = 8")
    if isinstance(table, dict):
        # Variables work in the Slurm table's strings too (partition = "{partition}").
        table = {key: _substitute(v, variables, b, f"{k}.slurm.{key}", line_of(key)) if isinstance(v, str)
                 else [_substitute(x, variables, b, f"{k}.slurm.{key}", line_of(key)) if isinstance(x, str)
                       else x for x in v] if isinstance(v, list) else v
                 for key, v in table.items()}
    try:
        options = SlurmOptions.from_table(table if table is not None else {}, path=str(b.path),
                                          key=f"{k}.slurm")
    except ConfigError as e:
        sub_key = (e.key or "").rsplit(".", 1)[-1].split("[", 1)[0]
        b.errors.append(ConfigError(e.message, path=e.path, key=e.key, line=line_of(sub_key), fix=e.fix))
        return "slurm", None
    return "slurm", options


def _abs(p: Path, base: Path) -> Path:
    return p if p.is_absolute() else base / p


def _build_alerts(raw: Any, b: _Builder, variables: dict[str, str]) -> AlertsConfig:
    if not isinstance(raw, dict):
        b.err("[alerts] must be a table", "alerts", b.loc.table_line("alerts"))
        return AlertsConfig()
    for k in raw:
        if k not in ALERT_KEYS:
            b.err(f"unknown key {k!r} in [alerts]", f"alerts.{k}", b.loc.key_line("alerts", k),
                  one_of(k, ALERT_KEYS))
    command = None
    if "command" in raw:
        c = raw["command"]
        if isinstance(c, list) and c and all(isinstance(x, str) for x in c):
            command = tuple(_substitute(x, variables, b, "alerts.command", b.loc.key_line("alerts", "command"))
                            for x in c)
        else:
            b.err("alerts.command must be an argv list (it is never run through a shell)",
                  "alerts.command", b.loc.key_line("alerts", "command"),
                  "write command = [\"/usr/local/bin/notify\", \"--channel\", \"ml\"]")
    level = raw.get("min_level", "warning")
    if level not in LEVELS:
        b.err(f"min_level must be one of {', '.join(LEVELS)}, got {level!r}", "alerts.min_level",
              b.loc.key_line("alerts", "min_level"))
        level = "warning"
    rate = raw.get("rate_limit", 30)
    if not isinstance(rate, int) or isinstance(rate, bool) or rate < 1:
        b.err(f"rate_limit must be a positive integer (alerts per minute), got {rate!r}",
              "alerts.rate_limit", b.loc.key_line("alerts", "rate_limit") or b.loc.table_line("alerts"),
              "e.g. rate_limit = 30")
        rate = 30
    timeout = b.duration(raw.get("timeout", 10), "alerts.timeout",
                         b.loc.key_line("alerts", "timeout") or b.loc.table_line("alerts"), 10.0,
                         "e.g. timeout = \"10s\"")
    window = b.duration(raw.get("dedup_window", 300), "alerts.dedup_window",
                        b.loc.key_line("alerts", "dedup_window") or b.loc.table_line("alerts"), 300.0,
                        "e.g. dedup_window = \"5m\" (0 merges nothing)")
    hold = b.duration(raw.get("hold_fatal", 10), "alerts.hold_fatal",
                      b.loc.key_line("alerts", "hold_fatal") or b.loc.table_line("alerts"), 10.0,
                      "e.g. hold_fatal = \"10s\" (0 pages a fatal line at once, and again when the stage fails)")
    log_warnings = raw.get("log_warnings", False)
    if not isinstance(log_warnings, bool):
        b.err(f"log_warnings must be true or false, got {log_warnings!r}", "alerts.log_warnings",
              b.loc.key_line("alerts", "log_warnings") or b.loc.table_line("alerts"),
              "write log_warnings = true to send WARNING lines of the logs to the command too")
        log_warnings = False
    notify: tuple[str, ...] = ()
    if "notify" in raw:
        n = raw["notify"]
        if isinstance(n, list) and all(isinstance(x, str) and "://" in x for x in n):
            # {var} as everywhere; ${NAME} is the environment's, read when sending.
            notify = tuple(_substitute(re.sub(r"\$\{(\w+)\}", r"${{\1}}", x), variables, b, "alerts.notify",
                                       b.loc.key_line("alerts", "notify")) for x in n)
        else:
            b.err("alerts.notify must be a list of Apprise URLs", "alerts.notify",
                  b.loc.key_line("alerts", "notify"),
                  'write notify = ["ntfy://ntfy.sh/my-topic", "slack://${SLACK_TOKEN}"] '
                  "(secrets as ${NAME} from the environment, or in notify_file)")
    notify_file = None
    if "notify_file" in raw:
        if isinstance(raw["notify_file"], str):
            notify_file = Path(os.path.expanduser(_substitute(raw["notify_file"], variables, b,
                                                              "alerts.notify_file",
                                                              b.loc.key_line("alerts", "notify_file"))))
        else:
            b.err("alerts.notify_file must be a path", "alerts.notify_file",
                  b.loc.key_line("alerts", "notify_file"), 'e.g. notify_file = "~/.config/eagle3tui/notify"')
    return AlertsConfig(command=command, min_level=level, rate_limit_per_min=rate,
                        timeout_s=timeout, dedup_window_s=window, hold_fatal_s=hold,
                        log_warnings=log_warnings, notify=notify, notify_file=notify_file)


def find_cycle(stages: list[StageConfig]) -> list[str] | None:
    """Return one dependency cycle as a list of names (first == last), or None."""
    deps = {s.name: [d for d in s.depends_on if d != s.name] for s in stages}
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        color[n] = 1
        stack.append(n)
        for d in deps.get(n, []):
            if d not in deps:
                continue
            if color.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if color.get(d) is None:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        color[n] = 2
        return None

    for s in stages:
        if color.get(s.name) is None:
            found = visit(s.name)
            if found:
                return found
    return None


def topo_order(stages: list[StageConfig]) -> list[StageConfig]:
    """Stages in dependency order, keeping file order among independent ones."""
    done: set[str] = set()
    out: list[StageConfig] = []
    remaining = list(stages)
    while remaining:
        progressed = False
        for s in list(remaining):
            if all(d in done for d in s.depends_on):
                out.append(s)
                done.add(s.name)
                remaining.remove(s)
                progressed = True
        if not progressed:  # a cycle; validation reports it
            out.extend(remaining)
            break
    return out


def missing_executables(config: PipelineConfig, names: list[str] | None = None) -> list[ConfigError]:
    """Stages whose program cannot be found on PATH (or at its path), as errors."""
    errors = []
    for s in config.stages:
        if names is not None and s.name not in names:
            continue
        if s.shell or not s.command:
            continue
        prog = s.command[0]
        path_env = s.env.get("PATH", os.environ.get("PATH", ""))
        if os.sep in prog:
            p = Path(prog) if os.path.isabs(prog) else s.cwd / prog
            ok = p.is_file() and os.access(p, os.X_OK)
        else:
            ok = shutil.which(prog, path=path_env) is not None
        if not ok:
            errors.append(ConfigError(
                f"stage {s.name!r}: executable {prog!r} not found", path=str(config.path),
                key=f"stage[{s.name}].command", line=s.command_line or s.line,
                fix="install it, give its full path, or fix PATH in the stage's env"))
    return errors


def uncreatable_dirs(config: PipelineConfig) -> list[ConfigError]:
    """The state directory and log directories that could not be made or written, as errors.

    A launch would otherwise fail only when the stage is due (and, for the
    state directory, before the driver could say anything)."""
    errors = []
    wanted = [(config.state_dir, "pipeline.state_dir", None, "the state directory")]
    wanted += [(s.log.parent, f"stage[{s.name}].log", s.line, f"the log directory of stage {s.name!r}")
               for s in config.stages]
    for directory, key, line, what in wanted:
        why = _why_not_creatable(Path(directory))
        if why:
            errors.append(ConfigError(f"{what} {directory} cannot be used: {why}", path=str(config.path),
                                      key=key, line=line,
                                      fix="point it at a directory you can write (it is created if missing)"))
    return errors


def _why_not_creatable(directory: Path) -> str | None:
    p = directory
    while not p.exists():
        if p.parent == p:
            return None
        p = p.parent
    if not p.is_dir():
        return f"{p} is a file, not a directory"
    if not os.access(p, os.W_OK | os.X_OK):
        return f"{p} is not writable by this user (or is on a read-only filesystem)"
    return None


def parse_overrides(items: list[str]) -> dict[str, str]:
    """``["model=/x", "n=3"]`` from ``--set`` flags; raise ConfigError on a bad one."""
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set {item!r} is not NAME=VALUE", key="--set",
                              fix="write --set model=/path/to/model")
        k, v = item.split("=", 1)
        out[k.strip()] = v
    return out
