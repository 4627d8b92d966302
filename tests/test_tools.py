"""Where colocate finds the tools it runs: $KUBECONFORM (or $HELM, $KUSTOMIZE),
then PATH, then the tool folder; built there with Go on first use; without Go, an error naming
the version and the command that installs it, never a make target. The tool folder is patched
to a temporary one, as an installed colocate's (the user's cache folder) would be."""
from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from colocate import ROOT
from colocate.base import go_builds
from colocate.checker import kubeconform
from colocate.synth import renderers

#: The Go scripts/bootstrap builds with, found before a test narrows PATH.
_GO = shutil.which("go")
#: A PATH with git and the shell's tools but no kubeconform, helm, kustomize or go.
_BARE_PATH = "/usr/bin:/bin"


@pytest.fixture
def tool_folder(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "tools"
    folder.mkdir()
    monkeypatch.setattr(go_builds, "BIN", folder)
    monkeypatch.setenv("PATH", _BARE_PATH)
    for var in ("KUBECONFORM", "HELM", "KUSTOMIZE"):
        monkeypatch.delenv(var, raising=False)
    renderers._not_pinned.cache_clear()
    return folder


def _copy(name: str, folder: Path, as_name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(ROOT / "bin" / name, folder / (as_name or name)))


def test_the_bare_path_has_none_of_the_tools():
    for name in ("kubeconform", "helm", "kustomize", "go"):
        assert shutil.which(name, path=_BARE_PATH) is None, name


def test_the_variable_comes_first(tool_folder, tmp_path, monkeypatch):
    named = _copy("kubeconform", tmp_path / "named")
    on_path = _copy("kubeconform", tmp_path / "on-path")
    _copy("kubeconform", tool_folder)
    monkeypatch.setenv("KUBECONFORM", str(named))
    monkeypatch.setenv("PATH", f"{on_path.parent}:{_BARE_PATH}")
    assert kubeconform.binary() == str(named)


def test_path_comes_before_the_tool_folder(tool_folder, tmp_path, monkeypatch):
    on_path = _copy("kubeconform", tmp_path / "on-path")
    _copy("kubeconform", tool_folder)
    monkeypatch.setenv("PATH", f"{on_path.parent}:{_BARE_PATH}")
    assert kubeconform.binary() == str(on_path)


def test_the_tool_folder_comes_last(tool_folder):
    local = _copy("kubeconform", tool_folder)
    assert kubeconform.binary() == str(local)


def test_without_go_the_error_names_the_version_and_the_install_command(tool_folder):
    with pytest.raises(go_builds.ToolMissing) as caught:
        kubeconform.binary()
    said = str(caught.value)
    assert "kubeconform v0.7.0 not found" in said
    assert f"looked at $KUBECONFORM, PATH, {tool_folder}" in said
    assert f"`GOBIN={tool_folder} go install github.com/yannh/kubeconform/cmd/kubeconform@v0.7.0`" in said
    assert "https://github.com/yannh/kubeconform/releases/tag/v0.7.0" in said
    assert "make" not in said


def test_colocate_check_without_kubeconform_is_exit_2_with_that_message(tool_folder, capsys):
    from colocate.cli import main

    assert main(["check", str(ROOT / "dist"), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("colocate: error: kubeconform v0.7.0 not found") and "go install" in err, err
    assert "Traceback" not in err and "make" not in err


def test_a_variable_naming_no_program_is_an_error(tool_folder, monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFORM", str(tmp_path / "nothing"))
    with pytest.raises(go_builds.ToolMissing, match=r"\$KUBECONFORM=.*nothing is not an executable file"):
        kubeconform.binary()


def test_a_renderer_of_another_version_on_path_is_passed_over(tool_folder, tmp_path, monkeypatch, capsys):
    """helm's version decides dist/'s bytes: a program on PATH named helm that does not say
    v3.14.4 (here the real kustomize) is skipped for the pinned one in the tool folder."""
    impostor = _copy("kustomize", tmp_path / "on-path", as_name="helm")
    monkeypatch.setenv("PATH", f"{impostor.parent}:{_BARE_PATH}")
    local = _copy("helm", tool_folder)
    (tool_folder / ".sim-helm.stamp").write_text(renderers.BUILDS[0].stamp() + "\n")
    assert renderers.binary("helm") == local
    err = capsys.readouterr().err
    assert f"colocate: warning: {impostor}: it says version " in err and f"colocate uses helm v3.14.4 from {tool_folder}" in err
    # Named explicitly, it is an error that says which version it is not.
    monkeypatch.setenv("HELM", str(impostor))
    with pytest.raises(go_builds.ToolMissing, match=r"\$HELM=.*: it says version .*, not v3\.14\.4"):
        renderers.binary("helm")


def test_the_pinned_renderer_on_path_is_used(tool_folder, tmp_path, monkeypatch):
    on_path = _copy("kustomize", tmp_path / "on-path")
    monkeypatch.setenv("PATH", f"{on_path.parent}:{_BARE_PATH}")
    assert renderers.binary("kustomize") == on_path


def test_a_renderer_in_the_tool_folder_needs_its_stamp(tool_folder):
    """A helm left there without the stamp of the pinned build is not trusted (and without Go, not rebuilt)."""
    _copy("helm", tool_folder)
    with pytest.raises(go_builds.ToolMissing, match=r"helm v3\.14\.4 not found"):
        renderers.binary("helm")


@pytest.mark.parametrize("writable", ["folder", "binary"])
def test_an_installed_colocate_runs_nothing_from_a_tool_folder_others_can_write(tool_folder, monkeypatch, writable):
    monkeypatch.setattr(go_builds, "CHECKOUT", False)
    local = _copy("kubeconform", tool_folder)
    assert kubeconform.binary() == str(local)
    target = tool_folder if writable == "folder" else local
    target.chmod(target.stat().st_mode | 0o022)
    with pytest.raises(go_builds.ToolMissing, match=rf"{re.escape(str(target))} is writable by other users: colocate "
                                                    "runs no program from there"):
        kubeconform.binary()


def test_scripts_bootstrap_pins_the_same_kubeconform():
    text = (ROOT / "scripts" / "bootstrap").read_text()
    assert re.search(r"^KUBECONFORM_VERSION=(\S+)", text, re.M).group(1) == kubeconform.BUILD.version


@pytest.mark.slow
def test_with_go_the_pinned_kubeconform_is_built_into_the_tool_folder(tool_folder, monkeypatch, capsys):
    """From the Go build cache the bootstrap warmed: seconds. Go is put back on PATH alone."""
    if _GO is None:
        pytest.fail("go not found: scripts/bootstrap needs it")
    # The machine runs one Go build at a time: wait for another one to end.
    deadline = time.monotonic() + 900
    while subprocess.run(["pgrep", "-f", "go (build|install)"], capture_output=True).returncode == 0:
        if time.monotonic() > deadline:
            pytest.fail("another Go build has run for 15 minutes")
        time.sleep(5)
    monkeypatch.setenv("PATH", f"{Path(_GO).parent}:{_BARE_PATH}")
    built = kubeconform.binary()
    assert built == str(tool_folder / "kubeconform")
    err = capsys.readouterr().err
    assert f"colocate: kubeconform: building kubeconform v0.7.0 into {tool_folder} with go install" in err, err
    version = subprocess.run([_GO, "version", "-m", built], capture_output=True, text=True).stdout
    assert re.search(r"\bmod\s+github.com/yannh/kubeconform\s+v0\.7\.0\b", version), version
