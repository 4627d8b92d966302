"""The verdict cache's entries (docs/check-cache.md): what ``colocate check`` stores of a run, and
how each entry is read back, never trusted (an entry without the shape written is ignored).
``reuse.CacheStore`` decides what a run stores and reuses."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from colocate.checker import kubeconform, manifests
from colocate.checker.context import CONTEXT_KINDS, described_pools
from colocate.checker.manifests import Doc
from colocate.checker.model import CheckResult, Context, Finding, Rule
from colocate.checker.reads import SKELETON, WHOLE, Reads
from colocate.checker.rule_loader import load_rules
from colocate.errors import InputError
from colocate.model import pool_facts


def row(f: Finding) -> list:
    return [f.rule, f.severity, f.file, f.line, f.kind, f.namespace, f.name, f.field, f.message, f.fix, f.field_line]


_ROW_TYPES = [str, str, str, int, str, str, str, str, str, str, int]


def finding(row: Any) -> Finding:
    """A finding from a cache entry; ValueError when the entry does not hold one."""
    # Each value's exact type, compared in C: thousands of findings per re-check.
    if not isinstance(row, list) or list(map(type, row)) != _ROW_TYPES:
        raise ValueError("not a finding")
    return Finding(*row)


def _kubeconform_part(value: Any) -> tuple[int, int, int, list[dict]]:
    if not isinstance(value, list) or len(value) != 4 or not all(type(v) is int and v >= 0 for v in value[:3]) \
            or not isinstance(value[3], list) or not all(isinstance(r, dict) for r in value[3]):
        raise ValueError("not a kubeconform verdict")
    return value[0], value[1], value[2], value[3]



@dataclass
class FileEntry:
    """One checked file as the cache keeps it, without its objects (a separate ``docs`` entry,
    read only when a rule that reads them must run again): what every run needs of each file."""

    value: dict
    tally: int
    unusable: tuple[str, str] | None
    kubeconform: tuple[int, int, int, list[dict]]
    local_context: str
    local: list[Finding]
    lines: list[tuple[int, str, int]]
    #: Every object's skeleton (checker.skeleton): kubeconform's findings, suppressions and the
    #: rules that read every object's identity need no more.
    skeletons: list[Doc]
    #: The Namespaces and NodePool descriptions, whole: the context is made of them.
    context_docs: list[Doc]
    #: rule id -> (digest of what the rule reads of this file, [[object index, view]]).
    views: dict[str, tuple[str, list]]
    #: Each object's digest (its compact JSON): when the file changes, the per-object findings
    #: of an object at the same line with the same digest are reused.
    digests: list[str]


def file_entry(file: str, value: Any) -> FileEntry | None:
    """A file entry read back, or None when it does not have the shape written (never trusted)."""
    if value is None:
        return None
    try:
        skeletons = []
        for item in value["skeletons"]:
            if not isinstance(item, list) or len(item) != 2 or type(item[0]) is not int or not isinstance(item[1], dict):
                raise ValueError
            skeletons.append(_skeleton_doc(file, item[0], item[1]))
        context_docs = []
        for item in value["context"]:
            if not isinstance(item, list) or len(item) != 2 or type(item[0]) is not int or not isinstance(item[1], dict) \
                    or item[1].get("kind") not in CONTEXT_KINDS or not isinstance(item[1].get("apiVersion"), str):
                raise ValueError
            context_docs.append(Doc(file, item[0], item[1]))
        views = {}
        for rule_id, (digest, rows) in value["views"].items():
            if not isinstance(digest, str) or not isinstance(rows, list) or not all(
                    isinstance(r, list) and len(r) == 2 and type(r[0]) is int and 0 <= r[0] < len(skeletons)
                    and (r[1] in (WHOLE, SKELETON) and type(r[1]) is int or isinstance(r[1], dict)) for r in rows):
                raise ValueError
            views[rule_id] = (digest, rows)
        unusable = value["unusable"]
        if unusable is not None and (not isinstance(unusable, list) or len(unusable) != 2
                                     or not all(isinstance(v, str) for v in unusable)):
            raise ValueError
        context, local = value["local"]
        lines = value["lines"]
        if type(value["tally"]) is not int or not isinstance(context, str) or not isinstance(lines, list) or \
                not all(isinstance(x, list) and len(x) == 3 and type(x[0]) is int and type(x[1]) is str
                        and type(x[2]) is int for x in lines):
            raise ValueError
        local_findings = [finding(row) for row in local]
        if any(f.file != file for f in local_findings):
            raise ValueError
        digests = value["digests"]
        if not isinstance(digests, list) or len(digests) != len(skeletons) or \
                not all(isinstance(d, str) for d in digests):
            raise ValueError
        return FileEntry(value, value["tally"], tuple(unusable) if unusable else None,
                      _kubeconform_part(value["kubeconform"]), context, local_findings,
                      [tuple(x) for x in lines], skeletons, context_docs, views, digests)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


_NEW_DOC = object.__new__


def _skeleton_doc(file: str, line: int, obj: dict) -> Doc:
    """Doc(file, line, obj) of a skeleton read back, its attributes set as Doc.__post_init__ sets
    them, without its checks (10,000 of them per re-check: twice as fast)."""
    kind, version, meta = obj.get("kind"), obj.get("apiVersion"), obj.get("metadata")
    if not isinstance(kind, str) or not isinstance(version, str) or not isinstance(meta, dict) or len(obj) != 3:
        raise ValueError("not a skeleton")
    doc = _NEW_DOC(Doc)
    doc.__dict__.update(file=file, line=line, obj=obj, kind=kind, group=version.rpartition("/")[0], metadata=meta,
                        name=str(meta.get("name", "")), namespace=str(meta.get("namespace", "")),
                        is_api_object=kind not in manifests.NON_API_KINDS)
    return doc


class KeptDocs:
    """A file's objects as its docs entry holds them: the lines and JSON sizes, then the objects'
    JSON one after another, each decoded when a rule first reads it whole (a rule re-run that
    reads the ClusterQueues whole decodes those, not every object of their files)."""

    def __init__(self, file: str, value: Any, blob: bytes, count: int):
        """ValueError when the entry does not have the shape written."""
        lines, sizes = value["lines"], value["sizes"]
        if not isinstance(lines, list) or not isinstance(sizes, list) or len(lines) != count or len(sizes) != count \
                or not all(type(n) is int for n in lines) or not all(type(n) is int and n > 0 for n in sizes) \
                or sum(sizes) != len(blob):
            raise ValueError("not a docs entry")
        self.file, self.lines, self.sizes = file, lines, sizes
        self.text = blob.decode("ascii")  # json.dumps's default: ASCII, a size is a length
        self.starts = [0] * count
        for i in range(1, count):
            self.starts[i] = self.starts[i - 1] + sizes[i - 1]
        self.made: list[Doc | None] = [None] * count

    def doc(self, i: int) -> Doc:
        """Object ``i``; ValueError when it is not as written."""
        doc = self.made[i]
        if doc is None:
            obj = json.loads(self.text[self.starts[i]:self.starts[i] + self.sizes[i]])
            if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str) \
                    or not isinstance(obj.get("apiVersion"), str):
                raise ValueError("not an object")
            doc = self.made[i] = Doc(self.file, self.lines[i], obj)
            doc.__dict__["json_size"] = self.sizes[i]  # what Doc.json_size computes: COL303 and COL306 need no JSON
        return doc

    def docs(self) -> list[Doc]:
        return [self.doc(i) for i in range(len(self.made))]


def docs_entry(file: str, found: tuple[Any, bytes] | None, count: int) -> KeptDocs | None:
    """A file's docs entry read back (``count`` objects), or None when it does not have the shape
    written; each object is checked when it is decoded (KeptDocs.doc)."""
    if found is None:
        return None
    try:
        return KeptDocs(file, found[0], found[1], count)
    except (KeyError, TypeError, ValueError):
        return None


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def encoded(docs: list[Doc]) -> tuple[list[str], list[str]]:
    """Each object's compact JSON (ASCII, as Doc.json_size measures it) and its digest: one
    serialisation gives the docs entry, the object's size and what the views' digests hash."""
    parts, digests = [], []
    for doc in docs:
        text = json.dumps(doc.obj, separators=(",", ":"))
        doc.__dict__["json_size"] = len(text)
        parts.append(text)
        digests.append(digest(text))
    return parts, digests


def docs_entry_parts(docs: list[Doc], texts: list[str]) -> tuple[dict, bytes]:
    """A file's docs entry (read by :class:`KeptDocs`), from each object's JSON (:func:`encoded`)."""
    return {"lines": [d.line for d in docs], "sizes": [len(t) for t in texts]}, "".join(texts).encode("ascii")


def file_entry_value(*, tally: int, unusable: InputError | None, kubeconform: tuple, context: str,
                     local: list[Finding], lines: list[tuple[int, str, int]], skeletons: list, context_docs: list[Doc],
                     views: dict[str, tuple[str, list]], digests: list[str]) -> dict:
    """A file entry (read by :func:`file_entry`)."""
    return {
        "tally": tally,
        "unusable": [unusable.where, unusable.reason] if unusable else None,
        "kubeconform": list(kubeconform),
        "local": [context, [row(f) for f in local]],
        "lines": lines,
        "skeletons": skeletons,
        "context": [[d.line, d.obj] for d in context_docs],
        "views": {rule_id: list(v) for rule_id, v in views.items()},
        "digests": digests,
    }


def file_views(docs: list[Doc], digests: list[str], skeleton_digests: list[str], declared: dict[str, Reads],
                ctx: Context) -> dict[str, tuple[str, list]]:
    """For each cross-object rule that reads something of this file: a digest of what it reads,
    and the views its kinds do not say ([[object index, view]]: the rest follows from the
    skeletons, Reads.by_kind). Computed once per distinct declaration."""
    by_reads: dict[int, tuple[str, list] | None] = {}
    out = {}
    for rule_id, reads_ in declared.items():
        if id(reads_) not in by_reads:
            by_reads[id(reads_)] = _reads_of_file(docs, digests, skeleton_digests, reads_, ctx)
        if by_reads[id(reads_)] is not None:
            out[rule_id] = by_reads[id(reads_)]
    return out


def _reads_of_file(docs: list[Doc], digests: list[str], skeleton_digests: list[str], reads_: Reads,
                   ctx: Context) -> tuple[str, list] | None:
    chosen: list = []
    parts: list[str] = []
    asks = reads_.whole is not None or reads_.project is not None
    for i, doc in enumerate(docs):
        view = reads_.chosen(doc, ctx) if asks else None
        if view is not None:
            chosen.append([i, view])
        else:
            view = reads_.by_kind(doc.kind, i == 0)
            if view is None:
                continue
        part = digests[i] if view == WHOLE else skeleton_digests[i] if view == SKELETON else \
            digest(json.dumps(view, separators=(",", ":")))
        parts.append(f"{doc.line}:{i}:{part}")
    return (digest(";".join(parts)), chosen) if parts else None


def whole(value: Any) -> CheckResult | None:
    """A whole result read back, or None when it does not have the shape written."""
    if value is None:
        return None
    try:
        findings = [finding(row) for row in value["findings"]]
        suppressed = []
        for row, reason in value["suppressed"]:
            if not isinstance(reason, str):
                raise ValueError
            suppressed.append((finding(row), reason))
        valid, invalid, errors, skipped, resources = value["kubeconform"]
        _kubeconform_part([valid, invalid, errors, resources])
        rules = []
        for data in value["rules"]:
            if not isinstance(data, dict):
                raise ValueError
            rules.append(Rule(**{**data, "kinds": tuple(data["kinds"])}))
        if type(value["objects"]) is not int or type(skipped) is not int:
            raise ValueError
        return CheckResult(findings, kubeconform.Result(valid, invalid, errors, skipped, resources), value["objects"],
                           rules, suppressed)
    except (KeyError, TypeError, ValueError):
        return None


def whole_value(result: CheckResult) -> dict:
    """A tree entry: the whole result (read by :func:`whole`)."""
    schema = result.kubeconform
    return {
        "findings": [row(f) for f in result.findings],
        "suppressed": [[row(f), reason] for f, reason in result.suppressed],
        "kubeconform": [schema.valid, schema.invalid, schema.errors, schema.skipped, schema.resources],
        "objects": result.objects,
        "rules": [{**r.__dict__, "kinds": list(r.kinds)} for r in result.rules],
    }


def same_rules(kept: list[Rule], loaded: tuple[Rule, ...]) -> bool:
    """Whether a kept result's rules are the rules this installation loads (their message and fix
    are filled from the configuration)."""
    return len(kept) == len(loaded) and all(
        getattr(k, name) == getattr(r, name) for k, r in zip(kept, loaded) for name in _COMPARED)


#: What filling a rule's placeholders leaves as it is.
_COMPARED = tuple(f.name for f in fields(Rule) if f.name not in ("message", "fix"))


def kept_rules(store: Any, env: str) -> tuple[Rule, ...]:
    """load_rules, kept under the environment (which holds every rule file's bytes): reading and
    validating 71 rule files costs more than the rest of a one-file re-check."""
    value = store.get("rules", env)
    if isinstance(value, list) and value:
        try:
            rules = tuple(Rule(**{**data, "kinds": tuple(data["kinds"])}) for data in value)
            if all(isinstance(getattr(r, f), str) for r in rules for f in
                   ("id", "name", "severity", "category", "target", "rationale", "message", "fix", "scope", "judges")) \
                    and all(isinstance(r.schema, dict) != isinstance(r.check, str) for r in rules) \
                    and all(isinstance(r.suppressible, bool) for r in rules):
                return rules
        except (TypeError, KeyError):
            pass
        store.reject()
    rules = load_rules()
    store.put("rules", env, [{**r.__dict__, "kinds": list(r.kinds)} for r in rules])
    return rules


def kept_pools(store: Any, env: str, where: Path) -> list[tuple[str, Any]]:
    """described_pools, kept under the environment (which holds the bytes of every file under
    --cluster, else dist/nodes/, where ``where`` is): the NodePool descriptions are not parsed again."""
    value = store.get("pools", env)
    if isinstance(value, list) and all(isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)
                                       and isinstance(v[1], dict) and v[1].get("kind") == pool_facts.KIND
                                       for v in value):
        return [(file, obj) for file, obj in value]
    if value is not None:
        store.reject()
    described = described_pools(where)
    store.put("pools", env, [[file, obj] for file, obj in described])
    return described


def split_verdict(result: kubeconform.Result, tallies: dict[str, int]) -> dict[str, tuple[int, int, int, list[dict]]] | None:
    """kubeconform's verdict on several files, per file; None when it does not add up (then
    nothing of it is kept)."""
    by_file: dict[str, list[dict]] = {file: [] for file in tallies}
    for res in result.resources:
        file = res.get("filename")
        if file not in by_file:
            return None
        by_file[file].append(res)
    parts = {}
    for file, resources in by_file.items():
        invalid = sum(r.get("status") == "statusInvalid" for r in resources)
        errors = sum(r.get("status") == "statusError" for r in resources)
        if invalid + errors != len(resources) or invalid + errors > tallies[file]:
            return None
        parts[file] = (tallies[file] - invalid - errors, invalid, errors, resources)
    if result.skipped or sum(p[0] for p in parts.values()) != result.valid or \
            sum(p[1] for p in parts.values()) != result.invalid or sum(p[2] for p in parts.values()) != result.errors:
        return None
    return parts
