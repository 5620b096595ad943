"""The pure routing decisions of :mod:`osiris.core.routing`."""

from __future__ import annotations

from osiris.core.routing import (
    RoutingConfig,
    compaction_context,
    shell_candidate,
    shell_replacement,
)

REF = "mem://sha256:" + "a" * 64


def test_a_shell_output_is_a_candidate_unless_off_in_the_background_or_exempt() -> None:
    config = RoutingConfig(exempt=("npm run dev*",))
    assert shell_candidate("Bash", {"command": "pytest -q"}, config) == "pytest -q"
    assert shell_candidate("exec_command", {"cmd": ["make", "test"]}, config) == "make test"
    assert shell_candidate("Bash", {"command": "npm run dev -- -p 3"}, config) is None
    assert shell_candidate("Bash", {"command": "npm test", "run_in_background": True},
                           config) is None
    assert shell_candidate("Read", {"command": "x"}, config) is None
    assert shell_candidate("Bash", {"command": "  "}, config) is None
    assert shell_candidate("Bash", {"command": "ls"}, RoutingConfig(shell=False)) is None


def test_the_replacement_names_the_status_only_where_it_stands_for_the_clients_own() -> None:
    codex = shell_replacement("FAILED x\n", lines=10, tokens=99, ref=REF, exit_code=2,
                              status_line=True)
    assert codex.startswith("Process exited with code 2\nFAILED x\n[osiris: whole output "
                            "(10 lines, 99 tokens) stored as " + REF)
    claude = shell_replacement("ok", lines=1, tokens=5, ref=REF, exit_code=None,
                               status_line=False)
    assert claude.startswith("ok\n[osiris: whole output")
    cut = shell_replacement("", lines=3, tokens=4, ref=REF, exit_code=0, status_line=True,
                            complete=False)
    assert "[osiris: output as the client kept it, its middle cut (3 lines" in cut


def test_after_a_compaction_older_refs_are_said_to_exist_not_counted() -> None:
    refs = [{"ref": REF, "what": f"output {i}", "tokens": 600} for i in range(4)]
    text = compaction_context("OSIRIS/1 task=x", refs, limit=3)
    assert text.count(REF) == 3
    assert text.endswith("- … and older refs, not listed here")
    assert "older" not in compaction_context("OSIRIS/1 task=x", refs[:3], limit=3)
