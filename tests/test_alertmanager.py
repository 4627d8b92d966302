"""Alert routing: the Alertmanager config in dist/, checked and routed by amtool itself, and
run by a real Alertmanager that posts to local webhooks.

The config under test is what Alertmanager loads: the kube-prometheus-stack Application's
``alertmanager.config`` from dist/, merged into the chart's default the way Helm merges values.
bin/amtool and bin/alertmanager are built by scripts/bootstrap at the version the chart runs.
"""
from __future__ import annotations

import copy
import dataclasses
import http.server
import json
import re
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from colocate import ROOT, config as config_mod
from colocate.constructs import kube_prometheus_stack as kps
from colocate.mixin.colocation import ColocationMixin
from colocate.mixin.config import MixinConfig
from colocate.mixin.routing import CHAT, HEARTBEAT, NULL, PAGER, SECRETS_DIR, ReceiverSecret
from colocate.errors import InputError, PropError
from colocate.model.names import CRITICAL, INFO, SEVERITIES, WARNING
from colocate.simulate.local_cluster import free_port
from tests.helpers import chart_values, stop, wait_ready, yaml_load

DIST = ROOT / "dist"
AMTOOL = ROOT / "bin" / "amtool"
ALERTMANAGER = ROOT / "bin" / "alertmanager"
INSTALL_HINT = (f"run `make bootstrap` (builds amtool and alertmanager into bin/ with go install "
                f"github.com/prometheus/alertmanager/cmd/...@{kps.ALERTMANAGER_VERSION}; Debian's 0.25 "
                "rejects url_file)")
CHART_DEFAULT = ROOT / "tests" / "fixtures" / "alertmanager" / "kps-55.5.1-default-config.yaml"
APPLICATION = DIST / "apps" / "argocd" / "application.argocd.kube-prometheus-stack.yaml"


def helm_merge(chart: dict, user: dict) -> dict:
    """``user`` over ``chart`` as Helm 3 coalesces values (pkg/chartutil/coalesce.go): maps are
    merged key by key, anything else (lists included) is replaced, null deletes the key."""
    out = copy.deepcopy(chart)
    for key, value in user.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = helm_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _values() -> dict:
    return chart_values("kube-prometheus-stack")


def _shipped_config() -> dict:
    return _values()["alertmanager"]["config"]


def _effective_config() -> dict:
    return helm_merge(yaml_load(CHART_DEFAULT.read_text()), _shipped_config())


def _amtool(*args: str) -> subprocess.CompletedProcess:
    if not AMTOOL.is_file():
        pytest.fail(f"bin/amtool is missing: {INSTALL_HINT}")
    return subprocess.run([str(AMTOOL), *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def config_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("alertmanager") / "alertmanager.yaml"
    path.write_text(yaml.safe_dump(_effective_config(), sort_keys=False))
    return path


def _routes_to(config_file: Path, labels: dict[str, str]) -> str:
    proc = _amtool("config", "routes", "test", f"--config.file={config_file}",
                   *(f"{k}={v}" for k, v in sorted(labels.items())))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize("tool", [AMTOOL, ALERTMANAGER], ids=lambda t: t.name)
def test_the_tools_are_the_alertmanager_version_the_chart_runs(tool):
    assert re.search(rf'^ALERTMANAGER_VERSION={re.escape(kps.ALERTMANAGER_VERSION)}$',
                     (ROOT / "scripts" / "bootstrap").read_text(), re.M)
    if not tool.is_file():
        pytest.fail(f"bin/{tool.name} is missing: {INSTALL_HINT}")
    built = subprocess.run(["go", "version", "-m", str(tool)], capture_output=True, text=True).stdout
    assert re.search(rf"\bmod\s+github\.com/prometheus/alertmanager\s+{re.escape(kps.ALERTMANAGER_VERSION)}\b", built)


def test_helm_merge_with_the_chart_default_changes_nothing():
    # Every key the chart's default config sets, ours sets too: Alertmanager loads exactly ours.
    assert _effective_config() == _shipped_config()


def test_amtool_check_config_passes(config_file):
    proc = _amtool("check-config", str(config_file))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout and " - 4 inhibit rules" in proc.stdout and " - 4 receivers" in proc.stdout


def test_amtool_check_config_rejects_a_broken_route(tmp_path):
    # Proves the check reads what we wrote: a route to a receiver that does not exist fails.
    broken = _effective_config()
    broken["route"]["routes"][1]["receiver"] = "nobody"
    path = tmp_path / "alertmanager.yaml"
    path.write_text(yaml.safe_dump(broken))
    proc = _amtool("check-config", str(path))
    assert proc.returncode != 0 and 'undefined receiver "nobody"' in proc.stdout


@pytest.mark.parametrize("severity, receiver", [(CRITICAL, PAGER), (WARNING, CHAT), (INFO, NULL), ("none", NULL)])
def test_each_severity_reaches_its_receiver(config_file, severity, receiver):
    labels = {"alertname": "KubeAPIDown", "namespace": "monitoring", "severity": severity}
    assert _routes_to(config_file, labels) == receiver


def test_watchdog_beats_to_the_dead_mans_switch_whatever_its_severity(config_file):
    assert _routes_to(config_file, {"alertname": "Watchdog", "severity": CRITICAL}) == HEARTBEAT
    route = next(r for r in _effective_config()["route"]["routes"] if r["receiver"] == HEARTBEAT)
    assert route["repeat_interval"] == route["group_interval"] == "1m" and route["group_wait"] == "0s"


def test_without_a_heartbeat_key_the_watchdog_goes_nowhere():
    config = ColocationMixin(MixinConfig.from_cluster(config_mod.load().cluster)).alertmanager_config(
        ReceiverSecret("receivers", heartbeat_url_key=None))
    assert config["route"]["routes"][0]["receiver"] == NULL
    assert HEARTBEAT not in {r["name"] for r in config["receivers"]}


def test_every_mixin_alert_reaches_the_receiver_of_its_severity(config_file):
    mixin = ColocationMixin(MixinConfig.from_cluster(config_mod.load().cluster))
    expected = {CRITICAL: PAGER, WARNING: CHAT}
    assert mixin.alerts
    for alert in mixin.alerts:
        labels = {"alertname": alert["alert"], "namespace": "training", **alert["labels"]}
        assert _routes_to(config_file, labels) == expected.get(labels["severity"], NULL), alert["alert"]


def test_a_critical_alert_inhibits_the_warnings_of_the_same_alert_and_namespace():
    rules = _shipped_config()["inhibit_rules"]
    critical = [r for r in rules if r.get("source_matchers") == [f'severity = "{CRITICAL}"']]
    assert len(critical) == 1
    rule = critical[0]
    assert rule["target_matchers"] == [f'severity =~ "{WARNING}|{INFO}"']
    assert sorted(rule["equal"]) == ["alertname", "namespace"]
    # Each severity mutes the lower ones (the chart's default), so none is left out of the order.
    assert [r["source_matchers"][0] for r in rules[:len(SEVERITIES) - 1]] == [
        f'severity = "{s}"' for s in SEVERITIES[:-1]]


def test_receiver_credentials_are_files_of_the_mounted_secret_never_values():
    values = _values()
    secrets = values["alertmanager"]["alertmanagerSpec"]["secrets"]
    name = config_mod.load().monitoring.alertmanager_secret.name
    assert secrets == [name]
    text = yaml.safe_dump(values["alertmanager"]["config"])
    assert not re.search(r"^\s*(url|credentials|api_url|routing_key|token):", text, re.M)
    files = re.findall(r"_file: (\S+)", text)
    assert len(files) == 4
    assert all(f.startswith(f"{SECRETS_DIR}/{name}/") for f in files), files


def test_chat_without_a_token_sends_no_authorization():
    mixin = ColocationMixin(MixinConfig.from_cluster(config_mod.load().cluster))
    config = mixin.alertmanager_config(ReceiverSecret("am", chat_token_key=None))
    chat = next(r for r in config["receivers"] if r["name"] == CHAT)["webhook_configs"][0]
    assert chat == {"url_file": f"{SECRETS_DIR}/am/chat-url", "send_resolved": True}


@pytest.mark.parametrize("secret, prop", [
    (ReceiverSecret("Receivers"), "name"),
    (ReceiverSecret("am", paging_url_key="a/b"), "paging_url_key"),
    (ReceiverSecret("am", chat_token_key=""), "chat_token_key"),
    (ReceiverSecret("am", chat_url_key="paging-url"), "chat_url_key"),
])
def test_a_bad_receiver_secret_is_refused_naming_the_prop(secret, prop):
    mixin = ColocationMixin(MixinConfig.from_cluster(config_mod.load().cluster))
    with pytest.raises(PropError) as err:
        mixin.alertmanager_config(secret)
    assert err.value.prop == prop


def test_colocate_yaml_requires_the_secret_and_takes_a_null_token(tmp_path):
    data = yaml_load(config_mod.default_path().read_text())
    data["monitoring"]["alertmanagerSecret"] = {"name": "am", "chatTokenKey": None}
    path = tmp_path / "colocate.yaml"
    path.write_text(yaml.safe_dump(data))
    assert config_mod.load(path).monitoring.alertmanager_secret == config_mod.AlertmanagerSecret(
        "am", "paging-url", "chat-url", None)
    del data["monitoring"]["alertmanagerSecret"]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError, match="alertmanagerSecret"):
        config_mod.load(path)


def test_the_secret_name_comes_from_colocate_yaml():
    config = config_mod.load()
    renamed = dataclasses.replace(config, monitoring=dataclasses.replace(
        config.monitoring, alertmanager_secret=config_mod.AlertmanagerSecret("team-receivers")))
    alertmanager = chart_values("kube-prometheus-stack", renamed)["alertmanager"]
    assert alertmanager["alertmanagerSpec"]["secrets"] == ["team-receivers"]
    assert f"{SECRETS_DIR}/team-receivers/paging-url" in yaml.safe_dump(alertmanager["config"])


class _Webhooks(http.server.ThreadingHTTPServer):
    """Records every POST: (path, Authorization header, alerts as (alertname, severity))."""

    def __init__(self):
        self.received: list[tuple[str, str | None, list[tuple[str, str]]]] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(handler):
                body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
                alerts = [(a["labels"]["alertname"], a["labels"]["severity"]) for a in body["alerts"]]
                self.received.append((handler.path, handler.headers.get("Authorization"), alerts))
                handler.send_response(200)
                handler.end_headers()

            def log_message(handler, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def test_a_real_alertmanager_pages_the_critical_and_mutes_its_warning(tmp_path):
    """The shipped config in Alertmanager itself: URLs and token read from the Secret's files
    (here a temporary folder in place of the mount), the critical alert posted to the pager,
    the warning of the same alert and namespace inhibited, another warning posted to chat, the
    Watchdog posted to the dead man's switch."""
    if not ALERTMANAGER.is_file():
        pytest.fail(f"bin/alertmanager is missing: {INSTALL_HINT}")
    secret = config_mod.load().monitoring.alertmanager_secret
    hooks = _Webhooks()
    threading.Thread(target=hooks.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{hooks.server_address[1]}"
    mount = tmp_path / "secret"
    mount.mkdir()
    # Trailing newlines as an editor would leave them: Alertmanager trims both files.
    (mount / secret.paging_url_key).write_text(f"{base}/pager\n")
    (mount / secret.chat_url_key).write_text(f"{base}/chat\n")
    (mount / secret.chat_token_key).write_text("t0ken\n")
    (mount / secret.heartbeat_url_key).write_text(f"{base}/heartbeat\n")
    config = _effective_config()
    # Only the waits shrink, so the test takes seconds.
    config["route"].update(group_wait="1s", group_interval="1s")
    text = yaml.safe_dump(config).replace(f"{SECRETS_DIR}/{secret.name}", str(mount))
    (tmp_path / "alertmanager.yaml").write_text(text)
    port = free_port()
    log = (tmp_path / "alertmanager.log").open("w")
    proc = subprocess.Popen([str(ALERTMANAGER), f"--config.file={tmp_path / 'alertmanager.yaml'}",
                             f"--storage.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
                             "--cluster.listen-address="], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, tmp_path / "alertmanager.log", "alertmanager")
        alerts = [{"labels": {"alertname": name, "namespace": "training", "severity": severity}}
                  for name, severity in [("ColocateNodeCPUHigh", CRITICAL), ("ColocateNodeCPUHigh", WARNING),
                                         ("ColocateTrainingPodPending", WARNING), ("Watchdog", "none")]]
        request = urllib.request.Request(f"{url}/api/v2/alerts", data=json.dumps(alerts).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=10) as resp:
            assert resp.status == 200
        deadline = time.monotonic() + 20
        while len(hooks.received) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # a muted warning, had it been sent, would arrive with the next flush
    finally:
        stop(proc)
        log.close()
        hooks.shutdown()
    assert sorted(hooks.received) == [
        ("/chat", "Bearer t0ken", [("ColocateTrainingPodPending", WARNING)]),
        ("/heartbeat", None, [("Watchdog", "none")]),
        ("/pager", None, [("ColocateNodeCPUHigh", CRITICAL)]),
    ], (tmp_path / "alertmanager.log").read_text()[-2000:]
