"""Rendering a warp-group schedule: a text table (barrier phases × wave groups) and a timeline picture.

Each column of the picture is one barrier phase (epoch); each row is a wave group; a cell is coloured by what
the group does there (global loads, LDS reads, MFMA, or waiting at the stagger barrier) and lists its
operations, so the ping-pong (one group's MFMA cluster beside the other's loads) is visible at a glance.
"""

from __future__ import annotations

import io
from pathlib import Path

from transforms.hazards import Op, Program

from .output import FILE_MARK, write_file

COLOURS = {"mma": "#f28e2b", "load": "#4e79a7", "read": "#59a14f", "idle": "#d3d3d3"}
HOPPER_ROLES = ("producer", "consumer 0", "consumer 1")


def phases(program: Program) -> list[list[list[Op]]]:
    """[epoch][group] -> the group's operations in that epoch (barriers excluded)."""
    per_group = []
    for ops in program.groups:
        epochs: list[list[Op]] = [[]]
        for op in ops:
            if op.kind == "barrier":
                epochs.append([])
            else:
                epochs[-1].append(op)
        per_group.append(epochs)
    count = max(len(e) for e in per_group)
    return [[g[i] if i < len(g) else [] for g in per_group] for i in range(count)]


def _kind(ops: list[Op]) -> str:
    kinds = {op.kind for op in ops}
    for kind in ("mma", "load", "read"):
        if kind in kinds:
            return kind
    return "idle"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _write_png(plt, fig, path: Path, force: bool) -> None:
    picture = io.BytesIO()
    # A PNG text chunk lets the next run recognise the picture as its own.
    fig.savefig(picture, format="png", dpi=150, metadata={"Comment": FILE_MARK})
    plt.close(fig)
    write_file(path, picture.getvalue(), force)


def text_table(program: Program) -> str:
    rows = phases(program)
    width = 46
    lines = [f"{program.name}: {len(rows)} barrier phases, {len(program.groups)} wave group(s) of "
             f"{program.waves_per_group} waves", "phase | " + " | ".join(f"{n:{width}s}" for n in program.group_names)]
    for i, cells in enumerate(rows):
        texts = ["; ".join(op.describe() for op in ops) or "(waits at barrier)" for ops in cells]
        lines.append(f"{i:5d} | " + " | ".join(f"{t[:width]:{width}s}" for t in texts))
    return "\n".join(lines)


def timeline_png(program: Program, path: Path, force: bool = False) -> None:
    """Draw the timeline into `path`; an existing picture this tool did not draw is replaced only with `force`."""
    from matplotlib.patches import Patch

    plt = _pyplot()

    rows = phases(program)
    fig, ax = plt.subplots(figsize=(min(24, 1.1 * len(rows) + 2), 1.2 * len(program.groups) + 1.5))
    for epoch, cells in enumerate(rows):
        for group, ops in enumerate(cells):
            kind = _kind(ops)
            y = len(program.groups) - 1 - group
            ax.broken_barh([(epoch, 0.95)], (y + 0.05, 0.9), color=COLOURS[kind])
            label = "\n".join(op.describe() for op in ops if op.kind in ("load", "read", "mma"))
            ax.text(epoch + 0.47, y + 0.5, label, ha="center", va="center", fontsize=5)
        ax.axvline(epoch, color="black", linewidth=0.5)
    ax.set_yticks([len(program.groups) - 1 - g + 0.5 for g in range(len(program.groups))])
    ax.set_yticklabels(program.group_names)
    ax.set_xlabel("barrier phase (each vertical line is one s_barrier every wave meets)")
    ax.set_xlim(0, len(rows))
    ax.set_title(f"{program.name}: what each wave group does between barriers", fontsize=9)
    ax.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()], fontsize=7, loc="upper right",
              ncol=4)
    fig.tight_layout()
    _write_png(plt, fig, path, force)


def hopper_text(name: str, rows: list[dict[str, str]]) -> str:
    """A Hopper schedule (transforms.hopper_protocol.step_table): one line per K step, one column per warp-group
    role."""
    width = 34
    lines = [f"{name}: {len(rows)} K steps, stages handed over by mbarriers (no workgroup barrier)",
             f"{'step':14s} | " + " | ".join(f"{r:{width}s}" for r in HOPPER_ROLES)]
    for row in rows:
        lines.append(f"{row['step']:14s} | " + " | ".join(f"{row.get(r, ''):{width}s}" for r in HOPPER_ROLES))
    return "\n".join(lines)


def hopper_png(name: str, rows: list[dict[str, str]], path: Path, force: bool = False) -> None:
    """The same table as a picture: a column per K step, a row per role, loads blue and wgmma orange."""
    from matplotlib.patches import Patch

    plt = _pyplot()

    fig, ax = plt.subplots(figsize=(min(24, 0.9 * len(rows) + 2), 1.2 * len(HOPPER_ROLES) + 1.5))
    for column, row in enumerate(rows):
        for index, role in enumerate(HOPPER_ROLES):
            text = row.get(role, "")
            kind = "load" if text.startswith("TMA") else "mma" if "wgmma" in text else "idle"
            y = len(HOPPER_ROLES) - 1 - index
            ax.broken_barh([(column, 0.95)], (y + 0.05, 0.9), color=COLOURS[kind])
            ax.text(column + 0.47, y + 0.5, text.replace(" on ", "\n").replace(" -> ", "\n"), ha="center",
                    va="center", fontsize=5)
    ax.set_yticks([len(HOPPER_ROLES) - 1 - i + 0.5 for i in range(len(HOPPER_ROLES))])
    ax.set_yticklabels(HOPPER_ROLES)
    ax.set_xticks([c + 0.5 for c in range(len(rows))])
    ax.set_xticklabels([r["step"] for r in rows], rotation=90, fontsize=5)
    ax.set_xlabel("K step (numbered across the workgroup's tiles; a stage is handed over by its mbarriers)")
    ax.set_xlim(0, len(rows))
    ax.set_title(f"{name}: what each warp group does for each K step", fontsize=9)
    legend = (("load", "TMA load"), ("mma", "wgmma"), ("idle", "another warp group's step (epilogue or waiting)"))
    ax.legend(handles=[Patch(color=COLOURS[k], label=label) for k, label in legend], fontsize=7, loc="upper right",
              ncol=3)
    fig.tight_layout()
    _write_png(plt, fig, path, force)
