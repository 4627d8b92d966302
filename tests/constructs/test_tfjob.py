from __future__ import annotations

import pytest
import cdk8s

from colocate.constructs.node_pool import NodePool
from colocate.model.pools import KubeletReservations, NodePoolProps, Taint
from colocate.constructs.tfjob import RoleSpec, TFJob, TFJobProps
from colocate.errors import PropError

ROLE = RoleSpec(cpu="2", memory="4Gi")
#: An all-reduce chief has the Workers' GPUs (COL116).
GPU_ROLE = RoleSpec(cpu="2", memory="4Gi", gpus=1)


def pools(chart, *, online: bool = False, cpu_only: bool = False) -> list[NodePool]:
    out = [NodePool(chart, "mixed", NodePoolProps(
        name="mixed", nodes=6, cpu="32", memory="128Gi", gpus=2,
        kubelet=KubeletReservations(system_reserved={"cpu": "500m", "memory": "4Gi"})))]
    if cpu_only:
        out.append(NodePool(chart, "cpu", NodePoolProps(name="cpu", nodes=2, cpu="64", memory="256Gi")))
    if online:
        out.append(NodePool(chart, "online", NodePoolProps(name="online", nodes=4, cpu="16", memory="64Gi",
                                                           taints=(Taint("online", "true"),))))
    return out


def synth(roles=None, pool_args=None, **overrides) -> dict[str, dict]:
    chart = cdk8s.Testing.chart()
    props = dict(name="mnist", namespace="training", image="harbor.example.com/ml/tf-mnist:2.11.0",
                 roles=roles or {"Master": GPU_ROLE, "Worker": RoleSpec(cpu="2", memory="4Gi", replicas=3, gpus=1)},
                 pools=pools(chart, **(pool_args or {})), priority_class="offline-batch", storage_class="nfs-client")
    TFJob(chart, "job", TFJobProps(**{**props, **overrides}))
    return {o["kind"]: o for o in cdk8s.Testing.synth(chart)}


def replica(objs: dict, role: str) -> dict:
    return objs["TFJob"]["spec"]["tfReplicaSpecs"][role]


def test_reference_defaults_on_every_replica():
    objs = synth()
    for role in ("Master", "Worker"):
        spec = replica(objs, role)
        pod = spec["template"]["spec"]
        container = pod["containers"][0]
        assert spec["restartPolicy"] == "OnFailure"
        assert container["name"] == "tensorflow"
        assert container["ports"] == [{"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}]
        assert pod["priorityClassName"] == "offline-batch"
        assert pod["terminationGracePeriodSeconds"] == 30
        assert "tolerations" not in pod
        assert pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "node-restriction.kubernetes.io/colocate-pool", "operator": "In", "values": ["mixed"]}]}]}


def test_requests_and_limits_default_to_each_other_and_gpus_go_in_limits_only():
    objs = synth()
    assert replica(objs, "Master")["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}}
    worker = replica(objs, "Worker")
    assert worker["replicas"] == 3
    assert worker["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}}


def test_cpu_may_burst_above_the_request():
    objs = synth(roles={"Worker": RoleSpec(cpu="2", cpu_limit="4", memory="4Gi", memory_limit="8Gi")})
    assert replica(objs, "Worker")["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "4", "memory": "8Gi"}


def test_checkpoint_claim_is_mounted_with_its_path_in_an_env_var():
    objs = synth(checkpoint_size="20Gi")
    claim = objs["PersistentVolumeClaim"]
    assert claim["metadata"] == {"name": "mnist-checkpoints", "namespace": "training",
                                 "annotations": {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
                                                 "argocd.argoproj.io/compare-options": "IgnoreExtraneous"}}
    assert claim["spec"] == {"accessModes": ["ReadWriteMany"], "storageClassName": "nfs-client",
                             "resources": {"requests": {"storage": "20Gi"}}}
    pod = replica(objs, "Master")["template"]["spec"]
    assert pod["volumes"] == [{"name": "checkpoints", "persistentVolumeClaim": {"claimName": "mnist-checkpoints"}}]
    container = pod["containers"][0]
    assert container["volumeMounts"] == [{"name": "checkpoints", "mountPath": "/mnt/checkpoints/mnist"}]
    assert container["env"][0] == {"name": "CHECKPOINT_DIR", "value": "/mnt/checkpoints/mnist"}


def test_replicas_without_gpus_hide_the_nodes_gpus_and_gpu_replicas_do_not():
    # Parameter-server shape: a CPU Chief (the coordinator) and CPU PS beside GPU Workers.
    objs = synth(roles={"Chief": ROLE, "Worker": GPU_ROLE, "PS": ROLE})
    worker_env = replica(objs, "Worker")["template"]["spec"]["containers"][0]["env"]
    for role in ("Chief", "PS"):
        assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in replica(objs, role)["template"]["spec"]["containers"][0]["env"]
    assert not [e for e in worker_env if e["name"] == "NVIDIA_VISIBLE_DEVICES"]


def test_run_policy_cleans_every_pod_and_sets_no_ttl():
    run = synth()["TFJob"]["spec"]["runPolicy"]
    assert run == {"cleanPodPolicy": "All", "backoffLimit": 3, "schedulingPolicy": {"priorityClass": "offline-batch"}}


def test_a_job_with_an_evaluator_cleans_every_pod_too():
    # None would keep a failed job's surviving pods, and their GPUs, until someone deletes the job.
    roles = {"Chief": ROLE, "Worker": ROLE, "Evaluator": ROLE}
    assert synth(roles=roles)["TFJob"]["spec"]["runPolicy"]["cleanPodPolicy"] == "All"


def test_the_clean_pod_policy_is_not_a_prop():
    with pytest.raises(TypeError, match="clean_pod_policy"):
        synth(clean_pod_policy="None")


@pytest.mark.parametrize("seconds", [30, 45, 60])
def test_a_grace_period_that_holds_a_save_is_set_on_every_replica(seconds):
    objs = synth(termination_grace_period_seconds=seconds)
    for role in ("Master", "Worker"):
        assert replica(objs, role)["template"]["spec"]["terminationGracePeriodSeconds"] == seconds


def test_ttl_is_written_when_asked_for():
    assert synth(ttl_seconds_after_finished=600)["TFJob"]["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == 600


def test_the_tfjob_waits_for_its_crd_from_another_application():
    annotations = synth()["TFJob"]["metadata"]["annotations"]
    assert annotations == {"argocd.argoproj.io/sync-options": "SkipDryRunOnMissingResource=true"}


def test_ps_spread_over_nodes_and_prefer_the_cpu_richest_pool():
    roles = {"Chief": ROLE, "Worker": RoleSpec(cpu="2", memory="4Gi", gpus=1),
             "PS": RoleSpec(cpu="4", memory="8Gi", replicas=2)}
    objs = synth(roles=roles, pool_args={"cpu_only": True})
    ps = replica(objs, "PS")["template"]["spec"]["affinity"]
    terms = ps["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["cpu", "mixed"]
    assert ps["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == [
        {"weight": 100, "preference": {"matchExpressions": [{"key": "node-restriction.kubernetes.io/colocate-pool", "operator": "In", "values": ["cpu"]}]}}]
    anti = ps["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert anti["labelSelector"]["matchLabels"] == {"training.kubeflow.org/job-name": "mnist",
                                                    "training.kubeflow.org/replica-type": "ps"}
    # GPU workers only where GPUs are.
    worker = replica(objs, "Worker")["template"]["spec"]["affinity"]["nodeAffinity"]
    assert worker["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0][
        "values"] == ["mixed"]


def test_ps_needs_no_preference_when_every_pool_is_as_cpu_rich():
    objs = synth(roles={"Chief": ROLE, "Worker": ROLE, "PS": ROLE})
    assert "preferredDuringSchedulingIgnoredDuringExecution" not in replica(objs, "PS")["template"]["spec"]["affinity"][
        "nodeAffinity"]


@pytest.mark.parametrize("roles, overrides, prop, words", [
    ({"Worker": RoleSpec(cpu="2", memory="4Gi", restart_policy="Always")}, {}, "roles.Worker.restart_policy",
     "never completes"),
    ({"Master": RoleSpec(cpu="2", memory="4Gi", replicas=2)}, {}, "roles.Master.replicas", "exactly one Master"),
    ({"Chief": ROLE, "Master": ROLE}, {}, "roles", "both Chief and Master"),
    ({"Worker": ROLE, "PS": RoleSpec(cpu="2", memory="4Gi", gpus=1)}, {}, "roles.PS.gpus", "not GPUs"),
    ({"Worker": RoleSpec(cpu="2", memory="8Gi", memory_limit="4Gi")}, {}, "roles.Worker.memory", "above the limit"),
    ({"Worker": RoleSpec(cpu="4", cpu_limit="2", memory="4Gi")}, {}, "roles.Worker.cpu", "above the limit"),
    ({"Worker": RoleSpec(memory="4Gi")}, {}, "roles.Worker.cpu", "cpu request is missing"),
    ({"Worker": RoleSpec(cpu="2")}, {}, "roles.Worker.memory", "memory request is missing"),
    ({"Worker": RoleSpec(cpu="40", memory="4Gi")}, {}, "roles.Worker.cpu/memory/gpus", "more than one node"),
    ({"Worker": RoleSpec(cpu="2", memory="4Gi", gpus=3)}, {}, "roles.Worker.cpu/memory/gpus", "more than one node"),
    ({"Worker": RoleSpec(cpu="2", memory="125Gi")}, {}, "roles.Worker.cpu/memory/gpus", "more than one node"),
    ({"Worker": RoleSpec(cpu="2", memory="2Gi", memory_limit="8Gi")}, {}, "roles.Worker.memory_limit", "2x the request"),
    ({"PS": ROLE}, {}, "roles", "needs a Chief, Master or Worker"),
    # TensorFlow 2 shapes (docs/training.md, "Job shapes"): PS needs a coordinator, all-reduce equal devices.
    ({"Worker": GPU_ROLE, "PS": ROLE}, {}, "roles", "has PS but no Chief"),
    ({"Chief": ROLE, "Worker": GPU_ROLE}, {}, "roles.Chief.gpus", "0, but each Worker has 1: without PS the job is "
     "all-reduce"),
    ({"Master": RoleSpec(cpu="2", memory="4Gi", gpus=2), "Worker": GPU_ROLE}, {}, "roles.Master.gpus", "2, but each"),
    (None, {"active_deadline_seconds": 0}, "active_deadline_seconds", ">= 1"),
    ({"Workers": ROLE}, {}, "roles.Workers", "not a TFJob replica type"),
    (None, {"image": "harbor.example.com/ml/tf-mnist:latest"}, "image", "pinned tag"),
    (None, {"name": "MNIST"}, "name", "DNS-1035"),
    # A valid object name the operator refuses (tensorflow_validation.go, NameIsDNS1035Label).
    (None, {"name": "1abc"}, "name", "'1abc' is not a DNS-1035 label"),
    (None, {"checkpoint_size": "lots"}, "checkpoint_size", "positive size"),
    (None, {"backoff_limit": -1}, "backoff_limit", ">= 0"),
    (None, {"termination_grace_period_seconds": 29}, "termination_grace_period_seconds",
     "29 is below 30: the window between SIGTERM and SIGKILL must hold one checkpoint save"),
    (None, {"termination_grace_period_seconds": 0}, "termination_grace_period_seconds", "(use 30 to 60 seconds)"),
    (None, {"termination_grace_period_seconds": 61}, "termination_grace_period_seconds",
     "61 is above 60: a preempted replica keeps its node that long"),
    (None, {"termination_grace_period_seconds": -1}, "termination_grace_period_seconds", ">= 0"),
])
def test_bad_props_are_refused_naming_the_prop(roles, overrides, prop, words):
    with pytest.raises(PropError) as err:
        synth(roles=roles, **overrides)
    assert err.value.prop == prop and words in str(err.value)
    assert str(err.value).startswith(f"TFJob '{overrides.get('name', 'mnist')}': prop '{prop}': ")


def test_a_tainted_pool_is_refused_since_training_tolerates_nothing():
    with pytest.raises(PropError) as err:
        synth(pool_args={"online": True})
    assert err.value.prop == "pools[1]" and "online=true:NoSchedule" in str(err.value)


def test_the_two_tensorflow_2_shapes_are_accepted():
    """Parameter-server training with a CPU Chief (the coordinator), and all-reduce with a GPU Chief."""
    objs = synth(roles={"Chief": ROLE, "Worker": GPU_ROLE, "PS": ROLE})
    assert "nvidia.com/gpu" not in replica(objs, "Chief")["template"]["spec"]["containers"][0]["resources"]["limits"]
    objs = synth(roles={"Chief": GPU_ROLE, "Worker": GPU_ROLE})
    assert replica(objs, "Chief")["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert synth(roles={"Worker": GPU_ROLE})["TFJob"]["spec"]["tfReplicaSpecs"].keys() == {"Worker"}


def test_active_deadline_goes_to_the_run_policy():
    assert "activeDeadlineSeconds" not in synth()["TFJob"]["spec"]["runPolicy"]
    assert synth(active_deadline_seconds=43200)["TFJob"]["spec"]["runPolicy"]["activeDeadlineSeconds"] == 43200
