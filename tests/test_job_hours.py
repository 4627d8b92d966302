"""A job file's ``expectedHours`` (docs/training.md): validated, carried onto the TFJob as the
``colocate.io/expected-hours`` annotation, and read back from dist/ by ``capacity`` to count the
GPU-hours waiting in the queue against the night's (docs/queue.md)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from colocate import ROOT
from colocate.model.names import EXPECTED_HOURS_ANNOTATION
from tests.helpers import colocate, yaml_load

CONFIG = str(ROOT / "colocate.yaml")


def _jobs(tmp_path: Path, extra: dict[str, str | None]) -> Path:
    """The reference jobs plus copies of recsys-train (4 GPU Workers), each with its expectedHours
    line (None: none)."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for file in (ROOT / "jobs").glob("*.yaml"):
        shutil.copyfile(file, jobs / file.name)
    text = (jobs / "recsys-train.yaml").read_text()
    assert "\nname: recsys-train\n" in text and "expectedHours" not in text
    for name, hours in extra.items():
        copy = text.replace("\nname: recsys-train\n", f"\nname: {name}\n")
        (jobs / f"{name}.yaml").write_text(copy + (f"expectedHours: {hours}\n" if hours is not None else ""))
    return jobs


def _synth(tmp_path: Path):
    return colocate("synth", "--config", CONFIG, "--jobs", "jobs", "--outdir", "dist", cwd=tmp_path)


def _annotations(tmp_path: Path, name: str) -> dict:
    doc = yaml_load((tmp_path / "dist/apps/training" / f"tfjob.training.{name}.yaml").read_text())
    return doc["metadata"]["annotations"]


def test_expected_hours_becomes_the_annotation_capacity_counts(tmp_path):
    # In name order the 12 GPUs of the queue hold recsys-train, tf-mnist-dist and x-a (4 each);
    # x-b (2.5 h) and x-c (no estimate) wait.
    _jobs(tmp_path, {"x-a": "6", "x-b": "2.5", "x-c": None})
    proc = _synth(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _annotations(tmp_path, "x-a")[EXPECTED_HOURS_ANNOTATION] == "6"
    assert _annotations(tmp_path, "x-b")[EXPECTED_HOURS_ANNOTATION] == "2.5"
    assert EXPECTED_HOURS_ANNOTATION not in _annotations(tmp_path, "x-c")
    proc = colocate("capacity", "dist", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (queue,) = json.loads(proc.stdout)["queues"]
    assert [j["name"] for j in queue["jobs"] if j["waits"]] == ["training/x-b", "training/x-c"]
    assert {j["name"]: j["hours"] for j in queue["jobs"]}["training/x-a"] == 6
    assert queue["waitingGpuHours"] == 4 * 2.5 and queue["unestimated"] == ["training/x-c"]
    assert queue["nightGpuHours"] == pytest.approx(12 * (9 + 50 / 60))


@pytest.mark.parametrize("value, says", [
    ("0", "0 is not above 0"), ("-1", "-1 is not above 0"), ("9000", "9000 is more than 8760"),
    (".inf", "inf is more than 8760"), (".nan", "nan must be a number of hours above 0"),
    ("six", "'six' is not of type 'number'"), ("true", "True is not of type 'number'"),
])
def test_a_bad_expected_hours_is_exit_2_naming_the_file_and_key_and_touches_nothing(tmp_path, value, says):
    _jobs(tmp_path, {"x-a": value})
    proc = _synth(tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"colocate: error: jobs/x-a.yaml:$.expectedHours: {says}"), proc.stderr
    assert not (tmp_path / "dist").exists()
