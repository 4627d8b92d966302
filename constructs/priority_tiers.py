"""PriorityTiers: the PriorityClasses that let online pods preempt offline ones."""
from __future__ import annotations

from typing import Sequence

from constructs import Construct

from colocate.errors import PropError
from colocate.constructs._k8s import emit
from colocate.model.names import GUARD_ANNOTATIONS, TIER_LABEL
from colocate.model.tiers import PriorityTier, validate_tiers


class PriorityTiers(Construct):
    """PriorityClasses at least 10x apart, with at most one global default."""

    def __init__(self, scope: Construct, id: str, tiers: Sequence[PriorityTier]):
        super().__init__(scope, id)
        self.tiers = tuple(sorted(tiers, key=lambda t: -t.value))
        validate_tiers(self.tiers)
        for tier in self.tiers:
            emit(self, tier.name, {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                # Kept when the platform Application is deleted: without its class every new pod
                # naming it is refused by the Priority admission plugin (docs/gitops.md).
                "metadata": {"name": tier.name, "labels": {TIER_LABEL: tier.role}, "annotations": dict(GUARD_ANNOTATIONS)},
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
