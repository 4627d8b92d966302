"""What each cross-object rule reads (its declaration), and the views of objects it is run over."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from colocate.checker import manifests
from colocate.model.names import IGNORE_ANNOTATION
from colocate.checker.manifests import Doc
from colocate.checker.model import Context, Index, Rule
from colocate.checker.rule_loader import check_function


# --- what each cross-object rule reads ------------------------------------------------------------

#: How a cross-object rule sees an object: whole, as its skeleton (below), or a projection (a
#: dict the rule's ``reads`` makes); None = not at all.
WHOLE, SKELETON = 0, 1
#: Kinds that hold pod specs (manifests.pod_specs).
WORKLOAD_KINDS = frozenset(manifests.POD_SPEC_PATHS) | frozenset(manifests.REPLICA_SPECS)


@dataclass(frozen=True, eq=False)
class Reads:
    """The objects a cross-object rule reads: those of ``kinds`` whole, every workload whole
    (``pods``), those ``whole`` says yes to whole, a projection of those ``project`` makes one
    for, and the skeleton of every other object (``skeleton``; ``"first"``: of the first object
    of each file, which says the file is there). The rule is always run over just that, with or
    without the verdict cache, so what it declares is what it can see: its findings depend on
    nothing else, and the cache re-runs it only when that changed."""

    kinds: frozenset[str] = frozenset()
    pods: bool = False
    whole: Callable[[Doc], bool] | None = None
    skeleton: bool | str = False
    project: Callable[[Doc, "Context"], dict | None] | None = None

    def by_kind(self, kind: str, first: bool) -> int | None:
        """The view of an object that ``whole`` and ``project`` leave alone: its kind says it."""
        if kind in self.kinds or (self.pods and kind in WORKLOAD_KINDS):
            return WHOLE
        return SKELETON if self.skeleton is True or (self.skeleton == "first" and first) else None

    def chosen(self, doc: Doc, ctx: Context) -> int | dict | None:
        """The view ``whole`` or ``project`` give the object (None: neither says anything)."""
        if doc.kind in self.kinds or (self.pods and doc.kind in WORKLOAD_KINDS):
            return None
        try:
            if self.whole is not None and self.whole(doc):
                return WHOLE
            if self.project is not None:
                return self.project(doc, ctx)
        except Exception:
            return WHOLE  # a shape the declaration cannot read: the rule reads it, and says so
        return None


def reads(*kinds: str, pods: bool = False, whole: Callable[[Doc], bool] | None = None, skeleton: bool | str = False,
          project: Callable[[Doc, Context], dict | None] | None = None) -> Callable[[Callable], Callable]:
    """Declares what a cross-object check reads (:class:`Reads`); one declaration may mark several
    checks, which then share one index (and what they derive from it, Index.shared)."""
    declared = _DECLARED.setdefault((frozenset(kinds), pods, whole, skeleton, project),
                                    Reads(frozenset(kinds), pods, whole, skeleton, project))

    def mark(check: Callable) -> Callable:
        check.reads = declared  # type: ignore[attr-defined]
        return check
    mark.reads = declared  # type: ignore[attr-defined]
    return mark


#: One Reads per distinct declaration: rules that declare the same share an index and digests.
_DECLARED: dict[tuple, Reads] = {}

#: A check that declares nothing reads every object whole: slower with the cache, never wrong.
EVERYTHING = Reads(whole=lambda doc: True)


def rule_reads(rule: Rule) -> Reads:
    return getattr(check_function(rule.check), "reads", EVERYTHING)


def skeleton(doc: Doc) -> dict:
    """What identifies an object (and its suppressions): every cross-object rule reading all
    objects (duplicates, folders) needs only this, a few per cent of the object."""
    obj = doc.obj
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kept = {k: meta[k] for k in ("name", "namespace", "generateName") if k in meta}
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        if IGNORE_ANNOTATION in annotations:
            kept["annotations"] = {IGNORE_ANNOTATION: annotations[IGNORE_ANNOTATION]}
    elif annotations:  # not a mapping: kept as it is, so that reading it fails as on the object
        kept["annotations"] = annotations
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept}


def seen_as(doc: Doc, view: int | dict) -> Doc:
    """The object as a rule with this view sees it. An object's skeleton is made once and shared
    by every rule that reads it so (no rule changes the objects it reads)."""
    if view == WHOLE:
        return doc
    if view == SKELETON:
        made = doc.__dict__.get("_skeleton")
        if made is None:
            made = doc.__dict__["_skeleton"] = Doc(doc.file, doc.line, skeleton(doc))
            made.__dict__["projected"] = False  # see capacity._usage: only a projection is trusted
        return made
    made = Doc(doc.file, doc.line, view)
    made.__dict__["projected"] = True
    return made


def viewed_index(declared: Reads, docs: list[Doc], ctx: Context) -> Index:
    """The index a cross-object rule runs over: only what it declared."""
    out = []
    previous = None
    asks = declared.whole is not None or declared.project is not None
    for doc in docs:
        first = doc.file != previous
        previous = doc.file
        # Without whole or project, the kind alone says the view (10 to 20 times fewer calls).
        view = declared.chosen(doc, ctx) if asks else None
        if view is None:
            view = declared.by_kind(doc.kind, first)
        if view is not None:
            out.append(seen_as(doc, view))
    return Index(out, ctx)
