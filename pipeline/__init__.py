"""The EAGLE-3 pipeline stages that eagle3tui supervises (this package imports nothing from eagle3tui).

Each stage is a module runnable as ``python -m pipeline.<stage>`` with ``--help``:
prepare, serve, regenerate, tokenize_data, vocab (the data stages) and
extract, train, export, evaluate (the model stages). Shared pieces:

* ``pipeline.common``: argparse, logging, progress bars, the stage ``main`` wrapper;
* ``pipeline.atomic``: crash-safe file writes;
* ``pipeline.model_io``: loading the target and tokenizer from local files;
* ``pipeline.tokenized_dataset``: the tokenized-dataset format (tokenize_data's output);
* ``pipeline.hidden_states``: the hidden-state format (extract's output) and its reader;
* ``pipeline.target_capture``: running the target to capture EAGLE-3 features (extract, evaluate);
* ``pipeline.eagle3_model``: the draft model and its training loss.
"""
