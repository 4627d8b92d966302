#!/usr/bin/env python3
"""Add to policies/metrics/catalog.yaml the metric families the pinned components expose on
/metrics, read from the running binaries rather than from documents:

* kube-apiserver, kube-controller-manager, kube-scheduler (Kubernetes v1.28.15) and etcd (v3.5.15),
  as `colocate simulate` builds them, scraped after the reference simulation has run (so the
  vectors its activity touches have series);
* Alertmanager v0.26.0 (bin/alertmanager, as scripts/bootstrap builds it), Prometheus v2.48.1
  given with --prometheus (built from github.com/prometheus/prometheus v0.48.1, the chart's
  version) and prometheus-config-reloader v0.70.0 given with --config-reloader (the chart's
  sidecar), started on loopback with a config that makes Prometheus evaluate rules, scrape,
  discover by DNS, remote-write (to a closed port) and notify the Alertmanager, then scraped.

A family is its `# TYPE` line; its labels are every label name its samples carry (without le and
quantile). A family with no series at scrape time is not exposed and so not added: the catalog
stays a list of what was seen. Entries already in the catalog are left as they are; a family
several components expose gets `jobs` for each.

    python scripts/catalog_import_scrape.py --prometheus PROMETHEUS --config-reloader RELOADER
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from catalog_import_ksm import CATALOG, ROOT, insert  # noqa: E402

from colocate import config  # noqa: E402
from colocate.simulate import run, scenario  # noqa: E402
from colocate.simulate.local_cluster import free_port  # noqa: E402

_TYPE = re.compile(r"^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$")
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"')
_PARTS = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count")}


def families(text: str) -> dict[str, tuple[str, set[str]]]:
    """name -> (type, label names) from Prometheus exposition text."""
    types: dict[str, str] = {}
    labels: dict[str, set[str]] = {}
    for line in text.splitlines():
        m = _TYPE.match(line)
        if m:
            types[m.group(1)] = m.group(2) if m.group(2) != "untyped" else "gauge"
            labels.setdefault(m.group(1), set())
            continue
        m = _SAMPLE.match(line)
        if not m or line.startswith("#"):
            continue
        name = m.group(1)
        family = name if name in types else next(
            (name.removesuffix(s) for s in ("_bucket", "_sum", "_count") if name.removesuffix(s) in types), None)
        if family:
            labels[family] |= set(_LABEL.findall(m.group(2) or "")) - {"le", "quantile"}
    return {name: (kind, labels[name]) for name, kind in types.items()}


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode()


def wait(url: str, proc: subprocess.Popen, name: str) -> None:
    for _ in range(150):
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited with {proc.returncode}")
        try:
            scrape(url)
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{name} did not answer on {url}")


def monitoring_stack(prometheus: Path, reloader: Path, folder: Path) -> dict[str, str]:
    """Alertmanager, Prometheus and the config reloader on loopback, Prometheus evaluating an
    always-firing alert, scraping itself and the Alertmanager and notifying it, discovering by
    DNS and remote-writing (so those families have series); their /metrics after a while."""
    am_port, prom_port, reloader_port = free_port(), free_port(), free_port()
    (folder / "am.yml").write_text("route: {receiver: none}\nreceivers: [{name: none}]\n")
    (folder / "rules.yml").write_text("groups: [{name: g, interval: 1s, rules: [{alert: Always, expr: vector(1)},"
                                      " {record: r, expr: vector(1)}]}]\n")
    (folder / "prom.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(folder / "rules.yml")],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]},
        "remote_write": [{"url": "http://127.0.0.1:9/write"}],
        "scrape_configs": [{"job_name": "self", "static_configs": [{"targets": [f"127.0.0.1:{prom_port}",
                                                                                  f"127.0.0.1:{am_port}"]}]},
                           {"job_name": "dns", "dns_sd_configs": [{"names": ["localhost"], "type": "A", "port": 9}]}]}))
    procs = [
        subprocess.Popen([str(ROOT / "bin" / "alertmanager"), f"--config.file={folder / 'am.yml'}",
                          f"--storage.path={folder / 'am'}", f"--web.listen-address=127.0.0.1:{am_port}",
                          "--cluster.listen-address=127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen([str(prometheus), f"--config.file={folder / 'prom.yml'}",
                          f"--storage.tsdb.path={folder / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen([str(reloader), f"--listen-address=127.0.0.1:{reloader_port}",
                          f"--reload-url=http://127.0.0.1:{prom_port}/-/reload", f"--config-file={folder / 'prom.yml'}",
                          f"--config-envsubst-file={folder / 'prom.out.yml'}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    try:
        urls = {"alertmanager": f"http://127.0.0.1:{am_port}/metrics",
                "prometheus": f"http://127.0.0.1:{prom_port}/metrics",
                "config-reloader": f"http://127.0.0.1:{reloader_port}/metrics"}
        for (name, url), proc in zip(urls.items(), procs):
            wait(url, proc, name)
        time.sleep(15)  # rule evaluations, scrapes, a notification and a head compaction check
        return {name: scrape(url) for name, url in urls.items()}
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prometheus", type=Path, required=True, help="a Prometheus v2.48.1 binary")
    parser.add_argument("--config-reloader", type=Path, required=True, help="a prometheus-config-reloader v0.70.0 binary")
    args = parser.parse_args()
    sim = config.load().simulation
    texts: dict[str, str] = {}

    def read_control_plane(cp) -> None:
        texts.update({name: cp.scrape(name) for name in cp.metrics})

    run.simulate(ROOT / "dist", scenario.load("night"), inspect=read_control_plane,
                 log=lambda line: print(line, file=sys.stderr))
    with tempfile.TemporaryDirectory() as folder:
        texts.update(monitoring_stack(args.prometheus, args.config_reloader, Path(folder)))
    versions = {"kube-apiserver": f"Kubernetes {sim.kubernetes}", "kube-controller-manager": f"Kubernetes {sim.kubernetes}",
                "kube-scheduler": f"Kubernetes {sim.kubernetes}", "etcd": f"etcd {sim.etcd}",
                "alertmanager": "Alertmanager v0.26.0", "prometheus": "Prometheus v2.48.1",
                "config-reloader": "prometheus-config-reloader v0.70.0"}
    known = set(yaml.safe_load(CATALOG.read_text()).get("metrics") or {})
    new: dict[str, dict] = {}
    for component, text in texts.items():
        for name, (kind, labels) in sorted(families(text).items()):
            if name in known:
                continue
            if name in new:
                new[name]["jobs"] = sorted(set(new[name].get("jobs", [new[name]["exporter"]])) | {component})
                new[name]["labels"] = sorted(set(new[name]["labels"]) | labels)
                continue
            new[name] = {"exporter": component, "type": kind, "labels": sorted(labels),
                         "source": f"scraped from {versions[component]} /metrics (scripts/catalog_import_scrape.py)"}
            if component == "config-reloader":
                # The sidecar's reloader-web port is an endpoint of both ServiceMonitors
                # (kube-prometheus-stack-55.5.1 templates/{prometheus,alertmanager}/servicemonitor.yaml).
                new[name]["jobs"] = ["alertmanager", "prometheus"]
    insert(new)
    print(f"added {len(new)} families: " + ", ".join(f"{c} {sum(1 for e in new.values() if e['exporter'] == c)}"
                                                    for c in texts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
