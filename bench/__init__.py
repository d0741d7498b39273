"""Benchmarks: each module has `main(argv=None) -> int`, prints a table and writes JSON."""
