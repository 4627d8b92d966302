"""Where colocate's own files are, in a checkout and in an installed wheel.

Data shipped with the package (rules, schemas, the metric catalog) is found through
importlib.resources. The working repository (colocate.yaml, jobs/, dist/) is the nearest
folder holding a colocate.yaml, from the current directory up, else this checkout.
"""
from __future__ import annotations

import importlib.resources
from pathlib import Path

from colocate import ROOT

CONFIG_NAME = "colocate.yaml"


def data_path(package: str, *parts: str) -> Path:
    """A file or folder shipped inside ``package`` (e.g. ``colocate.policies``, ``rules``).

    Namespace packages (constructs/, charts/, policies/ have no ``__init__.py``) give a
    MultiplexedPath, whose joinpath returns a real path; wheels install unpacked, so the
    result is always on the file system.
    """
    if not parts:
        raise ValueError("name a file or folder inside the package")
    resource = importlib.resources.files(package)
    for part in parts:
        resource = resource.joinpath(part)
    return Path(str(resource))


def find_repository(start: Path | None = None) -> Path | None:
    """The nearest folder from ``start`` (default: the current directory) up that holds a
    colocate.yaml; None when there is none."""
    here = (start or Path.cwd()).resolve()
    return next((folder for folder in (here, *here.parents) if (folder / CONFIG_NAME).is_file()), None)


def repository(start: Path | None = None) -> Path:
    """The nearest folder from ``start`` (default: the current directory) up that holds a
    colocate.yaml; else this checkout (which may hold none when colocate is installed)."""
    return find_repository(start) or ROOT


def display(path: Path) -> str:
    """A user's file as messages name it: relative to the working repository when inside it. A
    symbolic link is named as itself, not its target (which may loop, dangle or lie elsewhere)."""
    try:
        return str((path.parent.resolve() / path.name).relative_to(repository()))
    except (ValueError, RuntimeError, OSError):
        return str(path)


def cache_dir() -> Path:
    """Generated caches: the user's cache folder (colocate/base/private_cache.py), never a working
    tree nor site-packages."""
    from colocate.base import private_cache

    return private_cache.root()
