"""A CPU functional emulator for the AMD GEMM kernels this project compiles (gfx942, gfx950, gfx1151).

It runs the `.rocmasm` of compiled dispatches with numpy, many workgroups at once, checks the result against a
float64 reference of the same program, reports LDS races, registers read before their loads landed and missing
wait states, and counts LDS bank conflicts, instructions, MFMAs and barriers. Modules: isa (parsing), machine (wave
state, scalar/vector ALU), floats (f32 VALU, conversions, cross-lane moves), memory (global, buffer, LDS, waits),
matrix (MFMA/WMMA), hazards (race detector), waitstates (wait-state table), run (dispatch), localise (re-execution
of a wrong result), host (inputs, dispatch order, reference), interpret (float64 reference of a linalg program).
"""

from .machine import EmulatorError, Hazard
from . import floats, matrix, memory  # noqa: F401  (each instruction family registers its decoders with the machine)
from .host import emulate_gemm
from .run import EmulationResult

__all__ = ["EmulationResult", "EmulatorError", "Hazard", "emulate_gemm"]
