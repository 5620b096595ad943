"""mini-swe-agent with OSIRIS: every observation through OSIRIS, prune advice applied to
the agent's own messages. Install with ``pip install 'mini-swe-agent>=2.4.6,<3'`` and
select the agent class in mini-swe-agent's configuration, for example::

    mini -c mini.yaml -c agent.agent_class=osiris.clients.minisweagent.OsirisAgent

(:class:`OsirisInteractiveAgent` keeps ``mini``'s confirmation modes.) A command's
output over OSIRIS's engagement threshold enters the history as a preview and the
``osiris recall`` command that reads the rest; an output prune advice names later gets
a one-line stub naming the same command, and a drop receipt. The model acts only
through bash, so recall is a shell command: it needs the environment to run
``osiris`` on the same home, which the local environment does (the agent puts the
``osiris`` script's directory on its ``PATH`` and the home in ``OSIRIS_HOME``);
in a container it does not, and the stubs would point at nothing there.

Options (``-c agent.osiris_home=…``): ``osiris_home``, the OSIRIS home (default
``OSIRIS_HOME``, else ``~/.osiris``). Anything OSIRIS cannot do (a busy or broken home,
an output too big to store) leaves the observation as mini-swe-agent made it, with a
warning in the log: the run never stops because of OSIRIS.
"""

from __future__ import annotations

import logging
import sysconfig
from pathlib import Path
from typing import Any

from minisweagent.agents.default import AgentConfig, DefaultAgent
from minisweagent.agents.interactive import InteractiveAgent, InteractiveAgentConfig

from osiris.agent import AgentSession
from osiris.environ import process_environment

log = logging.getLogger(__name__)


class OsirisAgentConfig(AgentConfig):
    """mini-swe-agent's agent options, and OSIRIS's."""

    osiris_home: str | None = None
    """The OSIRIS home (default: ``OSIRIS_HOME``, else ``~/.osiris``)."""


class OsirisInteractiveAgentConfig(InteractiveAgentConfig):
    """``mini``'s interactive options, and OSIRIS's."""

    osiris_home: str | None = None
    """The OSIRIS home (default: ``OSIRIS_HOME``, else ``~/.osiris``)."""


class _WithOsiris:
    """What both agent classes add: the OSIRIS session of a run, and the two steps."""

    osiris: AgentSession | None = None

    def run(self, task: str = "", **kwargs: Any) -> dict[str, Any]:
        self.osiris = _open_session(task, self.config.osiris_home)  # type: ignore[attr-defined]
        if self.osiris is not None:
            _share_home(self.env, self.osiris)  # type: ignore[attr-defined]
        try:
            return super().run(task, **kwargs)  # type: ignore[misc,no-any-return]
        finally:
            if self.osiris is not None:
                self.osiris.close()
                self.osiris = None

    def execute_actions(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """mini-swe-agent's step, with each output observed by OSIRIS first and the
        newest prune advice applied to the history after."""
        actions = message.get("extra", {}).get("actions", [])
        outputs = [self.env.execute(action) for action in actions]  # type: ignore[attr-defined]
        if self.osiris is None:
            return self.execute_actions_of(message, outputs)
        usage = (message.get("extra", {}).get("response") or {}).get("usage")
        shown, refs = [], []
        for n, (action, output) in enumerate(zip(actions, outputs, strict=False)):
            raw = str(output.get("output") or "")
            seen = self.osiris.observe(raw, command=str(action.get("command", "")),
                                       failed=output.get("returncode") != 0,
                                       usage=usage if n == 0 and isinstance(usage, dict)
                                       else None)
            shown.append({**output, "output": seen.text} if seen.stored else output)
            refs.append((seen.ref, raw))
        added = self.execute_actions_of(message, shown)
        for observation, (ref, raw) in zip(added, refs, strict=False):
            extra = observation.setdefault("extra", {})
            extra["raw_output"] = raw  # the trajectory file keeps the whole output
            if ref is not None:
                extra["osiris_ref"] = ref
        self.osiris.apply(self.messages)  # type: ignore[attr-defined]
        return added

    def execute_actions_of(self, message: dict[str, Any], outputs: list[dict[str, Any]],
                           ) -> list[dict[str, Any]]:
        """Add the observation messages of ``outputs`` (what mini-swe-agent's own
        ``execute_actions`` does once the actions ran)."""
        return self.add_messages(  # type: ignore[attr-defined,no-any-return]
            *self.model.format_observation_messages(  # type: ignore[attr-defined]
                message, outputs, self.get_template_vars()))  # type: ignore[attr-defined]


class OsirisAgent(_WithOsiris, DefaultAgent):
    """mini-swe-agent's ``DefaultAgent`` with OSIRIS (batch runs, ``--agent-class``)."""

    def __init__(self, model: Any, env: Any, *, config_class: type = OsirisAgentConfig,
                 **kwargs: Any) -> None:
        super().__init__(model, env, config_class=config_class, **kwargs)


class OsirisInteractiveAgent(_WithOsiris, InteractiveAgent):
    """``mini``'s ``InteractiveAgent`` (confirmation modes) with OSIRIS."""

    def __init__(self, model: Any, env: Any, *,
                 config_class: type = OsirisInteractiveAgentConfig, **kwargs: Any) -> None:
        super().__init__(model, env, config_class=config_class, **kwargs)  # type: ignore[no-untyped-call]


def _open_session(task: str, home: str | None) -> AgentSession | None:
    objective = " ".join(task.split())[:200] or "mini-swe-agent run"
    try:
        return AgentSession(objective, home=home)
    except Exception as exc:  # the run goes on without OSIRIS
        log.warning("osiris: not in this run (outputs pass unchanged): %s: %s",
                    type(exc).__name__, exc)
        return None


def _share_home(env: Any, session: AgentSession) -> None:
    """Let the agent's shell run ``osiris recall`` on this home: the environment's
    variables (mini-swe-agent's local environment adds them to every command)."""
    variables = getattr(getattr(env, "config", None), "env", None)
    if not isinstance(variables, dict):
        log.warning("osiris: %s has no environment variables to set: `osiris recall` "
                    "must find the home %s by itself", type(env).__name__,
                    session.settings.home)
        return
    variables.setdefault("OSIRIS_HOME", str(session.settings.home))
    scripts = sysconfig.get_path("scripts")
    path = variables.get("PATH") or process_environment().get("PATH", "")
    if scripts and (Path(scripts) / "osiris").exists() and scripts not in path.split(":"):
        variables["PATH"] = f"{scripts}:{path}" if path else scripts


__all__ = ["OsirisAgent", "OsirisAgentConfig", "OsirisInteractiveAgent",
           "OsirisInteractiveAgentConfig"]
