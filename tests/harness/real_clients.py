"""What the tests that drive the real Claude Code and Codex binaries share."""

from __future__ import annotations

import os

import pytest

from osiris.harness.real_clients.run import Tools
from tests.conftest import REPO

TOOLS = Tools.of_repo(REPO)


def require_client(client: str) -> None:
    """Skip without the client's binary (``.ci/install-node-tools``), except in CI
    (TEST_REQUIRE_NODE_TOOLS=1), where its absence fails the test."""
    if not TOOLS.missing([client]):
        return
    message = f"{TOOLS.client(client)} not installed: run .ci/install-node-tools"
    if os.environ.get("TEST_REQUIRE_NODE_TOOLS") == "1":
        pytest.fail(message)
    pytest.skip(message)
