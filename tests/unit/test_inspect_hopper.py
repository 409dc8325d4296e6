"""`inspect` counts Hopper's instructions in PTX (issue 19): wgmma among the MMAs, TMA (bulk tensor) copies, bulk
copies and mbarrier waits and arrives, read from the sm_90a probe kernel that the Hopper paths study compiled
(results/h100/hopper_inputs/extern/k_sm90a.ptx, accepted by ptxas -arch=sm_90a)."""

from pathlib import Path

from pipelines.inspect import ptx_kernels, ptx_stats

PTX = Path(__file__).resolve().parents[2] / "results" / "h100" / "hopper_inputs" / "extern" / "k_sm90a.ptx"


def test_hopper_instructions_are_counted_per_kernel():
    kernels = ptx_kernels(PTX.read_text())
    probe = ptx_stats("probe", PTX, kernels["tma_wgmma_probe"], len(kernels))
    assert probe.mma == {"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16": 1}
    assert (probe.tensor_copies, probe.bulk_copies, probe.mbarrier_waits, probe.mbarrier_arrives) == (1, 0, 1, 1)
    assert probe.async_copies == 0  # the Ampere cp.async count does not take the bulk copies
    plain = ptx_stats("plain", PTX, kernels["tma_grid_constant"], len(kernels))
    assert (plain.mma_count, plain.tensor_copies, plain.mbarrier_waits) == (0, 1, 0)


def test_a_non_tensor_bulk_copy_is_not_a_tma_copy():
    body = ("\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 256, [%r2];\n"
            "\tcp.async.bulk.commit_group;\n\t@%p1 mbarrier.test_wait.shared.b64 %p2, [%r2], %rd3;\n")
    stats = ptx_stats("k", PTX, body, 1)
    assert (stats.tensor_copies, stats.bulk_copies, stats.mbarrier_waits) == (0, 1, 1)
