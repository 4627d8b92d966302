"""Kueue, the admission queue of training (docs/queue.md): the pinned upstream release, and the
queue this cluster's training goes through.

The manager (CRDs, RBAC, webhooks, Deployment) is upstream's kustomize root ``config/default``
at the pinned tag (vendored), built into ``apps/kueue-upstream`` with our patches
(``KueueChart.rendered``). This chart (``apps/kueue``) holds what we add: the queue, generated
from the model (constructs/training_queue.py), and the ServiceMonitor that scrapes the manager.
"""
from __future__ import annotations

from typing import Mapping

import yaml
from constructs import Construct

from colocate.base import goyaml, vendored
from colocate.charts._base import ColocateChart
from colocate.charts.platform import pool_totals
from colocate.charts.upstream import Rendered
from colocate.config import Config
from colocate.constructs.node_pool import NodePool
from colocate.constructs.service_monitor import ServiceMonitor, ServiceMonitorProps
from colocate.constructs.training_queue import FlavorProps, TrainingQueue, TrainingQueueProps
from colocate.model.cluster import Cluster
from colocate.model.names import CLUSTER_CRITICAL, KUEUE_JOB, POOL_SELECTOR_LABEL, PROTECTED_ANNOTATIONS
from colocate.synth.vendor_render import KustomizeSource

#: The vendored tree (vendor/sources.yaml) and upstream's kustomize root inside it.
VENDORED_TREE = "kueue"
OVERLAY = "default"
#: config/default/kustomization.yaml@v0.10.6 creates this Namespace (``namespace: kueue-system``,
#: ``namePrefix: kueue-``); the platform Application owns ours (PSA labels, Prune=false).
UPSTREAM_NAMESPACE = "kueue-system"
#: The image config/components/manager/kustomization.yaml@v0.10.6 names (a staging build); the
#: release's manifests.yaml replaces it with this one, tagged with the release.
UPSTREAM_IMAGE = "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue"
RELEASE_IMAGE = "registry.k8s.io/kueue/kueue"
DEPLOYMENT = "kueue-controller-manager"
MANAGER_CONTAINER = "manager"
#: config/default/manager_auth_proxy_patch.yaml@v0.10.6: a kube-rbac-proxy in front of /metrics.
#: Prometheus scrapes the manager directly here, as it does the training-operator.
AUTH_PROXY_CONTAINER = "kube-rbac-proxy"
METRICS_SERVICE = KUEUE_JOB
METRICS_PORT_NAME = "metrics"
METRICS_PORT = 8080
#: The on-demand visibility API (config/components/visibility@v0.10.6): an aggregated APIService
#: served by the manager. We read queues from Kueue's metrics instead, and an unavailable
#: aggregated API would fail discovery for every client while the manager is down.
VISIBILITY = (("apiregistration.k8s.io/v1", "APIService", "v1beta1.visibility.kueue.x-k8s.io"),
              ("v1", "Service", "kueue-visibility-server"),
              ("rbac.authorization.k8s.io/v1", "RoleBinding", "kueue-visibility-server-auth-reader"))
SYNC_WAVE = -5
#: Upstream's webhook configurations, as config/components/webhook/manifests.yaml@v0.10.6 lists
#: them; the rendered ones carry the ``kueue-`` name prefix.
WEBHOOKS_FILE = "components/webhook/manifests.yaml"
#: Every webhook is failurePolicy Fail. Those of the integrations we do not enable (Pods,
#: Deployments, StatefulSets, Jobs, the other Kubeflow and Ray kinds) would make a Kueue outage
#: refuse every online Deployment's rollout: only the TFJob's and Kueue's own objects' are kept.
KEPT_WEBHOOK_GROUPS = {"kueue.x-k8s.io"}
KEPT_WEBHOOK_RESOURCES = {("kubeflow.org", "tfjobs")}


def dropped_webhooks() -> list[dict]:
    """Patches deleting, from upstream's two webhook configurations, the webhooks of the kinds
    Kueue does not manage here (KEPT_WEBHOOK_*), read from the vendored file so a bump follows."""
    tree = vendored.load()[VENDORED_TREE]
    patches = []
    for doc in goyaml.load_all_plain((tree.root / WEBHOOKS_FILE).read_text(), WEBHOOKS_FILE):
        dropped = [w["name"] for w in doc["webhooks"] if not all(
            group in KEPT_WEBHOOK_GROUPS or (group, resource) in KEPT_WEBHOOK_RESOURCES
            for rule in w["rules"] for group in rule["apiGroups"] for resource in rule["resources"])]
        name = f"kueue-{doc['metadata']['name']}"
        patch = {"apiVersion": doc["apiVersion"], "kind": doc["kind"], "metadata": {"name": name},
                 "webhooks": [{"name": w, "$patch": "delete"} for w in dropped]}
        patches.append({"target": {"kind": doc["kind"], "name": name}, "patch": yaml.safe_dump(patch, sort_keys=False)})
    return patches


def manager_configuration(config: Config) -> dict:
    """The manager's Configuration (config.kueue.x-k8s.io/v1beta1, apis/config/v1beta1 at the pin)."""
    assert config.kueue is not None
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": f":{METRICS_PORT}", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        # Every TFJob is Kueue's (the only framework on): one without a queue label is suspended
        # at creation and never admitted, instead of starting outside the quota and the day's hold
        # (pkg/controller/jobframework/defaults.go WorkloadShouldBeSuspended). COL121 tells its
        # author before merge.
        "manageJobsWithoutQueueName": True,
        # All or nothing: a job whose pods are not all ready in time gives its GPUs back and
        # goes to the back of the queue (pkg/controller/core/workload_controller.go).
        "waitForPodsReady": {"enable": True, "timeout": f"{config.kueue.pods_ready_timeout_seconds}s",
                             "blockAdmission": True,
                             "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60,
                                                   "backoffMaxSeconds": 3600}},
        "integrations": {"frameworks": ["kubeflow.org/tfjob"]},
    }


class KueueChart(ColocateChart):
    """``apps/kueue``: the training queue and the manager's ServiceMonitor."""

    # After the manager and its CRDs (wave -5), before the TFJobs (wave 0).
    sync_wave = -4
    # The day's pause sets the ClusterQueue's stopPolicy (colocate offline pause, the schedule's
    # CronJobs): git leaves it unset, so a sync's apply never touches it, and ignoreDifferences
    # keeps it from reading as drift. No RespectIgnoreDifferences: a sync in flight would write back
    # the stopPolicy it read when it started (charts/training.py says how that went for suspend).
    ignore_differences = ({"group": "kueue.x-k8s.io", "kind": "ClusterQueue", "jsonPointers": ["/spec/stopPolicy"]},)

    def __init__(self, scope: Construct, cluster: Cluster, config: Config, pools: Mapping[str, NodePool]):
        super().__init__(scope, "kueue", folder="apps/kueue")
        self.cluster = cluster
        self.platform_pool = pools[cluster.monitoring_pool]
        training = [pools[cluster.mixed_pool]]
        self.queue = TrainingQueue(self, "queue", TrainingQueueProps(
            name=cluster.training_queue, namespaces=(cluster.training_namespace,),
            flavors=[FlavorProps(p.name, {POOL_SELECTOR_LABEL: p.name}, pool_totals([p])) for p in training],
            tiers=[t for t in cluster.tiers if t.role == "offline"]))
        ServiceMonitor(self, "servicemonitor", ServiceMonitorProps(
            name=DEPLOYMENT, namespace=cluster.kueue_namespace, service_labels={"control-plane": "controller-manager"},
            port=METRICS_PORT_NAME, monitor_labels=cluster.monitor_labels))

    def rendered(self, config: Config) -> list[Rendered]:
        """Upstream's config/default with our namespace, mirrored image, configuration and placement."""
        assert config.kueue is not None
        version = config.kueue.version
        pool = self.platform_pool
        manager = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": DEPLOYMENT},
                   "spec": {"template": {"spec": {
                       "priorityClassName": CLUSTER_CRITICAL,
                       "nodeSelector": dict(pool.labels), "tolerations": pool.tolerations(),
                       "containers": [
                           {"name": MANAGER_CONTAINER,
                            "args": ["--config=/controller_manager_config.yaml", "--zap-log-level=2",
                                     "--feature-gates=VisibilityOnDemand=false"],
                            "ports": [{"name": METRICS_PORT_NAME, "containerPort": METRICS_PORT, "protocol": "TCP"}]},
                           {"name": AUTH_PROXY_CONTAINER, "$patch": "delete"}]}}}}
        # The Service's only port was the proxy's https (8443): replaced, not merged (merge key: port).
        metrics_ports = [{"op": "replace", "path": "/spec/ports", "value": [
            {"name": METRICS_PORT_NAME, "port": METRICS_PORT, "targetPort": METRICS_PORT_NAME, "protocol": "TCP"}]}]
        configuration = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config"},
                         "data": {"controller_manager_config.yaml": yaml.safe_dump(manager_configuration(config),
                                                                                    sort_keys=False)}}
        patches = [{"target": {"kind": "Deployment", "name": DEPLOYMENT}, "patch": yaml.safe_dump(manager, sort_keys=False)},
                   {"target": {"kind": "Service", "name": METRICS_SERVICE}, "patch": yaml.safe_dump(metrics_ports, sort_keys=False)},
                   {"target": {"kind": "ConfigMap", "name": "kueue-manager-config"},
                    "patch": yaml.safe_dump(configuration, sort_keys=False)},
                   *({"target": {"kind": kind, "name": name}, "patch": f"$patch: delete\napiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n"}
                     for api, kind, name in (*VISIBILITY, ("v1", "Namespace", UPSTREAM_NAMESPACE))),
                   *dropped_webhooks()]
        source = KustomizeSource(
            VENDORED_TREE, OVERLAY, self.cluster.kueue_namespace,
            images=(f"{UPSTREAM_IMAGE}={self.mirrored(config, f'{RELEASE_IMAGE}:{version}')}",),
            patches=tuple(patches),
            # Removing a CRD deletes every object of its kind: never pruned, never cascaded.
            annotate={"CustomResourceDefinition": PROTECTED_ANNOTATIONS})
        return [Rendered(
            f"{self.app_name}-upstream", "kueue-upstream", source, version=version, destination_namespace=self.cluster.kueue_namespace, wave=SYNC_WAVE,
            # The Workload CRD is 305 KB of JSON, over client-side apply's 262144-byte annotation.
            sync_options=("ServerSideApply=true", "PruneLast=true"),
            # Deleting this Application must not cascade: removing the CRDs deletes every queue.
            cascade_delete=False,
        )]
