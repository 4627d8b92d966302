from __future__ import annotations

import pytest
import cdk8s

from colocate.constructs.priority_tiers import PriorityTiers
from colocate.model.tiers import PriorityTier
from colocate.errors import PropError


def test_tiers_become_priority_classes_with_their_role():
    chart = cdk8s.Testing.chart()
    PriorityTiers(chart, "t", [PriorityTier("offline-batch", 100_000, "offline"), PriorityTier("online-high", 1_000_000, "online")])
    classes = cdk8s.Testing.synth(chart)
    assert [(c["metadata"]["name"], c["value"], c["metadata"]["labels"]["colocate.io/tier"]) for c in classes] == [
        ("online-high", 1_000_000, "online"), ("offline-batch", 100_000, "offline")]
    assert all(c["preemptionPolicy"] == "PreemptLowerPriority" and c["globalDefault"] is False for c in classes)


def test_tiers_less_than_10x_apart_are_refused():
    with pytest.raises(PropError, match=r"prop 'tiers\['offline-batch'\].value': 200000 is less than 10x below online-high"):
        PriorityTiers(cdk8s.Testing.chart(), "t", [PriorityTier("online-high", 1_000_000, "online"),
                                             PriorityTier("offline-batch", 200_000, "offline")])


def test_two_global_defaults_are_refused():
    with pytest.raises(PropError, match=r"prop 'tiers\[\*\].global_default'"):
        PriorityTiers(cdk8s.Testing.chart(), "t", [PriorityTier("a", 1_000_000, "online", global_default=True),
                                             PriorityTier("b", 1_000, "offline", global_default=True)])


def test_values_above_the_user_range_are_refused():
    with pytest.raises(PropError, match=r"prop 'tiers\['a'\].value'"):
        PriorityTiers(cdk8s.Testing.chart(), "t", [PriorityTier("a", 2_000_000_000, "online")])
