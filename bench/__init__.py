"""Loci's benchmarks: each module measures one target and runs as `loci bench NAME`."""
