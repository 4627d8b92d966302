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


def judges_alone(rule: Rule) -> bool:
    """The rule's findings on an object depend on that object and the context only (its file's
    ``judges: object``): the verdict cache keeps them per file, and every other object may change
    without running it again. Any other rule is run over what its file says it reads."""
    return rule.schema is not None or rule.judges == "object"
