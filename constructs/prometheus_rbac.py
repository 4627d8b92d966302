"""PrometheusKubeletAccess: lets Prometheus read the kubelet's cAdvisor metrics."""
from __future__ import annotations

from constructs import Construct

from colocate.constructs._k8s import emit
from colocate.model.validate import check_dns_label


class PrometheusKubeletAccess(Construct):
    """ClusterRole + ClusterRoleBinding for Prometheus' ServiceAccount.

    The reference how-to's rule is ``get`` on the nonResourceURL ``/metrics/cadvisor``; the kubelet itself
    authorizes scrapes of ``/metrics`` and ``/metrics/cadvisor`` as the ``nodes/metrics``
    subresource, so both are granted.
    """

    def __init__(self, scope: Construct, id: str, *, service_account: str, namespace: str,
                 name: str = "colocate-prometheus-kubelet"):
        super().__init__(scope, id)
        where = "PrometheusKubeletAccess"
        check_dns_label(where, "namespace", namespace)
        check_dns_label(where, "service_account", service_account)
        emit(self, "role", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [
                {"nonResourceURLs": ["/metrics", "/metrics/cadvisor"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
            ],
        })
        emit(self, "binding", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
        })
