"""Training code that survives preemption: restore the latest checkpoint at start, save on
SIGTERM, then exit 143 (128 + SIGTERM), never 0. docs/training.md, "The training code's side".

    CHECKPOINT_DIR=/tmp/ckpt python examples/training/checkpointing.py --steps 500

In a TFJob the construct sets CHECKPOINT_DIR to /mnt/checkpoints/<job>, on the job's claim.

**TensorFlow is not used here.** ``Checkpoint`` and ``CheckpointManager`` below are small
stand-ins that keep the contract of ``tf.train.Checkpoint`` and ``tf.train.CheckpointManager``
(tensorflow/tensorflow ``tensorflow/python/checkpoint/checkpoint_management.py``, class
``CheckpointManager``): same constructor arguments, ``save()`` returns the new checkpoint's path
prefix (``<directory>/ckpt-<number>``) and keeps at most ``max_to_keep`` checkpoints, deleting the
oldest, ``latest_checkpoint`` names the newest, the manager's state lives in a file named
``checkpoint`` in the directory (listed only once a checkpoint is written) and a new manager in the
same directory takes it over, ``restore_or_initialize()`` restores the newest. With TensorFlow,
delete the two classes and write ``tf.train.Checkpoint(model=..., optimizer=..., step=...)`` and
``tf.train.CheckpointManager(checkpoint, directory, max_to_keep=3)``; the training loop is the same.
The stand-in's files are JSON, not TensorFlow's format.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

#: The exit status of a process killed by SIGTERM, as the kubelet reports it: not 0, so the pod
#: ends Failed and the operator never counts a preempted Chief or worker 0 as a finished job.
EXIT_SIGTERM = 128 + signal.SIGTERM


class Checkpoint:
    """Stand-in for ``tf.train.Checkpoint``: the values to save, and a ``save_counter``."""

    def __init__(self, **values: Any):
        self.values = dict(values)
        self.save_counter = 0

    def write(self, prefix: str) -> str:
        """Write ``<prefix>.data-00000-of-00001`` then ``<prefix>.index``; return ``prefix``."""
        payload = {"values": self.values, "save_counter": self.save_counter}
        _write_atomically(Path(f"{prefix}.data-00000-of-00001"), json.dumps(payload))
        _write_atomically(Path(f"{prefix}.index"), json.dumps({"data": "data-00000-of-00001"}))
        return prefix

    def restore(self, prefix: str) -> None:
        payload = json.loads(Path(f"{prefix}.data-00000-of-00001").read_text())
        self.values.update(payload["values"])
        self.save_counter = payload["save_counter"]


class CheckpointManager:
    """Stand-in for ``tf.train.CheckpointManager`` (see the module docstring)."""

    STATE_FILE = "checkpoint"

    def __init__(self, checkpoint: Checkpoint, directory: str | os.PathLike, max_to_keep: int | None,
                 checkpoint_name: str = "ckpt"):
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, got {max_to_keep}.")
        self._checkpoint = checkpoint
        self._max_to_keep = max_to_keep
        self._directory = Path(directory)
        self._prefix = str(self._directory / checkpoint_name)
        self._directory.mkdir(parents=True, exist_ok=True)
        # A manager used before in this directory left its state: take it over.
        self._latest, self._kept = self._read_state()

    @property
    def directory(self) -> str:
        return str(self._directory)

    @property
    def latest_checkpoint(self) -> str | None:
        """The prefix of the newest checkpoint in the directory, or None."""
        return self._latest

    @property
    def checkpoints(self) -> list[str]:
        """The kept checkpoints, oldest first."""
        return list(self._kept)

    def save(self, checkpoint_number: int | None = None) -> str:
        """Write a checkpoint numbered ``checkpoint_number`` (default: the save counter), list it in
        the state file, then delete the oldest beyond ``max_to_keep``. Returns its prefix."""
        self._checkpoint.save_counter += 1
        number = self._checkpoint.save_counter if checkpoint_number is None else checkpoint_number
        path = self._checkpoint.write(f"{self._prefix}-{number}")
        # As TensorFlow does: record the new checkpoint before deleting anything, so a SIGKILL
        # during the sweep still finds it, then record again without the deleted ones.
        if path in self._kept:
            self._kept.remove(path)
        self._kept.append(path)
        self._latest = path
        self._write_state()
        while self._max_to_keep and len(self._kept) > self._max_to_keep:
            oldest = self._kept.pop(0)
            for suffix in (".index", ".data-00000-of-00001"):
                Path(oldest + suffix).unlink(missing_ok=True)
        self._write_state()
        return path

    def restore_or_initialize(self) -> str | None:
        """Restore the newest checkpoint and return its prefix; None (nothing restored) if none."""
        if self._latest is None:
            return None
        self._checkpoint.restore(self._latest)
        return self._latest

    # The state file, in TensorFlow's text form with paths relative to the directory:
    #   model_checkpoint_path: "ckpt-40"
    #   all_model_checkpoint_paths: "ckpt-30"
    #   all_model_checkpoint_paths: "ckpt-40"

    def _read_state(self) -> tuple[str | None, list[str]]:
        state = self._directory / self.STATE_FILE
        if not state.exists():
            return None, []
        latest, kept = None, []
        for line in state.read_text().splitlines():
            key, _, value = line.partition(": ")
            path = str(self._directory / json.loads(value)) if value else ""
            if key == "model_checkpoint_path":
                latest = path
            elif key == "all_model_checkpoint_paths":
                kept.append(path)
        return latest, kept

    def _write_state(self) -> None:
        def rel(path: str) -> str:
            return json.dumps(os.path.relpath(path, self._directory))
        lines = [f"model_checkpoint_path: {rel(self._latest)}"] if self._latest else []
        lines += [f"all_model_checkpoint_paths: {rel(path)}" for path in self._kept]
        _write_atomically(self._directory / self.STATE_FILE, "\n".join(lines) + "\n")


def _write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file, flush it to disk, then rename: a reader (or a restart after
    SIGKILL) sees the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint-dir", default=os.environ.get("CHECKPOINT_DIR"),
                        help="where checkpoints go (default: $CHECKPOINT_DIR)")
    parser.add_argument("--steps", type=int, default=1000, help="train until this step (default 1000)")
    parser.add_argument("--save-every", type=int, default=100, help="save every N steps (default 100)")
    parser.add_argument("--step-seconds", type=float, default=0.01,
                        help="time one training step takes, simulated (default 0.01)")
    parser.add_argument("--max-to-keep", type=int, default=3, help="checkpoints kept (default 3)")
    args = parser.parse_args(argv)
    if not args.checkpoint_dir:
        parser.error("no checkpoint directory: set CHECKPOINT_DIR (a TFJob made by colocate has it) "
                     "or pass --checkpoint-dir")
    for name in ("steps", "save_every", "max_to_keep"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.step_seconds < 0:
        parser.error("--step-seconds must be at least 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM only sets a flag: the save happens between two steps, where the state is whole.
    # (A handler also makes SIGTERM reach a Python that runs as PID 1 in its container: the
    # kernel does not deliver a signal whose action is the default to PID 1.)
    terminated: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: terminated.append(signum))

    checkpoint = Checkpoint(step=0, weight=0.0)
    try:
        manager = CheckpointManager(checkpoint, args.checkpoint_dir, max_to_keep=args.max_to_keep)
    except OSError as err:
        print(f"checkpointing.py: error: cannot use the checkpoint directory: {err}", file=sys.stderr)
        return 2
    restored = manager.restore_or_initialize()
    values = checkpoint.values
    if restored:
        print(f"restored step {values['step']} weight {values['weight']!r} from {restored}", flush=True)
    else:
        print(f"no checkpoint in {manager.directory}: starting at step 0", flush=True)

    def save(why: str) -> None:
        start = time.monotonic()
        path = manager.save(checkpoint_number=values["step"])
        print(f"{why}saved step {values['step']} weight {values['weight']!r} to {path} "
              f"in {time.monotonic() - start:.3f} s", flush=True)

    saved_step = values["step"] if restored else None
    while values["step"] < args.steps and not terminated:
        # One training step: move the weight towards 1.0 (the real code runs a batch here).
        time.sleep(args.step_seconds)
        values["weight"] += 0.01 * (1.0 - values["weight"])
        values["step"] += 1
        print(f"step {values['step']} weight {values['weight']!r}", flush=True)
        if values["step"] % args.save_every == 0:
            save("")
            saved_step = values["step"]
    if terminated:
        if saved_step != values["step"]:
            save("SIGTERM: ")
        print(f"SIGTERM: exiting {EXIT_SIGTERM} at step {values['step']}", flush=True)
        return EXIT_SIGTERM
    if saved_step != values["step"]:
        save("")
    print(f"finished at step {values['step']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
