"""The research harness: workloads, trace importers, baselines, peers, metrics, reports."""
