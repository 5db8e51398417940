"""Benchmarks: run as modules (``python -m bench.bench_write``); results are measured, never asserted."""
