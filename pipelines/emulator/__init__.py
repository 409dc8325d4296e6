"""A CPU functional emulator for the AMD GEMM kernels this project compiles (gfx942, gfx950, gfx1151).

It runs the `.rocmasm` of a compiled dispatch wave by wave with numpy, checks the result against float64, reports
LDS races and registers read before their loads landed, and counts LDS bank conflicts, instructions, MFMAs and
barriers. Modules: isa (parsing), machine (wave state, scalar/vector ALU), memory (global, buffer, LDS, waits),
matrix (MFMA/WMMA), floats (f32 VALU, conversions, cross-lane moves), hazards (race detector), run (dispatch and host).
"""

from .machine import EmulatorError, Hazard
from . import floats, matrix, memory  # noqa: F401  (each instruction family registers its decoders with the machine)
from .run import EmulationResult, emulate_gemm

__all__ = ["EmulationResult", "EmulatorError", "Hazard", "emulate_gemm"]
