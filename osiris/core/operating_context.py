"""The operating context (SPEC §7, seed 004): the doctrine OSIRIS gives every client,
and the project-id registry it enforces.

* Soft layer: :data:`DOCTRINE` plus the operator's ``[instructions] summary``,
  injected verbatim as the MCP ``instructions``. Fixed for the life of a process.
* Hard layer: ``project_id`` values are checked against ``[registry] project_ids``
  with ``enforce = off | warn | reject`` (reject refuses writes only; reads warn);
  the sentinel ``"@auto"`` resolves through ``[defaults]`` by agent id. Explicit
  values are never rewritten.

The sidecar file (``$OSIRIS_HOME/operating-context.toml``) is the operator's: there
is no write path over MCP. This module parses and applies it; reading the file and
noticing edits is the engine's job.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any

from osiris.errors import PolicyError

AUTO = "@auto"
ENFORCE_MODES = ("off", "warn", "reject")
SUMMARY_SOFT_LIMIT = 1_500
SUMMARY_HARD_WARNING = 3_000
_TOP_KEYS = {"version", "context_revision", "instructions", "registry", "defaults",
             "doctrine"}

DOCTRINE = """\
OSIRIS keeps your task state and big tool output outside your context.
1. Start a task with osiris_plan(mode="start"). Keep the manifest it returns at the END \
of your context (never in a cached prefix); replace it whenever an answer carries a new one.
2. Pass the manifest's SEAL line to osiris_observe(seal=...) each turn: drift is reported \
at once.
3. When an answer shows a ref (mem://...), get only the part you need with \
osiris_recall(ref, op="grep"|"range"|"outline"|...) instead of re-reading the file or \
re-running the command. Never re-send output you already have to OSIRIS.
4. Call osiris_precheck before risky or repeated actions and follow its verdict.
5. After a crash or a context reset: osiris_plan(mode="resume", task_id=...)."""
"""The MCP ``instructions`` (clients show them to the model verbatim): only what saves
tokens in a client that keeps its own history. Handing output to ``osiris_observe`` and
evicting payloads are for agent loops that own their history (the Python API)."""


class OperatingContextError(ValueError):
    """A sidecar that cannot be used."""


@dataclass(frozen=True)
class OperatingContext:
    """A parsed sidecar."""

    version: int = 1
    context_revision: str = ""
    summary: str = ""
    project_ids: tuple[str, ...] | None = None
    enforce: str = "warn"
    defaults: dict[str, str] = field(default_factory=dict)
    doctrine: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProjectResolution:
    """What happened to a ``project_id`` argument."""

    project_id: str | None
    resolved_from_auto: bool = False
    warning: str | None = None

    def facts(self) -> dict[str, Any]:
        """Fields added to an answer (SPEC §7: the caller always sees what happened)."""
        out: dict[str, Any] = {}
        if self.resolved_from_auto:
            out["resolved_project_id"] = self.project_id
        if self.warning:
            out["operating_context_warning"] = self.warning
        return out


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise OperatingContextError(f"{where} must be a string")
    return value


def parse_operating_context(text: str) -> OperatingContext:
    """Parse a sidecar; OperatingContextError names what is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise OperatingContextError(f"not valid TOML: {exc}") from None
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise OperatingContextError(f"unknown key(s) {sorted(unknown)}; allowed: "
                                    + ", ".join(sorted(_TOP_KEYS)))
    version = data.get("version", 1)
    if version != 1:
        raise OperatingContextError(f"version {version!r} is not supported (use 1)")
    instructions = data.get("instructions", {})
    if not isinstance(instructions, dict):
        raise OperatingContextError("[instructions] must be a table")
    registry = data.get("registry", {})
    if not isinstance(registry, dict):
        raise OperatingContextError("[registry] must be a table")
    project_ids = registry.get("project_ids")
    if project_ids is not None and (not isinstance(project_ids, list)
                                    or not all(isinstance(p, str) for p in project_ids)):
        raise OperatingContextError("registry.project_ids must be a list of strings")
    enforce = registry.get("enforce", "warn")
    if enforce not in ENFORCE_MODES:
        raise OperatingContextError(f"registry.enforce {enforce!r} must be one of "
                                    + ", ".join(ENFORCE_MODES))
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict) or not all(isinstance(v, str)
                                                 for v in defaults.values()):
        raise OperatingContextError("[defaults] must map agent ids to project ids (strings)")
    doctrine: dict[str, str] = {}
    for index, section in enumerate(data.get("doctrine", [])):
        if not isinstance(section, dict):
            raise OperatingContextError(f"[[doctrine]] #{index + 1} must be a table")
        name = _string(section.get("name"), f"[[doctrine]] #{index + 1} name")
        doctrine[name] = _string(section.get("body", ""), f"[[doctrine]] {name!r} body")
    return OperatingContext(
        version=1,
        context_revision=_string(data.get("context_revision", ""), "context_revision"),
        summary=_string(instructions.get("summary", ""), "instructions.summary").strip(),
        project_ids=tuple(project_ids) if project_ids is not None else None,
        enforce=enforce, defaults=dict(defaults), doctrine=doctrine)


HOOKS_DOCTRINE = ""
"""The instructions of the ``hooks`` surface (``OSIRIS_SURFACE=hooks``): none. The
client's hooks start, observe and precheck every call, and every output a hook shortens
says itself how to get the rest back (its ref, ``osiris_recall``, ``Read`` with
offset/limit); a client puts a server's instructions, under a heading of its own, in
every request."""


def instructions_text(context: OperatingContext | None, surface: str = "full") -> str:
    """The MCP ``instructions``: the built-in doctrine (the ``hooks`` surface's short
    one), then the operator's summary."""
    doctrine = HOOKS_DOCTRINE if surface == "hooks" else DOCTRINE
    if context is None or not context.summary:
        return doctrine
    return "\n\n".join(filter(None, (doctrine, context.summary)))


def resolve_project(context: OperatingContext | None, project_id: object,
                    agent_id: str | None, *, write: bool) -> ProjectResolution:
    """Apply the hard layer to a ``project_id`` argument."""
    if project_id is None:
        return ProjectResolution(None)
    if not isinstance(project_id, str):
        raise PolicyError("project_id must be a string (or \"@auto\")")
    if context is None:
        if project_id == AUTO:
            return ProjectResolution(
                "", True, "project_id '@auto' has no operating context to resolve it "
                          "(no sidecar): resolved to '' (global)")
        return ProjectResolution(project_id)
    resolved_from_auto = project_id == AUTO
    value = project_id
    warning = None
    if resolved_from_auto:
        if agent_id is not None and agent_id in context.defaults:
            value = context.defaults[agent_id]
        else:
            value = ""
            warning = (f"project_id '@auto': no default for agent_id {agent_id!r} in "
                       f"[defaults] (rev {context.context_revision or '-'}); resolved to ''")
            if context.enforce == "reject" and write:
                raise PolicyError(warning + "; registry enforce=reject refuses this write")
    if context.enforce != "off" and context.project_ids is not None and value != "" \
            and value not in context.project_ids:
        message = (f"project_id {value!r} not in registry (rev "
                   f"{context.context_revision or '-'}); known: "
                   + ", ".join(repr(p) for p in context.project_ids))
        if context.enforce == "reject" and write:
            raise PolicyError(message + "; registry enforce=reject refuses this write")
        warning = message
    return ProjectResolution(value, resolved_from_auto, warning)


def context_view(context: OperatingContext | None, section: str | None,
                 problems: list[str]) -> dict[str, Any]:
    """The read-only surface (``plan(mode="context")``, ``osiris://context``)."""
    if section is not None:
        if context is None or section not in context.doctrine:
            known = sorted(context.doctrine) if context else []
            return {"section": section, "found": False, "sections": known}
        return {"section": section, "found": True, "body": context.doctrine[section],
                "context_revision": context.context_revision}
    if context is None:
        return {"active": False, "doctrine": DOCTRINE, "problems": problems}
    return {"active": True, "context_revision": context.context_revision,
            "instructions_summary": context.summary, "doctrine": DOCTRINE,
            "registry": {"project_ids": list(context.project_ids)
                         if context.project_ids is not None else None,
                         "enforce": context.enforce},
            "defaults": dict(context.defaults),
            "doctrine_sections": sorted(context.doctrine), "problems": problems}


def size_findings(context: OperatingContext | None) -> list[str]:
    """Health findings about the instructions' fixed cost."""
    text = instructions_text(context)
    if len(text) > SUMMARY_HARD_WARNING:
        return [f"operating_context_size: instructions are {len(text):,} characters "
                f"(> {SUMMARY_HARD_WARNING:,}); every client pays them every session"]
    if len(text) > SUMMARY_SOFT_LIMIT:
        return [f"operating_context_size: instructions are {len(text):,} characters "
                f"(keep under {SUMMARY_SOFT_LIMIT:,})"]
    return []
