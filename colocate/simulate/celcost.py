"""What each generated ValidatingAdmissionPolicy costs the API server, measured with its own code.

``bin/celcost`` (tools/sim/celcost/, built by the simulation's toolchain against the
k8s.io/apiserver of the pinned Kubernetes) evaluates a policy on an object exactly as
kube-apiserver 1.28 does and returns the runtime cost it charges. Kubernetes 1.28 does not
estimate a policy's cost when it is created (that static check came for CRD validation rules,
not for admission policies), so the limits that hold are the runtime ones: each expression may
cost at most PerCallLimit (1,000,000) and one binding's validations and messages together at most
RuntimeCELCostBudget (10,000,000), k8s.io/apiserver v0.28.15 pkg/apis/cel/config.go; over them
the evaluation fails and failurePolicy decides (docs/admission.md).

``python -m colocate.simulate.celcost`` prints the table docs/admission.md quotes."""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from colocate import ROOT, config
from colocate.rules import admission
from colocate.rules.files import read_rules, rule_examples
from colocate.base import safe_yaml
from colocate.simulate import toolchain

PER_CALL_LIMIT = 1_000_000
BINDING_BUDGET = 10_000_000
_RESOURCES = {kind: (group, resource) for group, _, resource, kind, _ in admission.WORKLOADS}
_RESOURCES.update({kind: (group, resource) for kind, (group, _, resource) in admission.CUSTOM_KINDS.items()})


def _docs(path: Path) -> list[dict]:
    return [d for d in safe_yaml.load_all(path.read_text()) if isinstance(d, dict)]


def matches(policy: dict, obj: dict, namespace: dict | None) -> str | None:
    """The resource the policy judges ``obj`` as, or None when its matchConstraints leave it out."""
    kind = obj.get("kind")
    if kind not in _RESOURCES:
        return None
    group, resource = _RESOURCES[kind]
    if (obj.get("apiVersion") or "").rpartition("/")[0] != group:
        return None
    constraints = policy["spec"]["matchConstraints"]
    if not any(group in r["apiGroups"] and resource in r["resources"] for r in constraints["resourceRules"]):
        return None
    labels = {**((namespace or {}).get("metadata", {}).get("labels") or {})}
    if namespace:
        labels.setdefault("kubernetes.io/metadata.name", namespace["metadata"]["name"])
    selector = constraints.get("namespaceSelector") or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return None
    for expression in selector.get("matchExpressions") or []:
        present = labels.get(expression["key"])
        if expression["operator"] == "NotIn" and present in expression["values"]:
            return None
        if expression["operator"] == "In" and present not in expression["values"]:
            return None
    return resource


def measure(policies: Iterable[dict], objects: Iterable[dict], namespaces: dict[str, dict],
            binary: Path | None = None) -> list[dict[str, Any]]:
    """bin/celcost's result for every (policy, object) pair the policy matches."""
    cases = []
    objects = list(objects)
    for policy in policies:
        for obj in objects:
            ns_name = (obj.get("metadata") or {}).get("namespace")
            namespace = namespaces.get(ns_name) or ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns_name}}
                                                    if ns_name else None)
            resource = matches(policy, obj, namespace)
            if resource:
                cases.append({"policy": policy, "object": obj, "resource": resource, "namespace": namespace})
    binary = binary or toolchain.BIN / "celcost"
    done = subprocess.run([str(binary)], input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{binary} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


#: What every CPU-only container on a GPU pool sets (rule COL070).
VOID = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}


@dataclass(frozen=True)
class Names:
    """The measured cluster's names the large objects use: the rules compare with them, so the
    objects are judged (and pass) exactly as that cluster's own would."""
    training_namespace: str
    online_namespace: str
    offline_priority: str
    online_priority: str
    registry: str

    @classmethod
    def of(cls, config_path: Path) -> Names:
        loaded = config.load(config_path)
        cluster = loaded.cluster
        return cls(cluster.training_namespace, cluster.online_namespace, cluster.tier("offline").name,
                   cluster.tier("online").name, loaded.registry_host)


def large_tfjob(names: Names, replica_types: int = 6, containers: int = 10) -> dict:
    """A TFJob far larger than any job file: ``replica_types`` replica types of ``containers``
    containers (plus as many init containers), each with requests, limits, env and tolerations."""
    def container(i: int) -> dict:
        return {"name": "tensorflow" if i == 0 else f"sidecar-{i}", "image": f"{names.registry}/ml/tf:{i}.0.0",
                "env": [{"name": f"VAR_{j}", "value": "x"} for j in range(19)] + [VOID],
                "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}}
    roles = ["Chief", "Worker", "Evaluator", "PS"][:replica_types] + \
        [f"Role{i}" for i in range(max(0, replica_types - 4))]
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "large", "namespace": names.training_namespace},
            "spec": {"runPolicy": {"cleanPodPolicy": "All"}, "tfReplicaSpecs": {role: {
                "replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": {
                    "priorityClassName": names.offline_priority, "terminationGracePeriodSeconds": 30,
                    "tolerations": [{"key": f"k{j}", "operator": "Equal", "value": "v", "effect": "NoSchedule"}
                                    for j in range(20)],
                    "initContainers": [container(i + 100) for i in range(containers)],
                    "containers": [container(i) for i in range(containers)]}}} for role in roles}}}


def large_deployment(names: Names, namespace: str, containers: int = 60) -> dict:
    """A Deployment with ``containers`` containers and as many init containers, at the tier of
    ``namespace`` (the training or the online one)."""
    def container(i: int) -> dict:
        return {"name": f"c-{i}", "image": f"{names.registry}/ml/server:{i}.0.0", "env": [VOID],
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "large", "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": "large"}}, "template": {
                "metadata": {"labels": {"app": "large"}}, "spec": {
                    "priorityClassName": (names.offline_priority if namespace == names.training_namespace
                                          else names.online_priority),
                    "tolerations": [{"key": f"k{j}", "operator": "Equal", "value": "v"} for j in range(40)],
                    "initContainers": [container(i + 1000) for i in range(containers)],
                    "containers": [container(i) for i in range(containers)]}}}}


def _broken(names: Names, obj: dict) -> dict:
    """``obj`` with every container's image from an unmirrored registry, every GPU visible and no
    limits, every pod spec at the online priority, tolerating everything, with a long grace period."""
    text = (json.dumps(obj).replace(f'"{names.registry}/', '"ghcr.io/')
            .replace(json.dumps(names.offline_priority), json.dumps(names.online_priority))
            .replace('"value": "void"', '"value": "all"'))
    out = json.loads(text.replace('"limits": {"cpu": "2", "memory": "4Gi"}', '"limits": {}')
                     .replace('"limits": {"cpu": "1", "memory": "1Gi"}', '"limits": {}'))
    out["metadata"]["name"] = "large-broken"
    specs = ([r["template"]["spec"] for r in out["spec"]["tfReplicaSpecs"].values()] if out["kind"] == "TFJob"
             else [out["spec"]["template"]["spec"]])
    for spec in specs:
        spec["tolerations"].append({"operator": "Exists"})
        spec["terminationGracePeriodSeconds"] = 600
    return out


def reference_cases(dist: Path = ROOT / "dist", config_path: Path = ROOT / config.CONFIG_NAME,
                    ) -> tuple[list[dict], list[dict], dict[str, dict]]:
    """(the policies of ``dist``, the objects to measure them on, the namespaces by name): every
    object of dist/apps, every fixture and example of every rule, and the large TFJob and Deployments in the
    names of ``config_path``, the colocate.yaml ``dist`` was synthesized from."""
    names = Names.of(config_path)
    training, online = names.training_namespace, names.online_namespace
    policies = [d for p in sorted(dist.glob("apps/*/validatingadmissionpolicy.*.yaml")) for d in _docs(p)]
    namespaces = {d["metadata"]["name"]: d for p in sorted(dist.glob("apps/*/namespace.*.yaml")) for d in _docs(p)}
    objects = [d for p in sorted(dist.glob("apps/*/*.yaml")) for d in _docs(p)]
    objects += [d for p in sorted((ROOT / "tests/policies/fixtures").glob("*/*.yaml")) for d in _docs(p)]
    objects += [d for rule in read_rules() for texts in rule_examples(rule).values() for text in texts
                for d in safe_yaml.load_all(text) if isinstance(d, dict)]  # the rule files' own cases
    large = [large_tfjob(names), large_deployment(names, training), large_deployment(names, online)]
    # The same, breaking every rule in every container: the messageExpressions walk them all.
    objects += large + [_broken(names, obj) for obj in large]
    return policies, objects, namespaces


def table(results: list[dict]) -> str:
    """Markdown: per policy, how many objects it judged and the highest cost it charged."""
    by_policy: dict[str, list[dict]] = {}
    for r in results:
        by_policy.setdefault(r["policy"], []).append(r)
    lines = ["| policy | objects judged | highest cost (validation + message) | on | of the per-expression limit |",
             "|---|---|---|---|---|"]
    for name, rows in sorted(by_policy.items()):
        top = max(rows, key=lambda r: r["validationCost"] + r["messageCost"])
        cost = top["validationCost"] + top["messageCost"]
        lines.append(f"| {name} | {len(rows)} | {cost} | {top['object']} | {cost / PER_CALL_LIMIT:.2%} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    toolchain.ensure(log=lambda line: None)
    results = measure(*reference_cases())
    print(table(results), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
