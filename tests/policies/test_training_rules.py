"""The training rules (COL100-COL117) beyond "fires / stays clean": the exact field each
finding names, label-selector semantics, and the labels the operator gives TFJob pods."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from colocate import checker
from colocate.checker import manifests
from colocate.model import names
from colocate.checker.manifests import Doc
from colocate.model.pods import replicas
from colocate.model.scheduling import selector_matches
from colocate.policies.checks.training import _pod_label_sets

FIXTURES = Path(__file__).parent / "fixtures"
CONTAINERS = "spec.tfReplicaSpecs.Worker.template.spec.containers"

#: fail fixture -> every (rule, field) it must produce for that rule, exactly.
FIELDS = {
    "COL100/fail.yaml": {"spec.tfReplicaSpecs.Worker.restartPolicy"},
    "COL101/fail.request-only.yaml": {f"{CONTAINERS}[0].resources.limits.nvidia.com/gpu"},
    "COL101/fail.request-not-limit.yaml": {"spec.template.spec.containers[0].resources.requests.nvidia.com/gpu"},
    "COL101/fail.fractional.yaml": {"spec.template.spec.containers[0].resources.limits.nvidia.com/gpu"},
    "COL102/fail.yaml": {"metadata.namespace"},
    "COL102/fail.unlabelled-namespace.yaml": {"metadata.namespace"},
    "COL103/fail.yaml": {"spec.tfReplicaSpecs.PS.template.spec.containers[0].resources.limits.nvidia.com/gpu"},
    "COL103/fail.lowercase.yaml": {"spec.tfReplicaSpecs.ps.template.spec.containers[0].resources.limits.nvidia.com/gpu"},
    "COL104/fail.two-chiefs.yaml": {"spec.tfReplicaSpecs.Chief.replicas"},
    "COL104/fail.chief-and-master.yaml": {"spec.tfReplicaSpecs"},
    "COL104/fail.lowercase-chief-and-master.yaml": {"spec.tfReplicaSpecs"},
    "COL105/fail.yaml": {CONTAINERS},
    "COL106/fail.no-volume.yaml": {"spec.tfReplicaSpecs.Worker.template.spec.volumes"},
    "COL106/fail.not-mounted.yaml": {f"{CONTAINERS}[1].volumeMounts"},
    "COL107/fail.yaml": {"spec.tfReplicaSpecs.Worker.template.spec.terminationGracePeriodSeconds"},
    "COL107/fail.deployment.yaml": {"spec.template.spec.terminationGracePeriodSeconds"},
    "COL108/fail.empty-selector.yaml": {"spec.selector"},
    "COL108/fail.operator-label.yaml": {"spec.selector"},
    "COL108/fail.worker-0-is-master.yaml": {"spec.selector"},
    "COL108/fail.deployment.yaml": {"spec.selector"},
    "COL108/fail.alone-in-training.yaml": {"metadata.namespace"},
    "COL111/fail.yaml": {"spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources.limits.memory"},
    "COL109/fail.yaml": {"spec.runPolicy.schedulingPolicy.priorityClass"},
    "COL004/fail.tfjob.yaml": {"spec.tfReplicaSpecs.Worker.template.spec.priorityClassName"},
    "COL005/fail.tfjob.yaml": {"spec.tfReplicaSpecs.Worker.template.spec.tolerations[0]"},
    "COL005/fail.tfjob-empty-key.yaml": {"spec.tfReplicaSpecs.Worker.template.spec.tolerations[0]"},
    "COL110/fail.yaml": {"spec.tfReplicaSpecs"},
    "COL110/fail.lowercase.yaml": {"spec.tfReplicaSpecs"},
    "COL112/fail.unset.yaml": {"spec.runPolicy"},
    "COL112/fail.running.yaml": {"spec.runPolicy.cleanPodPolicy"},
    "COL113/fail.no-env.yaml": {f"{CONTAINERS}[0].env"},
    "COL113/fail.not-on-claim.yaml": {f"{CONTAINERS}[0].env[0].value"},
    "COL113/fail.read-only.yaml": {f"{CONTAINERS}[0].env[0].value"},
    "COL113/fail.shared-directory.yaml": {f"{CONTAINERS}[0].env[0].value"},
    "COL114/fail.yaml": {"spec.tfReplicaSpecs.Worker.template.spec.terminationGracePeriodSeconds"},
    "COL115/fail.digit-first.yaml": {"metadata.name"},
    "COL115/fail.dot.yaml": {"metadata.name"},
    "COL116/fail.cpu-chief.yaml": {"spec.tfReplicaSpecs.Chief.template.spec.containers"},
    "COL116/fail.lowercase-worker.yaml": {"spec.tfReplicaSpecs.Chief.template.spec.containers"},
    "COL117/fail.yaml": {"spec.tfReplicaSpecs"},
    "COL118/fail.yaml": {"kind"},
    "COL118/fail.mpijob.yaml": {"kind"},
    "COL119/fail.yaml": {"metadata.name"},
    "COL120/fail.yaml": {"spec.tfReplicaSpecs"},
    "COL120/fail-no-queue.yaml": {"metadata.labels[kueue.x-k8s.io/queue-name]"},
    "COL121/fail.yaml": {"metadata.labels[kueue.x-k8s.io/queue-name]"},
}


def test_every_training_fail_fixture_has_its_fields_listed():
    listed = {f"{p.parent.name}/{p.name}" for p in FIXTURES.glob("COL1[0-1][0-9]/fail*.yaml")}
    assert listed <= set(FIELDS), f"add the expected fields of {sorted(listed - set(FIELDS))} to FIELDS"


@pytest.mark.parametrize("fixture", sorted(FIELDS))
def test_findings_name_the_exact_field(fixture):
    result = checker.check([FIXTURES / fixture])
    rule = fixture.split("/")[0]
    assert {f.field for f in result.findings if f.rule == rule} == FIELDS[fixture]
    assert [f for f in result.findings if f.rule != rule] == [], "a fail fixture should break one rule"


def test_pdb_finding_names_the_object_and_replicas_it_selects():
    result = checker.check([FIXTURES / "COL108" / "fail.operator-label.yaml"])
    (finding,) = result.findings
    assert finding.kind == "PodDisruptionBudget" and "TFJob/training/tf-mnist-dist (Worker)" in finding.message


def test_tfjob_outside_offline_namespaces_names_the_allowed_ones():
    (finding,) = checker.check([FIXTURES / "COL102" / "fail.yaml"]).findings
    assert "offline namespace (training)" in finding.message and "online is an online namespace" in finding.message
    assert "colocate.io/tier: offline" in finding.fix


# --- label selectors (metav1.LabelSelector) ---------------------------------------------------

LABELS = {"app": "trainer", "team": "ranking"}


@pytest.mark.parametrize("selector, matches", [
    ({}, True),
    ({"matchLabels": {"app": "trainer"}}, True),
    ({"matchLabels": {"app": "trainer", "team": "search"}}, False),
    ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["ranking", "search"]}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["ranking"]}]}, False),
    ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["ranking"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]}, True),  # absent key
    ({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, True),
    ({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, False),
    ({"matchLabels": {"app": "trainer"},
      "matchExpressions": [{"key": "team", "operator": "In", "values": ["search"]}]}, False),  # ANDed
    ({"matchExpressions": [{"key": "team", "operator": "Equals", "values": ["ranking"]}]}, False),
])
def test_selector_semantics(selector, matches):
    assert selector_matches(selector, LABELS) is matches


# --- the labels training-operator v1.7.0 gives TFJob pods -------------------------------------

def _tfjob(replica_specs: dict) -> Doc:
    return Doc("job.yaml", 1, {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                               "metadata": {"name": "j", "namespace": "training"},
                               "spec": {"tfReplicaSpecs": replica_specs}})


def _labels_by_role(doc: Doc) -> dict[str, list[dict]]:
    return {pod.role: list(_pod_label_sets(pod)) for pod in manifests.pod_specs(doc)}


def _replica(replicas: int | None = None, labels: dict | None = None) -> dict:
    spec = {"template": {"metadata": {"labels": labels or {}}, "spec": {"containers": []}}}
    return spec if replicas is None else {**spec, "replicas": replicas}


def test_operator_labels_are_added_per_index_and_override_the_template():
    labels = _labels_by_role(_tfjob({"Worker": _replica(3, {"team": "ranking",
                                                            "training.kubeflow.org/job-name": "other"})}))
    workers = labels["Worker"]
    assert [w["training.kubeflow.org/replica-index"] for w in workers] == ["0", "1", "2"]
    assert all(w["training.kubeflow.org/job-name"] == "j" and w["team"] == "ranking"
               and w["training.kubeflow.org/replica-type"] == "worker"
               and w["training.kubeflow.org/operator-name"] == "tfjob-controller" for w in workers)


def test_job_role_master_is_on_the_chief_or_else_on_worker_0():
    with_chief = _labels_by_role(_tfjob({"Chief": _replica(), "Worker": _replica(2)}))
    assert with_chief["Chief"][0]["training.kubeflow.org/job-role"] == "master"
    assert all("training.kubeflow.org/job-role" not in w for w in with_chief["Worker"])
    without = _labels_by_role(_tfjob({"Worker": _replica(2), "PS": _replica(1)}))
    assert [w.get("training.kubeflow.org/job-role") for w in without["Worker"]] == ["master", None]
    assert "training.kubeflow.org/job-role" not in without["PS"][0]


def test_replicas_default_to_one_and_zero_replicas_make_no_pods():
    labels = _labels_by_role(_tfjob({"Master": _replica(), "Evaluator": _replica(0)}))
    assert len(labels["Master"]) == 1 and labels["Evaluator"] == []


def test_pod_specs_carry_the_replica_role_only_for_tfjobs():
    assert [p.role for p in manifests.pod_specs(_tfjob({"PS": _replica(), "Worker": _replica()}))] == ["PS", "Worker"]
    deployment = Doc("d.yaml", 1, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                                   "spec": {"template": {"spec": {"containers": []}}}})
    assert [p.role for p in manifests.pod_specs(deployment)] == [""]


# --- the other Kubeflow training kinds ---------------------------------------------------------

#: A TFJob of 200 privileged host-network Workers of 8 GPUs each at online-high, tolerating the
#: online taint, from an unknown registry (hostile-3.md R3-H3).
HOSTILE_WORKERS = {"replicas": 200, "restartPolicy": "OnFailure", "template": {"spec": {
    "priorityClassName": "online-high", "hostNetwork": True, "terminationGracePeriodSeconds": 3600,
    "tolerations": [{"key": "online", "operator": "Exists"}], "nodeSelector": {"role": "online"},
    "containers": [{"name": "tensorflow", "image": "evil.io/miner:1", "securityContext": {"privileged": True},
                    "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}}


def _training_job(tmp_path: Path, kind: str) -> tuple[Path, str]:
    field = names.KUBEFLOW_REPLICA_SPECS[kind]
    job = {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": "miner", "namespace": "training"},
           "spec": {"runPolicy": {"cleanPodPolicy": "All"}, field: {"Worker": HOSTILE_WORKERS}}}
    if kind == "MXJob":
        job["spec"]["jobMode"] = "MXTrain"  # required (mxnet_types.go)
    path = tmp_path / f"{kind}.yaml"
    path.write_text(json.dumps(job))
    return path, field


@pytest.mark.parametrize("kind", ["PyTorchJob", "MPIJob", "XGBoostJob", "MXJob", "PaddleJob"])
def test_every_kubeflow_kind_s_templates_get_the_findings_a_tfjob_gets(tmp_path, kind):
    tfjob, _ = _training_job(tmp_path, "TFJob")
    other, field = _training_job(tmp_path, kind)
    expected = {(f.rule, f.field.replace("spec.tfReplicaSpecs.", f"spec.{field}."))
                for f in checker.check([tfjob]).findings if f.severity == "error"}
    assert {"COL004", "COL005", "COL009", "COL050", "COL107", "COL500", "COL501"} <= {r for r, _ in expected}
    found = checker.check([other]).findings
    assert {(f.rule, f.field) for f in found if f.rule != "COL118"} == expected
    (governed,) = [f for f in found if f.rule == "COL118"]
    assert governed.severity == "error" and "TFJob" in governed.fix and "no pause" in governed.message


def test_replicas_of_every_kubeflow_kind_are_counted():
    doc = Doc("j.yaml", 1, {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j"},
                            "spec": {"pytorchReplicaSpecs": {"Master": _replica(), "Worker": _replica(7)}}})
    assert [(p.replica_key, p.role, replicas(p, 0)) for p in manifests.pod_specs(doc)] == [
        ("Master", "", 1), ("Worker", "", 7)]


def test_the_grace_period_bounds_agree_with_the_construct():
    rules = {r.id: r for r in checker.load_rules()}
    assert rules["COL107"].schema["properties"]["terminationGracePeriodSeconds"]["maximum"] == names.OFFLINE_MAX_GRACE_SECONDS
    assert f"below {names.TFJOB_MIN_GRACE_SECONDS} " in rules["COL114"].message
    assert f"at most {names.OFFLINE_MAX_GRACE_SECONDS}" in rules["COL107"].message


def test_a_checkpoint_directory_is_shared_only_between_two_jobs(tmp_path):
    # One job's replicas share their directory; a second job on the same claim and folder is named.
    text = (FIXTURES / "COL113/fail.shared-directory.yaml").read_text()
    third = text.split("---")[1].replace("tf-mnist-big", "tf-mnist-third")
    path = tmp_path / "three.yaml"
    path.write_text(text + "---" + third)
    found = [f for f in checker.check([path]).findings if f.rule == "COL113"]
    assert sorted((f.name, f.message.rsplit("(", 1)[1]) for f in found) == [
        ("tf-mnist-big", "claim shared-checkpoints, folder run, is also the checkpoint directory of "
                         "TFJob/training/tf-mnist-dist)"),
        ("tf-mnist-third", "claim shared-checkpoints, folder run, is also the checkpoint directory of "
                           "TFJob/training/tf-mnist-dist)")]
