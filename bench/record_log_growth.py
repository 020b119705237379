"""Record when each stage log of a running pipeline grew, for an offline replay of its drift alerts.

    python bench/record_log_growth.py RUN_DIR/.eagle3tui/logs growth.jsonl

Every 0.2 s it writes ``[wall time, log name, size]`` for each ``*.log`` whose size
changed. ``bench/drift_replay.py`` turns the logs and this record into a fixture and
replays it: a stage log alone has no wall clock for its progress bars (tqdm prints
only the bar's own elapsed), and the drift projection counts the stage's elapsed time.
Stop it with SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import json
import os
import sys
import time

INTERVAL_S = 0.2


def main(argv: list[str]) -> int:
    """Record ``argv[0]``'s logs' growth into ``argv[1]`` until stopped."""
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    logs, out = argv
    sizes: dict[str, int] = {}
    with open(out, "a", encoding="utf-8") as f:
        try:
            while True:
                try:
                    names = sorted(n for n in os.listdir(logs) if n.endswith(".log"))
                except FileNotFoundError:
                    names = []
                for name in names:
                    try:
                        size = os.path.getsize(os.path.join(logs, name))
                    except OSError:
                        continue
                    if sizes.get(name) != size:
                        sizes[name] = size
                        f.write(json.dumps([round(time.time(), 3), name, size]) + "\n")
                        f.flush()
                time.sleep(INTERVAL_S)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
