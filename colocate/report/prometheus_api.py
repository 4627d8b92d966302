"""A small client of Prometheus' HTTP API (``/api/v1/query`` and ``/api/v1/query_range``) whose
failures are ColocateErrors that say which server, which query and why."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from colocate.errors import ColocateError

#: Seconds to wait for one answer.
TIMEOUT = 30


@dataclass(frozen=True)
class Series:
    """One result series: its labels and its (unix time, value) samples."""

    labels: dict[str, str]
    samples: list[tuple[float, float]]


class Prometheus:
    def __init__(self, url: str):
        if not url.startswith(("http://", "https://")):
            raise ColocateError(f"--prometheus {url!r}: give an http:// or https:// URL, e.g. http://localhost:9090")
        self.url = url.rstrip("/")

    def _get(self, path: str, params: dict[str, str]) -> dict:
        target = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(target, timeout=TIMEOUT) as resp:
                body = json.load(resp)
        except urllib.error.HTTPError as exc:
            try:
                detail = json.load(exc).get("error", exc.reason)
            except ValueError:
                detail = exc.reason
            raise ColocateError(f"Prometheus at {self.url} refused {params.get('query')!r}: HTTP {exc.code}: "
                                f"{detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ColocateError(f"cannot reach Prometheus at {self.url}: {reason}; check --prometheus "
                                "(kubectl -n monitoring port-forward svc/kube-prometheus-stack-prometheus 9090)") from None
        except ValueError:
            raise ColocateError(f"{self.url} did not answer as a Prometheus API (no JSON); check --prometheus") from None
        if body.get("status") != "success":
            raise ColocateError(f"Prometheus at {self.url} refused {params.get('query')!r}: {body.get('error')}")
        return body["data"]

    def instant(self, query: str, at: float) -> list[Series]:
        data = self._get("/api/v1/query", {"query": query, "time": f"{at:.3f}"})
        return [Series(r["metric"], [(float(r["value"][0]), float(r["value"][1]))]) for r in data["result"]]

    def range(self, query: str, start: float, end: float, step: int) -> list[Series]:
        data = self._get("/api/v1/query_range", {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                                  "step": str(step)})
        return [Series(r["metric"], [(float(t), float(v)) for t, v in r["values"]]) for r in data["result"]]
