"""A rule file's ``examples`` (its own fail and pass cases): read as manifest texts, and a malformed
one is bad input naming the file and the example (exit 2 from check and rules)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from colocate.base import safe_yaml
from colocate.errors import InputError
from colocate.rules import files as rule_files
from tests.helpers import colocate

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: online}\n"


def _rules_with(tmp_path: Path, examples: str) -> Path:
    rules = tmp_path / "rules"
    shutil.copytree(rule_files.RULES_DIR, rules)
    victim = next(rules.glob("COL004-*.yaml"))
    victim.write_text(victim.read_text() + examples)
    return victim


def test_examples_are_read_as_manifest_texts(tmp_path):
    victim = _rules_with(tmp_path, "examples:\n  fail:\n  - |\n" + "".join(f"    {line}\n" for line in CONFIG_MAP.splitlines())
                         + "  pass:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n")
    [rule] = [r for r in rule_files.read_rules(victim.parent) if r.id == "COL004"]
    examples = rule_files.rule_examples(rule)
    assert examples["fail"] == [CONFIG_MAP]
    assert list(safe_yaml.load_all(examples["pass"][0])) == [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}]


def test_a_rule_without_examples_has_none():
    rule = next(r for r in rule_files.read_rules() if r.id == "COL004")
    assert rule_files.rule_examples(rule) == {}


@pytest.mark.parametrize(("examples", "where"), [
    ("examples: {fail: [3]}", "$.examples.fail[0]"),
    ("examples: {fail: []}", "$.examples.fail"),
    ("examples: {fial: [x]}", "$.examples"),
    ("examples: {pass: [{kind: Pod}]}", "$.examples.pass[0]"),
    ("examples: {fail: ['a: [b']}", "$.examples.fail[0]"),
    ("examples: {fail: [just text]}", "$.examples.fail[0]"),
])
def test_a_malformed_example_is_bad_input_naming_it(tmp_path, examples, where):
    victim = _rules_with(tmp_path, examples + "\n")
    with pytest.raises(InputError) as raised:
        rule_files.read_rules(victim.parent)
    assert raised.value.file == str(victim) and raised.value.where == where, raised.value


def test_explain_lists_a_rule_files_examples():
    said = colocate("check", "--explain", "COL600").stdout
    assert "Examples: policies/rules/COL600-static-cpu-reserved.yaml examples.fail[0], examples.pass[0]" in said
