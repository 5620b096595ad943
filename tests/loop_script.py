"""A scripted model for the agent-loop tests: bash calls, then a need found again.

It plays ``commands`` (one bash call per turn; the first one's output holds ``need``),
then looks for ``need`` in the prompt it has just received, as an agent reading its own
context would: when the text is there it ends; when OSIRIS stands in for the first
output (its preview, or its drop stub, naming ``osiris recall REF``), it runs that
command with ``--grep``; else it greps the file again. Then it ends with ``final``
(mini-swe-agent: the submit command).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from osiris.harness.real_clients.model_script import (
    Action,
    FinalText,
    ModelRequest,
    ToolCall,
    assistant_turns,
    prompt_text,
    results_by_id,
)

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
_RECALL = re.compile(r"`osiris recall (mem://sha256:[0-9a-f]{16}) --grep")


def big_file(lines: int = 4000) -> str:
    """A file whose whole ``cat`` is far over OSIRIS's engagement threshold."""
    return "".join(f"row {i}: value {i * 7}\n" for i in range(lines))


@dataclass
class RecallScript:
    """The model (module docstring). ``recalled`` keeps the refs it recalled."""

    commands: list[str]
    need: str
    source_file: str
    final: Action = field(default_factory=lambda: FinalText("done"))
    recalled: list[str] = field(default_factory=list)

    def reply(self, request: ModelRequest) -> Action:
        step = assistant_turns(request)
        if step < len(self.commands):
            return ToolCall("bash", {"command": self.commands[step]})
        visible = prompt_text(request.body)
        if step == len(self.commands) and self.need not in visible:
            pattern = shlex.quote(re.escape(self.need))
            first = next(iter(results_by_id(request).values()), ("", False))[0]
            found = _RECALL.search(first)
            if found is not None:
                self.recalled.append(found.group(1))
                return ToolCall("bash", {"command": f"osiris recall {found.group(1)} "
                                                    f"--grep {pattern}"})
            return ToolCall("bash", {"command": f"grep -n {pattern} {self.source_file}"})
        return self.final
