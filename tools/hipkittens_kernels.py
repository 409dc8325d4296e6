"""Foreign kernels for the emulator and the timing model: HipKittens' fastest MI355X bf16 GEMM, rebuilt for a shape.

    python tools/hipkittens_kernels.py --shape 8192 [--kernel bf16|fp8-8wave|fp8-4wave] [--hk-git DIR] \\
        [--rocm DIR] [--pybind11-python PY] [--clang CLANG] -o DIR [--force]

The kernel is `analysis/bf16_gemm/mi350x/kernel_8192.cpp` of HazyResearch/HipKittens (the source of the published
8192^3 figure, byte-identical to `kernels/gemm/bf16fp32/mi350x/256_256_64_32_with16x32.cpp`): `micro_tk`, a 256x256
block tile, K steps of 64, 8 waves, C = A·B^T in bf16 (A M×K and B N×K, both row-major: the project's NT). Its M, N
and K are `#define`s; the tool replaces them with `--shape` (M=N=K or MxNxK, multiples of 256) and compiles the
device code with the recipe of tools/hipkittens_toolchain.sh (which prepares the stand-in ROCm tree and pybind11
this needs): Debian clang-22, `-x hip --offload-arch=gfx950 --cuda-device-only -O3` and the flags of HipKittens'
Makefile. The kernel takes one 152-byte `micro_globals` by value: three `gl<bf16,-1,-1,-1,-1>` (48 bytes each:
`T* raw_ptr`, then `runtime_dim` batch, depth, rows, cols of 8 bytes, then an empty `descriptor_dict`;
include/types/global/gl.cuh and util.cuh) and a `hipStream_t`. The tool appends `static_assert`s of that layout to
the source, so a HipKittens whose layout moved fails to compile instead of being described wrongly, and checks
that every kernarg load of the listing reads a described field or hidden argument. DIR gets `kernel.amdgcn` and
`hipkittens.json`, which `pipelines emulate DIR` and `pipelines predict DIR` read
(`pipelines/emulator/foreign.py`): the launch (grid (M/256)·(N/256), 512 threads, MAX_SHARED_MEMORY of dynamic
LDS), the problem with its strides, and the struct as byte fields (pointers a, b, c; the dimensions the
launcher's `make_gl` gives a 2-D tensor: batch 1, depth 1, rows, cols; the stream null).

`--kernel fp8-8wave` and `fp8-4wave` build HipKittens' two MI350X fp8 GEMMs instead (`kernels/gemm/fp8fp32/`,
`matmul_device<M, N, K>`: e4m3 A M×K and B N×K, C = A·B^T in bf16, 256×256 tiles, K steps of 128, gfx950's
`v_mfma_f32_16x16x128_f8f6f4`; 8 waves of 64 in row-major tile order, or 4 waves holding their accumulators in
AGPRs, tiles dealt over the 8 XCDs and grouped by 4). Their shape is the constants of `main` (8-wave: M, N, K;
4-wave: `#define SIZE`, square, whose 1024 and 2048 launch other kernels); they take three `gl<T, 1, 1, R, C>` by
value (16 bytes each, a pointer and the empty descriptor dictionary) and 128 KiB of static LDS. Their sources
include `<omp.h>` for the host code only, so the device-only compile reads an empty stand-in.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipelines.output import output_folder  # noqa: E402
from tools.triton_kernels import metadata_args  # noqa: E402  (LLVM's .args; imports triton only to compile)
from transforms.errors import UserError  # noqa: E402

OUTPUT_KIND = "hipkittens-kernel"  # the kind its output folders record (pipelines.output)
FORMAT = "hipkittens-kernel/1"  # hipkittens.json's format, which pipelines/emulator/foreign.py checks
SOURCE = "analysis/bf16_gemm/mi350x/kernel_8192.cpp"
KERNEL = "_Z8micro_tk13micro_globals"
TARGET = "gfx950"
BLOCK = 256  # BLOCK_SIZE of the source: each workgroup's tile of C is BLOCK×BLOCK
THREADS = 512  # NUM_THREADS: 8 waves of 64
MAX_SHARED_MEMORY = 160000  # include/common/util.cuh; the launch's dynamic LDS (dynamic_shared_memory())
FLAGS = ("-x", "hip", f"--offload-arch={TARGET}", "--cuda-device-only", "-DKITTENS_CDNA4",
         "-DHIP_ENABLE_WARP_SYNC_BUILTINS", "-ffast-math", "-std=c++20", "-w", "-O3",
         # two work-arounds for HIP 6.3 headers under clang 22 (tools/hipkittens_toolchain.sh says why)
         "-D__AMDGCN_WAVEFRONT_SIZE=64", "-Wno-invalid-constexpr")
# gl<T, -1, -1, -1, -1> (include/types/global/gl.cuh): its members in declaration order, 8-byte aligned; the empty
# descriptor_dict takes one byte and pads the struct to 48.
GL_FIELDS = (("raw_ptr", 0, 8), ("batch_internal", 8, 8), ("depth_internal", 16, 8), ("rows_internal", 24, 8),
             ("cols_internal", 32, 8), ("tma_descs", 40, 1))
GL_BYTES = 48
GLOBALS = (("a", "_gl_A", 0), ("b", "_gl_B", 48), ("c", "_gl_C", 96))  # micro_globals: a, b, c, then the stream
STREAM_OFFSET, GLOBALS_BYTES = 144, 152
DEFAULTS = {"hk_git": "/work/.mirror/HazyResearch+HipKittens/repo", "rocm": "/tmp/hkbuild/rocm",
            "pybind11_python": "/tmp/hkbuild/venv/bin/python", "clang": "/usr/lib/llvm-22/bin/clang++"}


FP8_DIR = "kernels/gemm/fp8fp32"
FP8_BLOCK_K = 128  # BLOCK_K of both fp8 kernels
FP8_GL_BYTES = 16  # gl<T, 1, 1, R, C> with every dimension static: raw_ptr and the empty descriptor_dict
FP8_SHARED = 131072  # As[2][2] and Bs[2][2] of 128×128 fp8 tiles, static LDS


@dataclass(frozen=True)
class Build:
    """One HipKittens GEMM this tool builds: its source, launch and how its shape is set."""

    name: str
    source: str  # in the HipKittens repository
    archive: tuple[str, ...]  # the repository folders the compile reads
    dtype: str
    threads: int
    shared_bytes: int  # the launch's dynamic LDS
    block: int = BLOCK  # BLOCK_SIZE: each workgroup's tile of C is block×block
    chunk: int = 64  # chiplet_transform_chunked's chunk (bf16 kernels)
    wgm: int = 8  # rows of tiles per group of the grouped order (bf16 kernels)


OMP_STUB = "// stand-in for <omp.h>: only the host code, which a device-only compile does not emit, calls OpenMP\n"
BF16_DIR = "analysis/bf16_gemm/mi350x"
BUILDS = {
    # the kernels behind each published MI355X bf16 figure (mi355x_bf16_gemm.json): 8192 (also 4096: the same
    # source), 16384 (chunks of 256), 2048 and 1024 (128-wide tiles, WGM 4 and 2, chunks of WGM²)
    "bf16": Build("bf16", SOURCE, ("include",), "bf16", THREADS, MAX_SHARED_MEMORY),
    "bf16-16384": Build("bf16-16384", f"{BF16_DIR}/kernel_16384.cpp", ("include",), "bf16", THREADS,
                        MAX_SHARED_MEMORY, chunk=256),
    "bf16-2048": Build("bf16-2048", f"{BF16_DIR}/kernel_2048.cpp", ("include",), "bf16", THREADS, MAX_SHARED_MEMORY,
                       block=128, chunk=16, wgm=4),
    "bf16-1024": Build("bf16-1024", f"{BF16_DIR}/kernel_1024.cpp", ("include",), "bf16", THREADS, MAX_SHARED_MEMORY,
                       block=128, chunk=4, wgm=2),
    "fp8-8wave": Build("fp8-8wave", f"{FP8_DIR}/FP8_8wave/8_wave.cu", ("include", FP8_DIR), "f8E4M3FN", 512, 0),
    "fp8-4wave": Build("fp8-4wave", f"{FP8_DIR}/FP8_4wave/4_wave.cu", ("include", FP8_DIR), "f8E4M3FN", 256, 0),
}


class ToolError(UserError, ValueError):
    """A flag, a source or a compiled kernel this tool cannot use; one sentence."""


def parse_shape(text: str, block: int = BLOCK) -> tuple[int, int, int]:
    """`N` (M=N=K) or `MxNxK`, each a positive multiple of the 256-wide block tile."""
    parts = text.lower().split("x")
    if len(parts) not in (1, 3) or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ToolError(f"--shape {text} is not N or MxNxK with positive whole numbers.")
    m, n, k = (int(parts[0]),) * 3 if len(parts) == 1 else (int(p) for p in parts)
    for name, value in (("M", m), ("N", n), ("K", k)):
        if value % block:
            raise ToolError(f"--shape {text} has {name} = {value}, not a multiple of the kernel's {block}-wide tile.")
    return m, n, k


def tile_order(m: int, n: int, block: int = BLOCK, chunk: int = 64, wgm: int = 8) -> list[tuple[int, int]]:
    """(pid_m, pid_n) of each workgroup id, as the kernel computes them: HipKittens' `chiplet_transform_chunked`
    (8 XCDs, chunks of `chunk`) and then the grouped order with `wgm` rows a group (kernel_8192.cpp: block 256,
    chunks of 64, WGM 8)."""
    xcds = 8
    groups, pid_m_count, pid_n_count = (m // block) * (n // block), m // block, n // block
    order = []
    for wgid in range(groups):
        span = xcds * chunk
        limit = groups // span * span
        if wgid <= limit:  # the source leaves only ids above the last whole span unchanged
            local = wgid // xcds
            wgid = local // chunk * span + wgid % xcds * chunk + local % chunk
        in_group = wgm * pid_n_count
        first_m = wgid // in_group * wgm
        size_m = min(pid_m_count - first_m, wgm)
        order.append((first_m + wgid % in_group % size_m, wgid % in_group // size_m))
    return order


def layout_asserts() -> str:
    """static_asserts of the struct layout this tool describes, appended to the source before it compiles."""
    lines = ["", "// appended by tools/hipkittens_kernels.py: the kernarg layout hipkittens.json describes",
             "#include <cstddef>",
             f"static_assert(sizeof(micro_globals) == {GLOBALS_BYTES}, \"micro_globals moved\");",
             f"static_assert(offsetof(micro_globals, stream) == {STREAM_OFFSET}, \"micro_globals moved\");"]
    for name, alias, offset in GLOBALS:
        lines.append(f"static_assert(offsetof(micro_globals, {name}) == {offset}, \"micro_globals moved\");")
        lines.append(f"static_assert(sizeof({alias}) == {GL_BYTES}, \"gl moved\");")
        for field, at, _ in GL_FIELDS:
            lines.append(f"static_assert(offsetof({alias}, {field}) == {at}, \"gl moved\");")
    return "\n".join(lines) + "\n"


def kernel_source(original: str, m: int, n: int, k: int) -> str:
    """kernel_8192.cpp with its three #defines set to the shape, and the layout asserts appended."""
    found = re.findall(r"^#define ([MNK]) \d+$", original, re.M)
    if sorted(found) != ["K", "M", "N"]:
        raise ToolError(f"the source does not define M, N and K once each as this tool expects (found {found}).")
    text = original
    for name, value in (("M", m), ("N", n), ("K", k)):
        text = re.sub(rf"^#define {name} \d+$", f"#define {name} {value}", text, flags=re.M)
    return text + layout_asserts()


def check_fp8_shape(build: Build, m: int, n: int, k: int) -> None:
    """What each fp8 kernel's source assumes of its shape, one sentence otherwise."""
    if k % FP8_BLOCK_K or k < 3 * FP8_BLOCK_K:
        raise ToolError(f"the {build.name} kernel steps K by {FP8_BLOCK_K} with a two-step epilogue: K must be a "
                        f"multiple of {FP8_BLOCK_K} and at least {3 * FP8_BLOCK_K}, not {k}.")
    if build.name == "fp8-4wave":
        grid = (m // BLOCK) * (n // BLOCK)
        if not m == n == k or m in (1024, 2048) or grid % 8:
            raise ToolError(f"the fp8-4wave kernel is built from one SIZE (M = N = K), other than 1024 and 2048 "
                            f"(other kernels) and with a grid of whole XCD rounds (a multiple of 8 tiles); "
                            f"{m}x{n}x{k} is not.")


def fp8_source(build: Build, original: str, m: int, n: int, k: int) -> str:
    """The fp8 source with its shape set (8-wave: `main`'s M, N, K constants; 4-wave: `#define SIZE`) and the
    layout of its three `gl` arguments asserted."""
    if build.name == "fp8-4wave":
        if len(re.findall(r"^#define SIZE \d+$", original, re.M)) != 1:
            raise ToolError(f"{build.source} does not define SIZE once as this tool expects.")
        text = re.sub(r"^#define SIZE \d+$", f"#define SIZE {m}", original, flags=re.M)
    else:
        found = re.findall(r"^    constexpr int ([MNK]) = \d+;", original, re.M)
        if sorted(found) != ["K", "M", "N"]:
            raise ToolError(f"{build.source} does not set M, N and K once each in main as this tool expects "
                            f"(found {found}).")
        text = original
        for name, value in (("M", m), ("N", n), ("K", k)):
            text = re.sub(rf"^    constexpr int {name} = \d+;", f"    constexpr int {name} = {value};", text,
                          flags=re.M)
    lines = ["", "// appended by tools/hipkittens_kernels.py: the kernarg layout hipkittens.json describes",
             "#include <cstddef>"]
    for operand, element, (rows, cols) in (("a", "fp8e4m3", (m, k)), ("b", "fp8e4m3", (n, k)),
                                           ("c", "bf16", (m, n))):
        alias = f"hk_gl_{operand}"  # offsetof is a macro: no commas of template arguments inside it
        lines.append(f"using {alias} = kittens::gl<kittens::{element}, 1, 1, {rows}, {cols}>;")
        lines.append(f"static_assert(sizeof({alias}) == {FP8_GL_BYTES}, \"gl moved\");")
        lines.append(f"static_assert(offsetof({alias}, raw_ptr) == 0, \"gl moved\");")
    return text + "\n".join(lines) + "\n"


def fp8_symbol(m: int, n: int, k: int) -> str:
    """The mangled name of `matmul_device<M, N, K>(gl<fp8e4m3,1,1,M,K>, gl<fp8e4m3,1,1,N,K>, gl<bf16,1,1,M,N>)`."""
    return (f"_Z13matmul_deviceILi{m}ELi{n}ELi{k}EEvN7kittens2glI14__hip_fp8_e4m3Li1ELi1EXT_EXT1_EJEEENS1_IS2_Li1ELi1"
            "EXT0_EXT1_EJEEENS1_I14__hip_bfloat16Li1ELi1EXT_EXT0_EJEEE")


def fp8_tile_order(build: Build, m: int, n: int) -> list[tuple[int, int]]:
    """(pid_m, pid_n) of each workgroup id: row-major for the 8-wave kernel; for the 4-wave kernel the ids dealt
    over 8 XCDs (`wgid % 8 * (grid / 8) + wgid / 8`) and then grouped by WGM = 4 rows (4_wave.cu)."""
    rows, cols = m // BLOCK, n // BLOCK
    grid = rows * cols
    if build.name == "fp8-8wave":
        return [(wgid // cols, wgid % cols) for wgid in range(grid)]
    xcds, wgm, order = 8, 4, []
    for wgid in range(grid):
        wgid = wgid % xcds * (grid // xcds) + wgid // xcds
        in_group = wgm * cols
        first_m = wgid // in_group * wgm
        size_m = min(rows - first_m, wgm)
        order.append((first_m + wgid % in_group % size_m, wgid % in_group // size_m))
    return order


def fp8_arguments(amdgcn: str, m: int, n: int, k: int) -> list[dict]:
    """The three `gl` arguments (each its pointer; the descriptor dictionary's byte is never read), then the
    implicit hidden_* ones; every kernarg load reads a pointer or a hidden argument."""
    meta = metadata_args(amdgcn)
    described = []
    for index, name in enumerate("abc"):
        arg = meta[index] if index < len(meta) else {}
        if (arg.get("offset"), arg.get("size"), arg.get("value_kind")) != (index * FP8_GL_BYTES, FP8_GL_BYTES,
                                                                          "by_value"):
            raise ToolError(f"the kernel's argument {index} is {arg}, not the {FP8_GL_BYTES}-byte gl of {name.upper()} "
                            "by value.")
        described.append(dict(arg, name=name, kind="struct", fields=[
            {"name": f"{name}.raw_ptr", "kind": "buffer", "buffer": name, "offset": 0, "size": 8}]))
    for arg in meta[3:]:
        if not arg["value_kind"].startswith("hidden_"):
            raise ToolError(f"the kernel takes a fourth explicit argument ({arg}); this tool knows only A, B and C.")
        described.append(dict(arg, name=arg["value_kind"], kind="hidden"))
    starts = {index * FP8_GL_BYTES: 8 for index in range(3)}
    starts.update({a["offset"]: a["size"] for a in described[3:]})
    check_loads(amdgcn, starts)
    return described


def _git(hk_git: Path, *args: str) -> bytes:
    done = subprocess.run(["git", f"--git-dir={hk_git}", *args], capture_output=True)
    if done.returncode:
        raise ToolError(f"git {' '.join(args)} failed in {hk_git}: {done.stderr.decode().strip()[:200]}.")
    return done.stdout


def kernarg_loads(amdgcn: str) -> list[tuple[int, int]]:
    """(offset, bytes) of every scalar load from the kernarg pointer (s[0:1], the only user SGPRs it asks for)."""
    width = {"": 4, "x2": 8, "x4": 16, "x8": 32, "x16": 64}
    return sorted({(int(offset, 0), width[size]) for size, offset in
                   re.findall(r"s_load_dword(x\d+)?\s+s\[?\d+(?::\d+)?\]?,\s*s\[0:1\],\s*(0x[0-9a-f]+|\d+)", amdgcn)})


def check_loads(amdgcn: str, starts: dict[int, int]) -> None:
    """Every kernarg byte the listing loads is a described field or hidden argument (`starts`: offset -> size),
    read from its start; consecutive described fields must make up a load."""
    for offset, size in kernarg_loads(amdgcn):
        covered, at = 0, offset
        while at in starts and covered < size:
            covered, at = covered + starts[at], at + starts[at]
        if covered < size:
            raise ToolError(f"the kernel loads {size} kernarg bytes at offset {offset}, which are not whole fields "
                            "this tool describes.")


def struct_fields(m: int, n: int, k: int) -> list[dict]:
    """The 152 bytes of `micro_globals` as fields: each gl's pointer and its four dimensions (`make_gl` of a 2-D
    tensor: batch 1, depth 1, rows, cols), then the stream (null). The kernel reads only the pointers and cols,
    the row pitch: A's is K, B's (N×K) K, C's N."""
    rows_cols = {"a": (m, k), "b": (n, k), "c": (m, n)}
    fields = []
    for name, _, offset in GLOBALS:
        rows, cols = rows_cols[name]
        fields.append({"name": f"{name}.raw_ptr", "kind": "buffer", "buffer": name, "offset": offset, "size": 8})
        for field, value in (("batch", 1), ("depth", 1), ("rows", rows), ("cols", cols)):
            at = next(at for f, at, _ in GL_FIELDS if f == f"{field}_internal")
            fields.append({"name": f"{name}.{field}", "kind": "int", "offset": offset + at, "size": 8, "value": value})
    fields.append({"name": "stream", "kind": "int", "offset": STREAM_OFFSET, "size": 8, "value": 0})
    return fields


def arguments(amdgcn: str, m: int, n: int, k: int) -> list[dict]:
    """Every kernel argument in metadata order: the struct (as byte fields), then the implicit hidden_* ones."""
    meta = metadata_args(amdgcn)
    first = meta[0] if meta else {}
    if (first.get("offset"), first.get("size"), first.get("value_kind")) != (0, GLOBALS_BYTES, "by_value"):
        raise ToolError(f"the kernel's first argument is {first}, not the {GLOBALS_BYTES}-byte micro_globals by value.")
    described = [dict(first, name="g", kind="struct", fields=struct_fields(m, n, k))]
    for arg in meta[1:]:
        if not arg["value_kind"].startswith("hidden_"):
            raise ToolError(f"the kernel takes a second explicit argument ({arg}); this tool knows only micro_globals.")
        described.append(dict(arg, name=arg["value_kind"], kind="hidden"))
    starts = {f["offset"]: f["size"] for f in described[0]["fields"]}
    starts.update({a["offset"]: a["size"] for a in described[1:]})
    check_loads(amdgcn, starts)
    return described


def compile_kernel(args) -> tuple[str, dict]:
    """The listing for the shape and its launch description (hipkittens.json)."""
    m, n, k = args.shape
    build = BUILDS[args.kernel]
    fp8 = build.dtype != "bf16"
    if fp8:
        check_fp8_shape(build, m, n, k)
    for flag, path in (("--hk-git", args.hk_git), ("--rocm", args.rocm), ("--pybind11-python", args.pybind11_python),
                       ("--clang", args.clang)):
        if not path.exists():
            raise ToolError(f"{flag} {path} does not exist; tools/hipkittens_toolchain.sh prepares it.")
    commit = _git(args.hk_git, "rev-parse", "HEAD").decode().strip()
    original = _git(args.hk_git, "show", f"HEAD:{build.source}").decode()
    includes = subprocess.run([str(args.pybind11_python), "-m", "pybind11", "--includes"], capture_output=True,
                              text=True)
    if includes.returncode:
        raise ToolError(f"{args.pybind11_python} -m pybind11 --includes failed; tools/hipkittens_toolchain.sh "
                        "installs pybind11.")
    version = subprocess.run([str(args.clang), "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    symbol = fp8_symbol(m, n, k) if fp8 else KERNEL
    with tempfile.TemporaryDirectory(prefix="hipkittens-") as scratch:
        scratch = Path(scratch)
        tarfile.open(fileobj=io.BytesIO(_git(args.hk_git, "archive", "HEAD", *build.archive))).extractall(scratch)
        source = scratch / build.source if fp8 else scratch / "kernel.cpp"
        source.write_text(fp8_source(build, original, m, n, k) if fp8 else kernel_source(original, m, n, k))
        (scratch / "stub").mkdir()
        (scratch / "stub" / "omp.h").write_text(OMP_STUB)
        command = [str(args.clang), *FLAGS, f"--rocm-path={args.rocm}", f"-I{scratch / 'stub'}",
                   f"-I{scratch / 'include'}", f"-I{args.rocm / 'include' / 'hip'}", *includes.stdout.split(), "-S",
                   str(source), "-o", str(scratch / "kernel.s")]
        started = time.perf_counter()
        done = subprocess.run(["nice", "-n", "10", *command], capture_output=True, text=True, cwd=source.parent)
        seconds = time.perf_counter() - started
        if done.returncode:
            errors = [line for line in done.stderr.splitlines() if "error:" in line] or ["(no error line)"]
            raise ToolError(f"clang could not compile the kernel: {errors[0].strip()[:300]}")
        amdgcn = (scratch / "kernel.s").read_text()
    if f"{symbol}:" not in amdgcn:
        raise ToolError(f"the listing holds no kernel {symbol}.")
    kernels = re.findall(r"^\s+\.amdhsa_kernel (\S+)", amdgcn, re.M)
    if kernels != [symbol]:
        raise ToolError(f"the listing holds the kernels {kernels}; this tool describes one, {symbol[:40]}.")
    order = fp8_tile_order(build, m, n) if fp8 else tile_order(m, n, build.block, build.chunk, build.wgm)
    if sorted(order) != [(i, j) for i in range(m // build.block) for j in range(n // build.block)]:
        raise ToolError(f"the kernel's tile order for {m}x{n} is not a permutation of its tiles.")
    launch = {
        "format": FORMAT,
        "kernel": symbol,
        "target": TARGET,
        "amdgcn": "kernel.amdgcn",
        "grid": [len(order), 1, 1],  # (N/BLOCK)·(M/BLOCK) workgroups, 1-D
        "workgroup_size": [build.threads, 1, 1],
        "shared_bytes": build.shared_bytes,
        "tile": [build.block, build.block],
        "order": [list(tile) for tile in order],  # (tile row, tile column) of each workgroup id
        "problem": {"m": m, "n": n, "k": k, "layout": "nt", "dtype": build.dtype, "out_dtype": "bf16",
                    "strides": {"a": [k, 1], "b": [1, k], "c": [n, 1]}},
        "arguments": fp8_arguments(amdgcn, m, n, k) if fp8 else arguments(amdgcn, m, n, k),
        "kernarg_loads": [list(load) for load in kernarg_loads(amdgcn)],
        "hipkittens": {"commit": commit, "source": build.source,
                       "defines": ({"SIZE": m} if build.name == "fp8-4wave" else {"M": m, "N": n, "K": k}),
                       "compiler": version, "flags": list(FLAGS), "compile_seconds": round(seconds, 1)},
        "command": "python tools/hipkittens_kernels.py " + shlex.join(args.argv),
    }
    return amdgcn, launch


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="hipkittens_kernels.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", required=True, help="N (M=N=K) or MxNxK, multiples of 256")
    parser.add_argument("--kernel", choices=tuple(BUILDS), default="bf16",
                        help="HipKittens' MI350X bf16 GEMM of each published size (bf16: kernel_8192.cpp, also "
                             "4096's; bf16-16384, bf16-2048, bf16-1024), or one of its fp8 GEMMs")
    parser.add_argument("--hk-git", type=Path, default=Path(DEFAULTS["hk_git"]),
                        help="bare git dir of HazyResearch/HipKittens")
    parser.add_argument("--rocm", type=Path, default=Path(DEFAULTS["rocm"]),
                        help="the stand-in ROCm tree tools/hipkittens_toolchain.sh makes")
    parser.add_argument("--pybind11-python", type=Path, default=Path(DEFAULTS["pybind11_python"]),
                        help="a Python with pybind11 (its headers; the source includes them)")
    parser.add_argument("--clang", type=Path, default=Path(DEFAULTS["clang"]))
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--force", action="store_true", help="write into a folder that holds files this tool did "
                                                             "not write (only its own files are replaced)")
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        args.shape = parse_shape(args.shape, BUILDS[args.kernel].block)
        amdgcn, launch = compile_kernel(args)
        with output_folder(args.output, OUTPUT_KIND, args.force) as out:
            (out / "kernel.amdgcn").write_text(amdgcn)
            (out / "hipkittens.json").write_text(json.dumps(launch, indent=1) + "\n")
    except UserError as err:
        print(f"hipkittens_kernels.py: error: {err}", file=sys.stderr)
        return 2
    m, n, k = args.shape
    print(f"{args.output}: {launch['kernel'][:40]} for {TARGET}, {m}x{n}x{k} nt {launch['problem']['dtype']} -> bf16, "
          f"grid {launch['grid'][0]}, {launch['workgroup_size'][0]} threads, {launch['shared_bytes']} B dynamic LDS, "
          "kernarg loads at "
          f"{', '.join(str(o) for o, _ in launch['kernarg_loads'])} "
          f"(HipKittens {launch['hipkittens']['commit'][:8]}, {launch['hipkittens']['compiler']}, compiled in "
          f"{launch['hipkittens']['compile_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
