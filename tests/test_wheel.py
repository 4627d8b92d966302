"""The package as a user installs it: the sdist and the wheel build, the wheel
carries every data file the package folders hold (the simulation's Go modules too) and nothing
from tests/, and, installed from PyPI into a clean virtual environment outside the repository,
`colocate --version`, `init`, `synth`, `check`, `diff` and `simulate` work in a new git
repository with no file of this checkout on the Python path or PATH, as do the scaffolded cdk8s
app, pre-commit configuration and workflow. Slow: about three minutes, most of it pip
installing the dependencies and the night's simulation."""
from __future__ import annotations

import json
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
           "constructs/": "colocate/constructs/", "vendor/": "colocate/vendor/",
           "tools/sim/": "colocate/simtools/"}


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


# --- The whole way a user goes, from the wheel ----------------------------------------------------


def _seed_simulation(home: Path) -> None:
    """What the first `colocate simulate` would build into the tool folder with Go (the same go
    install the bootstrap ran into bin/): the components at colocate.yaml's pins, with their stamps.
    Hard links where bin/ is on the same file system, else copies."""
    from colocate import config
    from colocate.simulate import toolchain

    folder = home / ".cache" / "colocate" / "tools"
    for build in toolchain.builds(config.load(ROOT / "colocate.yaml")):
        for name in build.binaries:
            assert (ROOT / "bin" / name).is_file(), f"bin/{name} is missing: run `make bootstrap`"
            try:
                os.link(ROOT / "bin" / name, folder / name)
            except OSError:
                shutil.copy2(ROOT / "bin" / name, folder / name)
        (folder / f".sim-{build.name}.stamp").write_text(build.stamp() + "\n")


def _colocate_as_a_release(built_sdist: Path, tmp_path: Path, env: dict[str, str]) -> tuple[str, str]:
    """(repository, rev) a consumer's .pre-commit-config.yaml names: the source the sdist was built
    from, as a git repository of its own (pre-commit clones it and pip-installs colocate from it)."""
    source = tmp_path / "colocate-release"
    shutil.copytree(built_sdist.parent.parent / "source", source)
    _run(["git", "init", "-q", "-b", "main"], cwd=source, env=env)
    _run(["git", "add", "-A"], cwd=source, env=env)
    _run(["git", "commit", "-q", "-m", "release"], cwd=source, env=env)
    return str(source), _run(["git", "rev-parse", "HEAD"], cwd=source, env=env).stdout.strip()


def _pre_commit(bin_dir: Path, repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / "pre-commit"), "run", "--all-files"], cwd=repo, env=env,
                          capture_output=True, text=True)


@pytest.mark.simulate
def test_a_user_cluster_from_init_to_simulate_with_the_installed_wheel(built, installed: Path, tmp_path: Path):
    """init --example minimal in an empty git repository; another pool and the training namespace
    renamed; synth, check, diff HEAD~1 and simulate --scenario night; the scaffolded cdk8s app
    writes the same dist/; the scaffolded pre-commit configuration fails on a stale dist/ and
    passes on a fresh one; actionlint passes the scaffolded workflow and action.yml. Only the wheel
    and its dependencies are on the Python path, only the venv and the system on PATH."""
    from importlib.metadata import version

    from colocate.synth import write as render
    from tests.test_action import ACTIONLINT, SHELLCHECK
    from tests.test_other_cluster import EDITS, NEW_POOL, NEW_TRAINING, OLD_TRAINING, _edit

    home = tmp_path / "home"
    home.mkdir()
    _seed_tool_folder(home)
    _seed_simulation(home)
    env = {**_user_env(installed, home), "PRE_COMMIT_HOME": str(home / "pre-commit")}
    repo = tmp_path / "cluster"
    repo.mkdir()
    colocate_cli = str(installed / "colocate")
    _run(["git", "init", "-q", "-b", "main"], cwd=repo, env=env)
    _run([colocate_cli, "init", "--example", "minimal"], cwd=repo, env=env)
    _run([colocate_cli, "synth"], cwd=repo, env=env)
    _run(["git", "add", "-A"], cwd=repo, env=env)
    _run(["git", "commit", "-q", "-m", "minimal example"], cwd=repo, env=env)

    _edit(repo / "colocate.yaml", EDITS["pool-and-namespace"])
    _run([colocate_cli, "synth"], cwd=repo, env=env)
    assert (repo / "dist" / "nodes" / NEW_POOL).is_dir()
    proc = _run([colocate_cli, "check"], cwd=repo, env=env)
    assert "0 errors, 0 warnings" in proc.stdout, proc.stdout
    _run(["git", "add", "-A"], cwd=repo, env=env)
    _run(["git", "commit", "-q", "-m", "a batch pool; training in ml-batch"], cwd=repo, env=env)
    out = _run([colocate_cli, "diff", "HEAD~1"], cwd=repo, env=env).stdout
    assert f"added NodePool {NEW_POOL}" in " ".join(out.split()), out
    assert f"removed TFJob {OLD_TRAINING}/mnist-example" in out, out

    proc = _run([colocate_cli, "simulate", "--scenario", "night", "--format", "json"], cwd=repo, env=env)
    report = json.loads(proc.stdout)
    assert report["ok"] and report["tfjobs"] == {f"{NEW_TRAINING}/mnist-example": "Running"}, report["tfjobs"]
    assert report["pods"] and all(p["node"] for p in report["pods"]), [p for p in report["pods"] if not p["node"]]
    assert NEW_POOL in {n["pool"] for n in report["nodes"]}, report["nodes"]

    # The scaffolded cdk8s app: `python` on PATH is the venv's, the cdk8s CLI the bootstrap's.
    copy = tmp_path / "through-cdk8s"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns("dist", ".git"))
    _run([str(ROOT / "node_modules" / ".bin" / "cdk8s"), "synth", "--no-check-upgrade"], cwd=copy, env=env)
    assert render.read_tree(copy / "dist") == render.read_tree(repo / "dist")

    # The scaffolded pre-commit configuration, naming colocate's repository at a release.
    _run([str(installed / "pip"), "install", "-q", f"pre-commit=={version('pre-commit')}"], cwd=tmp_path, env=env)
    url, rev = _colocate_as_a_release(built[0], tmp_path, env)
    config = repo / ".pre-commit-config.yaml"
    config.write_text(config.read_text().replace("<colocate's repository URL>", url)
                      .replace("<a release tag or commit>", rev))
    (repo / "colocate.yaml").write_text((repo / "colocate.yaml").read_text().replace("nodes: 3", "nodes: 4"))
    _run(["git", "add", "-A"], cwd=repo, env=env)
    stale = _pre_commit(installed, repo, env)
    assert stale.returncode == 1 and re.search(r"colocate synth --check \(dist/ is fresh\)\.+Failed", stale.stdout), \
        stale.stdout + stale.stderr
    _run([colocate_cli, "synth"], cwd=repo, env=env)
    _run(["git", "add", "-A"], cwd=repo, env=env)
    fresh = _pre_commit(installed, repo, env)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert re.search(r"colocate check \(dist/\)\.+Passed", fresh.stdout), fresh.stdout

    # actionlint on the scaffolded workflow as init wrote it, then on action.yml through the same
    # workflow using it as `./` (actionlint then checks the step's inputs against action.yml).
    workflow = repo / ".github" / "workflows" / "colocate.yml"
    for step in ("as written", "with action.yml"):
        if step == "with action.yml":
            workflow.write_text(workflow.read_text().replace("uses: OWNER/colocate@RELEASE", "uses: ./"))
            shutil.copy(ROOT / "action.yml", repo / "action.yml")
        lint = subprocess.run([str(ACTIONLINT), "-oneline", f"-shellcheck={SHELLCHECK}", "-pyflakes="], cwd=repo,
                              env=env, capture_output=True, text=True)
        assert lint.returncode == 0, f"{step}: {lint.stdout}{lint.stderr}"
