"""A kept base's entry (colocate.simulate.kept): what is kept comes back whole, and an entry that
cannot be trusted is rebuilt with a line saying why. No test here runs a simulation:
tests/simulate/test_kept_base.py restores a real one."""
from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from colocate.base import private_cache
from colocate.simulate import kept

STATE = {"server": "https://127.0.0.1:1", "repo_url": "file:///x/repo", "kueue_url": "", "node_pool": {"n": "p"},
         "rejected": []}


@pytest.fixture
def run_folder(tmp_path, own_cache):
    folder = tmp_path / "run"
    (folder / "pki").mkdir(parents=True)
    (folder / "pki" / "sa.key").write_text("key")
    (folder / "repo" / ".git").mkdir(parents=True)
    (folder / "repo" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "etcd.db").write_bytes(os.urandom(4096))
    (folder / "logs").mkdir()
    (folder / "logs" / "etcd.log").write_text("not kept")
    return folder


def _load(tmp_path, name="out"):
    lines = []
    found = kept.load("k", lines.append)
    if found:  # the caller's to remove: under the test's folder
        found = kept.Found(Path(shutil.move(found.path, tmp_path / name)), found.state)
    return found, lines


def test_what_is_kept_comes_back_whole(tmp_path, run_folder):
    assert kept.save("k", run_folder, STATE, print)
    found, lines = _load(tmp_path)
    assert found and not lines, lines
    assert found.state == STATE
    assert (found.path / "etcd.db").read_bytes() == (run_folder / "etcd.db").read_bytes()
    assert (found.path / "repo" / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert not (found.path / "logs").exists()


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "writable by others", "other owner", "symlink",
                                    "fifo", "stale"])
def test_an_entry_not_to_be_trusted_is_not_used_and_says_why(tmp_path, run_folder, damage, monkeypatch):
    assert kept.save("k", run_folder, STATE, print)
    entry = kept.folder() / "k"
    data = entry.read_bytes()
    if damage == "truncated":
        entry.write_bytes(data[:len(data) // 2])
    elif damage == "flipped byte":
        entry.write_bytes(data[:-100] + bytes([data[-100] ^ 1]) + data[-99:])
    elif damage == "writable by others":
        entry.chmod(0o666)
    elif damage == "other owner":
        monkeypatch.setattr(private_cache.os, "geteuid", lambda: os.stat(entry).st_uid + 1)
    elif damage == "symlink":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.write_bytes(data)
        entry.unlink()
        entry.symlink_to(elsewhere)
    elif damage == "fifo":
        entry.unlink()
        os.mkfifo(entry)  # opened without blocking: never hangs the run
    elif damage == "stale":
        old = time.time() - kept.MAX_AGE - 60
        os.utime(entry, (old, old))
    found, lines = _load(tmp_path)
    assert found is None
    assert len(lines) == 1 and "not used" in lines[0] and "from nothing" in lines[0], lines


def test_a_run_saving_while_another_reads_never_shows_half_an_entry(tmp_path, run_folder):
    assert kept.save("k", run_folder, STATE, print)
    other = dict(STATE, server="https://127.0.0.1:2")
    stop, seen, errors = threading.Event(), set(), []

    def write():
        while not stop.is_set():
            kept.save("k", run_folder, other, lambda line: None)
            kept.save("k", run_folder, STATE, lambda line: None)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for index in range(30):
            found, lines = _load(tmp_path, f"out{index}")
            if lines:
                errors += lines
            else:
                seen.add(found.state["server"])
    finally:
        stop.set()
        writer.join()
    assert not errors, errors
    assert seen <= {"https://127.0.0.1:1", "https://127.0.0.1:2"}


def test_only_the_newest_bases_are_kept(tmp_path, run_folder):
    for index in range(kept.KEEP + 2):
        assert kept.save(f"k{index}", run_folder, STATE, print)
        old = time.time() - 1000 + index
        os.utime(kept.folder() / f"k{index}", (old, old))
    names = sorted(p.name for p in kept.folder().iterdir())
    assert len(names) == kept.KEEP and f"k{kept.KEEP + 1}" in names and "k0" not in names, names
