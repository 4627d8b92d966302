"""Every command's output goes through one escaping (colocate.base.text): a name holding ESC, a new
line and ``::error::`` (a GitHub Actions workflow command at the start of a line) reaches neither
the terminal nor the CI log as it is, from capacity, report, diff and offline (hostile-3 R3-M2,
M4, M5, M12). HTML in a name never reaches a pull-request comment as markup."""
from __future__ import annotations

import shutil

import pytest
import yaml

from colocate import ROOT
from colocate.base.text import code_span, escape, markdown
from tests.helpers import colocate, git, json_server, kubeconfig_for, yaml_load

HOSTILE = "evil\x1b[2J\x1b[31m\n::error file=README.md::forged<img src=x><h1>APPROVED</h1>|"
AT = 1_764_000_000


def _clean(output: str) -> None:
    """No raw control character, no line that starts a workflow command, no raw HTML of the name."""
    assert "\x1b" not in output, output
    assert not any(line.lstrip().startswith("::") for line in output.splitlines()), output
    assert "\\x1b[2J" in output, "the name is shown, escaped"


def test_escape_shows_control_characters_and_a_leading_workflow_command():
    assert escape("a\x1b[2J\nb") == "a\\x1b[2J\\x0ab"
    assert escape("::error::x") == "\\x3a:error::x" and escape("  ::warning::") == "  \\x3a:warning::"
    assert escape("plain-name.v2") == "plain-name.v2"
    assert markdown("<h1>x</h1>|y") == "&lt;h1&gt;x&lt;/h1&gt;\\|y"
    assert code_span("a`b\n") == "`a'b\\x0a`"


def test_capacity_escapes_application_and_operator_resource_names(tmp_path):
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": HOSTILE, "namespace": "argocd"},
           "spec": {"source": {"repoURL": "https://charts.example.com", "chart": "x", "targetRevision": "1.0.0"},
                    "destination": {"server": "https://kubernetes.default.svc"}, "project": "default"}}
    prom = {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "metadata": {"name": HOSTILE, "namespace": "monitoring"}}
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": HOSTILE, "namespace": "online"},
             "spec": {"hard": {"requests.cpu": "10"}}}
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all([app, prom, quota]))
    for fmt in ("text", "markdown"):
        proc = colocate("capacity", str(tmp_path), "--format", fmt)
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
        _clean(proc.stderr)
        _clean(proc.stdout)
        assert fmt == "text" or "<h1>" not in proc.stdout


def test_report_escapes_labels_from_prometheus():
    def answer(path, query):
        result = []
        if path.endswith("query_range") and query["query"][0].startswith("sum by (pool)"):
            start = float(query["start"][0])
            result = [{"metric": {"pool": HOSTILE}, "values": [[start, "0.5"], [start + 60, "0.5"]]}]
        return {"status": "success", "data": {"resultType": "matrix" if path.endswith("range") else "vector",
                                               "result": result}}

    with json_server(answer) as url:
        for fmt in ("text", "markdown"):
            proc = colocate("report", "--prometheus", url, "--until", str(AT), "--since", "1h", "--format", fmt)
            assert proc.returncode == 0, proc.stderr
            _clean(proc.stdout)
            assert fmt == "text" or "<h1>" not in proc.stdout


def test_diff_escapes_application_names_from_the_index(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "dist", repo / "dist")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    index = yaml_load((repo / "dist" / "index.yaml").read_text())
    index["folders"]["apps/online"]["argocdApplication"] = HOSTILE
    (repo / "dist" / "index.yaml").write_text(yaml.safe_dump(index, sort_keys=False))
    path = repo / "dist" / "apps" / "online" / "deployment.online.recsys-inference.yaml"
    path.write_text(path.read_text().replace("replicas: ", "replicas: 1", 1))
    git(repo, "commit", "-qam", "hostile")
    for fmt in ("text", "markdown"):
        proc = colocate("diff", "HEAD~1", "HEAD", "--no-policy", "--no-capacity", "--format", fmt, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        _clean(proc.stdout)
        assert fmt == "text" or ("<img" not in proc.stdout and "<h1>" not in proc.stdout)


def test_offline_escapes_tfjob_names_from_the_apijson_server(tmp_path):
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": HOSTILE, "namespace": "training"},
           "spec": {"runPolicy": {}, "tfReplicaSpecs": {}}, "status": {}}

    def answer(path, query):
        return {"apiVersion": "kubeflow.org/v1", "kind": "TFJobList", "metadata": {}, "items": [job]}

    with json_server(answer) as url:
        kubeconfig = kubeconfig_for(url, tmp_path)
        proc = colocate("offline", "pause", "--dry-run", "--namespace", "training", "--kubeconfig", str(kubeconfig))
    # No TFJob has that name (it is no object name): refused before any patch, and named escaped.
    assert proc.returncode == 2 and "is not an object name" in proc.stderr, proc.stderr
    _clean(proc.stderr)


@pytest.mark.parametrize("module", ["colocate.checker.formats", "colocate.review.formats", "colocate.report.formats",
                                    "colocate.cli"])
def test_every_command_output_uses_the_one_escaping(module):
    import importlib

    assert importlib.import_module(module).escape is escape
