"""Foreign kernels for the emulator and the timing model: a Triton GEMM compiled by Triton's AMD backend.

    .venv-triton/bin/python tools/triton_kernels.py --target gfx950 --shape 256x256x256 --layout nn \\
        --dtype bf16 [--out-dtype bf16|f16|f32] --block 128x128x64 --group-m 8 --warps 4 --stages 2 \\
        --waves-per-eu 0 --nonkdim 16 --kpack 1 [--kernel tutorial|rocm-tune-gemm] [--num-xcds 8] \\
        [--block-pingpong default|on|off] -o DIR [--force]

Runs under a Python that has PyPI `triton` (a separate environment: triton is no dependency of the project, only
its optional extra `triton`). Two kernels (`--kernel`): `tutorial`, the classic tutorial matmul (pointers a, b, c;
M, N, K; six strides; BLOCK_M/N/K and GROUP_M constexprs; every K step masked; fp32 accumulation, C in the output
type), and `rocm-tune-gemm`, the kernel of ROCm/triton's tune_gemm at the commit of its published MI300X reference
times (XCD pid renumbering, whole K tiles unmasked and a ragged K tail peeled, a bias pointer passed as None).
Either is compiled with `triton.compile` for `GPUTarget("hip", target, 64)` with the arguments specialised as
`triton.jit` would specialise them at launch: an integer equal to 1 becomes a constant of the kernel, one divisible
by 16 (0 included) gets `tt.divisibility`, None becomes a constant, and the pointers are taken 16-byte aligned and
within 2 GB (buffer loads). Layouts: NN stores B as K×N, NT as N×K, both expressed as strides. `--block-pingpong`
sets Triton's AMD block ping-pong knob for this compile (an environment knob, not a compile option) and triton.json
records what it resolved to. DIR gets `kernel.amdgcn` (Triton's AMDGPU assembly) and `triton.json`, which describes
the launch: the kernel's name, target, grid, workgroup size and dynamic LDS, every kernel argument in the order and
at the offset the listing's `.amdgpu_metadata` states (a, b or c buffer, an integer and its value, a scratch pointer
Triton appends, or an implicit `hidden_*` argument the launcher fills), the problem with its strides, and Triton's
version and every compile option. `pipelines emulate DIR` and `pipelines predict DIR` read it
(`pipelines/emulator/foreign.py`); nothing there imports triton.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Both import nothing beyond the standard library, so this tool runs in a Python that has triton and not the project.
from pipelines.output import output_folder  # noqa: E402
from transforms.errors import UserError  # noqa: E402

OUTPUT_KIND = "triton-kernel"  # the kind its output folders record (pipelines.output)
FORMAT = "triton-kernel/1"  # triton.json's format, which pipelines/emulator/foreign.py checks
TARGETS = ("gfx942", "gfx950")
DTYPES = {"bf16": "bf16", "f16": "fp16", "fp16": "fp16", "f32": "fp32", "fp32": "fp32"}  # ours -> Triton's
PROJECT_DTYPE = {"bf16": "bf16", "fp16": "f16", "fp32": "f32"}  # Triton's -> the project's names
INPUT_DTYPES = ("bf16", "f16", "fp16")
LAYOUTS = ("nn", "nt")
INT_ARGS = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")
KERNELS = ("tutorial", "rocm-tune-gemm")  # --kernel: the jitted function each names is kernel_source() below
# Pointers Triton appends to every kernel's arguments, by the metadata field that sizes what each points at.
SCRATCH = (("global_scratch", "global_scratch_size", "global_scratch_align"),
           ("profile_scratch", "profile_scratch_size", "profile_scratch_align"))


class ToolError(UserError, ValueError):
    """A flag or a compiled kernel this tool cannot use; one sentence."""


def _matmul_kernel():
    """The tutorial kernel, defined where `triton.jit` can read its source (a module of a file)."""
    import triton
    import triton.language as tl

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
        # grouped ordering: GROUP_M rows of output tiles share their columns of B while they run
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        num_pid_in_group = GROUP_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m

        offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        c = accumulator.to(c_ptr.dtype.element_ty)

        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))

    return matmul_kernel



def _rocm_tune_gemm_kernel():
    """The kernel of ROCm/triton's tune_gemm as it stood when its MI300X reference times were taken: ROCm/triton
    commit e5601b2305 (branch perf_ref, 2024-09-15), python/perf-kernels/tools/tune_gemm/matmul_kernel.py. Written
    here anew to compute the same thing with the same structure (the same arguments in the same order, the same
    constexprs, branches, loop bounds, hints and masks), so that Triton lowers the same program."""
    import triton
    import triton.language as tl

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                      stride_cn, stride_bias, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                      BLOCK_SIZE_K: tl.constexpr, SPLIT_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                      BIAS: tl.constexpr, EVEN_K: tl.constexpr, GRID_MN: tl.constexpr, NUM_XCDS: tl.constexpr):
        pid = tl.program_id(axis=0)
        pid_z = tl.program_id(1)  # the K slice under split-K
        num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
        if NUM_XCDS != 1:
            # the hardware deals workgroups round-robin over the XCDs; renumber them so that each XCD (its own L2)
            # gets a contiguous run of tiles: GRID_MN // NUM_XCDS per XCD
            per_xcd = GRID_MN // NUM_XCDS
            pid = (pid % NUM_XCDS) * per_xcd + pid // NUM_XCDS
        if GROUP_SIZE_M == 1:
            pid_m = pid // num_pid_n
            pid_n = pid % num_pid_n
        else:
            # GROUP_SIZE_M rows of tiles walk their columns together, sharing B while they run
            num_pid_in_group = GROUP_SIZE_M * num_pid_n
            first_pid_m = (pid // num_pid_in_group) * GROUP_SIZE_M
            group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
            pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
            pid_n = (pid % num_pid_in_group) // group_size_m
        if SPLIT_K == 1:
            offs_k = tl.arange(0, BLOCK_SIZE_K)
        else:
            offs_k = pid_z * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
        offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)  # not wrapped modulo M, unlike the tutorial
        offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
        if BIAS:
            bias = tl.load(bias_ptr + offs_am * stride_bias, mask=offs_am < M, other=0.0)
        acc_dtype = tl.int32 if a_ptr.type.element_ty == tl.int8 else tl.float32
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)

        # whole K tiles unmasked (contiguous runs of 16 along K); a ragged K leaves its last tile to the tail below
        max_k = tl.cdiv(K, BLOCK_SIZE_K * SPLIT_K) - 1
        if EVEN_K:
            max_k += 1
        for k in range(0, max_k):
            a = tl.load(tl.multiple_of(a_ptrs, (1, 16)))
            b = tl.load(tl.multiple_of(b_ptrs, (16, 1)))
            accumulator += tl.dot(a, b)
            a_ptrs += BLOCK_SIZE_K * SPLIT_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * SPLIT_K * stride_bk
        if not EVEN_K:
            # the peeled tail: the last K tile, its columns past K read as zeros
            k = max_k
            offs_k = k * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
            a_tail = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
            b_tail = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
            a = tl.load(a_tail, mask=offs_k[None, :] < K, other=0.0)
            b = tl.load(b_tail, mask=offs_k[:, None] < K, other=0.0)
            accumulator += tl.dot(a, b)

        c = accumulator.to(c_ptr.type.element_ty)
        if BIAS:
            c += bias[:, None]
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        if SPLIT_K == 1:
            tl.store(c_ptrs, c, mask=c_mask)
        else:
            tl.atomic_add(c_ptrs, c, mask=c_mask)

    return matmul_kernel

def _dims(text: str, count: int, flag: str) -> tuple[int, ...]:
    parts = text.lower().split("x")
    if len(parts) != count or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ToolError(f"{flag} {text} is not {'x'.join('N' * count)} with positive whole numbers.")
    return tuple(int(p) for p in parts)


def problem_strides(m: int, n: int, k: int, layout: str) -> dict[str, list[int]]:
    """Element strides of A (M×K, row-major), B (K×N: row-major for NN, stored N×K for NT) and C (M×N)."""
    return {"a": [k, 1], "b": [n, 1] if layout == "nn" else [1, k], "c": [n, 1]}


def specialise(values: dict[str, int], use_buffer_ops: bool) -> tuple[dict, dict, dict]:
    """The signature, constexprs and attributes `triton.jit` would compile for these argument values (its
    `specialize_impl` and the HIP backend's `parse_attr`): 1 -> a constant, a multiple of 16 -> 'D'; the
    pointers 'D' (16-byte aligned) and, with buffer ops, 'S' (within 2 GB)."""
    signature, constexprs, specialised = {}, {}, {}
    for name, value in values.items():
        if value == 1:
            signature[name], constexprs[name], specialised[name] = "constexpr", 1, "constant 1"
        else:
            signature[name] = "i32"
            specialised[name] = "divisible by 16" if value % 16 == 0 else ""
    return signature, constexprs, specialised



def kernel_source(args) -> tuple[object, dict, list[int]]:
    """The jitted kernel `--kernel` names, the values its launch passes beyond a, b, c, M, N, K and the six strides
    (integers stay run-time arguments, anything else becomes a constant of the kernel), and its grid."""
    m, n, k = args.shape
    block_m, block_n, block_k = args.block
    tiles = -(-m // block_m) * -(-n // block_n)
    if args.kernel == "tutorial":
        return (_matmul_kernel(), {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k,
                                   "GROUP_M": args.group_m}, [tiles, 1, 1])
    # as tune_gemm's generated launcher passes them (utils/file_generator.py at e5601b2305): no bias (a None pointer
    # and stride 0), no split-K, EVEN_K when BLOCK_K divides K, GRID_MN the number of tiles, 8 XCDs on an MI300X
    split_k = 1
    if args.num_xcds < 1 or tiles % args.num_xcds:
        raise ToolError(f"--num-xcds {args.num_xcds} does not divide the {tiles} tiles of {m}x{n} in "
                        f"{block_m}x{block_n} blocks; rocm-tune-gemm's XCD renumbering would then skip tiles.")
    return (_rocm_tune_gemm_kernel(),
            {"bias_ptr": None, "stride_bias": 0, "BLOCK_SIZE_M": block_m, "BLOCK_SIZE_N": block_n,
             "BLOCK_SIZE_K": block_k, "SPLIT_K": split_k, "GROUP_SIZE_M": args.group_m, "BIAS": False,
             "EVEN_K": k % block_k == 0, "GRID_MN": tiles, "NUM_XCDS": args.num_xcds}, [tiles, split_k, 1])

def compile_kernel(args) -> tuple[str, dict]:
    """Triton's amdgcn for the flags and the launch description (triton.json without the argument offsets)."""
    # Triton 3.9 warns that FP fusion is on by default; say so instead (it is recorded in the options)
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    import triton
    from triton import knobs
    from triton.backends.amd.compiler import HIPBackend, is_async_copy_enabled, is_pingpong_schedule_enabled
    from triton.backends.compiler import GPUTarget

    m, n, k = args.shape
    strides = problem_strides(m, n, k, args.layout)
    values = dict(zip(INT_ARGS, (m, n, k, *strides["a"], *strides["b"], *strides["c"])))
    in_type, out_type = DTYPES[args.dtype], DTYPES[args.out_dtype or args.dtype]
    kernel, launched, grid = kernel_source(args)
    constant = {param.name for param in kernel.params if param.is_constexpr}
    values.update({name: value for name, value in launched.items() if name not in constant and type(value) is int})
    use_buffer_ops = bool(knobs.amd.use_buffer_ops)
    ints, constexprs, specialised = specialise(values, use_buffer_ops)
    signature = {"a_ptr": f"*{in_type}", "b_ptr": f"*{in_type}", "c_ptr": f"*{out_type}", **ints}
    signature.update({name: "constexpr" for name in kernel.arg_names if name not in signature})
    constexprs.update({name: launched[name] for name in kernel.arg_names if name in launched and name not in values})
    pointer_spec = "DS" if use_buffer_ops else "D"
    attrs = {(kernel.arg_names.index(p),): HIPBackend.parse_attr(pointer_spec) for p in ("a_ptr", "b_ptr", "c_ptr")}
    attrs.update({(kernel.arg_names.index(name),): HIPBackend.parse_attr("D")
                  for name, how in specialised.items() if how == "divisible by 16"})
    options = {"num_warps": args.warps, "num_stages": args.stages, "waves_per_eu": args.waves_per_eu,
               "matrix_instr_nonkdim": args.nonkdim, "kpack": args.kpack}
    source = triton.compiler.ASTSource(kernel, signature, constexprs=constexprs, attrs=attrs)
    # the block ping-pong schedule is an environment knob, not a compile option: set it for this compile only
    # (None: Triton's default for the target) and record what it resolved to
    knobs.amd.use_block_pingpong = {"default": None, "on": True, "off": False}[args.block_pingpong]
    pingpong = bool(is_pingpong_schedule_enabled(args.target, is_async_copy_enabled(args.target)))
    started = time.perf_counter()
    try:
        compiled = triton.compile(source, target=GPUTarget("hip", args.target, 64), options=options)
    except Exception as err:  # Triton's own message (an unsupported block or option): its last line
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        first = lines[-1] if lines else type(err).__name__  # Triton ends with the cause, after the source
        raise ToolError(f"triton could not compile the kernel: {first[:300]}") from None
    seconds = time.perf_counter() - started
    meta = compiled.metadata._asdict()
    meta["extern_libs"] = [name for name, _ in meta.get("extern_libs") or []]  # paths of this machine: names only
    meta["target"] = {"backend": compiled.metadata.target.backend, "arch": compiled.metadata.target.arch,
                      "warp_size": compiled.metadata.target.warp_size}
    runtime = [name for name in kernel.arg_names if signature[name] != "constexpr"]
    launch = {
        "format": FORMAT,
        "kernel": compiled.metadata.name,
        "target": args.target,
        "amdgcn": "kernel.amdgcn",
        "grid": grid,
        "workgroup_size": [args.warps * 64, 1, 1],
        "shared_bytes": int(compiled.metadata.shared),  # dynamic LDS the launcher gives each workgroup
        "source": args.kernel,
        "problem": {"m": m, "n": n, "k": k, "layout": args.layout, "dtype": PROJECT_DTYPE[in_type],
                    "out_dtype": PROJECT_DTYPE[out_type], "strides": strides},
        "runtime_arguments": runtime,  # the kernel's own, in order; then Triton's scratch pointers
        "values": values,
        "specialization": {"pointers": pointer_spec, **{k: v for k, v in specialised.items() if v}},
        "constexprs": constexprs,
        "options": options,
        "triton": {"version": triton.__version__, "metadata": meta, "compile_seconds": round(seconds, 2),
                   "use_buffer_ops": use_buffer_ops, "block_pingpong": pingpong},
        "command": "python tools/triton_kernels.py " + shlex.join(args.argv),
    }
    return compiled.asm["amdgcn"], launch


def metadata_args(amdgcn: str) -> list[dict]:
    """The `.args` of the listing's one kernel entry: each {'offset', 'size', 'value_kind'} (LLVM's AMDGPU listing,
    whoever compiled it: tools/hipkittens_kernels.py reads its listings with this too)."""
    found = re.search(r"\.args:\n(.*?)\n    \.\w", amdgcn, re.S)
    if not found:
        raise ToolError("the listing has no .args in its .amdgpu_metadata.")
    args = []
    for item in re.split(r"\n\s+- ", "\n" + found[1])[1:]:
        fields = dict(re.findall(r"\.(\w+):\s+(\S+)", item))
        args.append({"offset": int(fields["offset"]), "size": int(fields["size"]), "value_kind": fields["value_kind"]})
    return args


def arguments(amdgcn: str, launch: dict) -> list[dict]:
    """Every kernel argument in metadata order: the kernel's runtime arguments, then Triton's scratch pointers,
    then the implicit hidden_* arguments; each with its offset, size and value_kind from the metadata."""
    meta = metadata_args(amdgcn)
    explicit = [a for a in meta if not a["value_kind"].startswith("hidden_")]
    runtime = launch["runtime_arguments"]
    extra = len(explicit) - len(runtime)
    if not 0 <= extra <= len(SCRATCH):
        raise ToolError(f"Triton's kernel takes {len(explicit)} explicit arguments for {len(runtime)} runtime ones; "
                        f"this tool knows of at most {len(SCRATCH)} scratch pointers after them.")
    buffers = {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c"}
    metadata = launch["triton"]["metadata"]
    described = []
    for position, arg in enumerate(meta):
        entry = dict(arg)
        if position < len(runtime):
            name = runtime[position]
            if name in buffers:
                entry.update(name=name, kind="buffer", buffer=buffers[name])
            else:
                entry.update(name=name, kind="int", value=launch["values"][name])
        elif position < len(explicit):
            name, size_field, align_field = SCRATCH[position - len(runtime)]
            entry.update(name=name, kind="scratch", bytes_per_workgroup=int(metadata.get(size_field) or 0),
                         align=int(metadata.get(align_field) or 1))
        else:
            entry.update(name=arg["value_kind"], kind="hidden")
        expected = {"buffer": "global_buffer", "scratch": "global_buffer", "int": "by_value"}.get(entry["kind"])
        if expected and arg["value_kind"] != expected:
            raise ToolError(f"argument {position} ({entry['name']}) is {arg['value_kind']} in the metadata, not "
                            f"{expected}; the argument order is not the one this tool expects.")
        described.append(entry)
    return described


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="triton_kernels.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=TARGETS, default="gfx950")
    parser.add_argument("--shape", required=True, help="MxNxK")
    parser.add_argument("--layout", type=str.lower, choices=LAYOUTS, default="nn")
    parser.add_argument("--dtype", choices=INPUT_DTYPES, default="bf16", help="A and B (fp16 = f16)")
    parser.add_argument("--out-dtype", choices=tuple(DTYPES), help="C (default: the input type); fp32 accumulates")
    parser.add_argument("--block", default="128x128x64", help="BLOCK_MxBLOCK_NxBLOCK_K")
    parser.add_argument("--group-m", type=int, default=8)
    parser.add_argument("--warps", type=int, default=4, help="num_warps (waves of 64)")
    parser.add_argument("--stages", type=int, default=2, help="num_stages")
    parser.add_argument("--waves-per-eu", type=int, default=0)
    parser.add_argument("--nonkdim", type=int, default=16, choices=(0, 16, 32), help="matrix_instr_nonkdim")
    parser.add_argument("--kpack", type=int, default=1, choices=(1, 2))
    parser.add_argument("--kernel", choices=KERNELS, default="tutorial",
                        help="tutorial: Triton's tutorial matmul; rocm-tune-gemm: ROCm/triton's tune_gemm kernel "
                             "(e5601b2305), no bias, no split-K")
    parser.add_argument("--num-xcds", type=int, default=8, help="rocm-tune-gemm's NUM_XCDS (8 on an MI300X; 1 "
                                                                "leaves the workgroup order alone)")
    parser.add_argument("--block-pingpong", choices=("default", "on", "off"), default="default",
                        help="Triton's AMD block ping-pong schedule (TRITON_HIP_USE_BLOCK_PINGPONG); default: on for "
                             "gfx942 (applied where the loop qualifies)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--force", action="store_true", help="write into a folder that holds files this tool did "
                                                             "not write (only its own files are replaced)")
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        args.shape = _dims(args.shape, 3, "--shape")
        args.block = _dims(args.block, 3, "--block")
        for flag, value, low in (("--group-m", args.group_m, 1), ("--warps", args.warps, 1),
                                 ("--stages", args.stages, 1), ("--waves-per-eu", args.waves_per_eu, 0)):
            if value < low:
                raise ToolError(f"{flag} {value} is below {low}.")
        if args.warps & (args.warps - 1):
            raise ToolError(f"--warps {args.warps} is not a power of two, as Triton requires.")
        amdgcn, launch = compile_kernel(args)
        launch["arguments"] = arguments(amdgcn, launch)
        with output_folder(args.output, OUTPUT_KIND, args.force) as out:
            (out / "kernel.amdgcn").write_text(amdgcn)
            (out / "triton.json").write_text(json.dumps(launch, indent=1) + "\n")
    except UserError as err:
        print(f"triton_kernels.py: error: {err}", file=sys.stderr)
        return 2
    m, n, k = args.shape
    print(f"{args.output}: {launch['kernel']} for {args.target}, {m}x{n}x{k} {args.layout} {args.dtype} -> "
          f"{launch['problem']['out_dtype']}, grid {launch['grid'][0]}, {launch['workgroup_size'][0]} threads, "
          f"{launch['shared_bytes']} B LDS, {len(launch['arguments'])} kernel arguments "
          f"(triton {launch['triton']['version']}, compiled in {launch['triton']['compile_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
