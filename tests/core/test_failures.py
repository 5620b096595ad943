"""Error signatures survive the noise of paths, numbers and addresses; test outcomes."""

from __future__ import annotations

from osiris.core.failures import error_signature, is_test_command, normalise, outcome_of_test_run


def test_the_same_mistake_has_the_same_signature() -> None:
    a = error_signature("Bash", "Traceback (most recent call last):\n"
                        '  File "/tmp/run-8812/app.py", line 42, in <module>\n'
                        "KeyError: 'user_id' at 0x7f3a2c1b9e80")
    b = error_signature("Bash", "Traceback (most recent call last):\n"
                        '  File "/home/ci/build-17/app.py", line 97, in <module>\n'
                        "KeyError: 'user_id' at 0x55d1e0a3f120")
    assert a.digest == b.digest
    assert a.text == "KeyError: 'user_id' at <addr>"
    other_tool = error_signature("Read", "KeyError: 'user_id'")
    assert other_tool.digest != a.digest


def test_normalise_strips_variable_parts() -> None:
    line = ("2026-11-30T09:52:40Z ERROR req 8f3c2a1b-9d4e-4f6a-b7c8-1234567890ab "
            "failed after 1532 ms in src/api/users.ts:88")
    assert normalise(line) == "<ts> ERROR req <id> failed after <n> ms in <path>:<n>"


def test_test_runs_are_recognised() -> None:
    assert is_test_command("cd repo && python -m pytest tests/unit -q")
    assert is_test_command("npm run test -- --watch=false")
    assert is_test_command("go test ./...")
    assert not is_test_command("cat tests/test_x.py")
    assert outcome_of_test_run("..........\n13 passed in 0.52s", False) is True
    assert outcome_of_test_run("FAILED tests/a.py::t\n3 failed, 10 passed in 2s", False) is False
    assert outcome_of_test_run("Tests:       2 failed, 40 passed, 42 total", False) is False
    assert outcome_of_test_run("Tests:       42 passed, 42 total", False) is True
    assert outcome_of_test_run("0 failed, 5 passed", False) is True
    assert outcome_of_test_run("compiling...", True) is False
    assert outcome_of_test_run("compiling...", False) is None
