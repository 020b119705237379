"""Stack frames of any runtime: the lines a crash report is made of.

A crash report is recognised by its structure, whatever program printed it: a
run of frame-shaped lines. Python's traceback frames and faulthandler's dump,
c10's ``frame #N:`` lines, gdb's and the sanitizers' ``#N 0x... in f``, glibc's
``lib.so(+0x...)[0x...]`` backtrace, the Go runtime's goroutine dumps, Rust's
numbered backtrace, the JVM's ``at pkg.Class.method(File.java:N)``. The
monitor (:mod:`monitor`) makes a run of them one event, judged by what the
process does after it (see docs/history/logs-notebook.md, "Stack traces in any framing").

Every function here takes the line's body (worker prefix and logger header
already peeled, see :mod:`anatomy`) and runs anchored patterns with bounded
repeats on its first :data:`_HEAD` characters: linear in the line, whatever it
holds (tests/test_logs_patterns_bounded.py).
"""

from __future__ import annotations

import re

_HEAD = 400  # a frame says what it is in its first characters

# A frame: one line of a stack, in the shape of one runtime. Tried by match().
_FRAME = re.compile(
    # Python: traceback ('  File "x.py", line 3, in f') and faulthandler ('File "x.py", line 3 in f')
    r"[ \t]{0,40}File \"[^\"\n]{1,400}\", line \d{1,9},? in \S"
    # c10 / torch: "frame #3: ..." (also as one thread shows it, "frame_#_3: ...")
    r"|frame(?: #|_#_)\d{1,4}: \S"
    # gdb, AddressSanitizer, backward-cpp: "#1  0x00005b0cb6 in f (...)", "#32 f (...) at x.c:393", '#6    Object "..."'
    r"|[ \t]{0,40}#\d{1,4} {1,8}(?:0x[0-9a-fA-F]{1,16} {1,4}(?:in )?\S|\w[\w:<>~.]{0,200} \(|(?:Object|Source) \")"
    # glibc's and Ray's native backtrace: "/lib/libc.so.6(cfree+0x6c)[0x7f...]", "prog(+0x1a) [0x5a]", "python3[0x52d7ff]"
    r"|[^\s()\[\]]{1,300}(?:\([\w.$@]{0,200}\+0x[0-9a-fA-F]{1,16}\)|\(\))? ?\[0x[0-9a-fA-F]{1,16}\]"
    # Rust: "  27:     0x559e9fc1803b - core::ops::..." and "   1: z25::main"
    r"|[ \t]{0,40}\d{1,4}: {1,20}(?:0x[0-9a-fA-F]{1,16} - )?[\w<{][\w:<>{}&*, ]{0,200}::"
    # the JVM: "\tat sun.nio.ch.IOUtil.read(IOUtil.java:192)", "Caused by: ...", "\t... 12 more"
    r"|[ \t]{1,40}at [\w$.<>/]{1,300}\((?:[\w$.-]{1,200}\.(?:java|kt|scala|groovy):\d{1,9}|Native Method|Unknown Source)\)"
    r"|[ \t]{1,40}\.\.\. \d{1,9} more$"
    # macOS crash report: "1   libsystem_c.dylib   \t0x00007fff8b0edb53 abort + 129"
    r"|\d{1,4} {1,8}\S{1,200} {1,80}\t?0x[0-9a-fA-F]{1,16} \S"
)

# A line inside a run that is not a frame itself: where a frame's source is
# (Rust's and gdb's "    at file:N", Go's "\t/path/x.go:76 +0x19c"), the code
# line Python prints under a frame, a carets line; indented, so only read
# as part of a run.
_INSIDE = re.compile(r"[ \t]{1,80}\S")

# The head of a dump, before its frames: what says a stack follows.
_HEAD_LINE = re.compile(
    # faulthandler: "Thread 0x00007f9b (most recent call first):", "Current thread 0x... (most recent call first):"
    r"(?:Current thread|Thread) 0x[0-9a-fA-F]{1,16} \(most recent call first\):"
    # the Go runtime: "goroutine 1 [running]:", "goroutine 36 [select, 1014 minutes]:"
    r"|goroutine \d{1,9} \[[^\]\n]{1,80}\]:"
    # Rust, glibc, macOS, gdb
    r"|stack backtrace:|={3,40} ?Backtrace: ?={3,40}|Thread \d{1,4} Crashed::|\(gdb\) (?:bt|backtrace|where)\b"
    # Python logging's stack_info=True: where a record was logged from (a stack, no failure)
    r"|Stack \(most recent call last\):"
)

# Go's function lines in a goroutine's stack ("main.main()", "created by main.worker",
# "github.com/x/y.(*T).f(0xc000228000, ...)"): frames only inside a dump.
_GO_FUNC = re.compile(r"created by \S|[^\s(]{1,300}\([^\n]{0,400}\)$")


# A native backtrace's numbered frame with its address and symbol, as TensorRT-LLM's and
# other C++ runtimes' own backtraces print them after an assertion ("1       0x7f33b4eabcc7
# tensorrt_llm::common::throwRuntimeError(char const*, int, std::string const&) + 82").
_ADDRESS_FRAME = re.compile(r"[ \t]{0,8}\d{1,4} {1,12}0x[0-9a-fA-F]{4,16} [^\s+][^\n]{0,380} \+ (?:0x)?[0-9a-fA-F]{1,10}$")


def is_address_frame(body: str) -> bool:
    """Whether ``body`` is a numbered native frame: its number, address, symbol and offset."""
    return _ADDRESS_FRAME.match(body, 0, _HEAD) is not None


def is_frame(body: str) -> bool:
    """Whether ``body`` is one frame of a stack, in any runtime's shape."""
    return _FRAME.match(body, 0, _HEAD) is not None


def is_head(body: str) -> bool:
    """Whether ``body`` announces a dump of frames (a thread's or goroutine's stack, a backtrace)."""
    return _HEAD_LINE.match(body, 0, _HEAD) is not None


def starts_run(body: str) -> bool:
    """Whether a run of frames can begin at ``body``: a frame, or the head of a dump."""
    return is_frame(body) or is_head(body)


def continues_run(body: str) -> bool:
    """Whether ``body`` belongs to a run of frames already begun.

    Frames and heads of any runtime, Go's function lines, blank lines between
    threads or goroutines, and indented lines (a frame's source, Python's code
    line and carets under a frame).
    """
    if not body.strip():
        return True
    return (
        _INSIDE.match(body, 0, _HEAD) is not None
        or is_frame(body)
        or is_head(body)
        or _GO_FUNC.match(body, 0, _HEAD) is not None
    )


def is_jvm_frame(body: str) -> bool:
    """``\\tat pkg.Class.method(File.java:N)``: the JVM's frame, which follows its exception line."""
    s = body.lstrip(" \t")
    return s.startswith("at ") and body[:1] in (" ", "\t") and _FRAME.match(body, 0, _HEAD) is not None
