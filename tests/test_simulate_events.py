"""How `colocate simulate` reads a controller's failed creates from the cluster's events: one that
the controller made good on its next try is a note, one it did not is a failure of the run."""
from __future__ import annotations

from pathlib import Path

import pytest

from colocate.simulate.observe import failed_creates
from tests.helpers import yaml_load

CASES = sorted((Path(__file__).parent / "fixtures" / "events").glob("*.yaml"))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_a_failed_create_is_a_failure_unless_the_controller_made_it_good(case):
    fixture = yaml_load(case.read_text())
    failed, recovered = failed_creates(fixture["events"])
    warning = next(e for e in fixture["events"] if e["type"] == "Warning")
    expected = [("TFJob/training/tf-mnist-dist", "FailedCreatePod", warning["message"])]
    found = failed if fixture["expect"] == "failed" else recovered
    other = recovered if fixture["expect"] == "failed" else failed
    assert [(p.object, p.reason, p.message) for p in found] == expected
    assert other == []


def test_both_kinds_of_fixture_are_there():
    expects = {yaml_load(case.read_text())["expect"] for case in CASES}
    assert expects == {"failed", "recovered"}
