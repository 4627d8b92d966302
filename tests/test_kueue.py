"""Kueue in dist/ (charts/kueue.py, constructs/training_queue.py; docs/queue.md): the manager
rendered from the vendored release with our configuration, and the training queue generated from
the model."""
from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from colocate import ROOT, app, config as config_mod
from colocate.charts.kueue import KEPT_WEBHOOK_GROUPS, KEPT_WEBHOOK_RESOURCES
from colocate.constructs.training_queue import FlavorProps, TrainingQueue, TrainingQueueProps
from colocate.errors import PropError
from colocate.model.names import QUEUE_NAME_LABEL
from tests.helpers import colocate, yaml_load

KUEUE = "apps/kueue-upstream"
QUEUE = "apps/kueue"


def queued_config() -> config_mod.Config:
    """The reference configuration, training admitted by Kueue (kueue.admitTraining: true)."""
    config = config_mod.load()
    assert config.queue, "the reference admits training through Kueue"
    return config


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    """dist/ of the reference, the queue on."""
    return app.render_files(app.build(queued_config()))


def test_capacity_says_which_jobs_wait_when_jobs_ask_for_more_than_a_night(tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for file in [*(ROOT / "jobs").glob("*.yaml"), *(ROOT / "colocate/simulate/scenarios/queue-jobs").glob("*.yaml")]:
        shutil.copyfile(file, jobs / file.name)
    files = app.render_files(app.build(queued_config(), jobs_dir=jobs))
    for path, text in files.items():
        (tmp_path / "dist" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "dist" / path).write_text(text)
    proc = colocate("capacity", str(tmp_path / "dist"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (queue,) = json.loads(proc.stdout)["queues"]
    assert queue["clusterQueue"] == "training" and queue["quota"]["gpus"] == 12
    assert queue["demand"]["gpus"] == 8 + 4 * 4 + 2, queue["demand"]
    # In name order, each job that fits what is left: the 12 GPUs hold three 4-GPU jobs (asr, bert,
    # ctr); then only tf-ps-mode, which asks for no GPU, fits.
    waiting = [j["name"] for j in queue["jobs"] if j["waits"]]
    assert waiting == ["training/late-eval", "training/recsys-train", "training/resnet-train",
                       "training/tf-mnist-dist"], queue["jobs"]
    proc = colocate("capacity", str(tmp_path / "dist"))
    assert "training/late-eval, training/recsys-train, training/resnet-train, training/tf-mnist-dist" in proc.stdout
    # What waits is suspended: neither the pool nor the namespace's quota counts it.
    assert "not counted: 4 TFJob(s) waiting in the queue" in proc.stderr, proc.stderr
    assert "mixed       nvidia.com/gpu  0           12" in proc.stdout, proc.stdout


def _of(rendered: dict[str, str], folder: str, kind: str) -> list[dict]:
    docs = [yaml_load(text) for path, text in rendered.items() if path.startswith(f"{folder}/")]
    return [d for d in docs if d["kind"] == kind]


def test_the_cluster_queue_holds_what_the_mixed_pool_holds(rendered):
    (queue,) = _of(rendered, QUEUE, "ClusterQueue")
    (flavor,) = queue["spec"]["resourceGroups"][0]["flavors"]
    quota = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
    # The same function writes the training namespace's ResourceQuota: the two cannot disagree.
    (training_quota,) = [d for d in _of(rendered, "apps/platform", "ResourceQuota") if d["metadata"]["namespace"] == "training"]
    hard = training_quota["spec"]["hard"]
    assert quota == {"cpu": hard["requests.cpu"], "memory": hard["requests.memory"], "nvidia.com/gpu": hard["requests.nvidia.com/gpu"]}
    assert quota["nvidia.com/gpu"] == "12"  # 6 mixed nodes of 2 GPUs
    # Unset in git: the day's pause owns it (colocate offline pause), and Argo CD ignores it.
    assert "stopPolicy" not in queue["spec"]
    application = yaml_load(rendered["apps/argocd/application.argocd.colocate-kueue.yaml"])
    assert application["spec"]["ignoreDifferences"] == [
        {"group": "kueue.x-k8s.io", "kind": "ClusterQueue", "jsonPointers": ["/spec/stopPolicy"]}]
    (resource_flavor,) = _of(rendered, QUEUE, "ResourceFlavor")
    # The label the jobs' required affinity names, which only the node provisioner can set.
    assert resource_flavor["spec"]["nodeLabels"] == {"node-restriction.kubernetes.io/colocate-pool": "mixed"}


def test_a_bigger_pool_is_a_bigger_quota():
    config = queued_config()
    reference = config.cluster
    pools = tuple(dataclasses.replace(p, nodes=8) if p.name == "mixed" else p for p in reference.pools)
    built = app.build(config, dataclasses.replace(reference, pools=pools))
    files = app.render_files(built)
    (queue,) = _of(files, QUEUE, "ClusterQueue")
    gpus = {r["name"]: r["nominalQuota"] for r in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert gpus["nvidia.com/gpu"] == "16"


def test_every_job_waits_in_the_training_queue(rendered):
    jobs = [yaml_load(t) for p, t in rendered.items() if p.startswith("apps/training/tfjob.")]
    assert jobs and all(j["metadata"]["labels"][QUEUE_NAME_LABEL] == "training" for j in jobs)
    (local,) = _of(rendered, QUEUE, "LocalQueue")
    assert (local["metadata"]["namespace"], local["spec"]["clusterQueue"]) == ("training", "training")


@pytest.mark.parametrize("kueue", ["absent", "not admitting"])
def test_without_the_queue_on_nothing_is_queued(kueue):
    config = config_mod.load()
    config = dataclasses.replace(config, kueue=None if kueue == "absent" else
                                 dataclasses.replace(config.kueue, admit_training=False))
    files = app.render_files(app.build(config))
    assert not [p for p in files if p.startswith((f"{KUEUE}/", f"{QUEUE}/"))]
    jobs = [yaml_load(t) for p, t in files.items() if p.startswith("apps/training/tfjob.")]
    assert jobs and not any(QUEUE_NAME_LABEL in j["metadata"].get("labels", {}) for j in jobs)


def test_argo_cd_leaves_kueue_its_fields_of_a_queued_job(rendered):
    application = yaml_load(rendered["apps/argocd/application.argocd.colocate-training.yaml"])
    (ignored,) = application["spec"]["ignoreDifferences"]
    assert ignored["kind"] == "TFJob" and ".spec.runPolicy.suspend" in ignored["jqPathExpressions"]
    # Not RespectIgnoreDifferences: a sync would write back the suspend it read when it started,
    # re-suspending a job Kueue admitted meanwhile (docs/queue.md "Argo CD").
    assert "RespectIgnoreDifferences=true" not in application["spec"]["syncPolicy"]["syncOptions"]


def test_argo_cd_never_writes_back_a_stale_stop_policy(rendered):
    application = yaml_load(rendered["apps/argocd/application.argocd.colocate-kueue.yaml"])
    (ignored,) = application["spec"]["ignoreDifferences"]
    assert ignored["kind"] == "ClusterQueue" and ignored["jsonPointers"] == ["/spec/stopPolicy"]
    assert "RespectIgnoreDifferences=true" not in application["spec"]["syncPolicy"]["syncOptions"]
    (queue,) = [yaml_load(t) for p, t in rendered.items() if p.startswith("apps/kueue/clusterqueue.")]
    assert "stopPolicy" not in queue["spec"]


def test_the_manager_admits_tfjobs_all_or_nothing(rendered):
    (configmap,) = _of(rendered, KUEUE, "ConfigMap")
    configuration = yaml_load(configmap["data"]["controller_manager_config.yaml"])
    assert configuration["integrations"] == {"frameworks": ["kubeflow.org/tfjob"]}
    assert configuration["manageJobsWithoutQueueName"] is True
    assert configuration["waitForPodsReady"]["enable"] is True
    assert configuration["waitForPodsReady"]["timeout"] == f"{config_mod.load().kueue.pods_ready_timeout_seconds}s"


def test_no_kueue_webhook_stands_between_online_and_the_api_server(rendered):
    """Every Kueue webhook fails closed: one on Deployments or Pods would stop every online
    rollout while the manager is down. Only the TFJob's and Kueue's own kinds are kept."""
    configurations = _of(rendered, KUEUE, "MutatingWebhookConfiguration") + _of(rendered, KUEUE, "ValidatingWebhookConfiguration")
    assert len(configurations) == 2
    matched = {(g, r) for c in configurations for w in c["webhooks"] for rule in w["rules"]
               for g in rule["apiGroups"] for r in rule["resources"]}
    assert ("kubeflow.org", "tfjobs") in matched
    assert all(g in KEPT_WEBHOOK_GROUPS or (g, r) in KEPT_WEBHOOK_RESOURCES for g, r in matched), matched


def test_the_manager_is_scraped_without_its_auth_proxy(rendered):
    (deployment,) = _of(rendered, KUEUE, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["manager"]
    assert "--feature-gates=VisibilityOnDemand=false" in pod["containers"][0]["args"]
    assert pod["nodeSelector"]["colocate.io/pool"] == "monitoring"
    assert not _of(rendered, KUEUE, "APIService")
    (monitor,) = _of(rendered, QUEUE, "ServiceMonitor")
    services = [s for s in _of(rendered, KUEUE, "Service") if s["metadata"]["name"].endswith("metrics-service")]
    assert [p["name"] for p in services[0]["spec"]["ports"]] == [monitor["spec"]["endpoints"][0]["port"]]


def test_a_queue_refuses_flavors_that_cover_different_resources():
    from cdk8s import App, Chart

    with pytest.raises(PropError, match=r"flavors\['cpu-only'\]\.quota"):
        TrainingQueue(Chart(App(), "c"), "q", TrainingQueueProps(
            name="q", namespaces=("training",), tiers=(),
            flavors=(FlavorProps("gpu", {}, {"cpu": "1", "nvidia.com/gpu": "1"}), FlavorProps("cpu-only", {}, {"cpu": "1"}))))
