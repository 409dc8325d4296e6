"""`pipelines explain` on the Hopper kernels' schedules: the K steps per warp-group role, the stage hand-off
checked, a picture, and bad requests as one sentence."""

import pytest

from pipelines.cli import main


def test_pingpong_alternates_whole_tiles_between_the_consumers(capsys, tmp_path):
    assert main(["explain", "--schedule", "hopper-pingpong", "--k-steps", "2", "--stages", "3",
                 "-o", str(tmp_path / "t.png")]) == 0
    out = capsys.readouterr().out
    lines = [line.split(" | ") for line in out.splitlines() if line.startswith("tile ")]
    assert len(lines) == 8  # 4 tiles of 2 K steps
    for step, (label, producer, first, second) in enumerate(lines):
        tile = step // 2
        assert producer.strip() == f"TMA A,B -> stage {step % 3}"
        busy, idle = (first, second) if tile % 2 == 0 else (second, first)
        assert "wgmma x8" in busy and not idle.strip()
        assert ("turn;" in busy) == (tile > 0 and step % 2 == 0)
    assert "no stale read, overwrite or deadlock" in out and (tmp_path / "t.png").stat().st_size > 10000


def test_cooperative_consumers_share_every_step(capsys):
    assert main(["explain", "--schedule", "hopper-cooperative", "--tile", "256x128x64", "--k-steps", "3"]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("tile ")]
    assert len(rows) == 3 and all("wgmma x8" in c0 and "wgmma x8" in c1 for _, _, c0, c1 in rows)


@pytest.mark.parametrize("extra, words", [(["--tile", "128x128x32"], "block_k"), (["--stages", "17"], "stages"),
                                          (["--stages", "0"], "stages"),
                                          (["--target", "gfx942"], "Hopper"), (["-o", "t.svg"], "PNG")])
def test_bad_requests_are_one_sentence(capsys, extra, words):
    assert main(["explain", "--schedule", "hopper-pingpong", *extra]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("option", ["--stages", "--cluster"])
def test_stages_and_clusters_belong_to_the_hopper_schedules(capsys, option):
    assert main(["explain", "--schedule", "pingpong8", option, "2"]) == 2
    assert "--stages and --cluster are for the hopper-* schedules" in capsys.readouterr().err


@pytest.mark.parametrize("cluster, load", [("2", "TMA A,B/2 (multicast)"), ("2,2", "TMA A/2,B/2 (multicast)")])
def test_a_cluster_is_shown_as_its_first_workgroup_with_shared_multicast_loads(capsys, cluster, load):
    """Clusters of two (along M) or 2x2: one row per K step of workgroup 0 (the others repeat it), the producer's
    load is A (half of it with 2x2, to its row) and half of B (to its column), multicast; the hand-off is checked
    across every workgroup of the cluster."""
    assert main(["explain", "--schedule", "hopper-cooperative-persistent", "--cluster", cluster, "--stages", "3",
                 "--k-steps", "2"]) == 0
    out = capsys.readouterr().out
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("tile ")]
    assert out.startswith("hopper-cooperative-persistent 128x256x64, 3 stages, clusters of "
                          + cluster.replace(",", "x") + ":")
    assert len(rows) == 8 and all(p.strip() == f"{load} -> stage {i % 3}" for i, (_, p, _, _) in enumerate(rows))
    assert all("wgmma x4" in c0 and "wgmma x4" in c1 for _, _, c0, c1 in rows)
    assert "no stale read, overwrite or deadlock" in out


@pytest.mark.parametrize("value", ["3", "2,3", "2,2,2", "x", "2,"])
def test_a_cluster_shape_other_than_1_or_2_each_way_is_a_usage_error(capsys, value):
    with pytest.raises(SystemExit) as exit_:
        main(["explain", "--schedule", "hopper-cooperative-persistent", "--cluster", value])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "CLUSTER_M or CLUSTER_M,CLUSTER_N" in err and "Traceback" not in err
