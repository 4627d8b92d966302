"""The training-control Application: what colocate itself runs in the cluster to steer training,
in colocate's own image (the Dockerfile at the repository root), in a namespace of its own.

* the resubmitter, which brings TFJobs failed by a disruption back from their checkpoint
  (docs/resubmission.md);
* with colocate.yaml ``schedule``, the CronJobs that pause training before the day peak and
  resume it after (docs/schedule.md).

Its own Application, not the training one's: the controller and the CronJobs outlive any job
file, sync before the TFJobs, and a change to them is reviewed apart from the jobs.
docs/training-control.md gives the placement, priority and RBAC, and why.
"""
from __future__ import annotations

from constructs import Construct

from colocate.charts._base import ColocateChart
from colocate.config import Config
from colocate.constructs.namespace import Namespace, NamespaceProps
from colocate.constructs.node_pool import NodePool
from colocate.constructs.training_control import (ControlPod, OfflineSchedule, OfflineScheduleProps, Resubmitter,
                                                   ResubmitterProps)
from colocate.model.cluster import Cluster
from colocate.model.names import CLUSTER_CRITICAL, PART_OF, RESUBMITTER

#: With the training-operator Application it complements: after the platform (namespaces) and
#: kube-prometheus-stack (the ServiceMonitor CRD), before the TFJobs (wave 0).
SYNC_WAVE = -5
#: Prefix of the schedule's CronJobs and the name of their ServiceAccount.
SCHEDULE_NAME = f"{PART_OF}-offline"
#: The resubmitter is a cluster add-on controller, like the training-operator: if training could
#: preempt it, preempted jobs would stay failed exactly when it is needed. There is no room for a
#: user tier between online-high and offline-batch (10x apart, rule COL001), and a tier above
#: online-high would be one more class for the same thing: it takes the built-in class the
#: operator and the monitoring stack on its pool already use (docs/training-control.md).
PRIORITY_CLASS = CLUSTER_CRITICAL


class TrainingControlChart(ColocateChart):
    """``apps/training-control``: its namespace, the resubmitter and the schedule's CronJobs."""

    sync_wave = SYNC_WAVE

    def __init__(self, scope: Construct, cluster: Cluster, config: Config, pools: dict[str, NodePool]):
        super().__init__(scope, "training-control", folder="apps/training-control")
        ns = cluster.control_namespace
        # Nothing here needs more than the restricted Pod Security level.
        Namespace(self, "namespace", NamespaceProps(name=ns, enforce="restricted", warn_and_audit="restricted"))
        # The monitoring pool: tainted, so no training pod can land there and starve it.
        pod = ControlPod(image=config.colocate_image, priority_class=PRIORITY_CLASS,
                         pool=pools[cluster.monitoring_pool], image_pull_secret=config.registry_pull_secret)
        training = (cluster.training_namespace,)
        self.resubmitter = Resubmitter(self, "resubmitter", ResubmitterProps(
            name=RESUBMITTER, namespace=ns, training_namespaces=training, pod=pod,
            monitor_labels=cluster.monitor_labels, scrape_from_namespaces=(cluster.monitoring_namespace,),
            guard_annotations=config.admission_policies, guard_actions=config.admission_actions))
        self.schedule = OfflineSchedule(self, "schedule", OfflineScheduleProps(
            name=SCHEDULE_NAME, namespace=ns, training_namespaces=training, schedule=config.schedule,
            cluster_queue=cluster.training_queue if config.queue else None, pod=pod)) if config.schedule else None
