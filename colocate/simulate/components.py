"""The components that act on the simulated cluster besides the control plane: kwok (the
kubelets), the training-operator (TFJob -> pods), the StorageClasses the cluster provides and a
provisioner that binds their claims."""
from __future__ import annotations

import json
import sys
import urllib.error
from pathlib import Path


from colocate import ROOT
from colocate.base.data_files import data_path
from colocate.errors import ColocateError
from colocate.model.names import RESUBMITTER
from colocate.incluster.resubmit import policy
from colocate.simulate.local_cluster import ControlPlane, SimulationError, free_port, refusal
from colocate.simulate.nodes import KWOK_LABEL

CRDS = data_path("colocate.policies", "crds")
#: The pod lifecycle kwok plays (its own file; also keeps a user's ~/.kwok/kwok.yaml out).
KWOK_STAGES = data_path("colocate", "simulate", "kwok", "stages.yaml")
#: The provisioner name of the simulated StorageClass: it stands for the NFS provisioner.
SIM_PROVISIONER = "colocate.io/simulated"


def start_kwok(cp: ControlPlane) -> None:
    key, value = KWOK_LABEL
    cp.run("kwok", [str(cp.binaries["kwok"]), f"--kubeconfig={cp.kubeconfig}", f"--config={KWOK_STAGES}",
                    "--manage-all-nodes=false", f"--manage-nodes-with-label-selector={key}={value}",
                    "--node-lease-duration-seconds=40", "--cidr=10.244.0.1/16", "--node-ip=10.0.0.1",
                    f"--server-address=127.0.0.1:{free_port()}"])


def start_training_operator(cp: ControlPlane) -> None:
    # v1.7.0 runs every framework's controller by default; the cluster only has the TFJob CRD.
    cp.run("training-operator", [str(cp.binaries["training-operator.v1"]), "--enable-scheme=tfjob",
                                 f"--metrics-bind-address=127.0.0.1:{free_port()}",
                                 f"--health-probe-bind-address=127.0.0.1:{free_port()}",
                                 f"--monitoring-port={free_port()}"],
           env={"KUBECONFIG": str(cp.kubeconfig)})


#: The resubmitter's settings in the simulation: the cluster's defaults with time scaled down (the
#: first resubmission after 1 s, not 30 s), as the kwok stages scale the grace period.
SIM_SETTINGS = policy.Settings(max_resubmissions=5, backoff_seconds=1, max_backoff_seconds=8, blocked_after_seconds=10)
SIM_RESUBMIT = ("--backoff-seconds", str(SIM_SETTINGS.backoff_seconds), "--max-backoff-seconds",
                str(SIM_SETTINGS.max_backoff_seconds), "--max-resubmissions", str(SIM_SETTINGS.max_resubmissions),
                "--blocked-after-seconds", str(SIM_SETTINGS.blocked_after_seconds))


def start_resubmitter(cp: ControlPlane, namespaces: list[str], extra: tuple[str, ...] = (),
                      name: str = "resubmitter") -> None:
    """``colocate resubmitter`` from this checkout's code, as a host process like the operator:
    as dist/'s ServiceAccount when Argo CD created it (so its RBAC and the admission policy that
    keeps its annotations its own are what the API server enforces), else as the admin."""
    port = free_port()
    kubeconfig, lease_namespace = _as_service_account(cp, RESUBMITTER) or (cp.kubeconfig, "kube-system")
    argv = [sys.executable, "-m", "colocate.cli", "resubmitter", f"--kubeconfig={kubeconfig}",
            f"--lease-namespace={lease_namespace}", "--metrics-address=127.0.0.1", f"--metrics-port={port}",
            *SIM_RESUBMIT, *extra, *(f"--namespace={ns}" for ns in namespaces)]
    cp.metrics[name] = f"http://127.0.0.1:{port}/metrics"
    cp.run(name, argv, env={"PYTHONPATH": str(ROOT)})


def _as_service_account(cp: ControlPlane, name: str) -> tuple[Path, str] | None:
    """A kubeconfig with a token of the one ServiceAccount ``name`` (TokenRequest API), and its
    namespace; None when the cluster has none."""
    found = cp.items(f"/api/v1/serviceaccounts?fieldSelector=metadata.name%3D{name}")
    if len(found) != 1:
        return None
    namespace = found[0]["metadata"]["namespace"]
    token = cp.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                       {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                        "spec": {"expirationSeconds": 86400}})["status"]["token"]
    path = cp.workdir / f"kubeconfig-{name}"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "sim",
        "clusters": [{"name": "sim", "cluster": {"server": cp.server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": name}}]}, indent=1))
    return path, namespace


def install_crds(cp: ControlPlane, docs: list[dict]) -> None:
    for doc in docs:
        try:
            cp.apply(doc)
        except urllib.error.HTTPError as exc:
            raise SimulationError(f"CRD {doc['metadata']['name']}: {refusal(exc)}") from None
    cp.wait_established([d["metadata"]["name"] for d in docs])


def install_storage_class(cp: ControlPlane, name: str) -> None:
    cp.apply({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
              "provisioner": SIM_PROVISIONER, "volumeBindingMode": "Immediate", "reclaimPolicy": "Delete"})


def provision(cp: ControlPlane) -> int:
    """Create a PersistentVolume for each Pending claim of a simulated class (what the NFS
    provisioner does); the controller-manager's binder binds them. Returns how many it made."""
    classes = {sc["metadata"]["name"] for sc in cp.items("/apis/storage.k8s.io/v1/storageclasses")
               if sc.get("provisioner") == SIM_PROVISIONER}
    made = 0
    for claim in cp.items("/api/v1/persistentvolumeclaims"):
        spec, meta = claim["spec"], claim["metadata"]
        if claim.get("status", {}).get("phase") != "Pending" or spec.get("storageClassName") not in classes \
                or spec.get("volumeName"):
            continue
        name = f"pv-{meta['uid']}"
        try:
            cp.request("POST", "/api/v1/persistentvolumes", {
                "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                "spec": {"capacity": {"storage": spec["resources"]["requests"]["storage"]},
                         "accessModes": spec["accessModes"], "storageClassName": spec["storageClassName"],
                         "persistentVolumeReclaimPolicy": "Delete",
                         "claimRef": {"namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
                         "hostPath": {"path": f"/simulated/{meta['namespace']}/{meta['name']}"}}})
            made += 1
        except urllib.error.HTTPError as exc:
            if exc.code != 409:  # made on an earlier pass
                raise ColocateError(f"simulated provisioner: {refusal(exc)}") from None
    return made

