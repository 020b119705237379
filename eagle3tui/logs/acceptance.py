"""Speculative decoding's acceptance, read from a server's own metric lines.

A served draft that the target rejects looks healthy from outside: the server
answers, its output is correct (the target decides every token), only slower.
The servers say how often they accept the draft in their periodic metric
lines; this module reads them, one format per server, and gives the same
figures under stable names:

- ``acceptance_length``: mean tokens emitted per verification step, the
  bonus token included (1.0 means no draft token was ever kept);
- ``acceptance_rate``: accepted draft tokens over drafted ones (0..1);
- ``draft_positions``: draft tokens per step (K), when the line says it.

Each format is known by who is talking, the report's own header (vLLM's
``SpecDecoding metrics:``, SGLang's ``Decode batch.``, llama.cpp's slot
timing or its statistics line), and then its labelled fields; a line of
another program that mentions acceptance is none of these. The formats are
data (``FORMATS``), each with the public thread its sample lines come from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUM = r"(\d{1,9}(?:\.\d{1,9})?)"
_LIST = r"\(?\s{0,4}(\d(?:[\d.]{0,12})(?:\s{0,4},\s{0,4}\d[\d.]{0,12}){0,63})\s{0,4}\)?"

# Cheap literals one of which every line a format reads holds (the log
# monitor's prefilter lets such lines reach the progress parser).
MARKERS = (b"SpecDecoding metrics", b"Speculative metrics", b"accept len", b"draft acceptance",
           b"mean acc len")


@dataclass(frozen=True)
class AcceptanceFormat:
    """One server's acceptance report: its header, its labelled fields, its sources."""

    id: str
    header: re.Pattern[str]
    # field name -> the pattern whose group 1 is its value
    fields: dict[str, re.Pattern[str]]
    # Whether a line of this format reports acceptance only (vLLM's, llama.cpp's):
    # SGLang's decode-batch line also carries throughput and requests.
    whole_line: bool
    sources: tuple[str, ...]


def _f(label: str, value: str = _NUM) -> re.Pattern[str]:
    return re.compile(r"(?:^|[\s,|#(])" + label + r"\s{0,4}[:=]\s{0,4}" + value)


FORMATS: tuple[AcceptanceFormat, ...] = (
    AcceptanceFormat(
        id="vllm-v1",
        header=re.compile(r"\bSpecDecoding metrics:"),
        fields={
            "length": _f("Mean acceptance length"),
            "rate_pct": _f(r"(?:Avg )?Draft acceptance rate", _NUM + "%"),
            "per_position": _f("Per-position acceptance rate", _LIST),
            "accepted": _f("Accepted", _NUM + " tokens"),
            "drafted": _f("Drafted", _NUM + " tokens"),
        },
        whole_line=True,
        sources=("https://github.com/vllm-project/vllm/pull/24127",
                 "https://github.com/AEON-7/Qwen3.6-27B-AEON-Ultimate-Uncensored-DFlash/issues/6",
                 "https://github.com/vllm-project/vllm-ascend/issues/13665",
                 "https://github.com/vllm-project/vllm/pull/15902"),
    ),
    AcceptanceFormat(
        id="vllm-v0",
        header=re.compile(r"\bSpeculative metrics:"),
        fields={
            "rate": _f("Draft acceptance rate"),
            "k": _f("Number of speculative tokens"),
            "drafted": _f("Number of draft tokens"),
            "emitted": _f("Number of emitted tokens"),
        },
        whole_line=True,
        sources=("https://github.com/vllm-project/vllm/issues/9539",),
    ),
    AcceptanceFormat(
        id="sglang",
        header=re.compile(r"\bDecode batch\.[\s,]"),
        fields={
            "length": _f("accept len"),
            "rate": _f("accept rate"),
        },
        whole_line=False,
        sources=("https://github.com/sgl-project/sglang/issues/11948",),
    ),
    AcceptanceFormat(
        id="llama.cpp-slot",
        header=re.compile(r"\bdraft acceptance(?: rate)? = "),
        fields={
            "rate": _f(r"draft acceptance(?: rate)?"),
            "length": _f("mean acceptance length"),
            "per_position": _f("acceptance rate per position", _LIST),
        },
        whole_line=True,
        sources=("https://github.com/ggml-org/llama.cpp/pull/24536",),
    ),
    AcceptanceFormat(
        id="llama.cpp-statistics",
        header=re.compile(r"\bstatistics\s{1,40}draft-[\w-]{1,40}:"),
        fields={
            "length": _f("mean acc len"),
            "per_position": _f("acc rate/pos", _LIST),
            "drafted": _f("gen tokens"),
            "accepted": _f("acc tokens"),
        },
        whole_line=True,
        sources=("https://github.com/ggml-org/llama.cpp/pull/24536",),
    ),
)


@dataclass(frozen=True)
class AcceptanceReading:
    """What one metric line says about acceptance."""

    format: str
    length: float | None
    rate: float | None
    positions: int | None
    whole_line: bool

    def figures(self) -> dict[str, float]:
        """The reading under the live figures' names (only what the line said)."""
        out: dict[str, float] = {}
        if self.length is not None:
            out["acceptance_length"] = round(self.length, 4)
        if self.rate is not None:
            out["acceptance_rate"] = round(self.rate, 4)
        if self.positions is not None:
            out["draft_positions"] = float(self.positions)
        return out


def _values(fmt: AcceptanceFormat, text: str) -> dict[str, str]:
    out = {}
    for name, rx in fmt.fields.items():
        m = rx.search(text)
        if m is not None:
            out[name] = m.group(1)
    return out


def _reading(fmt: AcceptanceFormat, v: dict[str, str]) -> AcceptanceReading | None:
    length = float(v["length"]) if "length" in v else None
    rate = float(v["rate"]) if "rate" in v else None
    if "rate_pct" in v:
        rate = float(v["rate_pct"]) / 100.0
    positions = None
    if "per_position" in v:
        positions = len([p for p in v["per_position"].split(",") if p.strip()])
    elif "k" in v:
        positions = int(float(v["k"]))
    if rate is None and "accepted" in v and "drafted" in v and float(v["drafted"]) > 0:
        rate = float(v["accepted"]) / float(v["drafted"])
    if length is None and positions and "emitted" in v and "drafted" in v and float(v["drafted"]) > 0:
        # vLLM V0 prints no mean length: steps = drafted / K, each emits accepted + 1.
        length = float(v["emitted"]) / (float(v["drafted"]) / positions)
    if length is None and rate is None:
        return None
    if rate is not None and not 0.0 <= rate <= 1.0:
        return None
    if length is not None and not 0.0 < length <= 64.0:
        return None
    return AcceptanceReading(format=fmt.id, length=length, rate=rate, positions=positions,
                             whole_line=fmt.whole_line)


def parse_acceptance(text: str) -> AcceptanceReading | None:
    """The acceptance figures of one log line, or None when it is no server's report."""
    if "acc" not in text:
        return None
    for fmt in FORMATS:
        if fmt.header.search(text) is None:
            continue
        return _reading(fmt, _values(fmt, text))
    return None
