"""Which files are manifests: the files under some paths, each once, in a stable order, with
the folders left out (Helm charts, Kustomize, hidden folders, --exclude) and why."""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from colocate.errors import InputError

#: Suffixes of manifest files in folders, case-insensitive, as kubeconform v0.7.0 takes them.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
#: Files that make a folder the input of a renderer, not plain manifests, and the hint to render it.
#: Argo CD picks its tool by the same names (docs/input-forms.md).
_RENDERED_BY = {
    "Chart.yaml": ("a Helm chart (Chart.yaml)", "render it and check the output: helm template {dir} > rendered.yaml "
                                                "&& colocate check rendered.yaml"),
    **{name: (f"a Kustomize folder ({name})", "render it and check the output: kustomize build {dir} > rendered.yaml "
                                              "&& colocate check rendered.yaml")
       for name in ("kustomization.yaml", "kustomization.yml", "Kustomization")},
}


@dataclass(frozen=True)
class Skipped:
    """A folder left out because it is not plain manifests, with why and how to check it."""

    path: str
    reason: str
    hint: str


@dataclass(frozen=True)
class Inputs:
    """The manifest files under some paths, each once, and the folders left out."""

    files: tuple[Path, ...]
    skipped: tuple[Skipped, ...]


def _rendered(folder: str, names: list[str]) -> Skipped | None:
    marker = next((n for n in _RENDERED_BY if n in names), None)
    if marker is None:
        return None
    reason, hint = _RENDERED_BY[marker]
    return Skipped(folder, f"not plain manifests: {reason}; its files were not checked", hint.format(dir=folder))


def excluded(rel: str, patterns: Iterable[str]) -> bool:
    """``rel`` (a path relative to a checked folder, with /) matches an --exclude pattern: the
    whole path, or any one of its names (``chart`` leaves out every folder or file so named)."""
    parts = rel.split("/")
    return any(fnmatch.fnmatchcase(rel, p) or any(fnmatch.fnmatchcase(part, p) for part in parts) for p in patterns)


def _walk(folder: Path, skipped: list[Skipped], exclude: tuple[str, ...] = ()) -> list[Path]:
    """Manifest files under ``folder``, sorted. Symbolic links to folders are not followed (as
    kubeconform's filepath.Walk), so a link loop cannot make the walk endless. Hidden folders
    (``.github``, ``.git``) are left out, unless named; so is whatever ``exclude`` matches."""
    def unreadable(exc: OSError) -> None:
        raise InputError(exc.filename or str(folder), "", f"cannot read the folder: {exc.strerror}")

    out = []
    for top, dirs, names in os.walk(folder, onerror=unreadable):
        rel = Path(top).relative_to(folder).as_posix()
        prefix = "" if rel == "." else rel + "/"
        dirs[:] = [d for d in dirs if not d.startswith(".") and not excluded(prefix + d, exclude)]
        notice = _rendered(top, names)
        if notice:
            skipped.append(notice)
            dirs[:] = []
            continue
        out.extend(Path(top, n) for n in names
                   if n.lower().endswith(MANIFEST_SUFFIXES) and not excluded(prefix + n, exclude))
    return sorted(out)


def find(paths: list[Path], exclude: Iterable[str] = ()) -> Inputs:
    """Every manifest file under the paths, in a stable order, each file once however often it is
    named; folders of Helm charts and Kustomize are left out with a notice, and in folders, hidden
    folders and what ``exclude`` matches. An unknown path is bad input."""
    found: list[Path] = []
    skipped: list[Skipped] = []
    for path in paths:
        if path.is_dir():
            found.extend(_walk(path, skipped, tuple(exclude)))
        elif os.path.lexists(path):
            # Named explicitly: a broken or looping link, or an unreadable file, is reported when read.
            notice = _rendered(str(path.parent), [path.name])
            if notice:
                skipped.append(notice)
            else:
                found.append(path)
        else:
            raise InputError(str(path), "", "no such file or folder")
    seen: set[str] = set()
    unique = []
    for path in found:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return Inputs(tuple(unique), tuple(skipped))


def files(paths: list[Path]) -> list[Path]:
    """Every manifest file under the paths (see :func:`find`)."""
    return list(find(paths).files)
