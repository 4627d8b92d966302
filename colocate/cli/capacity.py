"""``colocate capacity``: requests per pool and tier against allocatable, and quota use."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colocate.base.text import escape
from colocate.cli.common import EXIT_FINDINGS, EXIT_OK, root
from colocate.errors import InputError


def add(command) -> None:
    """The command's arguments, beside its handler."""
    p = command("capacity", help="requests per pool and tier against allocatable, and quota use",
                epilog="exit codes: 0 everything fits; 1 a pool or a quota is OVER (past allocatable or hard); "
                       "2 unusable input")
    p.add_argument("path", nargs="?", default=str(root() / "dist"), help="dist/ folder (default: the repository's dist/)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from colocate.review import usage, formats, quantities, queue, quota

    if not Path(args.path).is_dir():
        raise InputError(args.path, "", "no such folder: name a dist/ folder")
    docs = usage.api_objects(Path(args.path))
    if not docs:
        raise InputError(args.path, "", "no Kubernetes objects found: name a dist/ folder")
    quantities.check(docs)
    config = Path(args.config) if args.config else None
    # The tree's own pools (its nodes/), else the configured cluster's.
    pools = usage.described_pools(Path(args.path)) or usage.reference_pools(config)
    queues = queue.queues(docs, queue.night_hours(config))
    waiting = {j.name for q in queues for j in q.waiting}
    running = queue.admitted_only(docs, queues)
    usage, uses = usage.usage(running, pools, usage.reference_tiers(config)), quota.uses(running, pools)
    sys.stdout.write(formats.CAPACITY_FORMATS[args.format](usage, uses, queues))
    if waiting:
        print(escape(f"colocate: not counted: {len(waiting)} TFJob(s) waiting in the queue ({', '.join(sorted(waiting))}): "
                     "Kueue admits them as quota frees"), file=sys.stderr)
    helm = sorted(d.name for d in docs if d.kind == "Application" and _renders_helm(d.obj))
    if helm:
        print(escape(f"colocate: not counted: the pods of Applications Argo CD renders from Helm charts "
                     f"({', '.join(helm)}); capacity reads only the manifests in {args.path}"), file=sys.stderr)
    made = sorted(f"{d.kind} {d.namespace}/{d.name}" for d in docs if d.kind in OPERATOR_MADE)
    if made:
        print(escape(f"colocate: not counted: the pods an operator makes from {', '.join(made)} "
                     "(no pod template in the manifests)"), file=sys.stderr)
    return EXIT_FINDINGS if formats.over_committed(usage, uses) else EXIT_OK

#: Custom resources whose pods an operator creates (prometheus-operator: a StatefulSet each).
OPERATOR_MADE = frozenset({"Prometheus", "Alertmanager", "ThanosRuler", "PrometheusAgent"})

def _renders_helm(app: dict) -> bool:
    spec = app.get("spec") or {}
    sources = ([spec["source"]] if isinstance(spec.get("source"), dict) else []) + \
        [s for s in spec.get("sources") or [] if isinstance(s, dict)]
    return any(s.get("chart") or s.get("helm") for s in sources)
