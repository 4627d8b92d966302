"""Alertmanager routing of the mixin's alerts (and the chart's), by severity: the config
kube-prometheus-stack writes into Alertmanager's Secret (``alertmanager.config``).

Helm merges ``alertmanager.config`` into the chart's default map by map (lists are replaced), so
this config sets every key the default sets: what Alertmanager loads is exactly this.

Receiver credentials stay out of git: the receivers read them from files (``url_file``,
``credentials_file``, Alertmanager 0.26) in an existing Secret that prometheus-operator mounts
at ``/etc/alertmanager/secrets/<name>/`` (``alertmanagerSpec.secrets``). docs/monitoring.md.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from colocate.mixin.config import Selectors
from colocate.errors import PropError
from colocate.model.names import CRITICAL, SEVERITIES, WARNING
from colocate.model.validate import check_dns_label

#: Where prometheus-operator v0.70.0 mounts each Secret of ``spec.secrets`` (pkg/alertmanager/statefulset.go).
SECRETS_DIR = "/etc/alertmanager/secrets"
#: Receivers: who is paged, who is told in chat, the dead man's switch, and nobody.
PAGER, CHAT, HEARTBEAT, NULL = "pager", "chat", "heartbeat", "null"
#: The receiver of each severity that notifies someone. Every other alert goes to NULL: info,
#: and the chart's ``severity: none`` alerts (Watchdog, InfoInhibitor).
SEVERITY_RECEIVERS = {CRITICAL: PAGER, WARNING: CHAT}
#: The chart's always-firing alert. It goes to HEARTBEAT, a dead man's switch outside the
#: cluster that pages when the notifications stop (Prometheus, Alertmanager or their network
#: down), re-sent every HEARTBEAT_INTERVAL; to NULL only when no heartbeat URL is configured.
WATCHDOG = "Watchdog"
HEARTBEAT_INTERVAL = "1m"
#: The chart's alert that fires while a namespace has only info alerts, to mute them (rules-1.14/general.rules.yaml).
INFO_INHIBITOR = "InfoInhibitor"
#: Secret data keys as the API server accepts them.
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


@dataclass(frozen=True)
class ReceiverSecret:
    """The existing Secret with the receivers' credentials (never in git), in Alertmanager's
    namespace; ``kubectl create secret generic`` with these keys (docs/monitoring.md)."""

    #: Secret name.
    name: str
    #: Key holding the webhook URL critical alerts are posted to (the pager).
    paging_url_key: str = "paging-url"
    #: Key holding the webhook URL warning alerts are posted to (the chat).
    chat_url_key: str = "chat-url"
    #: Key holding the bearer token sent with chat notifications; None when the chat webhook
    #: needs none (its URL is the secret).
    chat_token_key: str | None = "chat-token"
    #: Key holding the dead man's switch's URL the Watchdog is posted to; None: no switch, the
    #: Watchdog goes nowhere (and nobody learns that alerting is down).
    heartbeat_url_key: str | None = "heartbeat-url"

    def path(self, key: str) -> str:
        """Where Alertmanager reads ``key`` of this Secret."""
        return f"{SECRETS_DIR}/{self.name}/{key}"

    def validate(self) -> None:
        where = f"ReceiverSecret {self.name!r}"
        check_dns_label(where, "name", self.name)
        keys = {"paging_url_key": self.paging_url_key, "chat_url_key": self.chat_url_key}
        if self.chat_token_key is not None:
            keys["chat_token_key"] = self.chat_token_key
        if self.heartbeat_url_key is not None:
            keys["heartbeat_url_key"] = self.heartbeat_url_key
        for prop, key in keys.items():
            if not isinstance(key, str) or len(key) > 253 or not _SECRET_KEY.match(key):
                raise PropError(where, prop, f"{key!r} is not a Secret key (letters, digits, '-', '_', '.')")
        if len(set(keys.values())) != len(keys):
            raise PropError(where, "chat_url_key", "two receiver credentials share a key")


def alertmanager_config(guard: Selectors, secret: ReceiverSecret) -> dict[str, Any]:
    """alertmanager.yaml: critical pages, warning goes to chat, the rest to nobody; a more
    severe alert mutes the less severe ones of the same alert and namespace."""
    secret.validate()
    c = guard.config
    chat: dict[str, Any] = {"url_file": secret.path(secret.chat_url_key), "send_resolved": True}
    if secret.chat_token_key is not None:
        chat["http_config"] = {"authorization": {"credentials_file": secret.path(secret.chat_token_key)}}
    watchdog: dict[str, Any] = {"receiver": NULL, "matchers": [f'alertname = "{WATCHDOG}"']}
    receivers: list[dict[str, Any]] = [{"name": NULL}]
    if secret.heartbeat_url_key is not None:
        # Sent at once and then every interval, so the switch hears a steady beat.
        watchdog.update(receiver=HEARTBEAT, group_wait="0s", group_interval=HEARTBEAT_INTERVAL,
                        repeat_interval=HEARTBEAT_INTERVAL)
        receivers.append({"name": HEARTBEAT, "webhook_configs": [{
            "url_file": secret.path(secret.heartbeat_url_key), "send_resolved": False}]})
    return {
        "global": {"resolve_timeout": "5m"},
        "route": {
            "receiver": NULL, "group_by": list(c.group_by), "group_wait": c.group_wait,
            "group_interval": c.group_interval, "repeat_interval": c.repeat_interval,
            "routes": [watchdog] + [
                {"receiver": receiver, "matchers": [f'severity = "{severity}"']}
                for severity, receiver in SEVERITY_RECEIVERS.items()],
        },
        # The chart's default rules, generated from the severity order: each severity mutes
        # every lower one with the same alertname and namespace; InfoInhibitor mutes info
        # alerts and is itself muted (it exists only to inhibit).
        "inhibit_rules": [
            *({"source_matchers": [f'severity = "{severity}"'],
               "target_matchers": [f'severity =~ "{"|".join(SEVERITIES[i + 1:])}"'],
               "equal": ["namespace", "alertname"]} for i, severity in enumerate(SEVERITIES[:-1])),
            {"source_matchers": [f'alertname = "{INFO_INHIBITOR}"'],
             "target_matchers": [f'severity = "{SEVERITIES[-1]}"'], "equal": ["namespace"]},
            {"target_matchers": [f'alertname = "{INFO_INHIBITOR}"']},
        ],
        "receivers": [
            *receivers,
            {"name": PAGER, "webhook_configs": [{"url_file": secret.path(secret.paging_url_key),
                                                 "send_resolved": True}]},
            {"name": CHAT, "webhook_configs": [chat]},
        ],
        # The chart's: templateFiles land next to the config.
        "templates": ["/etc/alertmanager/config/*.tmpl"],
    }
