"""The training layer in dist/: the reference jobs, their claims, the image pre-pull, and the
training-operator's Argo CD wiring, valid under kubeconform and `colocate check`."""
from __future__ import annotations

import dataclasses
import shutil

import pytest

from colocate import ROOT, app, config as config_mod
from colocate.checker import kubeconform
from colocate.errors import InputError
from tests.helpers import colocate, yaml_load

DIST = ROOT / "dist"
REFERENCE_JOBS = ("tf-mnist-dist", "tf-ps-mode", "recsys-train")
OPERATOR_APP = "apps/argocd/application.argocd.colocate-training-operator-upstream.yaml"
PREPULL = "apps/training/daemonset.image-prepull.training-image-prepull.yaml"


def load(rendered: dict[str, str], path: str) -> dict:
    return yaml_load(rendered[path])


def test_dist_holds_the_reference_tfjobs_and_their_claims(rendered):
    for name in REFERENCE_JOBS:
        tfjob = load(rendered, f"apps/training/tfjob.training.{name}.yaml")
        claim = load(rendered, f"apps/training/persistentvolumeclaim.training.{name}-checkpoints.yaml")
        volumes = {r: s["template"]["spec"]["volumes"] for r, s in tfjob["spec"]["tfReplicaSpecs"].items()}
        assert all(v == [{"name": "checkpoints", "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}]
                   for v in volumes.values()), name
        assert claim["spec"]["accessModes"] == ["ReadWriteMany"]


def test_reference_jobs_have_the_roles_of_the_mission(rendered):
    def replicas(name):
        spec = load(rendered, f"apps/training/tfjob.training.{name}.yaml")["spec"]["tfReplicaSpecs"]
        return {role: s["replicas"] for role, s in spec.items()}

    assert replicas("tf-mnist-dist") == {"Chief": 1, "Worker": 3}
    assert replicas("tf-ps-mode") == {"Chief": 1, "Worker": 2, "PS": 2}
    # 2 PS + 4 GPU Workers, plus the Chief TensorFlow 2's ParameterServerStrategy needs as its
    # coordinator (docs/training.md, "Job shapes"; COL117).
    assert replicas("recsys-train") == {"Chief": 1, "PS": 2, "Worker": 4}
    mnist = load(rendered, "apps/training/tfjob.training.tf-mnist-dist.yaml")["spec"]["tfReplicaSpecs"]["Chief"]
    # All-reduce: the Chief is one more worker, with the Workers' GPU (COL116).
    assert mnist["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}}


def test_prepull_daemonset_pulls_every_job_image_on_the_mixed_pool_at_the_lowest_priority(rendered):
    ds = load(rendered, PREPULL)
    pod = ds["spec"]["template"]["spec"]
    job_images = {load(rendered, f"apps/training/tfjob.training.{n}.yaml")["spec"]["tfReplicaSpecs"]["Worker"]
                  ["template"]["spec"]["containers"][0]["image"] for n in REFERENCE_JOBS}
    assert [c["image"] for c in pod["initContainers"]] == sorted(job_images)
    assert pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "node-restriction.kubernetes.io/colocate-pool", "operator": "In", "values": ["mixed"]}]}]
    classes = {yaml_load(t)["metadata"]["name"]: yaml_load(t)["value"]
               for p, t in rendered.items() if p.startswith("apps/platform/priorityclass.")}
    assert pod["priorityClassName"] == min(classes, key=classes.get)
    assert load(rendered, f"apps/platform/priorityclass.{pod['priorityClassName']}.yaml")["preemptionPolicy"] == "Never"
    for container in pod["initContainers"] + pod["containers"]:
        assert container["resources"]["requests"] == {"cpu": "10m", "memory": "16Mi"}


def test_prepull_images_follow_the_job_files(tmp_path):
    jobs_dir = tmp_path / "jobs"
    shutil.copytree(ROOT / "jobs", jobs_dir)
    (jobs_dir / "bert.yaml").write_text(
        "name: bert\nimage: harbor.example.com/ml/bert:3.1.0\nroles:\n  Worker: {cpu: 4, memory: 16Gi, gpus: 1}\n")
    files = app.render_files(app.build(jobs_dir=jobs_dir))
    images = [c["image"] for c in yaml_load(files[PREPULL])["spec"]["template"]["spec"]["initContainers"]]
    assert "harbor.example.com/ml/bert:3.1.0" in images and len(images) == len(set(images))


def test_no_jobs_means_no_prepull_daemonset_but_the_folder_stays(tmp_path):
    # The pre-pull Namespace and its deny-all policy stay, so the colocate-training Application's
    # path exists and Argo CD prunes the last TFJobs.
    files = app.render_files(app.build(jobs_dir=tmp_path))
    assert sorted(p for p in files if p.startswith("apps/training/")) == [
        "apps/training/namespace.image-prepull.yaml", "apps/training/networkpolicy.image-prepull.default-deny.yaml"]


def _overlay(rendered: dict, kind: str, name: str) -> dict:
    return yaml_load(rendered[f"apps/training-operator-upstream/{kind.lower()}.kubeflow.{name}.yaml"])


def test_training_operator_is_the_pinned_upstream_overlay_with_mirrored_image(rendered):
    operator = load(rendered, OPERATOR_APP)
    config = config_mod.load()
    source = operator["spec"]["source"]
    assert (source["repoURL"], source["path"]) == (config.gitops.repo_url, "dist/apps/training-operator-upstream")
    deployment = _overlay(rendered, "Deployment", "training-operator")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == \
        f"{config.registry_host}/dockerhub/kubeflow/training-operator:v1-855e096"
    # The platform Application owns the kubeflow Namespace; the overlay's copy is dropped.
    assert not [p for p in rendered if p.startswith("apps/training-operator-upstream/namespace.")]
    assert operator["spec"]["destination"]["namespace"] == "kubeflow"
    assert "ServerSideApply=true" in operator["spec"]["syncPolicy"]["syncOptions"]
    assert "finalizers" not in operator["metadata"], "deleting the operator app must not delete the CRDs"


def test_the_operator_outranks_the_training_pods_it_manages(rendered):
    deployment = _overlay(rendered, "Deployment", "training-operator")
    assert deployment["spec"]["template"]["spec"]["priorityClassName"] == "system-cluster-critical"


def test_operator_crds_sync_before_any_tfjob(rendered):
    def wave(path):
        return int(load(rendered, path)["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])

    assert wave(OPERATOR_APP) == -5
    assert wave("apps/argocd/application.argocd.colocate-training.yaml") == 0
    for name in REFERENCE_JOBS:
        annotations = load(rendered, f"apps/training/tfjob.training.{name}.yaml")["metadata"]["annotations"]
        assert annotations["argocd.argoproj.io/sync-options"] == "SkipDryRunOnMissingResource=true"


def test_operator_metrics_are_scraped(rendered):
    monitor = load(rendered, "apps/training-operator/servicemonitor.kubeflow.training-operator.yaml")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["selector"] == {"matchLabels": {"app": "training-operator"}}
    assert monitor["spec"]["endpoints"][0]["port"] == "monitoring-port"
    app_file = load(rendered, "apps/argocd/application.argocd.colocate-training-operator.yaml")
    assert app_file["spec"]["source"]["path"] == "dist/apps/training-operator"


def test_an_offline_cluster_points_the_image_at_its_mirror(tmp_path):
    config = config_mod.load()
    mirrored = dataclasses.replace(config, registry_host="registry.internal:5000")
    # No jobs: the reference ones name harbor.example.com, which this cluster does not pull from.
    files = app.render_files(app.build(mirrored, jobs_dir=tmp_path))
    deployment = _overlay(files, "Deployment", "training-operator")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "registry.internal:5000/dockerhub/kubeflow/training-operator:v1-855e096"


def test_an_operator_version_without_a_known_image_tag_is_refused():
    config = dataclasses.replace(config_mod.load(), training_operator_version="v1.8.0")
    with pytest.raises(InputError, match=r"colocate.yaml:\$\.trainingOperator\.version: 'v1.8.0' has no known"):
        app.build(config)


def test_kubeconform_validates_every_tfjob_strictly_with_nothing_skipped():
    folder = DIST / "apps" / "training"
    result = kubeconform.run(sorted(folder.glob("tfjob.*.yaml")), "1.28.0")
    assert (result.valid, result.invalid, result.errors, result.skipped) == (len(REFERENCE_JOBS), 0, 0, 0), \
        result.resources


def test_colocate_check_dist_exits_0_with_the_training_layer():
    proc = colocate("check", "dist/")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 skipped" in proc.stdout and "0 errors" in proc.stdout


def test_the_operator_serves_tfjobs_only(rendered):
    """The cluster governs TFJobs alone (Kueue, the day's pause, resubmission, check): the other
    Kubeflow kinds' CRDs stay out of dist/ and the operator runs no controller for them
    (cmd/training-operator.v1/main.go@v1.7.0 --enable-scheme; by default it runs every scheme)."""
    crds = {yaml_load(t)["metadata"]["name"] for p, t in rendered.items()
            if p.startswith("apps/training-operator-upstream/customresourcedefinition.")}
    assert crds == {"tfjobs.kubeflow.org"}
    deployment = yaml_load(rendered["apps/training-operator-upstream/deployment.kubeflow.training-operator.yaml"])
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["--enable-scheme=tfjob"]
