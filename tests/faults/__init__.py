"""Fault injection (issue 8): real broken files and real processes, no mocks."""
