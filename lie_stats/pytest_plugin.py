"""pytest plugin: hypothesis modules as science tests (filled in by the statistics issue)."""
