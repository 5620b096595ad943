"""Codex's trust in OSIRIS's hooks: asked of Codex itself, recorded only with consent.

Codex (0.169) runs a hook only once the user has trusted it, and skips the others
without a word. Trust is a ``[hooks.state."KEY"]`` table with ``trusted_hash`` in the
user's ``config.toml``; KEY names the hooks file, the event and the handler's place
(``/home/u/.codex/hooks.json:pre_tool_use:0:0``) and the hash is Codex's own digest of
the handler. Neither is computed here: ``codex app-server`` answers ``hooks/list`` with
every hook's ``key``, ``currentHash`` and ``trustStatus`` (trusted, untrusted, modified
since trusted, managed), as Codex's own ``/hooks`` screen does.

Recording trust appends one table per hook at the end of the user's ``config.toml``
(or, when the table is already there, sets its ``trusted_hash``), and remembers in the
install record what it wrote and what was there before, so that ``osiris uninstall
codex`` takes back exactly that and nothing else.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import tomlkit

from osiris import environ
from osiris.clients import codex_toml, files
from osiris.clients.files import InstallRecord, TrustedHook
from osiris.clients.install_files import FileEdit, RecordOp
from osiris.config import Settings
from osiris.errors import ConfigError

STATE_TABLE = "hooks.state"
HASH_KEY = "trusted_hash"
APP_SERVER_TIMEOUT_S = 30.0
OWN_COMMAND = " hook codex "
TRUST_COMMAND = "osiris install codex --yes"
RECORD_SUFFIX = "@hook-trust"
"""The install record of the trust lives beside the server's, under NAME@hook-trust."""


class CodexUnavailable(Exception):
    """Codex could not be asked (not installed, too old, or it failed): the message says."""


@dataclass(frozen=True)
class HookTrust:
    """One of OSIRIS's hooks as Codex sees it."""

    key: str
    event: str
    command: str
    current_hash: str
    status: str
    """``trusted``, ``untrusted``, ``modified`` (changed since it was trusted) or
    ``managed`` (an administrator's: always runs)."""

    def as_dict(self) -> dict[str, str]:
        """The JSON shape of ``osiris install`` / ``osiris health``."""
        return {"key": self.key, "event": self.event, "command": self.command,
                "hash": self.current_hash, "status": self.status}


def find_codex(explicit: str | None = None) -> str | None:
    """The ``codex`` command: ``explicit`` (``--codex``), else the one on PATH."""
    if explicit:
        return explicit
    return shutil.which("codex", path=environ.current().get("PATH") or None)


def user_config(settings: Settings) -> Path:
    """The ``config.toml`` that holds Codex's hook trust (the user's, in every scope)."""
    home = settings.codex_home
    if home is None:
        if settings.user_home is None:
            raise ConfigError("cannot tell your home directory (HOME is not set): set HOME "
                              "or CODEX_HOME")
        home = settings.user_home / ".codex"
    return home / "config.toml"


def list_hooks(codex: str, hooks_file: Path, cwd: Path, *,
               timeout_s: float = APP_SERVER_TIMEOUT_S) -> list[HookTrust]:
    """OSIRIS's hooks in ``hooks_file`` as Codex lists them for ``cwd``.

    Runs ``codex app-server`` over stdio (JSON-RPC: ``initialize``, ``initialized``,
    ``hooks/list``), reading nothing else; raises :class:`CodexUnavailable` with the
    reason when Codex cannot answer.
    """
    try:
        process = subprocess.Popen(
            [codex, "app-server"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise CodexUnavailable(f"could not start {codex!r} ({exc.strerror or exc})") from None
    try:
        answer = _hooks_list(process, cwd, timeout_s)
    finally:
        with contextlib.suppress(OSError, ValueError):
            if process.stdin:
                process.stdin.close()
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream:
                stream.close()
    wanted = hooks_file.resolve()
    found = []
    for entry in answer:
        if not isinstance(entry, dict) or OWN_COMMAND not in str(entry.get("command", "")):
            continue
        source = entry.get("sourcePath")
        if not isinstance(source, str) or Path(source).resolve() != wanted:
            continue
        found.append(HookTrust(key=str(entry.get("key", "")), event=str(entry.get("eventName")),
                               command=str(entry.get("command")),
                               current_hash=str(entry.get("currentHash", "")),
                               status=str(entry.get("trustStatus", "untrusted"))))
    return found


def _hooks_list(process: subprocess.Popen[str], cwd: Path, timeout_s: float
                ) -> list[Any]:
    import threading

    assert process.stdin is not None
    assert process.stdout is not None
    answers: dict[int, Any] = {}
    done = threading.Event()

    def read(stdout: IO[str]) -> None:
        for line in stdout:
            with contextlib.suppress(json.JSONDecodeError):
                message = json.loads(line)
                if isinstance(message, dict) and message.get("id") in (1, 2):
                    answers[message["id"]] = message
                    if message["id"] == 2 or "error" in message:
                        break
        done.set()

    reader = threading.Thread(target=read, args=(process.stdout,), daemon=True)
    reader.start()
    try:
        for message in ({"id": 1, "method": "initialize",
                         "params": {"clientInfo": {"name": "osiris", "version": "1"}}},
                        {"method": "initialized"},
                        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}}):
            process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        process.stdin.flush()
    except OSError:
        pass  # it exited: the reader says why below
    if not done.wait(timeout_s):
        process.kill()
        raise CodexUnavailable(f"codex app-server did not answer hooks/list within "
                               f"{timeout_s:.0f} s")
    for message in answers.values():
        if "error" in message:
            error = message["error"]
            raise CodexUnavailable("codex app-server refused "
                                   f"{'hooks/list' if message['id'] == 2 else 'initialize'}: "
                                   f"{error.get('message') if isinstance(error, dict) else error}"
                                   " (hook trust needs Codex 0.169 or later)")
    result = answers.get(2, {}).get("result")
    if not isinstance(result, dict):
        stderr = process.stderr.read()[-400:] if process.stderr and process.poll() is not None \
            else ""
        raise CodexUnavailable("codex app-server gave no hooks/list answer"
                               + (f": {stderr.strip()}" if stderr.strip() else ""))
    hooks: list[Any] = []
    for entry in result.get("data", ()):
        if isinstance(entry, dict):
            hooks.extend(entry.get("hooks") or ())
    return hooks


def overall(hooks: list[HookTrust], expected: int) -> str:
    """One word for ``osiris health``: trusted, untrusted, changed or not-loaded."""
    if not hooks or len(hooks) < expected:
        return "not-loaded"
    statuses = {hook.status for hook in hooks}
    if statuses <= {"trusted", "managed"}:
        return "trusted"
    if "modified" in statuses:
        return "changed"
    return "untrusted"


def trust_edit(config: Path, hooks: list[HookTrust], homes: list[Path], record_home: Path,
               name: str) -> FileEdit:
    """The user's ``config.toml`` with ``trusted_hash`` set for ``hooks`` (and the record)."""
    before = files.read_text(config)
    data = codex_toml.parse(before, config)
    states = _states(data, config)
    text = before or ""
    written: list[TrustedHook] = []
    for hook in hooks:
        if hook.status in ("trusted", "managed"):
            continue
        existing = states.get(hook.key)
        if existing is None:
            text, separator = codex_toml.append_table(text, hook.key,
                                                      {HASH_KEY: hook.current_hash},
                                                      STATE_TABLE)
            written.append(TrustedHook(hook.key, hook.current_hash, None, separator))
        else:
            if not isinstance(existing, dict):
                raise ConfigError(f"{config}: hooks.state.{hook.key!r} is not a table; fix it "
                                  "by hand, then run the command again. Nothing was changed.")
            previous = existing.get(HASH_KEY)
            text = _set_hash(text, hook.key, hook.current_hash)
            written.append(TrustedHook(hook.key, hook.current_hash,
                                       str(previous) if previous is not None else "", None))
    expected = _with_hashes(data, {t.key: t.trusted_hash for t in written})
    _verify(text, expected, config)
    after = text if written else before
    if after == before:
        return FileEdit(config, "hook-trust", before, before)
    record_name = name + RECORD_SUFFIX
    found = files.find_record(homes, config, record_name)
    fresh = InstallRecord(client="codex", created_file=before is None, trusted_hooks=tuple(written))
    ops: list[RecordOp] = []
    if found and found[0] != record_home:
        ops.append(RecordOp(found[0], None, RECORD_SUFFIX))
    ops.append(RecordOp(record_home, found[1].merged(fresh) if found else fresh,
                        RECORD_SUFFIX))
    make_dirs = tuple(files.missing_dirs(files.real_path(config))) if before is None else ()
    return FileEdit(config, "hook-trust", before, after, tuple(ops), make_dirs=make_dirs)


def untrust(text: str | None, config: Path, homes: list[Path], name: str,
            notes: list[str]) -> tuple[str | None, tuple[RecordOp, ...]]:
    """``text`` of the user's ``config.toml`` without the trust OSIRIS recorded, and the
    record to forget. A hash the user changed since stays, with a note."""
    found = files.find_record(homes, config, name + RECORD_SUFFIX)
    if found is None or text is None:
        return text, ()
    data = codex_toml.parse(text, config)
    states = _states(data, config)
    removed: dict[str, str | None] = {}
    for hook in reversed(found[1].trusted_hooks):
        current = states.get(hook.key)
        if not isinstance(current, dict) or current.get(HASH_KEY) != hook.trusted_hash:
            if isinstance(current, dict):
                notes.append(f"{config}: the trust of {hook.key} was changed since osiris "
                             "install recorded it; left untouched")
            continue
        if hook.previous is not None:
            text = _set_hash(text, hook.key, hook.previous or None)
            removed[hook.key] = hook.previous or None
        elif set(current) == {HASH_KEY}:
            text = codex_toml.remove_table(text, config, hook.key, hook.separator, STATE_TABLE)
            removed[hook.key] = None
        else:  # the user added settings to the table: only the hash goes
            text = _set_hash(text, hook.key, None)
            removed[hook.key] = None
    expected = _with_hashes(data, removed, drop_empty=True)
    _verify(text, expected, config)
    after: str | None = text
    if found[1].created_file and not text.strip():
        after = None
    return after, (RecordOp(found[0], None, RECORD_SUFFIX),)


def consent_prompt(hooks: list[HookTrust], ask: Callable[[str], str],
                   say: Callable[[str], None]) -> bool:
    """Show the hooks and ask the person at the terminal; True only on yes."""
    say("Codex runs a hook only once you trust it. OSIRIS wrote these hooks:\n")
    for hook in hooks:
        say(f"  {hook.event}: {hook.command}\n    ({hook.key}, {hook.current_hash}, "
            f"{hook.status})\n")
    answer = ask("Trust them in Codex now? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def untrusted_note(count: int, *, project: bool = False) -> str:
    """What Codex will do with untrusted hooks, and the one command that trusts them."""
    scope = " --project" if project else ""
    return (f"Codex skips hooks it has not been told to trust, without a word: OSIRIS's "
            f"{count} hook(s) are installed but Codex will not run them, so shell outputs "
            "reach the model whole, as without OSIRIS (its MCP server still loads). Trust "
            f"them with: {TRUST_COMMAND}{scope} (or in Codex: /hooks)")


def _states(data: dict[str, Any], config: Path) -> dict[str, Any]:
    hooks = data.get("hooks", {})
    state = hooks.get("state", {}) if isinstance(hooks, dict) else {}
    if not isinstance(state, dict):
        raise ConfigError(f"{config}: hooks.state is not a table as Codex expects; fix the "
                          "file by hand, then run the command again. Nothing was changed.")
    return state


def _set_hash(text: str, key: str, value: str | None) -> str:
    doc = tomlkit.parse(text)
    table: Any = doc["hooks"]["state"][key]
    if value is None:
        del table[HASH_KEY]
    else:
        table[HASH_KEY] = value
    return tomlkit.dumps(doc)


def _with_hashes(data: dict[str, Any], hashes: dict[str, str | None], *,
                 drop_empty: bool = False) -> dict[str, Any]:
    import copy

    out = copy.deepcopy(data)
    if not hashes:
        return out
    state = out.setdefault("hooks", {}).setdefault("state", {})
    for key, value in hashes.items():
        table = state.setdefault(key, {})
        if value is None:
            table.pop(HASH_KEY, None)
            if drop_empty and not table:
                del state[key]
        else:
            table[HASH_KEY] = value
    if drop_empty and not state:
        del out["hooks"]["state"]
        if not out["hooks"]:
            del out["hooks"]
    return out


def _verify(text: str, expected: dict[str, Any], config: Path) -> None:
    import tomllib

    try:
        got = tomllib.loads(text) if text else {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"recording Codex's hook trust in {config} would make it invalid "
                          f"TOML ({exc}); trust the hooks in Codex with /hooks instead. "
                          "Nothing was changed.") from None
    if got != expected:
        raise ConfigError(f"could not record Codex's hook trust in {config} without touching "
                          "other settings; trust the hooks in Codex with /hooks instead. "
                          "Nothing was changed.")


__all__ = ["CodexUnavailable", "HookTrust", "consent_prompt", "find_codex", "list_hooks",
           "overall", "trust_edit", "untrust", "untrusted_note", "user_config"]
