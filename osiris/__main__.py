"""``python -m osiris``: the CLI; with no arguments, the MCP server on stdio.

``osiris run`` and ``osiris hook`` are dispatched before the CLI is imported: they
run on every tool call of an agent and must not load the engine
(:mod:`osiris.clients.runner`, :mod:`osiris.clients.hook_entry`); ``osiris owner`` is the
store owner a client starts (:mod:`osiris.owner`).
"""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        from osiris.clients.runner import main as run_main

        sys.exit(run_main(sys.argv[2:]))
    if sys.argv[1:2] == ["hook"]:
        from osiris.clients.hook_entry import main as hook_main

        sys.exit(hook_main(sys.argv[2:]))
    if sys.argv[1:2] == ["owner"]:
        from osiris.owner import main as owner_main

        sys.exit(owner_main(sys.argv[2:]))
    from osiris.cli import main, serve_stdio_main

    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else serve_stdio_main())
