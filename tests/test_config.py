"""Configuration: one module reads the environment; bad values fail in one clear line."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from osiris.config import Settings
from osiris.errors import ConfigError
from tests.conftest import run_cli


def test_defaults(tmp_path: Path) -> None:
    s = Settings.from_env({"OSIRIS_HOME": str(tmp_path)})
    assert s.home == tmp_path
    assert (s.cache_ttl_s, s.prune_threshold_tokens, s.dispatch_only) == (300, 40_000, False)
    assert s.roots == ()
    assert s.db_path == tmp_path / "osiris.duckdb"


def test_values_are_parsed(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    s = Settings.from_env({"OSIRIS_HOME": str(tmp_path), "OSIRIS_ROOTS": f"{a};{b};",
                           "OSIRIS_CACHE_TTL_S": "3600", "OSIRIS_DISPATCH_ONLY": "true",
                           "OSIRIS_PRUNE_THRESHOLD_TOKENS": "10_000"})
    assert s.roots == (a.resolve(), b.resolve())
    assert (s.cache_ttl_s, s.dispatch_only, s.prune_threshold_tokens) == (3600, True, 10_000)


@pytest.mark.parametrize(("name", "value", "accepts"), [
    ("OSIRIS_CACHE_TTL_S", "soon", "positive whole number of seconds"),
    ("OSIRIS_CACHE_TTL_S", "-5", "positive whole number of seconds"),
    ("OSIRIS_PRUNE_THRESHOLD_TOKENS", "0", "positive whole number of tokens"),
    ("OSIRIS_DISPATCH_ONLY", "maybe", "0 or 1"),
    ("OSIRIS_LOCK_TIMEOUT_S", "nan", "positive number of seconds"),
    ("OSIRIS_HOOK_TIMEOUT_S", "0", "positive number of seconds"),
    ("OSIRIS_OWNER_TIMEOUT_S", "soon", "positive number of seconds"),
    ("OSIRIS_QUERY_TIMEOUT_S", "inf", "positive number of seconds"),
    ("OSIRIS_LOG_LEVEL", "LOUD", "one of DEBUG"),
    ("OSIRIS_ROOTS", "relative/dir", "absolute directory paths"),
    ("OSIRIS_ROOTS", "/no/such/dir/anywhere", "not an existing directory"),
])
def test_bad_value_fails_at_start_with_one_line(name: str, value: str, accepts: str) -> None:
    with pytest.raises(ConfigError, match=accepts):
        Settings.from_env({name: value})
    result = run_cli("health", env={name: value})
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert name in lines[0] and accepts in lines[0]


def test_home_that_is_a_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    result = run_cli("health", env={"OSIRIS_HOME": str(f)})
    assert result.returncode == 2
    assert "OSIRIS_HOME" in result.stderr


def test_light_clients_send_every_variable_the_settings_read() -> None:
    # Hooks send the owner environ.settings_variables(); the owner parses them with
    # Settings.from_env. A variable from_env reads that is not sent would be lost.
    import ast
    import inspect

    from osiris import config, environ

    declared = {v.name for f in fields(Settings)
                if (v := f.metadata.get("variable")) is not None}
    read = declared | {node.args[0].value for node in ast.walk(ast.parse(inspect.getsource(
        config))) if isinstance(node, ast.Call) and node.args
        and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
        and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
        and node.args[0].value.isupper()}
    assert {"OSIRIS_HOME", "CODEX_HOME", "OSIRIS_ROOTS", "OSIRIS_HTTP_TOKEN"} <= read
    assert len(read) > 30
    assert all(name.startswith(environ.PREFIX) or name in environ.OTHER_NAMES for name in read)


def test_light_and_full_settings_agree_on_the_home(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from osiris import environ

    monkeypatch.chdir(tmp_path)
    for raw in ("", "rel/../home", "~/x", str(tmp_path / "abs")):
        env = {"OSIRIS_HOME": raw, "HOME": str(tmp_path)}
        sent = environ.settings_variables(env)
        assert Settings.from_env(env).home == Settings.from_env(sent).home \
            == Path(sent["OSIRIS_HOME"])
        assert Path(sent["OSIRIS_HOME"]).is_absolute()


def test_light_clients_bound_their_wait_as_the_settings_say(tmp_path: Path) -> None:
    # A hook reads its bound without parsing the settings (osiris.environ); the owner's
    # wire keeps its own default (it imports nothing of OSIRIS but its errors).
    from osiris import environ, owner_wire

    defaults = Settings()
    assert owner_wire.DEFAULT_TIMEOUT_S == environ.DEFAULT_OWNER_TIMEOUT_S \
        == defaults.owner_timeout_s
    assert environ.hook_timeout_s({}) == defaults.hook_timeout_s == 3.0
    env = {"OSIRIS_HOME": str(tmp_path), "OSIRIS_HOOK_TIMEOUT_S": " 1.5 "}
    assert environ.hook_timeout_s(env) == Settings.from_env(env).hook_timeout_s == 1.5
    for bad in ("0", "-2", "soon", "inf", "nan"):  # the owner reports it; the wait is kept
        assert environ.hook_timeout_s({"OSIRIS_HOOK_TIMEOUT_S": bad}) == 3.0


def test_every_setting_crosses_to_the_store_owner_unchanged(tmp_path: Path) -> None:
    # The owner runs the engine with its client's settings, sent as JSON: every field,
    # set here to a value that is not its default, must come back as it was.
    import json

    from osiris.config import settings_from_wire, settings_to_wire
    from osiris.core.cost_models import default_cost_models

    env = {
        "OSIRIS_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "user"),
        "CODEX_HOME": str(tmp_path / "codex"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"),
        "OSIRIS_ROOTS": str(tmp_path), "OSIRIS_CACHE_TTL_S": "301",
        "OSIRIS_PRUNE_THRESHOLD_TOKENS": "40001", "OSIRIS_DISPATCH_ONLY": "1",
        "OSIRIS_LOCK_TIMEOUT_S": "31.5", "OSIRIS_LOG_LEVEL": "info",
        "OSIRIS_MAX_FILE_BYTES": "1001", "OSIRIS_MAX_PAYLOAD_BYTES": "1002",
        "OSIRIS_COST_MODEL": next(n for n in default_cost_models().names
                                  if n != Settings().cost_model),
        "OSIRIS_CONTEXT_WINDOW_TOKENS": "100000", "OSIRIS_ENGAGE_LIGHT_TOKENS": "301",
        "OSIRIS_ENGAGE_STANDARD_TOKENS": "1501", "OSIRIS_ENGAGE_FULL_TOKENS": "8001",
        "OSIRIS_PRUNE_MODE": "balanced", "OSIRIS_RECALL_MAX_TOKENS": "2001",
        "OSIRIS_OPERATING_CONTEXT_PATH": str(tmp_path / "oc.toml"),
        "OSIRIS_OPERATING_CONTEXT": "off", "OSIRIS_TOOL_NAMES": "dotted",
        "OSIRIS_HTTP_HOST": "0.0.0.0", "OSIRIS_HTTP_PORT": "9000",
        "OSIRIS_HTTP_TOKEN": "alice=alice-secret-token-0001,bob-secret-token-0002",
        "OSIRIS_HTTP_ALLOWED_HOSTS": "a.example,b.example:8080",
        "OSIRIS_HTTP_ALLOWED_ORIGINS": "https://a.example",
        "OSIRIS_HTTP_MAX_BODY_BYTES": "5000", "OSIRIS_HTTP_SESSION_IDLE_S": "60",
        "OSIRIS_HTTP_MAX_SESSIONS": "3", "OSIRIS_DASHBOARD_HOST": "0.0.0.0",
        "OSIRIS_DASHBOARD_PORT": "9001", "OSIRIS_STORE_OWNER": "off",
        "OSIRIS_OWNER_IDLE_S": "5", "OSIRIS_HOOK_TIMEOUT_S": "2",
        "OSIRIS_OWNER_TIMEOUT_S": "3", "OSIRIS_QUERY_TIMEOUT_S": "4",
        "OSIRIS_WRITE_BEHIND": "off", "OSIRIS_HOOK_TOOL": "on", "OSIRIS_SURFACE": "hooks",
        "OSIRIS_EARLY_ANSWERS": "off"}
    chosen = Settings.from_env(env)
    defaults = Settings()
    assert [f.name for f in fields(Settings)
            if getattr(chosen, f.name) == getattr(defaults, f.name)] == []
    assert settings_from_wire(json.loads(json.dumps(settings_to_wire(chosen)))) == chosen
    for bad, message in (({"surface": "full", "nope": 1}, "unknown setting 'nope'"),
                         ({"roots": 5}, "cannot use"), ({"http_tokens": [["a"]]}, "cannot use"),
                         ([1, 2], "must be an object")):
        with pytest.raises(ConfigError, match=message):
            settings_from_wire(bad)  # type: ignore[arg-type]
