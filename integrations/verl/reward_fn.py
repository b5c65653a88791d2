"""The file verl loads as `reward.custom_reward_function.path` (with `name: compute_score`).

verl imports this file by path, outside any package, so it puts its own folder on sys.path and
re-exports the function of the `stitchcuda_verl` package beside it. Every node whose reward
workers load it needs this checkout at the same path (a shared file system, or the same clone).
"""

import sys
from pathlib import Path

_here = str(Path(__file__).resolve().parent)
if _here not in sys.path:
    sys.path.insert(0, _here)

from stitchcuda_verl import compute_score  # noqa: E402

__all__ = ["compute_score"]
