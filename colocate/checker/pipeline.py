"""`colocate check` as one pipeline of named stages, written once for every store.

Each stage asks the run's store what it already knows before computing the rest: :class:`Store`
keeps nothing, so every stage computes everything (``--no-cache``); ``reuse.CacheStore`` answers
from the verdict cache (docs/check-cache.md). The stages, in order: start (the files, kubeconform,
a whole result kept, the configuration), read entries, parse, rules and context, per-object
rules, cross-object rules, field lines and kubeconform's verdict, assemble, keep.
"""
from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from colocate.checker import kubeconform, manifests
from colocate.checker.context import CONTEXT_KINDS, checked_context, described_pools, found_inputs, load_config
from colocate.checker.evaluate import evaluate
from colocate.checker.findings import (
    finding_order, kubeconform_findings, skipped_findings, suppress, unusable_findings, with_field_lines,
)
from colocate.checker.manifests import Doc
from colocate.checker.model import CheckResult, Finding, Index, Rule, Timings
from colocate.checker.reads import rule_reads
from colocate.checker.rule_loader import config_module, judges_alone, load_rules
from colocate.errors import InputError

if TYPE_CHECKING:
    from colocate import config as config_mod


class Store:
    """What a check knows from earlier runs, asked by each stage before it computes: here nothing
    (``--no-cache``). The verdict cache (``reuse.CacheStore``) answers each question from its
    entries; whatever it answers, the result is the one this store gives."""

    def starts_early(self) -> bool:
        """Whether kubeconform starts on every file at once (nothing to reuse), before the keys."""
        return True

    def whole_result(self, run: Run) -> CheckResult | None:
        """The result of this very tree, kept whole."""
        return None

    def config(self, config_path: Path | None) -> config_mod.Config:
        return load_config(config_path)

    def fresh_guess(self, run: Run) -> list[Path]:
        """The files kubeconform starts on before the entries are read (those likely without one)."""
        return list(run.inputs.files)

    def read_entries(self, run: Run) -> dict[str, Any]:
        """The entry of each file that need not be read again: ``.skeletons`` (every object's),
        ``.context_docs`` (its Namespaces and NodePools, whole) and ``.unusable`` (why the file is
        not manifests, or None)."""
        return {}

    def rules(self) -> tuple[Rule, ...]:
        return load_rules()

    def described_pools(self, where: Path) -> list[tuple[str, Any]]:
        return described_pools(where)

    def local_findings(self, run: Run) -> tuple[dict[str, list[Finding]], list[Doc]]:
        """The per-object findings kept for each file, and the objects to judge afresh."""
        return {f: [] for f in run.files}, run.known_docs

    def cross_findings(self, run: Run) -> tuple[list[Finding], list[Rule]]:
        """The cross-object findings kept, and the cross-object rules to run again."""
        return [], run.joined

    def viewed(self, run: Run, rerun: list[Rule]) -> dict[int, Index]:
        """The index each re-run rule's declaration sees (evaluate makes those missing, from the
        objects of :attr:`Run.known_docs`, which are then all whole)."""
        return {}

    def known_lines(self, run: Run) -> dict[tuple[str, int, str], int]:
        """(file, object line, field) -> the field's line, as found before."""
        return {}

    def verdict(self, run: Run, fresh: kubeconform.Result | None) -> kubeconform.Result:
        """kubeconform's verdict on every file, from its verdict on the files read afresh."""
        return fresh if fresh is not None else kubeconform.Result(0, 0, 0, 0, [])

    def keep(self, run: Run, result: CheckResult) -> None:
        """Keep what this run computed."""

    def flush(self) -> None:
        """Wait until everything kept is written."""


class Run:
    """One check: its inputs, and what each stage found, for the stages after it and the store."""

    def __init__(self, paths: list[Path], config_path: Path | None, cluster: Path | None, timings: Timings | None,
                 exclude: tuple[str, ...], store: Store):
        self.paths, self.config_path, self.cluster, self.timings = paths, config_path, cluster, timings
        self.exclude, self.store = exclude, store
        self.clock = time.perf_counter()
        self.validation: kubeconform.Validation | None = None
        self.named = {str(p) for p in paths if not p.is_dir()}
        #: Whole objects, of the files parsed (or read back whole) in this run.
        self.by_file: dict[str, list[Doc]] = {}
        self.tallies: dict[str, int] = {}
        self.unusable: list[tuple[Path, InputError]] = []
        self.verdict_of_fresh: kubeconform.Result | None = None

    def phase(self, name: str) -> None:
        """The seconds since the last phase, as ``name`` (``check --timings``)."""
        now = time.perf_counter()
        if self.timings is not None:
            self.timings.append((name, now - self.clock))
        self.clock = now

    def restart_kubeconform(self, files: list[Path]) -> None:
        """kubeconform on ``files`` only (none: not at all), the run going on stopped."""
        self.stop_kubeconform()
        self.validation = kubeconform.start(files, self.config.kubernetes_version) if files else None

    def stop_kubeconform(self) -> None:
        if self.validation is not None and self.validation.poll() is None:
            self.validation.kill()
            self.validation.wait()

    # --- the stages ---------------------------------------------------------------------------

    def start(self) -> CheckResult | None:
        """The files, kubeconform started, and a whole result kept (returned) or the configuration.
        kubeconform takes most of the wall time, so with nothing to reuse it starts as soon as it
        can: with the configuration's Kubernetes version, before the rest of the configuration is
        validated (a bad one stops it, and is said first)."""
        self.inputs = found_inputs(self.paths, self.exclude, self.config_path)
        self.files = [str(f) for f in self.inputs.files]
        early = self.store.starts_early() and config_module().kubernetes_version(self.config_path)
        if early:
            self.validation = kubeconform.start(list(self.inputs.files), early)
        whole = self.store.whole_result(self)
        if whole is not None:
            self.stop_kubeconform()  # another run filled the cache meanwhile
            return whole
        self.config = self.store.config(self.config_path)
        self.phase("start kubeconform, read the configuration")
        return None

    def read_entries(self) -> None:
        """What the store keeps of each file; kubeconform on the files without one. It starts on
        the files likely to have none before the entries are read (the longest step of a run with
        one file changed), and again when that guess was wrong."""
        guessed = list(self.inputs.files) if self.validation is not None else self.store.fresh_guess(self)
        if guessed and self.validation is None:
            self.validation = kubeconform.start(guessed, self.config.kubernetes_version)
        self.entries = self.store.read_entries(self)
        self.fresh = [f for f in self.inputs.files if str(f) not in self.entries]
        if self.fresh != guessed:
            self.restart_kubeconform(self.fresh)

    def parse(self) -> None:
        """The files without an entry parsed. A file found in a folder that is not manifests (a CI
        workflow, a Helm template) is reported on its own and the rest checked, as kubeconform
        does; one named is bad input. The objects are frozen out of the cyclic collector's scans:
        millions of containers that live until the check ends, without cycles (check unfreezes)."""
        with manifests.collector_paused():
            for path in self.fresh:
                tally: list[int] = []
                bad: list[tuple[Path, InputError]] = []
                self.by_file[str(path)] = manifests.load_files([path], tally, bad)
                self.tallies[str(path)] = tally[0]
                if bad and str(path) in self.named:
                    raise bad[0][1]
                self.unusable += bad
            gc.freeze()  # before the collector is back: its first collection would scan every object
        for path in self.inputs.files:
            entry = self.entries.get(str(path))
            if entry is not None and entry.unusable:
                self.unusable.append((path, InputError(str(path), *entry.unusable)))
        position = {f: i for i, f in enumerate(self.files)}
        self.unusable.sort(key=lambda u: position[str(u[0])])
        # Each object as kubeconform's findings, suppressions and the count need it: whole when
        # parsed in this run, else its skeleton.
        self.known_docs = [doc for file in self.files for doc in
                           (self.by_file[file] if file in self.by_file else self.entries[file].skeletons)]
        if not self.known_docs:
            said = "".join(f"; {exc}" for _, exc in self.unusable[:3])
            raise InputError(", ".join(map(str, self.paths)), "", f"no Kubernetes objects found{said}")
        left_out = {str(p) for p, _ in self.unusable}
        if self.validation is not None and left_out & set(self.tallies):
            # kubeconform again, without them: its verdict must cover the objects parsed.
            self.restart_kubeconform([f for f in self.fresh if str(f) not in left_out])
        for file in left_out:
            self.tallies.pop(file, None)
        self.phase("parse YAML")

    def rules_and_context(self) -> None:
        self.rules = self.store.rules()
        context_docs = [doc for file in self.files for doc in
                        ([d for d in self.by_file[file] if d.kind in CONTEXT_KINDS] if file in self.by_file
                         else self.entries[file].context_docs)]
        self.ctx = checked_context(self.config, context_docs, self.cluster, self.rules, self.store.described_pools)
        self.alone = [r for r in self.rules if judges_alone(r)]
        self.joined = [r for r in self.rules if not judges_alone(r)]
        self.declared = {r.id: rule_reads(r) for r in self.joined}
        self.phase("load rules and context")

    def per_object_rules(self) -> None:
        """The rules that judge each object on its own, on the objects the store has no findings of."""
        self.local, judged = self.store.local_findings(self)
        self.judged = len(judged)
        for finding in evaluate(self.alone, Index(judged, self.ctx), self.timings) if judged else ():
            self.local[finding.file].append(finding)
        self.clock = time.perf_counter()

    def cross_object_rules(self) -> None:
        """The rules that read other objects, each over only what it declares (checker.Reads), run
        again unless the store has their findings on just that."""
        self.cross, self.rerun = self.store.cross_findings(self)
        viewed = self.store.viewed(self, self.rerun)
        index = Index(self.known_docs, self.ctx)
        self.rerun_findings: dict[str, list[Finding]] = {}
        for rule in self.rerun:
            self.rerun_findings[rule.id] = evaluate([rule], index, self.timings, viewed)
            self.cross.extend(self.rerun_findings[rule.id])
        self.clock = time.perf_counter()

    def field_lines_and_verdict(self) -> None:
        """The lines of the rules' fields while kubeconform still runs (files composed again):
        after it, only its own findings' files are. Then kubeconform's verdict."""
        self.rule_findings = [f for file in self.files for f in self.local[file]] + self.cross
        self.known = self.store.known_lines(self)
        with_field_lines(self.rule_findings, self.known)
        self.phase("field lines of the rules' findings")
        if self.validation is not None:
            self.verdict_of_fresh = kubeconform.wait(self.validation)
            kubeconform.unjudged(self.verdict_of_fresh, sum(self.tallies.values()))
        self.phase("wait for kubeconform")

    def assemble(self) -> CheckResult:
        """Every finding with its field's line, suppressions applied, in order."""
        self.schema_result = self.store.verdict(self, self.verdict_of_fresh)
        findings, suppressed = suppress(
            kubeconform_findings(self.schema_result, self.known_docs, self.config.kubernetes_version)
            + self.rule_findings + skipped_findings(self.inputs.skipped) + unusable_findings(self.unusable),
            self.known_docs, self.rules)
        findings = with_field_lines(findings, self.known)
        suppressed = sorted(zip(with_field_lines([f for f, _ in suppressed], self.known),
                                (reason for _, reason in suppressed)),
                            key=lambda s: (finding_order(s[0]), s[1]))
        findings.sort(key=finding_order)
        self.phase("field lines, suppressions, sort")
        return CheckResult(findings, self.schema_result, len(self.known_docs),
                           [r.filled(self.ctx.values) for r in self.rules], suppressed)


def run(paths: list[Path], config_path: Path | None, cluster: Path | None, timings: Timings | None,
        exclude: tuple[str, ...], store: Store) -> CheckResult:
    """The stages in order; kubeconform never outlives them (a Ctrl-C included)."""
    one = Run(paths, config_path, cluster, timings, exclude, store)
    try:
        whole = one.start()
        if whole is not None:
            return whole
        one.read_entries()
        one.parse()
        one.rules_and_context()
        one.per_object_rules()
        one.cross_object_rules()
        one.field_lines_and_verdict()
    finally:
        one.stop_kubeconform()
    result = one.assemble()
    store.keep(one, result)
    return result
