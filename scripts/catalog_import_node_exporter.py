#!/usr/bin/env python3
"""Add to policies/metrics/catalog.yaml the metric families of node-exporter collectors at a tag
that the catalog lacks: every ``prometheus.NewDesc(prometheus.BuildFQName(namespace, <subsystem>,
"<name>"), "<help>", <labels>, ...)`` in ``collector/<file>.go``, read with ``git show``. A
collector registered ``defaultDisabled`` gets ``off_by_default`` (rule COL200 then says the
collector is off, not that the name is unknown). Existing entries are left as they are.

    python scripts/catalog_import_node_exporter.py /path/to/node_exporter.git v1.7.0 timex mdadm_linux ...
"""
from __future__ import annotations

import re
import subprocess
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from catalog_import_ksm import CATALOG, insert  # noqa: E402

_DESC = re.compile(r'NewDesc\(\s*prometheus\.BuildFQName\(namespace,\s*(?P<sub>"[a-z_]*"|[a-zA-Z]+),\s*"(?P<name>[a-z_]+)"\),'
                   r'\s*(?:"(?:[^"\\]|\\.)*"|[a-zA-Z]+(?:\s*\+\s*"(?:[^"\\]|\\.)*")*),\s*(?P<labels>nil|\[\]string\{[^}]*\})', re.S)


def families(repo: str, tag: str, collector: str) -> tuple[dict[str, dict], bool]:
    text = subprocess.run(["git", "--git-dir", repo, "show", f"{tag}:collector/{collector}.go"],
                          capture_output=True, text=True, check=True).stdout
    consts = dict(re.findall(r'(?:const\s+)?(\w+)\s*:?=\s*"([a-z_]*)"', text))
    off = bool(re.search(r'registerCollector\("[a-z_]+",\s*defaultDisabled', text))
    out = {}
    for m in _DESC.finditer(text):
        sub = m.group("sub").strip('"') if m.group("sub").startswith('"') else consts.get(m.group("sub"), "")
        name = "_".join(p for p in ("node", sub, m.group("name")) if p)
        labels = sorted(re.findall(r'"([a-zA-Z_]+)"', m.group("labels")))
        out[name] = {"exporter": "node-exporter", "labels": labels, "type": "counter" if name.endswith("_total") else "gauge",
                     "source": f"prometheus/node_exporter collector/{collector}.go@{tag}"}
        if off:
            out[name]["off_by_default"] = (f"the {collector.removesuffix('_linux')} collector is registered "
                                           "defaultDisabled and the prometheus-node-exporter chart does not enable it")
    return out, off


def main(repo: str, tag: str, *collectors: str) -> int:
    import yaml
    known = set((yaml.safe_load(CATALOG.read_text()).get("metrics") or {}))
    new = {}
    for collector in collectors:
        found, _ = families(repo, tag, collector)
        new.update({k: v for k, v in found.items() if k not in known})
    insert(new)
    print(f"added {len(new)} node-exporter families: {', '.join(sorted(new))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
