"""TFJob state as metrics: a kube-state-metrics custom-resource-state config for TFJob conditions.

training-operator v1.7.0 does not count every failure: a job that fails through its backoff
limit or active deadline gets its Failed condition in pkg/controller.v1/common/job.go
(ReconcileJobs) without FailedJobsCounterInc, so ``training_operator_jobs_failed_total`` misses
exactly the failures our jobs have (restartPolicy OnFailure, backoffLimit 3). The conditions
are the truth; kube-state-metrics 2.10 exports them from this config (docs/observability.md).
"""
from __future__ import annotations

from typing import Any

from colocate.model.names import (TFJOB_ANNOTATION_LABEL, TFJOB_ANNOTATION_METRIC_NAME, TFJOB_CONDITION_LABEL,
                                  TFJOB_CONDITION_METRIC_NAME, TFJOB_GROUP, TFJOB_KIND, TFJOB_METRIC_PREFIX,
                                  TFJOB_NAME_METRIC_LABEL, TFJOB_PLURAL, TFJOB_VERSION)


def ksm_config() -> dict[str, Any]:
    """The chart's ``kube-state-metrics.customResourceState.config``: one gauge per TFJob
    condition, labelled by namespace, TFJob name and condition type, valued by its status
    (kube-state-metrics maps the strings "True"/"False" to 1/0, registry_factory.go toFloat64)."""
    return {"kind": "CustomResourceStateMetrics", "spec": {"resources": [{
        "groupVersionKind": {"group": TFJOB_GROUP, "version": TFJOB_VERSION, "kind": TFJOB_KIND},
        "metricNamePrefix": TFJOB_METRIC_PREFIX,
        "labelsFromPath": {TFJOB_NAME_METRIC_LABEL: ["metadata", "name"], "namespace": ["metadata", "namespace"]},
        "metrics": [{
            "name": TFJOB_CONDITION_METRIC_NAME,
            "help": "TFJob condition from training-operator: 1 when its status is True, 0 when False.",
            "each": {"type": "Gauge", "gauge": {"path": ["status", "conditions"],
                                                "labelsFromPath": {TFJOB_CONDITION_LABEL: ["type"]},
                                                "valueFrom": ["status"]}},
        }, {
            # An Info over the annotations map: one series (value 1) per key, the key as label
            # (registry_factory.go compiledInfo.Values, labelFromKey). Values are not exported.
            "name": TFJOB_ANNOTATION_METRIC_NAME,
            "help": "TFJob annotation keys: 1 per key the TFJob carries.",
            "each": {"type": "Info", "info": {"path": ["metadata", "annotations"],
                                              "labelFromKey": TFJOB_ANNOTATION_LABEL}},
        }],
    }]}}


def ksm_rbac_rules() -> list[dict[str, Any]]:
    """What kube-state-metrics needs to list and watch TFJobs (``rbac.extraRules``; the chart adds
    customresourcedefinitions itself when customResourceState is enabled, templates/role.yaml)."""
    return [{"apiGroups": [TFJOB_GROUP], "resources": [TFJOB_PLURAL], "verbs": ["list", "watch"]}]
