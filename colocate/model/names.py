"""Names the generator, the checker and the docs share: label keys, annotation keys, resource
names, job and container names. Each is written here once and imported everywhere else.
"""
from __future__ import annotations

#: Node label naming a node's pool; every pool sets it (value = pool name).
POOL_LABEL = "colocate.io/pool"
#: The label pods select their pool by. Under the node-restriction.kubernetes.io/ prefix, which
#: the NodeRestriction admission plugin forbids kubelets to set or change on their own Node
#: (kubernetes/kubernetes v1.28.15 plugin/pkg/admission/noderestriction/admission.go), so a
#: compromised node cannot label itself into the online pool; the kubelet refuses it in
#: --node-labels too, so an administrator labels each node after it joins (docs/node-pools.md).
#: POOL_LABEL stays the kubelet-set label dashboards and kube-state-metrics group by.
POOL_SELECTOR_LABEL = "node-restriction.kubernetes.io/colocate-pool"
#: Labels every kubelet sets on its own Node, whatever the pool: the operating system and the
#: architecture, stable and beta. forms (kubernetes/kubernetes pkg/kubelet/kubelet_node_status.go
#: initialNode, v1.28.15; keys in k8s.io/api core/v1/well_known_labels.go and k8s.io/kubelet
#: pkg/apis/well_known_labels.go, v0.28.15). Our nodes are linux/amd64. The pools' NodePool
#: descriptions carry them, so check and simulate read them from there. kubernetes.io/hostname
#: is set too, but differs per node: simulate adds it to each node it makes.
KUBELET_NODE_LABELS = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                       "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: Label on a PriorityClass or Namespace naming its tier role (online, offline, background).
TIER_LABEL = "colocate.io/tier"
#: The extended resource the NVIDIA device plugin advertises.
GPU = "nvidia.com/gpu"
#: A container without a GPU request still sees every GPU of its node when its image sets
#: NVIDIA_VISIBLE_DEVICES=all (CUDA images do) and the node's default runtime is nvidia: the
#: device plugin's default ``envvar`` strategy only overwrites the variable for containers it
#: allocates GPUs to (k8s-device-plugin v0.14.5 README, "if you don't request GPUs ...").
#: ``void`` makes the runtime behave as runc, ``none`` mounts the driver but no device
#: (nvidia-container-toolkit v1.14.6 internal/config/image/devices.go NewVisibleDevices); the only
#: two values a pod may give it (COL070: an empty value is the toolkit's to read, not ours).
VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
NO_GPU_VISIBLE = "void"
NO_GPU_VALUES = ("void", "none")
#: Common ``app.kubernetes.io`` labels.
NAME_LABEL = "app.kubernetes.io/name"
PART_OF_LABEL = "app.kubernetes.io/part-of"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
COMPONENT_LABEL = "app.kubernetes.io/component"
PART_OF = "colocate"

#: Highest value a user-defined PriorityClass may have (system classes sit above it).
MAX_USER_PRIORITY = 1_000_000_000
#: Adjacent tiers at least this many times apart, so a new class can always fit between them
#: and a mistyped value cannot silently reorder online and offline work.
MIN_GAP_FACTOR = 10

#: The built-in PriorityClasses every cluster has (kubernetes/kubernetes pkg/apis/scheduling/types.go,
#: SystemCriticalPriority = 2e9; node-critical is 1000 above), usable in any namespace.
BUILTIN_PRIORITY_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
CLUSTER_CRITICAL, NODE_CRITICAL = BUILTIN_PRIORITY_CLASSES

# --- Argo CD (docs/gitops.md) -------------------------------------------------------------------
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
#: Cascading, foreground delete of what the Application deployed.
RESOURCES_FINALIZER = "resources-finalizer.argocd.argoproj.io"
#: The sync option that keeps an object when Argo CD prunes (its file left git).
KEEP_ON_PRUNE = "Prune=false"
#: The sync option that keeps an object when its Application is deleted with cascade.
KEEP_ON_DELETE = "Delete=false"
#: Both: what every object holding data carries (docs/gitops.md, "Deletion protection").
PROTECTED = f"{KEEP_ON_PRUNE},{KEEP_ON_DELETE}"
#: Compare options (argo-cd v2.10.15 common/common.go AnnotationCompareOptions).
COMPARE_OPTIONS = "argocd.argoproj.io/compare-options"
#: An object Argo CD would prune but may not (Prune=false) stays in the cluster after its file
#: left git; without this compare option it keeps the Application OutOfSync for ever, and with
#: selfHeal Argo CD starts a sync every self-heal timeout (controller/state.go CompareAppState,
#: controller/appcontroller.go autoSync; docs/gitops.md, "Deletion protection").
IGNORE_EXTRANEOUS = "IgnoreExtraneous"
#: The annotations of every object that holds data: kept on prune and on cascade deletion, and
#: not counted as out of sync once its file is gone.
PROTECTED_ANNOTATIONS = {SYNC_OPTIONS: PROTECTED, COMPARE_OPTIONS: IGNORE_EXTRANEOUS}
#: What a guard carries (PriorityClass, ResourceQuota, LimitRange, NetworkPolicy): kept when its
#: Application is deleted, pruned when its file is removed (docs/gitops.md, "Deletion protection").
GUARD_ANNOTATIONS = {SYNC_OPTIONS: KEEP_ON_DELETE}
#: Sync options the GitOps rules look for (gitops-engine pkg/sync/common/types.go).
SKIP_DRY_RUN, SERVER_SIDE_APPLY = "SkipDryRunOnMissingResource=true", "ServerSideApply=true"

# --- Grafana ------------------------------------------------------------------------------------
#: The kube-prometheus-stack Grafana sidecar loads ConfigMaps carrying this label with this value
#: (KPS 55.5.1 values grafana.sidecar.dashboards.label/labelValue; k8s-sidecar selects label=value).
DASHBOARD_SIDECAR_LABEL, DASHBOARD_SIDECAR_LABEL_VALUE = "grafana_dashboard", "1"
#: The Grafana kube-prometheus-stack 55.5.1 runs (grafana chart 7.0.22, appVersion 10.2.3) and
#: the dashboard schemaVersion its DashboardMigrator migrates to (docs/observability.md).
GRAFANA_VERSION, GRAFANA_SCHEMA_VERSION = "10.2.3", 38

# --- TFJob (training-operator v1.7.0, docs/training.md) -----------------------------------------
#: Replica types of TFJob v1, in the order they are written.
TF_ROLES = ("Chief", "Master", "Worker", "PS", "Evaluator")
TF_CHIEF_ROLES = ("Chief", "Master")


def tf_role(key: str) -> str:
    """The replica type a tfReplicaSpecs key names: training-operator v1.7.0's defaulting renames
    a key of any case to its type (``worker`` -> ``Worker``; defaulting_utils.go
    setTypeNameToCamelCase, strings.EqualFold); any other key is returned as it is."""
    return next((role for role in TF_ROLES if role.lower() == key.lower()), key)
#: The container the operator finds by name to inject TF_CONFIG and the port.
TF_CONTAINER = "tensorflow"
#: The environment variable that tells the training code its checkpoint directory (COL113).
CHECKPOINT_ENV = "CHECKPOINT_DIR"
TF_PORT_NAME, TF_PORT = "tfjob-port", 2222
#: What training-operator v1.7.0 sets on every TFJob pod, over the template's labels
#: (pkg/controller.v1/common/pod.go createNewPod, job_controller.go GenLabels); replica-type
#: is the lower-case replica type, job-role=master marks the chief (or worker 0 without one).
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
TFJOB_CONTROLLER = "tfjob-controller"
TFJOB_GROUP, TFJOB_VERSION, TFJOB_KIND, TFJOB_PLURAL = "kubeflow.org", "v1", "TFJob", "tfjobs"
#: Where each Kubeflow training kind keeps its replicas (a map of replica type to ReplicaSpec,
#: each with ``replicas`` and a pod template): the json tags of kubeflow/training-operator v1.7.0
#: pkg/apis/kubeflow.org/v1/{tensorflow,pytorch,mpi,xgboost,mxnet,paddlepaddle}_types.go. Only
#: TFJobs are governed here (paused, resubmitted: COL118); the others' templates are still read.
KUBEFLOW_REPLICA_SPECS = {
    TFJOB_KIND: "tfReplicaSpecs",
    "PyTorchJob": "pytorchReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "MXJob": "mxReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
}
#: ``colocate check`` suppression on an object: ``"COL004: reason; COL108: reason"``.
IGNORE_ANNOTATION = "colocate.io/ignore"
#: Replicas an online Deployment grows to at the day's peak; ``colocate simulate --scenario peak``
#: scales it there to prove the scheduler still places every online pod.
PEAK_REPLICAS_ANNOTATION = "colocate.io/peak-replicas"
#: Marks a TFJob that ``colocate offline pause`` suspended, so resume starts only those.
PAUSED_BY_ANNOTATION = "colocate.io/paused-by"
#: A memory limit far above the request is memory the node does not have when every pod bursts:
#: the kubelet then evicts, or the kernel OOM-kills, whatever is furthest above its request.
#: 2x is the reference job tf-mnist-dist's ratio (request 4Gi, limit 8Gi).
MAX_MEMORY_BURST = 2

# --- Grace periods of offline pods (docs/training.md, "The TFJob contract")
#: At most this many seconds between SIGTERM and SIGKILL for an offline pod (COL107): a preempted
#: pod keeps its node that long, and the online pod that preempted it waits.
OFFLINE_MAX_GRACE_SECONDS = 60
#: At least this many for a TFJob replica (COL114): the window must hold one checkpoint save.
#: 30 is the Kubernetes default (k8s.io/api v0.28.15 core/v1 DefaultTerminationGracePeriodSeconds),
#: so only a job that shortens the default on purpose is refused.
TFJOB_MIN_GRACE_SECONDS = 30
#: The one runPolicy.cleanPodPolicy a TFJob may have (COL112): a finished or failed job deletes
#: every pod, so a failed job's survivors do not keep their GPUs (training-operator v1.7.0 defaults to None).
TFJOB_CLEAN_POD_POLICY = "All"

# --- TFJob state from kube-state-metrics (custom-resource-state, colocate/mixin/tfjob_state.py)
#: One series per TFJob condition: 1 when its status is "True", 0 when "False". kube-state-metrics
#: names it ``<metricNamePrefix>_<name>`` (pkg/customresourcestate/registry_factory.go fullName, v2.10.1).
TFJOB_METRIC_PREFIX, TFJOB_CONDITION_METRIC_NAME = "kube_tfjob", "status_condition"
TFJOB_CONDITION_METRIC = f"{TFJOB_METRIC_PREFIX}_{TFJOB_CONDITION_METRIC_NAME}"
#: One series per annotation key of a TFJob, labelled ``annotation``: the resubmitter's
#: disruption annotation tells a job failed by a disruption from one that failed on its own.
TFJOB_ANNOTATION_METRIC_NAME, TFJOB_ANNOTATION_LABEL = "annotation", "annotation"
TFJOB_ANNOTATION_METRIC = f"{TFJOB_METRIC_PREFIX}_{TFJOB_ANNOTATION_METRIC_NAME}"
#: Its labels besides namespace: the TFJob's name and the condition type.
TFJOB_NAME_METRIC_LABEL, TFJOB_CONDITION_LABEL = "tfjob", "type"

#: Annotation on a ServiceMonitor/PodMonitor naming the application metrics it scrapes
#: (``name:type``, comma-separated), so rule COL200 accepts queries on them.
SCRAPED_METRICS_ANNOTATION = "colocate.io/metrics"

# --- Scrape jobs (the ``job`` label Prometheus sets = the scraped Service's name) --------------
TRAINING_OPERATOR_JOB = "training-operator"
DCGM_EXPORTER_JOB = "dcgm-exporter"

# --- Alert severities (the ``severity`` label) -------------------------------------------------
#: Most urgent first. Alertmanager routes by them (colocate/mixin/routing.py): critical pages,
#: warning goes to chat, info is only visible in Alertmanager; each one inhibits the ones after it.
CRITICAL, WARNING, INFO = "critical", "warning", "info"
SEVERITIES = (CRITICAL, WARNING, INFO)

# --- kube-prometheus-stack ----------------------------------------------------------------------
KPS_CHART = "kube-prometheus-stack"
#: kubeadm's and kube-proxy's configuration APIs (Kubernetes 1.28), and the metrics ports
#: kube-prometheus-stack 55.5.1 scrapes: kubeEtcd.service.port 2381 (kubeadm's EtcdMetricsPort),
#: kubeProxy.service.port 10249 (ports.ProxyStatusPort).
KUBEADM_API_VERSION = "kubeadm.k8s.io/v1beta3"
KUBE_PROXY_API_VERSION = "kubeproxy.config.k8s.io/v1alpha1"
ETCD_METRICS_PORT = 2381
KUBE_PROXY_METRICS_PORT = 10249
#: templates/_helpers.tpl truncates the chart's fullname to 26 characters.
_KPS_FULLNAME_MAX = 26


def kps_fullname(release: str) -> str:
    """The chart's ``kube-prometheus-stack.fullname``: the release name when it contains the chart
    name, else ``<release>-kube-prometheus-stack``; at most 26 characters, no trailing '-'."""
    name = release if KPS_CHART in release else f"{release}-{KPS_CHART}"
    return name[:_KPS_FULLNAME_MAX].rstrip("-")


def sync_options(metadata: dict | None, annotation: str = SYNC_OPTIONS) -> frozenset[str]:
    """The Argo CD sync options an object's annotation sets: comma-separated, blanks trimmed,
    as gitops-engine reads them (pkg/sync/resource/annotations.go, GetAnnotationCSVs). With
    ``annotation=COMPARE_OPTIONS``, its compare options, read the same way (argo-cd v2.10.15
    util/resource HasAnnotationOption)."""
    value = ((metadata or {}).get("annotations") or {}).get(annotation)
    return frozenset(item.strip() for item in str(value or "").split(",") if item.strip())

# --- Resubmission of disrupted TFJobs (colocate/incluster/resubmit/, docs/resubmission.md) ----------------
#: The pod condition a 1.26+ control plane adds before it deletes a pod it disrupts, and every
#: reason it gives, none of them the job's fault (kubernetes v1.28.15 pkg/apis/core/types.go,
#: PodReasonPreemptionByScheduler ... PodReasonTerminationByKubelet; docs/resubmission.md).
DISRUPTION_CONDITION = "DisruptionTarget"
DISRUPTION_REASONS = ("PreemptionByScheduler", "EvictionByEvictionAPI", "DeletionByTaintManager",
                      "DeletionByPodGC", "TerminationByKubelet")
#: On a TFJob: how many times the resubmitter re-created it (a whole number, kept across re-creation).
RESUBMISSIONS_ANNOTATION = "colocate.io/resubmissions"
#: On a TFJob: the disruption evidence, recorded while the disrupted pod still exists
#: (JSON: reason, pod, uid of the TFJob incarnation, time).
DISRUPTION_ANNOTATION = "colocate.io/disruption"
#: On a TFJob: its own cap on resubmissions (overrides the controller's --max-resubmissions).
MAX_RESUBMISSIONS_ANNOTATION = "colocate.io/max-resubmissions"
#: On a TFJob: the hours its job file expects it to run for (``expectedHours``), read by
#: ``capacity`` and ``diff`` to count the GPU-hours waiting in the queue; informational only.
EXPECTED_HOURS_ANNOTATION = "colocate.io/expected-hours"
#: The most ``expectedHours`` a job file may give: a year (a larger figure is a slip, not a plan).
MAX_EXPECTED_HOURS = 8760
#: Events the resubmitter records on a TFJob.
RESUBMITTED_REASON, GAVE_UP_REASON, BLOCKED_REASON = "Resubmitted", "ResubmissionGivenUp", "ResubmissionBlocked"
#: Its metrics (prometheus_client appends _total to counters).
RESUBMISSIONS_METRIC = "colocate_tfjob_resubmissions_total"      # counter {namespace, reason}
GIVEN_UP_METRIC = "colocate_tfjob_given_up"                      # gauge {namespace, tfjob}: 1 while given up
BLOCKED_METRIC = "colocate_tfjob_resubmission_blocked"           # gauge {namespace, tfjob}: 1 while its old pods stay
RESUBMITTER = "colocate-resubmitter"

# --- Kueue, the admission queue of training (docs/queue.md) ------------------------------------
#: API group/version of Kueue's queue objects (kubernetes-sigs/kueue v0.10.6 apis/kueue/v1beta1).
KUEUE_API = "kueue.x-k8s.io/v1beta1"
#: The label that puts a job in a LocalQueue (pkg/controller/constants/constants.go QueueLabel).
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
#: The label that gives a job a WorkloadPriorityClass (same file, WorkloadPriorityClassLabel).
WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
#: Kueue's metrics Service (config/default@v0.10.6, name prefix ``kueue-``): the scrape job is
#: named after it.
KUEUE_JOB = "kueue-controller-manager-metrics-service"
