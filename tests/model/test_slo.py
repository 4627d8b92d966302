from __future__ import annotations

import pytest

from colocate.errors import PropError
from colocate.model.slo import LatencySlo


def test_defaults_select_the_service_by_job_and_tolerate_ten_percent():
    slo = LatencySlo(metric="http_request_duration_seconds", objective_seconds=0.005)
    slo.validate("OnlineService 'x'")
    assert slo.selector("recsys") == ("job", "recsys") and slo.regression == 0.10


@pytest.mark.parametrize("overrides, prop", [
    ({"metric": "http_request_duration_seconds_bucket"}, "slo.metric"),
    ({"metric": "1bad"}, "slo.metric"),
    ({"selector_label": "app.kubernetes.io/name"}, "slo.selector_label"),
    ({"objective_seconds": 0}, "slo.objective_seconds"),
    ({"objective_seconds": True}, "slo.objective_seconds"),
    ({"regression": 1.5}, "slo.regression"),
    ({"path": "metrics"}, "slo.path"),
])
def test_bad_slo_props_are_refused_naming_the_prop(overrides, prop):
    slo = LatencySlo(**{"metric": "http_request_duration_seconds", "objective_seconds": 0.005, **overrides})
    with pytest.raises(PropError) as err:
        slo.validate("OnlineService 'x'")
    assert err.value.prop == prop
