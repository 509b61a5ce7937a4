"""Choosing and shaping rows from the lake: run filters, per-second series, latency
curves, environment differences, run lists and the fleet view.

Imports `fiolake.aggregator.lake` and the core; never `stats` or `report`.
"""
