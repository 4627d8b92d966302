"""The engine hands a check only the objects its rule file names, and refuses a check that asks
for a kind its file does not name (bad input naming the rule file and the kind), rather than let
it judge nothing: a fixture rule runs COL001's check with a file that names Namespace only."""
from __future__ import annotations

from pathlib import Path

import pytest

from colocate import checker, config
from colocate.checker import manifests
from colocate.checker.context import checked_context
from colocate.checker.model import UndeclaredKind
from colocate.errors import InputError

FIXTURE = Path(__file__).parent.parent / "fixtures" / "undeclared-read"


def _judge(rules):
    docs = manifests.load([FIXTURE / "classes.yaml"])
    return checker.evaluate(rules, checker.Index(docs, checked_context(config.load(), docs, None, rules)))


def test_a_check_that_reads_a_kind_its_file_does_not_name_is_refused():
    rules = checker.load_rules(FIXTURE / "rules")
    with pytest.raises(InputError) as raised:
        _judge(rules)
    said = str(raised.value)
    assert "COL999-gap-without-its-kind.yaml" in said and "$.kinds" in said
    assert "reads PriorityClass objects" in said and "add PriorityClass to kinds" in said


def test_the_same_check_with_its_kind_named_judges():
    col001 = tuple(r for r in checker.load_rules() if r.id == "COL001")
    assert [(f.rule, f.name) for f in _judge(col001)] == [("COL001", "close-below")]


def test_a_check_is_handed_only_the_kinds_its_file_names():
    """COL506 (kinds: [Secret]) sees no ConfigMap: its index holds the Secret alone."""
    rule = next(r for r in checker.load_rules() if r.id == "COL506")
    declared = checker.rule_reads(rule)
    docs = manifests.load([FIXTURE / "classes.yaml"])
    ctx = checked_context(config.load(), docs, None, (rule,))
    assert checker.viewed_index(declared, docs, ctx).docs == []
    with pytest.raises(UndeclaredKind):
        checker.viewed_index(declared, docs, ctx).of_kind("PriorityClass")
