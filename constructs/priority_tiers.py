"""PriorityTiers: the PriorityClasses that let online pods preempt offline ones."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from constructs import Construct

from colocate.errors import PropError
from colocate.constructs._k8s import check_dns_label, emit

#: Label on each PriorityClass naming its role; the policy rules read it.
TIER_LABEL = "colocate.io/tier"
#: Highest value a user-defined PriorityClass may have (system classes sit above).
MAX_USER_PRIORITY = 1_000_000_000
#: Adjacent tiers at least this many times apart, so a new class can always fit between
#: them and a mistyped value cannot silently reorder online and offline work.
MIN_GAP_FACTOR = 10


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


class PriorityTiers(Construct):
    """PriorityClasses at least 10x apart, with at most one global default."""

    def __init__(self, scope: Construct, id: str, tiers: Sequence[PriorityTier]):
        super().__init__(scope, id)
        self.tiers = tuple(sorted(tiers, key=lambda t: -t.value))
        self._validate()
        for tier in self.tiers:
            emit(self, tier.name, {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": tier.name, "labels": {TIER_LABEL: tier.role}},
                "value": tier.value,
                "globalDefault": tier.global_default,
                "preemptionPolicy": tier.preemption_policy,
                "description": tier.description or f"colocate {tier.role} tier",
            })

    def by_role(self, role: str) -> PriorityTier:
        """The highest tier with this role; raises if there is none."""
        for tier in self.tiers:
            if tier.role == role:
                return tier
        raise PropError("PriorityTiers", "tiers", f"no tier has role {role!r}")

    def _validate(self) -> None:
        where = "PriorityTiers"
        if not self.tiers:
            raise PropError(where, "tiers", "at least one tier is needed")
        names = [t.name for t in self.tiers]
        for i, tier in enumerate(self.tiers):
            check_dns_label(where, f"tiers[{tier.name!r}].name", tier.name)
            if names.count(tier.name) > 1:
                raise PropError(where, f"tiers[{tier.name!r}].name", "is used by more than one tier")
            if not isinstance(tier.value, int) or not 0 <= tier.value <= MAX_USER_PRIORITY:
                raise PropError(where, f"tiers[{tier.name!r}].value",
                                f"{tier.value!r} must be a whole number from 0 to {MAX_USER_PRIORITY}")
            if i and self.tiers[i - 1].value < MIN_GAP_FACTOR * tier.value:
                higher = self.tiers[i - 1]
                raise PropError(where, f"tiers[{tier.name!r}].value",
                                f"{tier.value} is less than {MIN_GAP_FACTOR}x below {higher.name} ({higher.value}); "
                                f"set it to at most {higher.value // MIN_GAP_FACTOR}")
        defaults = [t.name for t in self.tiers if t.global_default]
        if len(defaults) > 1:
            raise PropError(where, "tiers[*].global_default",
                            f"{', '.join(defaults)} are all global defaults; at most one tier may be")
