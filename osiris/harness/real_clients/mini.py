"""``osiris bench mini``: the bundled mini-swe-agent trajectories replayed in the real
mini-swe-agent (PyPI 2.x), bare and with OSIRIS, offline.

Each trajectory (``datasets/traces/mini-swe-agent__*``, SWE-bench tasks) runs in a local
checkout of its task's repository built from the registries: the package's sdist at the
release nearest the task (:data:`SOURCES`; ``.ci/install-swe-sources`` fetches them into
``.tools/swe-sources/`` and checks their sha256), unpacked and committed to a fresh git
repository (so ``git diff`` and ``git checkout`` answer as in the task's container). The
trajectory's ``/testbed`` is mapped onto that checkout. The sdist is not the task's
commit: files differ a little, tests and tools the container had (the package itself
installed, ``pylint`` on the ``PATH``) are missing, so some commands answer differently
than in the log: the same way in both configurations.

The real ``mini`` command runs with ``mini.yaml`` (its default configuration: outputs
over 10,000 characters are cut to their head and tail) and the bash tool, its model
played by :class:`~osiris.harness.real_clients.trace_script.TraceScript` over Chat
Completions (litellm's ``openai/…`` provider pointed at the scripted model server): the
trajectory's commands in order, and each need the prompt no longer shows retrieved by
the ``visible`` rule, with ``osiris recall`` where OSIRIS's preview or stub shows the
command, else by running the source command again through ``grep``. Configurations:
``bare`` (mini-swe-agent's ``DefaultAgent``) and ``osiris``
(:class:`osiris.clients.minisweagent.OsirisAgent`, OSIRIS's defaults). Every figure is
counted from the request bodies, as for the real clients (:func:`.sessions.measure`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osiris.core.cost_models import default_cost_models
from osiris.core.tokens import default_counter
from osiris.harness.importers.traces import find_traces, load_trace
from osiris.harness.real_clients.model_server import ModelServer
from osiris.harness.real_clients.run import FIXED_GIT_DATES, MINI_SWE_AGENT, ClientRun, Workspace
from osiris.harness.real_clients.sessions import Measured, _Counts, measure, neutraliser
from osiris.harness.real_clients.tables import _pct
from osiris.harness.real_clients.trace_plan import PathMap, plan
from osiris.harness.real_clients.trace_script import TraceScript
from osiris.harness.real_clients.workspaces import WorkspaceError, commit_tree
from osiris.harness.replay.workloads import session_from_trace

BARE, OSIRIS = "bare", "osiris"
CONFIGURATIONS = (BARE, OSIRIS)
AGENT_CLASSES = {BARE: "minisweagent.agents.default.DefaultAgent",
                 OSIRIS: "osiris.clients.minisweagent.OsirisAgent"}
TRACE_CWD = "/testbed"
"""Where SWE-bench's containers hold the repository (the trajectories' working dir)."""
SESSION_TIMEOUT_S = 1_800.0
ROOT = Path("/tmp/osiris-bench-mini")  # noqa: S108 - fixed on purpose (see below)
"""A fixed scratch root: its paths reach the prompts."""


@dataclass(frozen=True)
class Source:
    """An sdist a task's checkout is built from."""

    project: str
    version: str
    filename: str
    sha256: str


SOURCES = {instance: Source(**fields) for instance, fields in json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "swe_sources.json").read_text("utf-8")
).items() if not instance.startswith("_")}
"""Instance → sdist (``osiris/harness/data/swe_sources.json``): the release nearest the
task's commit (pylint 2.14.0 has the trajectory's ``_discover_files`` at the line it
reads; Django 4.1.3 and pytest 5.1.2 predate the fixes)."""


def sources_dir(repo: Path) -> Path:
    """Where ``.ci/install-swe-sources`` puts the sdists."""
    return repo / ".tools" / "swe-sources"


def unpack_sdist(sdist: Path, source: Source, project: Path) -> None:
    """Fill the empty ``project`` with the sdist's tree (its one top folder) and commit
    it; WorkspaceError when the file is missing, altered or unsafe."""
    if not sdist.is_file():
        raise WorkspaceError(f"{sdist} is missing: run .ci/install-swe-sources")
    actual = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if actual != source.sha256:
        raise WorkspaceError(f"{sdist} has sha256 {actual}, expected {source.sha256}")
    staging = project.parent / f".{project.name}-unpack"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(sdist, "r:gz") as archive:
        tops = {m.name.split("/", 1)[0] for m in archive.getmembers()}
        if len(tops) != 1:
            raise WorkspaceError(f"{sdist}: expected one top folder, found {sorted(tops)}")
        archive.extractall(staging, filter="data")
    for entry in (staging / tops.pop()).iterdir():
        shutil.move(str(entry), project / entry.name)
    shutil.rmtree(staging)
    commit_tree(project)


def trajectories(traces: Path) -> list[Path]:
    """The bundled mini-swe-agent trajectories that have a source, in a fixed order."""
    return [p for p in find_traces(traces) if p.parent.name.startswith("mini-swe-agent__")
            and _instance(p) in SOURCES]


def _instance(path: Path) -> str:
    return path.name.removesuffix(".traj.json")


def mini_env(workspace: Workspace, configuration: str) -> dict[str, str]:
    """The whole environment of a ``mini`` run (nothing inherited but this Python's
    scripts): no first-run questions, litellm's bundled price list, OSIRIS's home."""
    scripts = str(Path(sys.executable).parent)
    env = {"PATH": f"{scripts}:/usr/local/bin:/usr/bin:/bin", "HOME": str(workspace.home),
           "TMPDIR": str(workspace.tmp), "LANG": "C.UTF-8", "TZ": "UTC",
           "MSWEA_CONFIGURED": "true", "MSWEA_GLOBAL_CONFIG_DIR": str(workspace.home / "mswea"),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-scripted-model",
           "PYTHONDONTWRITEBYTECODE": "1", "RIPGREP_CONFIG_PATH": str(workspace.ripgrep_config),
           **FIXED_GIT_DATES}
    if configuration == OSIRIS:
        env["OSIRIS_HOME"] = str(workspace.osiris_home)
    return env


def run_session(trace_path: Path, traces_dir: Path, repo: Path, configuration: str, *,
                root: Path = ROOT, timeout_s: float = SESSION_TIMEOUT_S,
                source: Source | None = None, sdists: Path | None = None) -> Measured:
    """One trajectory in one configuration, measured (``source``, ``sdists``: another
    checkout than :data:`SOURCES` names, from another folder than ``.tools/``)."""
    rel = trace_path.relative_to(traces_dir)
    name = str(rel.with_suffix("").with_suffix(""))
    source = source or SOURCES[_instance(trace_path)]
    workspace = Workspace(root)
    for path in (workspace.home, workspace.project, workspace.osiris_home, workspace.tmp):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    started = time.monotonic()
    try:
        unpack_sdist((sdists or sources_dir(repo)) / source.filename, source,
                     workspace.project)
    except WorkspaceError as exc:
        return Measured(name, MINI_SWE_AGENT, configuration, f"not installed: {exc}"[:400])
    trace = load_trace(trace_path)
    session = session_from_trace(trace, str(rel), str(trace_path))
    paths = PathMap(TRACE_CWD, workspace.project, workspace.tmp)
    trajectory = workspace.root / "run.traj.json"  # mini saves it after every step
    script = TraceScript(MINI_SWE_AGENT, plan(session, MINI_SWE_AGENT, paths), session, paths,
                         whole_output=lambda call_id: whole_outputs(trajectory).get(call_id))
    prompt = session.task_prompt or ""
    with ModelServer(script) as server:
        argv = [str(Path(sys.executable).parent / "mini"), "-y", "--exit-immediately",
                "-t", prompt, "-m", "openai/scripted-model", "-c", "mini.yaml",
                "-c", f"agent.agent_class={AGENT_CLASSES[configuration]}",
                "-c", f"model.model_kwargs.api_base={server.base_url}/v1",
                "-c", "model.cost_tracking=ignore_errors", "-c", "agent.cost_limit=0",
                "-c", f"environment.cwd={workspace.project}",
                "-o", str(trajectory)]
        began = time.monotonic()
        try:
            done = subprocess.run(argv, env=mini_env(workspace, configuration),
                                  cwd=workspace.project, capture_output=True, text=True,
                                  timeout=timeout_s, stdin=subprocess.DEVNULL, check=False)
            returncode: int | None = done.returncode
            stdout, stderr = done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:
            returncode, stdout, stderr = None, str(exc.stdout or ""), str(exc.stderr or "")
        run = ClientRun(MINI_SWE_AGENT, argv, returncode, time.monotonic() - began, stdout,
                        stderr, server.requests())
    script.settle(whole_outputs(trajectory))
    status = ("timed out" if run.timed_out else "ok" if run.returncode == 0
              else f"exit {run.returncode}")
    counts = _Counts(default_counter(), neutraliser(workspace, repo))
    turns, row = measure(run, script, prompt, counts, default_cost_models().models)
    row.update(session=name, client=MINI_SWE_AGENT, client_version=_version(),
               model="scripted-model", configuration=configuration, status=status,
               seconds=round(time.monotonic() - started, 1),
               installed_by=f"agent.agent_class={AGENT_CLASSES[configuration]}",
               stderr_tail=counts.neutralise(stderr[-2000:]),
               source=f"{source.project} {source.version} sdist",
               planned_calls=len(script.calls))
    for turn in turns:
        turn.update(session=name, client=MINI_SWE_AGENT, configuration=configuration)
    return Measured(name, MINI_SWE_AGENT, configuration, status, row["seconds"], turns, row)


def whole_outputs(trajectory: Path) -> dict[str, str]:
    """Each tool call's whole output (``extra.raw_output``, which mini-swe-agent keeps
    before its template cuts, and OSIRIS's agent keeps before its preview) by call id."""
    try:
        messages = json.loads(trajectory.read_text("utf-8")).get("messages", [])
    except (OSError, ValueError):
        return {}
    return {str(m["tool_call_id"]): str((m.get("extra") or {}).get("raw_output", ""))
            for m in messages if isinstance(m, dict) and m.get("tool_call_id")}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mini-swe-agent")
    except PackageNotFoundError:
        return "not installed"


def run_all(repo: Path, *, quick: bool = False, say: Callable[[str], None] = lambda _m: None,
            root: Path = ROOT) -> list[Measured]:
    """Every trajectory with a source, bare and with OSIRIS (quick: the shortest one)."""
    traces_dir = repo / "datasets" / "traces"
    found = trajectories(traces_dir)
    if quick:
        found = [p for p in found if "django" in p.name]
    if _version() == "not installed":
        return [Measured(str(p.relative_to(traces_dir).with_suffix("").with_suffix("")),
                         MINI_SWE_AGENT, c, "not installed: pip install "
                         "'mini-swe-agent>=2.4.6,<3'") for p in found for c in CONFIGURATIONS]
    out = []
    os.makedirs(root, exist_ok=True)
    for path in found:
        for configuration in CONFIGURATIONS:
            say(f"mini: {path.name} ({configuration})")
            measured = run_session(path, traces_dir, repo, configuration, root=root)
            say(f"mini: {measured.status} in {measured.seconds:.0f} s, "
                f"{measured.row.get('cumulative_input_tokens', 0):,} tokens")
            out.append(measured)
    return out


COST_MODEL = "openai-auto"
"""The billing the table shows: litellm's ``openai/…`` provider, whose prefix cache
needs no markers (``mini.yaml`` sets none; every cost model is in the data file)."""
GOAL_GAIN, GOAL_NEEDS = 0.50, 0.99
"""Issue 21's goal: 50% fewer cumulative input tokens with 99% of the needs kept."""


def render(rows: list[dict[str, Any]]) -> str:
    """The mini-swe-agent section of BENCHMARK.md: per session, then pooled."""
    lines = ["## Inside mini-swe-agent", ""]
    if not rows:
        return "\n".join([*lines, "Not measured in this run (`osiris bench clients`).", ""])
    version = next((r.get("client_version") for r in rows if r.get("client_version")), "")
    lines += [
        f"The bundled mini-swe-agent trajectories replayed in the real mini-swe-agent "
        f"({version}, `mini` with its default `mini.yaml`), offline against the scripted "
        "model over Chat Completions, each in a checkout built from its task's package "
        "sdist (`osiris/harness/real_clients/mini.py`: the files, tests and tools differ from "
        "the task's container, the same way in both configurations). *bare* is "
        "mini-swe-agent's own agent, which cuts an output over 10,000 characters to its "
        "head and tail; *osiris* selects `osiris.clients.minisweagent.OsirisAgent` in the "
        "same configuration, with OSIRIS's defaults. A need the prompt no longer shows is "
        "retrieved by the visible rule: with the `osiris recall` command OSIRIS's "
        "preview or stub shows, else by running the source command again through "
        "`grep` (the needs of one output due at the same call in one search); a need "
        "the command's whole output never held (the checkout differs) is "
        f"left out of both. Cost: `{COST_MODEL}` (automatic prefix caching). *vs bare* is "
        "the gain against bare (negative: more).", "",
        "| session | configuration | status | prompts | cumulative input | vs bare | cost "
        "| vs bare (cost) | needs kept | extra calls | failed calls | source |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if not str(r["status"]).startswith(("ok", "exit", "timed")):
            lines.append(f"| {r['session']} | {r['configuration']} | {r['status']} "
                         "| | | | | | | | | |")
            continue
        lines.append(
            f"| {r['session']} | {r['configuration']} | {r['status']} | {r['requests']} | "
            f"{r['cumulative_input_tokens']:,} | "
            f"{_pct(r.get('net_gain_cumulative_input_tokens'))} | "
            f"${r[f'billed_cost_{COST_MODEL}']:.4f} | "
            f"{_pct(r.get(f'net_gain_billed_cost_{COST_MODEL}'))} | "
            f"{r['needs_kept'] + r['needs_retrieved']}/{r['needs_total']} | "
            f"{r['extra_calls']} | {r['failed_calls']} | {r.get('source', '')} |")
    lines += ["", *pooled(rows), ""]
    return "\n".join(lines)


def pooled(rows: list[dict[str, Any]]) -> list[str]:
    """Totals per configuration over the sessions both ran, and the goal's verdict."""
    ok = {(r["session"], r["configuration"]): r for r in rows if r["status"] == "ok"}
    sessions = sorted({s for s, _ in ok if all((s, c) in ok for c in CONFIGURATIONS)})
    if not sessions:
        return ["No session ran in both configurations."]
    totals = {}
    outputs = {}
    for configuration in CONFIGURATIONS:
        chosen = [ok[(s, configuration)] for s in sessions]
        totals[configuration] = (
            sum(r["cumulative_input_tokens"] for r in chosen),
            sum(r[f"billed_cost_{COST_MODEL}"] for r in chosen),
            sum(r["needs_kept"] + r["needs_retrieved"] for r in chosen),
            sum(r["needs_total"] for r in chosen), sum(r["extra_calls"] for r in chosen))
        outputs[configuration] = sum(int(r.get("tool_result_tokens") or 0) for r in chosen)
    tokens, cost, _, _, _ = totals[BARE]
    out = [f"Pooled over the {len(sessions)} sessions (*vs bare*: the gain, negative when "
           "it is more):", "",
           "| configuration | cumulative input | vs bare | cost | vs bare (cost) | needs kept "
           "| extra calls |", "|---|---|---|---|---|---|---|"]
    for configuration, (t, c, kept, total, extra) in totals.items():
        out.append(f"| {configuration} | {t:,} | {_pct(1 - t / tokens if tokens else None)} | "
                   f"${c:.4f} | {_pct(1 - c / cost if cost else None)} | {kept}/{total} | "
                   f"{extra} |")
    t, _, kept, total, _ = totals[OSIRIS]
    gain = 1 - t / tokens if tokens else 0.0
    share = kept / total if total else 1.0
    met = gain >= GOAL_GAIN and share >= GOAL_NEEDS
    out += ["", f"Goal: at least {GOAL_GAIN:.0%} fewer cumulative input tokens with at least "
            f"{GOAL_NEEDS:.0%} of the needs kept. {'Met' if met else 'Not met'}: "
            f"{gain:.2%} {'fewer' if gain >= 0 else 'more'}, with {share:.1%} of the needs "
            "kept."]
    if tokens and outputs[BARE]:
        ceiling = outputs[BARE] / tokens
        needed = GOAL_GAIN / ceiling
        removed = 1 - outputs[OSIRIS] / outputs[BARE]
        out += ["", f"Command outputs are {ceiling:.1%} of the bare runs' cumulative input "
                "(the rest is mini-swe-agent's system and task messages and the model's own "
                "messages, which OSIRIS does not touch): taking every output out of every "
                f"prompt would save at most {ceiling:.1%}, and the goal needs "
                f"{min(needed, 1.0):.0%} of the output tokens gone"
                f"{' (more than all of them)' if needed > 1 else ''}. With OSIRIS the "
                f"prompts carried {removed:.1%} fewer output tokens (previews, pointers and "
                "stubs in, recall answers included)."]
    return out
