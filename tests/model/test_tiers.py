"""tiers.inversions finds, by bisection, what the definition's pairwise scan finds."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from colocate.model import tiers


def _pairwise(classes):
    """The definition: each lower class against the first class in order that ranks above it
    and whose value is not above the lower one's."""
    out = []
    for lower in classes:
        for upper in classes:
            if tiers.ROLE_RANK.get(upper.role, -1) > tiers.ROLE_RANK.get(lower.role, -1) >= 0 \
                    and lower.value >= upper.value:
                out.append((upper, lower))
                break
    return out


_CLASS = st.builds(tiers.TierClass, name=st.text(min_size=1, max_size=3),
                   role=st.sampled_from(["online", "offline", "background", "other"]),
                   value=st.sampled_from([0, 1, 5, 10, 100, 1000, 10**6]))


@settings(max_examples=400, deadline=None)
@given(st.lists(_CLASS, max_size=12))
def test_inversions_are_those_of_the_pairwise_definition(classes):
    assert tiers.inversions(classes) == _pairwise(classes)


def test_an_offline_class_above_the_online_one_is_an_inversion():
    online, offline = tiers.TierClass("online-high", "online", 1000), tiers.TierClass("offline-batch", "offline", 1000)
    assert tiers.inversions([online, offline]) == [(online, offline)]
    assert tiers.inversions([tiers.TierClass("offline-batch", "offline", 100), online]) == []
