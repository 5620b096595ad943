"""The real clients (Claude Code, Codex) against the scripted model, offline.

* :mod:`.run` — where the binaries are, a scratch home per run, one client session
  against a :class:`~osiris.harness.real_clients.model_server.ModelServer` with a time limit.
* :mod:`.configs` — the configurations measured: the bare client, OSIRIS installed by
  ``osiris install``, context-mode installed its own documented way.
* :mod:`.heads` — what a first request holds: system, tool definitions, the parts the
  client adds to the messages, in tokens and bytes.
* :mod:`.behaviour` — how each client cuts what its tools return (Read's caps, Bash's
  persisted output, Codex's truncation), found by scripted calls and bisection.
* :mod:`.workspaces` — the source tree of a trace (``datasets/workspaces/``), unpacked
  into a fresh git repository.
* :mod:`.trace_script` — a real trace played by the scripted model, needs kept or
  retrieved by the visible rule (``osiris_recall`` where the client lists it, else the
  client's own tools; the needs of one output due together in one search).
* :mod:`.sessions` — ``osiris bench clients``: every trace in its client and every
  configuration, measured from the request bodies.

``python -m osiris.harness.real_clients.capture`` runs all of it and writes
``osiris/harness/data/client_heads.json``. (Not to be confused with
:mod:`osiris.clients`, which writes OSIRIS's entries into a client's files.)
"""
