"""pipeline.toml validation: every error names the file, key, line and fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3tui.config import load_config, topo_order
from eagle3tui.durations import format_duration, parse_duration
from eagle3tui.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "pipeline.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("text,seconds", [
    ("22m", 1320), ("1h30m", 5400), ("90s", 90), ("1.5h", 5400), ("01:33", 93),
    ("1:02:03", 3723), (45, 45), ("2d", 172800), ("1h 30m", 5400),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "abc", "10x", "5", "m", "1h30", "-5m", "1:2:3:4"])
def test_parse_duration_rejects(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


@pytest.mark.parametrize("text,seconds", [
    ("10min", 600), ("10 min", 600), ("10 minutes", 600), ("1 minute", 60), ("1 hour", 3600),
    ("2 hours", 7200), ("1hr", 3600), ("90s", 90), ("90 sec", 90), ("90 seconds", 90),
    ("1 hour 30 min", 5400), ("1h30min", 5400), ("2 days", 172800), ("1.5 hours", 5400),
])
def test_parse_duration_accepts_common_spellings(text, seconds):
    assert parse_duration(text) == seconds


def test_parse_duration_errors_name_the_unit_not_a_letter():
    with pytest.raises(ValueError) as e:
        parse_duration("10 mnutes")
    assert "unknown unit 'mnutes'" in str(e.value) and "did you mean 'minutes'" in str(e.value)
    with pytest.raises(ValueError) as e:
        parse_duration("3 fortnights")
    assert "unknown unit 'fortnights'" in str(e.value)


def test_a_bare_number_string_is_refused_with_a_fix(tmp_path):
    with pytest.raises(ValueError) as e:
        parse_duration("90")
    assert "no unit" in str(e.value) and '"90s"' in str(e.value) and '"90m"' in str(e.value)
    p = write(tmp_path, '[pipeline]\nname = "d"\n[[stage]]\nname = "s"\ncommand = ["true"]\n'
                        'estimate = "90"\n')
    with pytest.raises(ConfigError) as ce:
        load_config(p)
    msg = str(ce.value)
    assert "stage[s].estimate" in msg and f"{p}:6" in msg and '"90s"' in msg, msg


def test_missing_executable_cites_the_command_line(tmp_path):
    from eagle3tui.config import missing_executables

    p = write(tmp_path, '[pipeline]\nname = "d"\n\n[[stage]]\nname = "s"\ndescription = "x"\n'
                        'command = ["no-such-program-e3x", "--y"]\n')
    errors = missing_executables(load_config(p))
    assert len(errors) == 1 and f"{p}:7" in str(errors[0]), str(errors[0])


def test_format_duration():
    assert format_duration(1637) == "27:17"
    assert format_duration(3723) == "1:02:03"
    assert format_duration(None) == "-"


def test_full_config_and_vars(tmp_path):
    p = write(tmp_path, """
[pipeline]
name = "demo"

[vars]
model = "/models/x"
out = "{config_dir}/out"

[[stage]]
name = "serve"
kind = "service"
command = ["server", "--model", "{model}"]
gpus = "all"
ready = { url = "http://127.0.0.1:8000/v1/models", timeout = "20m" }

[[stage]]
name = "extract"
depends_on = ["serve"]
command = ["python", "-m", "pipeline.extract", "--out", "{out}/h", "{{literal}}"]
estimate = "22m"
gpus = [0, 1]
resume = ["--resume"]
outputs = ["{out}/h/index.json"]
env = { HF_HOME = "{out}/hf" }
""")
    cfg = load_config(p, {"model": "/other"})
    serve, extract = cfg.stages
    assert serve.command == ("server", "--model", "/other")
    assert serve.gpus.all and serve.ready and serve.ready.timeout_s == 1200
    assert extract.command[-1] == "{literal}"
    assert extract.command[-2] == f"{tmp_path}/out/h"
    assert extract.estimate_s == 1320
    assert extract.argv(resume=True)[-1] == "--resume"
    assert extract.env["HF_HOME"] == f"{tmp_path}/out/hf"
    assert extract.outputs == (tmp_path / "out/h/index.json",)
    assert cfg.state_dir == tmp_path / ".eagle3tui"
    assert extract.log == tmp_path / ".eagle3tui/logs/extract.log"
    assert serve.gpus.overlaps(extract.gpus)
    assert [s.name for s in topo_order(cfg.stages)] == ["serve", "extract"]


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, text))
    return str(e.value)


def test_unknown_key_names_line_and_fix(tmp_path):
    msg = error_of(tmp_path, """[[stage]]
name = "a"
command = ["true"]
estimmate = "5m"
""")
    assert "pipeline.toml:4" in msg and "stage[a].estimmate" in msg and "fix:" in msg
    assert "did you mean 'estimate'?" in msg


def test_misspelt_names_get_the_closest_known_one(tmp_path):
    msg = error_of(tmp_path, """[pipeline]
stal_floor = "1m"
[[stage]]
name = "tokenize"
command = ["true"]
[[stage]]
name = "train"
command = ["{modle}"]
depends_on = ["tokenise"]
retry = { max_atempts = 2 }
[vars]
model = "m"
""")
    assert "did you mean 'stall_floor'?" in msg
    assert "unknown stage 'tokenise'" in msg and "did you mean 'tokenize'?" in msg
    assert "did you mean 'max_attempts'?" in msg
    assert "unknown variable {modle}" in msg and "did you mean {model}?" in msg


def test_invalid_toml_names_line(tmp_path):
    msg = error_of(tmp_path, "[[stage]]\nname = \"a\"\ncommand = [\"true\"\n")
    assert "invalid TOML" in msg and "pipeline.toml" in msg


def test_cycle_and_unknown_dependency(tmp_path):
    msg = error_of(tmp_path, """
[[stage]]
name = "a"
command = ["true"]
depends_on = ["c"]
[[stage]]
name = "b"
command = ["true"]
depends_on = ["a"]
[[stage]]
name = "c"
command = ["true"]
depends_on = ["b"]
[[stage]]
name = "d"
command = ["true"]
depends_on = ["nope"]
""")
    assert "dependency cycle: a -> c -> b -> a" in msg or "dependency cycle" in msg
    assert "unknown stage 'nope'" in msg


@pytest.mark.parametrize("snippet,needle", [
    ('command = "echo hi"', "argv lists"),
    ('command = ["x"]\nestimate = "soon"', "bad duration"),
    ('command = ["x"]\ngpus = "some"', "bad GPU spec"),
    ('command = ["x", "{missing}"]', "unknown variable {missing}"),
    ('command = ["x"]\nkind = "daemon"', "kind must be"),
    ('command = ["x"]\nready = "http://x"', "only meaningful"),
    ('command = ["x"]\nretry = { max_attempts = 0 }', "max_attempts"),
])
def test_stage_errors(tmp_path, snippet, needle):
    msg = error_of(tmp_path, f'[[stage]]\nname = "a"\n{snippet}\n')
    assert needle in msg, msg


def test_missing_command_and_duplicates(tmp_path):
    msg = error_of(tmp_path, """
[[stage]]
name = "a"
[[stage]]
name = "b"
command = ["true"]
[[stage]]
name = "b"
command = ["true"]
""")
    assert "missing command" in msg and "duplicate stage name 'b'" in msg


def test_bad_stage_name_is_rejected(tmp_path):
    msg = error_of(tmp_path, '[[stage]]\nname = "../evil"\ncommand = ["true"]\n')
    assert "needs a name" in msg


def test_invalid_user_rule_regex_names_the_rule(tmp_path):
    msg = error_of(tmp_path, """
[[stage]]
name = "a"
command = ["true"]
[[rule]]
id = "my-rule"
pattern = "(unclosed"
kind = "fatal"
explanation = "x"
""")
    assert "my-rule" in msg


def test_retry_on_must_name_a_rule_or_exit_code(tmp_path):
    msg = error_of(tmp_path, """[[stage]]
name = "t"
command = ["true"]
retry = { on = ["nccl-timeout", "nccl", "exit:3"] }
""")
    assert "'nccl-timeout' is neither a rule id" in msg and "pipeline.toml:4" in msg
    ok = write(tmp_path, '[[stage]]\nname = "t"\ncommand = ["true"]\nretry = { on = ["nccl", "exit:137", "signal:9"] }\n')
    assert load_config(ok).stages[0].retry.on == ("nccl", "exit:137", "signal:9")
