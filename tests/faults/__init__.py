"""Fault injection: real broken files and real processes, no mocks."""
