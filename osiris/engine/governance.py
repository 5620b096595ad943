"""Governance: ``precheck``, the call history LoopGuard reads, failures and lessons.

precheck is a pure decision (``osiris.core.precheck``) over what this module loads:
the invariants in force, the task's flags and budget, and its recent calls. Every
verdict is journaled with the caller's identity (the transaction's actor).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

from osiris.core import loopguard
from osiris.core.budget import budget_remaining, budget_state
from osiris.core.failures import error_signature, is_test_command, outcome_of_test_run
from osiris.core.hashing import sha256_hex
from osiris.core.invariants import Action, RuleSet, evaluate
from osiris.core.precheck import (
    action_key,
    decide,
    from_budget,
    from_invariants,
    from_loopguard,
)
from osiris.core.shell import (
    command_tool_name,
    file_targets,
    named_paths,
    shell_command,
    tool_family,
)
from osiris.core.task_state import Failure, TaskState, with_flag
from osiris.engine import memory
from osiris.engine.compass import compass_for
from osiris.engine.context import EngineContext, check_task_id, load_task, save_task
from osiris.engine.payloads import args_fingerprint, parse_args
from osiris.engine.rules import RulesLoader
from osiris.errors import InvalidInputError
from osiris.store import statements
from osiris.store.state import Tx

HISTORY_LIMIT = 300
MAX_PENDING = 32
MAX_LESSONS = 50
MAX_FAILURES = 20


def load_calls(tx: Tx, task_id: str) -> list[loopguard.CallRecord]:
    """The task's recent calls, oldest first."""
    rows = tx.con.execute(statements.RECENT_CALLS, [task_id, HISTORY_LIMIT]).fetchall()
    return [_call_record(r) for r in reversed(rows)]


@functools.lru_cache(maxsize=4 * HISTORY_LIMIT)
def _call_record(row: tuple[Any, ...]) -> loopguard.CallRecord:
    """A RECENT_CALLS row as a record (positional: the columns are its fields, in order).
    Cached by the row's value: every observe reads the task's last HISTORY_LIMIT calls,
    all but one of which the observe before it read too."""
    return loopguard.CallRecord._make(
        (*row[:11], tuple(row[11].split("\t")) if row[11] else ()))


def _budget_detail(state: TaskState) -> str:
    remaining = budget_remaining(state.budget)
    parts = []
    if state.budget.token_limit:
        parts.append(f"{state.budget.tokens_consumed:,} of {state.budget.token_limit:,} tokens")
    if state.budget.cost_limit_usd:
        parts.append(f"${state.budget.cost_consumed_usd:.4f} of "
                     f"${state.budget.cost_limit_usd:.4f}")
    return "; ".join(parts) + (f" (left: {remaining})" if parts else "")


def _path_of(args: dict[str, Any], path: object) -> str | None:
    if path is not None:
        if not isinstance(path, str):
            raise InvalidInputError("path must be a string")
        return path
    for key in ("file_path", "path", "notebook_path", "filename"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def precheck(ctx: EngineContext, tx: Tx, loader: RulesLoader, *, task_id: object, tool: object,
             args: object, path: object, confirmed: bool) -> dict[str, Any]:
    """One verdict for an intended action, journaled with the caller."""
    if not isinstance(tool, str) or not tool.strip():
        raise InvalidInputError("tool is required: the name of the tool you intend to call")
    state = load_task(tx, check_task_id(task_id), ctx.cost_model)
    call_args = parse_args(args)
    action = Action(tool.strip(), call_args, _path_of(call_args, path))
    rules, problems = loader.load(tx)
    findings = from_invariants(evaluate(rules, action, dict(state.flags)))
    findings += from_budget(budget_state(state.budget), _budget_detail(state))
    _, args_hash = args_fingerprint(action.tool, call_args)
    findings += from_loopguard(loopguard.judge(load_calls(tx, state.task_id), action.tool,
                                               args_hash, rules.loop,
                                               tool_family(action.tool, call_args)))
    key = action_key(action)
    decision = decide(findings, confirmed=bool(confirmed),
                      approval_pending=key in state.pending_approvals)
    pending = tuple(k for k in state.pending_approvals if k != key)
    if decision.verdict == "require_approval":
        pending = (*pending, key)[-MAX_PENDING:]
    state = replace(state, pending_approvals=pending, invariants=len(rules.invariants))
    answer: dict[str, Any] = {"task_id": state.task_id, **decision.as_dict()}
    if problems:
        answer["rules_problems"] = problems
    guide = compass_for(ctx, tx.con, state)
    if guide is not None and guide["recommended"] and \
            guide["recommended"][0]["tool"] != action.tool:
        answer["compass"] = guide["recommended"]  # a better-fitting tool exists
    save_task(tx, state, "precheck", {
        "tool": action.tool, "derived_tool": command_tool_name(action.tool, call_args),
        "args_hash": args_hash, "path": action.path, "confirmed": bool(confirmed),
        "verdict": decision.verdict, "reasons": list(decision.reasons),
        "sources": [f.source for f in decision.findings], "rules": rules.digest,
        "rules_problems": problems})
    return answer


@dataclass(frozen=True)
class CallRow:
    """A call to add to the history once its journal event has a sequence number."""

    tool: str
    args_hash: str
    family: str
    fingerprint: str
    result_digest: str | None
    ref: str | None
    is_error: bool
    error_signature: str | None
    error_text: str | None
    mutating: bool
    novel: bool
    targets: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()


def observe_call(ctx: EngineContext, tx: Tx, state: TaskState, *, tool: str,
                 args: dict[str, Any], kind: str, ref: str | None, output: str | None,
                 rules: RuleSet, output_digest: str | None = None,
                 ) -> tuple[TaskState, dict[str, Any] | None, CallRow]:
    """What an observed call means: LoopGuard's view, failures, lessons, test flags.

    ``output`` must already be scrubbed; ``output_digest``, its SHA-256 where the caller
    has it (hashing 1 MB again would cost the store's turn a millisecond). Returns the
    new state, LoopGuard's findings for the answer (None when quiet) and the history row
    to insert after the event.
    """
    _, args_hash = args_fingerprint(tool, args)
    family = tool_family(tool, args)
    state, test_failed = _test_flags(state, tool, args, output, kind == "error")
    # A failing test run is a failure to LoopGuard even when the shell reported success.
    is_error = kind == "error" or test_failed
    signature = error_signature(family, output or "") if is_error else None
    result_digest = None if output is None else output_digest or sha256_hex(output)
    fp = loopguard.fingerprint(tool, args_hash, signature.digest if signature
                               else result_digest or "")
    history = load_calls(tx, state.task_id)
    # Novel: a result never seen in this task, or an error never seen (new information).
    if signature is not None:
        seen = tx.con.execute(statements.CALL_WITH_ERROR,
                              [state.task_id, signature.digest]).fetchone()
    else:
        seen = tx.con.execute(statements.CALL_WITH_RESULT,
                              [state.task_id, result_digest]).fetchone() \
            if result_digest else None
    repeat = next((c for c in reversed(history) if c.fingerprint == fp), None)
    row = CallRow(tool, args_hash, family, fp, result_digest, ref, is_error,
                  signature.digest if signature else None,
                  signature.text if signature else None, loopguard.is_mutating(tool),
                  seen is None, file_targets(args), named_paths(args))
    # The answer tells the agent what this call repeated or the pattern it completes.
    this = loopguard.CallRecord(seq=history[-1].seq + 1 if history else 1, tool=tool,
                                args_hash=args_hash, fingerprint=fp, family=family,
                                is_error=is_error, error_signature=row.error_signature,
                                error_text=row.error_text, mutating=row.mutating,
                                novel=row.novel, ref=ref, targets=row.targets)
    findings = loopguard.judge_observed(history, this, rules.loop)
    if signature is not None:
        state = _record_failure(tx, state, family, args_hash, signature.digest, signature.text)
    else:
        state = _resolve_failures(ctx, tx, state, family, history)
    if not findings and repeat is None:
        return state, None, row
    loop: dict[str, Any] = {"patterns": [
        {"pattern": f.pattern, "level": f.level, "message": f.message} for f in findings]}
    if repeat is not None:
        loop["duplicate_of_event"] = repeat.seq
    return state, loop, row


def insert_call(tx: Tx, task_id: str, seq: int, row: CallRow) -> None:
    """Add a call to the task's history."""
    tx.con.execute(
        statements.CALL.sql,
        [task_id, seq, tx.now_us, row.tool, row.args_hash, row.family, row.fingerprint,
         row.result_digest, row.ref, row.is_error, row.error_signature, row.error_text,
         row.mutating, row.novel, "\t".join(row.targets), "\t".join(row.paths)])


def progress_row(seq: int) -> CallRow:
    """The history marker of a plan change (LoopGuard counts from the last one)."""
    return CallRow(loopguard.PROGRESS_TOOL, "", loopguard.PROGRESS_TOOL,
                   sha256_hex(f"progress\u2016{seq}"), None, None, False, None, None, True, True)


def _record_failure(tx: Tx, state: TaskState, tool: str, args_hash: str, signature: str,
                    text: str) -> TaskState:
    tx.con.execute(
        statements.RECORD_FAILURE,
        [state.task_id, signature, tool, args_hash, tx.now_us, tx.now_us, text])
    attempts = next((f.attempts for f in state.failures if f.signature == signature), 0) + 1
    others = tuple(f for f in state.failures if f.signature != signature)
    entry = Failure(signature=signature, tool=tool, args_hash=args_hash, attempts=attempts,
                    lesson=None, resolved=False)
    return replace(state, failures=(*others, entry)[-MAX_FAILURES:])


def _resolve_failures(ctx: EngineContext, tx: Tx, state: TaskState, tool: str,
                      history: list[loopguard.CallRecord]) -> TaskState:
    open_failures = [f for f in state.failures if f.tool == tool and not f.resolved]
    if not open_failures:
        return state
    changed = [c for c in reversed(history) if c.tool in loopguard.MUTATING_TOOLS
               and not c.is_error]
    fix = f"after {changed[0].tool} (event {changed[0].seq})" if changed else \
        "after changing the call"
    failures = list(state.failures)
    lessons = list(state.lessons)
    for failure in open_failures:
        row = tx.con.execute(statements.FAILURE_TEXT,
                             [state.task_id, failure.signature]).fetchone()
        text = row[0] if row else failure.signature[:12]
        lesson = (f"{tool}: '{text}' failed {failure.attempts}x, then succeeded {fix}"
                  if failure.attempts >= 2 else None)
        tx.con.execute(statements.RESOLVE_FAILURE,
                       [lesson, state.task_id, failure.signature])
        failures[failures.index(failure)] = replace(failure, resolved=True, lesson=lesson)
        if lesson:
            lessons.append(lesson)
            remember_lesson(tx, state, lesson, failure.signature)
    return replace(state, failures=tuple(failures), lessons=tuple(lessons[-MAX_LESSONS:]))


def remember_lesson(tx: Tx, state: TaskState, lesson: str, key: str) -> None:
    """Keep a lesson for the next agent on the same project (task scope otherwise)."""
    memory.remember(tx, state, "lesson", key, {"text": lesson},
                    scope="project" if state.project_id else "task")


def project_lessons(tx: Tx, project_id: str | None, limit: int = 5) -> list[str]:
    """The newest lessons recorded for a project."""
    if not project_id:
        return []
    rows = tx.con.execute(
        "SELECT value->>'text' FROM memory WHERE scope = 'project' AND scope_id = ? AND"
        " kind = 'lesson' ORDER BY created_us DESC LIMIT ?", [project_id, limit]).fetchall()
    return [str(r[0]) for r in rows]


def _test_flags(state: TaskState, tool: str, args: dict[str, Any], output: str | None,
                is_error: bool) -> tuple[TaskState, bool]:
    """Set ``tests_passed`` from a test run; return the state and whether the run failed."""
    command = shell_command(tool, args)
    if command is None or not is_test_command(command) or output is None:
        return state, False
    outcome = outcome_of_test_run(output, is_error)
    if outcome is None:
        return state, False
    return with_flag(state, "tests_passed", outcome), outcome is False
