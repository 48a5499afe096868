"""Speed benchmarks (not tests): run each as a module from the repository root, e.g. ``python -m benchmarks.bench_parse``."""
