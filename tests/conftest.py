"""Shared fixtures: one synth per session."""
from __future__ import annotations

import signal

import pytest

# A test run started in the background (`make test &`, nohup, some CI wrappers) inherits SIGINT
# ignored; Python then installs no KeyboardInterrupt handler, in this process or in the
# colocate processes the tests start. The signal tests need what a terminal gives.
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def rendered() -> dict[str, str]:
    """dist/ as the current source renders it (path -> text), synthesized once."""
    from colocate import app

    return app.render_files(app.build())
