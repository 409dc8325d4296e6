"""A small interpreter of the integer arithmetic of an emitted Hopper kernel (its text, straight-line, whatever
region each op sits in), for tests that compare where a kernel reads and writes with first principles
(test_hopper_tma_store, test_hopper_batch_coords)."""

from __future__ import annotations

import re

SMEM = 5 * 1024  # where the interpreter puts the kernel's shared allocation (not 1024-aligned: the kernel aligns it)
# and the bindings (A, B, C, the maps scratch: 64-byte aligned, not 128, as the kernel rounds the maps' start up)
POINTERS = {"smem": SMEM, "a": 1 << 40, "b": 2 << 40, "cc": 3 << 40, "t": (4 << 40) + 64, "fl": 5 << 40}
BINARY = {"addi": lambda a, b: a + b, "subi": lambda a, b: a - b, "muli": lambda a, b: a * b,
          "divui": lambda a, b: a // b, "remui": lambda a, b: a % b, "minui": min, "andi": lambda a, b: a & b,
          "ori": lambda a, b: a | b, "xori": lambda a, b: a ^ b, "shrui": lambda a, b: a >> b,
          "shli": lambda a, b: a << b, "maxui": max}
COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "ult": lambda a, b: a < b,
           "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b}


def compiled(text: str) -> list[tuple]:
    """The text's integer definitions, in text order, as (result, kind, operands) for `evaluate`."""
    ops = []
    for line in text.splitlines():
        m = re.match(r"\s*(%\w+) = (.*)$", line)
        if not m:
            continue
        name, rhs = m.groups()
        if c := re.match(r"arith\.constant (-?\d+) : (i\d+|index)$", rhs):
            ops.append((name, "const", int(c.group(1))))
        elif rhs.startswith("hal.interface.workgroup.id[0]"):
            ops.append((name, "known", "bid"))
        elif rhs.startswith("gpu.thread_id x"):
            ops.append((name, "known", "tid"))
        elif c := re.match(r"memref\.extract_aligned_pointer_as_index %([a-z]+)\d+ ", rhs):
            ops.append((name, "const", POINTERS[c.group(1)]))
        elif (c := re.match(r"arith\.(\w+) (%\w+), (%\w+) : (i\d+|index)$", rhs)) and c.group(1) in BINARY:
            ops.append((name, BINARY[c.group(1)], (c.group(2), c.group(3))))
        elif c := re.match(r"(?:arith\.(?:index_cast|extui|trunci)|llvm\.(?:ptrtoint|inttoptr)) (%\w+) :", rhs):
            ops.append((name, "copy", c.group(1)))
        elif (c := re.match(r"arith\.cmpi (\w+), (%\w+), (%\w+) : (i\d+|index)$", rhs)) and c.group(1) in COMPARE:
            compare = COMPARE[c.group(1)]
            ops.append((name, lambda a, b, compare=compare: int(compare(a, b)), (c.group(2), c.group(3))))
        elif c := re.match(r"arith\.select (%\w+), (%\w+), (%\w+) : (i\d+|index)$", rhs):
            ops.append((name, "select", (c.group(1), c.group(2), c.group(3))))
    return ops


def evaluate(ops: list[tuple], known: dict) -> dict:
    """Every SSA integer of `ops` (`compiled`) from constants, the thread and workgroup ids ("tid", "bid"), the
    shared allocation's address (SMEM) and `known` values (loop indices)."""
    values = dict(known)
    for name, kind, arg in ops:
        if kind == "const":
            values[name] = arg
        elif kind == "known":
            if arg in values:
                values[name] = values[arg]
        elif kind == "copy":
            if arg in values:
                values[name] = values[arg]
        elif kind == "select":
            if all(a in values for a in arg):
                values[name] = values[arg[1]] if values[arg[0]] else values[arg[2]]
        elif arg[0] in values and arg[1] in values:
            values[name] = kind(values[arg[0]], values[arg[1]])
    return values
