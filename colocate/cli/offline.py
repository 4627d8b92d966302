"""``colocate offline pause|resume``: hold or release the batch load."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colocate.base.text import escape
from colocate.cli.common import EXIT_OK
from colocate.errors import InputError


def add(command) -> None:
    """The command's arguments, beside its handler."""
    p = command("offline", help="pause or resume the batch load (suspend running TFJobs)",
                       description="pause: suspend every unfinished TFJob (training-operator deletes its pods and "
                                   "keeps the job); resume: un-suspend the TFJobs that pause suspended. Reaches the "
                                   "cluster through --kubeconfig, $KUBECONFIG or ~/.kube/config (current context), "
                                   "else the pod's service account (the CronJobs synth emits). Runbook: docs/runbook-latency.md.")
    p.add_argument("action", choices=("pause", "resume"))
    p.add_argument("--cluster-queue", help="hold (pause) or release (resume) this Kueue ClusterQueue (default with a "
                                           "kueue section in colocate.yaml: the cluster's training queue)")
    p.add_argument("--namespace", action="append", help="without --cluster-queue: suspend the TFJobs of this "
                   "namespace one by one (default without Kueue: the cluster's training namespace); with it: where "
                   "resume waits for the paused pods to be gone before releasing the queue (repeat for more)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
    p.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from colocate import config as config_mod
    from colocate.incluster import offline

    config = config_mod.load(Path(args.config)) if args.config else config_mod.load()
    cluster = config.cluster
    if not args.namespace and not args.cluster_queue:
        if config.queue:
            args.cluster_queue = cluster.training_queue
        else:
            args.namespace = [cluster.training_namespace]
    if not args.cluster_queue and len(args.namespace) > 1:
        raise InputError("--namespace", ",".join(args.namespace), "suspends the TFJobs of one namespace: give one "
                         "(several only with --cluster-queue, where resume waits for paused pods)")
    from colocate.incluster.kube import ClusterQueues, TFJobs, api_client

    if args.cluster_queue:
        target, what = args.cluster_queue, "clusterqueue"
        api = api_client(args.kubeconfig)
        # With a queue, --namespace names where resume waits for the paused pods to be gone.
        changes = offline.hold(ClusterQueues(api), args.cluster_queue, args.action, args.dry_run, jobs=TFJobs(api),
                               namespaces=tuple(args.namespace or (cluster.training_namespace,)),
                               log=lambda line: print(f"colocate: {escape(line)}", file=sys.stderr))
    else:
        (namespace,) = args.namespace
        target, what = namespace, "tfjob"
        changes = offline.run(TFJobs(api_client(args.kubeconfig)), namespace, args.action, args.dry_run,
                              log=lambda line: print(f"colocate: {escape(line)}", file=sys.stderr))
    for change in changes:
        name = change.name if args.cluster_queue else f"{target}/{change.name}"
        print(escape(f"{'would ' if args.dry_run else ''}{change.action} {what} {name} ({change.reason})"))
    print(escape(f"colocate: {len(changes)} {'ClusterQueue' if args.cluster_queue else 'TFJob'}(s) "
                 f"{'to ' + args.action if args.dry_run else args.action + 'd'} in {target}"), file=sys.stderr)
    return EXIT_OK
