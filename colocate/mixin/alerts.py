"""Alerts of the colocation mixin: one place for names, thresholds, hints and severities."""
from __future__ import annotations

from typing import Any

from colocate.mixin.config import eq, ne, ne_value, nre, re_, sel
from colocate.mixin.slo import LatencyGuard
from colocate.model.names import WARNING


def _daemonset_alerts(guard: LatencyGuard) -> list[dict[str, Any]]:
    """The chart's DaemonSet alerts, same expressions and ``for``, minus the pre-pull
    DaemonSet, whose lowest-priority pods wait whenever training fills a node."""
    c = guard.config
    ksm = f'{c.ksm_selector}, {ne_value("namespace", c.prepull_namespace)}'
    exprs = {
        "KubeDaemonSetRolloutStuck": (
            _daemonset_rollout_stuck(ksm), "DaemonSet rollout is stuck.",
            "DaemonSet {{ $labels.namespace }}/{{ $labels.daemonset }} has not finished or progressed for "
            "at least {for_}."),
        "KubeDaemonSetNotScheduled": (
            f'{sel("kube_daemonset_status_desired_number_scheduled", ksm)} - '
            f'{sel("kube_daemonset_status_current_number_scheduled", ksm)} > 0',
            "DaemonSet pods are not scheduled.",
            "{{ $value }} Pods of DaemonSet {{ $labels.namespace }}/{{ $labels.daemonset }} are not scheduled."),
    }
    out = []
    for chart_alert, for_ in c.daemonset_alerts:
        expr, summary, description = exprs[chart_alert]
        out.append(_alert(chart_alert.replace("Kube", "Colocate", 1), expr, for_, summary=summary,
                          description=description.replace("{for_}", for_),
                          hint="kubectl -n {{ $labels.namespace }} describe daemonset {{ $labels.daemonset }}: a node "
                               "without room for its pod (a DaemonSet pod below the node's other pods' priority "
                               "waits there), a taint it does not tolerate, or an image that does not pull."))
    return out


def alerts(guard: LatencyGuard) -> list[dict[str, Any]]:
    c, ksm, ns = guard.config, guard.ksm, guard.ns
    restarts = sel("kube_pod_container_status_restarts_total", ksm, ns)
    last_oom = sel("kube_pod_container_status_last_terminated_reason", ksm, ns, eq("reason", "OOMKilled"))
    now_oom = sel("kube_pod_container_status_terminated_reason", ksm, ns, eq("reason", "OOMKilled"))
    pending = sel("kube_pod_status_phase", ksm, ns, eq("phase", "Pending"))
    not_training = nre("namespace", f"{c.training_namespace}|{c.prepull_namespace}")
    not_ready = ('sum by (namespace, pod) (max by (namespace, pod) '
                 f'({sel("kube_pod_status_phase", ksm, not_training, re_("phase", "Pending|Unknown|Failed"))})'
                 f' * on (namespace, pod) group_left (owner_kind) topk by (namespace, pod) '
                 f'(1, max by (namespace, pod, owner_kind) ({sel("kube_pod_owner", ksm, ne_value("owner_kind", "Job"))})))')
    disrupted = (f"max by (namespace, {c.tfjob_label}) "
                 f"({sel(c.tfjob_annotation_metric, ksm, ns, eq(c.tfjob_annotation_label, c.disruption_annotation))})")
    gpu_util = sel("DCGM_FI_DEV_GPU_UTIL", guard.dcgm)
    idle_gpus = guard.per_gpu(f"avg_over_time({gpu_util}[5m])")
    mixed_nodes = f'max by (node) ({sel("kube_node_labels", ksm, eq(c.pool_label, c.mixed_pool))})'
    gpu_requests = sel("kube_pod_container_resource_requests", ksm, ns, eq("resource", "nvidia_com_gpu"))
    waiting_gpu_pods = (f"count(max by (namespace, pod) ({gpu_requests} > 0)"
                        f" * on (namespace, pod) max by (namespace, pod) ({pending} == 1))")
    # A GPU handed to a pod carries its namespace/pod (honorLabels); the pod's TFJob comes from
    # its training.kubeflow.org/job-name label, renamed to the TFJob alerts' label.
    pod_job = (f'label_replace(max by (namespace, pod, {c.job_pod_label}) '
               f'({sel("kube_pod_labels", ksm, ns, ne(c.job_pod_label))}), '
               f'"{c.tfjob_label}", "$1", "{c.job_pod_label}", "(.+)")')
    job_gpus_busiest = (f"max by (namespace, {c.tfjob_label}) (avg_over_time({sel('DCGM_FI_DEV_GPU_UTIL', guard.dcgm, ns)}[5m])"
                        f" * on (namespace, pod) group_left ({c.tfjob_label}) {pod_job})")
    return [
        _alert("ColocateNodeCPUHigh", f"{guard.node_cpu_utilisation} > {c.cpu_high_ratio}", c.cpu_high_for,
               summary=f"Node CPU above {c.cpu_high_ratio:.0%} for {c.cpu_high_for}.",
               description="Node {{ $labels.node }} is {{ $value | humanizePercentage }} busy "
                           "(node-exporter, all processes).",
               hint="Compare the node's CPU requests with its real use on the Colocation dashboard; if online "
                    "pods are squeezed, lower the training quota or move TFJobs off the node."),
        _alert("ColocateTrainingPodPending", f"max by (namespace, pod) ({pending}) == 1", c.pending_for,
               summary=f"Training pod Pending for {c.pending_for}.",
               description="Pod {{ $labels.namespace }}/{{ $labels.pod }} has been Pending for "
                           f"{c.pending_for}; preempted pods are only briefly Pending.",
               hint="kubectl describe pod shows the scheduler's reason: usually the training ResourceQuota, "
                    "no free GPU on the mixed pool, or a PVC that cannot bind."),
        # kube-prometheus-stack 55.5.1's KubePodNotReady (templates/prometheus/rules-1.14/
        # kubernetes-apps.yaml) minus the training namespace, whose pods have their own 30m rule,
        # and the pre-pull DaemonSet's, which are the first preemption victims by design.
        _alert("ColocatePodNotReady", f"{not_ready} > 0", c.not_ready_for,
               summary=f"Pod not ready for more than {c.not_ready_for}.",
               description="Pod {{ $labels.namespace }}/{{ $labels.pod }} has been in a non-ready state for "
                           f"longer than {c.not_ready_for}.",
               hint="kubectl describe pod: Pending means the scheduler's reason (online pods preempt training "
                    "pods, so a Pending online pod means the pool itself is full); Failed or Unknown, the "
                    "container's or node's state."),
        *_daemonset_alerts(guard),
        # Restarted containers keep the reason in lastState; with restartPolicy Never (the
        # TFJob default) the container stays terminated with the reason in its current state.
        _alert("ColocateTrainingPodOOMKilled",
               f"(max by (namespace, pod, container) ({last_oom} == 1)"
               f" and on (namespace, pod, container) increase({restarts}[{c.event_window}]) > 0)"
               f" or max by (namespace, pod, container) ({now_oom} == 1 unless {now_oom} offset {c.event_window} == 1)",
               "0m",
               summary="Training container OOMKilled.",
               description="Container {{ $labels.container }} of {{ $labels.namespace }}/{{ $labels.pod }} was "
                           "killed for exceeding its memory limit.",
               hint=f"Raise memory in the job file (memoryLimit, when set, may be at most {c.max_memory_burst}x "
                    "memory; kubectl describe pod shows the limit that was hit) or lower the batch size; memory "
                    "is not compressible."),
        _alert("ColocateTrainingPodRestarting",
               f"max by (namespace, pod, container) (increase({restarts}[{c.restart_window}])) >= {c.restarts}", "5m",
               summary=f"Training container restarted {c.restarts} or more times in {c.restart_window}.",
               description="Container {{ $labels.container }} of {{ $labels.namespace }}/{{ $labels.pod }} "
                           "keeps restarting.",
               hint="kubectl logs --previous shows the last crash; TFJob replicas with restartPolicy OnFailure "
                    "or ExitCode restart until backoffLimit."),
        # The Failed condition, not training_operator_jobs_failed_total: v1.7.0 does not count a
        # failure through the backoff limit or deadline (colocate/mixin/tfjob_state.py).
        # Not a job a disruption failed: the resubmitter re-creates it (or gives up, with its
        # own alert), so telling chat each time training gives way would be noise.
        _alert("ColocateTFJobFailed",
               f"{guard.tfjob_condition(eq(c.tfjob_condition_label, 'Failed'))}"
               f" unless on (namespace, {c.tfjob_label}) {disrupted}", "0m",
               summary="TFJob failed.",
               description=f"TFJob {{{{ $labels.namespace }}}}/{{{{ $labels.{c.tfjob_label} }}}} is Failed; the alert "
                           "lasts until the TFJob is deleted or its file removed from jobs/.",
               hint="kubectl describe tfjob gives the reason (a replica failed, the backoff limit or the deadline). "
                    "training-operator v1.7.0 deletes every pod of a failed job (cleanPodPolicy All, which "
                    "releases their GPUs; after a backoff-limit or deadline failure whatever cleanPodPolicy "
                    "says), so read the logs from the log store."),
        # ColocateTFJobFailed leaves a disrupted job to the resubmitter, but only for as long as
        # a resubmission can take (its longest backoff, twice): a job still Failed after that
        # was not resubmitted and must not stay silent for ever. Given up has its own alert.
        _alert("ColocateTFJobNotResubmitted",
               f"({guard.tfjob_condition(eq(c.tfjob_condition_label, 'Failed'))}"
               f" and on (namespace, {c.tfjob_label}) {disrupted})"
               f" unless on (namespace, {c.tfjob_label}) ({guard.tfjobs_given_up})", c.resubmission_pending_for,
               summary="TFJob failed by a disruption and not resubmitted.",
               description=f"TFJob {{{{ $labels.namespace }}}}/{{{{ $labels.{c.tfjob_label} }}}} was failed by a "
                           f"disruption {c.resubmission_pending_for} ago and is still Failed: the resubmitter "
                           "has not re-created it.",
               hint="Is the resubmitter running and leading (ColocateResubmitterDown; its Lease in "
                    "colocate-system)? kubectl describe tfjob shows its Resubmitted, ResubmissionBlocked or "
                    "ResubmissionGivenUp events and its colocate.io/disruption annotation; the resubmitter's "
                    "log says why it left the job."),
        # Kueue (docs/queue.md): jobs wait in the training queue and nothing was admitted over
        # a whole day, hold included. kueue_admitted_workloads_total is absent until the
        # queue's first admission, hence unless rather than a comparison with 0.
        _alert("ColocateTrainingQueueStalled",
               f"sum by (cluster_queue) (kueue_pending_workloads{{job=\"{c.kueue_job}\", cluster_queue=\"{c.training_queue}\"}}) > 0"
               f" unless on (cluster_queue) sum by (cluster_queue) (increase(kueue_admitted_workloads_total"
               f"{{job=\"{c.kueue_job}\", cluster_queue=\"{c.training_queue}\"}}[{c.queue_stalled_window}])) > 0",
               c.queue_stalled_for,
               summary=f"Training queue admitted nothing in {c.queue_stalled_window} while jobs wait.",
               description="{{ $value }} job(s) wait in ClusterQueue {{ $labels.cluster_queue }}, which admitted "
                           f"none in the last {c.queue_stalled_window}: a whole night went by without training.",
               hint="kubectl get clusterqueue -o yaml: a stopPolicy left at HoldAndDrain (the resume did not run: "
                    "colocate offline resume) or a quota below every waiting job; kubectl describe workload -n "
                    "training names why each job is inadmissible."),
        _alert("ColocateTFJobResubmissionGivenUp", guard.tfjobs_given_up, "0m",
               summary="TFJob given up after repeated disruptions.",
               description=f"TFJob {{{{ $labels.namespace }}}}/{{{{ $labels.{c.tfjob_label} }}}} failed by a "
                           "disruption once more after reaching its cap of resubmissions; the resubmitter "
                           "no longer brings it back.",
               hint="kubectl describe tfjob lists the Resubmitted events and the ResubmissionGivenUp one, and "
                    "its colocate.io/disruption annotation the last disruption. Jobs preempted this often run "
                    "through the online peak: pause training over it (colocate.yaml schedule, "
                    "docs/schedule.md) or raise the job's colocate.io/max-resubmissions. To run it again "
                    "now, delete the TFJob; Argo CD re-creates it from git and it restores its last checkpoint."),
        _alert("ColocateTFJobResubmissionBlocked", guard.tfjobs_blocked, c.resubmission_blocked_for,
               summary="A disrupted TFJob cannot be resubmitted: its old pods stay terminating.",
               description=f"TFJob {{{{ $labels.namespace }}}}/{{{{ $labels.{c.tfjob_label} }}}} failed by a "
                           "disruption; the resubmitter deleted it, but pods of it still terminate on a node "
                           "that no longer reports, so the job cannot be re-created.",
               hint="kubectl describe tfjob: the ResubmissionBlocked event names the pods and their node. "
                    "Once that node is known to be off (powered down, not just unreachable: two "
                    "incarnations would write one checkpoint directory), taint it "
                    "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute; the pods go and the "
                    "resubmission goes on (docs/runbook-node-loss.md)."),
        # Progress, not a deadline: a hung job (a deadlocked input pipeline, a worker waiting on
        # a lost peer outside a GPU kernel) holds its GPUs idle. A hang inside an NCCL kernel
        # keeps the GPU busy and is not seen here (docs/training.md).
        _alert("ColocateTFJobHung", f"{job_gpus_busiest} < {c.hang_gpu_percent}", c.hang_for,
               summary=f"A running TFJob's GPUs have been idle for {c.hang_for}.",
               description=f"Every GPU of TFJob {{{{ $labels.namespace }}}}/{{{{ $labels.{c.tfjob_label} }}}} "
                           f"averaged under {c.hang_gpu_percent}% for {c.hang_for}: it holds them and does "
                           "not train.",
               hint="kubectl logs of its pods: a stalled input pipeline, or workers waiting for a peer that "
                    "is gone. Delete the TFJob to free its GPUs; Argo CD re-creates it from git and it "
                    "restores its last checkpoint. If the job really waits on purpose (a long download), "
                    "give it its data before it asks for GPUs."),
        _alert("ColocateMixedGPUsIdleWhileTFJobsWait",
               f"count by (node) (({idle_gpus} < {c.gpu_idle_percent}) * on (node) group_left () {mixed_nodes})"
               f" and on () ({waiting_gpu_pods} > 0)",
               c.gpu_idle_for,
               summary="Mixed-pool GPUs idle while training pods wait for GPUs.",
               description="{{ $value }} GPU(s) on mixed node {{ $labels.node }} averaged under "
                           f"{c.gpu_idle_percent}% while pods in {c.training_namespace} requesting "
                           "nvidia.com/gpu are Pending.",
               hint="The idle GPU is either allocated to a pod that does not use it, or free while the waiting "
                    "pod lacks CPU or memory on that node; the Colocation dashboard shows both."),
        _target_down(guard, "ColocateDCGMExporterDown", c.dcgm_job, "GPU panels and GPU alerts are blind.",
                          "Check the dcgm-exporter DaemonSet in the monitoring namespace: it must tolerate the "
                          "online taint and run on every GPU node."),
        _target_down(guard, "ColocateTrainingOperatorDown", c.training_operator_job,
                          "TFJob metrics are missing and TFJobs may not be reconciled.",
                          "Check the training-operator Deployment in kubeflow and its ServiceMonitor "
                          "(port monitoring-port)."),
        _target_down(guard, "ColocateResubmitterDown", c.resubmitter_job,
                          "TFJobs failed by a disruption are not resubmitted.",
                          f"Check the {c.resubmitter_job} Deployment (kubectl get deploy -A -l "
                          f"app.kubernetes.io/name={c.resubmitter_job}): its pods run on the monitoring pool; "
                          "an image that cannot be pulled or a missing RBAC grant shows in their events and logs."),
        *guard.latency_alerts,
    ]


def _target_down(guard: LatencyGuard, name: str, job: str, impact: str, hint: str) -> dict[str, Any]:
    up = sel("up", eq("job", job))
    return _alert(name, f"{up} == 0 or absent({up})", guard.config.target_down_for,
                  summary=f"Prometheus cannot scrape {job}.",
                  description=f"Job {job}{{{{ with $labels.instance }}}} target {{{{ . }}}}{{{{ end }}}} has been "
                              f"down or absent for {guard.config.target_down_for}. {impact}",
                  hint=hint)


def _daemonset_rollout_stuck(ksm: str) -> str:
    """kube-prometheus-stack 55.5.1's KubeDaemonSetRolloutStuck expression for ``ksm`` series."""
    m = lambda name: sel(f"kube_daemonset_status_{name}", ksm)  # noqa: E731
    return (f"(({m('current_number_scheduled')} != {m('desired_number_scheduled')})"
            f" or ({m('number_misscheduled')} != 0)"
            f" or ({m('updated_number_scheduled')} != {m('desired_number_scheduled')})"
            f" or ({m('number_available')} != {m('desired_number_scheduled')}))"
            f" and (changes({m('updated_number_scheduled')}[5m]) == 0)")


def _alert(name: str, expr: str, for_: str, *, summary: str, description: str, hint: str,
           severity: str = WARNING) -> dict[str, Any]:
    return {"alert": name, "expr": expr, "for": for_, "labels": {"severity": severity},
            "annotations": {"summary": summary, "description": description, "hint": hint}}
