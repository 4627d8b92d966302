"""ResourceQuota use: what the objects in dist/ take of each quota's hard limits, counted by
colocate/model/resource_quota.py (the count the rule COL051 makes too). A TFJob that waits in
Kueue's queue has no pod: callers hand in the admitted objects (queue.admitted_only)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from colocate.checker import manifests
from colocate.checker.manifests import Doc
from colocate.model import resource_quota
from colocate.model.pool_facts import PoolFacts


@dataclass(frozen=True)
class QuotaUse:
    namespace: str
    quota: str
    resource: str
    used: int
    hard: int

    @property
    def over(self) -> bool:
        return self.used > self.hard


def printer(resource: str) -> Callable[[int], str]:
    return lambda amount: resource_quota.show(resource, amount, readable=True)


def uses(docs: list[Doc], pools: Sequence[PoolFacts]) -> list[QuotaUse]:
    """One row per ResourceQuota and counted key, sorted by namespace, quota, key."""
    per_ns = resource_quota.totals(c for doc in docs
                                   for c in resource_quota.contributions(doc, manifests.pod_specs(doc), pools))
    out = []
    for doc in docs:
        if doc.kind != "ResourceQuota":
            continue
        for key, value in sorted(resource_quota.hard_limits(doc.obj).items()):
            if resource_quota.counted(key):
                used = per_ns.get(doc.namespace, {}).get(key, 0)
                out.append(QuotaUse(doc.namespace, doc.name, key, used, resource_quota.hard(key, value)))
    return sorted(out, key=lambda q: (q.namespace, q.quota, q.resource))


@dataclass(frozen=True)
class QuotaDelta:
    namespace: str
    quota: str
    resource: str
    used_before: int
    used_after: int
    hard_before: int | None
    hard_after: int | None

    @property
    def over(self) -> bool:
        """The namespace now asks for more than the quota admits: some pods are refused."""
        return self.hard_after is not None and self.used_after > self.hard_after


def deltas(before: list[QuotaUse], after: list[QuotaUse]) -> list[QuotaDelta]:
    """Quota rows whose use or hard limit changes (a quota added or removed has None for hard)."""
    old = {(q.namespace, q.quota, q.resource): q for q in before}
    new = {(q.namespace, q.quota, q.resource): q for q in after}
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        row = QuotaDelta(*key, a.used if a else 0, b.used if b else 0, a.hard if a else None, b.hard if b else None)
        if (row.used_before, row.hard_before) != (row.used_after, row.hard_after):
            out.append(row)
    return out
