"""Targets, named pipelines, the compiler driver and the `pipelines` command line."""
