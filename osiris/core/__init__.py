"""The engine's pure core: no I/O, no imports from store, server, cli or harness."""
