#!/usr/bin/env python3
"""Add to policies/metrics/catalog.yaml every kube-state-metrics family its docs list at a tag,
for the resources the kube-state-metrics chart collects, that the catalog does not have yet.

Reads ``docs/<resource>-metrics.md`` through ``git show <tag>:...`` in a kubernetes/kube-state-metrics
clone (the search tool's ``fetch github:kubernetes/kube-state-metrics`` gives one); entries already
in the catalog are left as they are (they may carry hand-verified notes). New entries are inserted
in sorted position as text, so the file's comments and layout stay. Run once per version bump:

    python scripts/catalog_import_ksm.py /path/to/kube-state-metrics.git v2.10.1
"""
from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "policies" / "metrics" / "catalog.yaml"
#: The kube-state-metrics chart's `collectors` (5.15.x values.yaml) = KSM's DefaultResources
#: (pkg/options/resource.go at v2.10.1): the doc files of other resources are not exposed.
COLLECTED = ("certificatesigningrequest", "configmap", "cronjob", "daemonset", "deployment", "endpoint",
             "horizontalpodautoscaler", "ingress", "job", "lease", "limitrange", "mutatingwebhookconfiguration",
             "namespace", "networkpolicy", "node", "persistentvolumeclaim", "persistentvolume",
             "poddisruptionbudget", "pod", "replicaset", "replicationcontroller", "resourcequota", "secret",
             "service", "statefulset", "storageclass", "validatingwebhookconfiguration", "volumeattachment")
_LABEL = re.compile(r"`([a-zA-Z_][a-zA-Z0-9_]*)`\s*=")


def rows(repo: str, tag: str, resource: str):
    text = subprocess.run(["git", "--git-dir", repo, "show", f"{tag}:docs/{resource}-metrics.md"],
                          capture_output=True, text=True, check=True).stdout
    header = None
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].lower().startswith("metric name"):
            header = [c.lower() for c in cells]
            continue
        if header and cells and cells[0].startswith("kube_"):
            yield dict(zip(header, cells)), f"docs/{resource}-metrics.md"


def entry(row: dict, source: str, tag: str) -> dict:
    name = row["metric name"]
    labels = sorted(set(_LABEL.findall(html.unescape(row.get("labels/tags", "")))))
    # label_<KEY> / annotation_<KEY> placeholders are the dynamic ones, not real names
    fixed = [name for name in labels if not re.match(r"^(label|annotation)_[A-Z_]+$", name)]
    out: dict = {"exporter": "kube-state-metrics", "labels": fixed,
                 "source": f"kubernetes/kube-state-metrics {source}@{tag}", "type": row["metric type"].lower()}
    if name.endswith("_labels"):
        out["dynamic_labels"] = "label_<sanitized key>, ONLY for keys listed in --metric-labels-allowlist"
    if name.endswith("_annotations"):
        out["dynamic_labels"] = "annotation_<sanitized key>, ONLY for keys listed in --metric-annotations-allowlist"
    if row.get("opt-in", "-") not in ("-", ""):
        out["default_exposed"] = False
    status = row.get("status", "")
    if status and status != "STABLE":
        out["note"] = f"{status} in the kube-state-metrics docs at {tag}"
    return out


def insert(new: dict[str, dict], section: str = "metrics") -> None:
    """Insert catalog entries under ``section:`` in sorted position, as text (comments stay)."""
    lines = CATALOG.read_text().split("\n")
    start = lines.index(f"{section}:") + 1
    for name in sorted(new, reverse=True):
        i = start
        while i < len(lines) and lines[i].startswith("  "):
            m = re.match(r"^  ([A-Za-z_:0-9*]+):$", lines[i])
            if m and m.group(1) > name:
                break
            i += 1
        block = yaml.safe_dump({name: new[name]}, sort_keys=True, width=110, default_flow_style=None).rstrip("\n").split("\n")
        lines[i:i] = ["  " + b for b in block]
    CATALOG.write_text("\n".join(lines))


def main(repo: str, tag: str) -> int:
    text = CATALOG.read_text()
    known = set((yaml.safe_load(text).get("metrics") or {}))
    new = {}
    for resource in COLLECTED:
        for row, source in rows(repo, tag, resource):
            name = row["metric name"]
            if name not in known and name not in new:
                new[name] = entry(row, source, tag)
    insert(new)
    print(f"added {len(new)} kube-state-metrics families: {', '.join(sorted(new))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
