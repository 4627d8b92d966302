"""Stand-ins for the pods of Applications that cannot render offline (a Helm repository or an
upstream git repository): one workload per chart component, with the requests, node selector,
affinity, tolerations and priority the generated values give it, so the scheduler counts them."""
from __future__ import annotations

import urllib.error
from typing import Any, Mapping

from colocate.simulate.control_plane import ControlPlane, SimulationError, refusal
from colocate.simulate.observe import Observation, Rejected

#: Per chart, the values path of each component that runs pods, its workload kind and name. A
#: DaemonSet lands on every node it tolerates, as the chart's does.
COMPONENTS: Mapping[str, Mapping[str, tuple[str, str]]] = {
    "kube-prometheus-stack": {
        "prometheus.prometheusSpec": ("StatefulSet", "prometheus"),
        "alertmanager.alertmanagerSpec": ("StatefulSet", "alertmanager"),
        "grafana": ("Deployment", "grafana"),
        "kube-state-metrics": ("Deployment", "kube-state-metrics"),
        "prometheusOperator": ("Deployment", "prometheus-operator"),
        "prometheus-node-exporter": ("DaemonSet", "node-exporter"),
    },
    "dcgm-exporter": {"": ("DaemonSet", "dcgm-exporter")},
    "nvidia-device-plugin": {"": ("DaemonSet", "nvidia-device-plugin")},
}
STAND_IN_ANNOTATION = "colocate.io/simulated-stand-in"
#: Any image: kwok starts no container.
IMAGE = "registry.k8s.io/pause:3.9"
_SCHEDULING = ("nodeSelector", "affinity", "tolerations", "priorityClassName")


def deploy(cp: ControlPlane, docs, obs: Observation, why: dict[str, str]) -> dict[str, str]:
    """Create the stand-ins of every Application that cannot render offline; per Application,
    what stands in for it (for the report). ``why``: Argo CD's condition per such Application."""
    out = {}
    for file, app in docs:
        if app["kind"] != "Application":
            continue
        source = app["spec"].get("source") or {}
        name = app["metadata"]["name"]
        if source.get("chart"):
            chart = source["chart"]
            made = [_create(cp, obs, file, app, path, kind, workload)
                    for path, (kind, workload) in COMPONENTS.get(chart, {}).items()]
            out[name] = (f"Helm chart {chart} {source.get('targetRevision')} from {source['repoURL']}, not rendered "
                         f"offline ({_short(why.get(name, ''))}): "
                         + (f"stand-ins {', '.join(m for m in made if m)} with the requests of the generated values"
                            if made else "no stand-in (its components are not known to the simulation)"))
        elif source.get("repoURL") and not _is_ours(app, docs):
            out[name] = (f"upstream git {source['repoURL']} {source.get('targetRevision')}: not rendered offline "
                         f"({_short(why.get(name, ''))}); "
                         "its CRDs are installed from policies/crds/ and its controller runs as a process")
    return out


def _short(message: str) -> str:
    """Argo CD's condition, its first clause (the rest repeats the git or Helm command)."""
    return message.split(": rpc error")[0][:160] or "Argo CD could not fetch it"


def _is_ours(app: Mapping[str, Any], docs) -> bool:
    """An Application of this repository (the root Application's repoURL)."""
    repos = {d["spec"]["source"]["repoURL"] for _, d in docs
             if d["kind"] == "Application" and d["spec"].get("source", {}).get("path", "").startswith("dist/")}
    return app["spec"]["source"]["repoURL"] in repos


def _values_at(values: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    for key in filter(None, path.split(".")):
        values = values.get(key) or {}
    return values


def _create(cp: ControlPlane, obs: Observation, file: str, app, path: str, kind: str, name: str) -> str:
    values = _values_at((app["spec"]["source"].get("helm") or {}).get("valuesObject") or {}, path)
    namespace = app["spec"]["destination"].get("namespace", "default")
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": app["metadata"]["name"]}
    container = {"name": name, "image": IMAGE}
    if isinstance(values.get("resources"), dict) and values["resources"]:
        container["resources"] = values["resources"]
    pod = {"containers": [container], **{k: values[k] for k in _SCHEDULING if values.get(k)}}
    spec: dict[str, Any] = {"selector": {"matchLabels": labels},
                            "template": {"metadata": {"labels": labels}, "spec": pod}}
    if kind != "DaemonSet":
        spec["replicas"] = int(values.get("replicas", 1))
    if kind == "StatefulSet":
        spec["serviceName"] = name
    obj = {"apiVersion": "apps/v1", "kind": kind,
           "metadata": {"name": name, "namespace": namespace, "labels": labels,
                        "annotations": {STAND_IN_ANNOTATION: f"{app['metadata']['name']}: values {path or '(root)'}"}},
           "spec": spec}
    try:
        cp.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        cp.apply(obj)
    except urllib.error.HTTPError as exc:
        obs.rejected.append(Rejected(file, f"{kind}/{namespace}/{name} (stand-in)", refusal(exc)))
        return ""
    except SimulationError as exc:
        obs.rejected.append(Rejected(file, f"{kind}/{namespace}/{name} (stand-in)", str(exc)))
        return ""
    return f"{kind}/{name}"
