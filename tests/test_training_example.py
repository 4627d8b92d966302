"""The training-code example (examples/training/checkpointing.py, docs/training.md) as a real
process: SIGTERM makes it save and exit 143, and the next start restores the latest checkpoint
and goes on from there. Every wait is for a line the program prints, never a fixed sleep."""
from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from colocate import ROOT
from tests.helpers import load_module

EXAMPLE = ROOT / "examples" / "training" / "checkpointing.py"
#: Long enough never to finish while a test waits for it; quick steps so it makes progress.
ENDLESS = ("--steps", "1000000", "--save-every", "10", "--step-seconds", "0.002")


def _module():
    return load_module(EXAMPLE, "checkpointing_example")


class Run:
    """The example running in its own process with CHECKPOINT_DIR set, its output read line by line."""

    def __init__(self, directory: Path, *args: str):
        self.proc = subprocess.Popen([sys.executable, str(EXAMPLE), *args],
                                     env={**os.environ, "CHECKPOINT_DIR": str(directory)},
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.seen: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match:
        """The first line from now on that matches ``pattern`` (whole line)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no line matching {pattern!r} within {timeout} s; last lines: {self.seen[-5:]}")
            if line is None:
                pytest.fail(f"exited ({self.proc.wait()}) before a line matching {pattern!r}; "
                            f"last lines: {self.seen[-5:]}")
            self.seen.append(line)
            match = re.fullmatch(pattern, line)
            if match:
                return match

    def finish(self, timeout: float = 60) -> int:
        """Wait for the exit; the rest of the output goes to ``seen``."""
        code = self.proc.wait(timeout=timeout)
        while (line := self._lines.get(timeout=timeout)) is not None:
            self.seen.append(line)
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def runs():
    started: list[Run] = []

    def start(directory: Path, *args: str) -> Run:
        started.append(Run(directory, *args))
        return started[-1]
    yield start
    for run in started:
        run.stop()


def _state(directory: Path) -> dict[str, list[str]]:
    state: dict[str, list[str]] = {}
    for line in (directory / "checkpoint").read_text().splitlines():
        key, _, value = line.partition(": ")
        state.setdefault(key, []).append(json.loads(value))
    return state


def test_sigterm_saves_exits_143_and_the_next_start_resumes_from_there(tmp_path, runs):
    ckpt = tmp_path / "ckpt"
    first = runs(ckpt, *ENDLESS)
    first.wait_for(rf"no checkpoint in {re.escape(str(ckpt))}: starting at step 0")
    first.wait_for(r"saved step 30 weight \S+ to \S+ in [0-9.]+ s")  # periodic saves happen
    first.wait_for(r"step 33 weight \S+")  # and it trained past the last one
    first.proc.send_signal(signal.SIGTERM)
    stopped = int(first.wait_for(r"SIGTERM: exiting 143 at step (\d+)")[1])
    assert first.finish() == 143
    assert stopped >= 33
    weight = next(m[1] for line in first.seen if (m := re.fullmatch(rf"step {stopped} weight (\S+)", line)))
    # The state file names the step it stopped at, and max_to_keep (3) holds.
    state = _state(ckpt)
    assert state["model_checkpoint_path"] == [f"ckpt-{stopped}"]
    assert len(state["all_model_checkpoint_paths"]) == 3 == len(list(ckpt.glob("ckpt-*.index")))
    assert (ckpt / f"ckpt-{stopped}.index").is_file()

    second = runs(ckpt, *ENDLESS)
    restored = second.wait_for(r"restored step (\d+) weight (\S+) from (\S+)")
    assert (int(restored[1]), restored[2], restored[3]) == (stopped, weight, str(ckpt / f"ckpt-{stopped}"))
    second.wait_for(rf"step {stopped + 1} weight \S+")
    second.wait_for(rf"step {stopped + 5} weight \S+")
    second.proc.send_signal(signal.SIGTERM)
    again = int(second.wait_for(r"SIGTERM: exiting 143 at step (\d+)")[1])
    assert second.finish() == 143
    assert again >= stopped + 5 and _state(ckpt)["model_checkpoint_path"] == [f"ckpt-{again}"]


def test_a_finished_run_exits_0_and_a_restart_trains_no_further(tmp_path, runs):
    ckpt = tmp_path / "ckpt"
    first = runs(ckpt, "--steps", "25", "--save-every", "10", "--step-seconds", "0")
    first.wait_for("finished at step 25")
    assert first.finish() == 0
    second = runs(ckpt, "--steps", "25")
    second.wait_for(rf"restored step 25 weight \S+ from {re.escape(str(ckpt))}/ckpt-25")
    assert second.finish() == 0
    assert second.seen[-1] == "finished at step 25" and not any(line.startswith("step ") for line in second.seen)


def test_no_checkpoint_directory_is_a_usage_error_without_a_traceback(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CHECKPOINT_DIR"}
    proc = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "no checkpoint directory: set CHECKPOINT_DIR" in proc.stderr and "Traceback" not in proc.stderr


def test_the_stand_in_keeps_checkpoint_managers_contract(tmp_path):
    module = _module()
    checkpoint = module.Checkpoint(step=0)
    manager = module.CheckpointManager(checkpoint, tmp_path, max_to_keep=2)
    assert manager.latest_checkpoint is None and manager.restore_or_initialize() is None
    paths = []
    for step in (1, 2, 3):
        checkpoint.values["step"] = step
        paths.append(manager.save())
    # save() returns <directory>/ckpt-<save counter>; the oldest beyond max_to_keep is deleted.
    assert paths == [str(tmp_path / f"ckpt-{n}") for n in (1, 2, 3)]
    assert manager.checkpoints == paths[1:] and manager.latest_checkpoint == paths[2]
    assert sorted(p.name for p in tmp_path.glob("ckpt-*")) == [
        "ckpt-2.data-00000-of-00001", "ckpt-2.index", "ckpt-3.data-00000-of-00001", "ckpt-3.index"]
    # A new manager in the same directory takes over the state and restores the newest.
    fresh = module.Checkpoint(step=0)
    again = module.CheckpointManager(fresh, tmp_path, max_to_keep=2)
    assert again.checkpoints == paths[1:] and again.restore_or_initialize() == paths[2]
    assert fresh.values == {"step": 3} and fresh.save_counter == 3
    with pytest.raises(ValueError, match="positive integer"):
        module.CheckpointManager(fresh, tmp_path, max_to_keep=0)
