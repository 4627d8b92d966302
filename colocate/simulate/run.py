"""One simulation: the control plane, kwok nodes shaped like the pools, the training-operator,
dist/ applied, the scenario played, and what the cluster did read back."""
from __future__ import annotations

import shutil
import time
import urllib.error
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from colocate.rules import admission
from colocate import config as config_mod
from colocate.base import safe_yaml
from colocate.errors import InputError
from colocate.model.names import BLOCKED_REASON, JOB_NAME_LABEL, PEAK_REPLICAS_ANNOTATION, TIER_LABEL
from colocate.base.data_files import display
from colocate.incluster.resubmit import policy as resubmit_policy
from colocate.simulate import argocd, components, kept, kueue, nodes, observe, rollouts, stand_ins, steps as steps_mod, toolchain
from colocate.simulate.local_cluster import ControlPlane, SimulationError, refusal
from colocate.simulate.scenario import Scenario

#: Job files to (job name, dist/-relative path -> text), as synth writes them (colocate.app.job_files).
RenderJobs = Callable[[Sequence[Path]], Sequence[tuple[str, Mapping[str, str]]]]

#: The cluster has settled when nothing it reports changed for this long (the scheduler retries an
#: unschedulable pod after at most 10 s, kube-scheduler's default podMaxBackoffSeconds, but any
#: cluster event moves it sooner).
QUIET_SECONDS = 4.0
#: Kinds dist/ need not write that a sync may delete with what it prunes (pods are the
#: report's "pods replaced"): a workload's ReplicaSets, a TFJob's Services, a claim's volume.
DEPENDENTS = (("apps/v1", "ReplicaSet"), ("v1", "Service"), ("v1", "PersistentVolumeClaim"), ("v1", "PersistentVolume"))
SETTLE_TIMEOUT = 120.0


def simulate(dist: Path, scenario: Scenario, config_path: Path | None = None, keep_logs: bool = False,
             log: Callable[[str], None] = print, inspect: Callable[[ControlPlane], None] | None = None,
             resubmitter: bool | None = None, render_jobs: RenderJobs | None = None, change: Path | None = None,
             keep_base: bool = False) -> tuple[observe.Observation, Path | None]:
    """Run ``scenario`` on ``dist``; the observation and, when logs are kept, their folder.
    ``inspect`` is called with the running cluster once the scenario has played. ``render_jobs``
    gives the dist/ files of the job files the scenario adds (synth's, from the command).
    ``change``: ``dist`` is the base, running and settled before ``change`` (another dist/ tree)
    is synced onto it as Argo CD syncs a merged pull request; the scenario then plays on the change.
    ``keep_base``: restore the settled base from the user's cache when it holds it, else sync it
    from nothing and keep it there (colocate.simulate.kept)."""
    cfg = config_mod.load(config_path) if config_path else config_mod.load()
    pools = nodes.read_pools(dist)
    counts = _node_counts(pools, scenario)
    docs = _dist_documents(dist)
    planned = steps_mod.plan(scenario, docs, cfg.schedule, cfg.file)
    added = _added_jobs(scenario, planned, render_jobs)
    resubmitting = scenario.resubmitter if resubmitter is None else resubmitter
    binaries = toolchain.ensure(cfg, log=log)
    base_key = (kept.key(dist, repr(cfg), counts, resubmitting, {b.name: b.stamp() for b in toolchain.builds(cfg)})
                if keep_base else None)
    restored = kept.load(base_key, log) if base_key else None
    started = time.monotonic()
    obs = observe.Observation(scenario=scenario.name, resubmitter=resubmitting, hourly=scenario.day is not None,
                              may_wait=("offline",) if scenario.offline_may_wait else ())
    cp = ControlPlane(binaries, keep_logs=keep_logs, restore=restored.path if restored else None)
    try:
        with cp:
            log(f"simulate: control plane up at {cp.server}{' on the kept base' if restored else ''} "
                f"({time.monotonic() - started:.1f} s)")
            storage_classes = sorted({cfg.shared_storage_class, cfg.monitoring.storage_class})
            if restored:
                node_pool, queue, argo, tick = _resume_base(cp, cfg, dist, restored, obs)
            else:
                node_pool, queue, argo, tick = _build_base(cp, cfg, dist, pools, counts, storage_classes, obs)
            apps = argo.wait_synced({d["metadata"]["name"] for _, d in [*docs, *_bootstrap(dist)]
                                     if d["kind"] == "Application"}, tick=tick)
            log(f"simulate: Argo CD {'found' if restored else 'synced'} {sum(a.sync == 'Synced' for a in apps)} of "
                f"{len(apps)} Applications synced ({time.monotonic() - started:.1f} s)")
            _sync_results(cp, apps, docs, obs)
            obs.admission_policies = _bound_policies(cp)
            obs.applications = apps
            _start_training(cp, cfg, queue, obs)
            if resubmitting:
                components.start_resubmitter(cp, _training_namespaces(docs))
            obs.settled = _settle(cp, resubmitting)
            obs.stand_ins = stand_ins.describe(cp, storage_classes, queue)
            log(f"simulate: cluster settled ({time.monotonic() - started:.1f} s)")
            if base_key and not restored and obs.settled:
                _keep(cp, base_key, node_pool, queue, argo, obs, log)
            if change is not None:
                docs = _sync_change(cp, argo, change, docs, obs, resubmitting, tick)
                log(f"simulate: the change synced onto the base, {sum(not a.ok for a in obs.change)} Application(s) "
                    f"failed ({time.monotonic() - started:.1f} s)")
            since = _scale_and_drill(cp, argo, scenario, docs, apps, obs, resubmitting,
                                     lambda line: log(f"{line} ({time.monotonic() - started:.1f} s)"))
            if planned:
                _play(cp, cfg, planned, docs, node_pool, obs, resubmitting, log, started, argo, added)
            if inspect:
                inspect(cp)
            observe.observe(cp, obs, _tiers(docs), node_pool, since_events=since)
            if not obs.ok:
                cp.failed = True
    finally:
        if restored:
            shutil.rmtree(restored.path, ignore_errors=True)
    obs.seconds = time.monotonic() - started
    return obs, (cp.workdir if cp.failed or keep_logs else None)


def _build_base(cp: ControlPlane, cfg, dist: Path, pools, counts, storage_classes, obs: observe.Observation):
    """From nothing: kwok's nodes, the storage classes, Argo CD and the root Application."""
    components.start_kwok(cp)
    node_pool = _add_nodes(cp, pools, counts)
    for storage_class in storage_classes:  # the cluster provides them (dist/ does not write them)
        components.install_storage_class(cp, storage_class)
    # Kueue's manager runs as a host process once Argo CD has installed its CRDs, while the sync
    # goes on: its webhooks (dist/'s, called by URL in Argo CD's copy) admit the TFJobs.
    # The manager runs whenever dist/ brings its CRDs (a tree synthesized with the queue on).
    queue = kueue.Kueue(cp, cfg.kueue) if cfg.kueue else None
    argo = argocd.ArgoCD(cp, cfg, dist, rewrite=queue.rewrite if queue else None)
    argo.start()
    obs.rejected += [observe.Rejected("dist/bootstrap/", "root Application", e) for e in argo.apply_bootstrap()]
    return node_pool, queue, argo, _ticker(queue)


def _resume_base(cp: ControlPlane, cfg, dist: Path, restored: kept.Found, obs: observe.Observation):
    """On a kept base: the same processes, pointed at this run's addresses (kept.py)."""
    state = restored.state
    components.start_kwok(cp)
    queue = None
    if cfg.kueue:
        queue = kueue.Kueue(cp, cfg.kueue, kept_certs=restored.path / "kueue" / "certs")
        if state.get("kueue_url"):
            queue.repoint(state["kueue_url"])
    argo = argocd.ArgoCD(cp, cfg, dist, rewrite=queue.rewrite if queue else None)
    argo.resume(restored.path / "repo", state["repo_url"], state["server"])
    if queue and state.get("kueue_url"):
        queue.start(register_webhooks=False)
    obs.rejected += [observe.Rejected(*r) for r in state["rejected"]]
    _release_leases(cp)
    return state["node_pool"], queue, argo, _ticker(queue)


def _release_leases(cp: ControlPlane) -> None:
    """The kept run's resubmitter held its Lease when the snapshot was taken, and is gone: release
    it as that process would on a clean stop (incluster/resubmit/leader.py Lease.release), or the
    new one waits out the lease (15 s) while the scenario plays."""
    for lease in cp.items(f"/apis/coordination.k8s.io/v1/leases?fieldSelector=metadata.name%3D{components.RESUBMITTER}"):
        meta = lease["metadata"]
        cp.request("PATCH", f"/apis/coordination.k8s.io/v1/namespaces/{meta['namespace']}/leases/{meta['name']}",
                   {"spec": {"holderIdentity": "", "leaseDurationSeconds": 1}},
                   content_type="application/merge-patch+json")


def _keep(cp: ControlPlane, base_key: str, node_pool, queue, argo: argocd.ArgoCD, obs: observe.Observation,
          log) -> None:
    """Keep the settled base (kept.py): its snapshot, keys, repository copy and what the run knew."""
    started = time.monotonic()
    cp.snapshot(cp.workdir / "etcd.db")
    kept.save(base_key, cp.workdir, {
        "server": cp.server, "repo_url": argo.repo_url, "kueue_url": queue.url if queue and queue.started else "",
        "node_pool": node_pool, "rejected": [[r.source, r.object, r.message] for r in obs.rejected]},
        lambda line: log(f"{line}, in {time.monotonic() - started:.1f} s"))
    (cp.workdir / "etcd.db").unlink(missing_ok=True)


def _add_nodes(cp: ControlPlane, pools, counts: Mapping[str, int]) -> dict[str, str]:
    """kwok's nodes, shaped like the pools of dist/nodes/; node name -> pool name."""
    node_pool = {}
    for pool in pools:
        for node in nodes.node_objects(pool, counts[pool.name]):
            cp.request("POST", "/api/v1/nodes", node)
            node_pool[node["metadata"]["name"]] = pool.name
    return node_pool


def _ticker(queue: kueue.Kueue | None) -> Callable[[ControlPlane], None]:
    """What runs at each poll while Argo CD syncs."""
    def tick(cp: ControlPlane) -> None:
        _operators(cp)
        if queue:
            queue.start_when_served()
            # Kueue's waitForPodsReady counts from admission, which comes during the sync: the
            # operator that makes the pods runs by then, as its Deployment would on the cluster.
            if queue.started and not _operator_started(cp) and _served(cp, "kubeflow.org/v1", "TFJob"):
                components.start_training_operator(cp)
    return tick


def _operator_started(cp: ControlPlane) -> bool:
    return any(name == "training-operator" for name, _ in cp.processes)


def _start_training(cp: ControlPlane, cfg, queue: kueue.Kueue | None, obs: observe.Observation) -> None:
    """After the first sync: the training-operator runs once the CRDs Argo CD applied
    (training-operator-upstream) are served; a part that could not start is a note."""
    if _operator_started(cp):
        pass
    elif _served(cp, "kubeflow.org/v1", "TFJob"):
        components.start_training_operator(cp)
    else:
        obs.notes.append("the training-operator did not start: Argo CD did not install the TFJob CRD")
    if queue and not queue.started and cfg.queue:
        obs.notes.append(f"Kueue {cfg.kueue.version} did not start: Argo CD did not install every CRD of "
                         f"the release (kueue.x-k8s.io: {len(kueue.crds())}, vendor/kueue/config/components/crd/bases)")


def _scale_and_drill(cp: ControlPlane, argo: argocd.ArgoCD, scenario: Scenario, docs, apps, obs: observe.Observation,
                     resubmitting: bool, log: Callable[[str], None]) -> str:
    """A scenario's replicas and delete drills, each settled; the Events' resourceVersion from
    which the observation counts (empty: from the start)."""
    since = ""
    if scenario.scale_to_peak or scenario.scale:
        since = cp.request("GET", "/api/v1/events?limit=1")["metadata"]["resourceVersion"]
        _scale(cp, docs, scenario)
        obs.settled = _settle(cp, resubmitting) and obs.settled
        log(f"simulate: scenario {scenario.name} played")
    if scenario.delete_drill:
        kinds = sorted({(d["apiVersion"], d["kind"]) for _, d in docs if d["kind"] != "Application"}
                       | {("v1", "Namespace"), ("v1", "PersistentVolumeClaim")})
        for app in _drilled(scenario, apps, docs):
            obs.drills[app] = argocd.drill(argo, app, kinds)
            log(f"simulate: delete drill {app}: {len(obs.drills[app])} objects deleted, restored")
        obs.settled = _settle(cp, resubmitting) and obs.settled
    return since


def _sync_change(cp: ControlPlane, argo: argocd.ArgoCD, change: Path, docs, obs: observe.Observation,
                 resubmitting: bool, tick) -> list[tuple[str, dict[str, Any]]]:
    """Sync ``change`` onto the settled base and record what the sync did, the rollouts and the
    pods it replaced; the change's documents, which the scenario then plays on."""
    tiers = _tiers(docs)
    before = rollouts.pods(cp, lambda pod: observe.tier_of(pod, tiers))
    kinds = sorted({(d["apiVersion"], d["kind"]) for _, d in docs if d["kind"] != "Application"} | set(DEPENDENTS))
    held = argocd.objects(cp, kinds)
    syncs = argocd.sync_change(argo, change, held, tick=tick)
    obs.settled = _settle(cp, resubmitting, tick=syncs.record) and obs.settled
    syncs.record()
    obs.change = syncs.changes()
    obs.rollouts = rollouts.rollouts(cp, [w for a in obs.change for w in a.changed])
    obs.replaced = rollouts.replaced(cp, before)
    # A hook Argo CD deletes once it succeeded (hook-delete-policy) is reported as a hook.
    named = {x for a in obs.change for x in a.pruned} | {h.split(" (")[0] for a in obs.change for h in a.hooks}
    obs.deleted_with = sorted(held - argocd.objects(cp, kinds) - named)
    return _dist_documents(change)


def _play(cp: ControlPlane, cfg, planned: list[steps_mod.Step], docs, node_pool, obs: observe.Observation,
          resubmitting: bool, log, started: float, argo: argocd.ArgoCD | None = None,
          added: Mapping[str, tuple[str, Mapping[str, str]]] | None = None) -> None:
    """Each step: its actions, the replicas, settle, and what the cluster holds then."""
    from colocate.incluster import offline
    from colocate.incluster.kube import ClusterQueues, TFJobs, api_client

    api = api_client(str(cp.kubeconfig))
    jobs, cluster_queues = TFJobs(api), ClusterQueues(api)
    queues = sorted(d["metadata"]["name"] for _, d in docs if d["kind"] == "ClusterQueue")
    tiers = _tiers(docs)
    current: dict[str, int] = {}
    silent: list[str] = []  # nodes lost with mode notReady
    for index, step in enumerate(planned):
        since = cp.request("GET", "/api/v1/events?limit=1")["metadata"]["resourceVersion"]
        report = steps_mod.StepReport(step.name, actions=list(step.notes))
        changed = False
        if step.offline:
            # As the schedule's CronJobs do: through Kueue's ClusterQueue when dist/ has one.
            for queue in queues:
                done = offline.hold(cluster_queues, queue, step.offline, jobs=jobs,
                                    namespaces=_training_namespaces(docs))
                report.actions.append(f"offline {step.offline}: ClusterQueue {queue} "
                                      f"{done[0].reason if done else 'unchanged'}")
            for namespace in [] if queues else _training_namespaces(docs):
                done = offline.run(jobs, namespace, step.offline)
                report.actions.append(f"offline {step.offline}: {len(done)} TFJob(s) in {namespace}")
            changed = True
        changed = _job_events(cp, argo, step, report, added) or changed
        if step.lose_node:
            node = steps_mod.lose_node(cp, step.lose_node, node_pool, step.lose_mode)
            if step.lose_mode == "notReady":
                silent.append(node)
                report.actions.append(f"node {node} lost (stopped reporting: NotReady, its pods deleted by the "
                                      "taint manager and left terminating)")
                if resubmitting:
                    # The job fails, the resubmitter deletes it and waits for its pods: blocked
                    # after SIM_SETTINGS.blocked_after_seconds. The step reports that state.
                    steps_mod.wait_event(cp, BLOCKED_REASON, since, SETTLE_TIMEOUT)
            else:
                report.actions.append(f"node {node} lost (tainted {steps_mod.OUT_OF_SERVICE['key']}:NoExecute)")
            changed = True
        if step.out_of_service:
            for node in silent:
                steps_mod.out_of_service(cp, node)
                report.actions.append(f"node {node} declared out of service (tainted {steps_mod.OUT_OF_SERVICE['key']}"
                                      ":NoExecute, the runbook's step)")
            # The pod garbage collector works every 20 s (podgc gcCheckPeriod): the settle's quiet
            # window could pass before it deletes the lost nodes' pods.
            steps_mod.wait_gone_from(cp, silent, SETTLE_TIMEOUT)
            changed = True
        wanted = {k: v for k, v in step.scale.items() if current.get(k) != v}
        if changed and wanted:
            # The schedule pauses ahead of the peak (pauseLeadMinutes): the paused pods are gone
            # before the online replicas grow, as on the cluster.
            report.settled = _settle(cp, resubmitting)
        if wanted:
            _scale_to(cp, wanted, f"scenario {obs.scenario}, step {step.name}")
            current.update(wanted)
            changed = True
        if changed:
            report.settled = _settle(cp, resubmitting) and report.settled
        steps_mod.report(cp, report, index, tiers, node_pool, observe.tier_of, since, queued=bool(queues))
        obs.steps.append(report)
        log(f"simulate: step {step.name}: online {report.online_placed}/{report.online_desired} placed, training "
            f"{report.training_running} running, {report.training_pending} pending, {report.training_suspended} "
            f"suspended; {report.preemptions} preempted, {report.resubmissions} resubmitted "
            f"({time.monotonic() - started:.1f} s)")


def _job_events(cp: ControlPlane, argo: argocd.ArgoCD | None, step: steps_mod.Step, report: steps_mod.StepReport,
                added: Mapping[str, tuple[str, Mapping[str, str]]] | None) -> bool:
    """A step's jobs removed from git, added to it, and finished; whether there was any."""
    if (step.remove_job or step.add_jobs) and argo is None:
        raise SimulationError(f"{'removeJob' if step.remove_job else 'addJob'} needs Argo CD, which this simulation "
                              "did not start")
    if step.remove_job:
        line, report.argocd_syncs_after_prune = argocd.remove_job(argo, step.remove_job)
        report.actions.append(line)
    for file in step.add_jobs:
        report.actions.append(argocd.add_job(argo, *added[file]))
    for candidates in step.finish_jobs:
        report.actions.append(steps_mod.finish_job(cp, candidates))
    return bool(step.remove_job or step.add_jobs or step.finish_jobs)


def _added_jobs(scenario: Scenario, planned: list[steps_mod.Step], render_jobs: RenderJobs | None
                ) -> dict[str, tuple[str, Mapping[str, str]]]:
    """Per job file an ``addJob`` names: its job's name and dist/ files, rendered before the
    cluster starts, so a bad file is exit 2 before minutes of running."""
    named = list(dict.fromkeys(p for step in planned for p in step.add_jobs))
    if not named:
        return {}
    if render_jobs is None:
        raise SimulationError("addJob needs synth to render the job files (colocate simulate passes it)")
    return dict(zip(named, render_jobs([scenario.job_file(p) for p in named])))


def _operators(cp: ControlPlane) -> None:
    """While Argo CD syncs: what the provisioner and prometheus-operator would do meanwhile (Argo CD
    waits for the Prometheus resource to be healthy before kube-prometheus-stack's PostSync hook)."""
    components.provision(cp)
    stand_ins.reconcile_operators(cp)


def _served(cp: ControlPlane, api_version: str, kind: str) -> bool:
    try:
        cp.path(api_version, kind)
    except SimulationError:
        return False
    return True


def _bound_policies(cp: ControlPlane) -> list[str]:
    """Rule ids of the colocate policies that have a binding (what the API server enforces)."""
    base = f"/apis/{admission.API_VERSION}"
    policies = {p["metadata"]["name"]: (p["metadata"].get("labels") or {}).get(admission.RULE_LABEL)
                for p in cp.items(f"{base}/validatingadmissionpolicies")}
    bound = {b["spec"].get("policyName") for b in cp.items(f"{base}/validatingadmissionpolicybindings")}
    return sorted(rule for name, rule in policies.items() if rule and name in bound)


def _training_namespaces(docs) -> list[str]:
    """The namespaces the TFJobs of dist/ live in (the resubmitter watches them)."""
    from colocate.model.names import TFJOB_KIND

    found = sorted({d["metadata"]["namespace"] for _, d in docs if d["kind"] == TFJOB_KIND})
    return found or sorted({d["metadata"]["name"] for _, d in docs if d["kind"] == "Namespace"
                            and (d["metadata"].get("labels") or {}).get(TIER_LABEL) == "offline"})


def _node_counts(pools: tuple[nodes.PoolFacts, ...], scenario: Scenario) -> dict[str, int]:
    names = {p.name for p in pools}
    for name in scenario.nodes:
        if name not in names:
            raise InputError(f"scenario {scenario.name}", f"nodes.{name}", f"no such pool; pools: {', '.join(sorted(names))}")
    counts = {p.name: p.nodes + scenario.nodes.get(p.name, 0) for p in pools}
    for name, count in counts.items():
        if count < 0:
            raise InputError(f"scenario {scenario.name}", f"nodes.{name}", "removes more nodes than the pool has")
    return counts


def _dist_documents(dist: Path) -> list[tuple[str, dict[str, Any]]]:
    """(file, object) for every API object under dist/apps/ (the nodes' files are not API objects)."""
    if not (dist / "apps").is_dir():
        raise InputError(display(dist), "apps/", "no such folder: name a dist/ folder that `colocate synth` wrote")
    out = []
    for file in sorted((dist / "apps").rglob("*.yaml")):
        for doc in safe_yaml.load_all(file.read_text()):
            if isinstance(doc, dict) and doc.get("kind"):
                out.append((display(file), doc))
    return out


def _tiers(docs) -> dict[str, str]:
    return {d["metadata"]["name"]: d["metadata"].get("labels", {})[TIER_LABEL] for _, d in docs
            if d["kind"] == "PriorityClass" and TIER_LABEL in d["metadata"].get("labels", {})}


def _drilled(scenario: Scenario, apps: list[argocd.AppState], docs) -> list[str]:
    """The child Applications of this repository the drill deletes (all, or the scenario's list)."""
    ours = sorted(a.name for a in apps if not a.offline and any(
        d["kind"] == "Application" and d["metadata"]["name"] == a.name for _, d in docs))
    if scenario.delete_drill is True:
        return ours
    unknown = sorted(set(scenario.delete_drill) - set(ours))
    if unknown:
        raise InputError(f"scenario {scenario.name}", "deleteDrill", f"no such Application of this repository: "
                         f"{', '.join(unknown)}; they are: {', '.join(ours)}")
    return list(scenario.delete_drill)


def _bootstrap(dist: Path) -> list[tuple[str, dict[str, Any]]]:
    return [(display(f), d) for f in sorted((dist / "bootstrap").glob("*.yaml"))
            for d in safe_yaml.load_all(f.read_text()) if isinstance(d, dict)]


def _sync_results(cp: ControlPlane, apps: list[argocd.AppState], docs, obs: observe.Observation) -> None:
    """What Argo CD could not sync, as rejections naming the file the object came from."""
    by_name = {_name(d): (f, d) for f, d in docs}
    for app in apps:
        for obj, message in app.failed:
            file, doc = by_name.get(obj, (f"Application {app.name}", None))
            if doc is not None:
                try:
                    cp.path(doc["apiVersion"], doc["kind"])
                except SimulationError as exc:  # Argo CD says only '<Kind>.<group> "" not found'
                    message = f"{message} ({exc})"
            obs.rejected.append(observe.Rejected(file, obj, message))
        if not app.offline and not app.failed and app.message and app.sync != "Synced":
            obs.rejected.append(observe.Rejected(f"Application {app.name}", app.name, app.message))


def _name(doc) -> str:
    meta = doc.get("metadata") or {}
    return "/".join(x for x in (doc["kind"], meta.get("namespace"), meta.get("name")) if x)


def _scale(cp: ControlPlane, docs, scenario: Scenario) -> None:
    wanted = dict(scenario.scale)
    if scenario.scale_to_peak:
        for _, d in docs:
            peak = (d["metadata"].get("annotations") or {}).get(PEAK_REPLICAS_ANNOTATION)
            if peak and d["kind"] in ("Deployment", "StatefulSet"):
                wanted.setdefault(f"{d['kind']}/{d['metadata']['namespace']}/{d['metadata']['name']}", int(peak))
    _scale_to(cp, wanted, f"scenario {scenario.name}")


def _scale_to(cp: ControlPlane, wanted: dict[str, int], where: str) -> None:
    for workload, replicas in wanted.items():
        kind, namespace, name = workload.split("/")
        path = cp.path("apps/v1", kind, namespace, name)
        try:
            cp.request("PATCH", f"{path}/scale", {"spec": {"replicas": replicas}},
                       content_type="application/merge-patch+json")
        except urllib.error.HTTPError as exc:
            raise InputError(where, f"scale.{workload}", refusal(exc)) from None


def _settle(cp: ControlPlane, resubmitting: bool = False, tick: Callable[[ControlPlane], None] | None = None) -> bool:
    """Bind claims and wait until pods, claims and TFJobs stop changing; False on timeout.
    ``tick`` is called on each poll."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    last, quiet_since = None, time.monotonic()
    while time.monotonic() < deadline:
        cp.check_alive()
        components.provision(cp)
        stand_ins.reconcile_operators(cp)
        if tick:
            tick(cp)
        now = _fingerprint(cp, resubmitting)
        if now != last:
            last, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= QUIET_SECONDS:
            return True
        time.sleep(0.5)
    return False


def _condition(obj: dict, kind: str) -> str:
    return next((c.get("status", "") for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), "")


def _fingerprint(cp: ControlPlane, resubmitting: bool = False) -> tuple:
    listed = cp.items("/api/v1/pods")
    pods = tuple(sorted((p["metadata"]["namespace"], p["metadata"]["name"], p["spec"].get("nodeName") or "",
                         p.get("status", {}).get("phase", ""), bool(p["metadata"].get("deletionTimestamp")))
                        for p in listed))
    claims = tuple(sorted((c["metadata"]["name"], c.get("status", {}).get("phase", ""))
                          for c in cp.items("/api/v1/persistentvolumeclaims")))
    live = cp.items("/apis/kubeflow.org/v1/tfjobs")
    jobs = tuple(sorted((j["metadata"]["name"], j["metadata"].get("uid"), observe.tfjob_state(j), _suspended(j))
                        for j in live))
    # A controller that has not yet seen its object's newest spec is not quiet, however long.
    behind = [w["metadata"]["name"] for kind in ("deployments", "statefulsets", "daemonsets", "replicasets")
              for w in cp.items(f"/apis/apps/v1/{kind}")
              if w.get("status", {}).get("observedGeneration", 0) < w["metadata"].get("generation", 0)]
    if resubmitting:  # a resubmission waiting out its backoff is work still to come
        behind += [j["metadata"]["name"] for j in live
                   if resubmit_policy.decide(j, components.SIM_SETTINGS).action == "resubmit"]
    workloads, admitted = (), set()
    if any(name == "kueue" for name, _ in cp.processes):  # an admission or eviction is a change
        listed_workloads = cp.items(f"/apis/{kueue.GROUP}/v1beta1/workloads")
        workloads = tuple(sorted((w["metadata"]["name"], *(_condition(w, t) for t in ("QuotaReserved", "Admitted", "Evicted")))
                                 for w in listed_workloads))
        admitted = {o.get("uid") for w in listed_workloads if _condition(w, "Admitted") == "True"
                    for o in w["metadata"].get("ownerReferences") or []}
    events = [e for e in cp.items("/api/v1/events") if e["involvedObject"].get("kind") == "TFJob"]
    said = {e["involvedObject"].get("name") for e in events}
    warned = {e["involvedObject"].get("uid") for e in events if e.get("type") == "Warning"}
    # no condition yet: the operator has not acted on it, unless it said why not
    behind += sorted({name for name, _, state, _ in jobs if state == "Pending"} - said)
    behind += _short_of_pods(live, listed, admitted, warned)
    return pods, claims, jobs, workloads, time.monotonic() if behind else ()


def _suspended(job: Mapping[str, Any]) -> bool:
    return bool((job["spec"].get("runPolicy") or {}).get("suspend"))


def _short_of_pods(jobs: list, pods: list, admitted: set, warned: set) -> list[str]:
    """TFJobs whose controllers still have work to do that no status shows yet: admitted by Kueue
    but still suspended (Kueue's job reconciler has yet to resume it), or running (not suspended,
    not finished) with fewer live pods than replicas (the operator has yet to create them), unless
    the operator said why not (a Warning Event on the job, such as FailedCreatePod under a quota).
    Without this a settle could end in the quiet between Kueue's admission and the job's pods."""
    live_pods: dict[tuple[str, str], int] = {}
    for pod in pods:
        name = (pod["metadata"].get("labels") or {}).get(JOB_NAME_LABEL)
        if name and not pod["metadata"].get("deletionTimestamp"):
            key = (pod["metadata"]["namespace"], name)
            live_pods[key] = live_pods.get(key, 0) + 1
    short = []
    for job in jobs:
        meta = job["metadata"]
        if observe.tfjob_state(job) in ("Succeeded", "Failed") or meta.get("uid") in warned:
            continue
        if _suspended(job):
            if meta.get("uid") in admitted:
                short.append(meta["name"])
            continue
        want = sum(int(spec.get("replicas", 1)) for spec in (job["spec"].get("tfReplicaSpecs") or {}).values())
        if live_pods.get((meta["namespace"], meta["name"]), 0) < want:
            short.append(meta["name"])
    return short
