"""What cannot run offline, and what stands in for it. Every Application's objects are the real
ones Argo CD applies from dist/ (the charts and the operator overlay are rendered at synth time);
what the simulation cannot run is:

- containers: kwok plays every kubelet (pods become Running; a Job's pods exit 0 at once);
- storage: the simulated provisioner binds the claims of the StorageClasses the cluster provides;
- admission webhooks: their server is a container, so it does not run; failurePolicy decides;
- workloads an operator makes from its custom resources: prometheus-operator is a container, so
  the StatefulSets it would make from each Prometheus and Alertmanager are made here
  (:func:`reconcile_operators`), labelled as stand-ins, and the resource's status says Available
  once its pods are, as the operator's would (Argo CD's health check for Prometheus reads it)."""
from __future__ import annotations

import urllib.error
from typing import Any, Mapping

from colocate.simulate.local_cluster import ControlPlane, SimulationError

STAND_IN_ANNOTATION = "colocate.io/simulated-stand-in"
#: Any image: kwok starts no container.
IMAGE = "registry.k8s.io/pause:3.9"
MONITORING = "monitoring.coreos.com/v1"
#: Per custom resource kind that prometheus-operator turns into a StatefulSet: the StatefulSet's
#: and its volume's name prefix, and its main container (prometheus-operator v0.70.0,
#: pkg/prometheus/statefulset.go, pkg/alertmanager/statefulset.go: prometheus-<name>,
#: alertmanager-<name>; the claim template <prefix>-<name>-db).
OPERATED = {"Prometheus": "prometheus", "Alertmanager": "alertmanager"}
_SCHEDULING = ("nodeSelector", "affinity", "tolerations", "priorityClassName", "securityContext",
               "serviceAccountName", "topologySpreadConstraints")
#: The container settings prometheus-operator gives its containers (restricted Pod Security).
_CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                       "capabilities": {"drop": ["ALL"]}}


def reconcile_operators(cp: ControlPlane) -> None:
    """One pass of the stand-in for prometheus-operator: a StatefulSet per Prometheus and
    Alertmanager (owned by it, so deleting the resource deletes it), and the resource's status."""
    for kind, prefix in OPERATED.items():
        try:
            resources = cp.items(cp.path(MONITORING, kind))
        except (SimulationError, urllib.error.HTTPError):
            continue  # its CRD is not (yet) served
        for resource in resources:
            if resource["metadata"].get("deletionTimestamp"):
                continue
            try:
                _statefulset(cp, kind, prefix, resource)
                _status(cp, kind, prefix, resource)
            except urllib.error.HTTPError:
                continue  # the next pass retries (the namespace terminating, a conflict)


def _statefulset(cp: ControlPlane, kind: str, prefix: str, resource: Mapping[str, Any]) -> None:
    meta, spec = resource["metadata"], resource.get("spec") or {}
    name = f"{prefix}-{meta['name']}"
    labels = {"app.kubernetes.io/name": prefix, "app.kubernetes.io/instance": meta["name"],
              "app.kubernetes.io/managed-by": "prometheus-operator", "operator.prometheus.io/name": meta["name"]}
    container: dict[str, Any] = {"name": prefix, "image": IMAGE, "securityContext": _CONTAINER_SECURITY}
    if spec.get("resources"):
        container["resources"] = spec["resources"]
    pod = {"containers": [container], **{k: spec[k] for k in _SCHEDULING if spec.get(k)}}
    body: dict[str, Any] = {"serviceName": f"{prefix}-operated", "replicas": int(spec.get("replicas", 1)),
                            "selector": {"matchLabels": labels},
                            "template": {"metadata": {"labels": labels}, "spec": pod}}
    claim = ((spec.get("storage") or {}).get("volumeClaimTemplate") or {}).get("spec")
    if claim:
        volume = f"{prefix}-{meta['name']}-db"
        container["volumeMounts"] = [{"name": volume, "mountPath": "/data"}]
        body["volumeClaimTemplates"] = [{"metadata": {"name": volume}, "spec": claim}]
    cp.apply({"apiVersion": "apps/v1", "kind": "StatefulSet",
              "metadata": {"name": name, "namespace": meta["namespace"], "labels": labels,
                           "annotations": {STAND_IN_ANNOTATION: f"what prometheus-operator would make from "
                                                                f"{kind}/{meta['namespace']}/{meta['name']}"},
                           "ownerReferences": [{"apiVersion": MONITORING, "kind": kind, "name": meta["name"],
                                                "uid": meta["uid"], "controller": True,
                                                "blockOwnerDeletion": True}]},
              "spec": body}, manager="colocate-simulate-operator-stand-in")


def _status(cp: ControlPlane, kind: str, prefix: str, resource: Mapping[str, Any]) -> None:
    """The resource's status as prometheus-operator v0.70.0 writes it (pkg/operator/
    statefulset_reporter.go): Available True once every replica is ready, else False
    (SomePodsNotReady), and Reconciled."""
    meta = resource["metadata"]
    sts = cp.request("GET", cp.path("apps/v1", "StatefulSet", meta["namespace"], f"{prefix}-{meta['name']}"))
    want = int((resource.get("spec") or {}).get("replicas", 1))
    ready = int((sts.get("status") or {}).get("readyReplicas", 0))
    available = ready >= want
    old = {c.get("type"): c.get("status") for c in (resource.get("status") or {}).get("conditions") or []}
    if old.get("Available") == ("True" if available else "False") and old.get("Reconciled") == "True":
        return
    now = sts["metadata"]["creationTimestamp"]
    generation = meta.get("generation", 1)
    conditions = [{"type": "Available", "status": "True" if available else "False", "lastTransitionTime": now,
                   "observedGeneration": generation, **({} if available else {
                       "reason": "SomePodsNotReady", "message": f"{want - ready}/{want} pods are not ready"})},
                  {"type": "Reconciled", "status": "True", "lastTransitionTime": now, "observedGeneration": generation}]
    status = {"paused": False, "replicas": want, "updatedReplicas": ready, "availableReplicas": ready,
              "unavailableReplicas": want - ready, "conditions": conditions}
    if kind == "Prometheus":
        status["shards"] = int((resource.get("spec") or {}).get("shards", 1))
    path = cp.path(MONITORING, kind, meta["namespace"], meta["name"])
    cp.request("PATCH", f"{path}/status", {"status": status}, content_type="application/merge-patch+json")


def describe(cp: ControlPlane, storage_classes: list[str], kueue: Any = None) -> dict[str, str]:
    """What stands in for what cannot run offline, read from the live cluster, for the report.
    ``kueue``: the simulation's Kueue (colocate/simulate/kueue.py), whose webhooks a host process serves."""
    out = {"containers": "no container runs: kwok v0.5.2 plays every node's kubelet, so a scheduled pod is "
                         "Running at once and a Job's pod (the Helm hook Jobs Argo CD runs as PreSync/PostSync "
                         "hooks, a CronJob's run) exits 0 after 1 s without doing its work",
           "storage": f"claims of StorageClass {', '.join(storage_classes)} are bound by colocate's simulated "
                      "provisioner (a PersistentVolume of the requested size)"}
    for plural, kind in (("validatingwebhookconfigurations", "ValidatingWebhookConfiguration"),
                         ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration")):
        for config in cp.items(f"/apis/admissionregistration.k8s.io/v1/{plural}"):
            for hook in config.get("webhooks") or []:
                if kueue is not None and kueue.started and ((hook.get("clientConfig") or {}).get("url") or "").startswith(kueue.url):
                    continue  # served: below
                service = (hook.get("clientConfig") or {}).get("service")
                server = f"Service {service['namespace']}/{service['name']}" if service else \
                    (hook.get("clientConfig") or {}).get("url", "its URL")
                policy = hook.get("failurePolicy", "Fail")
                effect = ("the API server admits the requests it matches unchecked" if policy == "Ignore"
                          else "the API server refuses every request it matches")
                out[f"{kind}/{config['metadata']['name']} {hook['name']}"] = (
                    f"its server ({server}) is a container, which does not run; failurePolicy {policy}: {effect}")
    if kueue is not None and kueue.started:
        made = "dist/'s " + ", ".join(kueue.rewritten) if kueue.rewritten else "the release's (the vendored manifests.yaml)"
        out["Kueue"] = (f"its manager runs as a host process on 127.0.0.1 (its in-cluster Deployment's pod is kwok's); "
                        f"{made} call it by URL with a simulation-made certificate, not through Service "
                        f"{kueue.namespace}/{kueue.service}, which has no endpoint a host process can serve")
    for sts in cp.items("/apis/apps/v1/statefulsets"):
        what = (sts["metadata"].get("annotations") or {}).get(STAND_IN_ANNOTATION)
        if what:
            out[f"StatefulSet/{sts['metadata']['namespace']}/{sts['metadata']['name']}"] = (
                f"stand-in: {what} (the operator is a container, which does not run): its replicas, node "
                "selector, affinity, tolerations, priority class, security context and resources")
    return out
