"""The research harness, started only by the CLI (``osiris bench``, ``osiris replay``):

* :mod:`.bench` — the benchmark's runner and one module per stage;
* :mod:`.systems` — what a session is replayed through: OSIRIS's engine, the peers;
* :mod:`.replay` — workloads and their needs, client profiles, retrieval, metrics, and
  the turn-by-turn replay inside a modelled client;
* :mod:`.importers` — real agent transcripts (Claude Code, Codex, mini-swe-agent,
  SWE-agent) as ordered tool calls;
* :mod:`.clients` — the real Claude Code, Codex and mini-swe-agent against a scripted
  model;
* :mod:`.reports` — BENCHMARK.md, its plots, the README's measured blocks;
* :mod:`.user_sessions` — ``osiris replay`` of a user's own sessions;
* :mod:`.notebooks` — the research notebooks' sources and runner.
"""
