"""What colocate runs in the cluster to steer training (constructs/training_control.py,
charts/training_control.py): the resubmitter's Deployment and the schedule's CronJobs, their
least-privilege RBAC, placement, priority and scraping; and colocate.yaml's ``schedule``."""
from __future__ import annotations

import dataclasses

import cdk8s
import pytest

from colocate import ROOT, config as config_mod
from colocate.charts.training_control import PRIORITY_CLASS, SCHEDULE_NAME
from colocate.config import Schedule
from colocate.constructs.node_pool import NodePool
from colocate.constructs.training_control import (QUEUE_SCHEDULE_RULES, ControlPod, OfflineSchedule, OfflineScheduleProps, Resubmitter,
                                                   ResubmitterProps, RESUBMITTER_RULES, SCHEDULE_RULES)
from colocate.errors import InputError, PropError
from colocate.model.names import (BLOCKED_METRIC, BUILTIN_PRIORITY_CLASSES, GIVEN_UP_METRIC, RESUBMISSIONS_METRIC, RESUBMITTER,
                                  SCRAPED_METRICS_ANNOTATION, SYNC_WAVE)
from tests.helpers import colocate, yaml_load

CONFIG = config_mod.load()
CLUSTER = CONFIG.cluster
FOLDER = "apps/training-control/"


def _objects(rendered: dict[str, str], prefix: str = FOLDER) -> list[dict]:
    return [yaml_load(text) for path, text in sorted(rendered.items())
            if path.startswith(prefix) and path.endswith(".yaml")]


def _one(rendered, kind: str, name: str) -> dict:
    found = [o for o in _objects(rendered) if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name, len(found))
    return found[0]


def _pod_specs(rendered) -> dict[str, dict]:
    out = {}
    for obj in _objects(rendered):
        if obj["kind"] == "Deployment":
            out[obj["metadata"]["name"]] = obj["spec"]["template"]["spec"]
        elif obj["kind"] == "CronJob":
            out[obj["metadata"]["name"]] = obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return out


# -- RBAC: namespaced, exactly what the commands call --------------------------------------------

def test_nothing_cluster_wide_is_granted_but_the_one_cluster_queue_the_schedule_holds(rendered):
    kinds = {o["kind"] for o in _objects(rendered)}
    assert {"Role", "RoleBinding", "ServiceAccount"} <= kinds
    assert CONFIG.queue, "the reference admits training through Kueue"
    (role,) = [o for o in _objects(rendered) if o["kind"] == "ClusterRole"]
    assert role["rules"] == [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"],
                              "resourceNames": [CLUSTER.training_queue], "verbs": ["get", "patch"]}]
    (binding,) = [o for o in _objects(rendered) if o["kind"] == "ClusterRoleBinding"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SCHEDULE_NAME,
                                    "namespace": CLUSTER.control_namespace}]


def test_each_service_account_gets_its_rules_in_the_training_namespace_only(rendered):
    ns, training = CLUSTER.control_namespace, CLUSTER.training_namespace
    roles = {(o["metadata"]["namespace"], o["metadata"]["name"]): o["rules"]
             for o in _objects(rendered) if o["kind"] == "Role"}
    assert roles == {
        (training, RESUBMITTER): list(RESUBMITTER_RULES),
        # With the queue the schedule holds the ClusterQueue, not the TFJobs: in training it only
        # lists the paused pods, which resume waits for.
        (training, SCHEDULE_NAME): list(QUEUE_SCHEDULE_RULES if CONFIG.queue else SCHEDULE_RULES),
        (ns, RESUBMITTER): [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [RESUBMITTER],
             "verbs": ["get", "update"]}],
    }
    # The schedule may only read and patch TFJobs and list pods (resume waits for a paused job's
    # pods to be gone): no create or delete, no pod writes.
    assert SCHEDULE_RULES == ({"apiGroups": ["kubeflow.org"], "resources": ["tfjobs"], "verbs": ["get", "list", "patch"]},
                              {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]})
    for obj in _objects(rendered):
        if obj["kind"] == "RoleBinding":
            name = obj["metadata"]["name"]
            assert obj["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
            assert obj["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": ns}]


def test_every_pod_runs_as_the_service_account_its_roles_are_bound_to(rendered):
    specs = _pod_specs(rendered)
    assert specs[RESUBMITTER]["serviceAccountName"] == RESUBMITTER
    for name in (f"{SCHEDULE_NAME}-pause-training", f"{SCHEDULE_NAME}-resume-training"):
        assert specs[name]["serviceAccountName"] == SCHEDULE_NAME


# -- the resubmitter's Deployment -------------------------------------------------------------------

def test_the_resubmitter_runs_the_leads_interface_twice(rendered):
    deployment = _one(rendered, "Deployment", RESUBMITTER)
    assert deployment["metadata"]["namespace"] == CLUSTER.control_namespace
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == CONFIG.colocate_image == f"harbor.example.com/platform/colocate:{CONFIG.release}"
    assert container["args"] == ["resubmitter", "--namespace", CLUSTER.training_namespace, "--metrics-port", "8080",
                                 "--lease-namespace", CLUSTER.control_namespace, "--max-resubmissions", "5",
                                 "--backoff-seconds", "30"]
    resources = container["resources"]
    assert set(resources["requests"]) == set(resources["limits"]) == {"cpu", "memory"}
    assert resources["requests"]["memory"] == resources["limits"]["memory"]


def test_training_cannot_starve_it_priority_above_offline_and_a_pool_training_cannot_use(rendered):
    offline = CLUSTER.tier("offline")
    pool = CLUSTER.pool(CLUSTER.monitoring_pool)
    for name, spec in _pod_specs(rendered).items():
        assert spec["priorityClassName"] == PRIORITY_CLASS and BUILTIN_PRIORITY_CLASSES[PRIORITY_CLASS] > offline.value
        assert spec["nodeSelector"] == pool.node_labels, name
        assert spec["tolerations"] == pool.tolerations(), name
    # ... and no TFJob pod tolerates the monitoring pool's taint, so none can land there.
    taint = CLUSTER.monitoring_taint.key
    for tfjob in _objects(rendered, "apps/training/"):
        if tfjob["kind"] != "TFJob":
            continue
        for spec in tfjob["spec"]["tfReplicaSpecs"].values():
            tolerated = {t.get("key") for t in spec["template"]["spec"].get("tolerations") or []}
            assert taint not in tolerated and None not in tolerated, tfjob["metadata"]["name"]


def test_the_pods_pass_the_restricted_level_of_their_namespace(rendered):
    namespace = _one(rendered, "Namespace", CLUSTER.control_namespace)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for spec in _pod_specs(rendered).values():
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        (container,) = spec["containers"]
        assert container["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                                "capabilities": {"drop": ["ALL"]}}


def test_prometheus_scrapes_it_keeping_the_tfjobs_namespace_label(rendered):
    monitor = _one(rendered, "ServiceMonitor", RESUBMITTER)
    assert CLUSTER.monitor_labels.items() <= monitor["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics", "interval": "30s",
                                             "honorLabels": True}]
    declared = monitor["metadata"]["annotations"][SCRAPED_METRICS_ANNOTATION]
    assert declared == f"{GIVEN_UP_METRIC}:gauge,{BLOCKED_METRIC}:gauge,{RESUBMISSIONS_METRIC}:counter"
    service = _one(rendered, "Service", RESUBMITTER)
    assert service["spec"]["selector"] == monitor["spec"]["selector"]["matchLabels"]
    policy = _one(rendered, "NetworkPolicy", f"{RESUBMITTER}-ingress")
    assert policy["spec"]["ingress"] == [{
        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": CLUSTER.monitoring_namespace}}}],
        "ports": [{"port": 8080, "protocol": "TCP"}]}]


def test_its_own_application_syncs_before_the_tfjobs(rendered):
    app = yaml_load(rendered["apps/argocd/application.argocd.colocate-training-control.yaml"])
    assert app["spec"]["source"]["path"] == "dist/apps/training-control"
    training = yaml_load(rendered["apps/argocd/application.argocd.colocate-training.yaml"])
    assert int(app["metadata"]["annotations"][SYNC_WAVE]) < int(training["metadata"]["annotations"][SYNC_WAVE])


# -- the schedule's CronJobs ---------------------------------------------------------------------

def test_pause_runs_before_the_peak_and_resume_at_its_end_in_the_configured_zone(rendered):
    s = CONFIG.schedule
    assert (s.time_zone, s.peak_start, s.peak_end, s.pause_lead_minutes) == ("Asia/Shanghai", 8 * 60, 22 * 60, 10)
    for action, schedule in (("pause", "50 7 * * *"), ("resume", "0 22 * * *")):
        cronjob = _one(rendered, "CronJob", f"{SCHEDULE_NAME}-{action}-{CLUSTER.training_namespace}")
        spec = cronjob["spec"]
        assert spec["schedule"] == schedule and spec["timeZone"] == "Asia/Shanghai"
        assert spec["concurrencyPolicy"] == "Forbid" and spec["startingDeadlineSeconds"] == 3600
        pod = spec["jobTemplate"]["spec"]["template"]["spec"]
        assert pod["restartPolicy"] == "Never"
        assert pod["containers"][0]["args"] == ["offline", action, "--cluster-queue", CLUSTER.training_queue,
                                                "--namespace", CLUSTER.training_namespace]


@pytest.mark.parametrize("start, end, lead, pause, resume", [
    ("20:00", "02:00", 10, "50 19 * * *", "0 2 * * *"),   # a peak over midnight
    ("00:05", "18:30", 10, "55 23 * * *", "30 18 * * *"),  # the lead reaches back into the day before
    ("08:00", "22:00", 0, "0 8 * * *", "0 22 * * *"),
])
def test_schedule_times_wrap_around_midnight(start, end, lead, pause, resume):
    def minutes(t: str) -> int:
        return int(t[:2]) * 60 + int(t[3:])
    chart = cdk8s.Testing.chart()
    pool = NodePool(chart, "pool", CLUSTER.pool(CLUSTER.monitoring_pool))
    OfflineSchedule(chart, "s", OfflineScheduleProps(
        name="x", namespace="control", training_namespaces=("training",),
        schedule=Schedule("UTC", minutes(start), minutes(end), lead),
        pod=ControlPod("harbor.example.com/platform/colocate:1.0.0", PRIORITY_CLASS, pool)))
    got = {o["metadata"]["name"]: o["spec"]["schedule"] for o in cdk8s.Testing.synth(chart) if o["kind"] == "CronJob"}
    assert got == {"x-pause-training": pause, "x-resume-training": resume}


def _pool_pod(chart) -> ControlPod:
    pool = NodePool(chart, "pool", CLUSTER.pool(CLUSTER.monitoring_pool))
    return ControlPod("harbor.example.com/platform/colocate:1.0.0", PRIORITY_CLASS, pool)


@pytest.mark.parametrize("change, prop, words", [
    ({"namespace": "training"}, "namespace", "is a training namespace"),
    ({"training_namespaces": ()}, "training_namespaces", "at least one"),
    ({"training_namespaces": ("t", "t")}, "training_namespaces", "each once"),
    ({"replicas": 0}, "replicas", ">= 1"),
    ({"monitor_labels": {}}, "monitor_labels", "Prometheus would not scrape it"),
    ({"cpu": "2", "cpu_limit": "1"}, "cpu", "above cpu_limit"),
])
def test_resubmitter_props_are_refused_with_the_prop_named(change, prop, words):
    chart = cdk8s.Testing.chart()
    props = ResubmitterProps(name="r", namespace="control", training_namespaces=("training",), pod=_pool_pod(chart),
                             monitor_labels={"release": "kps"})
    with pytest.raises(PropError, match=rf"prop '{prop}'.*{words}"):
        Resubmitter(chart, "r", dataclasses.replace(props, **change))


def test_a_cronjob_name_the_api_server_would_refuse_stops_synth():
    chart = cdk8s.Testing.chart()
    with pytest.raises(PropError, match=r"prop 'name'.*at most 52"):
        OfflineSchedule(chart, "s", OfflineScheduleProps(
            name="x" * 30, namespace="control", training_namespaces=("a-long-training-namespace",),
            schedule=Schedule("UTC", 480, 1320), pod=_pool_pod(chart)))


def test_without_a_schedule_section_no_cronjob_is_written(tmp_path):
    from colocate import app
    files = app.render_files(app.build(dataclasses.replace(CONFIG, schedule=None)))
    assert not [p for p in files if p.startswith(FOLDER + "cronjob.")]
    assert [p for p in files if p.startswith(FOLDER + "deployment.")]


# -- colocate.yaml schedule: bad input is one clear line, exit 2 ---------------------------------

def _config_with(tmp_path, text_edit) -> str:
    text = text_edit((ROOT / "colocate.yaml").read_text())
    (tmp_path / "colocate.yaml").write_text(text)
    return str(tmp_path / "colocate.yaml")


@pytest.mark.parametrize("old, new, words", [
    ("timeZone: Asia/Shanghai", "timeZone: Asia/Shangai",
     "$.schedule.timeZone: 'Asia/Shangai' is not an IANA time zone (did you mean 'Asia/Shanghai'?)"),
    ("timeZone: Asia/Shanghai", "timeZone: Local", "$.schedule.timeZone: 'Local' is the node's zone"),
    ('start: "08:00"', "start: 8:00", "$.schedule.dayPeak.start: 480 is a number: YAML reads an unquoted 8:00 as 480"),
    ('start: "08:00"', 'start: "8am"', "$.schedule.dayPeak.start: '8am' is not a time of day: write HH:MM"),
    ('end: "22:00"', 'end: "24:00"', "$.schedule.dayPeak.end: '24:00' is not a time of day"),
    ('end: "22:00"', 'end: "08:00"', "$.schedule.dayPeak.end: '08:00' is when the peak starts"),
    ("pauseLeadMinutes: 10", "pauseLeadMinutes: 700", "$.schedule.pauseLeadMinutes: 700 is greater than the maximum"),
    ('{start: "08:00", end: "22:00"}', '{start: "08:00", end: "07:55"}',
     "$.schedule.pauseLeadMinutes: 10 minutes before 08:00 is not after the peak's end (07:55)"),
    ("  timeZone: Asia/Shanghai\n", "", "$.schedule: 'timeZone' is a required property"),
])
def test_a_bad_schedule_stops_synth_with_one_line_naming_the_key(tmp_path, old, new, words):
    config = _config_with(tmp_path, lambda text: text.replace(old, new, 1))
    proc = colocate("--config", config, "synth", "--outdir", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert words in lines[0], lines[0]
    assert not (tmp_path / "out").exists()


def test_a_bad_image_project_is_refused_with_its_key(tmp_path):
    config = _config_with(tmp_path, lambda text: text.replace("imageProject: platform", "imageProject: Platform", 1))
    with pytest.raises(InputError, match=r"\$\.registry\.imageProject: 'Platform' is not a Harbor project name"):
        config_mod.load(__import__("pathlib").Path(config))
