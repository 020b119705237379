"""The whole catalog of verdicts: the code's families (families.toml) and the shipped rule packs.

One question, asked by every module that acts on a verdict id: which ids exist, and which
carry a flag (a death, a stall, a launcher's report...). The code's families and the
packs' rules are joined here, so that neither :mod:`families` nor :mod:`rules` needs the
other's loader.
"""

from __future__ import annotations

import dataclasses
import functools

from eagle3tui.logs import families
from eagle3tui.logs.families import FLAGS, Family, RegistryError, code_families
from eagle3tui.logs.rules import load_shipped_rules


@functools.lru_cache(maxsize=1)
def registry() -> dict[str, Family]:
    """Every shipped verdict id: the code's families and the shipped rule packs' rules.

    A pack rule with the id of a code family is that family (its flags add to the
    family's); a pack rule of its own id is a family of kind ``rule.kind``.
    """
    out = dict(code_families())
    for r in load_shipped_rules():
        fam = out.get(r.id)
        if fam is None:
            out[r.id] = Family(r.id, r.kind, r.explanation, r.action, frozenset(r.flags), "rule")
        elif r.flags:
            out[r.id] = dataclasses.replace(fam, flags=fam.flags | frozenset(r.flags))
    return out


def with_flag(flag: str) -> frozenset[str]:
    """Ids of every shipped family (code or pack) that carries ``flag``."""
    if flag not in FLAGS:
        raise KeyError(f"unknown flag {flag!r}; known: {', '.join(FLAGS)}")
    return frozenset(f.id for f in registry().values() if flag in f.flags)


def one_with(flag: str) -> str:
    """The single family that carries ``flag`` (a role only one family plays)."""
    ids = sorted(with_flag(flag))
    if len(ids) != 1:
        raise RegistryError(f"flag {flag!r} must be on exactly one family, found {ids}")
    return ids[0]


def verdict_ids() -> frozenset[str]:
    """Every id a run can report with the shipped rules (a user's rules add theirs)."""
    return frozenset(registry())




def known_id(fid: str) -> str:
    """``fid``, checked against the whole catalog (the code's families and the shipped packs' rules).

    For the ids a module names in its code: a typo, or a rule renamed in a pack, fails
    when the module loads, not as an event nobody's ``retry.on`` or docs know.
    """
    if fid not in registry():
        raise RegistryError(f"{fid!r} is not a verdict id in families.toml or the shipped rule packs"
                            f"{families.did_you_mean(fid, registry())}")
    return fid
