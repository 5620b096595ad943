"""A stuck or broken store owner costs a call milliseconds, never the call (issue 36,
items 7 and 8): an owner-log record that cannot be applied.

Real owner processes, the real hook command fed Claude Code's payload, the real
``osiris health``. No timings are asserted: a call that hangs fails by its subprocess
timeout (:data:`WAIT_S`, far past the hooks' bound), one that is bounded passes.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

from osiris.store import owner_log, statements
from osiris.store.db import ask_owner_to_release
from tests.conftest import home_rows, run_cli

WAIT_S = 20.0
"""How long a test lets a hook or command run: far past the hooks' 3 s bound, far short
of forever."""
PRE = {"session_id": "s-stuck", "cwd": "/tmp", "hook_event_name": "PreToolUse",
       "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}
POST = {**PRE, "hook_event_name": "PostToolUse",
        "tool_response": {"stdout": "a\nb\n", "stderr": "", "interrupted": False}}


def _hook(event: str, doc: dict[str, Any] = PRE, env: dict[str, str] | None = None,
          ) -> dict[str, Any]:
    """The real hook command's answer (exit 0 always: a hook never blocks a tool)."""
    done = run_cli("hook", "claude-code", event, stdin=json.dumps(doc), env=env,
                   timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


def _logged(home: Path) -> list[dict[str, Any]]:
    """The lines of hooks.log (calls OSIRIS let through unchecked)."""
    path = home / "hooks.log"
    lines = path.read_text("utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


def _record(lsn: int, items: list[list[Any]]) -> bytes:
    """An owner-log line, checksummed as the owner writes it."""
    text = json.dumps([lsn, items], separators=(",", ":"))
    return f"{zlib.crc32(text.encode()):08x} {text}\n".encode()


def _ledger(kind: str, ts_us: object = 1_700_000_000_000_000) -> list[Any]:
    """A ledger row, as the owner logs one."""
    return [statements.LEDGER.sql, [ts_us, None, None, kind, None, 0, "cl100k_base", 0, 0,
                                    0, None, 0.0, 0, "{}"]]


def test_a_bad_owner_log_record_is_set_aside_and_the_rest_applied(osiris_home: Path,
                                                                  ) -> None:
    assert "systemMessage" not in _hook("pre-tool-use")
    assert ask_owner_to_release(osiris_home)
    # (Read through OSIRIS's lock: the owner has closed the file and emptied its log.)
    ((done,),) = home_rows(osiris_home, "SELECT applied_lsn FROM owner_log")
    refused = _record(done + 1, [_ledger("refused", ts_us="not a time")])  # checksummed
    flipped = _record(done + 2, [_ledger("flipped")]).replace(b"flipped", b"flopped")
    good = _record(done + 3, [_ledger("after.the.bad.ones")])
    log = owner_log.log_path(osiris_home)
    log.write_bytes(refused + flipped + good)
    # osiris health opens the store itself (no owner runs): it applies the log first.
    health = run_cli("health", timeout=WAIT_S)
    assert "Traceback" not in health.stderr, health.stderr
    doc = json.loads(health.stdout)
    assert doc["healthy"], doc["problems"]
    kept = owner_log.quarantine_path(osiris_home)
    assert doc["owner_log"]["quarantine"] == str(kept) and doc["owner_log"]["records"] == 2
    assert any(str(kept) in warning for warning in doc["warnings"])
    entries = [json.loads(line) for line in kept.read_text("utf-8").splitlines()]
    assert sorted(e["record"].encode() + b"\n" for e in entries) == sorted([refused, flipped])
    assert "ConversionException" in entries[0]["problem"] or \
        "ConversionException" in entries[1]["problem"]
    assert home_rows(osiris_home, "SELECT count(*) FROM ledger WHERE kind ="
                     " 'after.the.bad.ones'") == [(1,)]
    assert not owner_log.has_records(osiris_home)
    # The same left for an owner, whose first call applies the log: the hooks go on.
    log.write_bytes(_record(done + 4, [_ledger("refused again", ts_us="never")])
                    + _record(done + 5, [_ledger("applied.by.the.owner")]))
    assert "systemMessage" not in _hook("pre-tool-use", {**PRE, "session_id": "s-next"})
    assert "systemMessage" not in _hook("post-tool-use", {**POST, "session_id": "s-next"})
    assert len(owner_log.quarantined(osiris_home)) == 3
    assert home_rows(osiris_home, "SELECT count(*) FROM ledger WHERE kind ="
                     " 'applied.by.the.owner'") == [(1,)]
    assert _logged(osiris_home) == []
