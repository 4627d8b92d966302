"""The colocate image's Dockerfile, read as Docker reads it (no daemon here): the base pinned and
pulled through Harbor, the user the pod templates run as, exec-form instructions only, and a
build context that holds what ``pip install .`` needs and nothing else; and the commands the
image runs in the cluster start without cdk8s or jsii (no Node.js in the image)."""
from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import sys
import tomllib

import pytest

from colocate import ROOT, config as config_mod
from colocate.constructs.training_control import IMAGE_UID
from colocate.model.scheduling import ImageRef
from tests.helpers import yaml_load

CONFIG = config_mod.load()


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: comments and parser directives dropped, lines joined at a
    trailing backslash (the default escape character)."""
    out, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        keyword, _, rest = (pending + line).strip().partition(" ")
        out.append((keyword.upper(), rest.strip()))
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    return out


DOCKERFILE = instructions((ROOT / "Dockerfile").read_text())


def _of(keyword: str) -> list[str]:
    return [args for kw, args in DOCKERFILE if kw == keyword]


def _exec_form(args: str) -> list[str]:
    """The JSON array of an exec-form RUN/CMD/ENTRYPOINT, after any --flags."""
    while args.startswith("--"):
        _, _, args = args.partition(" ")
        args = args.strip()
    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), args
    return value


def test_the_base_is_a_pinned_python_slim_from_harbors_docker_hub_proxy_cache():
    bases = _of("FROM")
    assert len(bases) == 1, bases
    image = bases[0].split()[0]
    ref = ImageRef.parse(image)
    project = CONFIG.registry_proxy_projects["docker.io"]
    assert image.startswith(f"{CONFIG.registry_host}/{project}/library/python:"), image
    # An exact patch release of the Python pyproject.toml requires, on a named Debian release.
    python = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)-slim-(bookworm|trixie)", ref.tag or "")
    assert python, f"{image}: pin an exact tag such as 3.11.7-slim-bookworm"
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert f">={python[1]}.{python[2]}" in requires, (image, requires)


def test_every_run_cmd_and_entrypoint_is_exec_form_so_no_shell_runs():
    for keyword in ("RUN", "CMD", "ENTRYPOINT"):
        for args in _of(keyword):
            _exec_form(args)
    assert _exec_form(_of("ENTRYPOINT")[-1]) == ["colocate"]


def test_the_package_is_installed_from_the_context_without_copying_it_into_the_image():
    installs = [_exec_form(a) for a in _of("RUN") if _exec_form(a)[:2] == ["pip", "install"]]
    assert installs == [["pip", "install", "/src"]]
    assert not _of("COPY") and not _of("ADD")


def test_it_runs_as_the_numeric_non_root_user_the_pod_templates_name(rendered):
    user = _of("USER")[-1]
    assert user == f"{IMAGE_UID}:{IMAGE_UID}" and IMAGE_UID > 0
    # The last instruction that sets the user comes after every RUN, so nothing later runs as root.
    last_user = max(i for i, (kw, _) in enumerate(DOCKERFILE) if kw == "USER")
    assert all(i < last_user for i, (kw, _) in enumerate(DOCKERFILE) if kw == "RUN")
    pods = 0
    for path, text in rendered.items():
        if not path.startswith("apps/training-control/"):
            continue
        obj = yaml_load(text)
        spec = (obj.get("spec") or {}).get("template", {}).get("spec") or \
            (obj.get("spec") or {}).get("jobTemplate", {}).get("spec", {}).get("template", {}).get("spec")
        if spec:
            pods += 1
            assert spec["securityContext"]["runAsUser"] == IMAGE_UID and spec["securityContext"]["runAsNonRoot"]
            assert {c["image"] for c in spec["containers"]} == {CONFIG.colocate_image}
    assert pods == 3  # the Deployment and the two CronJobs


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore: the last matching pattern decides; '!' lets a path back in. A
    pattern that matches a folder covers everything below it."""
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").rstrip("/")
        parts = path.split("/")
        if any(fnmatch.fnmatchcase("/".join(parts[:i]), pattern) or
               (pattern.startswith("**/") and fnmatch.fnmatchcase(parts[i - 1], pattern[3:]))
               for i in range(1, len(parts) + 1)):
            ignored = not negate
    return ignored


def test_the_build_context_holds_the_package_and_leaves_out_the_rest():
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = ["pyproject.toml", project["project"]["readme"], *(f"{d}/x.py" for d in
                                                               project["tool"]["setuptools"]["package-dir"].values())]
    assert [p for p in needed if _ignored(p, patterns)] == []
    for left_out in (".venv/bin/python", "node_modules/x", "dist/index.yaml", ".git/HEAD", "bin/kubeconform",
                     "tests/test_dist.py", "jobs/x.yaml", "colocate/__pycache__/cli.cpython-311.pyc"):
        assert _ignored(left_out, patterns), left_out


@pytest.mark.parametrize("argv", [
    ["offline", "pause", "--namespace", "training", "--kubeconfig", "/nonexistent/kubeconfig"],
    ["offline", "resume", "--namespace", "training", "--kubeconfig", "/nonexistent/kubeconfig"],
    ["resubmitter", "--namespace", "training", "--lease-namespace", "colocate-system", "--metrics-port", "0",
     "--kubeconfig", "/nonexistent/kubeconfig"],
])
def test_the_in_cluster_commands_start_without_cdk8s_or_jsii(argv):
    """The image's entry points must not need Node.js: they never import cdk8s, constructs or jsii
    (here they stop at the missing kubeconfig, exit 2, as in a pod without a service account)."""
    probe = ("import sys\nfrom colocate import cli\nrc = cli.main(sys.argv[1:])\n"
             "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'cdk8s', 'jsii', 'constructs'})\n"
             "print(rc, ','.join(heavy))")
    proc = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.stdout.split() == ["2"], proc.stdout + proc.stderr
    assert "kubeconfig /nonexistent/kubeconfig" in proc.stderr


def test_every_python_folder_is_a_package_pip_install_ships():
    """The image is ``pip install .``: a folder of Python modules missing from pyproject.toml's
    ``packages`` is silently left out of it (a new subcommand's package, say), and the command
    fails only in the cluster. Folders of modules under colocate/ and the three mapped roots."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = {folder: package for package, folder in tool["package-dir"].items()}
    expected = set()
    for folder, package in roots.items():
        if package == "colocate.vendor":  # upstream trees, shipped as data (a chart's hack/*.py is no module of ours)
            continue
        for module in (ROOT / folder).rglob("*.py"):
            parts = module.parent.relative_to(ROOT / folder).parts
            if "__pycache__" not in parts:
                expected.add(".".join((package, *parts)))
    assert sorted(expected - set(tool["packages"])) == []
