"""Build the workgroup-timeline probe (an exploration script kept as the record): the kernels `tune-model` gives
block a's projection (4096x2048x2048 f16 NN, f16 C) and ·W2 (4096x2048x8192), and bf16 8192³ NN, each as
`transforms.hopper.program(..., maps_result=True)` emits it, with `%globaltimer` stamps spliced into the emitted
text (the generator itself is not changed): every warp's lane 0 that passes a stamp takes the min and the max of
the time into its workgroup's two words of the event (red.global.min/max.u64) in words of the maps scratch after
the maps (the scratch grown to hold them; thread 0 sets them to max/0 at entry, before any other stamp, which all
come after the workgroup's first barrier). Events (`EVENTS`): entry; maps built; first barrier passed; the
producer's first load of a K step; a tile's first wgmma fence (the peeled first K step); a tile's K loop drained;
a tile begun (the consumers' loop); the consumers' loop done; their last bulk stores read; exit. timeline.py runs
them on the GPU. RING and BATCH build the kernels with that many TMA store areas a warp
(`transforms.hopper.STORE_RING`) and blocks a proxy fence (`STORE_BATCH`); left out, 4 and 1, the stores as they
were when run1 was measured (a fence and a bulk group per block).

    python results/h200/prologue/gen.py FOLDER [RING BATCH [defer]]

With `defer` the kernels defer each tile's stores under the next tile's first MMAs (`defer_stores`).
"""
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from pipelines.routes.hopper import fitted  # noqa: E402
from transforms import hopper  # noqa: E402
from transforms.problem import Epilogue, Gemm  # noqa: E402

EVENTS = ["entry", "maps", "barrier", "load", "mma", "drained", "tile", "loop_done", "stores_read", "exit"]
truncf = Epilogue("truncf")
SHAPES = {"proj": Gemm(4096, 2048, 2048, "f16", "nn", epilogue=truncf),
          "w2": Gemm(4096, 2048, 8192, "f16", "nn", epilogue=truncf),
          "sq": Gemm(8192, 8192, 8192, "bf16", "nn", epilogue=truncf)}


def stamp(event: int, who: str) -> str:
    """Inline PTX: lanes where `who` (an i32) is 0 fold %globaltimer into the event's min and max words."""
    return (f'        llvm.inline_asm has_side_effects asm_dialect = att "{{ .reg .pred p; .reg .u64 t; setp.eq.u32 p, '
            f'$0, 0; mov.u64 t, %globaltimer; @p red.global.min.u64 [$1], t; @p red.global.max.u64 [$2], t; }}", '
            f'"r,l,l" {who}, %probe_min{event}, %probe_max{event} : (i32, i64, i64) -> ()')


def instrument(text: str, grid: int, words: int) -> str:
    grown = words + grid * len(EVENTS) * 2
    text = text.replace(f"<{words}xi64", f"<{grown}xi64")
    lines = text.splitlines()
    out, seen = [], set()

    def first(key: str) -> bool:
        if key in seen:
            return False
        seen.add(key)
        return True
    in_gemm = False
    for line in lines:
        if "func.func @gemm(" in line:
            in_gemm = True
        before, after = [], []
        if in_gemm:
            if re.match(r"\s*%t\d+ = hal\.interface\.binding\.subspan", line):
                name = line.split("=")[0].strip()
                after += [f"        %probe_pi = memref.extract_aligned_pointer_as_index {name} : "
                          f"memref<{grown}xi64, #hal.descriptor_type<storage_buffer>> -> index",
                          "        %probe_p = arith.index_cast %probe_pi : index to i64",
                          "        %probe_bidx = hal.interface.workgroup.id[0] : index",
                          "        %probe_bid = arith.index_cast %probe_bidx : index to i64",
                          "        %probe_tidx = gpu.thread_id x",
                          "        %probe_tid = arith.index_cast %probe_tidx : index to i32",
                          "        %probe_c32 = arith.constant 32 : i32",
                          "        %probe_lane = arith.remui %probe_tid, %probe_c32 : i32",
                          f"        %probe_stride = arith.constant {len(EVENTS) * 16} : i64",
                          "        %probe_off = arith.muli %probe_bid, %probe_stride : i64",
                          f"        %probe_words = arith.constant {words * 8} : i64",
                          "        %probe_b0 = arith.addi %probe_p, %probe_words : i64",
                          "        %probe_base = arith.addi %probe_b0, %probe_off : i64"]
                for e in range(len(EVENTS)):
                    after += [f"        %probe_o{e} = arith.constant {16 * e} : i64",
                              f"        %probe_min{e} = arith.addi %probe_base, %probe_o{e} : i64",
                              f"        %probe_o{e}b = arith.constant {16 * e + 8} : i64",
                              f"        %probe_max{e} = arith.addi %probe_base, %probe_o{e}b : i64"]
                # thread 0: every event's words reset, then the entry stamped (its own program order)
                init = " ".join(f"@p st.global.u64 [${1 + 2 * e}], -1; @p st.global.u64 [${2 + 2 * e}], 0;"
                                for e in range(len(EVENTS)))
                args = ", ".join(f"%probe_min{e}, %probe_max{e}" for e in range(len(EVENTS)))
                after.append(f'        llvm.inline_asm has_side_effects asm_dialect = att "{{ .reg .pred p; '
                             f'setp.eq.u32 p, $0, 0; {init} }}", "r{",l" * 2 * len(EVENTS)}" %probe_tid, {args} : '
                             f'(i32{", i64" * 2 * len(EVENTS)}) -> ()')
                after.append(stamp(0, "%probe_tid"))
            elif "cp.async.bulk.commit_group; cp.async.bulk.wait_group.read 0;" in line and first("maps"):
                after.append(stamp(1, "%probe_tid"))
            elif re.match(r"\s*(nvvm\.cluster\.wait|gpu\.barrier)\s*$", line) and first("barrier"):
                after.append(stamp(2, "%probe_lane"))
            elif "nvvm.cp.async.bulk.tensor.shared.cluster.global" in line and first("load"):
                before.append(stamp(3, "%probe_lane"))
            elif line.strip() == "nvvm.wgmma.fence.aligned" and first("mma"):
                before.append(stamp(4, "%probe_lane"))
            elif line.strip() == "nvvm.wgmma.wait.group.sync.aligned 0":
                after.append(stamp(5, "%probe_lane"))
            elif re.search(r"scf\.for %ci = ", line):  # the consumers' tile loop (it may carry values)
                after.append(stamp(6, "%probe_lane"))
            elif "@p cp.async.bulk.wait_group 0; }" in line:
                before.append(stamp(7, "%probe_lane"))
                after.append(stamp(8, "%probe_lane"))
            elif line.strip() == "return":
                before.append(stamp(9, "%probe_lane"))
                in_gemm = False
        out += before + [line] + after
    missing = {"maps", "barrier", "load", "mma"} - seen
    assert not missing, missing
    return "\n".join(out) + "\n"


folder = Path(sys.argv[1])
hopper.STORE_RING, hopper.STORE_BATCH = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 2 else (4, 1)
hopper.STORE_BOX = (32, 8)  # as every run of this folder's was built (8-row boxes; the kernels ship 16 since)
if folder.exists():
    sys.exit(f"{folder} exists; give a new folder.")
folder.mkdir(parents=True)
iree = Path(sys.executable).parent / "iree-compile"
manifest = {"events": EVENTS, "cases": []}
for name, gemm in SHAPES.items():
    s = replace(fitted(gemm), defer_stores=sys.argv[4:] == ["defer"])  # as run (fitted defers since)
    grid, words = hopper.grid_size(gemm, s), hopper.maps_words(gemm, s)
    text = instrument(hopper.program(gemm, s, maps_result=True), grid, words)
    (folder / f"{name}.mlir").write_text(text)
    subprocess.run([str(iree), str(folder / f"{name}.mlir"), "--iree-hal-target-device=cuda",
                    "--iree-cuda-target=sm_80", "-o", str(folder / f"{name}.vmfb")], check=True)
    manifest["cases"].append({"name": name, "vmfb": f"{name}.vmfb", "m": gemm.m, "n": gemm.n, "k": gemm.k,
                              "dtype": gemm.dtype, "layout": gemm.layout, "grid": grid, "words": words,
                              "schedule": s.describe()})
(folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
print("built", [c["name"] for c in manifest["cases"]])
