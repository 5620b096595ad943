"""The dashboard over real HTTP: every page, escaping, the guard rails, pagination."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from osiris.config import Settings
from osiris.engine import Engine
from tests.conftest import REPO
from tests.dashboard.process import dashboard
from tests.server.test_recall_scope import ALICE, BOB, TOKENS, UNKNOWN, alices_task
from tests.server.transports import http_client, http_server, osiris_env, run

HOSTILE = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">"


def _populate(home: Path, tasks: int = 1) -> dict[str, Any]:
    """A home with real engine activity: drift, verdicts, LoopGuard, refs, drops."""
    engine = Engine(Settings(home=home))
    try:
        main = engine.plan("start", objective=f"fix the parser {HOSTILE}",
                           steps=["read", "fix", "test"],
                           decisions=["patch the tokenizer in place"])["task_id"]
        engine.observe(main, "result", tool="Bash", args={"command": "pytest -x"},
                       result="collected 40 items\n" * 400)
        for attempt in range(4):
            engine.precheck(main, "Bash", args={"command": "pytest -x"})
            engine.observe(main, "error", tool="Bash", args={"command": "pytest -x"},
                           result=f"E AssertionError\nattempt {attempt}\n" * 3)
        page = engine.observe(main, "result", tool="Read", args={"file_path": "page.html"},
                              result=(HOSTILE + "\n") * 300)
        engine.recall(page["ref"], "grep", pattern="script", task_id=main)
        engine.observe(main, "dropped", result=page["ref"])
        engine.plan("update", task_id=main, active_step=1, completed=[0])
        engine.plan("update", task_id=main,  # a pinned decision rewritten: semantic break
                    decisions=[{"index": 0, "text": "rewrite the parser from scratch"}])
        engine.observe(main, "head", result="You are a coding agent. Now: 2026-11-30T10:00:00Z")
        engine.observe(main, "head", result="You are a coding agent. Now: 2026-11-30T10:05:00Z")
        others = [engine.plan("start", objective=f"task number {i}")["task_id"]
                  for i in range(tasks - 1)]
    finally:
        engine.close()
    return {"task": main, "ref": page["ref"], "others": others}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    home = tmp_path_factory.mktemp("dash-home")
    facts = _populate(home, tasks=120)
    with dashboard(osiris_env(OSIRIS_HOME=str(home)), "--reports",
                   str(REPO / "reports")) as base:
        yield base, facts


@pytest.mark.slow
def test_every_page_renders_with_real_engine_data(site: Any) -> None:
    base, facts = site
    task, ref = facts["task"], facts["ref"]
    pages = {"/": ["Ledger over time", "tokens saved, claimed", "Context pressure"],
             "/tasks": ["task number 118", "older tasks"],
             f"/tasks?q={task}": [task, "fix the parser"],
             f"/tasks/{task}": ["OSIRIS/1 task=", "SEAL=sha256:", "Ledger by kind", "drop_receipt"],
             "/events?filter=drift": ["drift critical", "re-prefill",
                                      "drift semantic_break"],
             "/events?filter=verdicts": ["block", "loopguard:repeated_failure"],
             "/events?filter=loopguard": ["LoopGuard:"],
             "/refs": ["bytes", "redactions"],
             f"/ref?ref={ref}": ["verified", "held by"],
             "/bench/": ["OSIRIS benchmark", "sweep_net_gain.png"]}
    for path, needles in pages.items():
        response = httpx2.get(base + path, timeout=30)
        assert response.status_code == 200, path
        for needle in needles:
            assert needle in response.text, (path, needle)
    assert httpx2.get(base + "/bench/sweep_net_gain.png").content[:8] == b"\x89PNG\r\n\x1a\n"
    audit = httpx2.get(f"{base}/tasks/{task}/audit?format=json", timeout=60).json()
    assert audit["lossless"] is True and audit["journal"]["chain_ok"] is True
    # Once run, the proof shows on the task page for this journal head.
    assert "lossless" in httpx2.get(f"{base}/tasks/{task}").text


def test_payload_text_is_escaped_everywhere(site: Any) -> None:
    base, facts = site
    for path in ("/tasks", f"/tasks/{facts['task']}", f"/ref?ref={facts['ref']}", "/"):
        text = httpx2.get(base + path).text
        assert "<script>window" not in text and "<img src=x" not in text, path
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in \
        httpx2.get(f"{base}/ref?ref={facts['ref']}").text


def test_read_only_and_host_origin_guards(site: Any) -> None:
    base, _ = site
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        response = httpx2.request(method, base + "/")
        assert response.status_code == 405 and response.headers["allow"] == "GET, HEAD"
    assert httpx2.get(base + "/", headers={"Host": "evil.example"}).status_code == 421
    assert httpx2.get(base + "/", headers={"Origin": "http://evil.example"}).status_code == 403
    assert httpx2.get(base + "/", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    headers = httpx2.get(base + "/").headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"


def test_pagination_and_bad_inputs(site: Any) -> None:
    base, _ = site
    first = httpx2.get(base + "/tasks").text
    ids = set(re.findall(r'href="/tasks/(t_[0-9a-f]+)"', first))
    assert len(ids) == 50
    cursor = re.search(r'href="/tasks\?after=([^"&]+)', first)
    assert cursor is not None
    second = httpx2.get(base + f"/tasks?after={cursor.group(1)}").text
    more = set(re.findall(r'href="/tasks/(t_[0-9a-f]+)"', second))
    assert len(more) == 50 and not ids & more
    found = httpx2.get(base + "/tasks", params={"q": "task number 7"}).text
    assert "task number 7" in found and "task number 8" not in found
    journal = httpx2.get(base + "/events").text
    older = re.search(r'href="/events\?filter=all&amp;before=(\d+)"', journal)
    assert older is not None and int(older.group(1)) > 1
    bad = {"/ref?ref=../../etc/passwd": 400, "/events?filter=nope": 400,
           "/events?before=1;DROP": 400, "/tasks?after=garbage": 400,
           "/tasks/t_doesnotexist": 404, "/bench/..%2F..%2Fetc%2Fpasswd": 404,
           "/bench/BENCHMARK.md": 404, "/static/..%2Fviews.py": 404,
           "/ref?ref=mem://sha256:" + "0" * 64: 404}
    for path, status in bad.items():
        assert httpx2.get(base + path).status_code == status, path


def test_tokens_are_required_beyond_loopback_and_honoured_on_loopback(
        tmp_path: Path) -> None:
    _populate(tmp_path)
    env = osiris_env(OSIRIS_HOME=str(tmp_path))
    refused = subprocess.run(
        [sys.executable, "-c", "import sys; from osiris.dashboard import main; "
         "sys.exit(main(sys.argv[1:]))", "--host", "0.0.0.0", "--port", "1"],
        env=env, capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 2
    assert "without a token: set OSIRIS_HTTP_TOKEN" in refused.stderr

    missing = tmp_path / "no-such-home"
    refused = subprocess.run(
        [sys.executable, "-c", "import sys; from osiris.dashboard import main; "
         "sys.exit(main(sys.argv[1:]))", "--port", "1"],
        env=osiris_env(OSIRIS_HOME=str(missing)), capture_output=True, text=True,
        timeout=60, check=False)
    assert refused.returncode == 2 and "there is no OSIRIS home at" in refused.stderr
    assert not (missing / "osiris.duckdb").exists()

    token = "dashboard-token-0123456789"
    with dashboard(osiris_env(OSIRIS_HOME=str(tmp_path), OSIRIS_HTTP_TOKEN=token)) as base:
        assert httpx2.get(base + "/").status_code == 401
        assert httpx2.get(base + "/?token=wrong-token-000000000").status_code == 401
        assert httpx2.get(base + "/", headers={"Authorization": f"Bearer {token}"}
                          ).status_code == 200
        login = httpx2.get(base + f"/tasks?token={token}&q=x", follow_redirects=False)
        assert login.status_code == 303
        assert login.headers["location"] == "/tasks?q=x"
        cookie = login.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        with httpx2.Client(base_url=base, cookies=login.cookies) as browser:
            assert browser.get("/tasks?q=x").status_code == 200


def test_with_tokens_a_ref_page_shows_only_its_own_principals_bytes(tmp_path: Path) -> None:
    """The recall rule on the dashboard (issue 36, item 12): with bearer tokens, the page
    that shows a ref's bytes shows them only to the token whose tasks hold the ref; a
    ref of another token, or of the local user, looks exactly like an unknown one."""
    local = _populate(tmp_path)["ref"]  # the local user's (no token)
    with http_server(osiris_env(OSIRIS_HOME=str(tmp_path), OSIRIS_HTTP_TOKEN=TOKENS)) as (
            url, _):

        async def alices() -> tuple[str, str]:
            async with http_client(url, headers=ALICE) as alice:
                return await alices_task(alice)

        task, ref = run(alices())

    def page(base: str, who: dict[str, str], shown: str) -> tuple[int, str]:
        got = httpx2.get(f"{base}/ref?ref={shown}", headers=who)
        # The page's clock and the ref itself aside, the answer must be the same.
        return got.status_code, re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "T",
                                       got.text.replace(shown, "REF"))

    with dashboard(osiris_env(OSIRIS_HOME=str(tmp_path), OSIRIS_HTTP_TOKEN=TOKENS)) as base:
        status, text = page(base, ALICE, ref)
        assert status == 200 and "alice&#39;s private data" in text and task in text
        unknown = page(base, BOB, UNKNOWN)
        assert unknown[0] == 404 and "unknown to this OSIRIS home" in unknown[1]
        assert page(base, BOB, ref) == unknown
        assert page(base, ALICE, local) == page(base, ALICE, UNKNOWN) == unknown
    # Without tokens the reader is the local user, whose home it is: every ref.
    with dashboard(osiris_env(OSIRIS_HOME=str(tmp_path))) as base:
        assert page(base, {}, ref)[0] == page(base, {}, local)[0] == 200
