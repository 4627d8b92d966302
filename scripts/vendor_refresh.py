#!/usr/bin/env python3
"""Re-vendor one upstream tree under vendor/ from a git clone at a tag, and rewrite its entry in
vendor/sources.yaml (commit, version, file count, size, checksum). docs/third-party.md says when
and how to run it.

    # the recorded tag again (proves the tree is what the tag holds; no change expected)
    scripts/vendor_refresh.py kube-prometheus-stack --git-dir /path/to/helm-charts.git
    # a new version: the tag changes, the tree and its record follow
    scripts/vendor_refresh.py dcgm-exporter --git-dir /path/to/dcgm-exporter.git --tag 3.3.5-3.4.0
    # a tree not recorded yet
    scripts/vendor_refresh.py NAME --git-dir DIR --tag TAG --repository owner/name \\
        --upstream-path charts/x --path vendor/charts/x [--parent kube-prometheus-stack]
    # recompute every checksum and compare with the record (what tests/test_vendor.py does)
    scripts/vendor_refresh.py --verify

``--git-dir`` is any clone or bare mirror of the upstream repository that has the tag (``git
fetch --tags`` first). The tree is exactly ``git archive <commit> <upstream path>``, with the
repository's root LICENSE/NOTICE copied in when the path has none. Dependency charts of a chart
(its ``charts/`` folder, what ``helm dependency build`` would fill) are trees of their own, each
refreshed from its own repository and tag; after a parent's refresh this prints the parent's
dependency ranges next to the vendored versions so you see which to refresh next.
"""
from __future__ import annotations

import argparse
import fnmatch
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from colocate import ROOT  # noqa: E402
from colocate.base import vendored  # noqa: E402

LICENCE_NAMES = ("LICENSE", "LICENSE.txt", "LICENSE.md", "COPYING", "NOTICE", "NOTICE.txt", "NOTICE.md")
HEADER = """\
# Upstream source trees vendored under vendor/, one entry per tree. Written by
# scripts/vendor_refresh.py (do not edit by hand); tests/test_vendor.py recomputes each sha256
# and checks the tags and versions against the pins. docs/third-party.md, "Vendored upstream
# trees", explains the fields and the checksum.
"""


def git(git_dir: str, *args: str, binary: bool = False):
    result = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True)
    if result.returncode != 0:
        raise SystemExit(f"vendor_refresh: git {' '.join(args)} failed: {result.stderr.decode().strip()}")
    return result.stdout if binary else result.stdout.decode().strip()


def resolve_git_dir(path: str) -> str:
    p = Path(path)
    if (p / ".git").exists():
        return str(p / ".git")
    if (p / "repo" / "HEAD").exists():  # a mirror folder holding its bare repository as repo/
        return str(p / "repo")
    return str(p)


def upstream_files(git_dir: str, commit: str, upstream_path: str) -> dict[str, tuple[bytes, bool]]:
    """{relative path: (bytes, executable)} of ``upstream_path`` at ``commit``."""
    raw = git(git_dir, "archive", "--format=tar", commit, "--", upstream_path, binary=True)
    prefix = upstream_path.strip("/") + "/"
    out: dict[str, tuple[bytes, bool]] = {}
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        for member in tar.getmembers():
            if member.isdir() or member.type == tarfile.XGLTYPE or member.name == "pax_global_header":
                continue
            if member.issym() or member.islnk():
                raise SystemExit(f"vendor_refresh: {member.name} is a link; vendored trees hold files only")
            if not member.name.startswith(prefix):
                raise SystemExit(f"vendor_refresh: unexpected path {member.name} outside {prefix}")
            data = tar.extractfile(member).read()
            out[member.name[len(prefix):]] = (data, bool(member.mode & 0o111))
    if not out:
        raise SystemExit(f"vendor_refresh: {upstream_path} is empty or missing at {commit}")
    return out


def licence_files(git_dir: str, commit: str, files: dict[str, tuple[bytes, bool]]) -> list[str]:
    """Copy the repository's root licence/notice files into the tree when it has none of its own."""
    own = [name for name in files if "/" not in name and name in LICENCE_NAMES]
    if any(name.startswith(("LICENSE", "COPYING")) for name in own):
        return []
    root = git(git_dir, "ls-tree", "--name-only", commit).splitlines()
    copied = []
    for name in LICENCE_NAMES:
        if name in root and name not in files:
            files[name] = (git(git_dir, "show", f"{commit}:{name}", binary=True), False)
            copied.append(name)
    if not any(name.startswith(("LICENSE", "COPYING")) for name in copied):
        raise SystemExit("vendor_refresh: neither the path nor the repository root has a LICENSE; vendor nothing "
                         "whose licence you cannot carry")
    return copied


def write_tree(target: Path, files: dict[str, tuple[bytes, bool]], keep: list[Path]) -> None:
    """Make ``target`` hold exactly ``files``, leaving the nested trees in ``keep`` alone."""
    for rel in files:
        if any((target / rel) == k or k in (target / rel).parents for k in keep):
            raise SystemExit(f"vendor_refresh: upstream file {rel} lies inside the nested tree {keep}")
    if target.exists():
        for _rel, file in vendored.tree_files(target, keep):
            file.unlink()
        for d in sorted((p for p in target.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            if not any(d.iterdir()):
                d.rmdir()
    for rel, (data, executable) in sorted(files.items()):
        out = target / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        out.chmod(0o755 if executable else 0o644)


def chart_version(target: Path) -> str | None:
    chart = target / "Chart.yaml"
    return str(yaml.safe_load(chart.read_text())["version"]) if chart.is_file() else None


def dependency_report(trees: dict[str, dict], name: str) -> list[str]:
    """Lines comparing a chart's Chart.yaml dependencies with the vendored dependency trees."""
    entry = trees[name]
    chart = ROOT / entry["path"] / "Chart.yaml"
    if not chart.is_file():
        return []
    lines = []
    for dep in yaml.safe_load(chart.read_text()).get("dependencies") or []:
        if not dep.get("repository"):
            lines.append(f"  {dep['name']}: local subchart (part of {name}'s own tree)")
            continue
        child = next((n for n, e in trees.items() if e.get("parent") == name and Path(e["path"]).name == dep["name"]), None)
        packaged = sorted((ROOT / entry["path"] / "charts").glob(f"{dep['name']}*.tgz"))
        if child is None and packaged:
            lines.append(f"  {dep['name']} {dep['version']}: packaged upstream in the tree as charts/{packaged[0].name}")
            continue
        if child is None:
            lines.append(f"  {dep['name']} {dep['version']}: NOT vendored; add it with --parent {name}")
            continue
        have = trees[child]["version"]
        ok = fnmatch.fnmatchcase(have, dep["version"].replace("x", "*")) if "*" in dep["version"] or "x" in dep["version"] \
            else have == dep["version"].lstrip("=~^ ")
        lines.append(f"  {dep['name']} {dep['version']}: vendored {have}{'' if ok else '  <- OUT OF RANGE: refresh it'}")
        if trees[child].get("resolves") != dep["version"]:
            trees[child]["resolves"] = dep["version"]
    return lines


def dump(trees: dict[str, dict]) -> str:
    ordered = {name: {k: trees[name][k] for k in vendored.FIELDS if trees[name].get(k) is not None}
               for name in trees}
    return HEADER + yaml.safe_dump({"trees": ordered}, sort_keys=False, width=120)


def refresh(args) -> int:
    data = yaml.safe_load(vendored.SOURCES.read_text()) if vendored.SOURCES.is_file() else None
    trees: dict[str, dict] = dict((data or {}).get("trees") or {})
    entry = dict(trees.get(args.name) or {})
    for key in ("repository", "upstream_path", "path", "parent", "licence"):
        value = getattr(args, key)
        if value is not None:
            entry[key] = value
    entry["tag"] = args.tag or entry.get("tag")
    missing = [k for k in ("repository", "upstream_path", "path", "tag") if not entry.get(k)]
    if missing:
        raise SystemExit(f"vendor_refresh: {args.name} is not recorded yet; give --{' --'.join(m.replace('_', '-') for m in missing)}")
    git_dir = resolve_git_dir(args.git_dir)
    tag = entry["tag"]
    if not git(git_dir, "tag", "--list", tag):
        raise SystemExit(f"vendor_refresh: tag {tag} not found in {git_dir} (git fetch --tags there first)")
    commit = git(git_dir, "rev-parse", "--verify", f"refs/tags/{tag}^{{commit}}")
    files = upstream_files(git_dir, commit, entry["upstream_path"])
    copied = licence_files(git_dir, commit, files)
    target = ROOT / entry["path"]
    keep = [ROOT / p for p in vendored.nested(entry["path"], [e["path"] for n, e in trees.items() if n != args.name])]
    write_tree(target, files, keep)
    entry["commit"] = commit
    entry["version"] = chart_version(target) or tag
    entry["licence_files"] = copied
    entry.setdefault("licence", "Apache-2.0")
    entry["sha256"], entry["files"], entry["bytes"] = vendored.tree_digest(target, keep)
    trees[args.name] = entry
    report = dependency_report(trees, entry["parent"]) if entry.get("parent") in trees else []
    report += dependency_report(trees, args.name)
    vendored.SOURCES.parent.mkdir(parents=True, exist_ok=True)
    vendored.SOURCES.write_text(dump(trees))
    print(f"vendor_refresh: {args.name}: {entry['repository']} {tag} ({commit}) {entry['upstream_path']} -> "
          f"{entry['path']}: version {entry['version']}, {entry['files']} files, {entry['bytes']} bytes, "
          f"sha256 {entry['sha256']}")
    if copied:
        print(f"vendor_refresh: copied {', '.join(copied)} from the repository root (the path has none)")
    for line in report:
        print(line)
    print("vendor_refresh: now update docs/third-party.md's table and the pin (colocate.yaml or the construct's "
          "CHART_VERSION) if the version changed; tests/test_vendor.py checks they agree")
    return 0


def verify() -> int:
    trees = vendored.load()
    bad = 0
    for tree in trees.values():
        got, count, size = vendored.digest_of(tree, trees)
        ok = (got, count, size) == (tree.sha256, tree.files, tree.bytes)
        bad += not ok
        print(f"{'ok     ' if ok else 'CHANGED'} {tree.name}: {tree.path} {got}")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("name", nargs="?", help="tree name, a key of vendor/sources.yaml")
    parser.add_argument("--git-dir", help="clone or bare mirror of the upstream repository")
    parser.add_argument("--tag", help="release tag (default: the recorded one)")
    parser.add_argument("--repository", help="owner/name on GitHub (new trees)")
    parser.add_argument("--upstream-path", dest="upstream_path", help="path inside the repository (new trees)")
    parser.add_argument("--path", help="where under the repository it goes, e.g. vendor/charts/x (new trees)")
    parser.add_argument("--parent", help="the chart this one is a dependency of (new dependency trees)")
    parser.add_argument("--licence", help="SPDX id of the licence (default Apache-2.0)")
    parser.add_argument("--verify", action="store_true", help="recompute every checksum and compare")
    args = parser.parse_args(argv)
    if args.verify:
        return verify()
    if not args.name or not args.git_dir:
        parser.error("give a tree name and --git-dir (or --verify)")
    return refresh(args)


if __name__ == "__main__":
    sys.exit(main())
