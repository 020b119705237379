"""Worker prefixes and log headers (through :mod:`anatomy`: anchored, bounded patterns).

vLLM and torchrun prefix each worker's lines: ``(Worker_TP0 pid=268417)``,
``(VllmWorker rank=3 pid=10672)``, ``(EngineCore_DP0 pid=12)``,
``(RayWorkerWrapper pid=5, ip=10.0.0.2)``, ``[rank3]:``, ``[default0]:``.
"""

from __future__ import annotations

from eagle3tui.logs.anatomy import peel, peel_workers, shape

_LEVELS = ("INFO", "WARNING", "WARN", "ERROR", "DEBUG", "CRITICAL")


def split_worker(text: str) -> tuple[str | None, str]:
    """Return ``(worker, rest)``; worker is None when there is no prefix.

    Container, shipper and launcher tags before the worker prefix are
    removed (:func:`anatomy.peel`); nested prefixes
    (``(EngineCore_DP0 pid=1) (VllmWorker TP0 pid=2)``) name the innermost
    process. The pid is dropped from the worker name (``Worker_TP0``,
    ``VllmWorker rank=3``): it identifies the process, the name identifies
    the role, and a restarted worker keeps its role.
    """
    if not text:
        return None, text
    c = text[0]
    if c not in "([ ^#" and not c.isalnum():
        return None, text
    rest = peel(text)
    names, rest = peel_workers(rest)
    if not names:
        return None, rest
    rest = peel(rest.removeprefix(" "))  # "(Worker pid=1)^[[0;0m WARNING ...": tags inside the prefix
    return names[-1], rest


def strip_log_header(text: str) -> str:
    """Drop a leading logger header (``LEVEL MM-DD HH:MM:SS [file.py:N] ``,
    glog, DeepSpeed, uvicorn ... see :func:`anatomy.shape`).

    vLLM logs every line of a traceback through its logger, so the header
    must go before the traceback grammar (indentation, ``File "..."``) is
    visible. Lines without a recognised header are returned unchanged.
    """
    sh = shape(text)
    return sh.body if sh.level is not None and not sh.nccl else text
