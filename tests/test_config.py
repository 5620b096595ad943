"""Configuration: one module reads the environment; bad values fail in one clear line."""

from __future__ import annotations

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

    read = {node.args[1].value if isinstance(node.func, ast.Name) else node.args[0].value
            for node in ast.walk(ast.parse(inspect.getsource(config)))
            if isinstance(node, ast.Call) and node.args
            and ((isinstance(node.func, ast.Name) and node.func.id == "_get"
                  and isinstance(node.args[1], ast.Constant))
                 or (isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                     and isinstance(node.args[0], ast.Constant)
                     and isinstance(node.args[0].value, str)
                     and node.args[0].value.isupper()))}
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
