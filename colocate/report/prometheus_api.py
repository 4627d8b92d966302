"""A small client of Prometheus' HTTP API (``/api/v1/query`` and ``/api/v1/query_range``) whose
failures are ColocateErrors that say which server, which query and why.

The answer's shape is the documented one (prometheus/prometheus ``docs/querying/api.md``, "Format
overview" and "Expression query result formats"): ``{"status": "success", "data": {"resultType":
"vector"|"matrix", "result": [...]}}``, each result ``{"metric": {label: value}, "value": [t, "v"]}``
(vector) or ``"values": [[t, "v"], ...]`` (matrix), sample values as strings that may be ``NaN``,
``+Inf`` or ``-Inf``. Anything else, from a proxy, a broken or a hostile server, is bad input naming
the query (exit 2). A sample whose value is not finite is no data: it is left out."""
from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from colocate.errors import ColocateError

#: Seconds to wait for one answer.
TIMEOUT = 30
#: The largest answer read (bytes): a week at a 5 m step is tens of kilobytes per series.
MAX_ANSWER = 64 * 2**20


@dataclass(frozen=True)
class Series:
    """One result series: its labels and its (unix time, value) samples, every value finite."""

    labels: dict[str, str]
    samples: list[tuple[float, float]]


class ShapeError(ValueError):
    """The answer is not the documented shape; the message says where."""


class Prometheus:
    def __init__(self, url: str):
        if not url.startswith(("http://", "https://")):
            raise ColocateError(f"--prometheus {url!r}: give an http:// or https:// URL, e.g. http://localhost:9090")
        self.url = url.rstrip("/")

    def _get(self, path: str, params: dict[str, str]) -> object:
        target = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(target, timeout=TIMEOUT) as resp:
                raw = resp.read(MAX_ANSWER + 1)
        except urllib.error.HTTPError as exc:
            try:
                detail = json.load(exc).get("error", exc.reason)
            except (ValueError, AttributeError, RecursionError):
                detail = exc.reason
            raise ColocateError(f"Prometheus at {self.url} refused {params.get('query')!r}: HTTP {exc.code}: "
                                f"{detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ColocateError(f"cannot reach Prometheus at {self.url}: {reason}; check --prometheus "
                                "(kubectl -n monitoring port-forward svc/kube-prometheus-stack-prometheus 9090)") from None
        if len(raw) > MAX_ANSWER:
            raise self._bad(params, f"an answer over {MAX_ANSWER // 2**20} MiB")
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past Python's stack
            raise ColocateError(f"{self.url} did not answer {params.get('query')!r} as a Prometheus API (no JSON "
                                "it can read); check --prometheus") from None

    def _bad(self, params: dict[str, str], why: str) -> ColocateError:
        return ColocateError(f"Prometheus at {self.url} answered {params.get('query')!r} with {why}, not the "
                             "documented shape of /api/v1 (docs/report.md); check --prometheus")

    def _result(self, path: str, params: dict[str, str], result_type: str) -> list:
        body = self._get(path, params)
        if isinstance(body, dict) and body.get("status") == "error":
            raise ColocateError(f"Prometheus at {self.url} refused {params.get('query')!r}: {body.get('error')}")
        data = body.get("data") if isinstance(body, dict) and body.get("status") == "success" else None
        if not isinstance(data, dict):
            raise self._bad(params, 'no "status": "success" and "data" object')
        if data.get("resultType") != result_type or not isinstance(data.get("result"), list):
            raise self._bad(params, f'no "resultType": "{result_type}" and "result" list')
        return data["result"]

    def instant(self, query: str, at: float) -> list[Series]:
        params = {"query": query, "time": f"{at:.3f}"}
        try:
            return [Series(_labels(r), _samples([_item(r, "value")], at, at))
                    for r in self._result("/api/v1/query", params, "vector")]
        except ShapeError as exc:
            raise self._bad(params, str(exc)) from None

    def range(self, query: str, start: float, end: float, step: int) -> list[Series]:
        params = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": str(step)}
        try:
            out = []
            for r in self._result("/api/v1/query_range", params, "matrix"):
                values = _item(r, "values")
                if not isinstance(values, list):
                    raise ShapeError('"values" that is not a list')
                out.append(Series(_labels(r), _samples(values, start, end)))
            return out
        except ShapeError as exc:
            raise self._bad(params, str(exc)) from None


def _item(result: object, key: str) -> object:
    if not isinstance(result, dict) or key not in result:
        raise ShapeError(f'a result that is not an object with "metric" and "{key}"')
    return result[key]


def _labels(result: dict) -> dict[str, str]:
    labels = result.get("metric")
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise ShapeError('a "metric" that is not an object of string labels')
    return labels


#: Seconds a sample's time may stray from the window asked for (the API rounds to milliseconds).
_SLACK = 1.0


def _samples(pairs: list, start: float, end: float) -> list[tuple[float, float]]:
    """The finite samples of ``[t, "v"]`` pairs; a time outside the window, or a pair of any
    other shape, is a ShapeError."""
    out = []
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)
                and isinstance(pair[0], (int, float)) and not isinstance(pair[0], bool)):
            raise ShapeError('a sample that is not [<unix time>, "<value>"]')
        if not start - _SLACK <= pair[0] <= end + _SLACK:  # compared before float(): 10**400 overflows it
            raise ShapeError(f"a sample at {str(pair[0])[:40]}, outside the window asked for")
        t = float(pair[0])
        try:
            value = float(pair[1])
        except ValueError:
            raise ShapeError(f"the sample value {pair[1][:40]!r}, not a number") from None
        if math.isfinite(value):
            out.append((t, value))
    return out
