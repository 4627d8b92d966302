"""A node pool's fields have one home, colocate/model/pools.py POOL_FIELDS: colocate.yaml's `cluster:`
schema is filled from it; the model, the loader, describe() and the NodePool schema must each agree with it
(CONTRIBUTING.md "Recipe: add a pool field")."""
from __future__ import annotations

import json
import re
from dataclasses import MISSING, fields

import jsonschema
import pytest

from colocate import ROOT, config
from colocate.model import cluster_yaml, pool_facts
from colocate.model.pools import POOL_FIELDS, KubeletReservations, NodePoolProps

NODEPOOL_SCHEMA = json.loads((ROOT / "policies/schemas/colocate.io/nodepool_v1alpha1.json").read_text())
EXAMPLE = {}
for _f in POOL_FIELDS:
    _at = EXAMPLE
    *_parents, _last = _f.key.split(".")
    for _part in _parents:
        _at = _at.setdefault(_part, {})
    _at[_last] = _f.example


def test_every_field_of_the_model_is_listed_once():
    model = {f.name for f in fields(NodePoolProps) if f.name != "kubelet"} | {
        f"kubelet.{f.name}" for f in fields(KubeletReservations)}
    listed = [f.attr for f in POOL_FIELDS]
    assert sorted(listed) == sorted(model), "NodePoolProps/KubeletReservations and POOL_FIELDS differ"
    assert len({f.key for f in POOL_FIELDS}) == len(POOL_FIELDS)


def test_the_cluster_schema_takes_a_pool_of_the_examples():
    schema = {"$defs": config._SCHEMA["$defs"], "$ref": "#/$defs/pool"}
    jsonschema.Draft202012Validator(schema).validate(EXAMPLE)


@pytest.mark.parametrize("f", POOL_FIELDS, ids=lambda f: f.key)
def test_cluster_yaml_reads_each_field(f):
    props = cluster_yaml._pool(EXAMPLE)
    assert f.of(props) == f.read(f.example) != f.default(), f"cluster_yaml does not read {f.key}"


@pytest.mark.parametrize("f", [f for f in POOL_FIELDS if f.default() is not MISSING], ids=lambda f: f.key)
def test_a_pool_without_the_field_keeps_the_models_default(f):
    entry = json.loads(json.dumps(EXAMPLE))
    *parents, last = f.key.split(".")
    at = entry
    for part in parents:
        at = at[part]
    del at[last]
    assert f.of(cluster_yaml._pool(entry)) == f.default()


def test_describe_writes_the_described_keys_and_the_nodepool_schema_has_them():
    described = {key for f in POOL_FIELDS for key in f.described}
    assert set(pool_facts.DERIVED) <= described, "a derived key no field feeds"
    spec = pool_facts.describe(cluster_yaml._pool(EXAMPLE))["spec"]
    assert set(spec) == described
    assert set(NODEPOOL_SCHEMA["properties"]["spec"]["properties"]) == described, \
        "policies/schemas/colocate.io/nodepool_v1alpha1.json and POOL_FIELDS' described keys differ"
    for f in POOL_FIELDS:
        for key in set(f.described) - set(pool_facts.DERIVED):
            assert spec[key] == f.read(f.example), key
            prop = NODEPOOL_SCHEMA["properties"]["spec"]["properties"][key]
            assert prop.get("enum") == list(f.type) if isinstance(f.type, tuple) else prop.get("type") == f.type, key


def test_the_nodepool_schema_takes_the_description_of_a_pool_of_the_examples():
    jsonschema.Draft4Validator(NODEPOOL_SCHEMA).validate(pool_facts.describe(cluster_yaml._pool(EXAMPLE)))


def test_docs_configuration_names_every_field():
    rows = "\n".join(line for line in (ROOT / "docs/configuration.md").read_text().splitlines()
                     if line.startswith("| `pools[]"))
    missing = [f.key for f in POOL_FIELDS
               if not re.search(rf"[`.]{re.escape(f.key.rpartition('.')[2])}(\[\])?`", rows)]
    assert not missing, f"docs/configuration.md's pools[] rows do not name {missing}"
