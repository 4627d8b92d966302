"""`colocate synth --check`: exit 1 and the list of files when dist/ is stale, 0 when fresh; writes nothing."""
from __future__ import annotations

import shutil

from colocate import ROOT
from colocate.synth import write as render
from tests.helpers import colocate

DIST = ROOT / "dist"


def test_check_on_the_committed_dist_exits_0():
    proc = colocate("synth", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "" and "is up to date" in proc.stderr


def test_check_lists_added_removed_and_modified_files_and_writes_nothing(tmp_path):
    out = tmp_path / "dist"
    shutil.copytree(DIST, out)
    pvc = out / "apps" / "training" / "persistentvolumeclaim.training.recsys-train-checkpoints.yaml"
    pvc.unlink()  # synth would add it back
    (out / "apps" / "training" / "stray.yaml").write_text("kind: Stray\n")  # synth would remove it
    quota = out / "apps" / "platform" / "resourcequota.training.training-quota.yaml"
    quota.write_text(quota.read_text().replace("persistentvolumeclaims: '100'", "persistentvolumeclaims: '7'"))
    before = render.read_tree(out)

    proc = colocate("synth", "--check", "--outdir", str(out))

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        f"added    {pvc}",
        f"removed  {out / 'apps' / 'training' / 'stray.yaml'}",
        f"modified {quota}",
    ]
    assert "3 files would change" in proc.stderr
    assert f"run `colocate synth --outdir {out}`" in proc.stderr
    assert render.read_tree(out) == before, "synth --check must not write"


def test_check_of_a_missing_folder_lists_every_file_as_added(tmp_path, rendered):
    out = tmp_path / "nothing-here"
    proc = colocate("synth", "--check", "--outdir", str(out))
    assert proc.returncode == 1
    assert len(proc.stdout.splitlines()) == len(rendered)
    assert not out.exists()
