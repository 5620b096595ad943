"""Persistence: DuckDB state, journal, ledger, ref store, sandboxed files, exports."""
