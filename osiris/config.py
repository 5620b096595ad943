"""Settings: what OSIRIS is configured with, parsed from the environment.

Entry points (the CLI, the MCP server, the benchmark) call :func:`Settings.from_env`
once and pass the result down; nothing else looks at the environment (which
:mod:`osiris.environ` alone reads). A bad value
raises :class:`~osiris.errors.ConfigError` whose message is one line naming the
variable and what it accepts, so a misconfigured server fails at start, not on
the first tool call.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import UnionType
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

from osiris import environ
from osiris.errors import ConfigError

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
PRUNE_MODES = ("cache_ttl", "conservative", "balanced", "aggressive")


def _get(env: Mapping[str, str], name: str, default: T, parse: Callable[[str], T],
         accepts: str | Callable[[], str], *, secret: bool = False) -> T:
    """The variable parsed, or its default when unset; ConfigError naming what it
    ``accepts`` (a text, or a function giving it: only a bad value pays for it)."""
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return parse(raw.strip())
    except ValueError:
        shown = "(value hidden)" if secret else repr(raw)
        expected = accepts if isinstance(accepts, str) else accepts()
        raise ConfigError(f"{name}={shown} is invalid: expected {expected}") from None


def _positive_int(raw: str) -> int:
    value = int(raw.replace("_", ""))
    if value <= 0:
        raise ValueError(raw)
    return value


def _positive_float(raw: str) -> float:
    value = float(raw)
    if not value > 0 or value == float("inf"):
        raise ValueError(raw)
    return value


def _bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(raw)


def _log_level(raw: str) -> str:
    upper = raw.upper()
    if upper not in _LOG_LEVELS:
        raise ValueError(raw)
    return upper


def _user_home(env: Mapping[str, str]) -> Path | None:
    raw = env.get("HOME", "").strip()
    if raw:
        return Path(raw).absolute()
    try:
        return Path.home()
    except (RuntimeError, KeyError):  # no HOME and no passwd entry (bare containers)
        return None


def _other_tool_dir(raw: str) -> Path | None:
    raw = raw.strip()
    return Path(raw).expanduser().absolute() if raw else None


def _abs_path(raw: str) -> Path | None:
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise ValueError(raw)
    return path


def _on_off(raw: str) -> bool:
    lowered = raw.lower()
    if lowered not in ("on", "off"):
        raise ValueError(raw)
    return lowered == "on"


def _surface(raw: str) -> str:
    if raw not in ("full", "hooks"):
        raise ValueError(raw)
    return raw


def _tool_names(raw: str) -> str:
    if raw not in ("underscore", "dotted"):
        raise ValueError(raw)
    return raw


def _host(raw: str) -> str:
    if not raw or any(c.isspace() or c in "/?#@" for c in raw):
        raise ValueError(raw)
    return raw


def _port(raw: str) -> int:
    value = int(raw)
    if not 0 < value < 65536:
        raise ValueError(raw)
    return value


def _csv(raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _tokens(raw: str) -> tuple[tuple[str, str], ...]:
    import hashlib

    out = []
    for entry in _csv(raw):
        name, sep, token = entry.partition("=")
        if not sep:
            name, token = "token-" + hashlib.sha256(entry.encode()).hexdigest()[:8], entry
        if len(token) < 16 or not name:
            raise ValueError(raw)
        out.append((name, token))
    return tuple(out)


def _prune_mode(raw: str) -> str:
    if raw not in PRUNE_MODES:
        raise ValueError(raw)
    return raw


def _cost_model_names() -> tuple[str, ...]:
    from osiris.core.cost_models import default_cost_models

    return default_cost_models().names


def _cost_model(raw: str) -> str:
    if raw not in _cost_model_names():
        raise ValueError(raw)
    return raw


def _parse_roots(raw: str) -> tuple[Path, ...]:
    roots: list[Path] = []
    for chunk in raw.split(";"):
        part = chunk.strip()
        if not part:
            continue
        path = Path(part).expanduser()
        if not path.is_absolute():
            raise ConfigError(
                f"OSIRIS_ROOTS entry {part!r} is invalid: expected absolute directory paths "
                "separated by ';'"
            )
        if not path.is_dir():
            raise ConfigError(
                f"OSIRIS_ROOTS entry {part!r} is invalid: it is not an existing directory"
            )
        roots.append(path.resolve())
    return tuple(roots)


@dataclass(frozen=True)
class Variable:
    """The environment variable a setting is read from, declared with the setting."""

    name: str
    parse: Callable[[str], Any]
    """The raw value (stripped, not empty) to the setting's; ValueError when bad."""
    accepts: str | Callable[[], str]
    """What a good value is, for the error (a function: only a bad value pays for it)."""
    secret: bool = False
    """Never show the value in an error."""


def variable(name: str, default: T, parse: Callable[[str], T], accepts: str | Callable[[], str],
             *, secret: bool = False) -> T:
    """A setting's field: its default, and the variable :meth:`Settings.from_env` reads
    it from (unset or blank: the default)."""
    found: T = field(default=default,
                     metadata={"variable": Variable(name, parse, accepts, secret)})
    return found


@dataclass(frozen=True)
class Settings:
    """Everything OSIRIS is configured with. Build it with :meth:`from_env` or directly."""

    home: Path = field(default_factory=lambda: Path("~/.osiris").expanduser())
    """OSIRIS_HOME: database, ref store, reports."""
    roots: tuple[Path, ...] = variable(
        "OSIRIS_ROOTS", (), _parse_roots,
        "absolute paths of existing directories, separated by ';'")
    """Directories that file inspection may read (``;``-separated)."""
    cache_ttl_s: int = variable(
        "OSIRIS_CACHE_TTL_S", 300, _positive_int,
        "a positive whole number of seconds, e.g. 300")
    """The provider's prompt-cache TTL assumed by pruning."""
    prune_threshold_tokens: int = variable(
        "OSIRIS_PRUNE_THRESHOLD_TOKENS", 40_000, _positive_int,
        "a positive whole number of tokens, e.g. 40000")
    """Context pressure at which auto-prune starts."""
    dispatch_only: bool = variable(
        "OSIRIS_DISPATCH_ONLY", False, _bool,
        "0 or 1 (also true/false, yes/no, on/off)")
    """List only ``osiris_call`` over MCP."""
    lock_timeout_s: float = variable(
        "OSIRIS_LOCK_TIMEOUT_S", 30.0, _positive_float,
        "a positive number of seconds, e.g. 30")
    """Longest wait for the store's write lock before failing."""
    log_level: str = variable(
        "OSIRIS_LOG_LEVEL", "WARNING", _log_level,
        "one of " + ", ".join(_LOG_LEVELS))
    """Stderr log level of the entry points."""
    max_file_bytes: int = variable(
        "OSIRIS_MAX_FILE_BYTES", 8 * 1024 * 1024, _positive_int,
        "a positive whole number of bytes")
    """Largest file ``observe(kind="file")`` will read."""
    max_payload_bytes: int = variable(
        "OSIRIS_MAX_PAYLOAD_BYTES", 32 * 1024 * 1024, _positive_int,
        "a positive whole number of bytes")
    """Largest payload ``observe`` will accept."""
    cost_model: str = variable(
        "OSIRIS_COST_MODEL", "anthropic-5m", _cost_model,
        lambda: "one of " + ", ".join(_cost_model_names()))
    """The provider cost model used for PrefillPlans and the ledger."""
    context_window_tokens: int = variable(
        "OSIRIS_CONTEXT_WINDOW_TOKENS", 200_000, _positive_int,
        "a positive whole number of tokens, e.g. 200000")
    """The agent model's context window (pressure)."""
    engage_light_tokens: int = variable(
        "OSIRIS_ENGAGE_LIGHT_TOKENS", 300, _positive_int,
        "a positive whole number of tokens")
    """Payloads below this pass through (bystander mode)."""
    engage_standard_tokens: int = variable(
        "OSIRIS_ENGAGE_STANDARD_TOKENS", 1_500, _positive_int,
        "a positive whole number of tokens")
    """From here on, a standard preview."""
    engage_full_tokens: int = variable(
        "OSIRIS_ENGAGE_FULL_TOKENS", 8_000, _positive_int,
        "a positive whole number of tokens")
    """From here on, full engagement (structural preview)."""
    prune_mode: str = variable(
        "OSIRIS_PRUNE_MODE", "cache_ttl", _prune_mode,
        "one of " + ", ".join(PRUNE_MODES))
    """Cache_ttl, conservative, balanced or aggressive."""
    recall_max_tokens: int = variable(
        "OSIRIS_RECALL_MAX_TOKENS", 2_000, _positive_int,
        "a positive whole number of tokens")
    """Default bound of a recall answer."""
    operating_context_path: Path | None = variable(
        "OSIRIS_OPERATING_CONTEXT_PATH", None, _abs_path,
        "an absolute path to a TOML file")
    """The sidecar (default $OSIRIS_HOME/operating-context.toml)."""
    operating_context_enabled: bool = variable(
        "OSIRIS_OPERATING_CONTEXT", True, _on_off,
        "on or off")
    """``off`` switches the operating context off."""
    tool_names: str = variable(
        "OSIRIS_TOOL_NAMES", "underscore", _tool_names,
        "underscore or dotted")
    """``underscore`` (osiris_plan) or ``dotted`` (osiris.plan)."""
    http_host: str = variable(
        "OSIRIS_HTTP_HOST", "127.0.0.1", _host,
        "an IP address or host name, e.g. 127.0.0.1")
    """Address ``osiris serve --http`` binds."""
    http_port: int = variable(
        "OSIRIS_HTTP_PORT", 8765, _port,
        "a port number from 1 to 65535")
    """Port ``osiris serve --http`` binds."""
    http_tokens: tuple[tuple[str, str], ...] = variable(
        "OSIRIS_HTTP_TOKEN", (), _tokens,
        "token or name=token entries, comma-separated, each token at least 16 characters",
        secret=True)
    """Bearer token(s), ``token`` or ``name=token``, comma-separated."""
    http_allowed_hosts: tuple[str, ...] = variable(
        "OSIRIS_HTTP_ALLOWED_HOSTS", (), _csv,
        "host[:port] values, comma-separated")
    """Extra Host values accepted (DNS-rebinding protection)."""
    http_allowed_origins: tuple[str, ...] = variable(
        "OSIRIS_HTTP_ALLOWED_ORIGINS", (), _csv,
        "origins such as https://app.example.com, comma-separated")
    """Extra Origin values accepted."""
    http_max_body_bytes: int | None = variable(
        "OSIRIS_HTTP_MAX_BODY_BYTES", None, _positive_int,
        "a positive whole number of bytes")
    """Request size limit (default: the stdio message limit, the
    payload limit + a quarter + 1 MiB, so both transports accept the same requests)."""
    http_session_idle_s: float = variable(
        "OSIRIS_HTTP_SESSION_IDLE_S", 600.0, _positive_float,
        "a positive number of seconds, e.g. 600")
    """A 2025-11-25 HTTP session with no request for this
    many seconds is closed (its id then gets 404 and the client initializes again)."""
    http_max_sessions: int = variable(
        "OSIRIS_HTTP_MAX_SESSIONS", 256, _positive_int,
        "a positive whole number of sessions")
    """Most 2025-11-25 HTTP sessions open at once; past it a new
    session is refused with 503 until one is closed or expires."""
    dashboard_host: str = variable(
        "OSIRIS_DASHBOARD_HOST", "127.0.0.1", _host,
        "an IP address or host name, e.g. 127.0.0.1")
    """Address ``osiris-dashboard`` binds (tokens beyond loopback)."""
    dashboard_port: int = variable(
        "OSIRIS_DASHBOARD_PORT", 8770, _port,
        "a port number from 1 to 65535")
    """Port ``osiris-dashboard`` binds."""
    user_home: Path | None = None
    """HOME: the user's home directory, where ``osiris install --user`` edits client
    configuration (None when it cannot be determined)."""
    codex_home: Path | None = None
    """CODEX_HOME: the Codex CLI's configuration directory (None: ``~/.codex``)."""
    claude_config_dir: Path | None = None
    """CLAUDE_CONFIG_DIR: Claude Code's configuration directory (None: ``~/.claude``
    for settings and ``~/.claude.json`` for user MCP servers)."""
    store_owner: bool = variable(
        "OSIRIS_STORE_OWNER", True, _on_off,
        "on or off")
    """``on`` (servers, hooks, ``osiris run`` and the CLI reach the
    store through the home's long-lived owner process, :mod:`osiris.owner`) or
    ``off`` (each process opens the database itself, one transaction at a time)."""
    owner_idle_s: float = variable(
        "OSIRIS_OWNER_IDLE_S", 120.0, _positive_float,
        "a positive number of seconds, e.g. 120")
    """An owner with no request for this long exits (and closes the
    database, which any process may then open); the next call starts a new one."""
    hook_timeout_s: float = variable(
        "OSIRIS_HOOK_TIMEOUT_S", environ.DEFAULT_HOOK_TIMEOUT_S, _positive_float,
        "a positive number of seconds, e.g. 3")
    """The longest a hook waits for the store owner, starting it
    included: a command hook, an ``mcp_tool`` hook through the MCP server, and ``osiris
    run`` storing a command's output (plus a second per 4 MiB of it). Past it the call
    goes ahead unchanged and ``hooks.log`` says why; keep it well inside the client's own
    hook timeout (``osiris install`` gives hooks 10 s)."""
    owner_timeout_s: float = variable(
        "OSIRIS_OWNER_TIMEOUT_S", environ.DEFAULT_OWNER_TIMEOUT_S, _positive_float,
        "a positive number of seconds, e.g. 30")
    """The longest any other client of the store owner (the MCP
    servers' tools, the CLI, the dashboard, a notebook) waits for it, starting it
    included; then the call fails with a clear ``owner_timeout`` error."""
    query_timeout_s: float = variable(
        "OSIRIS_QUERY_TIMEOUT_S", 30.0, _positive_float,
        "a positive number of seconds, e.g. 30")
    """The store owner cancels a reader's query (the dashboard's,
    :func:`osiris.engine.remote.query`) that runs longer, and any query whose client has
    gone; the client waits this plus OSIRIS_OWNER_TIMEOUT_S for the answer."""
    write_behind: bool = variable(
        "OSIRIS_WRITE_BEHIND", True, _on_off,
        "on or off")
    """``on`` (the store owner answers hooked tool calls from memory
    and acknowledges them once they are in its fsync'd log, writing the rows to DuckDB in
    batches, :mod:`osiris.store.write_behind`) or ``off`` (every call is its own DuckDB
    transaction)."""
    hook_tool: bool = variable(
        "OSIRIS_HOOK_TOOL", False, _on_off,
        "on or off")
    """``on`` lists ``osiris_hook``, the tool Claude Code's ``mcp_tool``
    hooks call (``osiris install claude-code`` sets it in the server's environment), so
    that a hooked tool call costs no new process; ``off`` (the default) leaves it out."""
    surface: str = variable(
        "OSIRIS_SURFACE", "full", _surface,
        "full or hooks")
    """``full`` (every tool, the resources and the whole doctrine) or
    ``hooks`` (only ``osiris_recall``, no resources, a two-line doctrine): what an agent
    whose client's hooks already route its calls needs, and costs it in every request
    (``osiris install claude-code`` sets it in the server's environment)."""
    early_answers: bool = variable(
        "OSIRIS_EARLY_ANSWERS", True, _on_off,
        "on or off")
    """A stdio server answers the handshake and the first
    ``tools/list`` from its last start's answers while the MCP SDK loads."""

    @property
    def db_path(self) -> Path:
        """The DuckDB state database."""
        return self.home / "osiris.duckdb"

    @property
    def refs_dir(self) -> Path:
        """Root of the content-addressed blob store."""
        return self.home / "refs"

    @property
    def sidecar_path(self) -> Path | None:
        """The operating-context file in force (None when switched off)."""
        if not self.operating_context_enabled:
            return None
        return self.operating_context_path or self.home / "operating-context.toml"

    @property
    def hooks_log_path(self) -> Path:
        """Client hook calls that went through unchecked (``osiris health`` reports them)."""
        return self.home / "hooks.log"

    @property
    def reports_dir(self) -> Path:
        """Where per-home reports and exports go."""
        return self.home / "reports"

    def _checked(self) -> Settings:
        if not self.engage_light_tokens < self.engage_standard_tokens < self.engage_full_tokens:
            raise ConfigError(
                "OSIRIS_ENGAGE_LIGHT_TOKENS < OSIRIS_ENGAGE_STANDARD_TOKENS < "
                "OSIRIS_ENGAGE_FULL_TOKENS must hold (now "
                f"{self.engage_light_tokens}, {self.engage_standard_tokens}, "
                f"{self.engage_full_tokens})")
        return self

    def with_home(self, home: Path) -> Settings:
        """A copy pointing at another home (tests, benchmark workspaces)."""
        return replace(self, home=home)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read every OSIRIS_* variable; raise ConfigError naming the first bad one."""
        env = environ.current() if env is None else env
        home = Path(environ.home_path(env))
        if home.exists() and not home.is_dir():
            raise ConfigError(f"OSIRIS_HOME={env.get('OSIRIS_HOME', '')!r} exists but is not "
                              "a directory")
        values: dict[str, Any] = {
            f.name: _get(env, v.name, f.default, v.parse, v.accepts, secret=v.secret)
            for f in fields(cls) if (v := f.metadata.get("variable")) is not None}
        return cls(
            home=home, user_home=_user_home(env),
            # Other tools' variables never fail OSIRIS's start: they only steer `install`.
            codex_home=_other_tool_dir(env.get("CODEX_HOME", "")),
            claude_config_dir=_other_tool_dir(env.get("CLAUDE_CONFIG_DIR", "")),
            **values)._checked()


def is_loopback(host: str) -> bool:
    """Whether a bind address only accepts connections from this machine (beyond it, the
    HTTP server and the dashboard want OSIRIS_HTTP_TOKEN)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def settings_to_wire(settings: Settings) -> dict[str, object]:
    """``settings`` as JSON values (for the store owner, which runs the engine with the
    caller's settings); :func:`settings_from_wire` reverses it."""
    return {f.name: _to_json(getattr(settings, f.name)) for f in fields(Settings)}


def settings_from_wire(doc: Mapping[str, object]) -> Settings:
    """The settings :func:`settings_to_wire` described (ConfigError on a bad document):
    each value turned back into its field's type (paths, tuples)."""
    if not isinstance(doc, Mapping):
        raise ConfigError("settings must be an object of Settings fields")
    kinds = _field_types()
    values: dict[str, object] = {}
    try:
        for name, raw in doc.items():
            if name not in kinds:
                raise ConfigError(f"unknown setting {name!r}")
            values[name] = _from_json(kinds[name], raw)
        return Settings(**values)._checked()  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"settings the owner cannot use: {exc}") from exc


def _to_json(value: object) -> object:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    return value


def _from_json(kind: Any, raw: object) -> object:
    """A JSON value as the type ``kind`` holds it: a Path, a tuple (of paths, of pairs)."""
    origin, args = get_origin(kind), get_args(kind)
    if raw is None:
        return None
    if kind is Path:
        return Path(str(raw))
    if origin in (Union, UnionType):  # X | None
        (inner,) = [a for a in args if a is not type(None)]
        return _from_json(inner, raw)
    if origin is tuple:
        if not isinstance(raw, list | tuple):
            raise ValueError(f"{raw!r} is not a list")
        if len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]
            return tuple(_from_json(args[0], v) for v in raw)
        if len(args) != len(raw):
            raise ValueError(f"{raw!r} is not a {kind}")
        return tuple(_from_json(a, v) for a, v in zip(args, raw, strict=True))
    return raw


@functools.cache
def _field_types() -> dict[str, Any]:
    """Each setting's type (its annotation, resolved once)."""
    return get_type_hints(Settings)
