"""colocate as users get it: `colocate check` imports no cdk8s, and an installed wheel checks
exactly like the checkout."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from colocate import ROOT
from colocate.checker import load_rules
from colocate.base.go_builds import environment
from tests.helpers import run

_PLANTED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: adhoc-trainer
  namespace: training
spec:
  selector:
    matchLabels: {app: adhoc}
  template:
    metadata:
      labels: {app: adhoc}
    spec:
      containers:
        - name: main
          image: harbor.example.com/ml/adhoc:1.0.0
"""

_PROBE = """
import sys
from colocate.cli import main
code = main(["check", "dist"])
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"cdk8s", "jsii", "constructs"})
print("LOADED=" + ",".join(loaded), file=sys.stderr)
sys.exit(code)
"""


def _without_node(env: dict[str, str]) -> dict[str, str]:
    """No Node.js anywhere: jsii, if it started, would fail."""
    out = dict(env, JSII_NODE="/nonexistent/node")
    out["PATH"] = os.pathsep.join(p for p in out["PATH"].split(os.pathsep)
                                  if not (Path(p) / "node").exists())
    return out


def test_check_imports_no_cdk8s_and_needs_no_node():
    proc = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=_without_node(environment()),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "LOADED=\n" in proc.stderr, proc.stderr


def test_check_in_a_checkout_does_not_expose_the_repository_root_as_a_package():
    proc = run([sys.executable, "-c", "import colocate.main"])
    assert proc.returncode == 1 and "No module named 'colocate.main'" in proc.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The wheel, built from this checkout and installed into a fresh virtual environment
    outside the repository. Its dependencies come from the test environment's site-packages
    (a .pth line), so nothing is downloaded; colocate itself only from the wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    # Build from a copy: setuptools writes build/ into the source tree.
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "node_modules", "bin", "build", "dist", ".cache", "__pycache__", "*.egg-info"))
    wheels = tmp / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(source)],
        cwd=tmp, check=True)
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp, check=True)
    python = venv / "bin" / "python"
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    cwd=tmp, check=True).stdout.strip())
    (site / "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next(wheels.glob("colocate-*.whl"))
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        cwd=tmp, check=True)
    return venv / "bin"


def _repository_copy(tmp: Path, planted: bool) -> Path:
    repo = tmp / ("planted" if planted else "clean")
    shutil.copytree(ROOT / "dist", repo / "dist")
    shutil.copy(ROOT / "colocate.yaml", repo / "colocate.yaml")
    if planted:
        (repo / "dist" / "apps" / "training" / "deployment.training.adhoc-trainer.yaml").write_text(_PLANTED)
    return repo


def _check(colocate: Path, repo: Path) -> tuple[int, list[dict]]:
    env = environment()
    env["PATH"] = os.pathsep.join([str(ROOT / "bin"), env["PATH"]])  # kubeconform
    proc = subprocess.run([str(colocate), "check", "dist", "--format", "json"], cwd=repo, env=env,
                          capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def test_the_installed_package_is_the_wheel_not_the_checkout(installed: Path):
    proc = run([str(installed / "python"), "-c", "import colocate, colocate.policies.checks.platform as p; "
                "print(colocate.__file__); print(p.__file__)"], cwd=installed, check=True)
    assert str(ROOT) not in proc.stdout and proc.stdout.count("site-packages") == 2, proc.stdout


def test_installed_colocate_lists_every_rule(installed: Path):
    proc = run([str(installed / "colocate"), "rules"], cwd=installed, check=True)
    listed = [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]
    assert listed == [rule.id for rule in load_rules()]


@pytest.mark.parametrize("planted", [False, True], ids=["clean-dist", "planted-fault"])
def test_installed_check_gives_the_checkout_result(installed: Path, tmp_path: Path, planted: bool):
    repo = _repository_copy(tmp_path, planted)
    from_wheel = _check(installed / "colocate", repo)
    from_checkout = _check(Path(sys.executable).parent / "colocate", repo)
    assert from_wheel == from_checkout
    code, findings = from_wheel
    if planted:
        assert code == 1
        assert {(f["rule"], f["name"]) for f in findings} >= {("COL004", "adhoc-trainer")}
    else:
        assert (code, findings) == (0, [])


def test_installed_capacity_gives_the_checkout_result(installed: Path, tmp_path: Path):
    repo = _repository_copy(tmp_path, planted=False)
    outputs = [run([str(colocate), "capacity", "dist"], cwd=repo, check=True).stdout
               for colocate in (installed / "colocate", Path(sys.executable).parent / "colocate")]
    assert outputs[0] == outputs[1] and outputs[0].startswith("pool")


def test_load_rules_refuses_an_empty_rule_folder(tmp_path: Path):
    from colocate.errors import ColocateError

    with pytest.raises(ColocateError, match="no policy rule found"):
        load_rules(tmp_path)


# --- an installed colocate outside any colocate repository -----------------------------------------


def _wheel_env() -> dict[str, str]:
    env = environment()
    env["PATH"] = os.pathsep.join([str(ROOT / "bin"), env["PATH"]])  # kubeconform
    return env


def test_installed_check_outside_a_repository_uses_the_packaged_reference_configuration(installed: Path,
                                                                                         tmp_path: Path):
    shutil.copytree(ROOT / "dist", tmp_path / "dist")
    proc = subprocess.run([str(installed / "colocate"), "check", "dist"], cwd=tmp_path, env=_wheel_env(),
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    [said] = proc.stderr.splitlines()
    assert said.startswith(f"colocate: no colocate.yaml in {tmp_path} or above; using the packaged reference "
                           "configuration"), said
    # synth refuses there, and says how to start.
    proc = subprocess.run([str(installed / "colocate"), "synth"], cwd=tmp_path, env=_wheel_env(),
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no colocate.yaml in" in proc.stderr and "colocate init" in proc.stderr, proc.stderr


def test_installed_init_writes_a_starter_configuration_once(installed: Path, tmp_path: Path):
    proc = subprocess.run([str(installed / "colocate"), "init"], cwd=tmp_path, env=_wheel_env(),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "colocate.yaml").read_text() == (ROOT / "colocate.yaml").read_text()
    proc = subprocess.run([str(installed / "colocate"), "init", "--add", "colocate.yaml"], cwd=tmp_path,
                          env=_wheel_env(), capture_output=True, text=True)
    assert proc.returncode == 2 and "colocate.yaml: already exists" in proc.stderr, proc.stderr
    # Now a repository: check uses its configuration and says nothing about it.
    shutil.copytree(ROOT / "dist", tmp_path / "dist")
    proc = subprocess.run([str(installed / "colocate"), "check", "dist"], cwd=tmp_path, env=_wheel_env(),
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("example", ["reference", "minimal"])
def test_the_wheel_ships_every_file_init_writes(installed: Path, tmp_path: Path, example: str):
    """The templates are package data (pyproject.toml): dotfiles and .github/ too, which a plain
    ** glob skips."""
    from colocate.cli import scaffold

    proc = subprocess.run([str(installed / "colocate"), "init", "--example", example], cwd=tmp_path,
                          env=_wheel_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == list(scaffold.files(example))
    for rel, template in scaffold.files(example).items():
        assert (tmp_path / rel).read_bytes() == template.read_bytes(), rel


def test_the_packaged_reference_configuration_is_the_repositorys():
    from colocate import config

    assert config.reference_path().read_text() == (ROOT / "colocate.yaml").read_text()
