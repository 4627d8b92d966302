"""The one way colocate's in-cluster commands (``offline pause|resume``, ``resubmitter``) reach the
API server: the official Kubernetes Python client, configured from ``--kubeconfig``, $KUBECONFIG
or ~/.kube/config, else from the pod's service account (in-cluster). Every refusal becomes a
ColocateError with the API server's own message."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from colocate.errors import ColocateError
from colocate.model.names import JOB_NAME_LABEL, KUEUE_API, TFJOB_GROUP, TFJOB_PLURAL, TFJOB_VERSION

KUEUE_GROUP, KUEUE_VERSION = KUEUE_API.split("/")
CLUSTER_QUEUES = "clusterqueues"


def api_client(kubeconfig: str | None = None):
    """A kubernetes.client.ApiClient for the kubeconfig (explicit, $KUBECONFIG, ~/.kube/config,
    in that order), else the in-cluster service account."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    if kubeconfig or Path(path).is_file():
        try:
            api = config.new_client_from_config(config_file=path)
        except (ConfigException, OSError, ValueError) as exc:
            raise ColocateError(f"kubeconfig {path}: {exc}") from None
        if not api.configuration.verify_ssl:  # the kubeconfig says insecure-skip-tls-verify: once is enough
            import urllib3
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        return api
    try:
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)
    except ConfigException:
        raise ColocateError("no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config) and not running in a "
                            "pod: pass --kubeconfig PATH") from None
    return client.ApiClient(configuration)


def refusal(exc: Exception) -> str:
    """The API server's message in an ApiException (its Status), else the exception's text."""
    body = getattr(exc, "body", None)
    if body:
        try:
            return json.loads(body).get("message") or str(exc)
        except (ValueError, TypeError):
            pass
    reason = getattr(exc, "reason", None)
    return f"{getattr(exc, 'status', '')} {reason}".strip() if reason else str(exc)


def status(exc: Exception) -> int | None:
    """The HTTP status of an ApiException, None for anything else."""
    return getattr(exc, "status", None)


#: Seconds a request may take before the command gives up on the API server.
REQUEST_TIMEOUT = 30


def _call(what: str, fn, *args, **kwargs) -> Any:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        return fn(*args, **kwargs)
    except ApiException as exc:
        raise ColocateError(f"{what}: {refusal(exc)}") from exc
    except (HTTPError, OSError) as exc:
        raise ColocateError(f"{what}: the API server did not answer ({exc})") from None


class ClusterQueues:
    """Kueue's ClusterQueues (cluster-scoped) through the custom objects API."""

    def __init__(self, api):
        from kubernetes import client

        self.api = client.CustomObjectsApi(api)

    def get(self, name: str) -> dict[str, Any]:
        answer = _call(f"get clusterqueue {name}", self.api.get_cluster_custom_object, KUEUE_GROUP, KUEUE_VERSION,
                       CLUSTER_QUEUES, name, _request_timeout=REQUEST_TIMEOUT)
        if not isinstance(answer, dict) or not isinstance(answer.get("spec", {}), dict):
            raise ColocateError(f"get clusterqueue {name}: the API server did not return a ClusterQueue")
        return answer

    def merge_patch(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return _call(f"patch clusterqueue {name}", self.api.patch_cluster_custom_object, KUEUE_GROUP, KUEUE_VERSION,
                     CLUSTER_QUEUES, name, patch, _request_timeout=REQUEST_TIMEOUT)


class TFJobs:
    """TFJobs (kubeflow.org/v1) through the custom objects API."""

    def __init__(self, api):
        from kubernetes import client

        self.api = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)

    def _call(self, what: str, fn, *args, **kwargs) -> Any:
        return _call(what, fn, TFJOB_GROUP, TFJOB_VERSION, *args, **kwargs)

    def list(self, namespace: str) -> list[Any]:
        """The items as the API server sent them: the caller checks each one's shape
        (offline.check_shape), so a malformed item is refused, never silently dropped."""
        answer = self._call(f"list tfjobs in {namespace}", self.api.list_namespaced_custom_object, namespace, TFJOB_PLURAL,
                            _request_timeout=REQUEST_TIMEOUT)
        items = answer.get("items") if isinstance(answer, dict) else None
        if not isinstance(items, list):
            raise ColocateError(f"list tfjobs in {namespace}: the API server did not return a list of items")
        return items

    def pods(self, namespace: str, job: str) -> list[str]:
        """Names of the job's pods that still exist (running, terminating or pending)."""
        answer = self._call(f"list pods of tfjob {namespace}/{job}", lambda *_: self.core.list_namespaced_pod(
            namespace, label_selector=f"{JOB_NAME_LABEL}={job}", _request_timeout=REQUEST_TIMEOUT))
        items = getattr(answer, "items", None)
        if not isinstance(items, list):
            raise ColocateError(f"list pods of tfjob {namespace}/{job}: the API server did not return a list of items")
        # A pod without a name is none the API server would serve: not counted as one left.
        return sorted(p.metadata.name for p in items if p.metadata is not None and isinstance(p.metadata.name, str))

    def terminating_pods(self, namespace: str) -> list[str]:
        """Names of the training pods of ``namespace`` (any TFJob's) that are being deleted."""
        answer = self._call(f"list training pods in {namespace}", lambda *_: self.core.list_namespaced_pod(
            namespace, label_selector=JOB_NAME_LABEL, _request_timeout=REQUEST_TIMEOUT))
        items = getattr(answer, "items", None)
        if not isinstance(items, list):
            raise ColocateError(f"list training pods in {namespace}: the API server did not return a list of items")
        return sorted(p.metadata.name for p in items if p.metadata is not None and isinstance(p.metadata.name, str)
                      and p.metadata.deletion_timestamp is not None)

    def get(self, namespace: str, name: str) -> dict[str, Any]:
        return self._call(f"get tfjob {namespace}/{name}", self.api.get_namespaced_custom_object,
                          namespace, TFJOB_PLURAL, name, _request_timeout=REQUEST_TIMEOUT)

    def merge_patch(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        # The client picks a JSON merge patch for a dict body on custom objects (kubernetes 28.1.0,
        # custom_objects_api.py patch_namespaced_custom_object: merge-patch+json first in its list).
        return self._call(f"patch tfjob {namespace}/{name}", self.api.patch_namespaced_custom_object,
                          namespace, TFJOB_PLURAL, name, patch, _request_timeout=REQUEST_TIMEOUT)

    def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._call(f"create tfjob {namespace}/{body['metadata']['name']}",
                          self.api.create_namespaced_custom_object, namespace, TFJOB_PLURAL, body,
                          _request_timeout=REQUEST_TIMEOUT)

    def wait_gone(self, namespace: str, name: str, uid: str, timeout: float, stopped=lambda: False) -> bool:
        """True once incarnation ``uid`` is gone (deleted, or replaced under its name), False at
        ``timeout`` or when ``stopped()``. It watches the one object rather than polling, so the
        caller learns of the deletion within milliseconds: Argo CD's self-heal races it for the name."""
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0 and not stopped():
            try:
                meta = self.get(namespace, name)["metadata"]
            except ColocateError as exc:
                if status(exc.__cause__) == 404:
                    return True
                raise
            if meta.get("uid") != uid:
                return True
            stream = watch.Watch()
            try:  # from the version just read, so no event falls between the get and the watch
                for event in stream.stream(self.api.list_namespaced_custom_object, TFJOB_GROUP, TFJOB_VERSION,
                                           namespace, TFJOB_PLURAL, field_selector=f"metadata.name={name}",
                                           resource_version=meta["resourceVersion"],
                                           timeout_seconds=max(1, int(min(left, 5)))):
                    if event["type"] == "DELETED" or event["raw_object"]["metadata"].get("uid") != uid:
                        return True
            except (ApiException, HTTPError, OSError):  # expired (410) or cut: read it again
                time.sleep(0.1)
            finally:
                stream.stop()
        return False

    def delete(self, namespace: str, name: str, uid: str, propagation: str = "Foreground") -> None:
        """Delete exactly the incarnation ``uid`` (a precondition), dependents first by default."""
        from kubernetes import client

        self._call(f"delete tfjob {namespace}/{name}", self.api.delete_namespaced_custom_object, namespace,
                   TFJOB_PLURAL, name, body=client.V1DeleteOptions(
                       propagation_policy=propagation, preconditions=client.V1Preconditions(uid=uid)),
                   _request_timeout=REQUEST_TIMEOUT)
