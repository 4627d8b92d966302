"""Test helpers: run the CLI and tools as subprocesses, with the environment `make` gives."""
from __future__ import annotations

import http.server
import importlib.util
import json
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType


from colocate import ROOT
from colocate.base import safe_yaml
from colocate.base.go_builds import environment

VENV_BIN = Path(sys.executable).parent
#: The suite reads dist/ again and again, with the package's libyaml loader.
yaml_load = safe_yaml.load
yaml_load_all = safe_yaml.load_all


def load_module(path: Path, name: str) -> ModuleType:
    """A script that is not in a package (scripts/, examples/), imported from its file."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(args: list[str], cwd: Path = ROOT, check: bool = False, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env={**environment(), **(env or {})}, capture_output=True, text=True)
    if check and proc.returncode:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def colocate(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    """The installed console script, exactly as a user runs it."""
    return run([str(VENV_BIN / "colocate"), *args], cwd=cwd, env=env)




#: Installed by scripts/bootstrap, or vendored upstream trees no test edits (9 MB): a copy of the
#: repository links them instead of copying.
_SHARED = (".venv", "node_modules", "bin", "vendor")


def repo_copy(dest: Path, *, with_dist: bool = True) -> Path:
    """The repository's tracked-looking tree at ``dest``, sharing the bootstrap's installs.
    ``python -m colocate.cli`` run there uses the copy's own package, config and jobs."""
    ignore = [".git", *_SHARED, "build", ".cache", "__pycache__", ".pytest_cache", "*.egg-info"]
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(*ignore, *([] if with_dist else ["dist"])))
    for shared in _SHARED:
        (dest / shared).symlink_to(ROOT / shared)
    return dest


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity; return stdout, raise on failure."""
    identity = ["-c", "user.name=colocate-test", "-c", "user.email=test@colocate.invalid",
                "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]
    return run(["git", *identity, *args], cwd=repo, check=True).stdout


def git_repo(dest: Path) -> Path:
    """A fresh git repository holding a copy of the repository, everything committed on main."""
    repo_copy(dest)
    (dest / ".gitignore").write_text((ROOT / ".gitignore").read_text())
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "base")
    return dest


def wait_ready(url: str, proc: subprocess.Popen, log: Path, name: str, timeout: float = 30) -> None:
    """Poll ``url``/-/ready (Prometheus and Alertmanager both serve it) until it answers 200; fail
    the test with the end of the server's log if the process dies or the time runs out."""
    import time
    import urllib.request

    import pytest

    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{name} did not become ready: {log.read_text()[-2000:]}")
        time.sleep(0.1)


def stop(proc: subprocess.Popen) -> None:
    """Terminate a server the test started; kill it if it does not exit within 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def chart_values(name: str, config=None) -> dict:
    """The values a rendered chart (charts/upstream.py: kube-prometheus-stack, dcgm-exporter,
    nvidia-device-plugin) is rendered with, for ``config`` (default: colocate.yaml)."""
    from colocate import app
    from colocate.charts.upstream import RenderedChart

    chart = next(c for c in app.build(config).charts if isinstance(c, RenderedChart) and c.row.name == name)
    return chart.row.source.values


@contextmanager
def json_server(answer):
    """An HTTP server on loopback answering GETs with ``answer(path, query)`` as JSON (bytes as
    they are: a body no JSON encoder writes)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            said = answer(url.path, urllib.parse.parse_qs(url.query))
            body = said if isinstance(said, bytes) else json.dumps(said).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def wait_for(what: str, done, timeout: float, state=None):
    """Poll ``done`` every half second until it answers something true, and return it; after
    ``timeout`` seconds fail, with ``state()`` appended when given (what the cluster holds now)."""
    deadline = time.monotonic() + timeout
    while True:
        got = done()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}" + (f"; now:\n{state()}" if state else ""))
        time.sleep(0.5)


def kubeconfig_for(url: str, folder: Path) -> Path:
    """A kubeconfig in ``folder`` that points a client at ``url`` (a loopback test server) with a token."""
    path = folder / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": url}}],
        "users": [{"name": "x", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}))
    return path
