"""``colocate init`` says what its new colocate.yaml does to the folders around it (hostile-3 L3):
inside another colocate repository the new file shadows the outer one for
every command run below it (a warning); in a folder synth owns (the job files, a dist/) it would
break synth, so it is refused and nothing is written."""
from __future__ import annotations

import shutil

import pytest

from colocate import ROOT
from tests.helpers import colocate


@pytest.fixture
def outer(tmp_path):
    repo = tmp_path / "outer"
    (repo / "jobs").mkdir(parents=True)
    (repo / "dist").mkdir()
    shutil.copy(ROOT / "colocate.yaml", repo / "colocate.yaml")
    return repo


def test_a_new_repository_gets_no_warning(tmp_path):
    proc = colocate("init", str(tmp_path))
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    assert (tmp_path / "colocate.yaml").read_text() == (ROOT / "colocate.yaml").read_text()


def test_a_repository_nested_in_another_is_written_with_a_warning(outer):
    (outer / "nested" / "inner").mkdir(parents=True)
    proc = colocate("init", "nested/inner", cwd=outer)
    assert proc.returncode == 0, proc.stderr
    assert (outer / "nested" / "inner" / "colocate.yaml").is_file()
    assert (f"colocate: warning: nested/inner is inside the colocate repository {outer}: every command run in "
            f"nested/inner or below now uses nested/inner/colocate.yaml, not {outer / 'colocate.yaml'}") \
        in proc.stderr, proc.stderr


@pytest.mark.parametrize("folder, says", [
    ("jobs", "is the job files' folder of the colocate repository"),
    ("dist", "is inside the dist/ that synth writes"),
    ("dist/apps", "is inside the dist/ that synth writes"),
])
def test_a_folder_synth_owns_is_refused_and_nothing_written(outer, folder, says):
    (outer / folder).mkdir(parents=True, exist_ok=True)
    proc = colocate("init", folder, cwd=outer)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert not (outer / folder / "colocate.yaml").exists()
    assert "Traceback" not in proc.stderr


def test_a_dist_tree_outside_any_repository_is_refused(tmp_path):
    """A dist/ copied elsewhere (its index.yaml says so) is no place for a configuration either."""
    shutil.copy(ROOT / "dist" / "index.yaml", tmp_path / "index.yaml")
    proc = colocate("init", str(tmp_path))
    assert proc.returncode == 2 and "holds a dist/ tree (index.yaml)" in proc.stderr, proc.stderr
    assert not (tmp_path / "colocate.yaml").exists()
