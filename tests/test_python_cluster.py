"""The cluster's two forms, one model: a cdk8s app that says the reference cluster in Python
(examples/python-cluster/main.py) gives the Cluster colocate.yaml's ``cluster:`` section gives, and
the same dist/, byte for byte."""
from __future__ import annotations

import sys

from colocate import config
from tests.helpers import ROOT, load_module, run

EXAMPLE = ROOT / "examples" / "python-cluster" / "main.py"


def test_the_python_form_is_the_cluster_colocate_yaml_says():
    settings = config.load(ROOT / "colocate.yaml")
    assert load_module(EXAMPLE, "python_cluster_example").cluster(settings.registry_host) == settings.cluster


def test_the_python_form_synthesizes_the_reference_dist(tmp_path):
    out = tmp_path / "dist"
    run([sys.executable, str(EXAMPLE), str(out)], check=True)
    written = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(ROOT / "dist") for p in (ROOT / "dist").rglob("*") if p.is_file())
    assert [rel for rel in written if (out / rel).read_bytes() != (ROOT / "dist" / rel).read_bytes()] == []
