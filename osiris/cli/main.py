"""The ``osiris`` command line (and the ``mcp-osiris`` entry point)."""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from osiris._version import __version__
from osiris.config import Settings
from osiris.errors import ConfigError, InvalidInputError, NotFoundError, OsirisError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
HEAD_LINES = 20
"""What ``osiris recall REF`` shows without an option: the first lines."""
CUT_LINE = re.compile(r"\n?… truncated at line \d+ \([^)]*\); continue with start=\d+\s*$")
"""The engine's own cut line (:func:`osiris.core.query`), which speaks MCP."""
# osiris.harness.replay.profiles.PROFILES and
# osiris.harness.replay.retrieval.RETRIEVAL_MODELS, spelled here so that the CLI's
# start-up imports nothing of the harness (a test keeps them equal).
CLIENT_PROFILES = ("claude-code", "codex", "agent-loop")
RETRIEVAL_MODELS = ("visible", "paging", "exact")
# osiris.harness.real_clients.configs.SESSION_CONFIGURATIONS, likewise.
SESSION_CONFIGURATIONS = ("bare", "osiris", "osiris-observe", "osiris-read", "osiris-shell",
                          "osiris-read-shape", "context-mode")


def _configure_logging(level: str) -> None:
    # stdout belongs to JSON-RPC (and to the JSON this CLI prints): logs go to stderr.
    logging.basicConfig(stream=sys.stderr, level=level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _print_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def cmd_health(settings: Settings, args: argparse.Namespace) -> int:
    """Print the health document; exit 1 when unhealthy."""
    from osiris.engine.health import collect_health

    doc = collect_health(settings)
    doc["codex_hooks"] = _codex_hooks(settings, args)
    _print_json(doc)
    return EXIT_OK if doc["healthy"] else EXIT_FAILED


def _codex_hooks(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    """Whether Codex will run OSIRIS's hooks where ``osiris install codex`` put them."""
    from pathlib import Path

    from osiris.clients import codex_trust, install

    found: dict[str, Any] = {}
    for scope in install.SCOPES:
        try:
            target = install.locate("codex", scope, Path.cwd(), settings)
        except OsirisError:
            continue
        if target.hooks_file is None or codex_trust.OWN_COMMAND not in (
                target.hooks_file.read_text(encoding="utf-8", errors="replace")
                if target.hooks_file.is_file() else ""):
            continue
        codex = codex_trust.find_codex(args.codex)
        entry: dict[str, Any] = {"hooks_file": str(target.hooks_file)}
        if codex is None:
            entry.update(status="unknown", why="codex is not on PATH (or pass --codex)")
        else:
            try:
                hooks = codex_trust.list_hooks(codex, target.hooks_file, Path.cwd())
            except codex_trust.CodexUnavailable as exc:
                entry.update(status="unknown", why=str(exc))
            else:
                entry.update(status=codex_trust.overall(
                    hooks, len(install.CLIENT_HOOK_EVENTS["codex"])),
                    hooks=[hook.as_dict() for hook in hooks])
                if entry["status"] != "trusted":
                    entry["what_to_do"] = (f"{codex_trust.TRUST_COMMAND}"
                                           f"{' --project' if scope == 'project' else ''}")
        found[scope] = entry
    return found


def cmd_audit(settings: Settings, args: argparse.Namespace) -> int:
    """Print the non-loss proof of one task; exit 1 when it is not lossless."""
    from osiris.engine.audit import audit_home

    report = audit_home(settings, args.task)  # NotFoundError (exit 2) on a missing home
    _print_json(report.as_dict())
    return EXIT_OK if report.lossless else EXIT_FAILED


def cmd_recall(settings: Settings, args: argparse.Namespace) -> int:
    """Print part of a stored output: what a model that acts through a shell runs."""
    import shlex

    from osiris.engine import open_engine

    if args.start is not None and args.grep is None:
        raise InvalidInputError("--start goes with --grep (a range is --lines A:B)")
    options: dict[str, Any] = {"max_tokens": args.max_tokens}
    if args.grep is not None:
        op = "grep"
        options.update(pattern=args.grep, ignore_case=args.ignore_case, start=args.start)
    elif args.lines is not None:
        op = "range"
        first, _, last = args.lines.partition(":")
        try:
            options.update(start=int(first), end=int(last) if last else int(first))
        except ValueError:
            raise InvalidInputError(f"--lines {args.lines!r}: use A:B, two line numbers "
                                    "(1-based, inclusive)") from None
    elif args.tail is not None:
        op = "tail"
        options["n"] = args.tail
    else:
        op = "head"
        options["n"] = HEAD_LINES
    engine = open_engine(settings)
    try:
        answer = engine.recall(args.ref, op, **{k: v for k, v in options.items()
                                                if v is not None})
    finally:
        engine.close()
    text = str(answer.get("text") or "")
    following = answer.get("next") if answer.get("truncated") else None
    if following and following.get("start") is not None:
        # One hint, in this command's syntax: the engine's own line speaks MCP (start=…).
        text = CUT_LINE.sub("", text)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    again = ["osiris", "recall", args.ref]
    if following and following.get("start") is not None:
        if op == "grep":
            again += ["--grep", args.grep, "--start", str(following["start"])]
            again += ["-i"] if args.ignore_case else []
        else:
            again += ["--lines", f"{following['start']}:{following.get('end', '')}".rstrip(":")]
    elif op in ("head", "tail") and answer.get("lines_total", 0) > (args.tail or HEAD_LINES):
        # head/tail show what they were asked for, whole; say what else there is.
        total, shown = int(answer["lines_total"]), args.tail or HEAD_LINES
        first, last = (shown + 1, min(total, 2 * shown)) if op == "head" else \
            (max(1, total - 2 * shown + 1), total - shown)
        again += ["--lines", f"{first}:{last}"]
    else:
        return EXIT_OK
    sys.stdout.write(f"[osiris: cut here; go on with `{shlex.join(again)}`]\n")
    return EXIT_OK


def cmd_bench(settings: Settings, args: argparse.Namespace) -> int:
    """Run the benchmark and regenerate the reports."""
    from pathlib import Path

    from osiris.harness.bench.runner import run

    repo = Path(args.repo).resolve()
    if args.session or args.workspace:
        return _bench_own_session(repo, args)
    if not (repo / "datasets" / "traces").is_dir():
        sys.stderr.write(f"osiris: {repo} has no datasets/traces: run the benchmark from a "
                         "clone of the OSIRIS repository or pass --repo\n")
        return EXIT_USAGE
    # A quick run is a subset: by default it must not overwrite the committed reports/
    # (nor the README blocks generated from them).
    default = repo / ".osiris-bench" / "quick" if args.quick else repo / "reports"
    out = Path(args.out).resolve() if args.out else default
    try:
        stages = [*args.stage_names, *(args.stage or [])] or None
        run(repo, out, quick=args.quick, stages=stages,
            retrievals=tuple(args.retrieval or ()), client=args.client)
    except ValueError as exc:
        sys.stderr.write(f"osiris: {exc}\n")
        return EXIT_USAGE
    except RuntimeError as exc:  # e.g. the real-client stage's scratch root is busy
        sys.stderr.write(f"osiris: {exc}\n")
        return EXIT_FAILED
    return EXIT_OK


def _bench_own_session(repo: Any, args: argparse.Namespace) -> int:
    """``osiris bench clients --session FILE --workspace DIR_OR_TARBALL``."""
    from pathlib import Path

    from osiris.harness.real_clients.own_session import OwnSessionError, play

    if not (args.session and args.workspace):
        sys.stderr.write("osiris: --session and --workspace go together: the session file "
                         "and the project it ran in\n")
        return EXIT_USAGE
    if [s for s in args.stage_names if s != "clients"] or args.stage:
        sys.stderr.write("osiris: --session runs the clients stage only\n")
        return EXIT_USAGE
    try:
        doc = play(Path(args.session).expanduser(), Path(args.workspace).expanduser(), repo,
                   configurations=tuple(args.configuration or ()) or None,
                   say=lambda m: sys.stderr.write(f"[bench] {m}\n"))
    except OwnSessionError as exc:
        sys.stderr.write(f"osiris: {exc}\n")
        return EXIT_USAGE
    if args.json:
        _print_json(doc)
        return EXIT_OK
    for name, figures in doc["configurations"].items():
        if figures["status"] != "ok":
            sys.stdout.write(f"{name}: {figures['status']}\n")
            continue
        gain = figures["vs_bare_cumulative_input"]
        against = "" if name == "bare" or gain is None else (
            f" ({abs(gain):.2%} {'saved' if gain >= 0 else 'more'})")
        sys.stdout.write(
            f"{name}: {figures['cumulative_input_tokens']:,} input tokens{against}, "
            f"needs kept {figures['needs_kept']}/{figures['needs_total']}, "
            f"{figures['compactions']} compactions, {figures['extra_calls']} extra calls\n")
    return EXIT_OK


def cmd_replay(settings: Settings, args: argparse.Namespace) -> int:
    """Replay the user's own agent sessions: a table, ``--json``, and Parquet."""
    from pathlib import Path

    from osiris.harness import user_sessions as sessions

    if args.schema:
        _print_json(sessions.schema())
        return EXIT_OK
    if not args.paths:
        sys.stderr.write("osiris: replay needs at least one PATH (a transcript file, a "
                         "directory of them, or a glob)\n")
        return EXIT_USAGE
    parquet = Path(args.parquet) if args.parquet else None
    if parquet is not None:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            sys.stderr.write("osiris: --parquet needs pyarrow, which OSIRIS installs: "
                             "pip install 'pyarrow>=26.0'\n")
            return EXIT_USAGE
    inputs = sessions.collect(args.paths)
    if not inputs.files:
        sys.stderr.write("osiris: no transcript found in " + ", ".join(inputs.unmatched)
                         + " (give files, directories or globs that exist)\n")
        return EXIT_USAGE
    progress = sessions.Progress(len(inputs.files), enabled=not args.quiet)
    run = sessions.replay_sessions(inputs, progress=progress, client=args.client,
                                   retrieval=args.retrieval)
    if parquet is not None:
        for path in sessions.write_parquet(run, parquet):
            sys.stderr.write(f"osiris: wrote {path}\n")
    if args.json:
        _print_json(run.as_dict())
    else:
        sys.stdout.write(sessions.table(run))
    if not run.sessions:
        sys.stderr.write(f"osiris: none of the {len(inputs.files)} files could be replayed "
                         "(see skipped)\n")
        return EXIT_FAILED
    return EXIT_OK


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    """Run the MCP server on stdio (default) or Streamable HTTP."""
    from dataclasses import replace

    if not args.http:  # answers the handshake while the SDK loads (server/early.py)
        from osiris.server.early import serve_stdio

        serve_stdio(settings)
        return EXIT_OK
    from osiris.server.transports import serve_http

    if args.host:
        settings = replace(settings, http_host=args.host)
    if args.port is not None:
        if not 0 <= args.port < 65536:
            sys.stderr.write("osiris: --port must be from 0 (any free port) to 65535\n")
            return EXIT_USAGE
        settings = replace(settings, http_port=args.port)
    try:
        serve_http(settings)
    except OSError as exc:
        sys.stderr.write(f"osiris: cannot listen on {settings.http_host}:{settings.http_port}: "
                         f"{exc.strerror or exc}; choose another --port (0: any free port, "
                         "announced on stderr) or stop what holds it\n")
        return EXIT_USAGE
    return EXIT_OK


def cmd_hook(settings: Settings, args: argparse.Namespace) -> int:
    """A client hook: the client's JSON on stdin, its decision JSON on stdout (``python -m
    osiris hook`` takes the lighter path of :mod:`osiris.clients.hook_entry` directly)."""
    from osiris.clients.hook_entry import main as hook_main

    return hook_main([args.client, args.event])


def cmd_install(settings: Settings, args: argparse.Namespace) -> int:
    """Write OSIRIS's MCP server entry (and Claude Code's hooks) into a client's config."""
    from pathlib import Path

    from osiris.clients import install, options

    request = options.build_request(
        settings, client=args.client, scope=args.scope, cwd=Path.cwd(),
        project_dir=args.project_dir, python=args.python, home=args.home, roots=args.roots,
        name=args.name, hooks=args.hooks, force=args.force)
    plan = install.plan_install(request, settings)
    if args.dry_run or request.client != "codex" or request.hooks == "none":
        return _run_client_plan(plan, args.dry_run)
    for note in plan.notes:
        sys.stderr.write(f"osiris: {note}\n")
    result = install.apply_plan(plan)
    # Codex runs only hooks the user trusts: ask Codex, and trust with consent.
    from osiris.clients import codex_trust

    def consent(hooks: list[codex_trust.HookTrust]) -> bool:
        if args.yes:
            return True
        if not sys.stdin.isatty():
            return False

        def say(text: str) -> None:
            sys.stderr.write(text)
            sys.stderr.flush()

        def ask(prompt: str) -> str:
            say(prompt)
            return sys.stdin.readline()

        return codex_trust.consent_prompt(hooks, ask, say)

    trust, notes = install.settle_codex_trust(
        request, settings, codex=codex_trust.find_codex(args.codex), consent=consent)
    result["hook_trust"] = trust
    result["notes"] = [*result["notes"], *notes]
    for note in notes:
        sys.stderr.write(f"osiris: {note}\n")
    _print_json(result)
    return EXIT_OK


def cmd_uninstall(settings: Settings, args: argparse.Namespace) -> int:
    """Remove exactly what ``osiris install`` added to a client's configuration."""
    from pathlib import Path

    from osiris.clients import install, options

    cwd = Path.cwd()
    scope, project_dir = options.resolve_scope(settings, args.scope, args.project_dir, cwd)
    home = options.user_path(settings, args.home, cwd) if args.home else None
    plan = install.plan_uninstall(args.client, scope, project_dir, settings, name=args.name,
                                  home=home)
    return _run_client_plan(plan, args.dry_run)


def _run_client_plan(plan: Any, dry_run: bool) -> int:
    from osiris.clients.install import apply_plan

    for note in plan.notes:
        sys.stderr.write(f"osiris: {note}\n")
    if not dry_run:
        _print_json(apply_plan(plan))
        return EXIT_OK
    sys.stdout.write(plan.diff())
    sys.stderr.write(f"osiris: dry run, nothing written: {plan.message()}\n"
                     if not plan.changed else "osiris: dry run, nothing written\n")
    return EXIT_OK


def cmd_footprint(settings: Settings, args: argparse.Namespace) -> int:
    """Print the tokens the tool definitions cost a client, per tool and in total."""
    from osiris.server.footprint import footprint

    _print_json(footprint(dotted=settings.tool_names == "dotted"))
    return EXIT_OK


def _add_recall(sub: Any) -> None:
    recall = sub.add_parser(
        "recall", help="print part of a stored output (a ref): the lines matching --grep, "
        "a --lines range, the --tail, or the head",
        description="What a model that acts through a shell runs to read back an output "
        "OSIRIS stored (osiris run, the mini-swe-agent integration, osiris.agent). The "
        "answer is bounded (OSIRIS_RECALL_MAX_TOKENS); a cut answer ends with the command "
        "that goes on.")
    recall.add_argument("ref", help="the ref, as printed: mem://sha256:…")
    how = recall.add_mutually_exclusive_group()
    how.add_argument("--grep", metavar="PATTERN", help="lines matching this regular "
                     "expression, with their line numbers")
    how.add_argument("--lines", metavar="A:B", help="lines A to B (1-based, inclusive)")
    how.add_argument("--tail", type=int, metavar="N", help="the last N lines")
    recall.add_argument("--start", type=int, metavar="LINE",
                        help="with --grep: search from this line on")
    recall.add_argument("-i", "--ignore-case", action="store_true",
                        help="with --grep: ignore case")
    recall.add_argument("--max-tokens", type=int, metavar="N",
                        help="bound of the answer (default OSIRIS_RECALL_MAX_TOKENS)")
    recall.set_defaults(func=cmd_recall)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``osiris`` (exposed for docs and tests)."""
    parser = argparse.ArgumentParser(
        prog="osiris", description="OSIRIS: sealed state, verified refs and guard rails "
        "for AI coding agents (an MCP server and a research harness).",
        epilog="The home is OSIRIS_HOME (default ~/.osiris). What creates it: the MCP server "
        "(mcp-osiris, osiris serve) when it starts, a client hook (osiris hook) and any "
        "program that opens an osiris.Engine. osiris health, osiris audit and "
        "osiris-dashboard only read: on a missing home they say so and never create one.")
    parser.add_argument("--version", action="version", version=f"osiris {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    health = sub.add_parser("health", help="check this OSIRIS home, and whether Codex will "
                            "run OSIRIS's hooks; prints JSON")
    health.add_argument("--codex", metavar="PATH", help="the codex command to ask about hook "
                        "trust (default: codex on PATH)")
    health.set_defaults(func=cmd_health)
    audit = sub.add_parser("audit", help="non-loss proof of a task; prints JSON")
    audit.add_argument("--task", required=True, help="task id")
    audit.set_defaults(func=cmd_audit)
    serve = sub.add_parser("serve", help="run the MCP server (stdio unless --http)")
    serve.add_argument("--http", action="store_true", help="Streamable HTTP at /mcp")
    serve.add_argument("--host", help="bind address (default OSIRIS_HTTP_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default OSIRIS_HTTP_PORT or 8765; 0: "
                       "any free port, announced on stderr)")
    serve.set_defaults(func=cmd_serve)
    run = sub.add_parser(
        "run", help="run a shell command, keep its whole output, print a preview if large",
        description="osiris run [--shell SH] [--session ID] [--client NAME] [--home DIR] "
        "[--roots PATHS] [--threshold N] -- COMMAND: runs COMMAND with SH -c in this "
        "directory and environment; prints small output verbatim, stores a large one as a "
        "ref and prints a preview with the ref; exits with the command's status. (Client "
        "hooks never rewrite a shell call: docs/hooks.md of the OSIRIS repository says what "
        "they change.)")
    run.add_argument("rest", nargs=argparse.REMAINDER, help="-- COMMAND")
    hook = sub.add_parser(
        "hook", help="a client hook: reads the client's JSON on stdin (osiris install writes it)",
        description="Run as a client's command hook (Claude Code or Codex). PreToolUse runs "
        "precheck, answers deny/ask with OSIRIS's reason, and turns a large Read into a "
        "window ([routing]); it never rewrites a shell command. PostToolUse observes the "
        "result and replaces a large shell or MCP output with its preview and ref; SessionStart "
        "after a compaction re-injects the manifest and live refs. Malformed input never "
        "blocks the tool: it is logged to $OSIRIS_HOME/hooks.log and allowed with a "
        "warning.")
    # No argparse choices here: argparse exits 2 on a bad value, and exit code 2 makes
    # Claude Code block the user's tool. A wrong client or event is a warning instead.
    hook.add_argument("client", help="the client: claude-code or codex")
    hook.add_argument("event", help="pre-tool-use (PreToolUse), post-tool-use "
                      "(PostToolUse and PostToolUseFailure) or session-start")
    hook.set_defaults(func=cmd_hook)
    _add_install_parsers(sub)
    _add_recall(sub)
    footprint = sub.add_parser("footprint", help="tokens of the tool definitions (JSON)")
    footprint.set_defaults(func=cmd_footprint)
    bench = sub.add_parser("bench", help="run the benchmark; regenerates reports/")
    bench.add_argument("--quick", action="store_true",
                       help="small subset (for tests), into REPO/.osiris-bench/quick")
    bench.add_argument("--repo", default=".", help="clone of the repository (default: .)")
    bench.add_argument("--out", help="report directory (default: REPO/reports, which also "
                       "regenerates README.md's measured blocks)")
    bench.add_argument("stage_names", nargs="*", metavar="STAGE",
                       help="run only these stages (e.g. `osiris bench clients`: the real "
                            "Claude Code and Codex, offline); default: all")
    bench.add_argument("--stage", action="append", help="run only this stage (repeatable)")
    bench.add_argument("--retrieval", choices=RETRIEVAL_MODELS, action="append",
                       help="retrieval model of the trace replays (repeatable; default all "
                       "three: visible, paging, exact)")
    bench.add_argument("--client", choices=CLIENT_PROFILES,
                       help="replay every trace inside this client (default: its own)")
    bench.add_argument("--session", metavar="FILE",
                       help="with the clients stage: play this session file of yours (Claude "
                       "Code or Codex) through its real client, bare and with OSIRIS "
                       "(context-mode where installed)")
    bench.add_argument("--workspace", metavar="DIR_OR_TARBALL",
                       help="the project the --session ran in (a folder or .tar/.tar.gz/.tgz; "
                       "copied, never changed)")
    bench.add_argument("--configuration", action="append", choices=SESSION_CONFIGURATIONS,
                       help="with --session: only these configurations (bare always runs)")
    bench.add_argument("--json", action="store_true",
                       help="with --session: print the figures as JSON")
    bench.set_defaults(func=cmd_bench)
    replay = sub.add_parser(
        "replay", help="what OSIRIS would have saved on your own agent sessions",
        description="Replay agent transcripts (Claude Code stream-json or session files "
        "under ~/.claude/projects, Codex CLI exec --json or rollout files under "
        "~/.codex/sessions, mini-swe-agent, SWE-agent) through raw, client-native, the "
        "oracle and OSIRIS. Prints a table (or --json); --parquet writes sessions, steps "
        "and loopguard tables for notebooks/05_replay.ipynb.")
    replay.add_argument("paths", nargs="*", metavar="PATH",
                        help="transcript files, directories (searched recursively) or globs")
    replay.add_argument("--json", action="store_true", help="print the JSON document")
    replay.add_argument("--parquet", metavar="DIR", help="also write Parquet tables to DIR")
    replay.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    replay.add_argument("--client", choices=CLIENT_PROFILES,
                        help="replay every session inside this client (default: the client "
                        "that produced it; mini-swe-agent and SWE-agent: agent-loop)")
    replay.add_argument("--retrieval", choices=RETRIEVAL_MODELS, default="visible",
                        help="how the scripted agent gets a need back: visible (default: "
                        "only with what its prompt shows), paging (a lower bound) or exact "
                        "(an upper bound)")
    replay.add_argument("--schema", action="store_true",
                        help="print the JSON schema of --json and exit")
    replay.set_defaults(func=cmd_replay)
    return parser


def _add_install_parsers(sub: Any) -> None:
    clients = ("claude-code", "codex", "cursor")  # osiris.clients.install.CLIENTS, unimported
    install = sub.add_parser(
        "install", help="add OSIRIS to a client's configuration (prints JSON)",
        description="Write OSIRIS's MCP server entry, and for Claude Code and Codex its "
        "hooks, into the client's own configuration files. Codex runs only hooks the user "
        "trusted: the install shows them and records Codex's trust after a yes (--yes in "
        "scripts), else says how to trust them later. Merges: other "
        "settings are left byte for byte; re-running changes nothing; a changed file is "
        "first copied to FILE.osiris-backup (one per file). Undo with osiris uninstall. --dry-run "
        "lists the files and the entries without writing them.")
    uninstall = sub.add_parser(
        "uninstall", help="remove what osiris install added (prints JSON)",
        description="Remove OSIRIS's server entry and hooks from the client's "
        "configuration, and the containers and files its install created; nothing else. "
        "A changed file is first copied to FILE.osiris-backup; an uninstall that puts a "
        "file back as it was removes its backup.")
    for parser in (install, uninstall):
        parser.add_argument("client", choices=clients, help="the client to configure")
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--user", dest="scope", action="store_const", const="user",
                           help="the user's configuration in the home directory (default)")
        scope.add_argument("--project", dest="scope", action="store_const", const="project",
                           help="the project's configuration in the current directory")
        parser.add_argument("--project-dir", metavar="DIR",
                            help="the project directory (implies --project)")
        parser.add_argument("--name", default="osiris",
                            help="the MCP server name (default: osiris)")
        parser.add_argument("--dry-run", action="store_true",
                            help="print the unified diff of every file; write nothing")
    install.add_argument("--hooks", choices=("command", "mcp_tool", "none"),
                         help="command hooks (they route large reads and shell calls: "
                         "docs/hooks.md), claude-code only: mcp_tool hooks, the same hooks as "
                         "calls to the running server's osiris_hook (no process per tool "
                         "call; SessionStart stays a command), or none (server entry only)")
    install.add_argument("--python", metavar="PATH", help="the interpreter with mcp-osiris "
                         "installed (default: the one running this command)")
    install.add_argument("--home", metavar="DIR", help="OSIRIS_HOME for the server and hooks "
                         "(default: the current OSIRIS_HOME or ~/.osiris)")
    install.add_argument("--roots", metavar="PATHS", action="append",
                         help="OSIRIS_ROOTS, ';'-separated, repeatable (default: the current "
                         "OSIRIS_ROOTS, else the project directory with --project, else none)")
    install.add_argument("--force", action="store_true", help="replace an entry under "
                         "--name that osiris install did not write (the backup keeps it)")
    install.add_argument("--yes", action="store_true", help="codex: trust OSIRIS's hooks "
                         "in Codex without asking (Codex runs only hooks the user trusted; "
                         "without --yes or a yes at the prompt they are installed untrusted)")
    install.add_argument("--codex", metavar="PATH", help="the codex command to ask about "
                         "hook trust (default: codex on PATH)")
    install.set_defaults(func=cmd_install)
    uninstall.add_argument("--home", metavar="DIR", help="the OSIRIS_HOME that holds the "
                           "install record (default: the one the installed entry names)")
    uninstall.set_defaults(func=cmd_uninstall)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``osiris``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"] and argv[1:2] not in (["-h"], ["--help"]):
        from osiris.clients.runner import main as run_main  # its own parser: see runner

        return run_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[Settings, argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if func is cmd_hook:
        try:
            Settings.from_env()
        except ConfigError as exc:  # a broken configuration must not block the tool
            from osiris.clients.hooks import skipped

            raw = sys.stdin.buffer.read()
            outcome = skipped(None, args.event, f"configuration error: {exc}", raw)
            sys.stdout.write(outcome.stdout + "\n")
            return outcome.exit_code
    return run_with_settings(func, args)


def run_with_settings(func: Callable[[Settings, argparse.Namespace], int],
                      args: argparse.Namespace) -> int:
    """Load settings, configure logging, run ``func``, and map errors to exit codes."""
    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        sys.stderr.write(f"osiris: configuration error: {exc}\n")
        return EXIT_USAGE
    _configure_logging(settings.log_level)
    try:
        return func(settings, args)
    except NotFoundError as exc:
        sys.stderr.write(f"osiris: {exc}\n")
        return EXIT_USAGE
    except OsirisError as exc:
        sys.stderr.write(f"osiris: {exc.code}: {exc}\n")
        return EXIT_FAILED


def serve_stdio_main() -> int:
    """Entry point of ``mcp-osiris``: the MCP server on stdio."""
    return main(["serve", *sys.argv[1:]])
