"""A cdk8s app that describes its cluster in Python instead of colocate.yaml's ``cluster:`` section.

colocate is used as a library: the model (``colocate.model``) says the cluster, ``colocate.app``
builds and writes the same charts ``colocate synth`` does. Python can say what YAML cannot (pools
made in a loop, values computed from an inventory); the settings (registry, schedule, release)
still come from colocate.yaml. This is the reference cluster, the one colocate.yaml describes:
tests/test_python_cluster.py checks that both forms give the same Cluster and the same dist/.

Run it from a colocate repository: ``python examples/python-cluster/main.py [OUTDIR]``.
"""
from __future__ import annotations

import sys
from pathlib import Path

from colocate import app, config
from colocate.model.cluster import Cluster, OnlineServiceSpec
from colocate.model.pools import KubeletReservations, NodePoolProps, Taint
from colocate.model.slo import LatencySlo
from colocate.model.tiers import PriorityTier


def cluster(registry_host: str) -> Cluster:
    """4 online, 6 mixed and 2 monitoring nodes (docs/node-pools.md); ``registry_host``: the
    registry mirror the online services' images come from."""
    pools = (
        NodePoolProps("online", nodes=4, cpu="16", memory="64Gi", gpus=1, labels={"role": "online"},
                      taints=(Taint("online", "true", "NoSchedule"),),
                      kubelet=KubeletReservations(system_reserved={"cpu": "500m", "memory": "2Gi"},
                                                  kube_reserved={"cpu": "500m", "memory": "1Gi"},
                                                  cpu_manager_policy="static")),
        NodePoolProps("mixed", nodes=6, cpu="32", memory="128Gi", gpus=2, labels={"role": "mixed"},
                      kubelet=KubeletReservations(system_reserved={"cpu": "500m", "memory": "4Gi"},
                                                  cpu_manager_policy="static")),
        NodePoolProps("monitoring", nodes=2, cpu="8", memory="32Gi", labels={"role": "monitoring"},
                      taints=(Taint("monitoring", "true", "NoSchedule"),),
                      kubelet=KubeletReservations(system_reserved={"cpu": "250m", "memory": "1Gi"})),
    )
    tiers = (
        PriorityTier("online-high", 1000000, "online",
                     "Online inference: preempts offline training when capacity runs short."),
        PriorityTier("offline-batch", 100000, "offline",
                     "Offline training: runs in idle capacity, never preempts, and is preempted first.",
                     preemption_policy="Never"),
        PriorityTier("prepull-idle", 1000, "background",
                     "Training-image pre-pull: yields to everything, never preempts.", preemption_policy="Never"),
    )
    recsys = OnlineServiceSpec("recsys-inference", f"{registry_host}/ml/recsys-inference:1.0.0", cpu="4",
                               memory="8Gi", port=8080, replicas=2, peak_replicas=12, gpus=1,
                               slo=LatencySlo("http_request_duration_seconds", 0.005))
    return Cluster(pools=pools, tiers=tiers, online_pool="online", mixed_pool="mixed", monitoring_pool="monitoring",
                   online_namespace="online", training_namespace="training", monitoring_namespace="monitoring",
                   kubeflow_namespace="kubeflow", prometheus_release="kube-prometheus-stack",
                   online_services=(recsys,), online_service_pools=("online", "mixed"),
                   prepull_namespace="image-prepull", control_namespace="colocate-system", training_claims=100,
                   training_queue="training", kueue_namespace="kueue-system")


if __name__ == "__main__":
    settings = config.load()
    outdir = Path(sys.argv[1]) if len(sys.argv) > 1 else app.DIST
    app.synth(outdir, cluster=cluster(settings.registry_host))
    print(f"wrote {outdir}")
