"""Worker prefixes and log headers, parsed by hand (no regex, linear time).

vLLM and torchrun prefix each worker's lines: ``(Worker_TP0 pid=268417)``,
``(VllmWorker rank=3 pid=10672)``, ``(EngineCore_DP0 pid=12)``,
``(RayWorkerWrapper pid=5, ip=10.0.0.2)``, ``[rank3]:``, ``[default0]:``.
"""

from __future__ import annotations

_LEVELS = ("INFO", "WARNING", "WARN", "ERROR", "DEBUG", "CRITICAL")


def split_worker(text: str) -> tuple[str | None, str]:
    """Return ``(worker, rest)``; worker is None when there is no prefix.

    The pid is dropped from the worker name (``Worker_TP0``,
    ``VllmWorker rank=3``): it identifies the process, the name identifies
    the role, and a restarted worker keeps its role.
    """
    if not text:
        return None, text
    c = text[0]
    if c == "(":
        close = text.find(")", 1, 120)
        if close < 0:
            return None, text
        inner = text[1:close]
        p = inner.find("pid=")
        if p < 0:
            return None, text
        name = inner[:p].rstrip(", ")
        if not name:
            name = inner.split(",", 1)[0]
        rest = text[close + 1 :]
        return name, rest.removeprefix(" ")
    if c == "[":
        close = text.find("]", 1, 40)
        if close < 0 or text[close + 1 : close + 2] != ":":
            return None, text
        inner = text[1:close]
        if inner.startswith("rank") and inner[4:].isdigit() or inner.startswith("default") and inner[7:].isdigit():
            rest = text[close + 2 :]
            return inner, rest.removeprefix(" ")
    return None, text


def strip_log_header(text: str) -> str:
    """Drop a leading ``LEVEL MM-DD HH:MM:SS [file.py:N] `` logger header.

    vLLM logs every line of a traceback through its logger, so the header
    must go before the traceback grammar (indentation, ``File "..."``) is
    visible. Lines without a recognised header are returned unchanged.
    """
    sp = text.find(" ", 0, 10)
    if sp < 0 or text[:sp] not in _LEVELS:
        return text
    lb = text.find("[", sp, sp + 40)
    if lb < 0:
        return text
    rb = text.find("] ", lb, lb + 200)
    if rb < 0:
        return text
    return text[rb + 2 :]
