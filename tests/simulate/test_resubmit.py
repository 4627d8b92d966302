"""Training that gives way comes back, in the real components: kube-scheduler preempts, the
taint manager and the Eviction API evict, training-operator v1.7.0 fails the TFJob, and
``colocate resubmitter`` (this checkout's code, a host process) re-creates it; Argo CD v2.10.15
keeps it Synced. Each test asserts the components' own words: conditions, Events, metrics.

One cluster per module: ``peaks`` plays peak, night, peak, night; ``live`` runs the night and
then, in the running cluster, a genuine failure, a job at its cap, pause and resume, and a lost node."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml

from colocate import ROOT
from colocate.incluster import offline
from colocate.incluster.kube import ClusterQueues, TFJobs, api_client
from colocate.model.names import (DISRUPTION_ANNOTATION, GIVEN_UP_METRIC, JOB_NAME_LABEL, MAX_RESUBMISSIONS_ANNOTATION,
                                   RESUBMISSIONS_ANNOTATION)
from colocate.simulate import components, run, scenario, steps
from colocate.simulate.local_cluster import ControlPlane
from tests.simulate.test_simulate import simulate, survivors, tagged
from tests.helpers import wait_for, yaml_load

DIST = ROOT / "dist"
TFJOBS = "/apis/kubeflow.org/v1/namespaces/training/tfjobs"
ROLES = {"chief", "worker", "ps"}


def _role(pod: str) -> str:
    """``training/tf-ps-mode-ps-1`` -> ``ps``."""
    return pod.rsplit("-", 2)[-2]


# --- T0: without the resubmitter, the operator alone -----------------------------------------

#: An online service that needs a whole mixed node's CPU (and no GPU): at its peak, one replica per
#: mixed node, so the scheduler preempts every training pod there, Chief, Worker and PS alike.
#: (The reference peak is GPU-bound: it preempts only GPU Workers.)
HUNGRY = "Deployment/online/cpu-hungry"


@pytest.fixture(scope="module")
def hungry(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hungry")
    dist = root / "dist"
    shutil.copytree(DIST, dist)
    doc = yaml_load((DIST / "apps/online/deployment.online.recsys-inference.yaml").read_text())
    doc["metadata"]["name"] = "cpu-hungry"
    doc["metadata"]["annotations"]["colocate.io/peak-replicas"] = "6"
    doc["spec"]["replicas"] = 0
    doc["spec"]["selector"]["matchLabels"] = doc["spec"]["template"]["metadata"]["labels"] = {
        "app.kubernetes.io/name": "cpu-hungry"}
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["name"] = "cpu-hungry"
    container["resources"] = {kind: {"cpu": "31", "memory": "64Gi"} for kind in ("requests", "limits")}
    # No GPU on a pool with GPUs: it hides them, or the admission policy COL070 refuses it.
    container["env"] = [*(e for e in container.get("env") or [] if e.get("name") != "NVIDIA_VISIBLE_DEVICES"),
                        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    (dist / "apps/online/deployment.online.cpu-hungry.yaml").write_text(yaml.safe_dump(doc))
    return dist


@pytest.fixture(scope="module")
def alone(hungry):
    file = hungry.parent / "hungry-peak.yaml"
    file.write_text(yaml.safe_dump({"name": "hungry-peak", "offlineMayWait": True, "scale": {HUNGRY: 6}}))
    return simulate(str(hungry), "--scenario", str(file), "--no-resubmitter")


def test_t0_without_the_resubmitter_every_preempted_tfjob_ends_failed_and_is_named(alone):
    proc, report = alone
    assert proc.returncode == 1 and not report["ok"], report["verdict"]
    lost = report["disrupted_pods"]
    assert lost and set(report["failed_by_preemption"]) == set(lost), report
    # A preempted Chief, Worker and PS each fail their job (training-operator v1.7.0's own message).
    roles = {_role(pod) for pods in lost.values() for pod in pods}
    assert roles >= ROLES, lost
    for job in lost:
        assert report["tfjobs"][job] == "Failed"
        assert "has failed because" in report["tfjob_messages"][job], report["tfjob_messages"][job]
    assert report["resubmissions"] == {}
    assert f"TFJob {sorted(lost)[0]} Failed by disruption" in report["verdict"]


# --- T1, T5: two peaks in a row, with the resubmitter and Argo CD ---------------------------------

@pytest.fixture(scope="module")
def peaks(hungry):
    file = hungry.parent / "two-peaks.yaml"
    file.write_text(yaml.safe_dump({"name": "two-peaks", "offlineMayWait": True, "steps": [
        {"name": "peak 1", "scale": {HUNGRY: 6}}, {"name": "night 1", "scale": {HUNGRY: 0}},
        {"name": "peak 2", "scale": {HUNGRY: 6}}, {"name": "night 2", "scale": {HUNGRY: 0}}]}))
    seen: dict = {}

    def inspect(cp: ControlPlane) -> None:
        seen["jobs"] = cp.items(TFJOBS)
        seen["pods"] = [p for p in cp.items("/api/v1/namespaces/training/pods")]
        seen["app"] = cp.request("GET", "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/colocate-training")

    with tagged():
        obs, _ = run.simulate(hungry, scenario.load(str(file)), log=lambda line: None, inspect=inspect)
    return obs, seen


def test_t1_preempted_tfjobs_are_resubmitted_wait_out_the_peak_and_run_after_it(peaks):
    obs, seen = peaks
    assert obs.ok, (obs.failed_jobs, obs.failed_creates, obs.rejected, obs.failing_pending, obs.unplaced_online_steps)
    first, night, second, last = obs.steps
    assert first.preemptions and first.resubmissions, first
    assert first.online_placed == first.online_desired and not first.unplaced_online
    assert first.training_pending, "resubmitted jobs wait for capacity during the peak"
    assert "Failed" not in first.tfjobs.values(), first.tfjobs
    for after in (night, last):
        assert set(after.tfjobs.values()) == {"Running"} and after.training_pending == 0, after
    assert second.preemptions and second.resubmissions, second


def test_t1_a_resubmitted_job_mounts_the_same_claim_and_counts_its_resubmissions(peaks):
    obs, seen = peaks
    resubmitted = {name.split("/")[1] for name in obs.resubmissions}
    assert resubmitted
    for job in seen["jobs"]:
        name = job["metadata"]["name"]
        if name not in resubmitted:
            continue
        assert int(job["metadata"]["annotations"][RESUBMISSIONS_ANNOTATION]) == len(obs.resubmissions[f"training/{name}"])
        assert DISRUPTION_ANNOTATION not in job["metadata"]["annotations"]
        claims = {v["persistentVolumeClaim"]["claimName"] for p in seen["pods"]
                  if p["metadata"]["labels"].get(JOB_NAME_LABEL) == name
                  for v in p["spec"].get("volumes") or [] if "persistentVolumeClaim" in v}
        assert claims == {f"{name}-checkpoints"}, claims


def test_t5_argo_cd_keeps_the_resubmitted_jobs_synced_with_no_sync_loop(peaks):
    obs, seen = peaks
    app = seen["app"]["status"]
    assert app["sync"]["status"] == "Synced" and app["health"]["status"] in ("Healthy", "Progressing"), app["sync"]
    # A sync loop syncs again with nothing new to sync. The resubmitter deletes a TFJob and creates
    # it again at once; should Argo CD's self-heal see it missing in between, it re-creates it from
    # git first, one operation the resubmitter then carries its count onto (docs/resubmission.md).
    # So a step adds at most one operation per resubmission, and a step without any adds none.
    operations = [s.argocd_operations["colocate-training"] for s in obs.steps]
    added = [after - before for before, after in zip(operations, operations[1:])]
    assert all(0 <= n <= step.resubmissions for n, step in zip(added, obs.steps[1:])), (
        operations, [s.resubmissions for s in obs.steps], app.get("operationState"))
    if operations[-1] > operations[0]:  # the last one was such a re-creation, in Argo CD's own words
        results = app["operationState"]["syncResult"]["resources"]
        assert any(r["kind"] == "TFJob" and r.get("message", "").endswith(" created") for r in results), results
    # The resubmitted objects still carry Argo CD's tracking label.
    for job in seen["jobs"]:
        assert job["metadata"]["labels"].get("app.kubernetes.io/instance") == "colocate-training", job["metadata"]


# --- T2, T3, T4, T6 in one running cluster ---------------------------------------------------------

def _wait(what: str, done, timeout: float = 90.0):
    return wait_for(what, done, timeout)


def _small_job(name: str, annotations: dict | None = None, restart: str = "OnFailure") -> dict:
    """tf-ps-mode as a new CPU job (from the reference, so it passes quota and LimitRange), with its
    labels: Kueue's queue among them, without which it would wait suspended for ever."""
    job = yaml_load((DIST / "apps/training/tfjob.training.tf-ps-mode.yaml").read_text())
    job["metadata"] = {"name": name, "namespace": "training", "labels": job["metadata"].get("labels") or {},
                       "annotations": annotations or {}}
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["restartPolicy"] = restart
    return job


def _state(cp: ControlPlane, name: str) -> str:
    from colocate.simulate.observe import tfjob_state
    return tfjob_state(cp.request("GET", f"{TFJOBS}/{name}"))


def _pods(cp: ControlPlane, job: str) -> list[dict]:
    return [p for p in cp.items(f"/api/v1/namespaces/training/pods?labelSelector={JOB_NAME_LABEL}%3D{job}")]


def _running(cp: ControlPlane, job: str) -> bool:
    pods = _pods(cp, job)
    return bool(pods) and all(p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
                              for p in pods)


def _events(cp: ControlPlane, name: str, reason: str) -> list[str]:
    return [e["message"] for e in cp.items("/api/v1/namespaces/training/events")
            if e["involvedObject"].get("name") == name and e.get("reason") == reason]


@pytest.fixture(scope="module")
def live():
    found: dict = {}

    def inspect(cp: ControlPlane) -> None:
        jobs = TFJobs(api_client(str(cp.kubeconfig)))
        log = cp.logs / "resubmitter.log"
        # T2: a genuine failure: a replica exits 1 (the kubelet's report, written as it would) with
        # restartPolicy Never, no disruption.
        jobs.create("training", _small_job("fails-genuinely", restart="Never"))
        _wait("fails-genuinely to run", lambda: _running(cp, "fails-genuinely"))
        pod = _pods(cp, "fails-genuinely")[0]
        uid = cp.request("GET", f"{TFJOBS}/fails-genuinely")["metadata"]["uid"]
        cp.request("PATCH", f"/api/v1/namespaces/training/pods/{pod['metadata']['name']}/status", {"status": {
            "phase": "Failed", "containerStatuses": [{
                "name": "tensorflow", "image": pod["spec"]["containers"][0]["image"], "ready": False, "restartCount": 0,
                "imageID": "", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}},
            content_type="application/strategic-merge-patch+json")
        _wait("the operator to fail it", lambda: _state(cp, "fails-genuinely") == "Failed")
        _wait("the resubmitter to pass it over", lambda: "TFJob training/fails-genuinely Failed, not resubmitted"
              in log.read_text())
        found["genuine"] = (uid, cp.request("GET", f"{TFJOBS}/fails-genuinely"),
                            _events(cp, "fails-genuinely", "Resubmitted"))

        # T3: a job at its cap (0), evicted through the Eviction API.
        jobs.create("training", _small_job("capped", {MAX_RESUBMISSIONS_ANNOTATION: "0"}))
        _wait("capped to run", lambda: _running(cp, "capped"))
        victim = _pods(cp, "capped")[0]["metadata"]["name"]
        cp.request("POST", f"/api/v1/namespaces/training/pods/{victim}/eviction", {
            "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": victim, "namespace": "training"}})
        found["gave_up"] = _wait("ResubmissionGivenUp on capped", lambda: _events(cp, "capped", "ResubmissionGivenUp"))
        found["capped"] = cp.request("GET", f"{TFJOBS}/capped")
        found["metrics"] = urllib.request.urlopen(cp.metrics["resubmitter"], timeout=10).read().decode()

        # T4: pause, then resume at once while the pods are still terminating. With Kueue (the
        # reference) the schedule holds the ClusterQueue: Kueue suspends every admitted job, and
        # resume waits for the paused pods to be gone before it releases the queue (Kueue would
        # readmit a job whose pods still terminate, which v1.7.0 fails).
        before = {j["metadata"]["name"]: j["metadata"]["uid"] for j in cp.items(TFJOBS)
                  if _state(cp, j["metadata"]["name"]) == "Running"}
        queues = ClusterQueues(api_client(str(cp.kubeconfig)))
        paused = offline.hold(queues, "training", "pause")
        _wait("the paused jobs to be Suspended", lambda: all(_state(cp, n) == "Suspended" for n in before))
        found["terminating"] = sum(1 for n in before for p in _pods(cp, n) if p["metadata"].get("deletionTimestamp"))
        resumed = offline.hold(queues, "training", "resume", jobs=jobs, namespaces=("training",), wait_seconds=60)
        _wait("the resumed jobs to run", lambda: all(_running(cp, n) and _state(cp, n) == "Running" for n in before),
              timeout=120)
        found["pause"] = (before, paused, resumed, {n: _state(cp, n) for n in before},
                          {j["metadata"]["name"]: j["metadata"]["uid"] for j in cp.items(TFJOBS)})

        # T6: a mixed node is lost at night, one that runs training and an online pod (online grows
        # to 6 replicas first: 4 on the online pool, 2 on mixed nodes, no preemption needed).
        run._scale_to(cp, {"Deployment/online/recsys-inference": 6}, "T6")
        run._settle(cp, True)
        pods = [p for p in cp.items("/api/v1/pods") if p["spec"].get("nodeName", "").startswith("mixed-")]
        shared = sorted({p["spec"]["nodeName"] for p in pods if p["metadata"]["namespace"] == "online"}
                        & {p["spec"]["nodeName"] for p in pods if JOB_NAME_LABEL in p["metadata"].get("labels", {})})
        assert shared, "no mixed node runs both an online and a training pod"
        lost = shared[0]
        on_lost = [p for p in pods if p["spec"]["nodeName"] == lost]
        steps.out_of_service(cp, lost)
        found["lost"] = (lost, [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in on_lost])
        run._settle(cp, True)

        # Two replicas: a second resubmitter waits on the Lease; when the leader stops, it leads.
        # In dist/'s namespace for it: the simulation runs it as dist/'s ServiceAccount.
        lease = "/apis/coordination.k8s.io/v1/namespaces/colocate-system/leases/colocate-resubmitter"
        first = cp.request("GET", lease)["spec"]["holderIdentity"]
        components.start_resubmitter(cp, ["training"], name="resubmitter-2")
        second_log = cp.logs / "resubmitter-2.log"
        _wait("the second replica to start", lambda: "metrics on" in second_log.read_text())
        found["lease"] = [cp.request("GET", lease)["spec"]["holderIdentity"], "leading" in second_log.read_text()]
        name, proc = next((n, p) for n, p in cp.processes if n == "resubmitter")
        proc.terminate()
        proc.wait(timeout=30)
        cp.processes.remove((name, proc))
        _wait("the second replica to lead", lambda: "leading" in second_log.read_text(), timeout=60)
        found["lease"] += [first, cp.request("GET", lease)["spec"]["holderIdentity"], proc.returncode]

    with tagged():
        obs, _ = run.simulate(DIST, scenario.load("night"), log=lambda line: None, inspect=inspect,
                              keep_base=True)
    return obs, found


def test_t2_a_genuinely_failing_job_is_not_resubmitted(live):
    obs, found = live
    uid, job, resubmitted = found["genuine"]
    assert job["metadata"]["uid"] == uid and resubmitted == []
    assert "has failed because 1" in job["status"]["conditions"][-1]["message"], job["status"]
    assert "training/fails-genuinely" not in obs.resubmissions


def test_t3_a_job_at_its_cap_is_given_up_with_an_event_and_the_alert_fires(live, tmp_path):
    obs, found = live
    assert any("its cap is 0" in m for m in found["gave_up"]), found["gave_up"]
    assert _state_of(found["capped"]) == "Failed"
    assert json.loads(found["capped"]["metadata"]["annotations"][DISRUPTION_ANNOTATION])["reason"] == "EvictionByEvictionAPI"
    series = [line for line in found["metrics"].splitlines() if line.startswith(GIVEN_UP_METRIC + "{")]
    assert series == [f'{GIVEN_UP_METRIC}{{namespace="training",tfjob="capped"}} 1.0'], series
    _promtool_alert_fires(tmp_path, series[0])


def _state_of(job: dict) -> str:
    from colocate.simulate.observe import tfjob_state
    return tfjob_state(job)


def _promtool_alert_fires(tmp: Path, sample: str) -> None:
    """The alert dist/ ships on the gauge, fed the series the live controller exposed (promtool)."""
    rules = [f for f in (DIST / "apps").rglob("prometheusrule.*.yaml")
             if GIVEN_UP_METRIC in f.read_text()]
    assert rules, f"no PrometheusRule in dist/ alerts on {GIVEN_UP_METRIC}"
    groups = [g for f in rules for g in yaml_load(f.read_text())["spec"]["groups"]]
    alert = next(r for g in groups for r in g["rules"] if r.get("alert") == "ColocateTFJobResubmissionGivenUp")
    assert GIVEN_UP_METRIC in alert["expr"], alert
    (tmp / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    metric, value = sample.rsplit(" ", 1)
    # Prometheus adds the target's job label at the scrape: the resubmitter's Service name, which its
    # ServiceMonitor in dist/ selects (honorLabels keeps the series' own namespace).
    service = next(yaml_load(f.read_text()) for f in (DIST / "apps").rglob("service.*.yaml")
                   if "colocate-resubmitter" in f.name)
    metric = metric.replace("{", f'{{job="{service["metadata"]["name"]}",', 1)
    labels = {"namespace": "training", "tfjob": "capped"}
    rendered = {k: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m[1]], v)
                for k, v in alert.get("annotations", {}).items()}
    (tmp / "test.yaml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yaml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": [{"series": metric, "values": f"{float(value):g}x60"}],
                   "alert_rule_test": [{"eval_time": "45m", "alertname": alert["alert"], "exp_alerts": [
                       {"exp_labels": {**alert.get("labels", {}), **labels}, "exp_annotations": rendered}]}]}]}))
    proc = subprocess.run(["promtool", "test", "rules", "test.yaml"], cwd=tmp, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_t4_pause_then_resume_suspends_without_failing_and_runs_again(live):
    _, found = live
    before, paused, resumed, states, after = found["pause"]
    assert before and [c.name for c in paused] == ["training"] == [c.name for c in resumed], (paused, resumed)
    assert found["terminating"], "resume ran while paused pods were still terminating"
    assert set(states.values()) == {"Running"}, states
    assert {n: after[n] for n in before} == before, "a paused job is the same object, never re-created"


def test_t6_a_lost_node_evicts_its_training_and_online_pods_and_the_jobs_come_back(live):
    obs, found = live
    node, pods = found["lost"]
    training = [p for p in pods if p.startswith("training/")]
    online = [p for p in pods if p.startswith("online/")]
    assert training and online, pods
    # The taint manager's own event on each pod it evicted (TaintManagerEviction).
    assert set(training) | set(online) <= set(obs.evicted), (pods, obs.evicted)
    evicted_jobs = {job for job in obs.tfjobs if any(p.startswith(job + "-") for p in training)}
    for job in evicted_jobs:
        assert job in obs.resubmissions, (job, obs.resubmissions)
        assert obs.tfjobs[job] in ("Running", "Created"), obs.tfjobs[job]
    # The online pods are placed again, none on the lost node; nothing else failed.
    placed = [p for p in obs.pods if p.tier == "online"]
    assert len(placed) == 6 and all(p.node and p.node != node for p in placed), placed
    assert not {f"{p.namespace}/{p.name}" for p in placed} & set(online)
    assert set(obs.failed_jobs) <= {"training/fails-genuinely", "training/capped"}, obs.failed_jobs
    for p in obs.pending:
        assert p.tier == "offline" and p.reason, p


def test_two_replicas_one_leads_and_the_other_takes_over(live):
    _, found = live
    holder, second_led_early, first, holder_after, exit_code = found["lease"]
    assert holder == first and not second_led_early, found["lease"]
    assert holder_after != first and exit_code == 0, found["lease"]


def test_no_process_survives(alone, peaks, live):
    assert survivors() == []
