"""`colocate diff` on a one-line values change of a rendered chart: the rendered objects' changed
fields, under the Application that owns them (docs/gitops.md "Rendered manifests"). Runs the copy's
own synth, which renders kube-prometheus-stack with bin/helm because its values changed."""
from __future__ import annotations

import json

from tests.helpers import VENV_BIN, git, git_repo, run

OLD = '"grafana": {"requests": {"cpu": "200m", "memory": "256Mi"}'
NEW = '"grafana": {"requests": {"cpu": "300m", "memory": "256Mi"}'


def test_a_values_change_shows_as_the_rendered_deployments_field(tmp_path):
    repo = git_repo(tmp_path / "repo")
    base = git(repo, "rev-parse", "HEAD").strip()
    construct = repo / "constructs" / "kube_prometheus_stack.py"
    assert construct.read_text().count(OLD) == 1
    construct.write_text(construct.read_text().replace(OLD, NEW))
    cli = [str(VENV_BIN / "python"), "-m", "colocate.cli"]
    synth = run([*cli, "synth"], cwd=repo)
    assert synth.returncode == 0, synth.stderr
    proc = run([*cli, "diff", base, "--format", "json", "--no-policy", "--no-capacity"], cwd=repo)
    assert proc.returncode in (0, 1), proc.stderr
    changes = json.loads(proc.stdout)["changes"]
    grafana = [c for c in changes if (c["kind"], c["name"]) == ("Deployment", "kube-prometheus-stack-grafana")]
    assert len(grafana) == 1, [(c["kind"], c["name"]) for c in changes]
    assert grafana[0]["application"] == "kube-prometheus-stack"
    assert {"path": "spec.template.spec.containers[name=grafana].resources.requests.cpu", "old": "200m",
            "new": "300m"} in grafana[0]["fields"]
    # Only the rendered Deployment (and the index's digests) changed: nothing else in dist/.
    assert {(c["kind"], c["name"]) for c in changes} == {("Deployment", "kube-prometheus-stack-grafana")}
