"""``colocate diff``: the objects a change adds, removes and changes, dangerous ones first."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from colocate.errors import ColocateError
from colocate.review import usage, compare, danger, policy, quantities, queue, quota, tree
from colocate.review.compare import FieldChange
from colocate.review.danger import Danger
from colocate.review.tree import Key
from colocate.model.tiers import PriorityTier

ADDED, REMOVED, CHANGED = "added", "removed", "changed"


@dataclass(frozen=True)
class ObjectChange:
    app: str
    key: Key
    file: str
    status: str
    fields: tuple[FieldChange, ...] = ()
    dangers: tuple[Danger, ...] = ()

    @property
    def rank(self) -> int:
        """The worst danger's rank (danger.HARMLESS when there is none)."""
        return min((d.rank for d in self.dangers), default=danger.HARMLESS)


@dataclass(frozen=True)
class Review:
    base: str
    head: str
    changes: tuple[ObjectChange, ...]
    #: None when the policy check was not asked for (``--no-policy``).
    policy: policy.PolicyImpact | None = None
    #: Requests that change per pool and tier; None when not asked for (``--no-capacity``).
    capacity: tuple[usage.Delta, ...] | None = None
    #: ResourceQuota rows whose use or hard limit changes; None with the capacity.
    quota: tuple[quota.QuotaDelta, ...] | None = None
    #: Pods of the head tree that fit no node of their pool and did not before.
    unfit: tuple[usage.Unfit, ...] = ()
    #: Each Kueue ClusterQueue of either tree, before and after: which jobs the first night
    #: starts and which wait; empty without Kueue, or without the capacity.
    queues: tuple[queue.QueueDelta, ...] = ()

    @property
    def dangerous(self) -> tuple[ObjectChange, ...]:
        return tuple(sorted((c for c in self.changes if c.dangers), key=lambda c: (c.rank, c.app, _order(c.key))))

    def by_app(self) -> dict[str, list[ObjectChange]]:
        out: dict[str, list[ObjectChange]] = {}
        for change in self.changes:
            out.setdefault(change.app, []).append(change)
        return out


def _order(key: Key) -> tuple[str, str, str]:
    return key.kind, key.namespace, key.name


def compare_trees(base: tree.Tree, head: tree.Tree, tiers: Sequence[PriorityTier] = ()) -> list[ObjectChange]:
    """Every added, removed and changed object, by Application, then kind/namespace/name;
    ``tiers``: the configuration's priority tiers (a PriorityClass's tier is the configuration's)."""
    out = []
    inverted = danger.tier_inversions(base.objects, head.objects, tiers)
    for key in sorted(set(base.objects) | set(head.objects), key=_order):
        old, new = base.objects.get(key), head.objects.get(key)
        extra = tuple(inverted.get(key.name, ())) if key.kind == "PriorityClass" and new is not None else ()
        if old is None:
            out.append(ObjectChange(new.app, key, new.file, ADDED, dangers=extra))
        elif new is None:
            out.append(ObjectChange(old.app, key, old.file, REMOVED, dangers=tuple(danger.removed(old, tiers))))
        else:
            fields = compare.diff(old.obj, new.obj)
            if fields:
                out.append(ObjectChange(new.app, key, new.file, CHANGED, tuple(fields),
                                        extra + tuple(danger.changed(old, new, fields))))
    return sorted(out, key=lambda c: (c.app, _order(c.key)))


def _kept_on_prune(old: list, new: list) -> list:
    """Objects the change removes from dist/ that Argo CD keeps in the cluster (Prune=false): a
    job's checkpoint claim still counts against the namespace's quota after its file is gone."""
    from colocate.model.names import KEEP_ON_PRUNE, sync_options

    present = {(d.group, d.kind, d.namespace, d.name) for d in new}
    return [d for d in old if (d.group, d.kind, d.namespace, d.name) not in present
            and KEEP_ON_PRUNE in sync_options(d.metadata)]


def review(cwd: Path, base: str | None = None, head: str | None = None, *, dist: str = "dist",
           config_path: Path | None = None, with_policy: bool = True,
           pools: usage.PoolSource | None = None) -> Review:
    """Compare dist/ at ``base`` (default: merge-base with main) and ``head`` (default: the
    working tree). ``pools`` gives the allocatable the capacity impact is measured against
    (None: no capacity impact). Unknown revisions and a cwd outside git are bad input (exit 2)."""
    repo = tree.toplevel(cwd)
    base_rev = tree.resolve(repo, base) if base else tree.default_base(repo)
    head_rev = tree.resolve(repo, head) if head else None
    base_label, head_label = base or f"merge-base {base_rev[:12]}", head or tree.WORKTREE
    with tree.checkout(repo, base_rev, dist) as base_root, tree.checkout(repo, head_rev, dist) as head_root:
        if not base_root.is_dir() and not head_root.is_dir():
            raise ColocateError(f"{dist}: in neither {base_label} nor {head_label}; --dist names the folder of the "
                                "synth output in the repository (default: dist)")
        before, after = tree.load(base_label, base_root, dist), tree.load(head_label, head_root, dist)
        # Each revision is judged by its own colocate.yaml: its rules' names, tiers and night.
        with tree.config_at(repo, base_rev, config_path) as base_config, \
                tree.config_at(repo, head_rev, config_path) as head_config:
            impact = policy.impact(base_root, head_root, base_config, head_config) if with_policy else None
            load = quotas = None
            unfit: tuple[usage.Unfit, ...] = ()
            queued: tuple[queue.QueueDelta, ...] = ()
            if pools is not None:
                load, quotas, unfit, queued = _capacity(pools, (base_label, base_root, base_config),
                                                        (head_label, head_root, head_config), dist)
    return Review(base_label, head_label, tuple(compare_trees(before, after, configured_tiers(config_path))), impact,
                  load, quotas, unfit, queued)


def _capacity(pools: usage.PoolSource, base: tuple[str, Path, Path | None], head: tuple[str, Path, Path | None],
              dist: str) -> tuple:
    """(load, quotas, unfit, queued): what the change does to the pools, the quotas and the queue.
    Each revision against its own pools (its dist/nodes/), else the configured ones (a change that
    adds nodes is judged against them), and its own tiers and night hours."""
    configured = pools()
    sides = []
    for label, root, config_path in (base, head):
        with tree.named(label, root, dist):
            described = usage.described_pools(root) or configured
            docs = usage.api_objects(root)
            quantities.check(docs)
        sides.append((described, docs, config_path))
    (pools_before, old, base_config), (pools_after, new, head_config) = sides
    new = new + _kept_on_prune(old, new)
    queues_before = queue.queues(old, queue.night_hours(base_config))
    queues_after = queue.queues(new, queue.night_hours(head_config))
    # A job waiting in the queue has no pod: it takes nothing from its pool or its quota,
    # so a job past tonight's quota reads as waiting, not as a pool or a quota overrun.
    running_before, running_after = queue.admitted_only(old, queues_before), queue.admitted_only(new, queues_after)
    load = tuple(usage.deltas(usage.usage(running_before, pools_before, usage.reference_tiers(base_config)),
                              usage.usage(running_after, pools_after, usage.reference_tiers(head_config))))
    quotas = tuple(quota.deltas(quota.uses(running_before, pools_before), quota.uses(running_after, pools_after)))
    was = set(usage.unfit(old, pools_before))
    unfit = tuple(u for u in usage.unfit(new, pools_after) if u not in was)
    return load, quotas, unfit, tuple(queue.deltas(queues_before, queues_after))


configured_tiers = usage.reference_tiers
