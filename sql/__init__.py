"""The warehouse schema: numbered DuckDB migrations in `migrations/` and the analytics views.

A package only so that the migrations ship inside an installed Loci (they are data files,
read by `pipelines.migrations`); nothing here is Python code.
"""
