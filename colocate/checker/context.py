"""The context the checked objects are judged in: the configuration, namespace tiers and node pools."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from colocate.checker import manifests
from colocate.model.cluster import Cluster
from colocate.model.names import TIER_LABEL
from colocate.errors import InputError
from colocate.base.data_files import repository
from colocate.model import pool_facts
from colocate.model.pool_facts import PoolFacts
from colocate.checker.manifests import Doc
from colocate.checker.model import Context, Rule
from colocate.checker.rule_loader import config_module, load_rules

#: The kinds the context is made of (namespace tiers, node pools): all a context needs of the objects.
CONTEXT_KINDS = frozenset({"Namespace", pool_facts.KIND})

if TYPE_CHECKING:  # annotations only: config is imported when first needed (config_module)
    from colocate import config as config_mod


def make_context(cluster: Cluster, docs: list[Doc], min_argocd_version: tuple[int, int] = (0, 0),
             registry_host: str = "", proxied_registries: Iterable[str] = (), shared_storage_class: str = "") -> Context:
    online = {cluster.online_namespace}
    offline = {cluster.training_namespace}
    for doc in docs:
        # The configuration fixes its own namespaces' tiers: a label that says otherwise is
        # COL015's finding, and switches no rule off.
        if doc.kind == "Namespace" and doc.name not in (cluster.online_namespace, cluster.training_namespace):
            tier = doc.labels.get(TIER_LABEL)
            if isinstance(tier, str):  # a list there is the API server's to refuse (kubeconform says so)
                {"online": online, "offline": offline}.get(tier, set()).add(doc.name)
    return Context(cluster, online, offline, min_argocd_version, registry_host, frozenset(proxied_registries),
                   shared_storage_class=shared_storage_class)


def described_pools(where: Path) -> list[tuple[str, Any]]:
    """(file, object) of every NodePool description under ``where``."""
    return [(d.file, d.obj) for d in manifests.load([where]) if d.kind == pool_facts.KIND]


def cluster_pools(docs: list[Doc], cluster: Path | None,
                  described_at: Callable[[Path], list[tuple[str, Any]]] = described_pools
                  ) -> tuple[tuple[PoolFacts, ...], str]:
    """The node pools the capacity rules judge against: those under ``cluster`` when given (an
    explicit --cluster wins, and must exist), else the NodePool descriptions among the checked
    objects, else those in the repository's dist/nodes/."""
    if cluster is not None and not cluster.exists():
        raise InputError(str(cluster), "", "no such file or folder (--cluster names the NodePool descriptions "
                         "the capacity rules judge against)")
    described = [] if cluster is not None else [(d.file, d.obj) for d in docs if d.kind == pool_facts.KIND]
    source = "the checked files"
    if not described:
        where = cluster or repository() / "dist" / "nodes"
        if cluster is None and not where.is_dir():
            return (), ""
        described = described_at(where)
        if not described:
            raise InputError(str(where), "", "no NodePool description found; synth writes them to "
                             "dist/nodes/<pool>/nodepool.<pool>.yaml")
        source = str(where)
    return pool_facts.from_documents(described), source


def checked_context(config: config_mod.Config, docs: list[Doc], cluster: Path | None,
                     rules: tuple[Rule, ...],
                     described_at: Callable[[Path], list[tuple[str, Any]]] = described_pools) -> Context:
    """The context ``check`` judges the checked objects in, with or without the cache."""
    ctx = make_context(config.cluster, docs, config.gitops.min_argocd_version, config.registry_host,
                   config.registry_proxy_projects, config.shared_storage_class)
    ctx.pools, ctx.pools_source = cluster_pools(docs, cluster, described_at)
    ctx.rules = tuple(rules)
    return ctx


def described_rules(config_path: Path | None = None) -> tuple[Rule, ...]:
    """Every rule with its placeholders filled from the configuration, for ``colocate rules``
    and ``--explain`` (no objects: the namespace tiers are the configuration's). Outside a
    repository, with no --config, the rules as written (``${name}`` placeholders)."""
    config_mod = config_module()
    if config_path is None and not config_mod.default_path().is_file():
        return load_rules()
    config = config_mod.load(config_path) if config_path else config_mod.load()
    ctx = make_context(config.cluster, [], config.gitops.min_argocd_version, config.registry_host,
                   config.registry_proxy_projects)
    return tuple(rule.filled(ctx.values) for rule in load_rules())


# --- the verdict cache (docs/check-cache.md) ----------------------------------------------------

def load_config(config_path: Path | None) -> config_mod.Config:
    config_mod = config_module()
    return config_mod.load(config_path) if config_path else config_mod.load()


def found_inputs(paths: list[Path], exclude: Iterable[str], config_path: Path | None) -> manifests.Inputs:
    """The files to check, before any tool starts. Input that is bad, or holds no object, is
    said after a bad configuration, as it would be if the configuration were read first."""
    try:
        inputs = manifests.find(paths, exclude)
    except InputError:
        load_config(config_path)
        raise
    if not inputs.files:
        load_config(config_path)
        hint = "".join(f"; {s.path}: {s.reason} ({s.hint})" for s in inputs.skipped)
        raise InputError(", ".join(map(str, paths)), "", f"no Kubernetes objects found{hint}")
    return inputs
