"""A rule's locality lives in its file (``judges: object`` or ``judges: tree``): the engine reads
it there, and a check rule that does not say it is bad input naming the file and the key."""
from __future__ import annotations

import shutil

import pytest

from colocate import checker
from colocate.errors import InputError
from colocate.rules import files as rule_files


def _copy(tmp_path):
    rules = tmp_path / "rules"
    shutil.copytree(rule_files.RULES_DIR, rules)
    return rules


def test_a_check_rule_without_judges_is_bad_input(tmp_path):
    rules = _copy(tmp_path)
    victim = next(rules.glob("COL001-*.yaml"))
    victim.write_text("".join(line for line in victim.read_text().splitlines(keepends=True)
                              if not line.startswith("judges:")))
    with pytest.raises(InputError) as raised:
        rule_files.read_rules(rules)
    assert victim.name in str(raised.value) and "'judges' is a required property" in str(raised.value)


def test_a_schema_rule_cannot_say_it_reads_the_tree(tmp_path):
    rules = _copy(tmp_path)
    victim = next(rules.glob("COL100-*.yaml"))
    victim.write_text(victim.read_text().replace("\ntarget:", "\njudges: tree\ntarget:", 1))
    with pytest.raises(InputError) as raised:
        rule_files.read_rules(rules)
    assert victim.name in str(raised.value) and "$.judges" in str(raised.value)


def test_the_engine_reads_locality_from_the_rule_file(tmp_path):
    rules = _copy(tmp_path)
    victim = next(rules.glob("COL500-*.yaml"))  # security.privileged_container, judged per object
    loaded = {r.id: r for r in rule_files.read_rules(rules)}
    assert checker.judges_alone(loaded["COL500"])
    victim.write_text(victim.read_text().replace("judges: object", "judges: tree"))
    loaded = {r.id: r for r in rule_files.read_rules(rules)}
    assert not checker.judges_alone(loaded["COL500"])
    assert checker.judges_alone(loaded["COL100"])  # a schema rule judges each object alone
