"""``colocate diff`` reads each revision's dist/index.yaml (folder -> Argo CD Application): one that
is malformed, in either revision or in the working tree, is exit 2 naming the revision, the file
and the key, never a traceback (hostile-3 R3-M4)."""
from __future__ import annotations

import pytest
import yaml

from tests.helpers import colocate, git

CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "online"},
              "data": {"level": "1"}}
INDEX = {"apiVersion": "colocate.io/v1alpha1", "kind": "DistIndex", "metadata": {"name": "colocate"},
         "release": "2026.12.0", "kubernetesVersion": "1.28.0", "objectCount": 1,
         "folders": {"apps/online": {"argocdApplication": "colocate-online",
                                     "objects": [{"file": "configmap.online.settings.yaml", "apiVersion": "v1",
                                                  "kind": "ConfigMap", "namespace": "online", "name": "settings"}]}}}
INDEX_FILE = "dist/index.yaml"

#: (what, index.yaml's text, what the error says after the file: the key, and why).
MALFORMED = [
    ("an entry that is a string", yaml.safe_dump({**INDEX, "folders": {"apps/online": "argocdApplication"}}),
     ":folders.apps/online: must be a folder name with a mapping"),
    ("folders a list", yaml.safe_dump({**INDEX, "folders": [1, 2]}), ":folders: is a list, not a mapping"),
    ("a list", "[1, 2]\n", ": holds a list, not a DistIndex mapping"),
    ("a string", "just text\n", ": holds a str, not a DistIndex mapping"),
    ("an Application that is a number",
     yaml.safe_dump({**INDEX, "folders": {"apps/online": {**INDEX["folders"]["apps/online"], "argocdApplication": 5}}}),
     ":folders.apps/online.argocdApplication: is 5, not an Application name"),
    ("a folder that is a number", yaml.safe_dump({**INDEX, "folders": {5: {"objects": []}}}),
     ":folders.5: must be a folder name"),
    ("no YAML", "folders: {apps/online: [\n", ": is not the YAML synth writes"),
    ("two documents", "a: 1\n---\nb: 2\n", ": is not the YAML synth writes"),
    ("not UTF-8", b"folders: {\xff\xfe: 1}\n", ": is not the YAML synth writes (UnicodeDecodeError)"),
]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A repository whose first commit is a good dist/, with a branch per malformed index."""
    repo = tmp_path_factory.mktemp("diff-index")
    (repo / "dist" / "apps" / "online").mkdir(parents=True)
    (repo / "dist" / "apps" / "online" / "configmap.online.settings.yaml").write_text(yaml.safe_dump(CONFIG_MAP))
    (repo / INDEX_FILE).write_text(yaml.safe_dump(INDEX, sort_keys=False))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "good")
    for i, (_what, text, _says) in enumerate(MALFORMED):
        git(repo, "checkout", "-q", "-b", f"bad{i}", "main")
        (repo / INDEX_FILE).write_bytes(text if isinstance(text, bytes) else text.encode())
        git(repo, "commit", "-qam", f"bad {i}")
    git(repo, "checkout", "-q", "main")
    return repo


def _refused(repo, says: str, *revisions: str) -> None:
    proc = colocate("diff", *revisions, "--no-policy", "--no-capacity", cwd=repo)
    assert proc.returncode == 2 and says in proc.stderr, (revisions, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("i", range(len(MALFORMED)), ids=[m[0] for m in MALFORMED])
def test_a_malformed_index_in_either_revision_is_exit_2_naming_it(repo, i):
    says = MALFORMED[i][2]
    _refused(repo, f"bad{i}: {INDEX_FILE}{says}", "main", f"bad{i}")  # the head
    _refused(repo, f"bad{i}: {INDEX_FILE}{says}", f"bad{i}", "main")  # the base


def test_a_malformed_index_in_the_working_tree_is_exit_2_naming_it(repo):
    try:
        (repo / INDEX_FILE).write_text("[1, 2]\n")
        _refused(repo, f"working tree: {INDEX_FILE}: holds a list", "main")
    finally:
        git(repo, "checkout", "-q", "--", INDEX_FILE)


def test_a_good_index_names_the_application(repo):
    git(repo, "checkout", "-q", "-b", "change", "main")
    try:
        path = repo / "dist" / "apps" / "online" / "configmap.online.settings.yaml"
        path.write_text(yaml.safe_dump({**CONFIG_MAP, "data": {"level": "2"}}))
        git(repo, "commit", "-qam", "level 2")
        proc = colocate("diff", "main", "change", "--no-policy", "--no-capacity", cwd=repo)
        assert proc.returncode == 0 and "colocate-online" in proc.stdout, proc.stderr
    finally:
        git(repo, "checkout", "-q", "main")
