"""Speed benchmarks (not tests).

Run each as a module from the repository root, e.g. ``python -m benchmarks.bench_parse``.
"""
