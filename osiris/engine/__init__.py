"""Engine: the one facade over core and store that the MCP server, the CLI and the
benchmark all drive. Each public method is one store transaction (or one read)."""

from __future__ import annotations

from typing import Any

from osiris.config import Settings
from osiris.core.cost_models import default_cost_models
from osiris.core.tokens import TokenCounter, default_counter
from osiris.engine import checkpoints, governance, observing, planning
from osiris.engine import recall as recall_op
from osiris.engine.context import EngineContext, account_answer, check_task_id, load_task
from osiris.engine.rules import RulesLoader
from osiris.errors import InvalidInputError
from osiris.store.state import Clock, Store

PLAN_MODES = ("start", "update", "resume", "status")


class Engine:
    """plan / observe (and, as the project grows, precheck, recall, checkpoint, handoff)."""

    def __init__(self, settings: Settings, *, store: Store | None = None,
                 counter: TokenCounter | None = None, clock: Clock | None = None,
                 exclusive: bool = False, cost_model: str | None = None,
                 fixed_mode: str | None = None) -> None:
        self.settings = settings
        #: Force one engagement mode for every payload (the benchmark's osiris-fixed).
        self.fixed_mode = fixed_mode
        self.store = store or Store(settings, exclusive=exclusive, clock=clock)
        self.ctx = EngineContext(
            settings=settings, store=self.store, counter=counter or default_counter(),
            cost_model=default_cost_models().get(cost_model or settings.cost_model),
            rules=RulesLoader(settings.roots))

    def close(self) -> None:
        """Release the store."""
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plan --------------------------------------------------------------------------

    def plan(self, mode: str, *, task_id: str | None = None, objective: str | None = None,
             steps: list[str] | None = None, active_step: int | None = None,
             completed: list[int] | None = None, constraints: list[Any] | None = None,
             decisions: list[Any] | None = None, agent_id: str | None = None,
             project_id: str | None = None, budget: dict[str, Any] | None = None,
             flags: dict[str, bool] | None = None, actor: str | None = None,
             ) -> dict[str, Any]:
        """Start, update, resume or report on a task; returns the sealed manifest."""
        if mode not in PLAN_MODES:
            raise InvalidInputError(f"unknown plan mode {mode!r}: use one of "
                                    + ", ".join(PLAN_MODES))
        with self.store.transaction(actor or agent_id or "agent") as tx:
            if mode == "start":
                answer = planning.plan_start(
                    self.ctx, tx, objective=objective, steps=steps, active_step=active_step,
                    constraints=constraints, decisions=decisions, agent_id=agent_id,
                    project_id=project_id, budget=budget, flags=flags)
            elif mode == "update":
                answer = planning.plan_update(
                    self.ctx, tx, task_id=check_task_id(task_id), steps=steps,
                    active_step=active_step, completed=completed, constraints=constraints,
                    decisions=decisions, budget=budget, flags=flags)
            elif mode == "resume":
                answer = planning.plan_resume(self.ctx, tx, task_id=check_task_id(task_id))
            else:
                answer = planning.plan_status(self.ctx, tx, task_id=check_task_id(task_id))
            account_answer(self.ctx, tx, answer["task_id"], f"plan.{mode}", answer)
        return answer

    # -- observe -----------------------------------------------------------------------

    def observe(self, task_id: str, kind: str, *, tool: str | None = None,
                args: dict[str, Any] | None = None, result: Any = None,
                path: str | None = None, seal: str | None = None,
                usage: dict[str, Any] | None = None, actor: str | None = None,
                ) -> dict[str, Any]:
        """Record what happened this turn; check the SEAL; store provider usage."""
        if kind not in observing.OBSERVE_KINDS:
            raise InvalidInputError(f"unknown observe kind {kind!r}: use one of "
                                    + ", ".join(observing.OBSERVE_KINDS))
        task_id = check_task_id(task_id)
        with self.store.transaction(actor or "agent") as tx:
            state = load_task(tx, task_id, self.ctx.cost_model)
            answer = observing.observe(self.ctx, tx, state, kind=kind, tool=tool, args=args,
                                       result=result, path=path, seal=seal, usage=usage,
                                       fixed_mode=self.fixed_mode)
            account_answer(self.ctx, tx, task_id, f"observe.{kind}", answer)
        return answer

    # -- precheck ----------------------------------------------------------------------

    def precheck(self, task_id: str, tool: str, *, args: dict[str, Any] | None = None,
                 path: str | None = None, confirmed: bool = False,
                 actor: str | None = None) -> dict[str, Any]:
        """allow, warn, suggest_alternative, require_approval or block an intended action."""
        with self.store.transaction(actor or "agent") as tx:
            answer = governance.precheck(self.ctx, tx, self.ctx.rules, task_id=task_id,
                                         tool=tool, args=args, path=path,
                                         confirmed=confirmed)
            account_answer(self.ctx, tx, answer["task_id"], "precheck", answer)
        return answer

    # -- recall ------------------------------------------------------------------------

    def recall(self, ref: str, op: str = "head", *, pattern: str | None = None,
               start: int | None = None, end: int | None = None, n: int | None = None,
               context: int | None = None, fields: list[str] | None = None,
               where: Any = None, max_tokens: int | None = None, ignore_case: bool = False,
               language: str | None = None, task_id: str | None = None,
               actor: str | None = None) -> dict[str, Any]:
        """Expand a ref server-side: only what was asked for enters the context."""
        task = check_task_id(task_id) if task_id is not None else None
        with self.store.transaction(actor or "agent") as tx:
            if task is not None:
                load_task(tx, task)  # the task must exist
            answer = recall_op.recall(
                self.ctx, tx, ref=ref, op=op, pattern=pattern, start=start, end=end, n=n,
                context=context, fields=fields, where=where, max_tokens=max_tokens,
                ignore_case=ignore_case, language=language)
            tx.event("recall", {"ref": ref, "op": op, "tokens": answer["tokens"],
                                "truncated": answer["truncated"]}, task_id=task)
            account_answer(self.ctx, tx, task, f"recall.{op}", answer)
        return answer

    # -- checkpoint --------------------------------------------------------------------

    def checkpoint(self, task_id: str, mode: str, *, checkpoint_id: str | None = None,
                   item: int = 0, offset: int = 0, max_tokens: int | None = None,
                   actor: str | None = None) -> dict[str, Any]:
        """Snapshot, resume, report, compact, trim, clear or restore."""
        with self.store.transaction(actor or "agent") as tx:
            answer = checkpoints.checkpoint(self.ctx, tx, task_id=task_id, mode=mode,
                                            checkpoint_id=checkpoint_id, item=item,
                                            offset=offset, max_tokens=max_tokens)
            account_answer(self.ctx, tx, answer["task_id"], f"checkpoint.{mode}", answer)
        return answer
