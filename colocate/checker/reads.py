"""What each Python check reads (its rule file, and @reads for what YAML cannot say), and the
views of objects it is run over."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from colocate.checker import manifests
from colocate.model.names import IGNORE_ANNOTATION
from colocate.checker.manifests import Doc
from colocate.checker.model import Context, Index, Rule
from colocate.checker.rule_loader import check_function


# --- what each check reads --------------------------------------------------------------------

#: How a check sees an object: whole, as its skeleton (below), or a projection (a dict its
#: ``@reads(project=...)`` makes); None = not at all.
WHOLE, SKELETON = 0, 1
#: Kinds that hold pod specs (manifests.pod_specs): what target PodSpec hands a check.
WORKLOAD_KINDS = frozenset(manifests.POD_SPEC_PATHS) | frozenset(manifests.REPLICA_SPECS)


@dataclass(frozen=True, eq=False)
class Reads:
    """The objects a check is handed, as its rule file says: those of ``kinds`` whole, every
    workload whole (``pods``: target PodSpec), the skeleton of every other object (``skeleton``,
    from ``skeletons: all``; ``"first"``: of the first object of each file, which says the file is
    there), and what the check's ``@reads`` callables add: those ``whole`` says yes to whole, a
    projection of those ``project`` makes one for. The check is always run over just that, with or
    without the verdict cache, so what its file declares is what it can see: its findings depend
    on nothing else, and the cache re-runs it only when that changed."""

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

    def names(self, kind: str) -> bool:
        """Whether the check may ask for every object of ``kind`` (Index.of_kind): its file names
        the kind, or every object of every kind is there in some view. Callables may hand it some
        objects of a kind (dashboard ConfigMaps), which it then reads as they are."""
        return kind in self.kinds or (self.pods and kind in WORKLOAD_KINDS) or self.skeleton is True \
            or self.whole is not None or self.project is not None


def reads(*, whole: Callable[[Doc], bool] | None = None,
          project: Callable[[Doc, Context], dict | None] | None = None) -> Callable[[Callable], Callable]:
    """What a check reads beyond what its rule file can say: objects a predicate picks (``whole``)
    or a projection of them (``project``); kinds, workloads and skeletons are the rule file's.
    One declaration may mark several checks."""
    declared = (whole, project)

    def mark(check: Callable) -> Callable:
        check.reads = declared  # type: ignore[attr-defined]
        return check
    mark.reads = declared  # type: ignore[attr-defined]
    return mark


#: One Reads per distinct declaration: rules that declare the same share an index and digests.
_DECLARED: dict[tuple, Reads] = {}

#: A check whose file names no kinds, no workloads and no skeletons, and that has no ``@reads``,
#: reads every object whole: a per-object check (object names, annotations) may; a cross-object
#: one would be re-run at every change (tests/policies/test_reads.py refuses it).
EVERYTHING = Reads(whole=lambda doc: True)


def rule_reads(rule: Rule) -> Reads:
    """What the rule's check is handed: its file's ``target``, ``kinds`` and ``skeletons``, and the
    check's ``@reads`` callables."""
    whole, project = getattr(check_function(rule.check), "reads", (None, None))
    kinds, pods = frozenset(rule.kinds), rule.target == "PodSpec"
    skeleton = {"all": True, "first": "first"}.get(rule.skeletons or "", False)
    if not (kinds or pods or skeleton or whole or project):
        return EVERYTHING
    key = (kinds, pods, whole, skeleton, project)
    if key not in _DECLARED:
        _DECLARED[key] = Reads(*key)
    return _DECLARED[key]


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
    """The index a check runs over: only what it declared."""
    asks = declared.whole is not None or declared.project is not None
    if not asks and declared.skeleton is False:
        # The kind alone says it: whole, or not at all (by_kind).
        wanted = declared.kinds | WORKLOAD_KINDS if declared.pods else declared.kinds
        return Index([doc for doc in docs if doc.kind in wanted], ctx, declared)
    out = []
    previous = None
    # The view by kind, asked once per kind and first-ness: every check's index walks every object.
    by_kind: dict[tuple[str, bool], int | None] = {}
    for doc in docs:
        first = doc.file != previous
        previous = doc.file
        # Without whole or project, the kind alone says the view (10 to 20 times fewer calls).
        view = declared.chosen(doc, ctx) if asks else None
        if view is None:
            key = (doc.kind, first)
            view = by_kind.get(key, by_kind)
            if view is by_kind:
                view = by_kind[key] = declared.by_kind(doc.kind, first)
        if view is WHOLE:
            out.append(doc)
        elif view is not None:
            out.append(seen_as(doc, view))
    return Index(out, ctx, declared)
