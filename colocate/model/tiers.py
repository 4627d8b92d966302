"""Priority tiers: the PriorityClasses that let online pods preempt offline ones (docs/tiers.md)."""
from __future__ import annotations

import bisect

from dataclasses import dataclass
from typing import Literal, Sequence

from colocate.errors import PropError
from colocate.model.names import MAX_USER_PRIORITY, MIN_GAP_FACTOR
from colocate.model.validate import check_dns_label


@dataclass(frozen=True)
class PriorityTier:
    """One PriorityClass."""

    #: PriorityClass name, e.g. ``online-high``.
    name: str
    #: Priority value; higher preempts lower.
    value: int
    #: What the tier is for: ``online``, ``offline`` or ``background``.
    role: Literal["online", "offline", "background"]
    #: Shown by ``kubectl get priorityclass``.
    description: str = ""
    #: Pods without a priorityClassName get this tier. At most one tier may set it. Default False.
    global_default: bool = False
    #: ``PreemptLowerPriority`` (default) or ``Never`` (waits instead of evicting).
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"


def validate_tiers(tiers: Sequence[PriorityTier]) -> None:
    """Raise PropError naming the tier and prop: tiers sorted by value, highest first."""
    where = "PriorityTiers"
    if not tiers:
        raise PropError(where, "tiers", "at least one tier is needed")
    names = [t.name for t in tiers]
    for i, tier in enumerate(tiers):
        check_dns_label(where, f"tiers[{tier.name!r}].name", tier.name)
        if names.count(tier.name) > 1:
            raise PropError(where, f"tiers[{tier.name!r}].name", "is used by more than one tier")
        if not isinstance(tier.value, int) or not 0 <= tier.value <= MAX_USER_PRIORITY:
            raise PropError(where, f"tiers[{tier.name!r}].value",
                            f"{tier.value!r} must be a whole number from 0 to {MAX_USER_PRIORITY}")
        if i and tiers[i - 1].value < MIN_GAP_FACTOR * tier.value:
            higher = tiers[i - 1]
            raise PropError(where, f"tiers[{tier.name!r}].value",
                            f"{tier.value} is less than {MIN_GAP_FACTOR}x below {higher.name} ({higher.value}); "
                            f"set it to at most {higher.value // MIN_GAP_FACTOR}")
    defaults = [t.name for t in tiers if t.global_default]
    if len(defaults) > 1:
        raise PropError(where, "tiers[*].global_default",
                        f"{', '.join(defaults)} are all global defaults; at most one tier may be")


#: Tier roles from the top: an online class preempts offline ones, which preempt background ones.
ROLE_RANK = {"online": 2, "offline": 1, "background": 0}


@dataclass(frozen=True)
class TierClass:
    """A PriorityClass as written, with the tier role it serves."""

    name: str
    role: str
    value: int


def inversions(classes: Sequence[TierClass]) -> list[tuple[TierClass, TierClass]]:
    """(upper, lower) pairs whose tiers are inverted: ``lower``'s role ranks below ``upper``'s
    but its value is not below. Lower classes in order of appearance, each once, against the
    first upper class it is not below."""
    # Per rank: the classes ranked above it, in order, and the running minimum of their values;
    # the first one at or below a value is found by bisection (a tree may hold thousands).
    above: dict[int, tuple[list[TierClass], list[int]]] = {}
    for rank in set(ROLE_RANK.values()):
        uppers = [c for c in classes if ROLE_RANK.get(c.role, -1) > rank]
        lowest, running = [], None
        for c in uppers:
            running = c.value if running is None else min(running, c.value)
            lowest.append(-running)  # non-decreasing, as bisect needs
        above[rank] = (uppers, lowest)
    out = []
    for lower in classes:
        rank = ROLE_RANK.get(lower.role, -1)
        if rank < 0:
            continue
        uppers, lowest = above[rank]
        i = bisect.bisect_left(lowest, -lower.value)
        if i < len(uppers):
            out.append((uppers[i], lower))
    return out
