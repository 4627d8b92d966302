"""The Kubeflow training-operator: the pinned upstream release, plus what we add to it.

The operator (CRDs, RBAC, Deployment, Service) is taken from the upstream kustomize overlay
``manifests/overlays/standalone`` at the pinned tag (vendored), built into ``apps/training-operator-upstream``
with its own Application (``TrainingOperatorChart.rendered``); re-modelling ~1 MB of generated CRDs would
only let them drift.
This chart (``apps/training-operator``) holds what we add: the ServiceMonitor that has
kube-prometheus-stack scrape the operator's ``/metrics``.
"""
from __future__ import annotations

from typing import Mapping

import yaml
from constructs import Construct

from colocate.model.cluster import Cluster
from colocate.config import Config
from colocate.charts._base import ColocateChart
from colocate.charts.upstream import Rendered
from colocate.synth.vendor_render import KustomizeSource
from colocate.constructs.node_pool import NodePool
from colocate.constructs.service_monitor import ServiceMonitor, ServiceMonitorProps
from colocate.model.names import CLUSTER_CRITICAL, PROTECTED_ANNOTATIONS, TRAINING_OPERATOR_JOB
from colocate.errors import InputError

#: Upstream image and tag each release's standalone overlay pins
#: (``manifests/overlays/standalone/kustomization.yaml@<version>``). A version bump needs its
#: tag here, or the image override would run the old operator against the new CRDs.
OPERATOR_IMAGE = "kubeflow/training-operator"
OPERATOR_TAGS = {"v1.7.0": "v1-855e096"}
OVERLAY = "manifests/overlays/standalone"
#: The vendored tree (vendor/sources.yaml) that holds the release's manifests/ folder.
VENDORED_TREE = "training-operator"
#: The overlay creates this Namespace; the platform Application owns it (PSA labels, Prune=false).
UPSTREAM_NAMESPACE = "kubeflow"
#: ``manifests/base/service.yaml@v1.7.0``: Service ``training-operator``, label
#: ``app: training-operator``, port ``monitoring-port`` (8080, controller-runtime /metrics).
SERVICE_LABELS = {"app": "training-operator"}
#: ``manifests/base/deployment.yaml@v1.7.0``.
OPERATOR_DEPLOYMENT = "training-operator"
METRICS_PORT = "monitoring-port"
SYNC_WAVE = -5
#: The one Kubeflow kind the cluster governs (queued by Kueue, paused, resubmitted, judged by
#: check): ``--enable-scheme`` of cmd/training-operator.v1/main.go@v1.7.0 (default: every scheme).
SERVED_SCHEMES = ("tfjob",)
#: manifests/base/crds@v1.7.0's other CRDs, left out of dist/ (COL118 refuses their kinds).
UNSERVED_CRDS = ("mpijobs.kubeflow.org", "mxjobs.kubeflow.org", "paddlejobs.kubeflow.org",
                 "pytorchjobs.kubeflow.org", "xgboostjobs.kubeflow.org")
#: ``manifests/base/deployment.yaml@v1.7.0`` sets no PriorityClass, so the operator would run at
#: priority 0, below the training pods it manages: on a full mixed node they could preempt it
#: and no TFJob would be reconciled. It is a cluster add-on controller; give it the built-in
#: class for those.
OPERATOR_PRIORITY_CLASS = CLUSTER_CRITICAL
#: ``manifests/base/deployment.yaml@v1.7.0``: the operator's container, which sets no resources.
OPERATOR_CONTAINER = "training-operator"
#: Our figures for a controller-runtime manager with a few informers (upstream gives none); no
#: memory limit, so a large cluster's caches never get it OOM-killed mid-reconcile.
OPERATOR_RESOURCES = {"requests": {"cpu": "100m", "memory": "256Mi"}}


class TrainingOperatorChart(ColocateChart):
    """``apps/training-operator``: the operator's ServiceMonitor."""

    sync_wave = SYNC_WAVE

    def __init__(self, scope: Construct, cluster: Cluster, pools: Mapping[str, NodePool]):
        super().__init__(scope, "training-operator", folder="apps/training-operator")
        self.cluster = cluster
        self.platform_pool = pools[cluster.monitoring_pool]
        ns = cluster.kubeflow_namespace
        # The ServiceMonitor CRD comes from the monitoring Application (dry run skips it).
        ServiceMonitor(self, "servicemonitor", ServiceMonitorProps(
            name=TRAINING_OPERATOR_JOB, namespace=ns, service_labels=SERVICE_LABELS, port=METRICS_PORT,
            monitor_labels=cluster.monitor_labels))

    def rendered(self, config: Config) -> list[Rendered]:
        """The pinned upstream operator: the overlay built with our namespace, mirrored image and patches."""
        cluster = self.cluster
        version = config.training_operator_version
        tag = OPERATOR_TAGS.get(version)
        if tag is None:
            raise InputError("colocate.yaml", "$.trainingOperator.version", f"{version!r} has no known operator "
                             f"image tag; add it to OPERATOR_TAGS in charts/training_operator.py from "
                             f"{OVERLAY}/kustomization.yaml@{version} (known: {', '.join(sorted(OPERATOR_TAGS))})")
        delete_namespace = (f"$patch: delete\napiVersion: v1\nkind: Namespace\n"
                            f"metadata:\n  name: {UPSTREAM_NAMESPACE}\n")
        # Upstream sets no PriorityClass, placement or requests: on a full mixed node the training
        # pods it manages could preempt it, and beside bursting training it had cpu.shares 2
        # (COL008, COL013). It runs with the other cluster services, on the monitoring pool.
        pool = self.platform_pool
        operator = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": OPERATOR_DEPLOYMENT},
                    "spec": {"template": {"spec": {
                        "priorityClassName": OPERATOR_PRIORITY_CLASS,
                        "nodeSelector": dict(pool.labels), "tolerations": pool.tolerations(),
                        "containers": [{"name": OPERATOR_CONTAINER, "resources": dict(OPERATOR_RESOURCES),
                                        "args": [f"--enable-scheme={s}" for s in SERVED_SCHEMES]}]}}}}
        operator_patch = yaml.safe_dump(operator, sort_keys=False)
        # The kinds the cluster does not govern (no queue, pause or resubmission) are not served:
        # their CRDs are left out, and the operator runs no controller for them.
        unserved = [{"target": {"kind": "CustomResourceDefinition", "name": crd},
                     "patch": f"$patch: delete\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
                              f"metadata:\n  name: {crd}\n"} for crd in UNSERVED_CRDS]
        source = KustomizeSource(
            VENDORED_TREE, OVERLAY.removeprefix("manifests/"), cluster.kubeflow_namespace,
            images=(f"{OPERATOR_IMAGE}={self.mirrored(config, f'{OPERATOR_IMAGE}:{tag}')}",),
            patches=({"target": {"kind": "Namespace", "name": UPSTREAM_NAMESPACE}, "patch": delete_namespace},
                     {"target": {"kind": "Deployment", "name": OPERATOR_DEPLOYMENT}, "patch": operator_patch},
                     *unserved),
            # Removing a CRD deletes every object of its kind: never pruned, never cascaded.
            annotate={"CustomResourceDefinition": PROTECTED_ANNOTATIONS})
        return [Rendered(
            f"{self.app_name}-upstream", "training-operator-upstream", source, version=version,
            destination_namespace=cluster.kubeflow_namespace, wave=SYNC_WAVE,
            # The CRDs are ~230-250 KB of JSON, too close to the 262144-byte last-applied
            # annotation of client-side apply (docs/gitops.md).
            sync_options=("ServerSideApply=true", "PruneLast=true"),
            # Deleting this Application must not cascade: removing the CRDs deletes every TFJob.
            cascade_delete=False,
        )]
