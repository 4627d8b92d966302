"""The benchmarks' inputs stay valid: `make bench` times synth, check and simulate of generated jobs,
which a new rule of the job construct or of check must not turn into a refusal."""
from __future__ import annotations

from colocate import ROOT
from tests.helpers import load_module, yaml_load_all


def test_each_generated_job_shape_synthesizes_on_the_cluster_the_benchmark_sizes_for_it(tmp_path):
    bench = load_module(ROOT / "scripts" / "bench.py", "bench")
    jobs, out = tmp_path / "jobs", tmp_path / "dist"
    bench.write_jobs(jobs, len(bench.SHAPES) * 2)  # each shape twice, 1 to 4 workers

    bench.synth_with_jobs(out, jobs)  # refuses (InputError) what check would refuse

    tfjobs = [doc["metadata"]["name"] for path in sorted(out.rglob("*.yaml"))
              for doc in yaml_load_all(path.read_text()) if isinstance(doc, dict) and doc.get("kind") == "TFJob"]
    assert sorted(n for n in tfjobs if n.startswith("bench-")) == [f"bench-{i:04d}" for i in range(6)]
