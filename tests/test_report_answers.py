"""``colocate report`` against a broken or hostile Prometheus (hostile-3 R3-M2):
an answer that is not the documented shape of the HTTP API is exit 2 naming the query, never a
traceback; NaN and Inf samples are no data, never a figure; --until and --since are bounded."""
from __future__ import annotations

import re
import subprocess

import pytest

from tests.helpers import colocate, json_server

AT = 1_764_000_000
#: The first query the report asks (utilisation per pool).
FIRST = "sum by (pool)"


def _ok(path: str, query: dict) -> dict:
    return {"status": "success", "data": {"resultType": "matrix" if path.endswith("range") else "vector", "result": []}}


def _series(path: str, query: dict, values: list[str]) -> dict:
    """One series of ``values`` a minute apart from the window's start (its one value at the
    asked time for an instant query)."""
    if path.endswith("range"):
        start = float(query["start"][0])
        result = [{"metric": {"pool": "mixed"}, "values": [[start + 60 * i, v] for i, v in enumerate(values)]}]
        return {"status": "success", "data": {"resultType": "matrix", "result": result}}
    result = [{"metric": {}, "value": [float(query["time"][0]), values[0]]}]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def _report(answer, *args: str) -> subprocess.CompletedProcess:
    with json_server(answer) as url:
        return colocate("report", "--prometheus", url, "--until", str(AT), "--since", "1h", *args)


def _matrix(result) -> dict:
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


SHAPES = {
    "a list for a body": [1, 2],
    "no status": {"data": {"resultType": "matrix", "result": []}},
    "an empty data": {"status": "success", "data": {}},
    "a vector for a range query": {"status": "success", "data": {"resultType": "vector", "result": []}},
    "a result object": _matrix({"a": 1}),
    "a result that is a string": _matrix(["x"]),
    "a metric list": _matrix([{"metric": ["x"], "values": []}]),
    "a label that is a number": _matrix([{"metric": {"pool": 5}, "values": []}]),
    "values that are an object": _matrix([{"metric": {}, "values": {"t": 1}}]),
    "a value that is not a number": _matrix([{"metric": {}, "values": [[AT - 60, "abc"]]}]),
    "a value null": _matrix([{"metric": {}, "values": [[AT - 60, None]]}]),
    "a sample of three": _matrix([{"metric": {}, "values": [[AT - 60, "1", "2"]]}]),
    "a time far past the window": _matrix([{"metric": {}, "values": [[1e20, "1"]]}]),
    "a time past float's range": _matrix([{"metric": {}, "values": [[10**400, "1"]]}]),
    "a time that is a string": _matrix([{"metric": {}, "values": [["now", "1"]]}]),
    "JSON nested past Python's stack": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("name", SHAPES)
def test_an_answer_not_of_the_documented_shape_is_exit_2_naming_the_query(name):
    proc = _report(lambda path, query: SHAPES[name])
    assert proc.returncode == 2, (name, proc.returncode, proc.stderr)
    assert f"'{FIRST}" in proc.stderr and "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr


def test_an_instant_answer_of_the_wrong_shape_is_exit_2_naming_its_query():
    def answer(path, query):
        if path.endswith("range"):
            return _ok(path, query)
        return {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [AT, None]}]}}

    proc = _report(answer)
    assert proc.returncode == 2 and "'sum(increase(scheduler_preemption_victims_sum" in proc.stderr, proc.stderr


def test_nan_and_inf_samples_are_no_data():
    def answer(path, query):
        q = query["query"][0]
        if q.startswith(FIRST):
            return _series(path, query, ["0.5", "NaN", "+Inf", "-Inf", "0.25"])
        if "scheduler_preemption_victims" in q:
            return _series(path, query, ["NaN"])
        return _series(path, query, ["+Inf", "1e308", "1e308"])  # GPUs of training, and the P99 records

    for fmt in ("text", "markdown", "json"):
        proc = _report(answer, "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        assert not re.search(r"(?<![a-z])(nan|inf)(?![a-z])", proc.stdout, re.IGNORECASE), proc.stdout
        assert "37.5%" in proc.stdout or '"day": 0.375' in proc.stdout, proc.stdout  # the finite samples only
    assert "Training pods preempted: no data" in _report(answer).stdout
    assert "GPU-hours delivered to training: no data" in _report(answer).stdout


@pytest.mark.parametrize("option, value, says", [
    ("--until", "nan", "--until 'nan': give a time between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z"),
    ("--until", "inf", "--until 'inf': give a time between"),
    ("--until", "1e20", "--until '1e20': give a time between"),
    ("--until", "-1e20", "--until '-1e20': give a time between"),
    ("--until", "-5", "--until '-5': give a time between"),
    ("--since", "99999999999d", "--since '99999999999d': give a duration such as 30m"),
    ("--since", "3651d", "--since '3651d': at most 3650d"),
    ("--since", "\u0661\u0660h", "--since '\u0661\u0660h': give a duration"),
    ("--step", "999999999d", "--step '999999999d': at most 3650d"),
])
def test_until_since_and_step_are_bounded(option, value, says):
    args = {"--until": str(AT), "--since": "1h", "--step": "5m", option: value}
    with json_server(_ok) as url:
        proc = colocate("report", "--prometheus", url, *[f"{k}={v}" for k, v in args.items()])
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_window_that_would_start_before_the_epoch_is_bad_input():
    with json_server(_ok) as url:
        proc = colocate("report", "--prometheus", url, "--until", "1000", "--since", "1h")
    assert proc.returncode == 2 and "the window would start before 1970-01-01T00:00:00Z" in proc.stderr, proc.stderr
