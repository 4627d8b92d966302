"""`colocate check` through the verdict cache (docs/check-cache.md): the same result, computing
only what changed."""
from __future__ import annotations

import gc
import hashlib
import json
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable

from colocate.checker import kubeconform, manifests
from colocate.errors import ColocateError, InputError
from colocate.base.data_files import CONFIG_NAME, repository
from colocate.model import pool_facts
from colocate.checker.manifests import Doc
from colocate.checker.context import checked_context, described_pools, found_inputs
from colocate.checker.rule_loader import config_module
from colocate.checker.evaluate import evaluate
from colocate.checker.findings import finding_order, kubeconform_findings, skipped_findings, suppress, unusable_findings, with_field_lines
from colocate.checker.model import CheckResult, Context, Finding, Index, Rule, Timings
from colocate.checker.reads import Reads, SKELETON, WHOLE, rule_reads, seen_as, skeleton
from colocate.checker.rule_loader import judges_alone, load_rules
from colocate.rules.files import read_rules


def _row(f: Finding) -> list:
    return [f.rule, f.severity, f.file, f.line, f.kind, f.namespace, f.name, f.field, f.message, f.fix, f.field_line]


_ROW_TYPES = (str, str, str, int, str, str, str, str, str, str, int)


def _finding(row: Any) -> Finding:
    """A finding from a cache entry; ValueError when the entry does not hold one."""
    if not isinstance(row, list) or len(row) != len(_ROW_TYPES) or \
            not all(type(v) is t for v, t in zip(row, _ROW_TYPES)):
        raise ValueError("not a finding")
    return Finding(*row)


def _kubeconform_part(value: Any) -> tuple[int, int, int, list[dict]]:
    if not isinstance(value, list) or len(value) != 4 or not all(type(v) is int and v >= 0 for v in value[:3]) \
            or not isinstance(value[3], list) or not all(isinstance(r, dict) for r in value[3]):
        raise ValueError("not a kubeconform verdict")
    return value[0], value[1], value[2], value[3]


_CONTEXT_KINDS = frozenset({"Namespace", pool_facts.KIND})


@dataclass
class _Entry:
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


def _entry(file: str, value: Any) -> _Entry | None:
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
                    or item[1].get("kind") not in _CONTEXT_KINDS or not isinstance(item[1].get("apiVersion"), str):
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
        local_findings = [_finding(row) for row in local]
        if any(f.file != file for f in local_findings):
            raise ValueError
        digests = value["digests"]
        if not isinstance(digests, list) or len(digests) != len(skeletons) or \
                not all(isinstance(d, str) for d in digests):
            raise ValueError
        return _Entry(value, value["tally"], tuple(unusable) if unusable else None,
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


def _docs_entry(file: str, value: Any, count: int) -> list[Doc] | None:
    """A file's objects read back (``count`` of them), or None when they do not have the shape written."""
    if value is None:
        return None
    try:
        docs, sizes = value["docs"], value["sizes"]
        if not isinstance(docs, list) or not isinstance(sizes, list) or len(docs) != count or len(sizes) != count:
            raise ValueError
        made = []
        for item, size in zip(docs, sizes):
            if not isinstance(item, list) or len(item) != 2 or type(item[0]) is not int or not isinstance(item[1], dict) \
                    or not isinstance(item[1].get("kind"), str) or not isinstance(item[1].get("apiVersion"), str) \
                    or type(size) is not int:
                raise ValueError
            doc = Doc(file, item[0], item[1])
            doc.__dict__["json_size"] = size  # what Doc.json_size computes: COL303 and COL306 need no JSON
            made.append(doc)
        return made
    except (KeyError, TypeError, ValueError):
        return None


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _encoded(docs: list[Doc]) -> tuple[list[str], list[str]]:
    """Each object's compact JSON (ASCII, as Doc.json_size measures it) and its digest: one
    serialisation gives the docs entry, the object's size and what the views' digests hash."""
    parts, digests = [], []
    for doc in docs:
        text = json.dumps(doc.obj, separators=(",", ":"))
        doc.__dict__["json_size"] = len(text)
        parts.append(text)
        digests.append(_digest(text))
    return parts, digests


def _file_views(docs: list[Doc], digests: list[str], skeleton_digests: list[str], declared: dict[str, Reads],
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
            _digest(json.dumps(view, separators=(",", ":")))
        parts.append(f"{doc.line}:{i}:{part}")
    return (_digest(";".join(parts)), chosen) if parts else None


def _whole(value: Any) -> CheckResult | None:
    """A whole result read back, or None when it does not have the shape written."""
    if value is None:
        return None
    try:
        findings = [_finding(row) for row in value["findings"]]
        suppressed = []
        for row, reason in value["suppressed"]:
            if not isinstance(reason, str):
                raise ValueError
            suppressed.append((_finding(row), reason))
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


def _same_rules(kept: list[Rule], loaded: tuple[Rule, ...]) -> bool:
    """Whether a kept result's rules are the rules this installation loads (their message and fix
    are filled from the configuration)."""
    return len(kept) == len(loaded) and all(
        getattr(k, name) == getattr(r, name) for k, r in zip(kept, loaded) for name in _COMPARED)


#: What filling a rule's placeholders leaves as it is.
_COMPARED = tuple(f.name for f in fields(Rule) if f.name not in ("message", "fix"))


def _cached_rules(store: Any, env: str) -> tuple[Rule, ...]:
    """load_rules, kept under the environment (which holds every rule file's bytes): reading and
    validating 71 rule files costs more than the rest of a one-file re-check."""
    value = store.get("rules", env)
    if isinstance(value, list) and value:
        try:
            rules = tuple(Rule(**{**data, "kinds": tuple(data["kinds"])}) for data in value)
            if all(isinstance(getattr(r, f), str) for r in rules for f in
                   ("id", "name", "severity", "category", "target", "rationale", "message", "fix", "scope")) \
                    and all(isinstance(r.schema, dict) != isinstance(r.check, str) for r in rules) \
                    and all(isinstance(r.suppressible, bool) for r in rules):
                return rules
        except (TypeError, KeyError):
            pass
        store.reject()
    rules = load_rules()
    store.put("rules", env, [{**r.__dict__, "kinds": list(r.kinds)} for r in rules])
    return rules


def _cached_pools(store: Any, env: str, where: Path) -> list[tuple[str, Any]]:
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


def _split_verdict(result: kubeconform.Result, tallies: dict[str, int]) -> dict[str, tuple[int, int, int, list[dict]]] | None:
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


def check_cached(paths: list[Path], config_path: Path | None, cluster: Path | None, timings: Timings | None,
                  exclude: tuple[str, ...], store: Any, phase: Callable[[str], None], clock: list[float]) -> CheckResult:
    """:func:`check` through the verdict cache (a verdict_cache.Store): the same result, computing
    only what changed."""
    from colocate.checker import verdict_cache

    folder = store.root

    inputs = found_inputs(paths, exclude, config_path)
    # An empty cache (a first run) can reuse nothing: kubeconform starts on every file at once,
    # as without the cache, rather than after the keys (a tenth of a second on a first run).
    validation = None
    early = None if store.holds_entries() else config_module().kubernetes_version(config_path)
    try:
        if early:
            validation = kubeconform.start(list(inputs.files), early)
        # config.default_path(), without importing colocate.config (see config_module).
        env = verdict_cache.environment(config_path or repository() / CONFIG_NAME, cluster, exclude)
        named = {str(p) for p in paths if not p.is_dir()}
        files = [str(f) for f in inputs.files]
        keys, previous = verdict_cache.file_keys(store, env, inputs.files, named, paths)
        key_of = dict(zip(files, keys))
        tree = verdict_cache.tree_key(env, keys, inputs.skipped)
        phase("cache: keys")
        if tree is not None:
            value = store.get("tree", tree)
            whole = _whole(value)
            if whole is not None and not _same_rules(whole.rules, read_rules()):
                whole = None  # a result under other rules (or none: "0 rules") is never right
            if value is not None and whole is None:
                store.reject()
            if whole is not None:
                if validation is not None:  # another run filled the cache meanwhile
                    validation.kill()
                    validation.wait()
                phase("cache: whole result")
                return replace(whole, cache=f"{folder}: unchanged, the whole result reused ({len(files)} files)")
        # The environment holds the configuration's bytes and colocate's code (its schema): a
        # configuration this environment loaded before needs no schema validation again.
        checked = store.get("config", env) == "valid"
        config_mod = config_module()
        config = config_mod.load(config_path, schema_checked=checked) if config_path else \
            config_mod.load(schema_checked=checked)
        if not checked:
            store.put("config", env, "valid")
    except BaseException:
        if validation is not None and validation.poll() is None:
            validation.kill()
            validation.wait()
        raise
    # kubeconform starts on the files without an entry before the entries are read (it is the
    # longest step of a run with one file changed); an entry found unusable restarts it.
    guessed = list(inputs.files) if validation is not None else \
        [f for f, key in zip(inputs.files, keys) if not key or not store.has("file", key)]
    entries: dict[str, _Entry] = {}
    try:
        if guessed and validation is None:
            validation = kubeconform.start(guessed, config.kubernetes_version)
        with manifests.collector_paused():
            for file, key in zip(files, keys):
                value = store.get("file", key) if key else None
                entry = _entry(file, value)
                if entry is not None:
                    entries[file] = entry
                elif value is not None:
                    store.reject()
            gc.freeze()  # as _parse: what was read lives until the end, and has no cycles
        fresh = [f for f in inputs.files if str(f) not in entries]
        if fresh != guessed and validation is not None:
            validation.kill()
            validation.wait()
        if fresh != guessed:
            validation = kubeconform.start(fresh, config.kubernetes_version) if fresh else None
    except BaseException:
        if validation is not None and validation.poll() is None:
            validation.kill()
            validation.wait()
        raise
    phase("cache: read file entries")

    by_file: dict[str, list[Doc]] = {}  # whole objects, of the files that have them in this run
    tallies: dict[str, int] = {}
    unusable: list[tuple[Path, InputError]] = []
    loaded: set[str] = set()

    def whole_docs(file: str) -> list[Doc]:
        """A reused file's objects: its docs entry, else the file parsed again (same bytes: its key)."""
        if file not in by_file:
            entry = entries[file]
            value = store.get("docs", key_of[file])
            docs = _docs_entry(file, value, len(entry.skeletons))
            if docs is None:
                if value is not None:
                    store.reject()
                docs = manifests.load_files([Path(file)], [], [])
                if len(docs) != len(entry.skeletons):
                    raise ColocateError(f"{file} changed while it was checked; check again")
            by_file[file] = docs
            loaded.add(file)
        return by_file[file]

    try:
        with manifests.collector_paused():
            for path in fresh:
                tally: list[int] = []
                bad: list[tuple[Path, InputError]] = []
                by_file[str(path)] = manifests.load_files([path], tally, bad)
                tallies[str(path)] = tally[0]
                if bad and str(path) in named:
                    raise bad[0][1]
                unusable += bad
            gc.freeze()  # as _parse: before the collector is back, or its first collection scans them all
        for path in inputs.files:
            entry = entries.get(str(path))
            if entry is not None and entry.unusable:
                unusable.append((path, InputError(str(path), *entry.unusable)))
        position = {f: i for i, f in enumerate(files)}
        unusable.sort(key=lambda u: position[str(u[0])])
        # Each object as kubeconform's findings, suppressions and the count need it: whole when
        # parsed in this run, else its skeleton; and the objects the context is made of.
        known_docs = [doc for file in files for doc in (by_file[file] if file in by_file else entries[file].skeletons)]
        if not known_docs:
            said = "".join(f"; {exc}" for _, exc in unusable[:3])
            raise InputError(", ".join(map(str, paths)), "", f"no Kubernetes objects found{said}")
        left_out = {str(p) for p, _ in unusable}
        if validation is not None and left_out & set(tallies):
            validation.kill()
            validation.wait()
            rest = [f for f in fresh if str(f) not in left_out]
            validation = kubeconform.start(rest, config.kubernetes_version) if rest else None
        for file in left_out:
            tallies.pop(file, None)
        phase("parse YAML")
        rules = _cached_rules(store, env)
        context_docs = [doc for file in files for doc in
                        ([d for d in by_file[file] if d.kind in _CONTEXT_KINDS] if file in by_file
                         else entries[file].context_docs)]
        ctx = checked_context(config, context_docs, cluster, rules, lambda where: _cached_pools(store, env, where))
        context = verdict_cache.context_key(sorted(ctx.online_namespaces), sorted(ctx.offline_namespaces),
                                            ctx.min_argocd_version, ctx.registry_host, sorted(ctx.proxied_registries),
                                            ctx.pools, ctx.pools_source, ctx.shared_storage_class)
        alone = [r for r in rules if judges_alone(r)]
        joined = [r for r in rules if not judges_alone(r)]
        declared = {r.id: rule_reads(r) for r in joined}
        stale = [f for f in files if f not in entries or entries[f].local_context != context]
        phase("load rules and context")
        with manifests.collector_paused():
            for f in stale:
                whole_docs(f)
            gc.freeze()  # as _parse: the objects read live until the end, and have no cycles
        phase("cache: read objects")
        local: dict[str, list[Finding]] = {f: entries[f].local for f in files if f not in stale}
        encoded: dict[str, tuple[list[str], list[str]]] = {f: _encoded(by_file[f]) for f in stale}
        phase("cache: objects as JSON")
        # A changed file's objects that are as they were (same line, same digest) keep the
        # per-object findings its previous entry holds, when judged in the same context.
        stale_docs: list[Doc] = []
        for f in stale:
            prior = _entry(f, store.get("file", previous[f])) if f in previous and f not in entries else None
            if prior is None or prior.local_context != context:
                stale_docs += by_file[f]
                local[f] = []
                continue
            before = set(zip((d.line for d in prior.skeletons), prior.digests))
            same = set()
            for doc, digest in zip(by_file[f], encoded[f][1]):
                if (doc.line, digest) in before:
                    same.add(doc.line)
                else:
                    stale_docs.append(doc)
            local[f] = [x for x in prior.local if x.line in same]
        for finding in evaluate(alone, Index(stale_docs, ctx), timings) if stale_docs else ():
            local[finding.file].append(finding)
        clock[0] = time.perf_counter()
        # What each cross-object rule reads of the files judged afresh, and its digest.
        views: dict[str, dict[str, tuple[str, list]]] = {}
        skeleton_rows: dict[str, list] = {}
        for f in stale:
            docs = by_file[f]
            parts, digests = encoded[f]
            skeletons = [skeleton(d) for d in docs]
            skeleton_rows[f] = [[d.line, s] for d, s in zip(docs, skeletons)]
            skeleton_digests = [_digest(json.dumps(s, separators=(",", ":"))) for s in skeletons]
            views[f] = _file_views(docs, digests, skeleton_digests, declared, ctx)
        for f in files:
            if f not in views:
                views[f] = entries[f].views
        phase("cache: what cross-object rules read")
        # A cross-object rule runs again only when what it reads changed (or the context did).
        rule_keys = {r.id: verdict_cache.rule_key(env, context, r.id, [(f, views[f][r.id][0]) for f in files
                                                                       if r.id in views[f]]) for r in joined}
        cross: list[Finding] = []
        rerun: list[Rule] = []
        for rule in joined:
            value = store.get("rule", rule_keys[rule.id])
            try:
                if not isinstance(value, list):
                    raise ValueError
                cross.extend([_finding(row) for row in value])
            except ValueError:
                if value is not None:
                    store.reject()
                rerun.append(rule)
        phase("cache: cross-object findings reused")
        viewed: dict[int, Index] = {}
        rerun_findings: dict[str, list[Finding]] = {}
        with manifests.collector_paused():
            for rule in rerun:
                reads_ = declared[rule.id]
                if id(reads_) in viewed:
                    continue
                seen: list[Doc] = []
                for f in files:
                    if rule.id not in views[f]:
                        continue
                    chosen = dict(views[f][rule.id][1])
                    kept = by_file[f] if f in by_file else entries[f].skeletons
                    rows = [(i, chosen[i] if i in chosen else reads_.by_kind(doc.kind, i == 0))
                            for i, doc in enumerate(kept)]
                    if f not in by_file and any(v == WHOLE for _, v in rows):
                        kept = whole_docs(f)
                    for i, view in rows:
                        if view is None:
                            continue
                        if f in by_file:  # as viewed_index makes them
                            seen.append(seen_as(kept[i], view))
                        elif view == SKELETON:
                            seen.append(kept[i])
                        else:
                            seen.append(seen_as(kept[i], view))
                viewed[id(reads_)] = Index(seen, ctx)
            gc.freeze()
        phase("cache: objects for cross-object rules")
        for rule in rerun:
            rerun_findings[rule.id] = evaluate([rule], Index([], ctx), timings, viewed)
            cross.extend(rerun_findings[rule.id])
        clock[0] = time.perf_counter()
        rule_findings = [f for file in files for f in local[file]] + cross
        known = {(f, line, name): at for f, entry in entries.items() for line, name, at in entry.lines}
        with_field_lines(rule_findings, known)  # while kubeconform runs, as check() does
        phase("field lines of the rules' findings")
        parts: dict[str, tuple[int, int, int, list[dict]]] | None = {}
        if validation is not None:
            fresh_result = kubeconform.wait(validation)
            kubeconform.unjudged(fresh_result, sum(tallies.values()))
            parts = _split_verdict(fresh_result, tallies)
        phase("wait for kubeconform")
    finally:
        if validation is not None and validation.poll() is None:
            validation.kill()
            validation.wait()
    if parts is None:  # kubeconform's verdict could not be split by file: keep none of this run
        keep = False
        verdicts = [entries[f].kubeconform for f in files if f in entries and not entries[f].unusable]
        verdicts.append((fresh_result.valid, fresh_result.invalid, fresh_result.errors, fresh_result.resources))
    else:
        keep = True
        verdicts = [entries[f].kubeconform if f in entries else parts[f] for f in files
                    if f in parts or (f in entries and not entries[f].unusable)]
    schema_result = kubeconform.Result(sum(v[0] for v in verdicts), sum(v[1] for v in verdicts),
                                       sum(v[2] for v in verdicts), 0, [r for v in verdicts for r in v[3]])
    findings, suppressed = suppress(kubeconform_findings(schema_result, known_docs, config.kubernetes_version)
                                     + rule_findings + skipped_findings(inputs.skipped) + unusable_findings(unusable),
                                     known_docs, rules)
    findings = with_field_lines(findings, known)
    suppressed = sorted(zip(with_field_lines([f for f, _ in suppressed], known), (reason for _, reason in suppressed)),
                        key=lambda s: (finding_order(s[0]), s[1]))
    findings.sort(key=finding_order)
    phase("field lines, suppressions, sort")
    result = CheckResult(findings, schema_result, len(known_docs), [r.filled(ctx.values) for r in rules], suppressed)

    if keep:
        # A file edited while it was checked: what was parsed (and what kubeconform read) may not
        # be the bytes its key was made from; then neither it nor the whole result is kept.
        moved = {str(f) for f, key in zip(inputs.files, keys) if str(f) not in entries and key is not None
                 and verdict_cache.file_key(env, f, str(f) in named) != key}
        keep = not moved
    if keep:
        new_lines: dict[str, list[tuple[int, str, int]]] = {}
        for (f, line, name), at in known.items():
            new_lines.setdefault(f, []).append((line, name, at))
        grew = {f for f, found in new_lines.items() if f in entries and len(found) != len(entries[f].lines)}
        unusable_by_file = {str(p): exc for p, exc in unusable}
        for file, key in zip(files, keys):
            if key is None or (file in entries and file not in stale and file not in grew):
                continue
            if file in entries and file not in stale:  # only more field lines
                store.put("file", key, {**entries[file].value, "lines": sorted(new_lines.get(file, ()))})
                continue
            exc = unusable_by_file.get(file)
            docs = by_file[file]
            if file not in entries:  # the objects, read back only when a rule must run on them again
                store.put_raw("docs", key, '{"docs":[' + ",".join(f"[{d.line},{text}]" for d, text
                                                                    in zip(docs, encoded[file][0]))
                              + '],"sizes":' + json.dumps([len(text) for text in encoded[file][0]]) + "}")
            store.put("file", key, {
                "tally": tallies.get(file, entries[file].tally if file in entries else 0),
                "unusable": [exc.where, exc.reason] if exc else None,
                "kubeconform": list(entries[file].kubeconform if file in entries else parts.get(file, (0, 0, 0, []))),
                "local": [context, [_row(f) for f in local[file]]],
                "lines": sorted(new_lines.get(file, ())),
                "skeletons": skeleton_rows[file],
                "context": [[d.line, d.obj] for d in docs if d.kind in _CONTEXT_KINDS],
                "views": {rule_id: list(v) for rule_id, v in views[file].items()},
                "digests": encoded[file][1],
            })
        for rule in rerun:
            store.put("rule", rule_keys[rule.id], [_row(f) for f in rerun_findings[rule.id]])
        if tree is not None:
            store.put("tree", tree, {
                "findings": [_row(f) for f in result.findings],
                "suppressed": [[_row(f), reason] for f, reason in result.suppressed],
                "kubeconform": [schema_result.valid, schema_result.invalid, schema_result.errors, schema_result.skipped,
                                schema_result.resources],
                "objects": result.objects,
                "rules": [{**r.__dict__, "kinds": list(r.kinds)} for r in result.rules],
            })
    store.flush()
    phase("cache: write")
    stats = store.stats
    result.cache = (f"{folder}: {len(files) - len(fresh)} of {len(files)} files reused, {len(fresh)} read afresh; "
                    f"per-object rules on {len(stale)} files ({len(stale_docs)} objects judged), cross-object rules: {len(rerun)} of {len(joined)} run "
                    f"again ({len(loaded)} files' objects read back); "
                    f"{stats.ignored} entries ignored (corrupt or foreign), {stats.writes} written"
                    + (f", {stats.write_errors} not writable" if stats.write_errors else ""))
    return result
