"""Shipped data read once per installation (colocate/base/compiled.py): the kept form gives what a
parse gives, and a stale, corrupt or unkeepable one is never used."""
from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import pytest

from colocate.base import compiled, goyaml
from colocate.rules import files as rule_files
from colocate.errors import InputError

# The module, not the function colocate.promql re-exports under the same name.
catalog_mod = importlib.import_module("colocate.promql.catalog")


@pytest.fixture
def kept(own_cache) -> Path:
    return own_cache / "compiled"


def _counting(value):
    calls = []

    def parse():
        calls.append(1)
        return value
    return parse, calls


def test_a_kept_form_is_read_instead_of_parsing_again(tmp_path, kept):
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    parse, calls = _counting({"a": 1})
    assert compiled.load("data", [source], [], parse, lambda v: isinstance(v, dict)) == {"a": 1}
    assert compiled.load("data", [source], [], parse, lambda v: isinstance(v, dict)) == {"a": 1}
    assert len(calls) == 1 and len(list(kept.glob("data-*.json"))) == 1


def test_an_edited_source_or_reader_is_parsed_again_and_the_old_form_removed(tmp_path, kept):
    source, reader = tmp_path / "data.yaml", tmp_path / "reader.py"
    source.write_text("a: 1\n")
    reader.write_text("# v1\n")
    parse, calls = _counting({"a": 1})
    compiled.load("data", [source], [reader], parse, bool)
    first = list(kept.glob("data-*.json"))
    source.write_text("a: 2\n")
    compiled.load("data", [source], [reader], parse, bool)
    reader.write_text("# v2\n")
    compiled.load("data", [source], [reader], parse, bool)
    assert len(calls) == 3
    now = list(kept.glob("data-*.json"))
    assert len(now) == 1 and now != first


@pytest.mark.parametrize("damage", [lambda b: b[:-3], lambda b: b.replace(b'"a":1', b'"a":7'), lambda b: b"junk",
                                    lambda b: b""])
def test_a_corrupt_form_is_never_trusted(tmp_path, kept, damage):
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    parse, calls = _counting({"a": 1})
    compiled.load("data", [source], [], parse, bool)
    entry = next(kept.glob("data-*.json"))
    entry.write_bytes(damage(entry.read_bytes()))
    assert compiled.load("data", [source], [], parse, bool) == {"a": 1}
    assert len(calls) == 2
    assert compiled.load("data", [source], [], parse, bool) == {"a": 1} and len(calls) == 2  # rewritten


def test_a_form_its_reader_does_not_accept_is_parsed_again(tmp_path, kept):
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    parse, calls = _counting({"a": 1})
    compiled.load("data", [source], [], parse, bool)
    assert compiled.load("data", [source], [], parse, lambda v: "b" in v) == {"a": 1} and len(calls) == 2


def test_a_value_json_would_change_is_not_kept(tmp_path, kept):
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    parse, calls = _counting({1: ("x",)})
    assert compiled.load("data", [source], [], parse, bool) == {1: ("x",)}
    assert compiled.load("data", [source], [], parse, bool) == {1: ("x",)}
    assert len(calls) == 2 and not list(kept.glob("data-*.json"))


def test_an_unwritable_folder_costs_only_the_parse(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setattr(compiled, "folder", lambda: blocker / "compiled")
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    parse, calls = _counting({"a": 1})
    assert compiled.load("data", [source], [], parse, bool) == {"a": 1}
    assert compiled.load("data", [source], [], parse, bool) == {"a": 1} and len(calls) == 2


def test_the_rules_read_from_their_kept_form_are_the_rules_parsed(kept):
    first = rule_files.read_rules()
    assert list(kept.glob("rules-*.json"))
    again = rule_files.read_rules()
    parsed = tuple(rule_files.Rule(**{**row, "kinds": tuple(row["kinds"])})
                   for row in rule_files._parse_rules(sorted(rule_files.RULES_DIR.glob("*.yaml"))))
    assert first == again == parsed


def test_a_malformed_rule_file_is_bad_input_after_a_good_form_was_kept(tmp_path, kept):
    rules = tmp_path / "rules"
    shutil.copytree(rule_files.RULES_DIR, rules)
    rule_files.read_rules(rules)
    victim = sorted(rules.glob("*.yaml"))[0]
    victim.write_text(victim.read_text().replace("severity:", "severity: [", 1))
    with pytest.raises(InputError) as raised:
        rule_files.read_rules(rules)
    assert victim.name in str(raised.value)


def test_the_catalog_read_from_its_kept_form_is_the_catalog_parsed(kept):
    catalog_mod.catalog_document.cache_clear()
    try:
        first = catalog_mod.catalog_document()
        catalog_mod.catalog_document.cache_clear()
        again = catalog_mod.catalog_document()
    finally:
        catalog_mod.catalog_document.cache_clear()
    assert list(kept.glob("catalog-*.json"))
    assert first == again == goyaml.load_plain(catalog_mod.CATALOG_PATH.read_text(), "catalog")
