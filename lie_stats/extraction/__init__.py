"""The extraction side: checkpoints in, metric cubes out (DESIGN.md, "Extraction").

Its modules, in the order of the data flow (``tests/test_layers.py`` holds the order):

* :mod:`~lie_stats.extraction.architectures`: one adapter per model family, the only code
  that knows tensor names; :mod:`~lie_stats.extraction.probe`: token probes and their files;
  :mod:`~lie_stats.extraction.hub` (the Hugging Face hub behind ``hf:`` sources) and
  :mod:`~lie_stats.extraction.checkpoint_files` (a checkpoint's files, checked before they
  are trusted).
* :mod:`~lie_stats.extraction.checkpoint` (one checkpoint's tensors, read safely),
  :mod:`~lie_stats.extraction.sources` (a source string -> its checkpoints),
  :mod:`~lie_stats.extraction.memory` (model objects in memory as sources) and
  :mod:`~lie_stats.extraction.operators` (operator families in factored form, the null, the
  Killing form).
* :mod:`~lie_stats.extraction.metrics`: the weight metrics of METRICS.md §3-§5.
* :mod:`~lie_stats.extraction.activations` (activation metrics, sinks) and
  :mod:`~lie_stats.extraction.delta` (parameter deltas, METRICS.md §6.4).
* :mod:`~lie_stats.extraction.executors` (where the tasks run: in-process or on a Dask
  cluster) and :mod:`~lie_stats.extraction.store`: the shard store of a run (what may be kept, what
  must be redone, what must not be replaced).
* :mod:`~lie_stats.extraction.pipeline` (``extract``: sources -> tasks -> shards -> cube) and
  :mod:`~lie_stats.extraction.api` (``lie_stats.extract``, the public call).

The cube format itself (:mod:`lie_stats.cube`) is shared with the inference side and stays at
the package root; so do the signal handling and fork pool of :mod:`lie_stats._stop`,
which every command (``lie-stats diagnose --jobs`` too) uses. Importing this package imports none of its
modules (torch loads only with the module that needs it).
"""
