"""The NodePool descriptions synth writes are what `colocate check` judges capacity against."""
from __future__ import annotations

import yaml

from colocate import ROOT, config as config_mod
from colocate.model import pool_facts
from tests.helpers import colocate, yaml_load

DIST = ROOT / "dist"
FAIL_40_CPUS = ROOT / "tests/policies/fixtures/COL050/fail.tfjob-40-cpus.yaml"


def test_the_descriptions_in_dist_read_back_as_the_models_pools():
    docs = [(str(p), yaml_load(p.read_text())) for p in sorted(DIST.glob("nodes/*/nodepool.*.yaml"))]
    facts = {f.name: f for f in pool_facts.from_documents(docs)}
    for pool in config_mod.load().cluster.pools:
        got = facts[pool.name]
        assert (got.nodes, got.allocatable, dict(got.labels), got.taints, got.static_cpu) == (
            pool.nodes, pool.allocatable, pool_facts.node_labels(pool.node_labels), tuple(pool.taints), pool.static_cpu)


def test_a_worker_too_big_for_the_cluster_given_with_cluster_is_judged_against_it(tmp_path):
    # The same 40-CPU worker fits a cluster whose mixed nodes have 64 cores.
    big = tmp_path / "cluster.yaml"
    doc = yaml_load((DIST / "nodes/mixed/nodepool.mixed.yaml").read_text())
    doc["spec"]["allocatable"]["cpu"] = "64"
    big.write_text(yaml.safe_dump(doc))
    assert colocate("check", str(FAIL_40_CPUS)).returncode == 1
    proc = colocate("check", "--cluster", str(big), str(FAIL_40_CPUS))
    assert proc.returncode == 0, proc.stdout


def test_a_malformed_description_is_bad_input_naming_the_file(tmp_path):
    bad = tmp_path / "cluster.yaml"
    bad.write_text("apiVersion: colocate.io/v1alpha1\nkind: NodePool\nmetadata: {name: mixed}\nspec: {nodes: 2}\n")
    proc = colocate("check", "--cluster", str(bad), str(FAIL_40_CPUS))
    assert proc.returncode == 2 and f"{bad}" in proc.stderr and "NodePool/mixed" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
