"""The target table: every per-target fact the project uses, in one place.

Wave size, LDS, register file, MMA intrinsics (IREE's name → the instruction it becomes; operand type and shape
are read from IREE's own intrinsic attributes), peak FLOP/s per input type, XCD layout, the iree-compile flags
and runtime drivers, which routes deliver its schedules (`pipelines.routes`), which generated kernels it has,
what IREE 3.13 does with shared-memory prefetch and swizzles on it, and the schedules the named pipelines start
from (`NamedRules`). Nothing outside this module and the route modules tests a target or route by name: adding a
target is one entry here (`register`). The MMA opcodes were read from ISA/PTX that IREE 3.13 produced for each
intrinsic; peaks and sizes carry their sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from transforms.errors import UserError
from transforms.schedule import Schedule, Staging, Swizzle, Tile, WarpGroups, mma_operand

from .reference import dtype_family


class TargetError(UserError, ValueError):
    """An unknown target or a problem the target cannot run; the message is one sentence."""


@dataclass(frozen=True)
class Mma:
    name: str  # IREE's intrinsic name
    opcode: str  # the instruction in the ISA (AMD) or PTX (NVIDIA)
    cycles: int = 0  # AMD: clocks the SIMD's matrix pipe is busy with one (issue to issue when independent)

    @property
    def operand(self) -> str:
        """Element type of A and B (MLIR spelling), from IREE's attribute; the accumulator is f32."""
        return mma_operand(self.name)


@dataclass(frozen=True)
class CompilerGap:
    """A class of problems iree-compile 3.13 fails on for a target whatever the schedule (IREE's own default
    included), found by the named-pipeline sweep (tools/named_sweep.py): refused before compiling."""

    family: str  # input family, "16bit" or "fp8"
    layouts: tuple[str, ...]
    m: tuple[int, int]  # inclusive range of M that fails
    n: tuple[int, int]  # inclusive range of N that fails
    failure: str  # what iree-compile does

    def covers(self, gemm) -> bool:
        return (dtype_family(gemm.dtype) == self.family and gemm.layout in self.layouts
                and self.m[0] <= gemm.m <= self.m[1] and self.n[0] <= gemm.n <= self.n[1])


ANY = (1, 2**62)


@dataclass(frozen=True)
class NamedRules:
    """What the `tuned` and `auto` pipelines start from on one target (`pipelines.named`), each rule with the
    measurement behind it where the entry sets it."""

    # input family -> (intrinsic pattern, `{T}` the input type upper-cased; schedule without its intrinsic)
    tuned: dict[str, tuple[str, Schedule]] = field(default_factory=dict)
    # input family -> intrinsic patterns for `auto`, smallest first; auto takes the first whose K the problem reaches
    auto_intrinsics: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # tuned/auto keep only tiles that divide the problem, of at least this many elements, and only while they give
    # every compute unit a workgroup (else IREE's heuristic)
    whole_tiles_only: bool = False
    min_tile_elements: int = 0
    max_tile_elements: int | None = None
    # spread a tile whose M allows it over twice the waves along M (wave32 lanes hold twice the accumulator)
    double_waves_m: bool = False
    # fp8 256x256 tiles spill below this many K steps and in every TN problem (0: no such rule)
    fp8_256_min_k_steps: int = 0


@dataclass(frozen=True)
class Timing:
    """What the timing model (`pipelines.timing`) needs of one AMD chip, in clocks of its engine clock. Each
    figure is published (sources in the entry) except the ones named in `fitted`, which calibration sets."""

    clock_mhz: float
    issue_interval: int  # clocks between two issue visits of the sequencer to one SIMD
    valu_cycles: int  # clocks a VALU instruction holds its SIMD's vector port (wave64 on a 16-lane SIMD: 4)
    valu_latency: int  # clocks until a dependent VALU may read the result
    salu_latency: int
    mma_read_extra: int  # clocks after the matrix pipe is done before a non-accumulating reader may read D
    lds_latency: int  # clocks from the end of an LDS access's bank passes to its data in registers
    smem_latency: int
    vmem_latency: int  # clocks from issue to data for a global/buffer load (L2 and beyond: fitted)
    vmem_bytes_per_clk: int  # bytes a CU's vector memory path returns per clock
    branch_latency: int
    barrier_latency: int  # clocks from the last wave's arrival to the release
    hbm_bytes_per_s: float
    l2_bytes_per_xcd: int
    launch_us: float  # per dispatch
    # The engine clock with every CU's matrix pipes busy on every clock: dense matrix work draws the chip to its
    # power limit, and power management lowers the clock (`pipelines.timing.predict.engine_clock_mhz`). None: the
    # clock stays at clock_mhz whatever the load.
    matrix_clock_mhz: float | None = None
    # The memory-side cache (MALL, AMD's Infinity Cache) the whole chip shares in front of DRAM; None: the DRAM
    # traffic model (`pipelines.timing.traffic`) is not used and a dispatch moves A, B and C once.
    mall_bytes: int | None = None
    # Bytes per second the chip's L2s together take from the MALL and DRAM behind them (what the L2s miss,
    # `pipelines.timing.traffic`); None: not a limit in the model.
    fabric_bytes_per_s: float | None = None
    simds: int = 4  # SIMDs per compute unit as `compute_units` counts them (RDNA3.5: 2 per CU, 4 per WGP)
    # Whether other VALU instructions may issue on a SIMD while its matrix instruction runs (CDNA's MFMAs: yes,
    # after `valu_cycles`; RDNA3's WMMAs: no, the VALU is held for the instruction's whole `busy`; AMD's matrix
    # instruction calculator, `coexec`)
    mma_coexec: bool = True
    # The model's median |error| on published times it was not fitted on (a fraction; the source in `sources`);
    # None: not judged on any, so no choice of `auto` or `tuned` leaves IREE's default on its word
    # (`pipelines.pick`).
    error: float | None = None
    fitted: tuple[str, ...] = ()  # fields set by calibration, not taken from a source
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class ComputeUnits:
    """How many compute units a rule fills (the split rule, `pipelines.named.split_plan`), and whose count it is:
    the device that will run the kernels where the command knows it (`pipelines.device_units`), else the target
    table's. PTX for sm_80 runs on whatever NVIDIA GPU the driver JIT-compiles it for (132 SMs on an H100, where
    the A100 that sm_80 describes has 108)."""

    count: int
    source: str  # "device" (asked of the driver) or "target" (this table)
    name: str  # whose count: the device ("cuda: NVIDIA H100 80GB HBM3") or the target ("sm_80")

    def describe(self) -> str:
        whose = f"the device's, {self.name}" if self.source == "device" else f"{self.name}'s, from the target table"
        return f"{self.count} compute units ({whose})"

    def to_json(self) -> dict:
        return {"count": self.count, "source": self.source, "name": self.name}


@dataclass(frozen=True, eq=False)
class Target:
    name: str
    backend: str  # "rocm" | "cuda" | "cpu"
    description: str
    compile_flags: tuple[str, ...]
    dtypes: tuple[str, ...]  # input element types this target runs
    wave_size: int = 64
    lds_bytes: int = 0  # per workgroup
    lds_per_cu: int = 0  # shared by the workgroups resident on one CU (WGP on gfx1151)
    lds_banks: int = 32
    vgprs_per_lane: int = 512  # addressable by one wave (VGPR + AGPR on CDNA)
    vgpr_file_per_lane: int = 512  # per SIMD, shared by its waves
    vgpr_granule: int = 8
    max_waves_per_simd: int = 8
    simds_per_cu: int = 4
    max_workgroup_threads: int = 1024
    mma: dict[str, Mma] = field(default_factory=dict)
    # SMFMAC opcode -> matrix-pipe clocks: the sparse MFMAs IREE's heuristic emits on its own (`_CDNA3_SPARSE_CYCLES`)
    sparse_mma_cycles: dict[str, int] = field(default_factory=dict)
    dma: bool = False  # direct global->LDS loads that IREE 3.13 will use
    # Transposing LDS reads of 16-bit elements (ds_read_b64_tr_b16, CDNA4): a K×N tile stored N-contiguous is read as
    # K-contiguous MFMA fragments, so NN kernels can copy B straight into LDS
    lds_transpose_reads: bool = False
    compute_units: int = 1  # CUs (AMD) or SMs (NVIDIA): workgroups needed to fill the chip once
    xcds: int = 1
    cus_per_xcd: int = 0
    peak_tflops: dict[str, float] = field(default_factory=dict)  # dense, by input type family: "16bit", "fp8"
    compiler_gaps: tuple[CompilerGap, ...] = ()  # problems iree-compile 3.13 fails on for this target
    # Routes (`pipelines.routes`): how a schedule of a named pipeline or schedule flags reaches IREE, and how the
    # `codegen` pipelines do (None: they do not run here); generated warp-group kernels it has (ukernel route).
    schedule_route: str = "iree-cpu"
    codegen_route: str | None = None
    # The route of the target's own kernels: the `hopper` pipeline's, and `auto`'s first choice where it takes the
    # problem (None: the target has none)
    kernel_route: str | None = None
    kernels: tuple[str, ...] = ()
    # Generated MFMA kernels shipped with padded LDS rows instead of the XOR swizzle, each for the prediction named
    # beside its entry (`transforms.ukernel_dbuf.dbuf_schedule`).
    padded_kernels: tuple[str, ...] = ()
    # input element bytes, or (kernel, input element bytes) where one kernel differs -> intrinsic pattern
    ukernel_mma: dict[int | tuple[str, int], str] = field(default_factory=dict)
    isa: str = ""  # what the dump holds: "amdgcn" (.rocmasm), "ptx" (.ptx) or "" (host code, not inspected)
    device_drivers: tuple[str, ...] = ()  # IREE runtime drivers that run its executables (--device before '://')
    # Its driver is asked how many compute units the --device GPU has (`pipelines.device_units`): the ISA runs on
    # GPUs of other counts (sm_80 PTX on a 132-SM H100). False: the table's count is the device's.
    asks_compute_units: bool = False
    # What IREE 3.13 does on this target's backend: pipelines shared memory for prefetch_num_stages >= 2, keeps LDS
    # swizzle hints, takes amdgpu-waves-per-eu.
    prefetch_pipelining: bool = False
    lds_swizzle: bool = False
    waves_per_eu: bool = False
    emulated: bool = False  # the CPU emulator runs its ISA (`pipelines.emulator`)
    # Buffer descriptors may set bit 14 of the stride field to turn on cache swizzling with that stride (gfx942
    # and later CDNA; MLIR's AMDGPU-to-ROCDL lowering of `cacheSwizzleStride`): a caching mode, raw addressing.
    buffer_cache_swizzle: bool = False
    # The ISA family whose wait-state (hazard) table applies (pipelines/emulator/waitstates.py): "cdna3", "cdna4",
    # "rdna3"; "" where the emulator does not run the target.
    isa_family: str = ""
    iree_ukernels: bool = False  # IREE 3.13 has ROCm tensor ukernels here (`--iree-rocm-enable-tensor-ukernels`)
    named: NamedRules = field(default_factory=NamedRules)
    timing: Timing | None = None  # AMD: what the timing model needs
    sources: tuple[str, ...] = ()

    @property
    def gpu(self) -> bool:
        """Whether it compiles GPU kernels (schedules, verification and dispatch repeats apply)."""
        return bool(self.isa)

    @property
    def fp8_types(self) -> tuple[str, ...]:
        return tuple(t for t in self.dtypes if t.startswith("f8"))

    def peak(self, dtype: str) -> float | None:
        return self.peak_tflops.get(dtype_family(dtype))

    def units(self) -> ComputeUnits:
        """The target's own compute-unit count, for a command that does not know the device."""
        return ComputeUnits(self.compute_units, "target", self.name)

    def intrinsics_for(self, dtype: str) -> list[str]:
        return [name for name, mma in self.mma.items() if mma.operand == dtype]


def _mfma(names_and_opcodes: list[tuple[str, str]], cycles: dict[str, int] | None = None) -> dict[str, Mma]:
    return {name: Mma(name, opcode, (cycles or {}).get(opcode, 0)) for name, opcode in names_and_opcodes}


# Matrix pipe clocks per instruction (1 pass = 4 clocks): LLVM's AMDGPU scheduling model (SISchedule.td, its
# gfx940/gfx950 MFMA pass counts), AMD's matrix instruction calculator (cdna3: 16 clocks for 16x16x16 f16/bf16
# and 16x16x32 fp8, 32 for 32x32x8 and 32x32x16 fp8; rdna3: 32 for v_wmma_f32_16x16x16_f16/bf16) and rocRoller's
# gfx95X table. The gfx950 f8f6f4 forms take twice the passes with fp8 inputs (SISchedule.td's comment; the
# MI355X's 5 PFLOP/s fp8 against 2.5 f16 says the same); IREE feeds them fp8 only.
_CDNA3_CYCLES = {"v_mfma_f32_16x16x16_bf16": 16, "v_mfma_f32_16x16x16_f16": 16, "v_mfma_f32_32x32x8_bf16": 32,
                 "v_mfma_f32_32x32x8_f16": 32, "v_mfma_f32_16x16x32_fp8_fp8": 16, "v_mfma_f32_16x16x32_bf8_bf8": 16,
                 "v_mfma_f32_32x32x16_fp8_fp8": 32, "v_mfma_f32_32x32x16_bf8_bf8": 32}
_CDNA4_CYCLES = dict(_CDNA3_CYCLES, **{"v_mfma_f32_16x16x32_bf16": 16, "v_mfma_f32_16x16x32_f16": 16,
                                       "v_mfma_f32_32x32x16_bf16": 32, "v_mfma_f32_32x32x16_f16": 32,
                                       "v_mfma_f32_16x16x128_f8f6f4": 32, "v_mfma_f32_32x32x64_f8f6f4": 64})
_RDNA3_CYCLES = {"v_wmma_f32_16x16x16_bf16": 32, "v_wmma_f32_16x16x16_f16": 32}
# Sparse MFMAs (SMFMAC, A 2:4-sparse) that IREE 3.13's own heuristic emits for skinny GEMMs (its VDMFMA virtual
# intrinsics, M of 5-8: the 16x16x32 forms on gfx942 and gfx950); no schedule names one. Matrix pipe clocks from AMD's
# matrix instruction calculator (cdna3: 16 for the 16x16 forms, 32 for the 32x32 ones); gfx950 runs the same CDNA3
# forms and is given the same clocks, as its dense CDNA3 forms are (`_CDNA4_CYCLES`).
_CDNA3_SPARSE_CYCLES = {f"v_smfmac_f32_{shape}_{t}": clocks
                        for shapes, types in ((("16x16x32", "32x32x16"), ("bf16", "f16")),
                                              (("16x16x64", "32x32x32"), ("fp8_fp8", "fp8_bf8", "bf8_fp8", "bf8_bf8")))
                        for shape, clocks in zip(shapes, (16, 32)) for t in types}


_GFX942_MMA = _mfma([
    ("MFMA_F32_16x16x16_BF16", "v_mfma_f32_16x16x16_bf16"),
    ("MFMA_F32_32x32x8_BF16", "v_mfma_f32_32x32x8_bf16"),
    ("MFMA_F32_16x16x16_F16", "v_mfma_f32_16x16x16_f16"),
    ("MFMA_F32_32x32x8_F16", "v_mfma_f32_32x32x8_f16"),
    ("MFMA_F32_16x16x32_F8E4M3FNUZ", "v_mfma_f32_16x16x32_fp8_fp8"),
    ("MFMA_F32_32x32x16_F8E4M3FNUZ", "v_mfma_f32_32x32x16_fp8_fp8"),
    ("MFMA_F32_16x16x32_F8E5M2FNUZ", "v_mfma_f32_16x16x32_bf8_bf8"),
    ("MFMA_F32_32x32x16_F8E5M2FNUZ", "v_mfma_f32_32x32x16_bf8_bf8"),
], _CDNA3_CYCLES)

_GFX950_MMA = _mfma([
    ("MFMA_F32_16x16x32_BF16", "v_mfma_f32_16x16x32_bf16"),
    ("MFMA_F32_32x32x16_BF16", "v_mfma_f32_32x32x16_bf16"),
    ("MFMA_F32_16x16x32_F16", "v_mfma_f32_16x16x32_f16"),
    ("MFMA_F32_32x32x16_F16", "v_mfma_f32_32x32x16_f16"),
    ("MFMA_F32_16x16x16_BF16", "v_mfma_f32_16x16x16_bf16"),
    ("MFMA_F32_32x32x8_BF16", "v_mfma_f32_32x32x8_bf16"),
    ("MFMA_F32_16x16x16_F16", "v_mfma_f32_16x16x16_f16"),
    ("MFMA_F32_32x32x8_F16", "v_mfma_f32_32x32x8_f16"),
    ("MFMA_F32_16x16x128_F8E4M3FN", "v_mfma_f32_16x16x128_f8f6f4"),
    ("MFMA_F32_32x32x64_F8E4M3FN", "v_mfma_f32_32x32x64_f8f6f4"),
    ("MFMA_F32_16x16x128_F8E5M2", "v_mfma_f32_16x16x128_f8f6f4"),
    ("MFMA_F32_32x32x64_F8E5M2", "v_mfma_f32_32x32x64_f8f6f4"),
    ("MFMA_F32_16x16x32_F8E4M3FN", "v_mfma_f32_16x16x32_fp8_fp8"),
    ("MFMA_F32_32x32x16_F8E4M3FN", "v_mfma_f32_32x32x16_fp8_fp8"),
    ("MFMA_F32_16x16x32_F8E5M2", "v_mfma_f32_16x16x32_bf8_bf8"),
    ("MFMA_F32_32x32x16_F8E5M2", "v_mfma_f32_32x32x16_bf8_bf8"),
], _CDNA4_CYCLES)

_GFX1151_MMA = _mfma([
    ("WMMAR3_F32_16x16x16_BF16", "v_wmma_f32_16x16x16_bf16"),
    ("WMMAR3_F32_16x16x16_F16", "v_wmma_f32_16x16x16_f16"),
], _RDNA3_CYCLES)

_SM80_MMA = _mfma([
    ("NV_MMA_SYNC_F32_16x8x16_BF16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("NV_MMA_SYNC_F32_16x8x16_F16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
])

_SM89_MMA = dict(_SM80_MMA, **_mfma([
    ("NV_MMA_SYNC_F32_16x8x32_F8E4M3FN", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"),
    ("NV_MMA_SYNC_F32_16x8x32_F8E5M2", "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32"),
]))

_HIP = ("--iree-hal-target-device=hip",)
_CUDA = ("--iree-hal-target-device=cuda",)

# The facts every ROCm target shares: IREE 3.13 pipelines shared memory, keeps LDS swizzle hints and takes
# amdgpu-waves-per-eu there; the CPU emulator runs its ISA.
_ROCM: dict[str, Any] = dict(schedule_route="tuning-spec", codegen_route="lanes", isa="amdgcn", device_drivers=("hip",),
                              prefetch_pipelining=True, lds_swizzle=True, waves_per_eu=True, emulated=True)
# CUDA reads compilation_info from the op; IREE 3.13 does not pipeline shared memory there (its PTX is identical
# for prefetch 0 and 3, see transforms.schedule.check).
_NVIDIA: dict[str, Any] = dict(schedule_route="op-attribute", codegen_route="codegen-library", isa="ptx",
                               device_drivers=("cuda",), asks_compute_units=True)
# CDNA3/CDNA4: four 16-lane SIMDs per CU, visited by the sequencer every 4 clocks, so a wave64 VALU op holds its
# SIMD 4 clocks (rocprofiler-compute, pipeline-descriptions). LLVM's gfx9 scheduling model counts in such 4-clock
# passes: VALU 1, SALU 1, LDS 5, SMEM 5, branch 8 (SISchedule.td). A non-accumulating reader of an MFMA result
# waits N+3 wait states after an N-pass MFMA on gfx942 (GCNHazardRecognizer), N+4 on gfx950 (rocRoller), i.e. 3 or
# 4 passes after the pipe is done. LDS bank passes come from the emulator (32 or 64 banks × 4 B per clock).
_CDNA_SOURCES = ("LLVM AMDGPU SISchedule.td (gfx9 model, 4-clock passes) and GCNHazardRecognizer.cpp (MFMA read "
                 "hazards); rocRoller XDLWrite94x (gfx950 +1); rocprofiler-compute pipeline-descriptions (4 SIMD16 "
                 "per CU, sequencer visits a SIMD every 4 clocks)",)
# The four `fitted` facts: `pipelines calibrate --fit` on the 42 published MI355X rows
# (../shared/research/amd-measured-calibration.csv; results/calibration/2026-11-24.md) chose vmem_latency 1800 from
# the initial 500 and barrier_latency 16 from 32, and kept the other two. gfx942 has its own vmem_latency (below).
_CDNA_TIMING: dict[str, Any] = dict(
    issue_interval=4, valu_cycles=4, valu_latency=4, salu_latency=4, lds_latency=20, smem_latency=20, branch_latency=32,
    vmem_latency=1800, vmem_bytes_per_clk=64, barrier_latency=16, launch_us=4.0,
    fitted=("vmem_latency", "vmem_bytes_per_clk", "barrier_latency", "launch_us"))
_CDNA_KERNELS = ("pingpong8", "double_buffered", "interleave4", "producer_consumer")

# `tuned` on CUDA: IREE 3.13 does not pipeline shared memory there, hence prefetch 0; the 128x128x64 tile measured
# best on an H200. Only whole tiles that fill the SMs: padded tiles ran at 0.48x IREE's default (bf16 4000³ NN,
# 50 vs 104 TFLOP/s), 64x64 at 0.93-0.94x (1024³) where 128x128 ran 0.98x, and 128x128 grids of 64 workgroups at
# 0.86-0.87x (128x8192x8192 NT, 4096x256x4096) on an H200 in the same runs (results/h200).
_CUDA_RULES: dict[str, Any] = dict(whole_tiles_only=True, min_tile_elements=128 * 128)
_SM80_TUNED = {"16bit": ("NV_MMA_SYNC_F32_16x8x16_{T}", Schedule(Tile((128, 128), 64, (2, 2), ""), Staging(0)))}

TARGETS: dict[str, Target] = {t.name: t for t in (
    Target(
        "gfx942", "rocm", "AMD CDNA3: MI300X / MI325X", _HIP + ("--iree-rocm-target=gfx942",),
        dtypes=("f16", "bf16", "f8E4M3FNUZ", "f8E5M2FNUZ"),
        lds_bytes=65536, lds_per_cu=65536, lds_banks=32, mma=_GFX942_MMA, sparse_mma_cycles=_CDNA3_SPARSE_CYCLES,
        compute_units=304, xcds=8, cus_per_xcd=38,
        peak_tflops={"16bit": 1307.4, "fp8": 2614.9}, **_ROCM, kernels=_CDNA_KERNELS, buffer_cache_swizzle=True,
        iree_ukernels=True, isa_family="cdna3",
        # Under dense bf16 GEMM (hipBLASLt 4096x4864x32896, random data, 750 W) an MI300X ran at a median 1207 MHz
        # and 708 TFLOP/s, 94 % of the peak at that clock (AMD ROCm blog, "Measuring Max-Achievable FLOPs, Part 2",
        # footnotes): 2100 - (2100 - 1207) / 0.94 = 1150 MHz with the pipes busy on every clock.
        # vmem_latency 250 clocks: fitted on 7 of 13 published MI300X Triton GEMM times (ROCm/triton tune_gemm
        # reference results @ e5601b2305, fp16 NT, warm L2, rocprof; odd rows; kernels rebuilt here:
        # results/triton/published-mi300x-2026-11-26.md) and judged on the other 6: median |error| 10 % on the
        # fitted rows, 9 % held out, every row within 17 % (1800, the MI355X IREE fit gfx942 borrowed before,
        # put them at 115 %).
        timing=Timing(clock_mhz=2100, mma_read_extra=12, hbm_bytes_per_s=5.3e12, l2_bytes_per_xcd=4 << 20,
                      mall_bytes=256 << 20, fabric_bytes_per_s=17.2e12,
                      **dict(_CDNA_TIMING, matrix_clock_mhz=1150, vmem_latency=250), error=0.09,
                      sources=_CDNA_SOURCES + (
                          "AMD CDNA 3 white paper: 256 MB AMD Infinity Cache (MALL) shared by the XCDs; each XCD's "
                          "L2 reaches the Infinity Fabric over 16 channels of 64 B a clock, 17.2 TB/s for the 8 "
                          "at 2.1 GHz, the MALL's peak",
                          "Modular's MAX docs, chiplet_transform_chunked: MI300X/MI355X deal workgroups to their 8 "
                          "XCDs round-robin (WG0 to XCD0, WG1 to XCD1, ...), each XCD with its own L2",
                          "AMD MI300 architecture page (ROCm docs): 2048 FLOP/clk/CU 16-bit, 1307.4 TFLOP/s, so "
                          "2100 MHz; 5.3 TB/s; 4 MB L2 per XCD",
                          "AMD ROCm blog 'Measuring Max-Achievable FLOPs - Part 2' (MI300X bf16 GEMM: median 1207 "
                          "MHz, 708 TFLOP/s, 94 % of the peak at that clock)",
                          "ROCm/triton tune_gemm benchmarking_results_ref@709e3fdbf.csv @ e5601b2305 (MI300X), for "
                          "the fitted vmem_latency; `error` 9 %: the median |error| on its 6 held-out rows")),
        ukernel_mma={2: "MFMA_F32_16x16x16_{T}", 1: "MFMA_F32_16x16x32_{T}"},
        named=NamedRules(tuned={
            # HipKittens' 256x256 8-wave tile with swizzled LDS; 256×256×64 spills 4 VGPRs for NN on gfx942 (LLVM
            # keeps the accumulator out of AGPRs); K 32 does not.
            "16bit": ("MFMA_F32_16x16x16_{T}", Schedule(Tile((256, 256), 32, (2, 4), ""), Staging(2),
                                                        Swizzle("xor", "xcd"), WarpGroups(waves_per_eu=2))),
            "fp8": ("MFMA_F32_16x16x32_{T}", Schedule(Tile((256, 256), 64, (2, 4), ""), Staging(2),
                                                      Swizzle("xor", "xcd"), WarpGroups(waves_per_eu=2)))},
            auto_intrinsics={"16bit": ("MFMA_F32_16x16x16_{T}",), "fp8": ("MFMA_F32_16x16x32_{T}",)}),
        sources=("AMD Instinct MI300X data sheet (304 CUs, 8 XCDs, 1307.4 TFLOP/s bf16/f16 and 2614.9 fp8, dense)",
                 "IREE 3.13 target description for gfx942 (65536 B workgroup memory, 32 banks, wave64)")),
    Target(
        "gfx950", "rocm", "AMD CDNA4: MI350X / MI355X", _HIP + ("--iree-rocm-target=gfx950",),
        dtypes=("f16", "bf16", "f8E4M3FN", "f8E5M2"),
        lds_bytes=163840, lds_per_cu=163840, lds_banks=64, mma=_GFX950_MMA, sparse_mma_cycles=_CDNA3_SPARSE_CYCLES,
        dma=True, lds_transpose_reads=True, compute_units=256, xcds=8,
        cus_per_xcd=32,
        peak_tflops={"16bit": 2500.0, "fp8": 5000.0}, **_ROCM, buffer_cache_swizzle=True, iree_ukernels=True,
        isa_family="cdna4",
        kernels=_CDNA_KERNELS + ("double_buffered_dma", "pingpong8_dma"),
        # matrix_clock_mhz: fitted to HipKittens' published 8192^3 bf16 time on an MI355X (682.7 us, 1610.5
        # TFLOP/s; HazyResearch/HipKittens analysis/bf16_gemm/mi350x/mi355x_bf16_gemm.json @ f09e9685), its kernel
        # rebuilt here and replayed with the facts below: 1778 MHz with every pipe busy. Held out: HipKittens'
        # 4096^3 (97.3 us published) is predicted 89.3 us (-8 %; -29 % at a constant 2400 MHz). Not in `fitted`:
        # calibrate does not refit it on IREE rows.
        # The `fitted` facts, on the 42 shipped MI355X rows (`pipelines calibrate --csv
        # pipelines/timing/data/amd-measured-calibration.csv --holdout results/calibration/heldout-gfx950.csv`,
        # 16-19 min a fit), in turn with the clock: with the clock at 1723 the fit gave VMEM latency 1200 clocks
        # (was 1800), 32 bytes a clock per CU (was 64), barrier 64; the clock refitted on HipKittens' kernel with
        # those went to 1948; the IREE fit then gave barrier 32 and fabric_bytes_per_s 8 TB/s (gfx942's 17.2 to
        # start; no published CDNA4 figure); the clock with those went to 1778, where the table stands. A further
        # IREE fit moved again (VMEM latency 500, 6 TB/s): the two fits have no fixed point, so these facts are not
        # pinned by the published rows, and the table keeps the state after the clock's fit.
        # results/calibration/heldout-fit-2026-11-26.md has each step's held-out figures.
        timing=Timing(clock_mhz=2400, mma_read_extra=16, hbm_bytes_per_s=8.0e12, l2_bytes_per_xcd=4 << 20,
                      mall_bytes=256 << 20, fabric_bytes_per_s=8e12,
                      **dict(_CDNA_TIMING, matrix_clock_mhz=1778, vmem_latency=1200, vmem_bytes_per_clk=32,
                             barrier_latency=32,
                             fitted=_CDNA_TIMING["fitted"] + ("fabric_bytes_per_s",)), error=0.15,
                      sources=_CDNA_SOURCES + (
                          "Chips and Cheese, 'AMD's CDNA 4 Architecture Announcement': 256 MB memory-side cache (MALL) "
                          "under the eight XCDs; workgroups dealt to the XCDs round-robin as on MI300X",
                          "AMD CDNA4 ISA reference guide: DS_READ_B64_TR_B16 (transposing LDS reads)",
                          "AMD MI350 architecture page (ROCm docs): 8 TB/s HBM3E, 4 MB L2 per XCD, 160 KB LDS with "
                          "doubled read bandwidth; 2400 MHz (Hot Chips 2025, MI355X)",
                          "HipKittens mi355x_bf16_gemm.json @ f09e9685 (8192^3 bf16: 682.7 us), for the fitted "
                          "matrix_clock_mhz",
                          "`error` 15 %: the median |error| on the 60 held-out published MI355X rows of >= 20 us "
                          "(results/calibration/heldout-slots-2026-11-26.md; DMA-on rows >= 1 ms ran up to 51 % "
                          "slower than predicted)")),
        # fp8: pingpong8_dma takes CDNA4's double-rate 16x16x128 (K 128 per row is its tile); the other kernels'
        # 64-byte K tiles hold half of one, and keep the 16x16x32 at the 16-bit rate
        ukernel_mma={2: "MFMA_F32_16x16x32_{T}", 1: "MFMA_F32_16x16x32_{T}",
                     ("pingpong8_dma", 1): "MFMA_F32_16x16x128_{T}"},
        # Padded rows take 124 VGPRs where the XOR swizzle's addressing takes 134, so 4 workgroups fit a CU, not 3:
        # PREDICTED bf16 NT 120 against 235 us at 4096^3 and 931 against 1385 us at 8192^3
        # (results/predicted/kernel-questions-2026-11-24.md). interleave4 gains nothing (126 against 124 us).
        padded_kernels=("double_buffered",),
        named=NamedRules(tuned={
            "16bit": ("MFMA_F32_16x16x32_{T}", Schedule(Tile((256, 256), 64, (2, 4), ""),
                                                        Staging(2, direct_to_lds=True), Swizzle("xor", "xcd"))),
            # The 16x16x128 fp8 intrinsic spills 30 VGPRs for NN at this tile; 32x32x64 needs fewer fragment
            # registers.
            "fp8": ("MFMA_F32_32x32x64_{T}", Schedule(Tile((256, 256), 128, (2, 4), ""),
                                                      Staging(2, direct_to_lds=True), Swizzle("xor", "xcd")))},
            # fp8: 32x32x64 for K of 64-127.
            auto_intrinsics={"16bit": ("MFMA_F32_16x16x32_{T}",),
                             "fp8": ("MFMA_F32_16x16x128_{T}", "MFMA_F32_32x32x64_{T}")},
            # fp8 256x256x128: 6 VGPRs spilled in every TN problem; 2-4 at 4, 5 and 6 K steps (K 512-768) and none
            # at 3 or from 7 on (LLVM unrolls the short pipelined loops differently; tools/named_sweep.py).
            fp8_256_min_k_steps=8),
        compiler_gaps=(CompilerGap("16bit", ("nn", "nt"), (5, 8), ANY, "crashes (a segmentation fault)"),),
        sources=("AMD Instinct MI355X data sheet (256 CUs, 8 XCDs, 2.5 PFLOP/s bf16/f16 and 5.0 fp8, dense)",
                 "IREE 3.13 target description for gfx950 (163840 B workgroup memory, 64 banks, DMA sizes 32/128)",
                 "iree-compile 3.13 for gfx950 crashes on f16/bf16 NN and NT GEMMs with M of 5-8 (default pipeline "
                 "included; M 1-4 and 9 and TN compile): the named-pipeline sweep, tools/named_sweep.py")),
    Target(
        "gfx1151", "rocm", "AMD RDNA3.5: Strix Halo (Radeon 8060S)", _HIP + ("--iree-rocm-target=gfx1151",),
        dtypes=("f16", "bf16"), wave_size=32,
        lds_bytes=65536, lds_per_cu=131072, lds_banks=64, vgprs_per_lane=256, vgpr_file_per_lane=1536,
        vgpr_granule=24, max_waves_per_simd=16, simds_per_cu=4, mma=_GFX1151_MMA, compute_units=40,
        peak_tflops={"16bit": 59.4}, **_ROCM, kernels=("double_buffered", "interleave"), isa_family="rdna3",
        # RDNA3.5: SIMD32, a wave32 VALU op issues every clock; LLVM's GFX11 model counts clocks: VALU 5, SALU 2,
        # SMEM 20, LDS 20, VMEM 320, branch 32.
        timing=Timing(clock_mhz=2900, issue_interval=1, valu_cycles=1, valu_latency=5, salu_latency=2,
                      mma_read_extra=4, lds_latency=20, smem_latency=20, vmem_latency=320, vmem_bytes_per_clk=64,
                      branch_latency=32, barrier_latency=32, hbm_bytes_per_s=256e9, l2_bytes_per_xcd=2 << 20,
                      mall_bytes=32 << 20, launch_us=4.0, simds=2, mma_coexec=False,
                      fitted=("vmem_bytes_per_clk", "barrier_latency", "launch_us"), sources=(
                          "LLVM AMDGPU SISchedule.td (GFX11SpeedModel)",
                          "AMD matrix instruction calculator (rdna3 WMMA 32 clocks, no co-execution with VALU: "
                          "'coexec': False for v_wmma_f32_16x16x16_f16/bf16)",
                          "Radeon 8060S: 40 CUs at 2900 MHz, LPDDR5X-8000 × 256 bit = 256 GB/s, 2 MB L2",
                          "Chips and Cheese, 'Strix Halo's Memory Subsystem' (2025-10-31): one 2 MB GPU L2 and a 32 "
                          "MB Infinity Cache (MALL) as the GPU's last level",
                          "2 SIMD32 per CU: 40 CUs × 2 × 256 FLOP/clk (a 32-clock 16x16x16 WMMA) × 2.9 GHz = 59.4 "
                          "TFLOP/s, the published peak")),
        ukernel_mma={2: "WMMAR3_F32_16x16x16_{T}"},
        named=NamedRules(
            # The 128×64 tile was fastest on gfx1151.
            tuned={"16bit": ("WMMAR3_F32_16x16x16_{T}", Schedule(Tile((128, 64), 32, (4, 2), ""), Staging(2),
                                                                 Swizzle("pad")))},
            auto_intrinsics={"16bit": ("WMMAR3_F32_16x16x16_{T}",)},
            # 256x256 spilled 52 VGPRs and 256x128 8-37, in every layout and both 16-bit types.
            max_tile_elements=128 * 128, double_waves_m=True),
        sources=("40 CUs × 2.9 GHz × 512 FLOP/clk/CU = 59.4 TFLOP/s f16/bf16 WMMA (Strix Halo, llm-tracker.info)",
                 "LLVM AMDGPU: gfx1151 has FeatureGFX11FullVGPRs (1536 VGPRs per SIMD in wave32, granule 24)",
                 "IREE 3.13 target description for gfx1151 (65536 B workgroup memory, 64 LDS banks, wave32 "
                 "preferred)")),
    Target(
        "sm_80", "cuda", "NVIDIA Ampere (A100); PTX JIT-compiled on Hopper", _CUDA + ("--iree-cuda-target=sm_80",),
        dtypes=("f16", "bf16"), wave_size=32, lds_bytes=166912, lds_per_cu=167936, vgprs_per_lane=255,
        vgpr_file_per_lane=65536 // 32, mma=_SM80_MMA, compute_units=108, peak_tflops={"16bit": 312.0}, **_NVIDIA,
        named=NamedRules(tuned=_SM80_TUNED, auto_intrinsics={"16bit": ("NV_MMA_SYNC_F32_16x8x16_{T}",)},
                         **_CUDA_RULES),
        sources=("NVIDIA A100 data sheet (108 SMs, 312 TFLOP/s bf16/f16 tensor core, dense)",
                 "IREE 3.13 target description for sm_80 (166912 B workgroup memory)")),
    Target(
        # Hopper: its own kernels through the hopper route (sm_90a PTX in the program's executable); IREE's own
        # pipelines (default, tuned, auto where the Hopper kernels do not take the problem, codegen) compile sm_80
        # PTX, which the driver JIT-compiles for the H100, as IREE 3.13 has no sm_90a target ("missing GPU target"
        # for --iree-cuda-target=sm_90a): their limits are sm_80's (166912 B of shared memory a workgroup).
        "sm_90a", "cuda", "NVIDIA Hopper (H100 / H200): Hopper kernels as sm_90a PTX; IREE's own pipelines as sm_80 "
        "PTX, JIT-compiled", _CUDA + ("--iree-cuda-target=sm_80",),
        dtypes=("f16", "bf16"), wave_size=32, lds_bytes=166912, lds_per_cu=233472, vgprs_per_lane=255,
        vgpr_file_per_lane=65536 // 32, mma=_SM80_MMA, compute_units=132, peak_tflops={"16bit": 989.4},
        **_NVIDIA, kernel_route="hopper-program",
        named=NamedRules(tuned=_SM80_TUNED, auto_intrinsics={"16bit": ("NV_MMA_SYNC_F32_16x8x16_{T}",)},
                         **_CUDA_RULES),
        sources=("NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5: 132 SMs, 228 KB shared memory per "
                 "SM, 227 KB per thread block; 989.4 TFLOP/s bf16/f16 dense)",
                 "IREE 3.13 target description for sm_80 (166912 B workgroup memory), the PTX IREE's pipelines emit")),
    Target(
        "sm_89", "cuda", "NVIDIA Ada (L40S); PTX JIT-compiled on Hopper", _CUDA + ("--iree-cuda-target=sm_89",),
        dtypes=("f16", "bf16", "f8E4M3FN", "f8E5M2"), wave_size=32, lds_bytes=101376, lds_per_cu=102400,
        vgprs_per_lane=255, vgpr_file_per_lane=65536 // 32, mma=_SM89_MMA, compute_units=142,
        peak_tflops={"16bit": 362.05, "fp8": 733.0}, **_NVIDIA,
        named=NamedRules(tuned=dict(_SM80_TUNED, fp8=("NV_MMA_SYNC_F32_16x8x32_{T}", Schedule(
            Tile((128, 128), 128, (2, 2), ""), Staging(0)))),
            auto_intrinsics={"16bit": ("NV_MMA_SYNC_F32_16x8x16_{T}",), "fp8": ("NV_MMA_SYNC_F32_16x8x32_{T}",)},
            **_CUDA_RULES),
        compiler_gaps=tuple(CompilerGap("fp8", ("nn", "nt", "tn"), m, n, "stops in LLVM translation on an unrealized "
                                        "cast") for m, n in (((1, 4), ANY), (ANY, (1, 4)))),
        sources=("NVIDIA L40S data sheet (142 SMs, 362.05 TFLOP/s bf16/f16, 733 fp8 tensor core, dense)",
                 "IREE 3.13 target description for sm_89 (101376 B workgroup memory)",
                 "iree-compile 3.13 for sm_89 fails on fp8 GEMMs with M or N of 1-4 ('LLVM Translation failed for "
                 "operation: builtin.unrealized_conversion_cast', default pipeline included) and compiles 5-8: the "
                 "named-pipeline sweep, tools/named_sweep.py")),
    Target(
        "cpu", "cpu", "host CPU through IREE's llvm-cpu backend (numerics)",
        ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         "--iree-llvmcpu-target-cpu=host"),
        dtypes=("f16", "bf16", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3FN", "f8E5M2"), wave_size=1,
        device_drivers=("local-task", "local-sync"),
        sources=("IREE llvm-cpu backend; peak depends on the host",)),
)}


@dataclass(frozen=True)
class IsaFamily:
    """What the emulator asks of an ISA family rather than of a target's name."""

    name: str
    # GFX9's encoding generation (CDNA): stores count in vmcnt, 16-bit VALU results zero the high half, the
    # GFX9 forms of LDS and buffer instructions; False: GFX10 and later (RDNA: vscnt, true16 halves)
    gfx9: bool
    # The wait-state table that applies (`pipelines.emulator.waitstates`): "mai" (CDNA's matrix-core and VALU
    # rules, with XNACK soft clauses) or "wmma" (RDNA3's WMMA rule)
    wait_states: str = "mai"
    # Wait states an XDL MFMA of more than 2 passes needs beyond the CDNA3 table (rocRoller XDLWrite94x: 1 on CDNA4)
    xdl_write_extra: int = 0


ISA_FAMILIES = {f.name: f for f in (IsaFamily("cdna3", True), IsaFamily("cdna4", True, xdl_write_extra=1),
                                    IsaFamily("rdna3", False, wait_states="wmma"))}


def isa_family(target_name: str) -> IsaFamily:
    """The ISA family of a target of the table (one sentence for a target without one)."""
    family = ISA_FAMILIES.get(get_target(target_name).isa_family)
    if family is None:
        raise TargetError(f"target '{target_name}' names no ISA family the emulator knows "
                          f"({', '.join(ISA_FAMILIES)}).")
    return family


def register(target: Target) -> None:
    """Add a target to the table (a new chip is one `Target` entry; the tests register a toy one)."""
    if target.name in TARGETS:
        raise TargetError(f"target '{target.name}' is already registered.")
    TARGETS[target.name] = target


def unregister(name: str) -> None:
    TARGETS.pop(name, None)


def get_target(name: str) -> Target:
    if name not in TARGETS:
        raise TargetError(f"unknown target '{name}'; choose one of {', '.join(TARGETS)}.")
    return TARGETS[name]


def kernel_targets(kernel: str | None = None) -> list[str]:
    """Targets with generated warp-group kernels (with `kernel`, if given)."""
    return [t.name for t in TARGETS.values() if t.kernels and (kernel is None or kernel in t.kernels)]


def check_kernel_target(kernel: str, target: Target) -> None:
    """A generated kernel asked of a target that does not have it: one sentence naming the targets that do."""
    where = kernel_targets(kernel)
    if where and kernel not in target.kernels:
        raise TargetError(f"the {kernel} kernel is generated for {' and '.join(where)}; {target.name} is not covered "
                          "(" + ", ".join(f"{k}: {'/'.join(kernel_targets(k))}" for k in _kernel_names()) + ").")


def _kernel_names() -> list[str]:
    return list(dict.fromkeys(k for t in TARGETS.values() for k in t.kernels))


def check_problem(target: Target, gemm) -> None:
    """The target runs the GEMM's input type, and IREE 3.13 compiles its shape for the target (one sentence)."""
    check_dtype(target, gemm.dtype)
    for gap in target.compiler_gaps:
        if gap.covers(gemm):
            span = lambda name, r: "" if r == ANY else f" {name} of {r[0]}-{r[1]}"  # noqa: E731
            raise TargetError(f"iree-compile 3.13 {gap.failure} on {gemm.dtype} {gemm.layout.upper()} GEMMs with"
                              f"{span('M', gap.m)}{span('N', gap.n)} for {target.name} ({gemm.shape_name}), "
                              "whatever the schedule; pad that dimension past the range or use another layout or "
                              "input type.")


def check_dtype(target: Target, dtype: str) -> None:
    if dtype in target.dtypes:
        return
    if dtype.startswith("f8") and target.fp8_types:
        raise TargetError(f"{target.name} runs fp8 as {' and '.join(target.fp8_types)}, not {dtype}.")
    if dtype.startswith("f8"):
        raise TargetError(f"{target.name} has no fp8 matrix instructions; it runs {', '.join(target.dtypes)}.")
    raise TargetError(f"{target.name} does not run {dtype}; it runs {', '.join(target.dtypes)}.")
