"""Harmless by the grammar of the notice: a decision the program took and goes on with.

The notice catalog (one pack rule per known notice) recognises the notices it was
written from; fresh logs bring others. What the harmless ones share is their
grammar, whatever program prints them: the program reports a choice it made about a
value or a part of itself and carries on --

* an act told as a sentence that starts with it: "Casting torch.bfloat16 to
  torch.float16.", "Capping object memory store to 20.0GB.", "Overriding
  torch_dtype=None with `torch_dtype=torch.float16` due to ...", "disabling CUDA
  graphs due to GPU architecture", "Using 'pin_memory=False' as WSL is detected";
* the same act in the passive, with what it acted on or why: "Default sampling
  parameters have been overridden by the model's generation config", "Overlap
  scheduler is disabled because of using eagle speculative decoding", "Chunked
  prefill is enabled by default for models with ...", "... because they were
  offloaded to the cpu", "OMP_NUM_THREADS set to 1 to avoid system overload";
* a default or a precedence it applies: "Defaulting to ...", "Will assume defaults",
  "`max_new_tokens` will take precedence";
* a capability it states it does not use here: "awq quantization is not fully
  optimized yet".

Such a sentence is only harmless when nothing else in the line reports a shortage,
lost or cut data, a wrong result, a hang or a retry, or a limit the decision puts
on the run ("This limits the maximum batch size ..."), or a protection it leaves off
("CORS is set to allow all origins ('*') and no API key is set"), or asks the reader outright to
change something. Those words veto it ("`max_length` is set to 2048. This can lead
to unexpected behavior. You should consider increasing ...", "truncating input
prompt", "may waste at most 60.00% KV cache memory"), unless the line says it acts
to avoid them ("Disabling parallelism to avoid deadlocks") or that there is none
("Default to no truncation"). A request put as a condition ("If this is not
intended, please relaunch ...") or for the reader's own goal ("To increase this
further, specify ...") is advice, not a demand.

Every pattern uses counted repeats only: its work per search start is bounded, so
log text cannot make it slow (tests/test_logs_patterns_bounded.py).
"""

from __future__ import annotations

import re

# The acts, as a sentence's first word (a present participle) and as a past participle.
_ACT_ING = (
    r"(?:setting|casting|converting|reducing|lowering|capping|clamping|limiting|overriding|overwriting|"
    r"defaulting|disabling|enabling|forcing|rounding|switching|upcasting|downcasting)"
)
_ACT_ED = (
    r"(?:set|cast|converted|reduced|lowered|capped|clamped|limited|overridden|overwritten|defaulted|"
    r"disabled|enabled|forced|rounded|switched|upcast|downcast|offloaded)"
)
# What the act is done to, with, or why: the word that makes "Setting up ..." or "X is
# enabled." a decision about a value rather than a step of the program's work.
_OBJECT = r"(?:to|by|with|from|for|as|because|due to|since|in default|automatically)"
# The start of a sentence, or of a message after a "name: " or "Warning: " prefix.
_START = r"(?:^|[.!;:]\s{1,3}|\]\s{1,3})"

_DECISION = re.compile(
    # an act that opens the sentence: "Casting X to Y", "disabling X due to Y"
    rf"{_START}{_ACT_ING}\s[^;!?\n]{{1,160}}?\s{_OBJECT}\s"
    # "Using X as Y is detected", "Using X because Y", "Using X instead"
    r"|" + _START + r"using\s[^;!?\n]{1,80}?\s(?:as\s[^;!?\n]{1,60}?\s(?:is|was|are)\s(?:detected|set|enabled|disabled|"
    r"not set|unavailable|not available)|because|since|due to|instead)\b"
    # the act in the passive: "is disabled because of", "have been overridden by", "set to 1 to avoid"
    rf"|\b(?:is|are|was|were|has been|have been|will be|gets|got)\s(?:now\s|automatically\s|therefore\s)?"
    rf"{_ACT_ED}\s{_OBJECT}\s"
    # a subject and the bare participle at the start: "OMP_NUM_THREADS set to 1 ..."
    rf"|^[\w.`'\"=-]{{1,60}}\s{_ACT_ED}\sto\s"
    # a default or a precedence applied
    r"|\bdefault(?:s|ing)?\sto\s|\bwill\s(?:assume|take precedence|use\s(?:the\s|its\s)?default)"
    # a capability the program says it does not use here
    r"|\bnot\s(?:fully\s|yet\s)?optimi[sz]ed\b",
    re.I,
)
# A decision needs a stated reason or purpose when the line has no level of its own:
# "OMP_NUM_THREADS set to 1 to avoid system overload", "... disabled because of ...".
_REASON = re.compile(
    r"\b(?:because|due to|since|to avoid|to prevent|by default|instead|as\s[^;!?\n]{1,60}?\s(?:is|was)\sdetected)\b",
    re.I,
)
# What the line must not report: a shortage, lost or cut data, a wrong result, a hang,
# a timeout or a retry (the reader has to act, or the run is already hurt).
_RISK = re.compile(
    r"\b(?:out of memory|oom|not enough|insufficient|exceed(?:s|ed|ing)?|too (?:long|large|big|many|old|small)|"
    r"limit (?:reached|exceeded)|hit\s[\w.`'=()-]{1,40}\slimit|exhaust\w{0,4}|wast(?:e|es|ed|ing)|"
    r"memory pressure|low memory|run(?:ning)? out|truncat\w{0,6}|drop(?:s|ped|ping)?|discard\w{0,3}|lost|"
    r"los(?:e|es|ing)|incorrect|wrong|unexpected|inaccura\w{0,4}|corrupt\w{0,4}|nan|inf|mismatch\w{0,2}|"
    r"(?:does|do|did) not match|inconsisten\w{0,3}|invalid|hang(?:s|ing)?|hung|deadlock\w{0,2}|stuck|"
    r"timed? ?out|retr(?:y|ies|ying)|giv(?:e|es|ing) up|indexing errors?|correct\s(?:[\w-]{1,20}\s)?results?|"
    # a consequence the program points out: "This limits the maximum batch size ..."
    r"this\s(?:limits|restricts|reduces|lowers|caps)|"
    # a protection left off: "CORS is set to allow all origins ('*') and no API key is set"
    r"security|insecure|unauthenticated|allow(?:s|ing)?\sall|no\s(?:api\s)?key)\b",
    re.I,
)
# ... unless it says it acts to avoid that, or that there is none of it.
_RISK_AVOIDED = re.compile(
    r"\bto (?:avoid|prevent)\s[^.;,!?\n]{1,80}|\b(?:no|without)\s(?:truncation|retries|retry|data loss)\b",
    re.I,
)
# An outright request to the reader to change something. A request put as a condition
# ("If ..., please ...") or for a goal of the reader's own ("To increase this further,
# specify ...", "... to remove this warning") is advice, and is not matched here.
_DEMAND = re.compile(
    r"\b(?:you (?:should|must|need to)|make sure|it is (?:strongly )?recommended to|"
    r"please (?:update|upgrade|increase|decrease|reduce|set|use|specify|check|install|pass|make sure)|"
    r"consider (?:increasing|decreasing|reducing|setting|using|upgrading|adding|creating|lowering|raising))\b",
    re.I,
)
# A sentence that puts its request as a condition: its demands do not count.
_CONDITIONAL_SENTENCE = re.compile(r"(?:^|[.!?]\s{1,3})if\s[^.!?\n]{1,200}", re.I)

# Every match of _DECISION contains one of these (lower-cased): the judge's gate runs
# the pattern only when one occurs in the line.
GATE_LITERALS = (
    "setting", "casting", "converting", "reducing", "lowering", "capping", "clamping", "limiting", "overriding",
    "overwriting", "defaulting", "disabling", "enabling", "forcing", "rounding", "switching", "upcasting",
    "downcasting", "using ", " set ", " cast ", "converted", "reduced", "lowered", "capped", "clamped", "limited",
    "overridden", "overwritten", "defaulted", "disabled", "enabled", "forced", "rounded", "switched", "upcast",
    "downcast", "offloaded", "default", "will assume", "take precedence", "optimized", "optimised",
)


def _vetoed(body: str) -> bool:
    """Whether ``body`` reports harm (a risk it does not say it avoids) or demands a change."""
    text = _RISK_AVOIDED.sub(" ", body) if ("avoid" in body or "prevent" in body or "no " in body
                                            or "without" in body) else body
    if _RISK.search(text) is not None:
        return True
    if _DEMAND.search(body) is None:
        return False
    # Demands made inside a conditional sentence are advice.
    return _DEMAND.search(_CONDITIONAL_SENTENCE.sub(" ", body)) is not None


def reports_harm(text: str) -> bool:
    """Whether ``text`` reports harm (a risk it does not say it avoids) or demands a change.

    The same veto the decision notice uses, for other cues that clear a line
    (:mod:`eagle3tui.logs.self_account` applies it to what follows a clearance).
    """
    return _vetoed(text)


def decided(body: str, *, leveled: bool) -> bool:
    """Whether ``body`` is a notice of a decision the program took and goes on with.

    ``leveled``: the program gave the line a WARNING level of its own; a line without
    one must also say why it decided (its reason or purpose), so that a plain
    statement of a setting ("lr set to 0.001") stays ordinary information.
    """
    head = body[:600]
    if _DECISION.search(head) is None:
        return False
    if not leveled and _REASON.search(head) is None:
        return False
    return not _vetoed(head)
