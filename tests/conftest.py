"""Shared fixtures: one synth per session."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def rendered() -> dict[str, str]:
    """dist/ as the current source renders it (path -> text), synthesized once."""
    from colocate import app

    return app.render_files(app.build())
