"""Importers of real agent transcripts (Claude Code, Codex, mini-swe-agent, SWE-agent)."""
