"""Hooks for the crash matrix and the benchmarks (crash points, timing spans): no-ops
unless a test or ``bench`` turns them on."""
