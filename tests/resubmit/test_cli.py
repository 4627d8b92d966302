"""``colocate resubmitter`` refuses unusable input with exit 2 and a message, before it reaches
for a cluster; it starts without cdk8s (tests/test_packaging.py checks the imports)."""
from __future__ import annotations

import socket
import subprocess

import pytest

from tests.helpers import VENV_BIN, colocate, environment


@pytest.mark.parametrize("args, message", [
    (["--max-resubmissions", "-1"], "--max-resubmissions:-1: must be from 0 to 1000"),
    (["--max-resubmissions", "2000"], "--max-resubmissions:2000: must be from 0 to 1000"),
    (["--backoff-seconds", "60", "--max-backoff-seconds", "30"], "--backoff-seconds:60.0: must be >= 0 and at most"),
    # Each of these passed the old checks and crashed every decision (OverflowError, ValueError).
    (["--max-backoff-seconds", "nan"], "--max-backoff-seconds:nan: must be a number of seconds from 0 to 86400"),
    (["--max-backoff-seconds", "inf"], "--max-backoff-seconds:inf: must be a number of seconds"),
    (["--max-backoff-seconds", "1e308"], "--max-backoff-seconds:1e+308: must be a number of seconds"),
    (["--backoff-seconds", "nan"], "--backoff-seconds:nan: must be a number of seconds"),
    (["--backoff-seconds", "-1"], "--backoff-seconds:-1.0: must be a number of seconds"),
    (["--metrics-port", "70000"], "--metrics-port:70000: must be from 0 to 65535"),
    # hostile-3 R3-M6: "internal error: gaierror" (exit 3) once the kubeconfig was read.
    (["--metrics-address", "not an address"], "--metrics-address:not an address: is not an address to listen on"),
    (["--metrics-address", "\x1b[2J::error::x"], "--metrics-address:\\x1b[2J::error::x: is not an address"),
])
def test_bad_settings_are_exit_2(args, message):
    proc = colocate("resubmitter", "--namespace", "training", "--lease-namespace", "colocate-system", *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_missing_kubeconfig_is_exit_2(tmp_path):
    proc = colocate("resubmitter", "--namespace", "training", "--lease-namespace", "colocate-system",
                    "--kubeconfig", str(tmp_path / "nope"), "--metrics-port", "0")
    assert proc.returncode == 2 and "nope" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_metrics_port_already_taken_is_exit_2(tmp_path):
    """The bind fails after the kubeconfig is read: exit 2 naming the address and port, not exit 3."""
    (tmp_path / "kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([str(VENV_BIN / "colocate"), "resubmitter", "--namespace", "training",
                               "--lease-namespace", "colocate-system", "--kubeconfig", str(tmp_path / "kubeconfig"),
                               "--metrics-address", "127.0.0.1", "--metrics-port", str(port)],
                              env=environment(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"--metrics-address:127.0.0.1:{port}: cannot listen there" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
