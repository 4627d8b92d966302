"""`colocate check`: kubeconform plus the policy rules, over one index of every object.

Rules live in ``policies/rules/<id>.yaml``: metadata, message and fix, and either a JSON
Schema (single-object rules, Polaris style) or a Python check ``<module>.<function>`` in
``policies/checks/<module>.py`` (rules that read more than one field or join objects).

The package, by concern: ``model`` (rules, findings, context, index, result), ``rules`` (loading
them), ``reads`` (what each cross-object rule reads), ``evaluate`` (running rules), ``findings``
(kubeconform's findings, field lines, suppressions, order), ``context`` (what objects are judged
in) and ``cached`` (the same check through the verdict cache). This module runs a check and is
the package's face: everything the checks and the commands use is importable from here.
"""
from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from colocate.checker import kubeconform, manifests
from colocate.checker.cached import check_cached
from colocate.checker.context import checked_context, cluster_pools, described_rules, found_inputs, load_config, make_context
from colocate.checker.evaluate import SUPPRESSION_RULE_ID, evaluate
from colocate.checker.findings import (
    finding_order, kubeconform_findings, skipped_findings, suppress, unusable_findings, with_field_lines,
    suppressions,
)
from colocate.checker.model import (
    INPUT_RULE, INPUT_RULE_ID, SCHEMA_RULE, SCHEMA_RULE_ID, CheckResult, Context, Finding, Index, Rule, Timings,
    Violation,
)
from colocate.checker.reads import SKELETON, WHOLE, WORKLOAD_KINDS, Reads, reads, rule_reads, seen_as, skeleton, viewed_index
from colocate.checker.rule_loader import LOCAL_CHECKS, config_module, judges_alone, load_rules
from colocate.errors import InputError
from colocate.checker.manifests import Doc
from colocate.rules.files import RULES_DIR
from colocate.model import pool_facts
from colocate.model.cluster import reference

if TYPE_CHECKING:  # annotations only: config is imported when first needed (rule_loader.config_module)
    from colocate import config as config_mod

__all__ = [
    "INPUT_RULE", "INPUT_RULE_ID", "LOCAL_CHECKS", "RULES_DIR", "SCHEMA_RULE", "SCHEMA_RULE_ID", "SKELETON",
    "SUPPRESSION_RULE_ID", "WHOLE", "WORKLOAD_KINDS", "CheckResult", "Context", "Finding", "Index", "Reads", "Rule",
    "Timings", "Violation", "check", "cluster_pools", "described_rules", "evaluate", "judge_rendered", "judges_alone",
    "load_rules", "reads", "rule_reads", "seen_as", "skeleton", "suppressions", "viewed_index",
]


def check(paths: list[Path], config_path: Path | None = None, cluster: Path | None = None,
          timings: Timings | None = None, exclude: Iterable[str] = (), cache: Path | None = None) -> CheckResult:
    """Validate manifests. Raises ColocateError for unusable input (exit 2). ``timings``, when
    given, receives the seconds of each phase and rule (``check --timings``). ``cache``: the
    folder of the verdict cache (docs/check-cache.md); None checks everything afresh."""
    clock = [time.perf_counter()]

    def phase(name: str) -> None:
        now = time.perf_counter()
        if timings is not None:
            timings.append((name, now - clock[0]))
        clock[0] = now

    if cache is not None:
        from colocate.checker import verdict_cache

        store = verdict_cache.Store(cache)
        try:
            return check_cached(paths, config_path, cluster, timings, tuple(exclude), store, phase, clock)
        finally:
            store.flush()  # the entries of a run that stopped are written too: each holds on its own
            gc.unfreeze()
    # kubeconform takes most of the wall time, so it starts as soon as it can: with the
    # configuration's Kubernetes version, before the rest of the configuration is validated
    # (importing the validator alone takes a tenth of a second). A configuration that turns out
    # bad stops it, and is said first, as when it is validated before anything else.
    version = config_module().kubernetes_version(config_path)
    config = None if version else load_config(config_path)
    inputs = found_inputs(paths, exclude, config_path)
    # kubeconform gets the same files, so a file named twice, or a Helm chart in a folder, is not
    # validated there either.
    validation = None
    # Parse and run the rules while kubeconform works.
    try:
        # Started inside the try: a Ctrl-C from the moment it runs stops it too.
        validation = kubeconform.start(list(inputs.files), version or config.kubernetes_version)
        config = config or load_config(config_path)
        phase("start kubeconform, read the configuration")
        tally: list[int] = []
        # A file found in a folder that is not manifests (a CI workflow, a Helm template) is
        # reported on its own and the rest checked, as kubeconform does; one named is bad input.
        named = {str(p) for p in paths if not p.is_dir()}
        unusable: list[tuple[Path, InputError]] = []
        docs = _parse(inputs.files, tally, unusable, named)
        if not docs:
            said = "".join(f"; {exc}" for _, exc in unusable[:3])
            raise InputError(", ".join(map(str, paths)), "", f"no Kubernetes objects found{said}")
        if unusable:  # kubeconform again, without them: its verdict must cover the objects parsed
            validation.kill()
            validation.wait()
            left_out = {str(p) for p, _ in unusable}
            validation = kubeconform.start([f for f in inputs.files if str(f) not in left_out],
                                           config.kubernetes_version)
        phase("parse YAML")
        rules = load_rules()
        ctx = checked_context(config, docs, cluster, rules)
        index = Index(docs, ctx)
        phase("load rules and context")
        rule_findings = evaluate(rules, index, timings)
        clock[0] = time.perf_counter()
        # The lines of the rules' fields while kubeconform still runs (files composed again):
        # after it, only its own findings' files are.
        known: dict[tuple[str, int, str], int] = {}
        with_field_lines(rule_findings, known)
        phase("field lines of the rules' findings")
        schema_result = kubeconform.wait(validation)
        kubeconform.unjudged(schema_result, sum(tally))
        phase("wait for kubeconform")
    finally:
        if validation is not None and validation.poll() is None:
            validation.kill()
            validation.wait()
    findings, suppressed = suppress(kubeconform_findings(schema_result, docs, config.kubernetes_version) + rule_findings
                                     + skipped_findings(inputs.skipped) + unusable_findings(unusable), docs, rules)
    findings = with_field_lines(findings, known)
    suppressed = sorted(zip(with_field_lines([f for f, _ in suppressed], known), (reason for _, reason in suppressed)),
                        key=lambda s: (finding_order(s[0]), s[1]))
    findings.sort(key=finding_order)
    phase("field lines, suppressions, sort")
    gc.unfreeze()
    return CheckResult(findings, schema_result, len(docs), [r.filled(ctx.values) for r in rules], suppressed)


def judge_rendered(texts: dict[Path, str], config: config_mod.Config) -> list[Finding]:
    """The policy rules' errors on a tree synth is about to write (files not on disk yet), with
    the pools it describes: synth refuses what its own check would refuse. kubeconform is not
    run here: the constructs emit schema-shaped objects, and ``check`` validates them after."""
    docs = manifests.load_texts({p: t for p, t in texts.items() if p.suffix == ".yaml"})
    ctx = make_context(reference(config), docs, config.gitops.min_argocd_version, config.registry_host,
                       config.registry_proxy_projects, config.shared_storage_class)
    ctx.pools, ctx.pools_source = pool_facts.from_documents([(d.file, d.obj) for d in docs
                                                              if d.kind == pool_facts.KIND]), "the synthesized tree"
    rules = load_rules()
    ctx.rules = tuple(rules)
    findings, _ = suppress(evaluate(rules, Index(docs, ctx)), docs, rules)
    return sorted((f for f in findings if f.severity == "error"), key=lambda f: (f.file, f.line, f.rule))


def _parse(files: Iterable[Path], tally: list[int] | None = None,
           unusable: list[tuple[Path, InputError]] | None = None, named: set[str] = frozenset()) -> list[Doc]:
    """The objects of the files, frozen out of the cyclic collector's scans: they are millions
    of containers that live until the check ends, without cycles, and every full collection
    during the rules would rescan them all. :func:`check` unfreezes them when done (after an
    exception, the next check does)."""
    with manifests.collector_paused():
        if unusable is None:
            docs = manifests.load_files(files, tally)
        else:
            docs = manifests.load_files(files, tally, unusable)
        # Frozen before the collector is back: its first collection would otherwise scan every
        # object just made (0.3 s for 10,000 objects).
        gc.freeze()
    for path, exc in unusable or ():
        if str(path) in named:
            raise exc
    return docs
