"""Tests of lie_stats.extraction.architectures, one module per module of the package.

``_reproduce.py`` holds the attention-reproduction machinery every family test uses.
"""
