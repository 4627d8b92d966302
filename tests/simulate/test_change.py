"""``colocate simulate --base REV``: the working tree's dist/ synced onto the base revision's,
running and settled, as Argo CD syncs a merged pull request (docs/simulate.md, "A change on a
running base")."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from colocate import ROOT
from tests.helpers import colocate
from tests.simulate.test_simulate import TAG

GIT = ["git", "-c", "user.email=test@example.com", "-c", "user.name=test", "-c", "commit.gpgsign=false"]


def _base(tmp_path: Path, edit=None) -> Path:
    """A git repository whose one commit holds the reference dist/ (``edit`` applied to it first);
    its working tree is the change."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "dist", repo / "dist")
    if edit:
        edit(repo / "dist")
    subprocess.run([*GIT, "init", "-q", str(repo)], check=True)
    subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-q", "-m", "base"], check=True)
    return repo / "dist"


def _simulate(dist: Path, *args: str) -> tuple[int, dict]:
    proc = colocate("simulate", str(dist), "--format", "json", *args, env=TAG)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def _tight_online_quota(dist: Path) -> None:
    """The online quota holds exactly the two replicas' GPUs: no room for a surge pod."""
    _replace(dist / "apps" / "platform" / "resourcequota.online.online-quota.yaml",
             "requests.nvidia.com/gpu: '16'", "requests.nvidia.com/gpu: '2'")


def _unsyncable_change(dist: Path) -> None:
    """Four changes a first sync takes and a running cluster refuses or cannot roll out."""
    apps = dist / "apps"
    # kubernetes v1.28.15 pkg/apis/scheduling/validation/validation.go ValidatePriorityClassUpdate
    _replace(apps / "platform" / "priorityclass.online-high.yaml", "\nvalue: 1000000\n", "\nvalue: 2000000\n")
    # pkg/registry/apps/deployment/strategy.go ValidateUpdate: apps/v1 selectors are immutable
    _replace(apps / "training-control" / "deployment.colocate-system.colocate-resubmitter.yaml",
             "app.kubernetes.io/name: colocate-resubmitter", "app.kubernetes.io/name: resubmitter")
    # pkg/apis/core/validation/validation.go ValidatePersistentVolumeClaimUpdate: no shrinking
    _replace(apps / "training" / "persistentvolumeclaim.training.tf-mnist-dist-checkpoints.yaml",
             "storage: 10Gi", "storage: 5Gi")
    # A new image rolls the Deployment; its surge pod's GPU is past the tight quota.
    _replace(apps / "online" / "deployment.online.recsys-inference.yaml",
             "recsys-inference:1.0.0", "recsys-inference:1.0.1")


def test_changes_a_running_cluster_refuses_are_reported_with_the_api_servers_words(tmp_path):
    """Argo CD's sync fails where the API server refuses an update, and the report names the
    object, its file and the API server's message; a rollout the quota stops is stuck, with the
    quota's message. Exit 1."""
    dist = _base(tmp_path, _tight_online_quota)
    _unsyncable_change(dist)
    code, report = _simulate(dist, "--base", "HEAD")
    assert code == 1, report["verdict"]
    failed = {obj: message for a in report["change"] for obj, message in a["failed"]}
    expected = {
        "PriorityClass/online-high (dist/apps/platform/priorityclass.online-high.yaml)": "value: Forbidden: may not be changed",
        "Deployment/colocate-system/colocate-resubmitter (dist/apps/training-control/deployment.colocate-system."
        "colocate-resubmitter.yaml)": "field is immutable",
        "PersistentVolumeClaim/training/tf-mnist-dist-checkpoints (dist/apps/training/persistentvolumeclaim.training."
        "tf-mnist-dist-checkpoints.yaml)": "Forbidden",
    }
    assert set(failed) == set(expected), failed
    for obj, words in expected.items():
        assert words in failed[obj] and "/dev/shm" not in failed[obj], (obj, failed[obj])
    (rollout,) = report["rollouts"]
    assert rollout["workload"] == "Deployment/online/recsys-inference" and not rollout["done"], rollout
    assert "exceeded quota: online-quota" in rollout["reason"], rollout
    assert "the change failed to sync or roll out in 4 place(s)" in report["verdict"], report["verdict"]


def test_the_same_tree_synced_from_nothing_passes(tmp_path):
    """Why the base matters: a first sync creates every object as the change writes it."""
    dist = _base(tmp_path, _tight_online_quota)
    _unsyncable_change(dist)
    code, report = _simulate(dist, "--base", "none")
    assert code == 0 and report["change"] is None, report["verdict"]


def test_a_change_that_adds_a_job_creates_its_objects_and_leaves_the_rest(tmp_path):
    dist = _base(tmp_path)
    training = dist / "apps" / "training"
    for source, target in (("tfjob.training.tf-mnist-dist.yaml", "tfjob.training.mnist-2.yaml"),
                           ("persistentvolumeclaim.training.tf-mnist-dist-checkpoints.yaml",
                            "persistentvolumeclaim.training.mnist-2-checkpoints.yaml")):
        (training / target).write_text((training / source).read_text().replace("tf-mnist-dist", "mnist-2"))
    code, report = _simulate(dist, "--base", "HEAD")
    synced = {a["name"]: a for a in report["change"] if a["phase"]}
    assert list(synced) == ["colocate-training"], report["change"]
    training_app = synced["colocate-training"]
    assert sorted(training_app["created"]) == ["PersistentVolumeClaim/training/mnist-2-checkpoints",
                                               "TFJob/training/mnist-2"], training_app
    assert training_app["changed"] == [] and training_app["pruned"] == [] and training_app["failed"] == [], training_app
    assert "training/mnist-2" in report["tfjobs"], report["tfjobs"]
    assert report["rollouts"] == [] and not [p for p in report["replaced"] if p.startswith("online ")], report["replaced"]
    assert code == 0, report["verdict"]


def test_a_change_that_removes_a_job_says_what_went_with_it_and_which_hooks_ran_again(tmp_path):
    """Pruned: the job's TFJob, not its claim; deleted with it by the garbage collector: the Services
    the training-operator made for its replicas. A change to one object of kube-prometheus-stack
    syncs that Application, which runs the chart's admission hook Jobs again."""
    dist = _base(tmp_path)
    for name in ("tfjob.training.tf-ps-mode.yaml", "persistentvolumeclaim.training.tf-ps-mode-checkpoints.yaml"):
        (dist / "apps" / "training" / name).unlink()
    _replace(dist / "apps" / "kube-prometheus-stack" / "configmap.monitoring.kube-prometheus-stack-grafana-datasource.yaml",
             "    release: kube-prometheus-stack\n  name:", "    release: kube-prometheus-stack\n    team: ml\n  name:")
    code, report = _simulate(dist, "--base", "HEAD")
    synced = {a["name"]: a for a in report["change"] if a["phase"]}
    training = synced["colocate-training"]
    # Pruned, or gone without a sync that said so: the report reads each operation while it is the
    # last, and on a loaded machine self-heal can replace the one that pruned between two reads.
    assert "TFJob/training/tf-ps-mode" in training["pruned"] + report["deleted_with"], (training, report["deleted_with"])
    # The checkpoints outlive the job: every object that holds data says Prune=false (docs/gitops.md).
    assert training["kept"] == ["PersistentVolumeClaim/training/tf-ps-mode-checkpoints (ignored (no prune))"], training
    services = [o for o in report["deleted_with"] if o.startswith("Service/training/tf-ps-mode-")]
    assert len(services) == 5, report["deleted_with"]   # Chief, 2 PS, 2 Workers (dist/'s tf-ps-mode)
    monitoring = synced["kube-prometheus-stack"]
    # Server-side apply of what is out of sync (its syncOptions), the chart's CRDs among them:
    # kubectl says "serverside-applied" whether or not an object changed.
    assert "ConfigMap/monitoring/kube-prometheus-stack-grafana-datasource" in monitoring["applied"], monitoring
    assert monitoring["created"] == monitoring["changed"] == [], monitoring
    # The chart's hooks: the two Jobs, and the account and RBAC they run with, in both phases.
    assert {"Job/monitoring/kube-prometheus-stack-admission-create (PreSync: Succeeded)",
            "Job/monitoring/kube-prometheus-stack-admission-patch (PostSync: Succeeded)",
            "ServiceAccount/monitoring/kube-prometheus-stack-admission (PreSync: Succeeded)"} <= set(monitoring["hooks"]), \
        monitoring
    assert code == 0, report["verdict"]
