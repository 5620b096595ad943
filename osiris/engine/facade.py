"""The engine facade: the one entry over core and store that the MCP server, the store
owner, the CLI and the benchmark all drive. Each public method is one store transaction
(or one read), and each scrubs every agent-supplied argument of secrets before anything else sees it
(:mod:`osiris.engine.agent_input`).

``principal`` is the caller's authenticated identity (an HTTP bearer token's name);
with one, a caller may use only the tasks it created and read only the refs they hold
(:func:`~osiris.engine.context.check_ref_visible`); without one, the caller is the
home's local user, whose every task and ref is. ``actor`` is what the journal
records as the caller (the principal, an agent id, or ``agent``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from osiris.config import Settings
from osiris.contracts.checkpoint import CheckpointAnswer
from osiris.contracts.handoff import HandoffAnswer
from osiris.contracts.observe import ObserveAnswer
from osiris.contracts.plan import ContextAnswer, PlanAnswer
from osiris.contracts.precheck import PrecheckResult
from osiris.contracts.recall import RecallAnswer
from osiris.contracts.views import Compacted, ManifestView, ResumeView, RoutedOutput, StatusView
from osiris.core import hook_advice
from osiris.core import routing as routing_core
from osiris.core.budget import budget_state
from osiris.core.cost_models import CostModel, default_cost_models
from osiris.core.display import escape_controls
from osiris.core.manifest import render_manifest
from osiris.core.operating_context import context_view, instructions_text, resolve_project
from osiris.core.payload_work import PayloadWork
from osiris.core.prefix import compute_zones
from osiris.core.routing import (
    compaction_context,
    foreign_mcp_tool,
    read_candidate,
    replaced_output,
    shell_candidate,
    shell_replacement,
)
from osiris.core.task_state import TaskState
from osiris.core.tokens import TokenCounter, default_counter
from osiris.engine import (
    checkpoints,
    client_sessions,
    governance,
    handoffs,
    observing,
    payloads,
    planning,
)
from osiris.engine import memory as memory_ops
from osiris.engine import recall as recall_op
from osiris.engine import routing as routing_ops
from osiris.engine.agent_input import scrubbing_facade
from osiris.engine.context import (
    EngineContext,
    account_answer,
    authorize,
    check_ref_visible,
    check_task_id,
    derived_counts,
    journal,
    load_task,
    resolve_ref,
)
from osiris.engine.operating_context import OperatingContextLoader
from osiris.engine.rules import RulesLoader
from osiris.errors import InvalidInputError, NotFoundError
from osiris.store import statements
from osiris.store.state import Clock, Store, Tx

PLAN_MODES = ("start", "update", "resume", "status", "context", "memory")


@scrubbing_facade
class Engine:
    """plan, precheck, observe, recall, checkpoint (and handoff) over one OSIRIS home."""

    def __init__(self, settings: Settings, *, store: Store | None = None,
                 counter: TokenCounter | None = None, clock: Clock | None = None,
                 exclusive: bool = False, cost_model: str | CostModel | None = None,
                 fixed_mode: str | None = None,
                 task_ids: Callable[[], str] | None = None) -> None:
        self.settings = settings
        #: Force one engagement mode for every payload (the benchmark's osiris-fixed).
        self.fixed_mode = fixed_mode
        self.store = store or Store(settings, exclusive=exclusive, clock=clock)
        self.ctx = EngineContext(
            settings=settings, store=self.store, counter=counter or default_counter(),
            cost_model=(cost_model if isinstance(cost_model, CostModel)
                        else default_cost_models().get(cost_model or settings.cost_model)),
            rules=RulesLoader(settings.roots),
            operating=OperatingContextLoader(settings.sidecar_path), task_ids=task_ids)

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
             flags: dict[str, bool] | None = None, section: str | None = None,
             memory: Any = None, announce: bool = True, actor: str | None = None,
             principal: str | None = None) -> PlanAnswer:
        """Start, update, resume or report on a task; returns the sealed manifest."""
        if mode not in PLAN_MODES:
            raise InvalidInputError(f"unknown plan mode {mode!r}: use one of "
                                    + ", ".join(PLAN_MODES))
        if mode == "context":
            return self.operating_context(section)
        with self.store.transaction(actor or principal or agent_id or "agent") as tx:
            if mode == "start":
                context, _ = self.ctx.operating.load()
                resolution = resolve_project(context, project_id, agent_id, write=True)
                answer = planning.plan_start(
                    self.ctx, tx, objective=objective, steps=steps, active_step=active_step,
                    constraints=constraints, decisions=decisions, agent_id=agent_id,
                    project_id=resolution.project_id, budget=budget, flags=flags,
                    owner=principal, announce=announce)
                answer.update(resolution.facts())
            else:
                task = check_task_id(task_id)
                authorize(tx.con, task, principal)
                if mode == "update":
                    answer = planning.plan_update(
                        self.ctx, tx, task_id=task, steps=steps, active_step=active_step,
                        completed=completed, constraints=constraints, decisions=decisions,
                        budget=budget, flags=flags)
                elif mode == "resume":
                    answer = planning.plan_resume(self.ctx, tx, task_id=task)
                elif mode == "memory":
                    answer = self._memory(tx, task, memory, project_id, agent_id)
                else:
                    answer = planning.plan_status(self.ctx, tx, task_id=task)
            account_answer(self.ctx, tx, answer["task_id"], f"plan.{mode}", answer)
        return cast(PlanAnswer, answer)

    def _memory(self, tx: Tx, task_id: str, request: Any, project_id: Any,
                agent_id: str | None) -> dict[str, Any]:
        """``plan(mode="memory")``: a list writes entries, an object (or nothing) looks up."""
        state = load_task(tx, task_id)
        if project_id is not None:  # a read across projects obeys the registry (warn only)
            context, _ = self.ctx.operating.load()
            resolution = resolve_project(context, project_id, agent_id or state.agent_id,
                                         write=False)
            state = replace(state, project_id=resolution.project_id)
        if isinstance(request, list):
            return {"task_id": task_id, "mode": "memory",
                    "written": memory_ops.write(tx, state, request)}
        if request is not None and not isinstance(request, dict):
            raise InvalidInputError('memory must be a list of entries to write, or an object '
                                    'like {"kind": "lesson", "scope": "project"} to look up')
        return {"task_id": task_id, "mode": "memory",
                "entries": memory_ops.lookup(tx, state, request or {})}

    # -- handoff -----------------------------------------------------------------------

    def handoff(self, mode: str, *, task_id: str | None = None, handoff_id: str | None = None,
                contract: Any = None, result: Any = None, agent_id: str | None = None,
                actor: str | None = None, principal: str | None = None) -> HandoffAnswer:
        """create, accept, complete or status of a delegation contract."""
        if mode not in handoffs.HANDOFF_MODES:
            raise InvalidInputError(f"unknown handoff mode {mode!r}: use one of "
                                    + ", ".join(handoffs.HANDOFF_MODES))
        with self.store.transaction(actor or principal or agent_id or "agent") as tx:
            if mode == "create":
                authorize(tx.con, check_task_id(task_id), principal)
                answer = handoffs.create(self.ctx, tx, task_id=task_id, contract=contract)
            else:
                # One ownership rule for every other mode, as for tasks and refs: a handoff
                # belongs to the identity that owns its parent task. The handoff id alone
                # admits nobody (it is shown to whoever the parent agent tells).
                handoffs.authorize(tx, handoff_id, principal)
                if mode == "accept":
                    answer = handoffs.accept(self.ctx, tx, handoff_id=handoff_id,
                                             agent_id=agent_id, owner=principal)
                elif mode == "complete":
                    answer = handoffs.complete(self.ctx, tx, handoff_id=handoff_id,
                                               task_id=task_id, result=result)
                else:
                    answer = handoffs.status(self.ctx, tx, handoff_id=handoff_id)
            account_answer(self.ctx, tx, answer.get("task_id") or answer.get("parent_task_id"),
                           f"handoff.{mode}", answer)
        return cast(HandoffAnswer, answer)

    def instructions(self) -> str:
        """The MCP server's instructions: the operating context's doctrine."""
        context, _ = self.ctx.operating.load()
        return instructions_text(context)

    def operating_context(self, section: str | None = None) -> ContextAnswer:
        """The operating context, read-only (``plan(mode="context")``, ``osiris://context``)."""
        if section is not None and not isinstance(section, str):
            raise InvalidInputError("section must be the name of a doctrine section")
        context, problems = self.ctx.operating.load()
        return cast(ContextAnswer, context_view(context, section, problems))

    # -- precheck ----------------------------------------------------------------------

    def precheck(self, task_id: str, tool: str, *, args: dict[str, Any] | None = None,
                 path: str | None = None, confirmed: bool = False, actor: str | None = None,
                 principal: str | None = None, client: dict[str, Any] | None = None,
                 cwd: str | None = None, subagent: str | None = None) -> PrecheckResult:
        """allow, warn, suggest_alternative, require_approval or block an intended action.

        ``client``: asked by a client hook, whose adapter gives the client's traits
        (:data:`osiris.core.hook_advice.TRAITS`); the answer also carries ``hook``, the
        advice the adapter turns into the client's JSON, and only what of it the model
        will see is booked as OSIRIS's overhead. ``task_id`` may be
        ``session:<client session id>`` (``cwd``: the session's directory; ``subagent``:
        the client's id of the subagent that asks, None for the main agent)."""
        client = hook_advice.check_traits(client)
        subagent = client_sessions.check_subagent(subagent)
        with self.store.transaction(actor or principal or "agent") as tx:
            task_id, created = client_sessions.resolve_task(
                self.ctx, tx, task_id, principal,
                client=client["name"] if client else "client", cwd=cwd)
            answer = governance.precheck(self.ctx, tx, self.ctx.rules, task_id=task_id,
                                         tool=tool, args=args, path=path,
                                         confirmed=confirmed)
            shown = None
            if client is not None:
                advice = hook_advice.before_call(
                    answer, self._first_sight(task_id, created), tool=tool)
                route = None if hook_advice.objects(advice) else self._route_call(
                    tx, task_id, tool, args or {}, cwd, subagent)
                if route and route["op"] == "pointer":
                    advice = hook_advice.pointer(advice, route["reason"])
                elif route and route.get("context"):
                    advice = hook_advice.with_context(advice, route["context"])
                answer, shown = {**answer, "hook": advice}, hook_advice.shown(advice)
                if route:
                    answer["route"] = route
            account_answer(self.ctx, tx, answer["task_id"], "precheck", answer, shown)
        return cast(PrecheckResult, answer)

    def _first_sight(self, task_id: str, created: bool) -> str | None:
        """The note a hook adds when OSIRIS starts a task for a client's session: none on
        the ``hooks`` surface, whose one tool (``osiris_recall``) needs no task id."""
        if not created or self.ctx.settings.surface == "hooks":
            return None
        return client_sessions.first_sight_note(task_id)

    def _route_call(self, tx: Tx, task_id: str, tool: str, args: dict[str, Any],
                    cwd: str | None, subagent: str | None) -> dict[str, Any] | None:
        """How a client hook should rewrite the call (``osiris.core.routing``): a pointer
        to an earlier read, or a window of a large file. A shell call is never rewritten:
        its output is replaced after it ran, if at all (:meth:`_replace_shell_output`)."""
        config = routing_ops.config_of(self.ctx, tx)
        if tool == "Read":
            asks = [args]
            if read_candidate(tool, args, config) is not None:  # it may be windowed
                asks.append({**args, "offset": 1, "limit": config.read_window_lines})
            for asked in asks:
                pointer = routing_ops.reread(self.ctx, tx, task_id, asked, cwd, config,
                                             subagent)
                if pointer is not None:
                    return {"op": "pointer", "reason": pointer}
        read = routing_ops.route_read(self.ctx, tx, task_id, tool, args, cwd, config)
        if read is not None:
            return {"op": "window", "offset": 1, "limit": config.read_window_lines,
                    "context": read["additionalContext"], "ref": read["ref"]}
        return None

    def _replace_mcp_output(self, tx: Tx, task_id: str, tool: str | None, args: Any,
                            result: Any, kind: str, client: dict[str, Any],
                            session: dict[str, Any] | None) -> dict[str, Any] | None:
        """Another MCP server's large output, stored; what the hook shows instead (None:
        the output reaches the model as the server gave it)."""
        if not tool or not foreign_mcp_tool(tool) or not isinstance(result, str):
            return None
        config = routing_ops.config_of(self.ctx, tx)
        if not config.mcp_outputs:
            return None
        stored = routing_ops.store_output(
            self.ctx, tx, task_id, result, tool=tool,
            args=args if isinstance(args, dict) else {}, failed=kind == "error",
            config=config, threshold=config.mcp_threshold_tokens,
            kind="mcp" if client["payoff"] else None, session=session)
        if stored is None:
            return None
        text = replaced_output(stored["preview"], ref=stored["ref"], tokens=stored["tokens"],
                               lines=stored["lines"])
        return {"output": "mcp", "text": text, "ref": stored["ref"],
                "tokens": stored["tokens"], "complete": True}

    def _replace_shell_output(self, tx: Tx, task_id: str, tool: str | None, args: Any,
                              result: Any, client: dict[str, Any], shell: dict[str, Any],
                              session: dict[str, Any] | None) -> dict[str, Any] | None:
        """A client's large shell output, stored; the text its hook shows instead (None:
        the output reaches the model as the client shows it). ``shell``: what the client
        adapter found about the call (``exit_code``, None when the client did not say;
        ``complete``, whether ``result`` is the whole output)."""
        if not tool or not isinstance(args, dict) or not isinstance(result, str):
            return None
        config = routing_ops.config_of(self.ctx, tx)
        command = shell_candidate(tool, args, config)
        if command is None:
            return None
        exit_code = shell.get("exit_code")
        exit_code = exit_code if isinstance(exit_code, int) else None
        priced = config.payoff and client["payoff"]
        stored = routing_ops.store_output(
            self.ctx, tx, task_id, result, tool=tool, args=args,
            failed=exit_code not in (0, None), config=config,
            threshold=config.shell_min_tokens if priced
            else routing_core.sized_threshold(command, config),
            kind="shell" if priced else None, session=session,
            preview_tokens=None if priced else config.sized_preview_tokens)
        if stored is None:
            return None
        complete = bool(shell.get("complete", True))
        text = shell_replacement(stored["preview"], lines=stored["lines"],
                                 tokens=stored["tokens"], ref=stored["ref"],
                                 exit_code=exit_code, status_line=client["status_line"],
                                 complete=complete)
        return {"output": "shell", "text": text, "ref": stored["ref"],
                "tokens": stored["tokens"], "complete": complete}

    def compacted(self, task_id: str, *, client: dict[str, Any], actor: str | None = None,
                  cwd: str | None = None, principal: str | None = None) -> Compacted:
        """The client compacted its history: journal it, restart LoopGuard's window (what
        it counted left the prompt), and answer with the manifest and the live refs as
        the hook's advice (``client``: as for :meth:`precheck`)."""
        checked = hook_advice.check_traits(client)
        if checked is None:
            raise InvalidInputError("compacted needs the client's traits (client=...)")
        with self.store.transaction(actor or "agent") as tx:
            task_id, _ = client_sessions.resolve_task(self.ctx, tx, task_id, principal,
                                                      client=checked["name"], cwd=cwd)
            state = derived_counts(tx.con, load_task(tx, task_id, self.ctx.cost_model),
                                   self.ctx.cost_model)
            config = routing_ops.config_of(self.ctx, tx)
            seq = journal(tx, "client.compacted", {"client": checked["name"]},
                          task_id=task_id).seq
            governance.insert_call(tx, task_id, seq, governance.progress_row(seq))
            advice: dict[str, str] = {}
            refs: list[dict[str, Any]] = []
            if config.compaction:
                files = {f.ref: f.path for f in state.files}
                refs = routing_ops.live_refs(tx, task_id, files)
                advice = {"context": compaction_context(
                    render_manifest(state, self.ctx.counter), refs)}
            answer = {"task_id": task_id, "refs": len(refs), "hook": advice}
            account_answer(self.ctx, tx, task_id, "compacted", answer,
                           hook_advice.shown(advice))
        return cast(Compacted, answer)

    def route_output(self, task_id: str, text: str, *, tool: str, args: dict[str, Any],
                     failed: bool, cwd: str | None = None, client: str = "client",
                     threshold: int | None = None) -> RoutedOutput | None:
        """``osiris run``: store a command's whole output and return the preview that
        stands in for it (None when it is small enough to show as is)."""
        with self.store.transaction(f"{client}:run") as tx:
            task_id, _ = client_sessions.resolve_task(self.ctx, tx, task_id, None,
                                                      client=client, cwd=cwd)
            config = routing_ops.config_of(self.ctx, tx)
            routed = routing_ops.store_output(self.ctx, tx, task_id, text, tool=tool,
                                              args=args, failed=failed, config=config,
                                              threshold=threshold or
                                              config.shell_preview_tokens)
        return None if routed is None else cast(RoutedOutput, routed)

    # -- observe -----------------------------------------------------------------------

    def observe(self, task_id: str, kind: str, *, tool: str | None = None,
                args: dict[str, Any] | None = None, result: Any = None,
                path: str | None = None, seal: str | None = None,
                usage: dict[str, Any] | None = None, actor: str | None = None,
                principal: str | None = None, client: dict[str, Any] | None = None,
                replaceable: bool = True, cwd: str | None = None,
                tool_use_id: str | None = None, subagent: str | None = None,
                prepared: PayloadWork | None = None,
                routed: str | None = None,
                shell: dict[str, Any] | None = None,
                session: dict[str, Any] | None = None) -> ObserveAnswer:
        """Record what happened this turn; check the SEAL; store provider usage.

        ``routed``: a loop that owns its history (:mod:`osiris.agent`) puts the answer's
        ``shown`` text there instead of the output (the output itself when the answer
        has none); the value is the recall hint that text names the ref with (``{ref}``
        stands for it). The ledger books what was shown; the answer, which the model
        never sees, is not booked.

        ``prepared``: the payload work a client of the store owner did for ``result``
        (the owner checked it was made for that text, :mod:`osiris.core.payload_work`).

        ``client``: observed by a client hook (its adapter's traits, as for
        :meth:`precheck`); the answer carries ``hook``, the advice for the model, and
        only what the model is shown is booked as overhead (``subagent``: as for
        :meth:`precheck`). ``replaceable``: whether the client lets the hook replace this
        output (Claude Code shows a failed call's error as it is: PostToolUseFailure).
        When another MCP server's output is large, ``replaced`` is what the hook shows
        instead.
        ``shell``: the call was a shell command that ran in the client's shell and
        ``result`` is its output as the client adapter found it (``{"exit_code": int |
        None, "complete": bool}``); when that output is large the answer's ``replaced``
        is what the hook shows the model instead; for a mid-size whole-file ``Read`` that
        routing shapes, ``replaced_read`` holds the lines shown and the note beside them.
        ``session``: what the client adapter read of the session so far
        (``prompt_tokens``: its last request's prompt; ``compaction_at_tokens``: where the
        client compacts), the inputs of the payoff (:mod:`osiris.core.payoff`)."""
        client = hook_advice.check_traits(client)
        session = _checked_session(session)
        subagent = client_sessions.check_subagent(subagent)
        if routed is not None and (not isinstance(routed, str)
                                   or len(routed) > routing_core.MAX_ROUTED_HINT_CHARS
                                   or client is not None):
            raise InvalidInputError(
                "routed must be a recall hint of at most "
                f"{routing_core.MAX_ROUTED_HINT_CHARS} characters, and not with a "
                "client (a client's hook does not own the history)")
        if kind not in observing.OBSERVE_KINDS:
            raise InvalidInputError(f"unknown observe kind {kind!r}: use one of "
                                    + ", ".join(observing.OBSERVE_KINDS))
        with payloads.prepared(self.ctx, kind, result, args, self.fixed_mode, prepared), \
                self.store.transaction(actor or principal or "agent") as tx:
            task_id, created = client_sessions.resolve_task(
                self.ctx, tx, task_id, principal,
                client=client["name"] if client else "client", cwd=cwd)
            state = load_task(tx, task_id, self.ctx.cost_model)
            answer = observing.observe(self.ctx, tx, state, kind=kind, tool=tool, args=args,
                                       result=result, path=path, seal=seal, usage=usage,
                                       fixed_mode=self.fixed_mode, routed=routed)
            shown = None
            if client is not None:
                answer, shown = self._advise_after(tx, task_id, created, answer, client,
                                                   kind, tool, args, result, cwd,
                                                   tool_use_id, subagent, replaceable,
                                                   shell, session)
            if routed is not None:
                shown = ""  # the model reads answer["shown"] (booked) or the output
            account_answer(self.ctx, tx, task_id, f"observe.{kind}", answer, shown)
        return cast(ObserveAnswer, answer)

    def _advise_after(self, tx: Tx, task_id: str, created: bool, answer: dict[str, Any],
                      client: dict[str, Any], kind: str, tool: str | None, args: Any,
                      result: Any, cwd: str | None, tool_use_id: str | None,
                      subagent: str | None, replaceable: bool, shell: dict[str, Any] | None,
                      session: dict[str, Any] | None) -> tuple[dict[str, Any], str]:
        """A client hook's observe: the advice, what replaces the output (if anything)
        and the text of both that the model is shown."""
        advice = hook_advice.after_call(answer, self._first_sight(task_id, created))
        replaced = self._replace_mcp_output(tx, task_id, tool, args, result, kind,
                                            client, session) if replaceable else None
        shaped = None
        if tool == "Read" and kind != "error" and isinstance(args, dict):
            served, text = args, result if isinstance(result, str) else None
            ref = answer.get("ref") if isinstance(answer.get("ref"), str) else None
            if client["shapes_reads"] and replaceable and text is not None:
                config = routing_ops.config_of(self.ctx, tx)
                shaped = routing_ops.read_changes(self.ctx, tx, task_id, args, text, ref,
                                                  cwd, config, subagent) \
                    or routing_ops.shape_read(self.ctx, tx, task_id, args, text, cwd,
                                              config, session)
            if shaped is not None and "start" not in shaped:
                served, text = {**args, "offset": 1, "limit": shaped["lines"]}, None
            routing_ops.record_served(self.ctx, tx, task_id, served, cwd, tool_use_id,
                                      subagent, content=text, ref=ref)
        if shell is not None and kind != "action" and replaceable:
            replaced = self._replace_shell_output(tx, task_id, tool, args, result, client,
                                                  shell, session) or replaced
        answer = {**answer, "hook": advice}
        shown = [hook_advice.shown(advice)]
        if shaped is not None:
            answer["replaced_read"] = shaped
            shown += [shaped["content"], shaped["context"]]
        if replaced is not None:
            answer["replaced"] = replaced
            shown.append(replaced["text"])
        return answer, "\n".join(filter(None, shown))

    # -- recall ------------------------------------------------------------------------

    def recall(self, ref: str, op: str = "head", *, pattern: str | None = None,
               start: int | None = None, end: int | None = None, n: int | None = None,
               context: int | None = None, fields: list[str] | None = None,
               where: Any = None, max_tokens: int | None = None, ignore_case: bool = False,
               language: str | None = None, task_id: str | None = None,
               actor: str | None = None, principal: str | None = None) -> RecallAnswer:
        """Expand a ref server-side: only what was asked for enters the context.

        The caller reads only a ref of its own principal (:func:`check_ref_visible`: no
        task id needed, the ref is the capability); with ``task_id``, only a ref that task
        holds: observed in it, or handed to it (a handoff's input refs to the child, the
        refs of an accepted result back to the parent)."""
        task = check_task_id(task_id) if task_id is not None else None
        with self.store.transaction(actor or principal or "agent") as tx:
            asked = ref
            if task is not None:
                authorize(tx.con, task, principal)
            ref = resolve_ref(tx.con, ref, principal)  # previews show the short form
            # A task sees only refs it created or was handed: OSIRIS never tells an agent
            # it has content that never reached it.
            if task is not None and tx.con.execute(
                    statements.TASK_HOLDS_REF, [task, ref]).fetchone() is None:
                raise NotFoundError(f"{ref} is not visible to task {task}: it was neither "
                                    "observed in this task nor handed to it")
            check_ref_visible(tx.con, ref, principal)
            answer = recall_op.recall(
                self.ctx, tx, ref=ref, op=op, pattern=pattern, start=start, end=end, n=n,
                context=context, fields=fields, where=where, max_tokens=max_tokens,
                ignore_case=ignore_case, language=language)
            answer["ref"] = asked.strip()  # as the agent knows it: the short form stays short
            journal(tx, "recall", {"ref": ref, "op": op, "tokens": answer["tokens"],
                                   "truncated": answer["truncated"]}, task_id=task)
            account_answer(self.ctx, tx, task, f"recall.{op}", answer)
        return cast(RecallAnswer, answer)

    # -- checkpoint --------------------------------------------------------------------

    def checkpoint(self, task_id: str, mode: str, *, checkpoint_id: str | None = None,
                   item: int = 0, offset: int = 0, max_tokens: int | None = None,
                   actor: str | None = None, principal: str | None = None) -> CheckpointAnswer:
        """Snapshot, resume, report, compact, trim, clear or restore."""
        with self.store.transaction(actor or principal or "agent") as tx:
            authorize(tx.con, check_task_id(task_id), principal)
            answer = checkpoints.checkpoint(self.ctx, tx, task_id=task_id, mode=mode,
                                            checkpoint_id=checkpoint_id, item=item,
                                            offset=offset, max_tokens=max_tokens)
            account_answer(self.ctx, tx, answer["task_id"], f"checkpoint.{mode}", answer)
        return cast(CheckpointAnswer, answer)

    # -- read-only views (MCP resources, the resume prompt) ----------------------------

    def _read_state(self, task_id: str, principal: str | None) -> TaskState:
        task = check_task_id(task_id)
        with self.store.read() as con:
            authorize(con, task, principal)
            row = con.execute(statements.TASK_STATE, [task]).fetchone()
            assert row is not None
            return derived_counts(con, TaskState.from_dict(json.loads(row[0])),
                                  self.ctx.cost_model)

    def manifest_view(self, task_id: str, principal: str | None = None) -> ManifestView:
        """The task's manifest, zone hashes, drift state and objective (no side effects)."""
        state = self._read_state(task_id, principal)
        zones = compute_zones(state)
        view = {"task_id": state.task_id, "objective": state.objective,
                "manifest": render_manifest(state, self.ctx.counter), "seal": zones.seal,
                "drift": state.drift,
                "zones": {"head": zones.head, "zone_b": zones.zone_b, "tail": zones.tail,
                          "prefix": zones.prefix, "zone_a": zones.zone_a}}
        return cast(ManifestView, view)

    def status_view(self, task_id: str, principal: str | None = None) -> StatusView:
        """Live context pressure and budget (no side effects)."""
        state = self._read_state(task_id, principal)
        view = {"task_id": state.task_id,
                "pressure": planning.pressure_of(self.ctx, state).as_dict(),
                "budget": {"state": budget_state(state.budget),
                           "tokens_consumed": state.budget.tokens_consumed,
                           "token_limit": state.budget.token_limit,
                           "cost_consumed_usd": state.budget.cost_consumed_usd,
                           "cost_limit_usd": state.budget.cost_limit_usd},
                "plan": planning.plan_view(state)}
        return cast(StatusView, view)

    def resume_view(self, task_id: str, principal: str | None = None) -> ResumeView:
        """Everything an agent needs to recover after a crash, from the store alone."""
        state = self._read_state(task_id, principal)
        view = {"task_id": state.task_id, "objective": escape_controls(state.objective),
                "manifest": render_manifest(state, self.ctx.counter),
                "constraints": [escape_controls(i.text) for i in state.constraints],
                "decisions": [escape_controls(i.text) for i in state.decisions],
                "plan": planning.plan_view(state), "lessons": list(state.lessons),
                "files": [f.path for f in state.files], "flags": dict(state.flags)}
        return cast(ResumeView, view)

    def ref_bytes(self, ref: str, principal: str | None = None) -> tuple[bytes, str]:
        """Raw verified bytes of a ref (whole, or its short form) and its media type."""
        with self.store.read() as con:
            ref = resolve_ref(con, ref, principal)
            check_ref_visible(con, ref, principal)
            row = con.execute(statements.REF_MEDIA_TYPE, [ref]).fetchone()
        if row is None:
            raise NotFoundError(f"{ref} is unknown to this OSIRIS home")
        return self.store.refs.get(ref), str(row[0])


def _checked_session(session: Any) -> dict[str, Any] | None:
    """``observe(session=…)``: a mapping of non-negative integers under known keys."""
    if session is None:
        return None
    if not isinstance(session, dict) or not set(session) <= SESSION_KEYS or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for v in session.values()):
        raise InvalidInputError("session must be an object of non-negative integers with "
                                "the keys " + ", ".join(sorted(SESSION_KEYS)))
    return session


SESSION_KEYS = frozenset({"prompt_tokens", "compaction_at_tokens"})


if TYPE_CHECKING:
    from osiris.engine.interface import Facade

    def _implements_the_interface(engine: Engine) -> Facade:
        return engine  # mypy checks here that Engine is a Facade
