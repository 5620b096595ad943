"""``osiris health``: one JSON document saying whether this home can serve."""

from __future__ import annotations

import json
import platform
from importlib import metadata
from typing import Any

from osiris import owner_wire
from osiris._version import __version__
from osiris.config import Settings
from osiris.core.invariants import RuleSet
from osiris.core.redaction import default_rules
from osiris.core.tokens import default_counter
from osiris.engine.operating_context import OperatingContextLoader
from osiris.engine.rules import RulesLoader
from osiris.errors import OsirisError
from osiris.store import journal, owner_log
from osiris.store.db import fetch_row
from osiris.store.state import Store


def _version_of(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _hook_log(settings: Settings, warnings: list[str]) -> dict[str, Any]:
    """Client hooks that had to let a call through unchecked (``hooks.log``)."""
    path = settings.hooks_log_path
    try:
        lines = path.read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return {"log": str(path), "skipped": 0}
    last: Any = None
    entries: list[Any] = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            entries.append(line[:300])
    # A recorded entry: the call was journaled, only post-commit work (the witness) failed.
    recorded = sum(1 for e in entries if isinstance(e, dict) and e.get("recorded"))
    unchecked = len(entries) - recorded
    if entries:
        last = entries[-1]
        warnings.append(f"{unchecked} client hook call(s) went through unchecked and "
                        f"{recorded} were recorded with a post-commit problem; the last: "
                        f"{last.get('problem') if isinstance(last, dict) else last} "
                        f"(see {path})")
    return {"log": str(path), "skipped": unchecked, "recorded_with_problems": recorded,
            "last": last}


OWNER_PROBE_S = 2.0
"""How long health waits for a running store owner to answer a ping."""


def _store_owner(settings: Settings, problems: list[str]) -> tuple[dict[str, Any], bool]:
    """The home's store owner: whether one answers, and a start that failed (reported,
    then forgotten, so that the next call tries to start one again). Also whether the
    database may be opened here: not while an owner that does not answer holds it (the
    wait would be OSIRIS_LOCK_TIMEOUT_S long, to say what this says now)."""
    home = settings.home
    section: dict[str, Any] = {"state": "not running", "pid": None, "failed_start": None}
    failure = owner_wire.failed_start(home)
    if failure is not None:
        section["failed_start"] = failure
        db = failure.get("database") or str(settings.db_path)
        problems.append(
            f"the store owner could not open {db} when it last started: "
            f"{failure.get('message')}. Until it can, every hook lets its call through "
            f"unchecked (see {settings.hooks_log_path}). What to do: move a damaged "
            f"database aside (mv {db} {db}.damaged, and {db}.wal if there is one): the "
            f"next call starts a new one, and the refs in {settings.refs_dir} are kept; a "
            "database of a newer OSIRIS needs that OSIRIS. This report clears the "
            "remembered failure: the next call tries to start an owner again")
        owner_wire.forget_failed_start(home)
    probe = owner_wire.OwnerClient(home, {}, spawn=False, timeout_s=OWNER_PROBE_S)
    try:
        stats, _ = probe.request({"op": "ping"})
    except owner_wire.OwnerTimeout as exc:
        section.update(state="not answering", pid=probe.owner_pid or None)
        problems.append(f"{exc}. Hooks let their calls through unchecked meanwhile; the "
                        "database was not checked (the owner holds it)")
        return section, False
    except OsirisError:
        return section, True
    finally:
        probe.close()
    section.update(state="serving", pid=stats.get("pid"))
    if isinstance(stats.get("on_duckdb"), dict):
        section["on_duckdb"] = stats["on_duckdb"]
    return section, True


def _quarantine(settings: Settings, warnings: list[str]) -> dict[str, Any]:
    """Owner-log records that could not be applied (osiris.store.owner_log)."""
    path = owner_log.quarantine_path(settings.home)
    entries = owner_log.quarantined(settings.home)
    last = {k: entries[-1].get(k) for k in ("time", "file", "lsn", "problem")} \
        if entries else None
    if last is not None:
        warnings.append(
            f"{len(entries)} record(s) of the store owner's log could not be applied and "
            f"are kept in {path}, byte for byte (the calls they hold are not in the "
            f"database); the last: number {last['lsn']}, "
            f"{str(last['problem']).splitlines()[0] if last['problem'] else '?'}. Keep the file "
            "for a bug report; OSIRIS never empties it")
    return {"quarantine": str(path), "records": len(entries), "last": last}


def _store(settings: Settings, doc: dict[str, Any], loader: RulesLoader,
           problems: list[str], warnings: list[str]) -> tuple[RuleSet, list[str]]:
    """The database's part of the document (schema, tasks, refs, journal); the rules
    with the database's."""
    store = Store(settings, create=False)  # a health check must not create the home
    try:
        applied = store.db.applied_migrations()
        with store.read() as con:
            refs_count, refs_bytes = fetch_row(
                con, "SELECT count(*), coalesce(sum(size_bytes), 0) FROM refs")
            tasks = fetch_row(con, "SELECT count(*) FROM tasks")[0]
            chain = journal.verify_chain(con, settings.home)
            invariants, rule_problems = loader.load(None, con)
    finally:
        store.close()
    doc["schema"] = {"version": store.db.schema_version, "applied": applied}
    doc["tasks"] = int(tasks)
    doc["refs"] = {"count": int(refs_count), "bytes": int(refs_bytes)}
    doc["journal"] = {"events": chain.events, "head_seq": chain.head_seq,
                      "head_hash": chain.head_hash, "chain_ok": chain.ok,
                      "witness_seq": chain.witness_seq,
                      "witness_lag_events": chain.witness_lag,
                      "violations": list(chain.violations[:10])}
    warnings.extend(chain.notes)
    if not chain.ok:
        problems.append(f"journal verification failed: {chain.violations[0]}")
    return invariants, rule_problems


def collect_health(settings: Settings) -> dict[str, Any]:
    """Gather the health document; ``healthy`` is False when a check failed."""
    problems: list[str] = []
    warnings: list[str] = []
    doc: dict[str, Any] = {
        "healthy": True,
        "version": __version__,
        "python": platform.python_version(),
        "duckdb": _version_of("duckdb"),
        "mcp": _version_of("mcp"),
        "home": str(settings.home),
        "roots": [str(r) for r in settings.roots],
    }
    try:
        counter = default_counter()
        doc["token_encoding"] = {"name": counter.encoding_name, "ok": counter.count("ok") == 1}
    except OsirisError as exc:
        doc["token_encoding"] = {"name": None, "ok": False}
        problems.append(str(exc))
    secret_rules = default_rules()
    doc["redaction_rules"] = {"version": secret_rules.version, "rules": len(secret_rules.rules)}
    loader = RulesLoader(settings.roots)
    invariants: RuleSet | None = None
    rule_problems: list[str] = []
    doc["store_owner"], may_open = _store_owner(settings, problems)
    if may_open:
        try:
            invariants, rule_problems = _store(settings, doc, loader, problems, warnings)
        except OsirisError as exc:
            problems.append(str(exc))
        except Exception as exc:  # whatever the store holds, health reports, never fails
            problems.append(f"the store of {settings.home} could not be checked: "
                            f"{type(exc).__name__}: {exc}")
    doc["owner_log"] = _quarantine(settings, warnings)
    if not settings.roots:
        warnings.append("OSIRIS_ROOTS is empty: observe(kind='file') cannot read any file")
    if invariants is None:  # the store was unusable: read the files alone
        invariants, rule_problems = loader.load(None)
    sidecar = OperatingContextLoader(settings.sidecar_path)
    context_findings = sidecar.findings()
    doc["operating_context"] = {"path": str(settings.sidecar_path) if settings.sidecar_path
                                else None, "active": sidecar.load()[0] is not None,
                                "findings": context_findings}
    warnings.extend(context_findings)
    doc["invariants"] = {"files": [str(p) for p in loader.files() if p.exists()],
                         "rules": len(invariants.invariants), "problems": rule_problems}
    warnings.extend(rule_problems)
    doc["client_hooks"] = _hook_log(settings, warnings)
    doc["warnings"] = warnings
    doc["problems"] = problems
    doc["healthy"] = not problems
    return doc
