"""``colocate init`` says what its new colocate.yaml does to the folders around it (hostile-3 L3):
inside another colocate repository the new file shadows the outer one for
every command run below it (a warning); in a folder synth owns (the job files, a dist/) it would
break synth, so it is refused and nothing is written. It never overwrites a file, takes a folder
with files in it only for what --add names, and refuses a file or an unwritable folder as its
target, touching nothing (exit 2, naming the path)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from colocate import ROOT
from colocate.cli import scaffold
from colocate.errors import InputError
from tests.helpers import VENV_BIN, colocate, run

#: What init writes, in the order it prints it.
_SCAFFOLD = [".github/workflows/colocate.yml", ".gitignore", ".pre-commit-config.yaml", "README.md", "cdk8s.yaml",
             "colocate.yaml", "jobs/mnist-example.yaml", "main.py"]


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


def test_init_prints_each_file_it_wrote_and_the_next_command(tmp_path):
    """Every file of the scaffold, one per line on stdout, and nothing else in the folder."""
    proc = colocate("init", "--example", "minimal", "new", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"new/{rel}" for rel in _SCAFFOLD]
    assert sorted(p.relative_to(tmp_path / "new").as_posix() for p in (tmp_path / "new").rglob("*")
                  if p.is_file()) == _SCAFFOLD
    assert "wrote 8 files (minimal example)" in proc.stderr, proc.stderr
    assert "run `cd new && colocate synth && colocate check`" in proc.stderr, proc.stderr


def test_a_folder_holding_only_git_counts_as_empty(tmp_path):
    """The README's order: `git init`, then `colocate init`."""
    (tmp_path / ".git").mkdir()
    proc = colocate("init", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == _SCAFFOLD
    assert "run `colocate synth && colocate check`" in proc.stderr, proc.stderr


def test_a_folder_with_files_is_refused_without_add_and_nothing_written(tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    proc = colocate("init", str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{tmp_path}: is not empty (notes.txt)" in proc.stderr and "--add" in proc.stderr, proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_add_writes_only_what_it_names_next_to_the_users_files(tmp_path):
    (tmp_path / "colocate.yaml").write_text("# mine\n")
    proc = colocate("init", "--add", "jobs/", "--add", ".github", "--add", "main.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [".github/workflows/colocate.yml", "jobs/mnist-example.yaml", "main.py"]
    assert (tmp_path / "colocate.yaml").read_text() == "# mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".github", "colocate.yaml", "jobs", "main.py"]


def test_add_never_overwrites_and_writes_nothing_when_one_file_exists(tmp_path):
    (tmp_path / "README.md").write_text("# mine\n")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "mnist-example.yaml").write_text("name: mine\n")
    proc = colocate("init", "--add", "main.py", "--add", "README.md", "--add", "jobs", str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert (f"{tmp_path / 'README.md'}, {tmp_path / 'jobs' / 'mnist-example.yaml'}: already exists; init never "
            "overwrites") in proc.stderr, proc.stderr
    assert not (tmp_path / "main.py").exists()
    assert (tmp_path / "README.md").read_text() == "# mine\n"
    assert (tmp_path / "jobs" / "mnist-example.yaml").read_text() == "name: mine\n"


def test_the_old_refusal_stands_an_existing_colocate_yaml_is_kept(tmp_path):
    (tmp_path / "colocate.yaml").write_text("# mine\n")
    proc = colocate("init", "--add", "colocate.yaml", str(tmp_path))
    assert proc.returncode == 2 and "colocate.yaml: already exists" in proc.stderr, proc.stderr
    assert (tmp_path / "colocate.yaml").read_text() == "# mine\n"


@pytest.mark.parametrize("add", ["jobs/x.yaml", "dist", ".", "../colocate.yaml"])
def test_add_of_something_init_does_not_write_is_refused(tmp_path, add):
    proc = colocate("init", "--add", add, str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{add}: is not a file or folder `colocate init` writes; --add takes one of: .github/, .gitignore" \
        in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_file_as_target_is_refused(tmp_path):
    (tmp_path / "colocate.yaml").write_text("# mine\n")
    proc = colocate("init", "colocate.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "colocate.yaml: is a file, not a folder" in proc.stderr, proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["colocate.yaml"]


def test_a_missing_folder_is_made_but_not_its_parents(tmp_path):
    proc = colocate("init", "a/b", cwd=tmp_path)
    assert proc.returncode == 2 and "a/b: no such folder, and no folder to make it in" in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []


def _without_override(args: list[str]) -> list[str]:
    """root writes into a mode-0555 folder anyway: drop the capabilities that let it, so the test
    sees what a user does (an ordinary user needs nothing dropped)."""
    if os.geteuid() != 0:
        return args
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--", *args]


def _init_unprivileged(*args: str, cwd) -> subprocess.CompletedProcess:
    return run(_without_override([str(VENV_BIN / "colocate"), "init", *args]), cwd=cwd)


def test_a_read_only_folder_is_refused_and_nothing_written(tmp_path):
    target = tmp_path / "ro"
    target.mkdir(mode=0o555)
    proc = _init_unprivileged(str(target), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{target}: is not writable: nothing was written" in proc.stderr, proc.stderr
    assert list(target.iterdir()) == []


def test_a_read_only_subfolder_is_refused_before_anything_is_written(tmp_path):
    """main.py comes before .github/ in no order init writes by: the check covers every folder first."""
    (tmp_path / ".github").mkdir(mode=0o555)
    proc = _init_unprivileged("--add", "main.py", "--add", ".github", "--add", "README.md", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert ".github: is not writable: nothing was written" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [".github"]
    assert list((tmp_path / ".github").iterdir()) == []


def test_a_failure_midway_removes_what_was_written(tmp_path):
    """A write that fails after the checks (a full disk, a template gone) leaves the folder as it was."""
    chosen = scaffold.files("minimal")
    chosen["zz-last"] = tmp_path / "no-such-template"
    with pytest.raises(InputError, match="nothing was written"):
        scaffold.write(tmp_path / "new", chosen)
    assert list(tmp_path.iterdir()) == []


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
