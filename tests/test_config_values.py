"""colocate.yaml refuses control characters and values that are not what their key names
(hostile-3 R3-M7): each is exit 2 naming the key and the file, before anything is written."""
from __future__ import annotations

import pytest

from colocate import ROOT, config
from colocate.base import safe_yaml, validated_yaml
from colocate.errors import InputError
from tests.helpers import colocate

TEXT = (ROOT / "colocate.yaml").read_text()


def _config(tmp_path, old: str, new: str):
    assert old in TEXT, old
    path = tmp_path / "colocate.yaml"
    path.write_text(TEXT.replace(old, new, 1))
    return path


@pytest.mark.parametrize("old, new, key, words", [
    ("argocdNamespace: argocd", 'argocdNamespace: "argocd\\n"', "$.gitops.argocdNamespace", "control character (U+000A"),
    ("argocdNamespace: argocd", "argocdNamespace: |\n    argocd", "$.gitops.argocdNamespace", "block scalar"),
    ("project: default", 'project: "default\\n---\\nkind: Secret"', "$.gitops.project", "control character"),
    ("repoURL: https://git.example.com/platform/colocate.git",
     'repoURL: "https://git.example.com/x\\e[2J\\n::error::forged"', "$.gitops.repoURL", "control character (U+001B"),
    ("host: harbor.example.com ", 'host: "harbor.example.com\\n" ', "$.registry.host", "control character"),
    ("release: 2026.12.0", 'release: "2026.12.0\\n"', "$.release", "control character"),
    ("pauseLeadMinutes: 10", "pauseLeadMinutes: 10.0", "$.schedule.pauseLeadMinutes", "10.0 is not of type 'integer'"),
    ("repoURL: https://git.example.com/platform/colocate.git", "repoURL: not a url", "$.gitops.repoURL",
     "is not a git repository URL"),
    ("destinationServer: https://kubernetes.default.svc", "destinationServer: file:///etc/passwd",
     "$.gitops.destinationServer", "is not a Kubernetes API server URL"),
    ("project: default", "project: Default", "$.gitops.project", "is not an Argo CD project name"),
])
def test_a_bad_value_is_refused_naming_the_key_and_the_file(tmp_path, old, new, key, words):
    path = _config(tmp_path, old, new)
    with pytest.raises(InputError) as error:
        config.load(path)
    assert error.value.where == key and words in error.value.reason, error.value
    assert error.value.file == str(path), error.value.file


@pytest.mark.parametrize("value", ["git@git.example.com:platform/colocate.git",
                                   "ssh://git@git.example.com:2222/platform/colocate.git",
                                   "https://git.example.com/platform/colocate.git"])
def test_the_usual_repository_urls_are_accepted(tmp_path, value):
    path = _config(tmp_path, "repoURL: https://git.example.com/platform/colocate.git", f"repoURL: {value}")
    assert config.load(path).gitops.repo_url == value


def test_every_anchored_pattern_refuses_a_trailing_newline():
    """The schema's patterns are ECMA-262, whose $ is the end of the string; Python's $ also
    matches before a final newline. Checked without the control-character guard in front."""
    data = safe_yaml.load(TEXT)
    data["gitops"]["argocdNamespace"] = "argocd\n"
    data["monitoring"]["retention"] = "15d\n"
    with pytest.raises(InputError) as error:
        validated_yaml.validate(data, config._SCHEMA, "colocate.yaml")
    assert error.value.where == "$.gitops.argocdNamespace" and "$.monitoring.retention" in error.value.reason


def test_synth_with_a_newline_in_a_value_exits_2_and_writes_nothing(tmp_path):
    path = _config(tmp_path, "argocdNamespace: argocd", 'argocdNamespace: "argocd\\n"')
    proc = colocate("--config", str(path), "synth", "--outdir", str(tmp_path / "out"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "$.gitops.argocdNamespace" in proc.stderr and "colocate.yaml" in proc.stderr
    assert not (tmp_path / "out").exists()
