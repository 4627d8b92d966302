"""``colocate resubmitter`` refuses unusable input with exit 2 and a message, before it reaches
for a cluster; it starts without cdk8s (tests/test_packaging.py checks the imports)."""
from __future__ import annotations

import pytest

from tests.helpers import colocate


@pytest.mark.parametrize("args, message", [
    (["--max-resubmissions", "-1"], "--max-resubmissions:-1: must be >= 0"),
    (["--backoff-seconds", "60", "--max-backoff-seconds", "30"], "--backoff-seconds:60.0: must be >= 0 and at most"),
])
def test_bad_settings_are_exit_2(args, message):
    proc = colocate("resubmitter", "--namespace", "training", "--lease-namespace", "colocate-system", *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_missing_kubeconfig_is_exit_2(tmp_path):
    proc = colocate("resubmitter", "--namespace", "training", "--lease-namespace", "colocate-system",
                    "--kubeconfig", str(tmp_path / "nope"), "--metrics-port", "0")
    assert proc.returncode == 2 and "nope" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
