"""``python -m osiris``: the CLI; with no arguments, the MCP server on stdio.

``osiris run`` is dispatched before the CLI is imported: it must start the command
without loading the engine (:mod:`osiris.clients.runner`).
"""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        from osiris.clients.runner import main as run_main

        sys.exit(run_main(sys.argv[2:]))
    from osiris.cli import main, serve_stdio_main

    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else serve_stdio_main())
