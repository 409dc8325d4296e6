"""The AMD timing model: costed instructions (`ops`) replayed on a cycle-level model of one compute unit (`cu`).
Figures it gives are predictions, never measurements."""

from .cu import CuModel, CuResult, run_waves
from .ops import Op, TimingError, classify, classify_text

__all__ = ["CuModel", "CuResult", "Op", "TimingError", "classify", "classify_text", "run_waves"]
