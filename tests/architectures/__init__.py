"""Tests of lie_stats.architectures, one module per module of the package.

``_reproduce.py`` holds the attention-reproduction machinery every family test uses.
"""
