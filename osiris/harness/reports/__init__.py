"""What the benchmark writes for people: reports/BENCHMARK.md, its plots, the README's
measured blocks."""
