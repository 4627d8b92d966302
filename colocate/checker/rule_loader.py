"""Loading the rules of ``policies/rules/`` and finding their Python checks."""
from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path
from typing import Callable
from colocate.errors import InputError

from colocate.rules.files import RULES_DIR, Rule, read_rules


@lru_cache(maxsize=None)
def config_module():
    """colocate.config, imported when first needed: a check answered from its cache needs none of
    it (its YAML loader, time zones and addresses: a tenth of that answer's start-up)."""
    from colocate import config

    return config


def load_rules(rules_dir: Path = RULES_DIR) -> tuple[Rule, ...]:
    """Every rule, ordered by id, each Python check found. A malformed rule file stops the check (exit 2)."""
    rules = read_rules(rules_dir)
    for rule in rules:
        if rule.check is not None:
            check_function(rule.check, str(next(rules_dir.glob(f"{rule.id}*.yaml"))))
    return rules


def check_function(name: str, where: str = "") -> Callable:
    """``platform.priority_gap`` -> policies/checks/platform.py's priority_gap."""
    module_name, _, function = name.partition(".")
    try:
        module = importlib.import_module(f"colocate.policies.checks.{module_name}")
    except ModuleNotFoundError:
        module = None
    check = getattr(module, function, None)
    if not callable(check):
        raise InputError(where, "$.check", f"policies/checks/{module_name}.py has no function {function!r}")
    return check


#: Python checks that judge each object on its own, given the context (namespace tiers, node
#: pools, settings): their findings on a file depend on that file alone, so the verdict cache
#: keeps them per file. Every other check reads other objects too (quotas, PriorityClasses,
#: PromQL recording rules, Applications...) and is run over all objects whenever any file
#: changed. A check missing here is only slower with the cache, never wrong.
LOCAL_CHECKS = frozenset({
    "platform.online_guaranteed", "platform.online_integer_cpu", "platform.namespaced_without_namespace",
    "platform.image_from_mirror", "platform.image_reference", "hygiene.suppression_reason",
    "capacity.pod_fits_a_pool", "training.gpu_in_limits", "training.tfjob_offline_namespace",
    "training.tfjob_checkpoint_volume", "training.tfjob_memory_burst", "training.tfjob_grace_period",
    "gitops.deletion_protection", "gitops.argocd_field_version", "gitops.too_big_for_etcd",
    "api.request_above_limit", "api.selector_matches_template", "api.annotations_size", "api.data_size",
    "api.duplicate_names", "security.privileged_container", "security.host_namespaces",
    "security.host_path_volume", "security.added_capabilities", "security.image_pinned",
    "security.secret_in_manifests", "security.rbac_wildcards", "nodes.static_cpu_reserved",
    "nodes.kubelet_node_labels", "nodes.eviction_defaults", "api.object_names", "api.cronjob_schedule",
    "api.replica_range", "training.tfjob_service_names", "training.ungoverned_training_kind",
    "gpus.gpu_less_containers_hide_gpus", "platform.online_priority_reserved",
})


def judges_alone(rule: Rule) -> bool:
    """The rule's findings on an object depend on that object and the context only."""
    return rule.schema is not None or rule.check in LOCAL_CHECKS
