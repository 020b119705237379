"""Rules an engineer teaches from a front end: "that ERROR line is harmless".

A marked line becomes a ``[[rule]]`` in the pipeline's learned-rules file
(``learned-rules.toml`` in the state directory, or ``eagle3tui-rules.toml``
beside pipeline.toml where one is there already, or the file ``[pipeline]
learned_rules`` names), which the configuration loads after its own
``[[rule]]`` tables. The pattern is the line's message *literal*, escaped:
the longest stretch of its body (log header, timestamps and worker tags
peeled off) that holds no digit and starts and ends on the line's own token
boundaries, so the same message with other numbers,
ranks or times matches too, and nothing in the text can act as a regex.
The file is rewritten atomically with the new rule appended, so a crash
leaves the old file or the new one, never half a rule.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from eagle3tui.atomic import atomic_write_bytes
from eagle3tui.logs.anatomy import peel, peel_workers, shape
from eagle3tui.textsafe import printable

KINDS = ("benign", "fatal", "warning", "info")
MIN_LITERAL = 8  # shorter literals match too much to be a rule
_RUNS = re.compile(r"[^0-9\n]+")  # stretches without digits
_WORD = re.compile(r"\w")  # a character of a token (letters, digits, underscore)
_LEADING_WORD = re.compile(r"^\w+")


class CannotLearn(ValueError):
    """The line has no literal distinctive enough to make a rule of."""


@dataclass(frozen=True)
class LearnedRule:
    """A rule written to the learned-rules file."""

    id: str
    kind: str
    literal: str
    pattern: str
    path: Path


def message_literal(line: str) -> str:
    """The longest digit-free stretch of the line's message, trimmed."""
    body = printable(line).strip()
    body = peel(body)
    _workers, body = peel_workers(body)
    body = shape(body).body or body
    best = max((_whole_tokens(body, m.start(), m.end()) for m in _RUNS.finditer(body)), key=len, default="")
    if len(best) < MIN_LITERAL:
        raise CannotLearn(f"no stretch of at least {MIN_LITERAL} characters without digits in "
                          f"{body[:80]!r}; write a [[rule]] by hand in pipeline.toml")
    return best


def _whole_tokens(body: str, start: int, end: int) -> str:
    """``body[start:end]`` without a token cut at either end, trimmed of separators.

    A digit-free stretch can begin or end inside a token (``layer12attention``: the
    stretch after the digits starts at ``attention``); such a part-token is dropped, so
    the literal starts and ends where the line's own tokens do.
    """
    text = body[start:end]
    if start > 0 and _WORD.match(body[start - 1]) and _WORD.match(text):
        text = _LEADING_WORD.sub("", text, count=1)
    if end < len(body) and _WORD.match(body[end]) and text and _WORD.match(text[-1]):
        cut = len(text)
        while cut and _WORD.match(text[cut - 1]):  # the token cut at the end, read back from it
            cut -= 1
        text = text[:cut]
    return text.strip(" :=,;[]()|-")


def _toml_literal(text: str) -> str:
    """A TOML basic string (escapes quotes, backslashes and controls)."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def learn(path: Path, line: str, kind: str, *, stage: str | None = None,
          now: float | None = None) -> LearnedRule:
    """Append a rule of ``kind`` for ``line``'s message to the learned-rules file ``path``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    literal = message_literal(line)
    pattern = re.escape(literal)
    try:
        old = path.read_bytes()
    except FileNotFoundError:
        old = b"# Rules taught from eagle3tui (one key on a log line or alert). Edit freely.\n"
    n = len(re.findall(rb"(?m)^\[\[rule\]\]", old)) + 1
    rule_id = f"learned-{kind}-{n}"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(now or time.time()))
    block = (f"\n[[rule]]\n"
             f"id = {_toml_literal(rule_id)}\n"
             f"kind = {_toml_literal(kind)}\n"
             f"pattern = {_toml_literal(pattern)}\n"
             f"explanation = {_toml_literal(f'Marked {kind} from eagle3tui on {when}: the message ' + repr(literal))}\n")
    if stage:
        block += f"stages = [{_toml_literal(stage)}]\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, old.rstrip(b"\n") + b"\n" + block.encode("utf-8"))
    return LearnedRule(rule_id, kind, literal, pattern, path)
