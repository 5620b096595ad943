"""The engine's interface: what the MCP server, the hooks, the CLI and the benchmark may
ask of an OSIRIS home, and the contract record each answer is.

Two engines implement it: :class:`osiris.engine.facade.Engine`, which works on the
store itself, and :class:`osiris.engine.remote.RemoteEngine`, which asks the home's
store owner to; mypy checks both against :class:`Facade`, and every caller that may get
either holds a ``Facade``. The owner runs exactly the methods named here
(:data:`FACADE_METHODS`). What each method does is documented on ``Engine``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # the store owner imports this module: only names, nothing loaded
    from osiris.config import Settings
    from osiris.contracts.checkpoint import CheckpointAnswer
    from osiris.contracts.handoff import HandoffAnswer
    from osiris.contracts.observe import ObserveAnswer
    from osiris.contracts.plan import ContextAnswer, PlanAnswer
    from osiris.contracts.precheck import PrecheckResult
    from osiris.contracts.recall import RecallAnswer
    from osiris.contracts.views import (
        Compacted,
        ManifestView,
        ResumeView,
        RoutedOutput,
        StatusView,
    )
    from osiris.core.payload_work import PayloadWork


class Facade(Protocol):
    """plan, precheck, observe, recall, checkpoint, handoff, and the read-only views."""

    settings: Settings

    def plan(self, mode: str, *, task_id: str | None = None, objective: str | None = None,
             steps: list[str] | None = None, active_step: int | None = None,
             completed: list[int] | None = None, constraints: list[Any] | None = None,
             decisions: list[Any] | None = None, agent_id: str | None = None,
             project_id: str | None = None, budget: dict[str, Any] | None = None,
             flags: dict[str, bool] | None = None, section: str | None = None,
             memory: Any = None, announce: bool = True, actor: str | None = None,
             principal: str | None = None) -> PlanAnswer: ...

    def handoff(self, mode: str, *, task_id: str | None = None, handoff_id: str | None = None,
                contract: Any = None, result: Any = None, agent_id: str | None = None,
                actor: str | None = None, principal: str | None = None) -> HandoffAnswer: ...

    def instructions(self) -> str: ...

    def operating_context(self, section: str | None = None) -> ContextAnswer: ...

    def precheck(self, task_id: str, tool: str, *, args: dict[str, Any] | None = None,
                 path: str | None = None, confirmed: bool = False, actor: str | None = None,
                 principal: str | None = None, client: dict[str, Any] | None = None,
                 cwd: str | None = None, subagent: str | None = None) -> PrecheckResult: ...

    def compacted(self, task_id: str, *, client: dict[str, Any], actor: str | None = None,
                  cwd: str | None = None, principal: str | None = None) -> Compacted: ...

    def route_output(self, task_id: str, text: str, *, tool: str, args: dict[str, Any],
                     failed: bool, cwd: str | None = None, client: str = "client",
                     threshold: int | None = None) -> RoutedOutput | None: ...

    def observe(self, task_id: str, kind: str, *, tool: str | None = None,
                args: dict[str, Any] | None = None, result: Any = None,
                path: str | None = None, seal: str | None = None,
                usage: dict[str, Any] | None = None, actor: str | None = None,
                principal: str | None = None, client: dict[str, Any] | None = None,
                replaceable: bool = True, cwd: str | None = None,
                tool_use_id: str | None = None, subagent: str | None = None,
                prepared: PayloadWork | None = None, routed: str | None = None,
                shell: dict[str, Any] | None = None,
                session: dict[str, Any] | None = None) -> ObserveAnswer: ...

    def recall(self, ref: str, op: str = "head", *, pattern: str | None = None,
               start: int | None = None, end: int | None = None, n: int | None = None,
               context: int | None = None, fields: list[str] | None = None,
               where: Any = None, max_tokens: int | None = None, ignore_case: bool = False,
               language: str | None = None, task_id: str | None = None,
               actor: str | None = None, principal: str | None = None) -> RecallAnswer: ...

    def checkpoint(self, task_id: str, mode: str, *, checkpoint_id: str | None = None,
                   item: int = 0, offset: int = 0, max_tokens: int | None = None,
                   actor: str | None = None,
                   principal: str | None = None) -> CheckpointAnswer: ...

    def manifest_view(self, task_id: str, principal: str | None = None) -> ManifestView: ...

    def status_view(self, task_id: str, principal: str | None = None) -> StatusView: ...

    def resume_view(self, task_id: str, principal: str | None = None) -> ResumeView: ...

    def ref_bytes(self, ref: str, principal: str | None = None) -> tuple[bytes, str]: ...

    def close(self) -> None: ...


FACADE_METHODS = frozenset(
    name for name, value in vars(Facade).items()
    if callable(value) and not name.startswith("_") and name != "close")
"""The methods a client of the store owner may call on the owner's engine."""
