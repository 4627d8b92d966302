"""The upstream source trees vendored under vendor/ and their record, vendor/sources.yaml.

Each tree is the bytes of one path of an upstream git repository at a release tag, plus the
repository's root licence files when the path has none of its own. Its checksum is
:func:`tree_digest`: SHA-256 over the tree's files in sorted relative-path order, each as
``<relative path> NUL <size in bytes> NUL <bytes>``. Files inside another recorded tree nested in
this one (a dependency chart under ``charts/``) belong to that tree, not to this one.

scripts/vendor_refresh.py writes the trees and the record; tests/test_vendor.py proves them
unchanged. docs/third-party.md explains both."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import colocate
from colocate import ROOT
from colocate.base import safe_yaml

#: The folder vendor/ is in: the installed package (a wheel maps vendor/ to colocate/vendor/,
#: pyproject.toml), else the checkout. Tree paths (``vendor/...``) are relative to it.
_PACKAGE = Path(colocate.__file__).resolve().parent
BASE = _PACKAGE if (_PACKAGE / "vendor" / "sources.yaml").is_file() else ROOT
SOURCES = BASE / "vendor" / "sources.yaml"
#: Field order of an entry in vendor/sources.yaml.
FIELDS = ("path", "repository", "tag", "commit", "upstream_path", "version", "licence", "licence_files",
          "parent", "resolves", "files", "bytes", "sha256")


@dataclass(frozen=True)
class Tree:
    name: str
    path: str
    repository: str
    tag: str
    commit: str
    upstream_path: str
    version: str
    licence: str
    licence_files: tuple[str, ...]
    sha256: str
    files: int
    bytes: int
    #: The chart this one is a dependency of, and the version range the parent's Chart.yaml asks for.
    parent: str | None = None
    resolves: str | None = None

    @property
    def root(self) -> Path:
        return BASE / self.path


def load(path: Path = SOURCES) -> dict[str, Tree]:
    data = safe_yaml.load(path.read_text()) or {}
    trees = {}
    for name, entry in (data.get("trees") or {}).items():
        entry = dict(entry)
        entry["licence_files"] = tuple(entry.get("licence_files") or ())
        trees[name] = Tree(name=name, **entry)
    return trees


def nested(tree_path: str, all_paths: list[str]) -> list[str]:
    """Paths of the recorded trees that lie inside ``tree_path``."""
    return [p for p in all_paths if p != tree_path and p.startswith(tree_path.rstrip("/") + "/")]


def tree_files(root: Path, exclude: list[Path] = ()) -> list[tuple[str, Path]]:
    """(relative posix path, file) of every file under ``root`` outside ``exclude``, sorted."""
    out = []
    for file in root.rglob("*"):
        if any(file == ex or ex in file.parents for ex in exclude):
            continue
        if file.is_symlink():
            raise ValueError(f"{file}: a vendored tree holds no symlinks")
        if file.is_file():
            out.append((file.relative_to(root).as_posix(), file))
    return sorted(out)


def tree_digest(root: Path, exclude: list[Path] = ()) -> tuple[str, int, int]:
    """(sha256 hex, file count, total bytes) of the tree at ``root``; see the module docstring."""
    digest = hashlib.sha256()
    count = size = 0
    for rel, file in tree_files(root, exclude):
        data = file.read_bytes()
        digest.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
        count += 1
        size += len(data)
    return digest.hexdigest(), count, size


def digest_of(tree: Tree, trees: dict[str, Tree]) -> tuple[str, int, int]:
    inner = nested(tree.path, [t.path for t in trees.values()])
    return tree_digest(tree.root, [BASE / p for p in inner])
