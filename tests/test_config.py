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
