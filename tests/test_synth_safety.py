"""synth never destroys what it did not write, and its swap leaves the old tree or the new one."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from colocate import ROOT, config as config_mod
from colocate.synth import write as render
from colocate.errors import InputError, PropError
from tests.helpers import colocate


def tree(count: int = 2, release: str = "1.0.0") -> dict[str, str]:
    """What synth writes, in small: manifests, an extra (non-YAML) file and the index."""
    items = [render.Manifest(f"apps/a{i % 3}", {"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": f"c{i}", "namespace": "a"}, "data": {"i": str(i)}})
             for i in range(count)]
    doc = render.index(items, release, "1.28.0", {})
    return render.render(items, doc, {"apps/a0/containerd/hosts.toml": f"# {release}\n"})


def on_disk(folder) -> dict[str, str]:
    return render.read_tree(folder)


def test_outdir_dot_with_a_git_folder_is_refused_and_untouched(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "README.md").write_text("mine\n")
    proc = colocate("synth", "--config", str(ROOT / "colocate.yaml"), "--outdir", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip() == ("colocate: error: .: is not empty and is not an earlier colocate dist/ (no index.yaml "
                                   "of kind DistIndex); synth replaces the whole folder, so name a new or empty one")
    assert on_disk(tmp_path) == {".git/HEAD": "ref: refs/heads/main\n", "README.md": "mine\n"}
    assert sorted(p.name for p in tmp_path.parent.iterdir() if p.name.startswith(tmp_path.name)) == [tmp_path.name]


def test_an_earlier_dist_that_became_a_git_checkout_is_refused(tmp_path):
    # dist/ pushed to a GitOps repository of its own: synth into its clone must not delete .git.
    out = tmp_path / "gitops"
    render.write_tree(tree(), out)
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "apps" / "a1" / "README.yaml").write_text("kind: Notes\n")
    before = on_disk(out)
    with pytest.raises(InputError, match=r"is an earlier colocate dist/ but also holds files synth did not write "
                                         r"\(\.git/HEAD, apps/a1/README\.yaml\)"):
        render.write_tree(tree(release="2.0.0"), out)
    assert on_disk(out) == before


def test_a_non_empty_foreign_folder_is_refused_an_earlier_dist_is_replaced(tmp_path):
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "todo.txt").write_text("keep me")
    with pytest.raises(InputError, match="is not an earlier colocate dist/"):
        render.write_tree(tree(), foreign)
    assert on_disk(foreign) == {"todo.txt": "keep me"}
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(InputError, match="is a file; --outdir must be a folder"):
        render.write_tree(tree(), a_file)
    ours, empty = tmp_path / "dist", tmp_path / "empty"
    empty.mkdir()
    for folder in (ours, empty):
        render.write_tree(tree(), folder)
        render.write_tree(tree(5, "2.0.0"), folder)
        assert on_disk(folder) == tree(5, "2.0.0")


def test_the_repositorys_dist_is_an_earlier_dist_with_nothing_foreign():
    assert render.foreign_files(ROOT / "dist") == []


def test_a_foreign_folder_is_refused_before_building(tmp_path):
    foreign = tmp_path / "out"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("x")
    started = time.monotonic()
    proc = colocate("synth", "--outdir", str(foreign))
    assert proc.returncode == 2 and f"colocate: error: {foreign}: is not empty" in proc.stderr, proc.stderr
    assert time.monotonic() - started < 20, "refused only after building"
    assert on_disk(foreign) == {"keep.txt": "x"}


def test_stale_leftovers_of_an_interrupted_swap_are_removed_and_nothing_else(tmp_path):
    ours = tmp_path / "dist"
    render.write_tree(tree(), ours)
    shutil.copytree(ours, tmp_path / "dist.old-12345")  # the old tree of a run killed after the swap
    partial = tmp_path / "dist.tmp-abc_12"  # a staging folder cut short: index.yaml is written first
    partial.mkdir()
    (partial / "index.yaml").write_text(tree()["index.yaml"])
    (tmp_path / "dist.tmp-q1w2e3").mkdir()  # killed before it wrote anything
    for name in ("dist.old-999", "dist.old-notes"):  # a user's folders: not ours, or not our name
        (tmp_path / name).mkdir()
        (tmp_path / name / "keep.txt").write_text("keep")
    render.write_tree(tree(3), ours)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist", "dist.old-999", "dist.old-notes"]
    assert on_disk(ours) == tree(3)


def test_sigint_during_the_swap_waits_until_the_new_tree_is_in_place(tmp_path, monkeypatch):
    ours = tmp_path / "dist"
    render.write_tree(tree(), ours)
    real_rename = type(ours).rename

    def rename_and_interrupt(self, target):
        os.kill(os.getpid(), signal.SIGINT)  # arrives between the two renames
        return real_rename(self, target)

    monkeypatch.setattr(type(ours), "rename", rename_and_interrupt)
    with pytest.raises(KeyboardInterrupt):
        render.write_tree(tree(5, "2.0.0"), ours)
    monkeypatch.undo()
    assert on_disk(ours) == tree(5, "2.0.0")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist"], "the old tree is removed even when interrupted"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_failed_second_rename_puts_the_old_tree_back(tmp_path, monkeypatch):
    ours = tmp_path / "dist"
    render.write_tree(tree(), ours)
    real_rename = type(ours).rename

    def fail_staging(self, target):
        if ".tmp-" in self.name:
            raise OSError("disk full")
        return real_rename(self, target)

    monkeypatch.setattr(type(ours), "rename", fail_staging)
    with pytest.raises(OSError):
        render.write_tree(tree(5, "2.0.0"), ours)
    monkeypatch.undo()
    assert on_disk(ours) == tree()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist"]


_WRITER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from colocate.synth import write as render
    files = json.loads(Path(sys.argv[2]).read_text())
    print("ready", flush=True)
    render.write_tree(files, Path(sys.argv[1]))
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_any_moment_leaves_the_old_tree_or_the_new_one(tmp_path, sig):
    """A real process, signalled at moments spread over its whole write and swap."""
    out, ours, count = tmp_path / "out", tmp_path / "out" / "dist", 200
    old, new = tree(count), tree(count, "2.0.0")
    (tmp_path / "new.json").write_text(json.dumps(new))
    render.write_tree(old, ours)
    outcomes = set()
    for step in range(8):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(ours), str(tmp_path / "new.json")], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout.readline() == "ready\n"
        time.sleep(step * 0.06)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        proc.stdout.close()
        state = on_disk(ours)
        assert state in (old, new), f"signal after {step * 0.06:.2f}s left a mixed dist/"
        outcomes.add("new" if state == new else "old")
        render.write_tree(old, ours)  # the next synth removes whatever the signalled one left
        assert [p.name for p in out.iterdir()] == ["dist"]
    assert "old" in outcomes, "no signal arrived before the swap; the test proves nothing"


def test_an_unknown_pool_name_is_a_one_line_prop_error():
    cluster = config_mod.load().cluster
    with pytest.raises(PropError) as err:
        dataclasses.replace(cluster, mixed_pool="mixd")
    assert err.value.prop == "mixed_pool" and "'mixd' is not a pool (pools: online, mixed, monitoring)" in str(err.value)
    with pytest.raises(PropError, match=r"prop 'online_service_pools\[1\]': 'gpu' is not a pool"):
        dataclasses.replace(cluster, online_service_pools=("online", "gpu"))
    with pytest.raises(PropError, match=r"prop 'pools\['mixed'\]': is named by more than one pool"):
        dataclasses.replace(cluster, pools=(*cluster.pools, cluster.pools[1]))


def test_synth_with_an_unknown_pool_name_exits_2_with_one_line(tmp_path):
    # A platform team's colocate.yaml whose monitoring role names a pool that does not exist.
    config = tmp_path / "colocate.yaml"
    config.write_text((ROOT / "colocate.yaml").read_text().replace("monitoring: monitoring}", "monitoring: monitor}"))
    proc = subprocess.run([sys.executable, "-m", "colocate.cli", "--config", str(config), "synth", "--outdir",
                           str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [f"colocate: error: {config}:$.cluster.poolRoles.monitoring: 'monitor' is not "
                                        "a pool (pools: online, mixed, monitoring)"]
    assert not (tmp_path / "out").exists()
