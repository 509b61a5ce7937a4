"""Presentation built on the statistics: SVG charts, the gate's offline report, the
report's data and the landing page's headline.

May import every other aggregator sub-package and the core.
"""
