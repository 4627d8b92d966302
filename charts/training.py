"""The training Application: one TFJob (and its checkpoint claim) per job file, and the
DaemonSet that pre-pulls the images those jobs use."""
from __future__ import annotations

from typing import Sequence

from constructs import Construct

from colocate.model.cluster import Cluster
from colocate.config import Config
from colocate.charts._base import ColocateChart
from colocate.constructs._k8s import emit
from colocate.constructs.namespace import Namespace, NamespaceProps
from colocate.constructs.image_prepull import ImagePrepull, ImagePrepullProps
from colocate.constructs.node_pool import NodePool
from colocate.constructs.tfjob import RoleSpec, TFJob, TFJobProps
from colocate.errors import InputError, PropError
from colocate.synth.jobs import JobFile, file_path, file_words
from colocate.model.names import GUARD_ANNOTATIONS
from colocate.model.pools import PAUSE_IMAGE

PREPULL_NAME = "training-image-prepull"
#: The fields of a queued TFJob that Kueue writes (spec.ignoreDifferences of the Application).
TFJOB_QUEUE_FIELDS = {"group": "kubeflow.org", "kind": "TFJob", "jqPathExpressions": [
    ".spec.runPolicy.suspend", ".spec.tfReplicaSpecs[].template.spec.nodeSelector",
    ".spec.tfReplicaSpecs[].template.spec.tolerations"]}


class TrainingChart(ColocateChart):
    """``apps/training``: the cluster's training jobs, after the operator and its CRDs."""

    sync_wave = 0

    def __init__(self, scope: Construct, cluster: Cluster, config: Config, pools: dict[str, NodePool],
                 jobs: Sequence[JobFile]):
        super().__init__(scope, "training", folder="apps/training")
        if config.queue:
            # Kueue owns whether a queued job runs and where its pods go: it sets runPolicy.suspend
            # and adds the flavor's nodeSelector at admission, and undoes both on eviction
            # (pkg/controller/jobframework/reconciler.go). git never sets those fields, so a sync's
            # apply leaves them alone, and ignoreDifferences keeps them from reading as drift. Not
            # RespectIgnoreDifferences: it copies the live values Argo CD compared at the start of
            # the sync into what it applies (argo-cd v2.10.15 controller/sync.go
            # normalizeTargetResources), and the real components showed that copy re-suspending a
            # job Kueue had admitted a second earlier: its pods deleted, then counted failed.
            self.ignore_differences = (TFJOB_QUEUE_FIELDS,)
        mixed = pools[cluster.mixed_pool]
        self.jobs = [self._tfjob(job, cluster, config, mixed) for job in jobs]
        # The pre-pull's Namespace and its deny-all policy stay when no job is left: the folder
        # is then never empty, so the colocate-training Application's path still exists and Argo
        # CD prunes the last TFJobs instead of stopping at "app path does not exist".
        self._prepull_namespace(cluster)
        images = sorted({job.image for job in jobs})
        if images:
            self._prepull(cluster, config, mixed, images)

    def _tfjob(self, job: JobFile, cluster: Cluster, config: Config, pool: NodePool) -> TFJob:
        try:
            return TFJob(self, job.name, TFJobProps(
                name=job.name, namespace=cluster.training_namespace, image=job.image,
                roles={role: RoleSpec(**spec) for role, spec in job.roles().items()},
                pools=(pool,), priority_class=cluster.tier("offline").name,
                storage_class=config.shared_storage_class, image_pull_secret=config.registry_pull_secret,
                queue=cluster.training_queue if config.queue else None,
                **job.options(),
            ))
        except PropError as exc:
            raise InputError(job.file, file_path(exc.prop), file_words(exc.reason)) from exc

    def _prepull_namespace(self, cluster: Cluster) -> None:
        ns = cluster.prepull_namespace
        # Its own namespace: the pods run at the background tier, below the offline tier the
        # training namespace requires, and need no network at all (the kubelet pulls images).
        Namespace(self, "prepull-namespace", NamespaceProps(name=ns, enforce="restricted"))
        emit(self, "prepull-deny", {
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny", "namespace": ns, "annotations": dict(GUARD_ANNOTATIONS)},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
        })

    def _prepull(self, cluster: Cluster, config: Config, pool: NodePool, images: list[str]) -> None:
        ns = cluster.prepull_namespace
        ImagePrepull(self, "prepull", ImagePrepullProps(
            name=PREPULL_NAME, namespace=ns, images=images, pool=pool,
            priority_class=cluster.tier("background").name, pause_image=self.mirrored(config, PAUSE_IMAGE),
            image_pull_secret=config.registry_pull_secret,
        ))
