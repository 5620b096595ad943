"""Settings: what OSIRIS is configured with, parsed from the environment.

Entry points (the CLI, the MCP server, the benchmark) call :func:`Settings.from_env`
once and pass the result down; nothing else looks at the environment (which
:mod:`osiris.environ` alone reads). A bad value
raises :class:`~osiris.errors.ConfigError` whose message is one line naming the
variable and what it accepts, so a misconfigured server fails at start, not on
the first tool call.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from osiris import environ
from osiris.errors import ConfigError

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
PRUNE_MODES = ("cache_ttl", "conservative", "balanced", "aggressive")


@dataclass(frozen=True)
class Settings:
    """Everything OSIRIS is configured with. Build it with :meth:`from_env` or directly."""

    home: Path = field(default_factory=lambda: Path("~/.osiris").expanduser())
    """OSIRIS_HOME: database, ref store, reports."""
    roots: tuple[Path, ...] = ()
    """OSIRIS_ROOTS: directories that file inspection may read (``;``-separated)."""
    cache_ttl_s: int = 300
    """OSIRIS_CACHE_TTL_S: the provider's prompt-cache TTL assumed by pruning."""
    prune_threshold_tokens: int = 40_000
    """OSIRIS_PRUNE_THRESHOLD_TOKENS: context pressure at which auto-prune starts."""
    dispatch_only: bool = False
    """OSIRIS_DISPATCH_ONLY: list only ``osiris_call`` over MCP."""
    lock_timeout_s: float = 30.0
    """OSIRIS_LOCK_TIMEOUT_S: longest wait for the store's write lock before failing."""
    log_level: str = "WARNING"
    """OSIRIS_LOG_LEVEL: stderr log level of the entry points."""
    max_file_bytes: int = 8 * 1024 * 1024
    """OSIRIS_MAX_FILE_BYTES: largest file ``observe(kind="file")`` will read."""
    max_payload_bytes: int = 32 * 1024 * 1024
    """OSIRIS_MAX_PAYLOAD_BYTES: largest payload ``observe`` will accept."""
    cost_model: str = "anthropic-5m"
    """OSIRIS_COST_MODEL: the provider cost model used for PrefillPlans and the ledger."""
    context_window_tokens: int = 200_000
    """OSIRIS_CONTEXT_WINDOW_TOKENS: the agent model's context window (pressure)."""
    engage_light_tokens: int = 300
    """OSIRIS_ENGAGE_LIGHT_TOKENS: payloads below this pass through (bystander mode)."""
    engage_standard_tokens: int = 1_500
    """OSIRIS_ENGAGE_STANDARD_TOKENS: from here on, a standard preview."""
    engage_full_tokens: int = 8_000
    """OSIRIS_ENGAGE_FULL_TOKENS: from here on, full engagement (structural preview)."""
    prune_mode: str = "cache_ttl"
    """OSIRIS_PRUNE_MODE: cache_ttl, conservative, balanced or aggressive."""
    recall_max_tokens: int = 2_000
    """OSIRIS_RECALL_MAX_TOKENS: default bound of a recall answer."""
    operating_context_path: Path | None = None
    """OSIRIS_OPERATING_CONTEXT_PATH: the sidecar (default $OSIRIS_HOME/operating-context.toml)."""
    operating_context_enabled: bool = True
    """OSIRIS_OPERATING_CONTEXT: ``off`` switches the operating context off."""
    tool_names: str = "underscore"
    """OSIRIS_TOOL_NAMES: ``underscore`` (osiris_plan) or ``dotted`` (osiris.plan)."""
    http_host: str = "127.0.0.1"
    """OSIRIS_HTTP_HOST: address ``osiris serve --http`` binds."""
    http_port: int = 8765
    """OSIRIS_HTTP_PORT: port ``osiris serve --http`` binds."""
    http_tokens: tuple[tuple[str, str], ...] = ()
    """OSIRIS_HTTP_TOKEN: bearer token(s), ``token`` or ``name=token``, comma-separated."""
    http_allowed_hosts: tuple[str, ...] = ()
    """OSIRIS_HTTP_ALLOWED_HOSTS: extra Host values accepted (DNS-rebinding protection)."""
    http_allowed_origins: tuple[str, ...] = ()
    """OSIRIS_HTTP_ALLOWED_ORIGINS: extra Origin values accepted."""
    http_max_body_bytes: int | None = None
    """OSIRIS_HTTP_MAX_BODY_BYTES: request size limit (default: the stdio message limit, the
    payload limit + a quarter + 1 MiB, so both transports accept the same requests)."""
    http_session_idle_s: float = 600.0
    """OSIRIS_HTTP_SESSION_IDLE_S: a 2025-11-25 HTTP session with no request for this
    many seconds is closed (its id then gets 404 and the client initializes again)."""
    http_max_sessions: int = 256
    """OSIRIS_HTTP_MAX_SESSIONS: most 2025-11-25 HTTP sessions open at once; past it a new
    session is refused with 503 until one is closed or expires."""
    dashboard_host: str = "127.0.0.1"
    """OSIRIS_DASHBOARD_HOST: address ``osiris-dashboard`` binds (tokens beyond loopback)."""
    dashboard_port: int = 8770
    """OSIRIS_DASHBOARD_PORT: port ``osiris-dashboard`` binds."""
    user_home: Path | None = None
    """HOME: the user's home directory, where ``osiris install --user`` edits client
    configuration (None when it cannot be determined)."""
    codex_home: Path | None = None
    """CODEX_HOME: the Codex CLI's configuration directory (None: ``~/.codex``)."""
    claude_config_dir: Path | None = None
    """CLAUDE_CONFIG_DIR: Claude Code's configuration directory (None: ``~/.claude``
    for settings and ``~/.claude.json`` for user MCP servers)."""
    store_owner: bool = True
    """OSIRIS_STORE_OWNER: ``on`` (servers, hooks, ``osiris run`` and the CLI reach the
    store through the home's long-lived owner process, :mod:`osiris.owner`) or
    ``off`` (each process opens the database itself, one transaction at a time)."""
    owner_idle_s: float = 120.0
    """OSIRIS_OWNER_IDLE_S: an owner with no request for this long exits (and closes the
    database, which any process may then open); the next call starts a new one."""
    hook_timeout_s: float = environ.DEFAULT_HOOK_TIMEOUT_S
    """OSIRIS_HOOK_TIMEOUT_S: the longest a hook waits for the store owner, starting it
    included: a command hook, an ``mcp_tool`` hook through the MCP server, and ``osiris
    run`` storing a command's output (plus a second per 4 MiB of it). Past it the call
    goes ahead unchanged and ``hooks.log`` says why; keep it well inside the client's own
    hook timeout (``osiris install`` gives hooks 10 s)."""
    owner_timeout_s: float = environ.DEFAULT_OWNER_TIMEOUT_S
    """OSIRIS_OWNER_TIMEOUT_S: the longest any other client of the store owner (the MCP
    servers' tools, the CLI, the dashboard, a notebook) waits for it, starting it
    included; then the call fails with a clear ``owner_timeout`` error."""
    query_timeout_s: float = 30.0
    """OSIRIS_QUERY_TIMEOUT_S: the store owner cancels a reader's query (the dashboard's,
    :func:`osiris.engine.remote.query`) that runs longer, and any query whose client has
    gone; the client waits this plus OSIRIS_OWNER_TIMEOUT_S for the answer."""
    write_behind: bool = True
    """OSIRIS_WRITE_BEHIND: ``on`` (the store owner answers hooked tool calls from memory
    and acknowledges them once they are in its fsync'd log, writing the rows to DuckDB in
    batches, :mod:`osiris.store.write_behind`) or ``off`` (every call is its own DuckDB
    transaction)."""
    hook_tool: bool = False
    """OSIRIS_HOOK_TOOL: ``on`` lists ``osiris_hook``, the tool Claude Code's ``mcp_tool``
    hooks call (``osiris install claude-code`` sets it in the server's environment), so
    that a hooked tool call costs no new process; ``off`` (the default) leaves it out."""
    surface: str = "full"
    """OSIRIS_SURFACE: ``full`` (every tool, the resources and the whole doctrine) or
    ``hooks`` (only ``osiris_recall``, no resources, a two-line doctrine): what an agent
    whose client's hooks already route its calls needs, and costs it in every request
    (``osiris install claude-code`` sets it in the server's environment)."""
    early_answers: bool = True
    """OSIRIS_EARLY_ANSWERS: a stdio server answers the handshake and the first
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
        defaults = cls()
        home = Path(environ.home_path(env))
        if home.exists() and not home.is_dir():
            raise ConfigError(f"OSIRIS_HOME={env.get('OSIRIS_HOME', '')!r} exists but is not "
                              "a directory")
        return cls(
            home=home,
            roots=_parse_roots(env.get("OSIRIS_ROOTS", "")),
            cache_ttl_s=_get(env, "OSIRIS_CACHE_TTL_S", defaults.cache_ttl_s, _positive_int,
                             "a positive whole number of seconds, e.g. 300"),
            prune_threshold_tokens=_get(env, "OSIRIS_PRUNE_THRESHOLD_TOKENS",
                                        defaults.prune_threshold_tokens, _positive_int,
                                        "a positive whole number of tokens, e.g. 40000"),
            dispatch_only=_get(env, "OSIRIS_DISPATCH_ONLY", defaults.dispatch_only, _bool,
                               "0 or 1 (also true/false, yes/no, on/off)"),
            lock_timeout_s=_get(env, "OSIRIS_LOCK_TIMEOUT_S", defaults.lock_timeout_s,
                                _positive_float, "a positive number of seconds, e.g. 30"),
            log_level=_get(env, "OSIRIS_LOG_LEVEL", defaults.log_level, _log_level,
                           "one of " + ", ".join(_LOG_LEVELS)),
            max_file_bytes=_get(env, "OSIRIS_MAX_FILE_BYTES", defaults.max_file_bytes,
                                _positive_int, "a positive whole number of bytes"),
            max_payload_bytes=_get(env, "OSIRIS_MAX_PAYLOAD_BYTES", defaults.max_payload_bytes,
                                   _positive_int, "a positive whole number of bytes"),
            cost_model=_get(env, "OSIRIS_COST_MODEL", defaults.cost_model, _cost_model,
                            lambda: "one of " + ", ".join(_cost_model_names())),
            context_window_tokens=_get(env, "OSIRIS_CONTEXT_WINDOW_TOKENS",
                                       defaults.context_window_tokens, _positive_int,
                                       "a positive whole number of tokens, e.g. 200000"),
            engage_light_tokens=_get(env, "OSIRIS_ENGAGE_LIGHT_TOKENS",
                                     defaults.engage_light_tokens, _positive_int,
                                     "a positive whole number of tokens"),
            engage_standard_tokens=_get(env, "OSIRIS_ENGAGE_STANDARD_TOKENS",
                                        defaults.engage_standard_tokens, _positive_int,
                                        "a positive whole number of tokens"),
            engage_full_tokens=_get(env, "OSIRIS_ENGAGE_FULL_TOKENS",
                                    defaults.engage_full_tokens, _positive_int,
                                    "a positive whole number of tokens"),
            prune_mode=_get(env, "OSIRIS_PRUNE_MODE", defaults.prune_mode, _prune_mode,
                            "one of " + ", ".join(PRUNE_MODES)),
            recall_max_tokens=_get(env, "OSIRIS_RECALL_MAX_TOKENS", defaults.recall_max_tokens,
                                   _positive_int, "a positive whole number of tokens"),
            operating_context_path=_get(env, "OSIRIS_OPERATING_CONTEXT_PATH", None, _abs_path,
                                        "an absolute path to a TOML file"),
            operating_context_enabled=_get(env, "OSIRIS_OPERATING_CONTEXT", True, _on_off,
                                           "on or off"),
            tool_names=_get(env, "OSIRIS_TOOL_NAMES", defaults.tool_names, _tool_names,
                            "underscore or dotted"),
            http_host=_get(env, "OSIRIS_HTTP_HOST", defaults.http_host, _host,
                           "an IP address or host name, e.g. 127.0.0.1"),
            http_port=_get(env, "OSIRIS_HTTP_PORT", defaults.http_port, _port,
                           "a port number from 1 to 65535"),
            http_tokens=_get(env, "OSIRIS_HTTP_TOKEN", (), _tokens,
                             "token or name=token entries, comma-separated, each token at "
                             "least 16 characters", secret=True),
            http_allowed_hosts=_get(env, "OSIRIS_HTTP_ALLOWED_HOSTS", (), _csv,
                                    "host[:port] values, comma-separated"),
            http_allowed_origins=_get(env, "OSIRIS_HTTP_ALLOWED_ORIGINS", (), _csv,
                                      "origins such as https://app.example.com, comma-separated"),
            http_max_body_bytes=_get(env, "OSIRIS_HTTP_MAX_BODY_BYTES", None, _positive_int,
                                     "a positive whole number of bytes"),
            http_session_idle_s=_get(env, "OSIRIS_HTTP_SESSION_IDLE_S",
                                     defaults.http_session_idle_s, _positive_float,
                                     "a positive number of seconds, e.g. 600"),
            http_max_sessions=_get(env, "OSIRIS_HTTP_MAX_SESSIONS", defaults.http_max_sessions,
                                   _positive_int, "a positive whole number of sessions"),
            dashboard_host=_get(env, "OSIRIS_DASHBOARD_HOST", defaults.dashboard_host, _host,
                                "an IP address or host name, e.g. 127.0.0.1"),
            dashboard_port=_get(env, "OSIRIS_DASHBOARD_PORT", defaults.dashboard_port, _port,
                                "a port number from 1 to 65535"),
            user_home=_user_home(env),
            # Other tools' variables never fail OSIRIS's start: they only steer `install`.
            codex_home=_other_tool_dir(env.get("CODEX_HOME", "")),
            claude_config_dir=_other_tool_dir(env.get("CLAUDE_CONFIG_DIR", "")),
            store_owner=_get(env, "OSIRIS_STORE_OWNER", True, _on_off, "on or off"),
            owner_idle_s=_get(env, "OSIRIS_OWNER_IDLE_S", defaults.owner_idle_s,
                              _positive_float, "a positive number of seconds, e.g. 120"),
            hook_timeout_s=_get(env, "OSIRIS_HOOK_TIMEOUT_S", defaults.hook_timeout_s,
                                _positive_float, "a positive number of seconds, e.g. 3"),
            owner_timeout_s=_get(env, "OSIRIS_OWNER_TIMEOUT_S", defaults.owner_timeout_s,
                                 _positive_float, "a positive number of seconds, e.g. 30"),
            query_timeout_s=_get(env, "OSIRIS_QUERY_TIMEOUT_S", defaults.query_timeout_s,
                                 _positive_float, "a positive number of seconds, e.g. 30"),
            write_behind=_get(env, "OSIRIS_WRITE_BEHIND", True, _on_off, "on or off"),
            hook_tool=_get(env, "OSIRIS_HOOK_TOOL", False, _on_off, "on or off"),
            surface=_get(env, "OSIRIS_SURFACE", defaults.surface, _surface, "full or hooks"),
            early_answers=_get(env, "OSIRIS_EARLY_ANSWERS", True, _on_off, "on or off"),
        )._checked()


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


def is_loopback(host: str) -> bool:
    """Whether a bind address only accepts connections from this machine (beyond it, the
    HTTP server and the dashboard want OSIRIS_HTTP_TOKEN)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_PATH_FIELDS = ("home", "operating_context_path", "user_home", "codex_home",
                "claude_config_dir")


def settings_to_wire(settings: Settings) -> dict[str, object]:
    """``settings`` as JSON values (for the store owner, which runs the engine with the
    caller's settings); :func:`settings_from_wire` reverses it."""
    doc: dict[str, object] = {}
    for name in Settings.__dataclass_fields__:
        value = getattr(settings, name)
        if isinstance(value, Path):
            value = str(value)
        elif isinstance(value, tuple):
            value = [str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v
                     for v in value]
        doc[name] = value
    return doc


def settings_from_wire(doc: Mapping[str, object]) -> Settings:
    """The settings :func:`settings_to_wire` described (ConfigError on a bad document)."""
    if not isinstance(doc, Mapping):
        raise ConfigError("settings must be an object of Settings fields")
    values: dict[str, object] = {}
    known = Settings.__dataclass_fields__
    for name, raw in doc.items():
        if name not in known:
            raise ConfigError(f"unknown setting {name!r}")
        value: object = raw
        if name in _PATH_FIELDS:
            value = None if raw is None else Path(str(raw))
        elif name == "roots":
            value = tuple(Path(str(v)) for v in raw)  # type: ignore[attr-defined]
        elif name == "http_tokens":
            value = tuple((str(a), str(b)) for a, b in raw)  # type: ignore[attr-defined]
        elif isinstance(raw, list):
            value = tuple(raw)
        values[name] = value
    try:
        return Settings(**values)._checked()  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"settings the owner cannot use: {exc}") from exc
