"""The TOML writer: what it writes parses back (tomllib) to the same document, byte-stable."""
from __future__ import annotations

import tomllib

import pytest

from colocate.base import toml_writer


def test_a_nested_document_round_trips_with_sorted_keys_and_quoted_dotted_keys():
    doc = {"version": 2, "plugins": {"io.containerd.grpc.v1.cri": {
        "sandbox_image": "harbor.example.com/k8s/pause:3.9",
        "registry": {"config_path": "/etc/containerd/certs.d"},
        "containerd": {"runtimes": {"runc": {"options": {"SystemdCgroup": True}, "runtime_type": "io.containerd.runc.v2"}}},
    }}, "empty": {}}
    text = toml_writer.dumps(doc)
    assert tomllib.loads(text) == doc
    assert text == toml_writer.dumps(dict(reversed(list(doc.items()))))  # key order does not matter
    assert '[plugins."io.containerd.grpc.v1.cri".registry]' in text
    # A table with only sub-tables gets no header of its own; an empty one does, or it would vanish.
    assert '[plugins]' not in text and "[empty]" in text


def test_strings_lists_and_escapes_survive():
    doc = {"s": 'a "quoted" \\ back\tslash\nnewline \x7f é', "caps": ["pull", "resolve"], "n": 0, "f": False,
           "host": {"https://harbor.example.com/v2/quay": {"override_path": True}}}
    assert tomllib.loads(toml_writer.dumps(doc)) == doc


def test_the_comment_comes_first_and_every_line_is_a_toml_comment():
    text = toml_writer.dumps({"server": "https://quay.io"}, "line one\nline two")
    assert text.splitlines()[:2] == ["# line one", "# line two"]
    assert tomllib.loads(text) == {"server": "https://quay.io"}


@pytest.mark.parametrize("doc", [{"x": 1.5}, {"x": None}, {"": 1}, {"x": [{"a": 1}]}])
def test_values_the_containerd_files_never_need_are_refused(doc):
    with pytest.raises(TypeError):
        toml_writer.dumps(doc)
