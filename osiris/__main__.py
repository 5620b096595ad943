"""``python -m osiris``: the CLI; with no arguments, the MCP server on stdio."""

import sys

from osiris.cli import main, serve_stdio_main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else serve_stdio_main())
