"""Scenarios: what the simulation does to the cluster after the first sync, from a shipped name
(colocate/simulate/scenarios/<name>.yaml) or a file."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from colocate.base import validated_yaml
from colocate.errors import InputError
from colocate.base.data_files import data_path, display
from colocate.base.text import escape

SHIPPED = data_path("colocate", "simulate", "scenarios")
_SCHEMA = json.loads((SHIPPED / "scenario.schema.json").read_text())


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    #: Scale every workload that declares peak replicas (colocate.io/peak-replicas) to them.
    scale_to_peak: bool = False
    #: Replicas by workload, ``Deployment/online/recsys-inference: 6``.
    scale: Mapping[str, int] = field(default_factory=dict)
    #: Nodes added (positive) or removed (negative) per pool.
    nodes: Mapping[str, int] = field(default_factory=dict)
    #: Offline-tier pods may stay Pending (preempted training waits for capacity by design).
    offline_may_wait: bool = False
    #: Child Applications to delete in turn (as if their file were removed), listing what Argo CD
    #: deletes, then restoring: all of ours (True), the named ones, or none.
    delete_drill: bool | tuple[str, ...] = False
    #: Run ``colocate resubmitter`` beside the training-operator.
    resubmitter: bool = True
    #: Steps played after the first sync (raw mappings: name, peak, scale, offline, loseNode, removeJob).
    steps: tuple[Mapping, ...] = ()
    #: The day in hour steps: curves per workload, one unplanned spike, jobs added and finished.
    day: Mapping | None = None
    #: The scenario file's folder: job files it adds (``addJob``) are relative to it.
    folder: Path = Path(".")

    def job_file(self, relative: str) -> Path:
        """A job file an ``addJob`` names; refused unless it is a regular file below the folder."""
        path = (self.folder / relative).resolve()
        if not path.is_relative_to(self.folder.resolve()) or not path.is_file():
            raise InputError(f"scenario {self.name}", "addJob", f"{relative!r}: no such job file in "
                             f"{display(self.folder)} (a path relative to the scenario file)")
        return path


def shipped() -> list[str]:
    return sorted(p.stem for p in SHIPPED.glob("*.yaml"))


def load(name_or_file: str) -> Scenario:
    """A shipped scenario by its bare name (``peak``), whatever the working folder holds: a file
    or folder named ``peak`` there neither replaces it nor breaks the default (it is named, on
    stderr, and ``./peak`` reads it); else a scenario file."""
    path = Path(name_or_file)
    if name_or_file in shipped():
        if os.path.lexists(path):
            print(escape(f"colocate: --scenario {name_or_file}: the shipped scenario, not ./{name_or_file} "
                         f"(write ./{name_or_file} to use that file)"), file=sys.stderr)
        path = SHIPPED / f"{name_or_file}.yaml"
    elif not (path.suffix in (".yaml", ".yml") or path.exists()):
        raise InputError("--scenario", name_or_file, f"no such scenario; shipped: {', '.join(shipped())}, "
                         "or name a scenario file (.yaml)")
    file = display(path)
    data = validated_yaml.load_yaml_file(path, file)
    validated_yaml.validate(data, _SCHEMA, file)
    return Scenario(name=data.get("name", path.stem), description=data.get("description", ""),
                    scale_to_peak=data.get("scaleToPeak", False), scale=dict(data.get("scale") or {}),
                    nodes=dict(data.get("nodes") or {}), offline_may_wait=data.get("offlineMayWait", False),
                    delete_drill=tuple(d) if isinstance(d := data.get("deleteDrill", False), list) else d,
                    resubmitter=data.get("resubmitter", True), steps=tuple(data.get("steps") or ()),
                    day=data.get("day"), folder=path.parent)
