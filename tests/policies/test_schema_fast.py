"""The schema rules' quick verdict agrees with jsonschema: an object it passes has no error, one it
fails has one (the rules' fixtures and examples, dist/'s objects, and seeded mutations of them)."""
from __future__ import annotations

import math
import random
from pathlib import Path

import jsonschema
import pytest

from colocate.checker import load_rules, manifests, schema_fast
from colocate.checker.context import load_config, make_context
from colocate.checker.manifests.pod_templates import pod_specs
from colocate.rules.files import fill
from tests.policies.rule_cases import FIXTURES, examples_tree

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_RULES = [r for r in load_rules() if r.schema is not None]
LEAVES = [None, True, False, 0, 1, 1.0, 2, 2.5, -1, "", "a", "Always", "Chief", "chief", "Master", [], {}, [1],
          {"a": 1}, math.nan, "x" * 300]


def _mutated(value, rng: random.Random):
    """``value`` with leaves swapped for other JSON types, keys dropped and added."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            roll = rng.random()
            if roll < 0.05:
                out[key] = rng.choice(LEAVES)
            elif roll >= 0.08:
                out[key] = _mutated(item, rng)
            if roll < 0.02:
                out[key + "X"] = rng.choice(LEAVES)
        if rng.random() < 0.05:
            out[rng.choice(["Chief", "Master", "master", "Worker", "restartPolicy", "replicas"])] = rng.choice(LEAVES)
        return out
    if isinstance(value, list):
        return [_mutated(item, rng) for item in value if rng.random() > 0.05]
    return rng.choice(LEAVES) if rng.random() < 0.3 else value


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    examples = examples_tree(load_rules(), tmp_path_factory.mktemp("rule-examples"))
    found = manifests.find([FIXTURES, examples, ROOT / "dist" / "apps"])
    return manifests.load_files(found.files, unusable=[])


@pytest.mark.parametrize("rule", SCHEMA_RULES, ids=lambda r: r.id)
def test_quick_verdict_agrees_with_jsonschema(rule, docs):
    config = load_config(None)
    schema = fill(rule.schema, make_context(config.cluster, []).values)
    quick, validator = schema_fast.compiled(schema), jsonschema.Draft202012Validator(schema)
    if rule.target == "PodSpec":
        values = [p.spec for d in docs for p in pod_specs(d)]
    else:
        values = [d.obj for d in docs if not rule.kinds or d.kind in rule.kinds]
    rng = random.Random(rule.id)
    values += [_mutated(v, rng) for v in values[:200] for _ in range(5)]
    assert values
    for value in values:
        verdict = quick(value)
        if verdict is not None:
            assert verdict == (not list(validator.iter_errors(value))), (rule.id, value)


@pytest.mark.parametrize("schema, instance, valid", [
    ({"const": 1}, True, False), ({"const": True}, 1, False), ({"enum": [0]}, False, False),
    ({"type": "integer"}, 1.0, True), ({"type": "integer"}, True, False), ({"maximum": 1}, True, True),
    ({"properties": {"a": False}}, {"a": 1}, False), ({"additionalProperties": False, "properties": {"a": {}}}, {"b": 1}, False),
    ({"patternProperties": {"^C": {"maximum": 1}}}, {"Chief": 2}, False), ({"contains": {"const": 1}}, [], False),
    ({"not": {"propertyNames": {"pattern": "^a"}}}, {"b": 1}, True), ({"items": False}, [], True),
])
def test_keywords_as_jsonschema_reads_them(schema, instance, valid):
    assert (not list(jsonschema.Draft202012Validator(schema).iter_errors(instance))) == valid
    assert schema_fast.compiled(schema)(instance) is valid


def test_unknown_keywords_and_bad_schemas_are_left_to_jsonschema():
    for schema in ({"$ref": "#/x"}, {"if": {}}, {"type": "strin"}, {"properties": []}, {"contains": {}, "minContains": 2}):
        assert schema_fast.compiled(schema)({"a": [1]}) is None
    assert not schema_fast.holds(schema_fast.compiled({"pattern": "("}), "x")
