"""synth never destroys what it did not write, and its swap leaves the old tree or the new one."""
from __future__ import annotations

import dataclasses
import os
import signal

import pytest

from colocate import render
from colocate.errors import InputError, PropError
from colocate.model.cluster import reference
from colocate import config as config_mod
from tests.helpers import colocate

FILES = {"index.yaml": "apiVersion: colocate.io/v1alpha1\nkind: DistIndex\nmetadata: {name: colocate}\n",
         "apps/a.yaml": "x: 1\n"}


def test_outdir_dot_with_a_git_folder_is_refused_and_untouched(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    proc = colocate("synth", "--outdir", str(tmp_path))
    assert proc.returncode == 2 and "is not an earlier colocate dist/" in proc.stderr and "Traceback" not in proc.stderr
    assert (tmp_path / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"


def test_a_non_empty_foreign_folder_is_refused_an_earlier_dist_is_replaced(tmp_path):
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "todo.txt").write_text("keep me")
    with pytest.raises(InputError):
        render.write_tree(FILES, foreign)
    assert (foreign / "todo.txt").read_text() == "keep me"
    ours = tmp_path / "dist"
    render.write_tree(FILES, ours)
    render.write_tree({**FILES, "apps/b.yaml": "y: 2\n"}, ours)
    assert sorted(p.name for p in (ours / "apps").iterdir()) == ["a.yaml", "b.yaml"]


def test_stale_leftovers_of_an_interrupted_swap_are_removed(tmp_path):
    ours = tmp_path / "dist"
    render.write_tree(FILES, ours)
    for name in ("dist.old-12345", "dist.tmp-abc_12"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "index.yaml").write_text("stale")
    (tmp_path / "dist.old-notes").mkdir()  # not ours: not our pattern
    render.write_tree(FILES, ours)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist", "dist.old-notes"]


def test_sigint_during_the_swap_waits_until_the_new_tree_is_in_place(tmp_path, monkeypatch):
    ours = tmp_path / "dist"
    render.write_tree(FILES, ours)
    real_rename = type(ours).rename

    def rename_and_interrupt(self, target):
        os.kill(os.getpid(), signal.SIGINT)  # arrives between the two renames
        return real_rename(self, target)

    monkeypatch.setattr(type(ours), "rename", rename_and_interrupt)
    with pytest.raises(KeyboardInterrupt):
        render.write_tree({**FILES, "apps/new.yaml": "z: 3\n"}, ours)
    monkeypatch.undo()
    assert (ours / "apps" / "new.yaml").exists() and render.is_ours(ours)


def test_a_failed_second_rename_puts_the_old_tree_back(tmp_path, monkeypatch):
    ours = tmp_path / "dist"
    render.write_tree(FILES, ours)
    real_rename = type(ours).rename

    def fail_staging(self, target):
        if ".tmp-" in self.name:
            raise OSError("disk full")
        return real_rename(self, target)

    monkeypatch.setattr(type(ours), "rename", fail_staging)
    with pytest.raises(OSError):
        render.write_tree({"index.yaml": FILES["index.yaml"]}, ours)
    monkeypatch.undo()
    assert (ours / "apps" / "a.yaml").read_text() == "x: 1\n"


def test_an_unknown_pool_name_is_a_one_line_prop_error():
    cluster = reference(config_mod.load())
    with pytest.raises(PropError) as err:
        dataclasses.replace(cluster, mixed_pool="mixd")
    assert err.value.prop == "mixed_pool" and "'mixd' is not a pool" in str(err.value)


def _synth_with(tmp_path, text: str):
    import shutil
    from colocate import ROOT

    jobs = tmp_path / "jobs"
    shutil.copytree(ROOT / "jobs", jobs)
    (jobs / "hello-tf.yaml").write_text(text)
    return colocate("synth", "--jobs", str(jobs), "--outdir", str(tmp_path / "out"))


def test_job_file_errors_are_all_listed_unknown_keys_first_in_words(tmp_path):
    proc = _synth_with(tmp_path, "name: hello-tf\nimage: harbor.example.com/ml/hello-tf:latest\n"
                                 "roles:\n  Worker: {cpu: 1, memroy: 2Gi, memory: 4GB}\n")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 3 and "more)" not in proc.stderr, proc.stderr
    assert "$.roles.Worker: unknown key 'memroy' (did you mean 'memory'?)" in lines[0]
    assert "$.image:" in lines[1] and "pinned tag" in lines[1] and "^" not in lines[1]
    assert "$.roles.Worker.memory: '4GB' is not of the expected form (Binary size: 512Mi, 4Gi, 1Ti)" in lines[2]
    assert not (tmp_path / "out").exists()


def test_construct_errors_use_the_job_files_own_key_names(tmp_path):
    proc = _synth_with(tmp_path, "name: hello-tf\nimage: harbor.example.com/ml/hello-tf:1.0.0\n"
                                 "roles:\n  Worker: {cpu: 1, memory: 2Gi, memoryLimit: 8Gi}\n")
    assert proc.returncode == 2 and "hello-tf.yaml:$.roles.Worker.memoryLimit: 8Gi is more than 2x" in proc.stderr, proc.stderr
    assert "memory_limit" not in proc.stderr
