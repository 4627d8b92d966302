"""Shared fixtures: one synth per session."""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

# The suite runs `colocate check` hundreds of times, and an installed wheel once: their verdict,
# schema and rule caches go to a folder of this run (one per xdist worker: each imports this
# file), removed at its end, not to the user's ~/.cache (docs/check-cache.md: the verdict cache
# never evicts; the suite filled it with gigabytes). Set before any test starts a process, so
# every subprocess inherits it; a COLOCATE_CACHE_DIR of the user's would win over XDG_CACHE_HOME.
SUITE_CACHE = Path(tempfile.mkdtemp(prefix="colocate-suite-cache-"))
os.environ["XDG_CACHE_HOME"] = str(SUITE_CACHE)
os.environ.pop("COLOCATE_CACHE_DIR", None)
atexit.register(shutil.rmtree, SUITE_CACHE, ignore_errors=True)


@pytest.fixture
def own_cache(tmp_path, monkeypatch) -> Path:
    """A cache folder of this test only (COLOCATE_CACHE_DIR, inherited by the processes it starts)."""
    folder = tmp_path / "user-cache"
    monkeypatch.setenv("COLOCATE_CACHE_DIR", str(folder))
    return folder

# A test run started in the background (`make test &`, nohup, some CI wrappers) inherits SIGINT
# ignored; Python then installs no KeyboardInterrupt handler, in this process or in the
# colocate processes the tests start. The signal tests need what a terminal gives.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def rendered() -> dict[str, str]:
    """dist/ as the current source renders it (path -> text), synthesized once."""
    from colocate import app

    return app.render_files(app.build())


_SIMULATION = Path(__file__).parent / "simulate"


def pytest_collection_modifyitems(items) -> None:
    """Every test under tests/simulate/ is marked ``simulate``."""
    for item in items:
        if item.path.is_relative_to(_SIMULATION):
            item.add_marker(pytest.mark.simulate)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` (`make test`), with every simulation module in one scope: one worker runs
    them one after another (each starts its own components; two at once would halve the CPU each
    has) while the other takes the other modules, each module on one worker (its fixtures made once).
    pytest-xdist's own ``loadgroup`` cannot do it under pytest 9: it renames items through
    ``item._nodeid``, which pytest 9 no longer reads."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SimulationTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "tests/simulate" if nodeid.startswith("tests/simulate/") else super()._split_scope(nodeid)

    return SimulationTogether(config, log)
