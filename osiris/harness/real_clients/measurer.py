"""Runs the real clients' sessions in one fixed scratch directory and measures them
(:class:`Measurer`): what :mod:`osiris.harness.real_clients.capture` and
:mod:`osiris.harness.real_clients.behaviour` drive."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from osiris.core.tokens import TokenCounter
from osiris.harness.real_clients.configs import install
from osiris.harness.real_clients.heads import Head, Neutraliser, measure_head
from osiris.harness.real_clients.model_script import Action, ScriptedTurns
from osiris.harness.real_clients.model_server import ModelServer
from osiris.harness.real_clients.run import (
    CLAUDE_CODE,
    CODEX,
    ClientRun,
    Tools,
    Workspace,
    run_client,
)

logger = logging.getLogger("osiris.harness.real_clients.capture")

PROMPT = "hi"
TRACE_MODELS = {CLAUDE_CODE: "claude-sonnet-4-5-20250929", CODEX: "gpt-5-codex"}
"""The models of the bundled traces (``datasets/traces/SOURCES.md``)."""


def model_args(client: str, model: str | None) -> tuple[str, ...]:
    """The command-line option choosing ``model`` (none: the client's default)."""
    if model is None:
        return ()
    return ("--model", model) if client == CLAUDE_CODE else ("-m", model)


class Measurer:
    """Runs sessions in one fixed scratch directory and measures them."""

    def __init__(self, tools: Tools, root: Path, counter: TokenCounter,
                 timeout_s: float = 180.0) -> None:
        self.tools = tools
        self.root = root
        self.counter = counter
        self.timeout_s = timeout_s
        self.workspace = Workspace(root / "session")
        repo = tools.root.parent
        # The scratch root and the checkout reach some prompts (the working directory,
        # the skills folder, a plugin's path): fixed stand-ins keep figures machine-free.
        self.neutralise = Neutraliser({str(self.workspace.root): "/scratch",
                                       str(repo): "/repo"})
        self.log_dir = root / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.runs: list[dict[str, Any]] = []

    def session(self, client: str, configuration: str, actions: Sequence[Action],
                *, model: str | None = None, prepare: Callable[[Workspace], None] | None = None,
                label: str, count_tokens: bool = True) -> ClientRun:
        """A fresh workspace with ``configuration`` installed, one session, its log."""
        workspace = self.workspace.reset(client)
        installed = install(configuration, client, workspace, self.tools)
        if prepare is not None:
            prepare(workspace)
        log = self.log_dir / f"{client}-{configuration}-{label}.jsonl"
        log.unlink(missing_ok=True)
        with ModelServer(ScriptedTurns(list(actions)), log_path=log,
                         count_tokens=count_tokens) as server:
            run = run_client(client, server, workspace, PROMPT, tools=self.tools,
                             timeout_s=self.timeout_s,
                             extra_args=(*installed.extra_args, *model_args(client, model)))
        # Wall times stay out of the data file (they differ run to run; a regenerated
        # file must equal the committed one); they go to the log.
        logger.info("%s %s %s: %.1fs", client, configuration, label, run.seconds)
        self.runs.append({"client": client, "configuration": configuration, "label": label,
                          "returncode": run.returncode,
                          "prompts": len(run.prompts),
                          "installed_by": [c.replace(str(self.tools.root.parent), "/repo")
                                           for c in installed.commands]})
        if run.timed_out or run.returncode != 0 or not run.prompts:
            raise RuntimeError(f"{label}: {run.describe()}")
        return run

    def head(self, client: str, configuration: str, model: str | None) -> Head:
        """The head of a ``hi`` session's first request."""
        run = self.session(client, configuration, [], model=model,
                           label=f"head-{model or 'default'}")
        return measure_head(run.prompts[0], PROMPT, self.counter, self.neutralise)
