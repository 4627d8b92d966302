"""dist/'s layout has one owner (colocate/base/layout.py): the files synth writes are where it says, and
the messages that tell the user where NodePool descriptions are name the file synth writes."""
from __future__ import annotations

import pytest

from colocate import ROOT, config as config_mod
from colocate.base import layout
from colocate.errors import InputError
from colocate.model import pool_facts
from tests.helpers import colocate

DIST = ROOT / "dist"
POOLS = [pool.name for pool in config_mod.load().cluster.pools]


@pytest.mark.parametrize("pool", POOLS)
def test_synth_writes_each_pools_description_where_the_layout_says(pool):
    assert layout.nodepool_path(pool) == f"nodes/{pool}/nodepool.{pool}.yaml"
    assert (DIST / layout.nodepool_path(pool)).is_file()


def test_the_index_is_where_the_layout_says():
    assert (DIST / layout.INDEX_FILE).is_file()
    assert f"apiVersion: {layout.INDEX_API_VERSION}" in (DIST / layout.INDEX_FILE).read_text()


def test_a_malformed_description_names_the_file_synth_writes():
    with pytest.raises(InputError) as raised:
        pool_facts.from_documents([("cluster.yaml", {"kind": "NodePool", "metadata": {"name": "mixed"}, "spec": {}})])
    assert f"dist/{layout.nodepool_path('<pool>')}" in str(raised.value)
    assert "dist/nodes/<pool>/nodepool.<pool>.yaml" in str(raised.value)


def test_check_without_descriptions_names_the_file_synth_writes(tmp_path):
    empty = tmp_path / "no-pools"
    empty.mkdir()
    proc = colocate("check", "dist/apps/online", "--cluster", str(empty))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"dist/{layout.nodepool_path('<pool>')}" in proc.stdout + proc.stderr


def test_simulate_reads_the_pools_check_reads_from_the_files_synth_writes(tmp_path):
    from colocate.checker.context import cluster_pools
    from colocate.simulate import nodes

    assert nodes.read_pools(DIST) == cluster_pools([], DIST / layout.NODES_FOLDER)[0]
    assert [p.name for p in nodes.read_pools(DIST)] == sorted(POOLS)
    with pytest.raises(InputError) as raised:
        nodes.read_pools(tmp_path)
    assert layout.nodepool_path("<pool>") in str(raised.value)
