"""``colocate resubmitter``: lead (a Lease), serve metrics, run the kopf watches and the worker
until SIGTERM or a lost Lease. A lost Lease exits 1, so the kubelet restarts the container and it
campaigns again, as client-go's OnStoppedLeading callers do."""
from __future__ import annotations

import asyncio
import logging
import signal
import socket
import threading
import uuid
from dataclasses import dataclass

from colocate.errors import InputError
from colocate.incluster.kube import REQUEST_TIMEOUT, api_client
from colocate.model.names import RESUBMITTER
from colocate.incluster.resubmit import policy
from colocate.incluster.resubmit.controller import Metrics, Resubmitter, register
from colocate.incluster.resubmit.leader import Lease

log = logging.getLogger("colocate.resubmitter")


@dataclass(frozen=True)
class Options:
    namespaces: tuple[str, ...]
    lease_namespace: str
    settings: policy.Settings
    metrics_port: int = 8080
    metrics_address: str = "0.0.0.0"
    kubeconfig: str | None = None
    lease_name: str = RESUBMITTER


def _connection(api):
    """kopf's credentials from a configured kubernetes ApiClient (a kubeconfig or the pod's
    service account, whose token file the client re-reads)."""
    import kopf

    c = api.configuration
    auth = c.get_api_key_with_prefix("authorization") or c.get_api_key_with_prefix("BearerToken") or ""
    scheme, _, token = auth.partition(" ")
    return kopf.ConnectionInfo(server=c.host, ca_path=c.ssl_ca_cert, insecure=not c.verify_ssl,
                               scheme=scheme or None, token=token or None, certificate_path=c.cert_file,
                               private_key_path=c.key_file)


def run(options: Options) -> int:
    import kopf
    from prometheus_client import start_http_server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)  # a line per handled event otherwise
    api = api_client(options.kubeconfig)
    try:
        start_http_server(options.metrics_port, options.metrics_address)
    except OSError as exc:  # taken, or not an address of this host
        raise InputError("--metrics-address", f"{options.metrics_address}:{options.metrics_port}",
                         f"cannot listen there: {exc.strerror or exc}") from None
    metrics = Metrics(options.namespaces)
    log.info("metrics on %s:%d/metrics", options.metrics_address, options.metrics_port)

    identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    lease = Lease(api, options.lease_namespace, options.lease_name, identity)
    halt, lost = threading.Event(), threading.Event()
    # Until kopf installs its own handlers: SIGTERM while campaigning ends the campaign cleanly.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: halt.set())
    if not lease.acquire(halt):
        return 0
    resubmitter = Resubmitter(api, options.settings, metrics)
    threading.Thread(target=lease.keep, args=(halt, lost), name="lease", daemon=True).start()
    worker = threading.Thread(target=resubmitter.run_worker, name="worker", daemon=True)
    worker.start()

    # An asyncio.Event of kopf's own loop: kopf waits for a threading.Event or a concurrent Future
    # in one of its executor threads (kopf 1.45.2 _cogs/aiokits/aioadapters.py wait_flag), and on
    # SIGTERM its shutdown would wait for that thread for ever.
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    def watch_lost():
        lost.wait()
        loop.call_soon_threadsafe(stop.set)
    threading.Thread(target=watch_lost, name="lost", daemon=True).start()

    registry = kopf.OperatorRegistry()
    # A registry of our own has no login handler: kopf logs in with what the API client above uses.
    kopf.on.login(registry=registry)(lambda **_: _connection(api))
    register(registry, resubmitter)
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False  # our Events are our own (Resubmitted, ResubmissionGivenUp)
    settings.persistence.finalizer = f"{RESUBMITTER}.colocate.io/unused"  # no handler needs one
    # Namespaced Roles only: no cluster-wide scan of CRDs and namespaces (the --namespace names are exact).
    settings.scanning.disabled = True
    # No call without a timeout. kopf's watches have none by default and the API server ends a
    # watch only after 30 to 60 min (--min-request-timeout 1800 s, apiserver endpoints/handlers
    # get.go): a silently dropped connection is found and the watch re-listed within minutes.
    settings.networking.connect_timeout = 10
    settings.networking.request_timeout = REQUEST_TIMEOUT
    settings.watching.connect_timeout = 10
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    try:
        kopf.run(loop=loop, registry=registry, settings=settings, standalone=True,
                 namespaces=list(options.namespaces), stop_flag=stop)
    finally:
        halt.set()
        resubmitter.stop()
        worker.join(timeout=5)
        if not lost.is_set():
            lease.release()
        loop.close()
    return 1 if lost.is_set() else 0
