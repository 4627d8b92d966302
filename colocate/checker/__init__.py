"""`colocate check`: kubeconform plus the policy rules, over one index of every object.

Rules live in ``policies/rules/<id>.yaml``: metadata, message and fix, and either a JSON
Schema (single-object rules, Polaris style) or a Python check ``<module>.<function>`` in
``policies/checks/<module>.py`` (rules that read more than one field or join objects).

The package, by concern: ``model`` (rules, findings, context, index, result), ``rule_loader``
(loading them), ``reads`` (what each cross-object rule reads), ``evaluate`` (running rules),
``findings`` (kubeconform's findings, field lines, suppressions, order), ``context`` (what objects
are judged in), ``pipeline`` (the check's stages, written once, each asking a store first),
``reuse`` (the store backed by the verdict cache) and ``cached`` (the cache's entries). This
module is the package's face: the public names the checks and the commands use.
"""
from __future__ import annotations

import gc
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from colocate.checker import manifests, pipeline
from colocate.checker.context import cluster_pools, described_rules, make_context
from colocate.checker.evaluate import SUPPRESSION_RULE_ID, evaluate
from colocate.checker.findings import suppress, suppressions
from colocate.checker.model import (
    INPUT_RULE, INPUT_RULE_ID, SCHEMA_RULE, SCHEMA_RULE_ID, CheckResult, Context, Finding, Index, Rule, Timings,
    Violation,
)
from colocate.checker.reads import SKELETON, WHOLE, WORKLOAD_KINDS, Reads, reads, rule_reads, seen_as, skeleton, viewed_index
from colocate.checker.rule_loader import judges_alone, load_rules
from colocate.model import pool_facts
from colocate.rules.files import RULES_DIR

if TYPE_CHECKING:  # annotations only: config is imported when first needed (rule_loader.config_module)
    from colocate import config as config_mod

__all__ = [
    "INPUT_RULE", "INPUT_RULE_ID", "RULES_DIR", "SCHEMA_RULE", "SCHEMA_RULE_ID", "SKELETON",
    "SUPPRESSION_RULE_ID", "WHOLE", "WORKLOAD_KINDS", "CheckResult", "Context", "Finding", "Index", "Reads", "Rule",
    "Timings", "Violation", "check", "cluster_pools", "described_rules", "evaluate", "judge_rendered", "judges_alone",
    "load_rules", "reads", "rule_reads", "seen_as", "skeleton", "suppressions", "viewed_index",
]


def check(paths: list[Path], config_path: Path | None = None, cluster: Path | None = None,
          timings: Timings | None = None, exclude: Iterable[str] = (), cache: Path | None = None) -> CheckResult:
    """Validate manifests. Raises ColocateError for unusable input (exit 2). ``timings``, when
    given, receives the seconds of each phase and rule (``check --timings``). ``cache``: the
    folder of the verdict cache (docs/check-cache.md); None checks everything afresh."""
    if cache is None:
        store = pipeline.Store()
    else:
        from colocate.checker.reuse import CacheStore

        store = CacheStore(cache)
    try:
        return pipeline.run(paths, config_path, cluster, timings, tuple(exclude), store)
    finally:
        store.flush()  # the entries of a run that stopped are written too: each holds on its own
        gc.unfreeze()  # the objects the stages froze out of the collector's scans


def judge_rendered(texts: dict[Path, str], config: config_mod.Config) -> list[Finding]:
    """The policy rules' errors on a tree synth is about to write (files not on disk yet), with
    the pools it describes: synth refuses what its own check would refuse. kubeconform is not
    run here: the constructs emit schema-shaped objects, and ``check`` validates them after."""
    docs = manifests.load_texts({p: t for p, t in texts.items() if p.suffix == ".yaml"})
    ctx = make_context(config.cluster, docs, config.gitops.min_argocd_version, config.registry_host,
                       config.registry_proxy_projects, config.shared_storage_class)
    ctx.pools, ctx.pools_source = pool_facts.from_documents([(d.file, d.obj) for d in docs
                                                              if d.kind == pool_facts.KIND]), "the synthesized tree"
    rules = load_rules()
    ctx.rules = tuple(rules)
    findings, _ = suppress(evaluate(rules, Index(docs, ctx)), docs, rules)
    return sorted((f for f in findings if f.severity == "error"), key=lambda f: (f.file, f.line, f.rule))
