"""The metric catalog (policies/metrics/catalog.yaml): every series name the pinned exporters
put on the wire (histograms and summaries expanded as the catalog header says), its labels, and
the removed / not_in_pinned_versions / dropped facts that explain an unknown name."""
from __future__ import annotations

import difflib
import re
import fnmatch
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping

import yaml

from colocate.base import compiled, goyaml
from colocate.errors import InputError
from colocate.base.data_files import data_path

CATALOG_PATH = data_path("colocate.policies", "metrics", "catalog.yaml")

#: Which scrape job(s) an exporter's series come from (the keys of the catalog's target_labels).
_EXPORTER_JOBS = {"kubelet-cadvisor": ("kubelet",), "kubelet": ("kubelet",)}
#: Labels every scraped series carries.
_SCRAPE_LABELS = frozenset({"job", "instance"})
_SUFFIXES = {"histogram": (("_bucket", "le"), ("_sum", None), ("_count", None)),
             "summary": (("", "quantile"), ("_sum", None), ("_count", None))}

@dataclass(frozen=True)
class Metric:
    """One series name as Prometheus stores it."""

    name: str
    exporter: str
    #: Label names the series can carry; ``None`` when any label may appear (ALERTS).
    labels: frozenset[str] | None
    #: Prefixes of generated label names (``label_`` for kube_pod_labels' allow-listed keys).
    label_prefixes: tuple[str, ...] = ()
    #: Why Prometheus never stores it although the exporter emits it ("" = stored).
    dropped: str = ""
    #: Why the exporter does not emit it as deployed: its collector is off by default ("" = on).
    off: str = ""

    @property
    def absent(self) -> bool:
        """A query on it returns nothing in the pinned stack."""
        return bool(self.dropped or self.off)

    def has_label(self, label: str) -> bool:
        return self.labels is None or label in self.labels or label.startswith(self.label_prefixes)


@dataclass(frozen=True)
class Removed:
    """An old name people still write, and what replaced it."""

    replacement: str
    removed_in: str


@dataclass(frozen=True, eq=False)
class Catalog:
    """policies/metrics/catalog.yaml, as the checks use it."""

    metrics: Mapping[str, Metric]
    removed: Mapping[str, Removed]
    #: ``kube_hpa_*``-style entries: (glob, Removed with a ``*`` in its replacement).
    removed_patterns: tuple[tuple[str, Removed], ...]
    #: name -> why it is absent from the pinned versions.
    newer: Mapping[str, str]
    #: label -> what to use instead, for labels the pinned exporters no longer set.
    removed_labels: Mapping[str, str]
    #: Labels mixins group and join by on purpose although no local series carries them
    #: (kubernetes-mixin's clusterLabel): not reported in by() and on().
    grouping_labels: frozenset[str] = frozenset()

    def explain_unknown(self, name: str, known: Mapping[str, Metric]) -> str:
        """Why ``name`` returns nothing, and the name to use instead."""
        metric = known.get(name)
        if metric is not None and metric.off:
            return f"{name} exists in {metric.exporter}, but its collector is off by default: {metric.off}"
        if metric is not None and metric.dropped:
            return f"{name} is emitted by {metric.exporter} but never stored: {metric.dropped}"
        if name in self.removed:
            r = self.removed[name]
            return f"{name} was removed in {r.removed_in}; use {r.replacement}"
        for pattern, r in self.removed_patterns:
            if fnmatch.fnmatchcase(name, pattern):
                new = r.replacement.replace("*", name[len(pattern.rstrip("*")):], 1)
                return f"{name} was removed in {r.removed_in}; use {new}"
        # A histogram or summary is listed once, by its base name.
        base = next((name.removesuffix(s) for s in ("_bucket", "_sum", "_count") if name.removesuffix(s) in self.newer), name)
        if base in self.newer:
            return f"{name} is not in the pinned exporter versions ({self.newer[base]})"
        if f"{name}_bucket" in known:
            return f"{name} is a histogram; query {name}_bucket, {name}_sum or {name}_count"
        extra = [n for n, m in known.items() if n not in self.metrics and not m.absent]
        candidates = [c for c in (self.closest_stored(name), *difflib.get_close_matches(name, extra, n=1, cutoff=0.6)) if c]
        close = max(candidates, key=lambda c: difflib.SequenceMatcher(None, name, c).ratio(), default=None)
        hint = f"; closest catalog name: {close}" if close else "; no similar name in the catalog"
        return f"{name} is not exposed by any pinned exporter{hint}"

    def closest_stored(self, name: str) -> str | None:
        """The catalog name most like ``name`` (difflib, cutoff 0.6), computed once per name: on
        kube-prometheus's rules the suggestions took 9 of 10 seconds uncached."""
        return _closest(self, name)


@lru_cache(maxsize=4096)
def _closest(catalog: "Catalog", name: str) -> str | None:
    stored = _stored_names(catalog)
    # Names sharing the first word (prometheus_, kube_, node_) first: same answer, a fraction of the work.
    prefix = name.split("_", 1)[0] + "_"
    for pool in ([n for n in stored if n.startswith(prefix)], stored):
        close = best_match(name, pool, 0.6)
        if close:
            return close
    return None


def best_match(word: str, possibilities: list[str], cutoff: float) -> str | None:
    """``difflib.get_close_matches(word, possibilities, n=1, cutoff)``, or None, computed with
    fewer full comparisons: quick_ratio() bounds ratio() from above, so candidates are scored in
    falling quick_ratio order until none left can beat (or tie) the best ratio found."""
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    bounded = []
    for x in possibilities:
        matcher.set_seq1(x)
        if matcher.real_quick_ratio() >= cutoff:
            bound = matcher.quick_ratio()
            if bound >= cutoff:
                bounded.append((bound, x))
    bounded.sort(key=lambda bx: bx[0], reverse=True)
    best: tuple[float, str] | None = None
    for bound, x in bounded:
        if best is not None and bound < best[0]:
            break
        matcher.set_seq1(x)
        score = matcher.ratio()
        # get_close_matches keeps the largest (score, x): a tie goes to the larger string.
        if score >= cutoff and (best is None or (score, x) > best):
            best = (score, x)
    return best[1] if best else None


@lru_cache(maxsize=8)
def _stored_names(catalog: "Catalog") -> list[str]:
    return [n for n, m in catalog.metrics.items() if not m.absent]


def _job_labels(target_labels: dict[str, Any]) -> dict[str, frozenset[str]]:
    return {job: frozenset(spec.get("labels") or ()) | _SCRAPE_LABELS for job, spec in target_labels.items()}


def _dynamic_prefixes(entry: dict[str, Any]) -> tuple[str, ...]:
    """``label_<sanitized key> ...`` -> ("label_",); "every label of the alert" -> open set."""
    return tuple(sorted(set(re.findall(r"\b([a-z]+_)<", str(entry.get("dynamic_labels") or "")))))


def _metric_labels(entry: dict[str, Any], jobs: dict[str, frozenset[str]]) -> frozenset[str] | None:
    if entry.get("dynamic_labels") and not _dynamic_prefixes(entry):
        return None
    own = frozenset(entry.get("labels") or ()) | frozenset(entry.get("optional_labels") or ())
    exporter = entry["exporter"]
    if entry.get("includes_target_labels"):
        names = tuple(jobs)
    else:
        names = tuple(entry.get("jobs") or _EXPORTER_JOBS.get(exporter, (exporter,)))
    target: frozenset[str] = frozenset().union(*(jobs.get(j, _SCRAPE_LABELS) for j in names))
    return own | target


def expand(name: str, entry: dict[str, Any], labels: frozenset[str] | None) -> Iterator[tuple[str, frozenset[str] | None]]:
    """The series names of one catalog entry: histogram/summary families become their parts."""
    suffixes = _SUFFIXES.get(entry.get("type", ""))
    if not suffixes:
        yield name, labels
        return
    base = None if labels is None else labels - {"le", "quantile"}
    for suffix, extra in suffixes:
        yield name + suffix, (None if base is None else base | ({extra} if extra else set()))


@lru_cache(maxsize=None)
def catalog_document(path: Path = CATALOG_PATH) -> dict[str, Any]:
    """The metric catalog file as data, read once per process (the checker and the DCGM
    exporter's field list both read it here)."""
    def parse() -> Any:
        try:
            # Nodes composed by libyaml and turned into values directly: 3x faster than constructing.
            return goyaml.load_plain(path.read_text(), str(path))
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(str(path), "", f"cannot read the metric catalog: {exc}") from None

    # 390 KB of YAML: parsed once per installation (colocate.base.compiled), then read as JSON.
    return compiled.load("catalog", [path], [Path(goyaml.__file__)], parse, lambda data: isinstance(data, dict))


@lru_cache(maxsize=None)
def catalog(path: Path = CATALOG_PATH) -> Catalog:
    """The metric catalog, read once per process."""
    data = catalog_document(path)
    jobs = _job_labels(data.get("target_labels") or {})
    metrics: dict[str, Metric] = {}
    for name, entry in (data.get("metrics") or {}).items():
        prefixes = _dynamic_prefixes(entry)
        dropped = entry.get("dropped_by", "dropped by relabeling") if entry.get("dropped") else ""
        for series, labels in expand(name, entry, _metric_labels(entry, jobs)):
            metrics[series] = Metric(series, entry["exporter"], labels, prefixes, dropped, entry.get("off_by_default", ""))
    removed, patterns = {}, []
    for name, entry in (data.get("removed") or {}).items():
        r = Removed(entry["replacement"], entry.get("removed_in", "an earlier release"))
        if entry.get("pattern"):
            patterns.append((name, r))
        else:
            removed[name] = r
    newer = {name: e.get("why", "newer release") for name, e in (data.get("not_in_pinned_versions") or {}).items()}
    removed_labels = {}
    for key, entry in (data.get("removed_labels") or {}).items():
        for label in re.split(r"\s*/\s*", key):
            removed_labels[label] = str(entry.get("replacement", ""))
    grouping = frozenset((data.get("grouping_labels") or {}))
    return Catalog(metrics, removed, tuple(patterns), newer, removed_labels, grouping)
