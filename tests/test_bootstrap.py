"""scripts/bootstrap per target: `synth` installs only what synth needs; a full install covers it."""
from __future__ import annotations

from tests.helpers import ROOT, run


def test_synth_profile_stops_before_the_test_tools():
    # After make test's full install the synth profile finds .venv and node_modules up to date.
    proc = run([str(ROOT / "scripts" / "bootstrap"), "synth"], check=True)
    lines = proc.stdout.splitlines()
    assert lines[-1] == "bootstrap: done (synth)", proc.stdout
    assert not [line for line in lines if line.split(":")[1].strip() in
                ("kubeconform", "actionlint", "amtool", "alertmanager", "prometheus", "chromium")], proc.stdout


def test_an_unknown_profile_is_refused_with_exit_2():
    proc = run([str(ROOT / "scripts" / "bootstrap"), "everything"])
    assert proc.returncode == 2 and "unknown profile everything" in proc.stderr, proc.stderr
