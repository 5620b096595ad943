"""What a shell call runs: the command's family, with quotes, operators and redirections
read as a shell reads them."""

from __future__ import annotations

import pytest

from osiris.core.shell import command_family, command_tool_name, output_kind, tool_family


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


@pytest.mark.parametrize(("command", "kind"), [
    ("bun run typecheck", "log"),
    ("cd repo && bun run build", "log"),
    ("bash -lc 'bun test apps/cli'", "log"),  # Codex's wrapper: what it runs decides
    ("npm test 2>&1 | tail -40", "log"),  # the first command's output, cut
    ("pnpm test:unit", "log"),
    ("bun --filter @scope/core build", "log"),  # an option's value before the script
    ("npx tsc --noEmit", "log"),
    ("uv run pytest -q", "log"),
    ("python3 -m pytest tests", "log"),
    ("go test ./...", "log"),
    ("cargo clippy", "log"),
    ("make -j2", "log"),
    ("pip install -e .", "log"),
    ("git diff -- src/a.ts", "log"),
    ("git log --oneline -20", "log"),
    ("git blame src/a.ts", "other"),  # a file's lines, copied from
    ("sed -n '1,200p' src/a.ts", "other"),
    ("nl -ba src/a.ts | sed -n '40,90p'", "other"),
    ("cat package.json", "other"),
    ("rg -n handler src", "other"),
    ("python3 scripts/report.py", "other"),  # a program's own output
    ("npm run dev", "other"),
    ("bun agentv eval run --help", "other"),
    ("curl -s https://example.invalid/api", "other"),
    ("python -m", "other"),
    ("", "other"),
])
def test_output_kind(command: str, kind: str) -> None:
    assert output_kind(command) == kind
