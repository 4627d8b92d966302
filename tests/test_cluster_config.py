"""colocate.yaml's ``cluster:`` section: the cluster's shape is the user's
file, not Python in the package. Bad input is exit 2 naming the file and the key and writes
nothing; another cluster synthesizes and passes check."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from colocate import ROOT
from tests.helpers import colocate, yaml_load


def _config(folder: Path, change) -> Path:
    """colocate.yaml with ``change`` applied to its data, written into ``folder``."""
    data = yaml_load((ROOT / "colocate.yaml").read_text())
    change(data["cluster"])
    path = folder / "colocate.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _pool(cluster: dict, name: str) -> dict:
    return next(p for p in cluster["pools"] if p["name"] == name)


@pytest.mark.parametrize("change, key, words", [
    (lambda c: c.__setitem__("namespace", c.pop("namespaces")), "$.cluster",
     "unknown key 'namespace' (did you mean 'namespaces'?)"),
    (lambda c: _pool(c, "mixed").__setitem__("gpu", 2), "$.cluster.pools[1]", "unknown key 'gpu' (did you mean 'gpus'?)"),
    (lambda c: _pool(c, "online")["kubelet"].__setitem__("systemreserved", {}), "$.cluster.pools[0].kubelet",
     "unknown key 'systemreserved' (did you mean 'systemReserved'?)"),
    (lambda c: _pool(c, "mixed").__setitem__("nodes", 0), "$.cluster.pools[1].nodes",
     "0 is not a node count: a pool has at least one node"),
    (lambda c: _pool(c, "mixed").pop("nodes"), "$.cluster.pools[1]", "'nodes' is a required property"),
    (lambda c: c["pools"].append(dict(_pool(c, "mixed"), nodes=2)), "$.cluster.pools[3].name",
     "'mixed' is also the name of pools[1]"),
    (lambda c: _pool(c, "online")["taints"][0].pop("effect"), "$.cluster.pools[0].taints[0]",
     "'effect' is a required property"),
    (lambda c: c["poolRoles"].__setitem__("mixed", "shared"), "$.cluster.poolRoles.mixed",
     "'shared' is not a pool (pools: online, mixed, monitoring)"),
    (lambda c: c["onlineServices"][0].__setitem__("image", "harbor.example.com/ml/recsys-inference:1.0.0"),
     "$.cluster.onlineServices[0].image", "write the path without a host"),
    (lambda c: _pool(c, "mixed")["kubelet"].pop("systemReserved"), "$.cluster.pools[1]",
     "'static' needs reserved CPU > 0"),
], ids=["unknown-key", "unknown-pool-key", "unknown-kubelet-key", "no-nodes", "nodes-missing", "two-pools-one-name",
        "taint-without-effect", "role-names-no-pool", "image-with-host", "prop-the-model-refuses"])
def test_a_bad_cluster_is_exit_2_naming_the_file_and_key_and_writes_nothing(tmp_path, change, key, words):
    config = _config(tmp_path, change)
    before = config.read_bytes()
    out = tmp_path / "dist"
    proc = colocate("--config", str(config), "synth", "--outdir", str(out))
    assert proc.returncode == 2, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"colocate: error: {config}:{key}: ") and words in first, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists() and config.read_bytes() == before


def test_a_configuration_without_a_cluster_says_so(tmp_path):
    data = yaml_load((ROOT / "colocate.yaml").read_text())
    del data["cluster"]
    config = tmp_path / "colocate.yaml"
    config.write_text(yaml.safe_dump(data))
    proc = colocate("--config", str(config), "synth", "--outdir", str(tmp_path / "dist"))
    assert proc.returncode == 2 and f"{config}:$: 'cluster' is a required property" in proc.stderr, proc.stderr
    assert not (tmp_path / "dist").exists()


def test_another_cluster_synthesizes_and_passes_check(tmp_path):
    """Another pool and a renamed training namespace: nothing of the reference is assumed."""
    def change(cluster):
        cluster["pools"].append({"name": "cpu-batch", "nodes": 3, "cpu": "64", "memory": "256Gi",
                                 "labels": {"role": "batch"}})
        cluster["namespaces"]["training"] = "batch"

    config = _config(tmp_path, change)
    out = tmp_path / "dist"
    proc = colocate("--config", str(config), "synth", "--outdir", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (out / "nodes").iterdir()) == ["cpu-batch", "mixed", "monitoring", "online"]
    jobs = sorted(p.name for p in (out / "apps" / "training").glob("tfjob.*.yaml"))
    assert jobs and all(name.startswith("tfjob.batch.") for name in jobs), jobs
    objects = [o for f in yaml_load((out / "index.yaml").read_text())["folders"].values() for o in f["objects"]]
    assert not [o for o in objects if o.get("namespace") == "training"]
    assert any(o["kind"] == "Namespace" and o["name"] == "batch" for o in objects)

    proc = colocate("--config", str(config), "check", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 errors, 0 warnings" in proc.stdout, proc.stdout
