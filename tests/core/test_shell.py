"""What a shell call runs: the command's family, with quotes, operators and redirections
read as a shell reads them."""

from __future__ import annotations

import pytest

from osiris.core.shell import command_family, command_tool_name, tool_family


@pytest.mark.parametrize(("command", "family"), [
    ("cd repo && NODE_OPTIONS=x npx jest tests/a.ts", "npx jest"),
    ("timeout 60 pytest -x tests", "pytest"),
    ("git commit -m 'fix; then git push --force'", "git commit"),  # quoted: one word
    ("echo 'a && b' | grep x", "echo"),
    ("pytest tests 2>&1 | tail -n 30", "pytest tests"),  # 2>&1 is no subcommand
    ("make >build.log 2>&1", "make"),
    ("(cd src && make test)", "make test"),  # a subshell, not a program called "(cd"
    ("FOO=1 BAR=2 env python -m pytest", "python"),
    ("cat <<EOF\ndon't stop\nEOF", "cat"),  # an unclosed quote: split at separators only
    ("", ""),
])
def test_command_family(command: str, family: str) -> None:
    assert command_family(command) == family


def test_shell_wrappers_and_tool_names() -> None:
    assert tool_family("Bash", {"command": "bash -lc 'git commit -m x'"}) == "Bash:git commit"
    assert command_tool_name("shell", {"command": ["git", "push", "--force"]}) == "git.push"
    assert tool_family("Read", {"file_path": "a.py"}) == "Read"
    assert command_tool_name("Read", {"file_path": "a.py"}) is None
