"""Rule pack, user rules, config errors, the prefilter and classification by family."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3tui.errors import ConfigError, ConfigErrors
from eagle3tui.logs import rules as rules_mod
from eagle3tui.logs.rules import (
    KINDS,
    RuleSet,
    build_ruleset,
    derive_keywords,
    load_builtin_rules,
    load_rules_file,
    rules_from_specs,
)
from eagle3tui.logs.workers import split_worker, strip_log_header


@pytest.fixture(scope="module")
def rs() -> RuleSet:
    return build_ruleset()


def test_builtin_pack_loads_and_every_rule_is_prefiltered() -> None:
    rules = load_builtin_rules()
    assert len(rules) >= 20
    ids = [r.id for r in rules]
    assert len(ids) == len(set(ids))
    for r in rules:
        assert r.kind in KINDS
        assert r.explanation, r.id
        # Every builtin rule goes through the literal prefilter (fast path).
        assert r.keywords, f"{r.id} has no prefilter keywords"


def test_shipped_packs_pass_every_check_the_start_up_skips() -> None:
    """At start the shipped patterns are compiled lazily and their examples not
    checked; the full check (compile, examples match, examples hold a keyword)
    must pass, and find the same rules."""
    from eagle3tui.logs.rules import check_shipped_rules, load_shipped_rules

    checked = check_shipped_rules()
    assert [(r.id, r.pattern, r.keywords) for r in checked] == [
        (r.id, r.pattern, r.keywords) for r in load_shipped_rules()
    ]
    bad = {"id": "bad", "pattern": "oom", "kind": "fatal", "explanation": "x", "examples": ["no match here"]}
    with pytest.raises(ConfigError, match="does not match its example"):
        rules_from_specs([bad], "builtin_rules.toml", "builtin", check=True)


# Lines written the way the real tools write them, but not the pack's own
# examples: the rules must cover families, not single strings.
FAMILY_CASES = [
    # OOM in its shapes
    ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)", "fatal", "oom"),
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB", "fatal", "oom"),
    ("RuntimeError: CUDA error: out of memory", "fatal", "oom"),
    ("MemoryError", "fatal", "oom"),
    ("[  123.456] Out of memory: Killed process 4242 (python3) total-vm:100kB", "fatal", "oom"),
    # NCCL / distributed
    ("[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.", "fatal", "nccl"),
    ("torch.distributed.DistBackendError: [3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store", "fatal", "nccl"),
    ("RuntimeError: NCCL communicator was aborted on rank 2.", "fatal", "nccl"),
    # corrupted weights
    ("safetensors_rust.SafetensorError: Error while deserializing header: InvalidHeaderDeserialization", "fatal", "safetensors-corrupt"),
    ("safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer", "fatal", "safetensors-corrupt"),
    # engines
    ("RuntimeError: Engine core initialization failed. See root cause above.", "fatal", "vllm-engine-dead"),
    ("(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [core.py:700] EngineCore failed to start.", "fatal", "vllm-engine-dead"),
    ("[2025-01-01 00:00:00 TP0] Rank 0 scheduler is dead. Please check if there are relevant logs.", "fatal", "vllm-engine-dead"),
    # torchrun
    ("[2024-05-08 08:47:31,877] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 2 (pid: 5939) of binary: /usr/bin/python", "fatal", "torchrun-child-failed"),
    # native crashes
    ("/bin/bash: line 1: 12345 Segmentation fault      (core dumped) python train.py", "fatal", "crash-signal"),
    ("*** SIGSEGV received at time=1700000000 on cpu 3 ***", "fatal", "crash-signal"),
    ("Aborted (core dumped)", "fatal", "crash-signal"),
    # disk
    ("cp: error writing '/data/out.bin': No space left on device", "fatal", "disk-full"),
    # usage errors from argparse and click
    ("usage: x.py: error: argument --lr: invalid float value: 'fast'", "fatal", "usage-error"),
    ("Error: No such option: --data-path", "fatal", "usage-error"),
    ("vllm serve: error: unrecognized arguments: --tp 8", "fatal", "usage-error"),
    # CUDA context failures
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "fatal", "cuda-error"),
    ("../aten/src/ATen/native/cuda/Indexing.cu:1141: indexSelectLargeIndex: block: [0,0,0], thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed. device-side assert triggered", "fatal", "cuda-error"),
    ("Killed", "fatal", "killed"),
    ("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.", "fatal", "killed"),
    ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address.", "fatal", "nccl"),
    ("RuntimeError: Worker failed with error 'CUDA driver error', please check the stack trace above for the root cause", "fatal", "vllm-engine-dead"),
    ("huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-x)", "fatal", "missing-model-files"),
    ("ERROR:    Exception in ASGI application", "warning", "request-failed"),
    ("RuntimeError: DataLoader worker (pid 77) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory.", "fatal", "crash-signal"),
    ("OSError: /models/llama does not appear to have a file named config.json.", "fatal", "missing-model-files"),
    # benign lookalikes
    ("ERROR 03-03 10:00:00 [gpt_oss_triton_kernels_moe.py:60] Failed to import Triton kernels. Please make sure your triton version is compatible. Error: cannot import name 'RoutingData' from 'triton_kernels.routing'", "benign", "triton-kernels-import"),
    ("WARNING: apex is not installed, falling back to torch.nn.LayerNorm", "benign", "optional-import"),
    ('INFO:     10.0.0.5:41180 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error', "warning", "request-failed"),
    ("Retrying in 4 seconds after ConnectionError (attempt 2/5)", "benign", "retry"),
    ("Exception ignored in: <module 'threading' from '/usr/lib/python3.10/threading.py'>", "benign", "shutdown-noise"),
    # warnings and plain errors
    ("node1:1:2 [0] NCCL WARN Net : Connection closed by remote peer", "warning", "nccl-warn"),
    ("/x.py:1: FutureWarning: `resume_download` is deprecated and will be removed in version 1.0.0.", "benign", "deprecation"),
    ("{'loss': nan, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 1.2}", "warning", "nan-loss"),
    ("ERROR 01-01 [x.py:1] Something the pack has never seen", "warning", "error-line"),
    ("INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)", "info", "server-ready"),
]


@pytest.mark.parametrize(("line", "kind", "rule"), FAMILY_CASES)
def test_families(rs: RuleSet, line: str, kind: str, rule: str) -> None:
    _worker, rest = split_worker(line)
    got = rs.classify(rest)
    assert got is not None, line
    assert (got.kind, got.id) == (kind, rule), line
    # The block scanner finds the same line through the prefilter.
    cands = rs.scan((line + "\n").encode())
    assert cands and got.id in {rs.rules[i].id for i in cands[0][2]}


@pytest.mark.parametrize(
    "line",
    [
        "INFO 02-22 00:33:37 [compressed_tensors_moe.py:199] Using CompressedTensorsWNA16MarlinMoEMethod",
        "Loading safetensors checkpoint shards:   6% Completed | 4/64 [01:33<27:17, 27.30s/it]",
        "{'loss': 1.25, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.5}",
        'INFO:     127.0.0.1:50312 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "error_rate=0.0 errors=0",  # the word alone is not an error
    ],
)
def test_ordinary_lines_are_not_errors(rs: RuleSet, line: str) -> None:
    got = rs.classify(line)
    assert got is None or got.kind in ("info", "progress"), (line, got and got.id)


def test_worker_prefixes() -> None:
    assert split_worker("(Worker_TP0 pid=268417) INFO x") == ("Worker_TP0", "INFO x")
    assert split_worker("(VllmWorker rank=3 pid=10672) ERROR y") == ("VllmWorker rank=3", "ERROR y")
    assert split_worker("[rank3]: Traceback (most recent call last):") == ("rank3", "Traceback (most recent call last):")
    assert split_worker("[rank0]:[E1206 18:44:12 ProcessGroupNCCL.cpp:607] x")[0] == "rank0"
    assert split_worker("(RayWorkerWrapper pid=5, ip=10.0.0.2) hi") == ("RayWorkerWrapper", "hi")
    assert split_worker("(not a worker) text") == (None, "(not a worker) text")
    assert split_worker("[INFO] text") == (None, "[INFO] text")
    assert strip_log_header("ERROR 08-15 17:38:13 [async_llm.py:416]   File \"x\"") == '  File "x"'
    assert strip_log_header("plain") == "plain"


def test_user_rule_replaces_builtin_and_comes_first() -> None:
    rs = build_ruleset(
        [
            {
                "id": "triton-kernels-import",
                "pattern": "Failed to import Triton kernels",
                "kind": "fatal",
                "explanation": "on this cluster the fallback is too slow to use",
            },
            {"id": "my-marker", "pattern": r"checkpoint \d+ corrupt", "kind": "fatal", "explanation": "ours"},
        ],
        "pipeline.toml",
    )
    r = rs.classify("ERROR 1 [x.py:1] Failed to import Triton kernels. Error: ...")
    assert r is not None and (r.id, r.kind, r.source) == ("triton-kernels-import", "fatal", "user")
    assert [x.id for x in rs.rules].count("triton-kernels-import") == 1
    r2 = rs.classify("checkpoint 12 corrupt, ERROR")
    assert r2 is not None and r2.id == "my-marker"
    assert rs.rules[1].keywords == ("checkpoint ",) or "checkpoint " in rs.rules[1].keywords[0]


def test_stage_limited_rule() -> None:
    rs = build_ruleset(
        [{"id": "slow-disk", "pattern": "disk slow", "kind": "warning", "explanation": "x", "stages": ["extract"]}],
        "p.toml",
    )
    assert rs.classify("disk slow", stage="extract").id == "slow-disk"  # type: ignore[union-attr]
    assert rs.classify("disk slow", stage="train") is None


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ({"id": "bad-re", "pattern": "(unclosed", "kind": "fatal", "explanation": "x"}, "rule 'bad-re': invalid regular expression"),
        ({"id": "bad-kind", "pattern": "x", "kind": "deadly", "explanation": "x"}, "rule 'bad-kind': kind 'deadly'"),
        ({"id": "no-expl", "pattern": "x", "kind": "fatal"}, "rule 'no-expl': missing key(s) explanation"),
        ({"id": "extra", "pattern": "x", "kind": "fatal", "explanation": "x", "severity": 3}, "rule 'extra': unknown key(s) severity"),
        ({"pattern": "x", "kind": "fatal", "explanation": "x"}, "rule #1: missing key(s) id"),
        ({"id": "ex", "pattern": "abc", "kind": "fatal", "explanation": "x", "examples": ["xyz"]}, "does not match its example"),
        ({"id": "st", "pattern": "abc", "kind": "fatal", "explanation": "x", "stages": "train"}, "'stages' must be a list"),
    ],
)
def test_config_errors_name_the_rule(spec: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as ei:
        build_ruleset([spec], "/srv/pipeline.toml")
    msg = str(ei.value)
    assert needle in msg
    assert "/srv/pipeline.toml" in msg
    assert "fix:" in msg


def test_several_errors_reported_together_with_line(tmp_path: Path) -> None:
    f = tmp_path / "rules.toml"
    f.write_text(
        '[[rule]]\nid = "a"\npattern = "("\nkind = "fatal"\nexplanation = "x"\n\n'
        '[[rule]]\nid = "b"\npattern = "ok"\nkind = "nope"\nexplanation = "x"\n'
    )
    with pytest.raises(ConfigErrors) as ei:
        build_ruleset(load_rules_file(f), str(f))
    text = str(ei.value)
    assert f"{f}:2" in text and "rule 'a'" in text
    assert f"{f}:8" in text and "rule 'b'" in text


def test_rules_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_rules_file(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[rule]\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_rules_file(bad)


def test_derive_keywords() -> None:
    assert derive_keywords(r"CUDA out of memory") == ("CUDA out of memory",)
    assert set(derive_keywords(r"foo\d+ (?:alpha|betamax) bar")) == {"alpha", "betamax"}
    assert derive_keywords(r"(?i)anything") == ()
    assert derive_keywords(r"\d+\s+\w+") == ()
    assert derive_keywords(r"\bKilled\b") == ("Killed",)


def test_rule_without_keywords_still_works() -> None:
    rs = build_ruleset(
        [{"id": "ci", "pattern": r"(?i)disk\s+on\s+fire", "kind": "fatal", "explanation": "x"}], "p.toml"
    )
    assert rs.rules[0].keywords == ()
    data = b"ok\nthe DISK   on FIRE now\nok\n"
    cands = rs.scan(data)
    hit = [c for c in cands if 0 in c[2]]
    assert hit and data[hit[0][0] : hit[0][1]] == b"the DISK   on FIRE now"


def test_regex_fallback_prefilter_matches_aho_corasick(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = build_ruleset()
    assert fast.accelerated
    monkeypatch.setattr(rules_mod, "_ahocorasick", None)
    slow = RuleSet(fast.rules)
    assert not slow.accelerated
    text = "\n".join(c[0] for c in FAMILY_CASES) + "\nplain line\n"
    data = text.encode()
    a = fast.scan(data)
    b = slow.scan(data)
    assert [(x[0], x[1]) for x in a] == [(x[0], x[1]) for x in b]
    for (_, _, ra), (_, _, rb) in zip(a, b):
        assert set(ra) == set(rb)


def test_many_user_keywords_scan_alike_with_and_without_the_automaton(monkeypatch: pytest.MonkeyPatch) -> None:
    """300 user rules on top of the pack: the automaton and the regex fallback find the same lines and rules."""
    import random

    rnd = random.Random(3)
    words = ["".join(rnd.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(8)) for _ in range(300)]
    many = [{"id": f"u{i}", "pattern": w, "kind": "warning", "explanation": "x"} for i, w in enumerate(words)]
    text = "\n".join(c[0] for c in FAMILY_CASES) + f"\nplain\n{words[7]} here\n{words[299]}\n"
    data = text.encode()
    builtin = build_ruleset()
    full = build_ruleset(many, "p.toml")
    assert full.accelerated
    monkeypatch.setattr(rules_mod, "_ahocorasick", None)
    slow = RuleSet(full.rules)

    def ids(rs: RuleSet) -> list[tuple[int, frozenset[str]]]:
        return [(ls, frozenset(rs.rules[i].id for i in idx)) for ls, _le, idx in rs.scan(data)]

    assert ids(full) == ids(slow)
    builtin_only = [(ls, s - {f"u{i}" for i in range(300)}) for ls, s in ids(full)]
    # Lines hit only by structural keywords carry no rule: compare the ruled ones.
    assert [x for x in builtin_only if x[1]] == [x for x in ids(builtin) if x[1]]
    assert any("u7" in s for _ls, s in ids(full)) and any("u299" in s for _ls, s in ids(full))
