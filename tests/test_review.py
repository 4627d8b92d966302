"""`colocate diff` on real commits: a temporary git repository holding a copy of this one, where
each change is made to the source and re-synthesized with the copy's own package."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.helpers import git, git_repo, run, VENV_BIN, yaml_load

NEW_JOB = "tf-extra"
CHECKPOINTS_GONE = "tf-ps-mode-checkpoints"
STATUS = {"A": "added", "D": "removed", "M": "changed"}


def _cli(repo: Path, *args: str):
    """The copy's own colocate (python -m from the copy), as a developer there would run it."""
    return run([str(VENV_BIN / "python"), "-m", "colocate.cli", *args], cwd=repo)


def _synth_and_commit(repo: Path, message: str) -> str:
    proc = _cli(repo, "synth")
    assert proc.returncode == 0, proc.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> dict[str, str]:
    """main at the base; branch ``feature`` with the three commits of the acceptance test."""
    repo = git_repo(tmp_path_factory.mktemp("diff") / "repo")
    revs = {"repo": str(repo), "base": git(repo, "rev-parse", "HEAD").strip()}
    git(repo, "checkout", "-q", "-b", "feature")

    # 1. A new job, a raised quota, a new image tag.
    jobs = repo / "jobs"
    (jobs / f"{NEW_JOB}.yaml").write_text((jobs / "tf-ps-mode.yaml").read_text().replace(
        "name: tf-ps-mode", f"name: {NEW_JOB}"))
    (jobs / "tf-mnist-dist.yaml").write_text((jobs / "tf-mnist-dist.yaml").read_text().replace(
        "tf-mnist:2.11.0", "tf-mnist:2.12.0"))
    config = repo / "colocate.yaml"
    assert "  trainingClaims: 100 " in config.read_text()
    config.write_text(config.read_text().replace("  trainingClaims: 100 ", "  trainingClaims: 120 "))
    revs["real"] = _synth_and_commit(repo, "add a job, raise the PVC quota, new image tag")

    # 2. Cosmetic only: keys in reverse order, 1000m for 1 and 2048Mi for 2Gi, by hand in dist/.
    path = repo / "dist" / "apps" / "training" / "tfjob.training.tf-ps-mode.yaml"
    obj = yaml_load(path.read_text())

    def reverse(value):
        if isinstance(value, dict):
            return {k: reverse(value[k]) for k in reversed(list(value))}
        return [reverse(v) for v in value] if isinstance(value, list) else value

    text = yaml.safe_dump(reverse(obj), sort_keys=False).replace("cpu: '1'", "cpu: 1000m").replace(
        "memory: 2Gi", "memory: 2048Mi")
    assert "1000m" in text and "2048Mi" in text
    path.write_text(text)
    git(repo, "commit", "-qam", "cosmetic: key order and quantity spelling")
    revs["cosmetic"] = git(repo, "rev-parse", "HEAD").strip()

    # 3. A job file deleted: its TFJob and its checkpoint claim go.
    (jobs / "tf-ps-mode.yaml").unlink()
    revs["deleted"] = _synth_and_commit(repo, "delete the tf-ps-mode job")
    return revs


def _json(history, base: str, head: str) -> dict:
    proc = _cli(Path(history["repo"]), "diff", history[base], history[head], "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _git_changes(history, base: str, head: str) -> set[tuple[str, str]]:
    """The oracle: dist/ holds one object per file, so git's file status is the object's."""
    out = git(Path(history["repo"]), "diff", "--name-status", "--no-renames", history[base], history[head], "--", "dist")
    return {(STATUS[line.split("\t")[0]], line.split("\t")[1].removeprefix("dist/"))
            for line in out.splitlines() if not line.endswith("/index.yaml")}


def test_real_changes_are_listed_exactly(history):
    doc = _json(history, "base", "real")
    assert {(c["status"], c["file"]) for c in doc["changes"]} == _git_changes(history, "base", "real")
    by_name = {(c["kind"], c["name"]): c for c in doc["changes"]}
    assert by_name[("TFJob", NEW_JOB)]["status"] == "added"
    assert by_name[("PersistentVolumeClaim", f"{NEW_JOB}-checkpoints")]["status"] == "added"
    quota = by_name[("ResourceQuota", "training-quota")]
    assert quota["application"] == "colocate-platform"
    assert quota["fields"] == [{"path": "spec.hard.persistentvolumeclaims", "old": "100", "new": "120"}]
    images = {f["path"]: (f["old"], f["new"]) for f in by_name[("TFJob", "tf-mnist-dist")]["fields"]}
    assert images == {f"spec.tfReplicaSpecs.{role}.template.spec.containers[name=tensorflow].image":
                      ("harbor.example.com/ml/tf-mnist:2.11.0", "harbor.example.com/ml/tf-mnist:2.12.0")
                      for role in ("Chief", "Worker")}
    # A new image for a running job: training-operator v1.7.0 keeps the old pods, so diff says how
    # to apply it (docs/training.md, "Editing a job file").
    (edited,) = doc["dangerous"]
    assert (edited["kind"], edited["name"]) == ("TFJob", "tf-mnist-dist"), edited
    assert "never updates a TFJob's pods" in edited["dangers"][0]["reason"]
    assert "kubectl -n training delete tfjob tf-mnist-dist" in edited["dangers"][0]["reason"]
    assert doc["policy"] == {"introduced": [], "resolved": []}


def test_a_cosmetic_commit_is_no_change(history):
    assert _git_changes(history, "real", "cosmetic"), "the cosmetic commit must change a file"
    assert _json(history, "real", "cosmetic")["changes"] == []
    proc = _cli(Path(history["repo"]), "diff", history["real"], history["cosmetic"])
    assert "no change to any object" in proc.stdout


def test_a_deleted_job_puts_its_checkpoint_claim_first_with_a_warning(history):
    doc = _json(history, "cosmetic", "deleted")
    assert {(c["status"], c["file"]) for c in doc["changes"]} == _git_changes(history, "cosmetic", "deleted")
    first = doc["dangerous"][0]
    assert (first["status"], first["kind"], first["name"]) == ("removed", "PersistentVolumeClaim", CHECKPOINTS_GONE)
    assert "deletes its volume's data" in first["dangers"][0]["reason"]

    text = _cli(Path(history["repo"]), "diff", history["cosmetic"], history["deleted"]).stdout.splitlines()
    assert text[1:3] == ["", "DANGEROUS"]
    assert text[3].startswith(f"  ! removed PersistentVolumeClaim training/{CHECKPOINTS_GONE} (colocate-training): ")


def test_default_base_is_the_merge_base_with_main_and_head_the_working_tree(history):
    repo = Path(history["repo"])
    doc = json.loads(_cli(repo, "diff", "--format", "json", "--no-policy").stdout)
    assert doc["head"] == "working tree" and doc["base"].startswith("merge-base ")
    assert {(c["status"], c["file"]) for c in doc["changes"]} == _git_changes(history, "base", "deleted")


def test_a_tag_named_main_does_not_move_the_default_base(history):
    """A bare "main" resolved to a tag of that name before the branch (git's "refname is ambiguous"
    warning went unseen): the base is the branch, then origin's, never the tag."""
    repo = Path(history["repo"])
    expected = f"merge-base {history['base'][:12]}"

    def base() -> str:
        proc = _cli(repo, "diff", "--format", "json", "--no-policy")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["base"]

    git(repo, "tag", "main", history["real"])
    try:
        assert base() == expected
        # No local main: the remote-tracking branch, still not the tag.
        git(repo, "update-ref", "refs/remotes/origin/main", history["base"])
        git(repo, "branch", "-m", "main", "trunk")
        try:
            assert base() == expected
        finally:
            git(repo, "branch", "-m", "trunk", "main")
            git(repo, "update-ref", "-d", "refs/remotes/origin/main")
    finally:
        git(repo, "tag", "-d", "main")


def test_bad_revision_is_exit_2_without_traceback(history):
    proc = _cli(Path(history["repo"]), "diff", "no-such-rev")
    assert proc.returncode == 2
    assert proc.stderr == f"colocate: error: unknown git revision 'no-such-rev' in {history['repo']}\n"


def test_the_added_job_shows_as_its_requests_in_the_mixed_pool(history):
    doc = _json(history, "base", "real")
    offline = {(d["pool"], d["resource"]): d["after"] - d["before"] for d in doc["capacity"] if d["tier"] == "offline"}
    # tf-extra is a copy of tf-ps-mode: 1 Chief, 2 Workers, 2 PS at 1 CPU / 2Gi each.
    assert offline == {("mixed", "cpu"): 5 * 1000, ("mixed", "memory"): 5 * 2 * 2**30}
    text = _cli(Path(history["repo"]), "diff", history["base"], history["real"]).stdout
    assert "  mixed offline cpu: 47 -> 52 (+5) of 189" in text  # recsys-train's Chief: 2 of the 47
    quota = {q["resource"]: (q["used_before"], q["used_after"], q["hard_before"], q["hard_after"])
             for q in doc["quota"] if q["quota"] == "training-quota"}
    assert quota["persistentvolumeclaims"] == (3, 4, 100, 120)
    assert quota["requests.cpu"][:2] == (47_000, 52_000)
    assert "  training/training-quota persistentvolumeclaims: 3 -> 4 of 100 -> 120" in text


def test_policy_findings_the_working_tree_introduces(tmp_path):
    repo = git_repo(tmp_path / "repo")
    path = repo / "dist" / "apps" / "online" / "deployment.online.recsys-inference.yaml"
    # CPU limit above the request: the online pod is no longer Guaranteed (COL002).
    path.write_text(path.read_text().replace("limits:\n              cpu: '4'", "limits:\n              cpu: '6'"))
    doc = json.loads(_cli(repo, "diff", "--format", "json", "--no-capacity").stdout)
    assert [(f["rule"], f["file"], f["kind"], f["name"]) for f in doc["policy"]["introduced"]] == [
        ("COL002", "apps/online/deployment.online.recsys-inference.yaml", "Deployment", "recsys-inference")]
    assert doc["policy"]["resolved"] == [] and "capacity" not in doc
    (change,) = doc["changes"]
    assert change["fields"] == [{"path": "spec.template.spec.containers[name=recsys-inference].resources.limits.cpu",
                                 "old": "4", "new": "6"}]


def test_each_revision_is_judged_against_its_own_pools(tmp_path):
    """A change that takes four of the mixed pool's six nodes away: the head is judged against
    its own dist/nodes/ (two nodes), not the base's, so the training no longer fits (OVER)."""
    repo = git_repo(tmp_path / "repo")
    path = repo / "dist" / "nodes" / "mixed" / "nodepool.mixed.yaml"
    doc = yaml_load(path.read_text())
    assert doc["spec"]["nodes"] == 6
    doc["spec"]["nodes"] = 2
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    report = json.loads(_cli(repo, "diff", "--format", "json", "--no-policy").stdout)
    gpus = [d for d in report["capacity"] if (d["pool"], d["tier"], d["resource"]) == ("mixed", "total", "nvidia.com/gpu")]
    cpu = [d for d in report["capacity"] if (d["pool"], d["tier"], d["resource"]) == ("mixed", "total", "cpu")]
    # Every mixed node runs the DaemonSets' pods: four nodes fewer, four fewer of each.
    assert cpu and cpu[0]["after"] < cpu[0]["before"], report["capacity"]
    assert cpu[0]["allocatable"] == 2 * 31_500, cpu
    # No GPU request changes, but the pool's 12 GPUs become 4: the training's 8 no longer fit.
    assert gpus and gpus[0]["before"] == gpus[0]["after"] == 8 and gpus[0]["allocatable"] == 4, gpus
    text = _cli(repo, "diff", "--no-policy").stdout
    assert "mixed total nvidia.com/gpu: 8 -> 8 (0) of 4 (over allocatable: pods stop fitting)" in text, text
    assert "1 pool requests over allocatable" in text.splitlines()[0], text
