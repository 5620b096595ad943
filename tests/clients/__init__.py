"""Client integration: hooks and installers."""
