"""Replaying a session through a system, inside a modelled client: workloads and their
information needs, client profiles, retrieval, metrics."""
