"""The GPU's testimony about a stage: the one type telemetry produces and stall detection reads.

It lives outside both packages so that neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuWitness:
    """What the GPU says about a stage, for the stall detector.

    ``memory_changing``: memory moved by more than the noise threshold within
    the window (loading or freeing: the stage is doing something).
    ``busy``: the stage's GPUs averaged at least the busy threshold of
    utilisation over the window.
    """

    memory_changing: bool
    busy: bool
