"""StitchCUDA's reward for verl 0.9.x: `compute_score` calls `stitchcuda serve` (docs/serve.md)."""

from .reward import compute_score

__all__ = ["compute_score"]
