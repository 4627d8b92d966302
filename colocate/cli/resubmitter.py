"""``colocate resubmitter``: the controller that resubmits TFJobs a disruption failed."""
from __future__ import annotations

import argparse
import math

from colocate.errors import InputError


def add(command) -> None:
    """The command's arguments, beside its handler."""
    p = command("resubmitter", help="run the controller that resubmits TFJobs a disruption failed",
                description="Watch the TFJobs and their pods in --namespace; when a pod is disrupted (its "
                            "DisruptionTarget condition: preempted, evicted, tainted away, or stopped by the kubelet) "
                            "and its TFJob then fails, re-create the TFJob under the same name after an exponential "
                            "backoff, so it resumes from its checkpoint. A genuine failure is never resubmitted. "
                            "Leader election on a Lease; Prometheus metrics on --metrics-port. docs/resubmission.md.")
    p.add_argument("--namespace", action="append", required=True, help="a training namespace (repeat for more)")
    p.add_argument("--lease-namespace", required=True, help="namespace of the leader-election Lease")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
    p.add_argument("--max-resubmissions", type=int, default=5, help="resubmissions per job before it is given up "
                   "(default 5; a job's colocate.io/max-resubmissions annotation overrides it)")
    p.add_argument("--backoff-seconds", type=float, default=30.0, help="delay before the first resubmission, "
                   "doubled for each one after it (default 30)")
    p.add_argument("--max-backoff-seconds", type=float, default=900.0, help="the longest delay (default 900)")
    p.add_argument("--blocked-after-seconds", type=float, default=300.0, help="how long a deleted job's pods may "
                   "take to go before the resubmission counts as blocked: metric, Event, alert (default 300)")
    p.add_argument("--count-decay-seconds", type=float, default=7200.0, help="a job that ran this long before its "
                   "disruption starts its resubmission count again (default 7200)")
    p.add_argument("--metrics-port", type=int, default=8080, help="port of /metrics (default 8080)")
    p.add_argument("--metrics-address", default="0.0.0.0", help="address /metrics listens on (default 0.0.0.0)")
    p.set_defaults(func=run)


#: The resubmitter's settings past which a value is a mistake, not a policy.
RESUBMISSIONS_LIMIT = 1000

BACKOFF_LIMIT_SECONDS = 86400

def run(args: argparse.Namespace) -> int:
    from colocate.incluster.resubmit import main, policy

    for name, top in (("max_resubmissions", RESUBMISSIONS_LIMIT), ("metrics_port", 65535)):
        if not 0 <= getattr(args, name) <= top:
            raise InputError(f"--{name.replace('_', '-')}", str(getattr(args, name)), f"must be from 0 to {top}")
    for name in ("backoff_seconds", "max_backoff_seconds", "blocked_after_seconds", "count_decay_seconds"):
        value = getattr(args, name)
        # NaN compares false with everything, so the range test is written to fail for it.
        if not (math.isfinite(value) and 0 <= value <= BACKOFF_LIMIT_SECONDS):
            raise InputError(f"--{name.replace('_', '-')}", str(value), f"must be a number of seconds from 0 to "
                             f"{BACKOFF_LIMIT_SECONDS} (a day)")
    _listen_address(args.metrics_address)
    if args.max_backoff_seconds < args.backoff_seconds:
        raise InputError("--backoff-seconds", str(args.backoff_seconds),
                         "must be >= 0 and at most --max-backoff-seconds")
    settings = policy.Settings(args.max_resubmissions, args.backoff_seconds, args.max_backoff_seconds,
                               args.blocked_after_seconds, args.count_decay_seconds)
    return main.run(main.Options(tuple(args.namespace), args.lease_namespace, settings, args.metrics_port,
                                 args.metrics_address, args.kubeconfig))

def _listen_address(address: str) -> None:
    """``--metrics-address``: an IP address, or a name that resolves to one (else the bind would
    fail with a gaierror, after the kubeconfig was read)."""
    import ipaddress
    import socket

    try:
        ipaddress.ip_address(address)
        return
    except ValueError:
        pass
    try:
        socket.getaddrinfo(address, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise InputError("--metrics-address", address, "is not an address to listen on: give an IP address "
                         "such as 0.0.0.0 (every interface) or 127.0.0.1") from None
