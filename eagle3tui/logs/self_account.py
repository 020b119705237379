"""What a line says about itself: its own event declared harmless, or a notice about its log stream.

The notice catalog (``builtin_rules.toml``) names harmless notices one program at a time; a
fresh program's notice in its own words meets none of them. Two shapes recur whatever the
program, and say by their grammar that the run is not hurt:

* the line clears its own event: "This is not an error, but may impair performance",
  "This is benign and only means that we won't check ...", "The caller indicates that this
  is not a failure", "This is an automated fix - no further action is needed". The
  program that detected the condition is the best judge of it, and it says so in the line.
  Not when the clearance is a condition ("This IS expected if you are initializing ...",
  "If this is not an error, ...") or negated ("This IS NOT expected"), and not when what
  follows it in the same sentence asks the reader to act ("This is not an error, but you
  should be careful ...") or reports harm (:func:`notice_grammar.reports_harm`);
* the notice is about the program's own log stream before its logging is set up: "All log
  messages before absl::InitializeLog() is called are written to STDERR", "Logging before
  InitGoogleLogging() is written to STDERR", "Logging before flag parsing goes to stderr".
  Where log lines go is bookkeeping, like the auxiliary parts of judge step 7.

Every pattern uses counted repeats only (tests/test_logs_patterns_bounded.py).
"""

from __future__ import annotations

import re

from eagle3tui.logs import notice_grammar

# "this is not an error", "which is benign", "this is expected, and simply means ...", "is harmless"
_CLEARED = re.compile(
    r"\b(?:this|which|it|that)\s(?:is|was)\s(?:(?:also|just|simply|completely|totally|perfectly)\s)?"
    r"(?:not\s(?:an?\s)?(?:error|failure|problem|issue|bug)|benign|harmless|expected|normal)\b"
    r"|\b(?:is|are)\s(?:(?:completely|totally|perfectly)\s)?(?:benign|harmless)\b"
    r"|\bno\s(?:further\s)?(?:user\s)?action\s(?:is\s)?(?:needed|required|necessary)\b"
    r"|\bnothing\sto\sworry\sabout\b",
    re.I,
)
# The clearance is a condition or a purpose, not a verdict: "This IS expected if you are
# initializing X from ...", "this is expected to fail", "is normal when ...".
_CONDITION_AFTER = re.compile(r"\s?,?\s(?:if|when|unless|only if|to|for)\b", re.I)
# ... or it sits inside a conditional sentence: "If this is not an error, please ...".
_CONDITION_BEFORE = re.compile(r"\b(?:if|unless|whether)\s(?:[\w'-]{1,20}\s){0,3}$", re.I)
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")
# A notice about where the program's log lines go until its logging is set up.
_LOG_STREAM = re.compile(
    r"\blog(?:ging|s|\smessages?)?\s(?:[\w:().-]{1,40}\s){0,6}?(?:before|prior\sto|until)\s"
    r"(?:[\w:().-]{1,40}\s){1,6}?(?:(?:is|are)\s)?(?:written|goes|go|sent|printed|logged)\sto\s"
    r"(?:STDERR|stderr|standard\serror|the\sconsole)\b",
    re.I,
)
# Literals one of which is in every match of the patterns above (lower-cased): the judge's
# gate runs them only on lines that hold one.
GATE_LITERALS = (
    "not a", "not an ", "benign", "harmless", "expected", "normal", "action", "nothing to worry", "stderr",
    "standard error", "the console",
)


def clears_itself(body: str) -> bool:
    """Whether ``body`` declares its own event harmless (see the module's doc)."""
    head = body[:600]
    for m in _CLEARED.finditer(head):
        if _CONDITION_AFTER.match(head, m.end()) or _CONDITION_BEFORE.search(head[max(0, m.start() - 80) : m.start()]):
            continue
        # What follows the clearance in its sentence ("..., but you should be careful") must not undo it.
        rest = head[m.end() : m.end() + 200]
        end = _SENTENCE_END.search(rest)
        if notice_grammar.reports_harm(rest[: end.start()] if end else rest):
            continue
        return True
    return False


def about_own_logging(body: str) -> bool:
    """Whether ``body`` is a notice about where the program's log lines go before logging is set up."""
    return _LOG_STREAM.search(body[:400]) is not None
