"""eagle3tui: a terminal supervisor for long-running GPU jobs.

The package is split into a pure core (configuration, stage runner, run
records, log reading and rules, GPU sampling, alerts) that never imports
Textual, and thin front ends (the TUI, ``--watch`` and the CLI) over it.
"""

__version__ = "0.1.0"
