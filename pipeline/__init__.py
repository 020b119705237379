"""The EAGLE-3 pipeline stages that eagle3tui supervises.

Each stage is a module runnable as ``python -m pipeline.<stage>`` with ``--help``:
prepare, serve, regenerate, tokenize_data, vocab (this package's data stages),
and extract/train/export/evaluate. Shared helpers live in ``pipeline.common``,
model loading in ``pipeline.model_io`` and the prepared-dataset format in
``pipeline.prepared``.
"""
