"""Fatal endings, and what is not one, told by structure that many programs share.

The judge (:mod:`judge`) weighs a line by its level, its source and its words; the
cues here answer one question each about how a process ends, in any program's words:

* :func:`goes_on_without` -- the line's last sentence says the program carries on
  without what it just failed to get ("Failed to load generation config for X: ...
  Proceeding without generation config."): whatever family the failure names, an
  optional part is absent, nothing ends.

Every pattern is anchored or bounded (tests/test_logs_patterns_bounded.py) and runs
on a bounded slice of the line.
"""

from __future__ import annotations

import re

# The final sentence (or clause) of a line, headed by a verb of going on and "without":
# "Proceeding without generation config.", "continuing without the cache", "; running
# without X". At a sentence's or clause's start only: "cannot start training without a
# dataset" states a requirement, not what the program does next.
_GOES_ON_WITHOUT = re.compile(
    r"(?:^|[.;!]\s{1,3}|,\s{1,3}|\.\.\s{1,3})(?:(?:will|we|I|it)\s)?(?:proceed(?:ing|s)?|continu(?:ing|es?)|carry(?:ing)? on|"
    r"going on|running|starting|serving|loading)\s(?:anyway\s)?without\b[^.;!]{0,120}[.!]?\s*$",
    re.I,
)
GOES_ON_LITERALS = ("without",)


def goes_on_without(body: str) -> bool:
    """Whether ``body`` ends with the program saying it goes on without something."""
    tail = body[-200:]
    if "without" not in tail.lower():
        return False
    return _GOES_ON_WITHOUT.search(tail) is not None
