"""The public interactive sessions of ``datasets/corpus/`` in the real-client stage.

Each session file (``claude-code/*.jsonl``, ``codex/*.jsonl``) with a workspace
(``workspaces/<file stem>.tar.gz``, see ``SOURCES.md``) is played in its own client,
prompt by prompt: the opening prompt starts the session, each later **typed** prompt is
sent once the client has finished the turn before
(:func:`~osiris.harness.real_clients.run.run_client_turns`), and the scripted model issues
the calls the trace made between that prompt and the next
(:class:`~osiris.harness.real_clients.trace_plan.Turn`). Slash commands and the client's own
messages (attached files, environment context) are not typed again: the live client
writes its own. Sessions without a workspace stay replay-only; the stage's note lists
them.

Corpus sessions are long (70–528 calls), so they run in :data:`CORPUS_CONFIGURATIONS`
only: the bare client, OSIRIS with its default routing and context-mode (not OSIRIS's
per-feature configurations), two sessions at a time
(:data:`~osiris.harness.real_clients.sessions.CORPUS_WORKERS`). Measured on a 2-core machine
(2026-12-03): the 1,573 planned calls of the 8 sessions take about 0.1–0.4 s each bare,
a little more with OSIRIS, and context-mode's hooks add about 1 s to every call (its
``imessage-mail`` run: 77 s against 6.5 s bare), some 27 minutes one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from osiris.harness.importers.records import Trace
from osiris.harness.real_clients.configs import BARE, CONTEXT_MODE, OSIRIS
from osiris.harness.real_clients.run import CLAUDE_CODE, CODEX
from osiris.harness.real_clients.trace_plan import PathMap, Planned, Turn
from osiris.harness.replay.workloads import Session

CORPUS_CLIENTS = {"claude-code": CLAUDE_CODE, "codex": CODEX}
"""The corpus's folders and the live client of each."""
CORPUS_CONFIGURATIONS = (BARE, OSIRIS, CONTEXT_MODE)
"""Where corpus sessions run (bench time: module docstring)."""


@dataclass(frozen=True)
class CorpusSession:
    """One session file of the corpus."""

    path: Path
    client: str
    tarball: Path | None
    """Its workspace, None: replay only."""

    @property
    def name(self) -> str:
        """``corpus/<folder>/<stem>``, the session's name in the tables."""
        return f"corpus/{self.path.parent.name}/{self.path.stem}"


def corpus_sessions(corpus: Path) -> list[CorpusSession]:
    """Every session file of ``corpus`` (``datasets/corpus``), in a fixed order."""
    found = []
    for folder, client in CORPUS_CLIENTS.items():
        for path in sorted((corpus / folder).glob("*.jsonl")):
            tarball = corpus / "workspaces" / f"{path.stem}.tar.gz"
            found.append(CorpusSession(path, client, tarball if tarball.exists() else None))
    return found


def turns_of(trace: Trace, session: Session, paths: PathMap) -> list[Turn]:
    """The later typed prompts, each with the trace's text that ended the turn before
    (the last assistant prose before the prompt's step; "Done." when there is none).
    Prompts typed at the same step (no call between them) are one turn."""
    by_step: dict[int, list[str]] = {}
    for prompt in session.user_prompts:
        if prompt.kind == "typed" and not prompt.opening and prompt.text.strip():
            by_step.setdefault(prompt.step, []).append(paths.text(prompt.text))
    texts: dict[int, str] = {}
    for at, text in trace.texts:
        if text.strip():
            texts[at] = text
    return [Turn(step, "\n\n".join(prompts), texts.get(step, "Done."))
            for step, prompts in sorted(by_step.items())]


def truncated(calls: list[Planned], turns: list[Turn], segments: int
              ) -> tuple[list[Planned], list[Turn], str | None]:
    """The first ``segments`` segments only (the opening one and ``segments - 1`` later
    prompts): their calls, their turns, and the text that ends the last of them (None:
    nothing was cut, the trace's own final text ends it)."""
    if segments > len(turns):
        return calls, turns, None
    cut = turns[segments - 1]
    return [c for c in calls if c.step < cut.step], turns[:segments - 1], cut.answer
