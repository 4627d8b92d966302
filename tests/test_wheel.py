"""The package as a user installs it: the sdist and the wheel build, the wheel
carries every data file the package folders hold and nothing from tests/, and, installed from
PyPI into a clean virtual environment outside the repository, `colocate --version`, `init`,
`synth`, `check` and `diff` work in a new git repository with no file of this checkout on the
Python path. Slow: a minute, most of it pip installing the dependencies."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import colocate
from colocate import ROOT
from colocate.base import vendored
from colocate.synth.renderers import BUILDS

pytestmark = pytest.mark.slow

#: Checkout folder -> where the wheel puts it (pyproject.toml [tool.setuptools.package-dir]).
_LAYOUT = {"colocate/": "colocate/", "policies/": "colocate/policies/", "charts/": "colocate/charts/",
           "constructs/": "colocate/constructs/", "vendor/": "colocate/vendor/"}


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(map(str, argv))} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(sdist, wheel): the sdist from a copy of the checkout, the wheel from the unpacked sdist,
    as `python -m build` does it (offline: the test environment's setuptools, no isolation)."""
    tmp = tmp_path_factory.mktemp("build")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "node_modules", "bin", "build", "dist", ".cache", "__pycache__", "*.egg-info", ".pytest_cache"))
    out = tmp / "out"
    out.mkdir()
    name = _run([sys.executable, "-c", f"import setuptools.build_meta as b; print(b.build_sdist({str(out)!r}))"],
                cwd=source).stdout.split()[-1]
    sdist = out / name
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp / "unpacked", filter="data")
    [unpacked] = (tmp / "unpacked").iterdir()
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(unpacked)],
         cwd=tmp)
    [wheel] = out.glob("colocate-*.whl")
    return sdist, wheel


def _tracked(prefixes) -> set[str]:
    listed = _run(["git", "ls-files", "-z", *prefixes], cwd=ROOT).stdout.split("\0")
    return {p for p in listed if p and (ROOT / p).is_file()}


def test_the_wheel_carries_every_file_of_the_package_folders_and_nothing_of_tests(built):
    _, wheel = built
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = set()
    for path in _tracked(_LAYOUT):
        prefix = next(p for p in _LAYOUT if path.startswith(p))
        expected.add(_LAYOUT[prefix] + path[len(prefix):])
    assert sorted(expected - names) == []
    extra = {n for n in names - expected if ".dist-info/" not in n}
    assert sorted(extra) == []
    # (Upstream charts have test templates of their own: those are part of the vendored trees.)
    assert not [n for n in names if n.startswith("tests/") or ("/tests/" in n and not n.startswith("colocate/vendor/"))]


def test_the_wheels_vendored_trees_have_their_recorded_checksums(built, tmp_path):
    """Every file of every tree, dotfiles included (helm reads .helmignore): the digest
    vendor/sources.yaml records, computed over what the wheel unpacks to."""
    _, wheel = built
    zipfile.ZipFile(wheel).extractall(tmp_path)
    trees = vendored.load(tmp_path / "colocate" / "vendor" / "sources.yaml")
    assert trees
    for tree in trees.values():
        inner = [tmp_path / "colocate" / p for p in vendored.nested(tree.path, [t.path for t in trees.values()])]
        digest, files, size = vendored.tree_digest(tmp_path / "colocate" / tree.path, inner)
        assert (digest, files, size) == (tree.sha256, tree.files, tree.bytes), tree.name


def test_the_sdist_holds_the_vendored_trees_and_the_version(built):
    sdist, wheel = built
    assert wheel.name.startswith(f"colocate-{colocate.__version__}-")
    assert sdist.name == f"colocate-{colocate.__version__}.tar.gz"
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"vendor/sources.yaml", "pyproject.toml"} <= names
    assert sorted(_tracked(["vendor/"]) - names) == []


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory) -> Path:
    """The wheel and its dependencies (from PyPI) in a new virtual environment outside the repository."""
    _, wheel = built
    venv = tmp_path_factory.mktemp("venv") / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    _run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], cwd=venv.parent)
    return venv / "bin"


def _user_env(bin_dir: Path, home: Path) -> dict[str, str]:
    """A user's environment: the venv's scripts, git, no Go (the tools come from the per-user tool
    folder), no PYTHONPATH; jsii on the Node 22 the bootstrap installed (the machine's Node 20
    prints an end-of-life banner)."""
    keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TZ")}
    return {**keep, "PATH": os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]), "HOME": str(home),
            "XDG_CACHE_HOME": str(home / ".cache"), "JSII_NODE": str(ROOT / "node_modules" / ".bin" / "node"),
            "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com"}


def _seed_tool_folder(home: Path) -> None:
    """What colocate would build there with Go on first use (tests/test_tools.py covers that
    path): the pinned kubeconform, helm and kustomize, copied from the bootstrap's bin/."""
    folder = home / ".cache" / "colocate" / "tools"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(folder.parent, 0o700)
    for name in ("kubeconform", *(b.name for b in BUILDS)):
        shutil.copy2(ROOT / "bin" / name, folder / name)
    for build in BUILDS:
        (folder / f".sim-{build.name}.stamp").write_text(build.stamp() + "\n")


def test_installed_colocate_inits_synthesizes_checks_and_diffs_a_new_repository(installed: Path, tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    _seed_tool_folder(home)
    env = _user_env(installed, home)
    repo = tmp_path / "cluster"
    repo.mkdir()
    colocate_cli = str(installed / "colocate")

    said = _run([colocate_cli, "--version"], cwd=repo, env=env).stdout.strip()
    assert said == f"colocate {colocate.__version__}"
    where = _run([str(installed / "python"), "-c", "import colocate, sys; print(colocate.__file__); print(sys.path)"],
                 cwd=repo, env=env).stdout
    assert str(ROOT) not in where, where

    _run(["git", "init", "-q", "-b", "main"], cwd=repo, env=env)
    _run([colocate_cli, "init"], cwd=repo, env=env)
    proc = _run([colocate_cli, "synth"], cwd=repo, env=env)
    assert re.search(r"wrote \d+ files to", proc.stderr), proc.stderr
    assert "Traceback" not in proc.stderr
    # The rendered upstream charts are the reference's, byte for byte (the same vendored trees and renderers).
    for rendered in ("kube-prometheus-stack", "training-operator"):
        ours = sorted(p.relative_to(repo / "dist") for p in (repo / "dist" / "apps" / rendered).rglob("*"))
        theirs = sorted(p.relative_to(ROOT / "dist") for p in (ROOT / "dist" / "apps" / rendered).rglob("*"))
        assert ours == theirs and ours
        assert all((repo / "dist" / p).read_bytes() == (ROOT / "dist" / p).read_bytes() for p in ours if p.suffix)
    _run([colocate_cli, "synth", "--check"], cwd=repo, env=env)
    proc = _run([colocate_cli, "check"], cwd=repo, env=env)
    assert "0 errors" in proc.stdout, proc.stdout

    _run(["git", "add", "-A"], cwd=repo, env=env)
    _run(["git", "commit", "-q", "-m", "cluster"], cwd=repo, env=env)
    # A job request merged: diff names the new TFJob (jobs/ holds init's example already).
    shutil.copy(ROOT / "jobs" / "tf-mnist-dist.yaml", repo / "jobs" / "tf-mnist-dist.yaml")
    _run([colocate_cli, "synth"], cwd=repo, env=env)
    proc = _run([colocate_cli, "diff", "HEAD", "--format", "markdown"], cwd=repo, env=env)
    assert "tf-mnist-dist" in proc.stdout, proc.stdout + proc.stderr
