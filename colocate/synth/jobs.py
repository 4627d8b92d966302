"""Training job requests: ``jobs/<name>.yaml``, one short file per TFJob.

Each file is validated against ``colocate/base/data/schemas/job.schema.json`` (errors name the file and
the JSON path) and turned into TFJob props by the training chart; a construct error is
re-raised naming the file too. Any error stops synth before dist/ is touched.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colocate import ROOT
from colocate.model import quantity
from colocate.base.validated_yaml import load_yaml_file, validate
from colocate.config import Config
from colocate.errors import InputError
from colocate.model.scheduling import reference_error
from colocate.base.data_files import CONFIG_NAME, data_path, display

JOBS_DIR = ROOT / "jobs"
SCHEMA = json.loads(data_path("colocate.base", "data", "schemas", "job.schema.json").read_text())
#: Job-file role keys -> RoleSpec fields.
_ROLE_FIELDS = {"replicas": "replicas", "cpu": "cpu", "cpuLimit": "cpu_limit", "memory": "memory",
                "memoryLimit": "memory_limit", "gpus": "gpus"}


#: Caps on a job file, checked before it is parsed or validated (a 97 MB file of a million args
#: took 16 s and 700 MB to load, and its list would be printed whole in a schema message). The
#: TFJob repeats command and args in each of up to five roles and is applied client-side, so all
#: its annotations, the last-applied copy of the whole object among them, must fit 256 KiB
#: (docs/gitops.md, COL303; etcd's 1.5 MiB request limit, COL306, is further off): 32 KiB of
#: command and args as JSON (escapes counted), five times over, leaves room for the rest.
MAX_FILE_BYTES = 256 * 1024
MAX_ITEMS = 1000
MAX_COMMAND_BYTES = 32 * 1024


def _size_error(path: Path) -> str | None:
    try:
        size = path.stat().st_size
    except OSError:
        return None  # load_yaml_file says what is wrong with it
    if size > MAX_FILE_BYTES:
        return f"the file is {size:,} bytes, more than {MAX_FILE_BYTES:,}; a job file is a short request"
    return None


def _command_error(data: object) -> tuple[str, str] | None:
    """The key and the reason when command and args together are too many or too long."""
    if not isinstance(data, dict):
        return None
    total = 0
    for key in ("command", "args"):
        items = data.get(key)
        if not isinstance(items, list):
            continue
        if len(items) > MAX_ITEMS:
            return f"$.{key}", f"has {len(items):,} items, more than {MAX_ITEMS:,}; pass long inputs in a file the image reads"
        total += sum(len(json.dumps(item)) for item in items if isinstance(item, str))  # as the object stores it
        if total > MAX_COMMAND_BYTES:
            return f"$.{key}", (f"command and args hold more than {MAX_COMMAND_BYTES:,} bytes of JSON, and each of the TFJob's "
                                "roles repeats them; pass long inputs in a file the image reads")
    return None


@dataclass(frozen=True)
class JobFile:
    """One validated job file."""

    #: Path as given to the user in messages (relative to the repository when inside it).
    file: str
    data: dict[str, Any]

    @property
    def name(self) -> str:
        return self.data["name"]

    @property
    def image(self) -> str:
        return self.data["image"]

    def roles(self) -> dict[str, dict[str, Any]]:
        """Role -> RoleSpec keyword arguments; CPU numbers become strings."""
        restart = self.data.get("restartPolicy")
        out = {}
        for role, spec in self.data["roles"].items():
            kwargs = {_ROLE_FIELDS[k]: (str(v) if k in ("cpu", "cpuLimit") else v) for k, v in spec.items()}
            out[role] = {**kwargs, **({"restart_policy": restart} if restart else {})}
        return out

    def options(self) -> dict[str, Any]:
        """Job-level TFJobProps keyword arguments the file sets."""
        keys = {"checkpointSize": "checkpoint_size", "backoffLimit": "backoff_limit",
                "terminationGracePeriodSeconds": "termination_grace_period_seconds", "command": "command", "args": "args",
                "activeDeadlineSeconds": "active_deadline_seconds", "expectedHours": "expected_hours"}
        return {prop: self.data[key] for key, prop in keys.items() if key in self.data}


#: Construct prop -> the job file's own key, for messages (the file says memoryLimit, not memory_limit).
_FILE_KEYS = {**{field: key for key, field in _ROLE_FIELDS.items()}, "restart_policy": "restartPolicy",
              "checkpoint_size": "checkpointSize", "backoff_limit": "backoffLimit",
              "termination_grace_period_seconds": "terminationGracePeriodSeconds",
              "active_deadline_seconds": "activeDeadlineSeconds", "expected_hours": "expectedHours"}
_PROP_WORDS = re.compile(r"\b(" + "|".join(k for k in _FILE_KEYS if "_" in k) + r")\b")


def file_path(prop: str) -> str:
    """A TFJob construct prop (``roles.Worker.memory_limit``) as the job file's JSON path
    (``$.roles.Worker.memoryLimit``); a prop the file cannot set is kept as is."""
    parts = [_FILE_KEYS.get(part, part) for part in prop.replace("[", ".").replace("]", "").replace("'", "").split(".")]
    if parts[-1] == "restartPolicy":  # one key for every role, at the top of the file
        parts = ["restartPolicy"]
    return "$." + ".".join(p for p in parts if p)


def file_words(reason: str) -> str:
    """A construct's reason in the job file's key names (``raise memory_limit`` -> ``raise memoryLimit``)."""
    return _PROP_WORDS.sub(lambda m: _FILE_KEYS[m[1]], reason)


def load_file(path: Path, config: Config) -> JobFile:
    """Parse and validate one job file."""
    file = display(path)
    too_big = _size_error(path)
    if too_big:
        raise InputError(file, "", too_big)
    data = load_yaml_file(path, file, decimal=True)
    too_long = _command_error(data)
    if too_long:
        raise InputError(file, *too_long)
    validate(data, SCHEMA, file)
    if data["name"] != path.stem:
        raise InputError(file, "$.name", f"{data['name']!r} must equal the file name {path.stem!r}, "
                         "so each job is found by its name")
    for role, spec in data["roles"].items():
        for key in ("cpu", "cpuLimit"):
            if key in spec and quantity.is_quantity(str(spec[key])) and (quantity.parse(str(spec[key])) * 1000) % 1:
                raise InputError(file, f"$.roles.{role}.{key}", f"{spec[key]} is finer than 1m (a thousandth of a "
                                 "core): the API server would round it up to 1m; write a whole number of millicores")
    bad_reference = reference_error(data["image"])
    if bad_reference:
        raise InputError(file, "$.image", bad_reference)
    registry = f"{config.registry_host}/"
    if not data["image"].startswith(registry):
        raise InputError(file, "$.image", f"{data['image']!r} is not on the cluster's registry mirror; "
                         f"push it to {config.registry_host} and use {registry}<project>/<image>:<tag>")
    return JobFile(file, data)


def load(jobs_dir: Path, config: Config, required: bool = True) -> list[JobFile]:
    """Every ``*.yaml`` in ``jobs_dir``, sorted by name. No job file is a normal state: an empty
    folder, or, unless ``required`` (a folder the user named), no folder at all (git keeps no
    empty folder, so ``git rm jobs/*.yaml`` removes jobs/ too)."""
    if not jobs_dir.is_dir():
        if not required and not jobs_dir.exists():
            return []
        raise InputError(display(jobs_dir), "", "no such jobs folder; name the folder that holds the job files "
                         "(<name>.yaml), or leave --jobs out to use the repository's jobs/ (none there is no job)")
    for path in sorted(jobs_dir.glob("*.yml")):
        raise InputError(display(path), "", "job files end in .yaml; rename it, or it would be ignored")
    for path in sorted(jobs_dir.rglob("*")):
        if path.suffix.lower() in (".yaml", ".yml", ".json") and not (path.parent == jobs_dir and path.suffix == ".yaml"):
            where = "a subfolder" if path.parent != jobs_dir else f"the suffix {path.suffix}"
            raise InputError(display(path), "", f"job files are <name>.yaml directly in the jobs folder; this one is "
                             f"in {where}: move or rename it, or it would be ignored")
    boundary = _boundary(jobs_dir)
    paths = sorted(jobs_dir.glob("*.yaml"))
    for path in paths:
        _inside(path, boundary)
    return [load_file(path, config) for path in paths]


def _boundary(jobs_dir: Path) -> Path:
    """What a job file may link into: the repository holding the jobs folder (the nearest folder
    up with a colocate.yaml), else the jobs folder itself."""
    folder = jobs_dir.resolve()
    return next((f for f in (folder, *folder.parents) if (f / CONFIG_NAME).is_file()), folder)


def _inside(path: Path, boundary: Path) -> None:
    """A job file that is a symbolic link must stay inside ``boundary``: a link to /etc/shadow
    would be read, and its lines shown in the errors. Loops and dangling links are bad input."""
    if not path.is_symlink():
        return
    try:
        target = path.resolve(strict=True)
    except RuntimeError:
        raise InputError(display(path), "", "symbolic link loop") from None
    except OSError:
        raise InputError(display(path), "", "broken symbolic link") from None
    if target != boundary and boundary not in target.parents:
        raise InputError(display(path), "", f"a symbolic link out of {boundary}: job files are read only from "
                         "inside the repository (copy the file in instead)")
