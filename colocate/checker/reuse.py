"""The pipeline's store backed by the verdict cache (docs/check-cache.md): each stage of
``colocate check`` is answered from the entries (``cached``) of earlier runs, and computes only
what changed; the result is the one a check without the cache gives."""
from __future__ import annotations

import gc
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from colocate.base.data_files import CONFIG_NAME, repository
from colocate.checker import cached, kubeconform, manifests, verdict_cache
from colocate.checker.manifests import Doc
from colocate.checker.model import CheckResult, Finding, Index, Rule
from colocate.checker.context import CONTEXT_KINDS
from colocate.checker.pipeline import Run, Store
from colocate.checker.reads import SKELETON, WHOLE, seen_as, skeleton
from colocate.checker.rule_loader import config_module
from colocate.errors import ColocateError
from colocate.rules.files import read_rules


class CacheStore(Store):
    """Answers from a verdict_cache.Store under ``root``; keeps what each run computed."""

    def __init__(self, root: Path):
        self.disk = verdict_cache.Store(root)
        self.entries: dict[str, cached.FileEntry] = {}
        self.loaded: set[str] = set()  # reused files whose docs entry was read
        self.kept_docs: dict[str, cached.KeptDocs | None] = {}
        self.keep_verdicts = True

    def flush(self) -> None:
        self.disk.flush()

    def starts_early(self) -> bool:
        """An empty cache (a first run) can reuse nothing: kubeconform starts on every file at
        once, as without the cache, rather than after the keys (a tenth of a second)."""
        return not self.disk.holds_entries()

    def whole_result(self, run: Run) -> CheckResult | None:
        # config.default_path(), without importing colocate.config (see config_module).
        self.env = verdict_cache.environment(run.config_path or repository() / CONFIG_NAME, run.cluster, run.exclude)
        self.keys, self.previous = verdict_cache.file_keys(self.disk, self.env, run.inputs.files, run.named, run.paths)
        self.key_of = dict(zip(run.files, self.keys))
        self.tree = verdict_cache.tree_key(self.env, self.keys, run.inputs.skipped)
        run.phase("cache: keys")
        if self.tree is None:
            return None
        value = self.disk.get("tree", self.tree)
        whole = cached.whole(value)
        if whole is not None and not cached.same_rules(whole.rules, read_rules()):
            whole = None  # a result under other rules (or none: "0 rules") is never right
        if value is not None and whole is None:
            self.disk.reject()
        if whole is None:
            return None
        run.phase("cache: whole result")
        return replace(whole, cache=f"{self.disk.root}: unchanged, the whole result reused ({len(run.files)} files)")

    def config(self, config_path: Path | None):
        """The environment holds the configuration's bytes and colocate's code (its schema): a
        configuration this environment loaded before needs no schema validation again."""
        checked = self.disk.get("config", self.env) == "valid"
        config_mod = config_module()
        config = config_mod.load(config_path, schema_checked=checked) if config_path else \
            config_mod.load(schema_checked=checked)
        if not checked:
            self.disk.put("config", self.env, "valid")
        return config

    def fresh_guess(self, run: Run) -> list[Path]:
        return [f for f, key in zip(run.inputs.files, self.keys) if not key or not self.disk.has("file", key)]

    def read_entries(self, run: Run) -> dict[str, Any]:
        with manifests.collector_paused():
            for file, key in zip(run.files, self.keys):
                value = self.disk.get("file", key) if key else None
                entry = cached.file_entry(file, value)
                if entry is not None:
                    self.entries[file] = entry
                elif value is not None:
                    self.disk.reject()
            gc.freeze()
        run.phase("cache: read file entries")
        return self.entries

    def rules(self) -> tuple[Rule, ...]:
        return cached.kept_rules(self.disk, self.env)

    def described_pools(self, where: Path) -> list[tuple[str, Any]]:
        return cached.kept_pools(self.disk, self.env, where)

    def whole_docs(self, run: Run, file: str) -> list[Doc]:
        """A reused file's objects: its docs entry, else the file parsed again (same bytes: its key)."""
        if file not in run.by_file:
            kept = self._kept_docs(file)
            try:
                docs = kept.docs() if kept is not None else None
            except ValueError:
                self.disk.reject()
                docs = None
            run.by_file[file] = docs if docs is not None else self._parsed_again(file)
        return run.by_file[file]

    def whole_doc(self, run: Run, file: str, i: int) -> Doc:
        """A reused file's object ``i``, whole: only it decoded from the docs entry."""
        if file not in run.by_file:
            kept = self._kept_docs(file)
            if kept is not None:
                try:
                    return kept.doc(i)
                except ValueError:
                    self.disk.reject()
            run.by_file[file] = self._parsed_again(file)
        return run.by_file[file][i]

    def _kept_docs(self, file: str) -> cached.KeptDocs | None:
        """The file's docs entry, read once (None: there is none, or it was damaged)."""
        if file not in self.kept_docs:
            found = self.disk.get_blob("docs", self.key_of[file])
            kept = self.kept_docs[file] = cached.docs_entry(file, found, len(self.entries[file].skeletons))
            if found is not None and kept is None:
                self.disk.reject()
            self.loaded.add(file)
        return self.kept_docs[file]

    def _parsed_again(self, file: str) -> list[Doc]:
        self.kept_docs[file] = None
        docs = manifests.load_files([Path(file)], [], [])
        if len(docs) != len(self.entries[file].skeletons):
            raise ColocateError(f"{file} changed while it was checked; check again")
        return docs

    def local_findings(self, run: Run) -> tuple[dict[str, list[Finding]], list[Doc]]:
        """A file's kept findings are used under the context they were judged in; a changed file's
        objects that are as they were (same line, same digest) keep the findings its previous
        entry holds."""
        ctx, entries = run.ctx, self.entries
        self.context = verdict_cache.context_key(
            sorted(ctx.online_namespaces), sorted(ctx.offline_namespaces), ctx.min_argocd_version, ctx.registry_host,
            sorted(ctx.proxied_registries), ctx.pools, ctx.pools_source, ctx.shared_storage_class)
        self.stale = [f for f in run.files if f not in entries or entries[f].local_context != self.context]
        with manifests.collector_paused():
            for f in self.stale:
                self.whole_docs(run, f)
            gc.freeze()
        run.phase("cache: read objects")
        local: dict[str, list[Finding]] = {f: entries[f].local for f in run.files if f not in self.stale}
        self.encoded = {f: cached.encoded(run.by_file[f]) for f in self.stale}
        run.phase("cache: objects as JSON")
        judged: list[Doc] = []
        for f in self.stale:
            prior = cached.file_entry(f, self.disk.get("file", self.previous[f])) \
                if f in self.previous and f not in entries else None
            if prior is None or prior.local_context != self.context:
                judged += run.by_file[f]
                local[f] = []
                continue
            before = set(zip((d.line for d in prior.skeletons), prior.digests))
            same = set()
            for doc, digest in zip(run.by_file[f], self.encoded[f][1]):
                if (doc.line, digest) in before:
                    same.add(doc.line)
                else:
                    judged.append(doc)
            local[f] = [x for x in prior.local if x.line in same]
        return local, judged

    def cross_findings(self, run: Run) -> tuple[list[Finding], list[Rule]]:
        """A cross-object rule runs again only when what it reads changed (or the context did)."""
        self.views: dict[str, dict[str, tuple[str, list]]] = {}
        self.skeleton_rows: dict[str, list] = {}
        for f in self.stale:
            docs = run.by_file[f]
            skeletons = [skeleton(d) for d in docs]
            self.skeleton_rows[f] = [[d.line, s] for d, s in zip(docs, skeletons)]
            skeleton_digests = [cached.digest(json.dumps(s, separators=(",", ":"))) for s in skeletons]
            self.views[f] = cached.file_views(docs, self.encoded[f][1], skeleton_digests, run.declared, run.ctx)
        for f in run.files:
            if f not in self.views:
                self.views[f] = self.entries[f].views
        run.phase("cache: what cross-object rules read")
        self.rule_keys = {r.id: verdict_cache.rule_key(self.env, self.context, r.id,
                                                       [(f, self.views[f][r.id][0]) for f in run.files
                                                        if r.id in self.views[f]]) for r in run.joined}
        cross: list[Finding] = []
        rerun: list[Rule] = []
        for rule in run.joined:
            value = self.disk.get("rule", self.rule_keys[rule.id])
            try:
                if not isinstance(value, list):
                    raise ValueError
                cross.extend([cached.finding(row) for row in value])
            except ValueError:
                if value is not None:
                    self.disk.reject()
                rerun.append(rule)
        run.phase("cache: cross-object findings reused")
        return cross, rerun

    def viewed(self, run: Run, rerun: list[Rule]) -> dict[int, Index]:
        """What each re-run rule reads: projections and skeletons from the file entries, a reused
        file's objects read back whole only when the rule reads one whole."""
        viewed: dict[int, Index] = {}
        with manifests.collector_paused():
            for rule in rerun:
                reads_ = run.declared[rule.id]
                if id(reads_) not in viewed:
                    viewed[id(reads_)] = Index(self._seen(run, rule.id, reads_), run.ctx, reads_)
            gc.freeze()
        run.phase("cache: objects for cross-object rules")
        return viewed

    def _seen(self, run: Run, rule_id: str, reads_: Any) -> list[Doc]:
        seen: list[Doc] = []
        for f in run.files:
            if rule_id not in self.views[f]:
                continue
            chosen = dict(self.views[f][rule_id][1])
            whole = f in run.by_file
            kept = run.by_file[f] if whole else self.entries[f].skeletons
            for i, doc in enumerate(kept):
                view = chosen[i] if i in chosen else reads_.by_kind(doc.kind, i == 0)
                if view is None:
                    continue
                if whole:  # as viewed_index makes them
                    seen.append(seen_as(doc, view))
                elif view == SKELETON:
                    seen.append(doc)
                elif view == WHOLE:
                    seen.append(self.whole_doc(run, f, i))
                else:
                    seen.append(seen_as(doc, view))
        return seen

    def known_lines(self, run: Run) -> dict[tuple[str, int, str], int]:
        return {(f, line, name): at for f, entry in self.entries.items() for line, name, at in entry.lines}

    def verdict(self, run: Run, fresh: kubeconform.Result | None) -> kubeconform.Result:
        """The reused files' verdicts with those of the files read afresh, split by file; a verdict
        that cannot be split keeps nothing of this run."""
        self.parts: dict[str, tuple[int, int, int, list[dict]]] | None = {}
        if fresh is not None:
            self.parts = cached.split_verdict(fresh, run.tallies)
        entries = self.entries
        if self.parts is None:
            self.keep_verdicts = False
            verdicts = [entries[f].kubeconform for f in run.files if f in entries and not entries[f].unusable]
            verdicts.append((fresh.valid, fresh.invalid, fresh.errors, fresh.resources))
        else:
            verdicts = [entries[f].kubeconform if f in entries else self.parts[f] for f in run.files
                        if f in self.parts or (f in entries and not entries[f].unusable)]
        return kubeconform.Result(sum(v[0] for v in verdicts), sum(v[1] for v in verdicts),
                                  sum(v[2] for v in verdicts), 0, [r for v in verdicts for r in v[3]])

    def keep(self, run: Run, result: CheckResult) -> None:
        # A file edited while it was checked: what was parsed (and what kubeconform read) may not
        # be the bytes its key was made from; then neither it nor the whole result is kept.
        if self.keep_verdicts and not any(
                str(f) not in self.entries and key is not None
                and verdict_cache.file_key(self.env, f, str(f) in run.named) != key
                for f, key in zip(run.inputs.files, self.keys)):
            self._write(run, result)
        self.disk.flush()
        run.phase("cache: write")
        stats, files, fresh = self.disk.stats, run.files, run.fresh
        decoded = sum(doc is not None for kept in self.kept_docs.values() if kept is not None for doc in kept.made)
        result.cache = (
            f"{self.disk.root}: {len(files) - len(fresh)} of {len(files)} files reused, {len(fresh)} read afresh; "
            f"per-object rules on {len(self.stale)} files ({run.judged} objects judged), cross-object rules: "
            f"{len(run.rerun)} of {len(run.joined)} run again ({decoded} objects of {len(self.loaded)} files read back); "
            f"{stats.ignored} entries ignored (corrupt or foreign), {stats.writes} written"
            + (f", {stats.write_errors} not writable" if stats.write_errors else ""))

    def _write(self, run: Run, result: CheckResult) -> None:
        """Every entry this run made or changed: files, their objects, rules re-run, the whole result."""
        entries, disk = self.entries, self.disk
        new_lines: dict[str, list[tuple[int, str, int]]] = {}
        for (f, line, name), at in run.known.items():
            new_lines.setdefault(f, []).append((line, name, at))
        grew = {f for f, found in new_lines.items() if f in entries and len(found) != len(entries[f].lines)}
        unusable = {str(p): exc for p, exc in run.unusable}
        for file, key in zip(run.files, self.keys):
            if key is None or (file in entries and file not in self.stale and file not in grew):
                continue
            lines = sorted(new_lines.get(file, ()))
            if file in entries and file not in self.stale:  # only more field lines
                disk.put("file", key, {**entries[file].value, "lines": lines})
                continue
            docs = run.by_file[file]
            if file not in entries:  # the objects, read back only when a rule must run on them again
                disk.put_blob("docs", key, *cached.docs_entry_parts(docs, self.encoded[file][0]))
            disk.put("file", key, cached.file_entry_value(
                tally=run.tallies.get(file, entries[file].tally if file in entries else 0),
                unusable=unusable.get(file),
                kubeconform=entries[file].kubeconform if file in entries else self.parts.get(file, (0, 0, 0, [])),
                context=self.context, local=run.local[file], lines=lines, skeletons=self.skeleton_rows[file],
                context_docs=[d for d in docs if d.kind in CONTEXT_KINDS], views=self.views[file],
                digests=self.encoded[file][1]))
        for rule in run.rerun:
            disk.put("rule", self.rule_keys[rule.id], [cached.row(f) for f in run.rerun_findings[rule.id]])
        if self.tree is not None:
            disk.put("tree", self.tree, cached.whole_value(result))
