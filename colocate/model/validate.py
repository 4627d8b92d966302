"""Name and label checks as the API server applies them, so a bad value fails at synth and not
at apply time. Plain functions: the model, the constructs and the checker share them.
"""
from __future__ import annotations

import re
from typing import Mapping

from colocate.errors import PropError
from colocate.model.scheduling import ImageRef

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: A DNS-1035 label: a DNS-1123 label that starts with a letter (apimachinery validation.go
#: IsDNS1035Label); what training-operator v1.7.0 requires of a TFJob's name.
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def check_dns_label(construct: str, prop: str, value: str) -> None:
    if not isinstance(value, str) or len(value) > 63 or not DNS_LABEL.match(value):
        raise PropError(construct, prop, f"{value!r} is not a DNS-1123 label "
                        "(lower-case letters, digits and '-', at most 63 characters)")


def check_dns1035_label(construct: str, prop: str, value: str, why: str) -> None:
    if not isinstance(value, str) or len(value) > 63 or not DNS_1035_LABEL.match(value):
        raise PropError(construct, prop, f"{value!r} is not a DNS-1035 label (lower-case letters, digits and '-', "
                        f"starting with a letter, at most 63 characters): {why}")


def check_labels(construct: str, prop: str, labels: Mapping[str, str]) -> None:
    """Label keys and values as the API server validates them (cdk8s does not, cdk8s#1338)."""
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix))) or len(name) > 63 \
                or not _LABEL_NAME.match(name):
            raise PropError(construct, f"{prop}[{key!r}]", "is not a valid label key")
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            raise PropError(construct, f"{prop}[{key!r}]", f"value {value!r} is not a valid label value")


def check_image(construct: str, prop: str, image: str, *, mirror_path: bool = True, example: str = "") -> None:
    """A pinned image (a tag other than ``latest``, or a digest): the kubelet's IfNotPresent
    never re-pulls a moving tag. With ``mirror_path``, also ``registry/project/name``."""
    ref = ImageRef.parse(image or "")
    if ref.pinned and (ref.has_registry_path or not mirror_path):
        return
    need = "a registry path with a pinned tag" if mirror_path else "a pinned tag (not latest), or a digest"
    raise PropError(construct, prop, f"{image!r} must be {need}" + (f", e.g. {example}" if example else ""))


def check_pull_secret(construct: str, prop: str, name: str | None) -> None:
    """An image pull Secret's name (a DNS subdomain, as every Secret name), or None."""
    if name is not None and (not isinstance(name, str) or len(name) > 253 or not DNS_SUBDOMAIN.match(name)):
        raise PropError(construct, prop, f"{name!r} is not a Secret name (a DNS-1123 subdomain)")


def pull_secrets(name: str | None) -> dict:
    """The pod spec's ``imagePullSecrets`` for ``name``, or nothing: the kubelet sends the Secret's
    credentials for the registry they name (Harbor's private projects)."""
    return {"imagePullSecrets": [{"name": name}]} if name else {}


def check_required_labels(construct: str, prop: str, labels: Mapping[str, str], why: str) -> None:
    """Labels that must be given (an empty selector selects everything, or nothing), and valid."""
    if not labels:
        raise PropError(construct, prop, f"is empty: {why}")
    check_labels(construct, prop, labels)
