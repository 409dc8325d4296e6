"""Memory of a dispatch and the instructions that move data: global, buffer, scratch, LDS and scalar loads.

Global memory is one flat byte array (`FlatMemory`) holding the kernarg segment and the bindings; LDS is a byte
array per workgroup. Every load, LDS access and direct-to-LDS copy is asynchronous: issuing it queues a `Pending`
on the wave's vmcnt or lgkmcnt queue, and its effect (reading memory, writing registers or LDS) happens when an
`s_waitcnt` (or the end of the wave) retires it. Each queue retires in order, which is what the hardware
guarantees for LDS and for vector memory loads; scalar loads are retired in order too, which is safe because
compilers only ever wait for them with a count of 0. Vector stores write at issue (nothing in a GEMM reads them
back); on gfx9 they still take a vmcnt slot so that counted waits line up with the hardware's.

Buffer instructions follow the raw-buffer rules of a V# with stride 0: a byte at offset >= num_records reads as
0 and is not written. The model checks each byte, where the hardware checks per dword or per access; IREE's
kernels keep vector accesses either wholly inside or wholly outside a buffer, so the two agree on them.

LDS bank conflicts are counted at issue: the lanes served together (banks × 4 bytes of data per cycle) are
grouped, and each group costs as many cycles as the busiest bank has distinct dwords (several lanes reading the
same dword is a broadcast and costs nothing extra).
"""

from __future__ import annotations

import re

import numpy as np

from .isa import M0, Reg
from .machine import EmulatorError, Pending, decoder, read_rows, scalar_reader, sreg_index, vector_reader

BASE_ADDRESS = 0x10000  # first allocation; address 0 stays unmapped so a null pointer faults


class FlatMemory:
    """Global memory: allocations in one growing byte array, addressed by 64-bit virtual addresses."""

    def __init__(self):
        self.data = np.zeros(0, np.uint8)
        self.end = BASE_ADDRESS
        self.watched: tuple[int, np.ndarray] | None = None  # (first byte index, writer per dword) of one range
        # (kernel, buffer load pc) -> [executions, lanes] reading past the V#; the dispatches of a program share
        # this memory, so the pc alone would mix their kernels
        self.out_of_range: dict[tuple[int, int], list[int]] = {}

    def watch(self, address: int, nbytes: int) -> None:
        """Remember who stores each dword of [address, address + nbytes): (workgroup, wave, pc) in `writers`."""
        self.watched = (address - BASE_ADDRESS, np.full((nbytes // 4, 3), -1, np.int32))

    def stored(self, targets: np.ndarray, w, lanes) -> None:
        """Note wave `w`, at its current instruction, as the writer of the watched dwords among byte `targets`;
        `lanes()` gives the lane that stored each target (which says the workgroup of a batch)."""
        if self.watched is None or not targets.size:
            return
        start, writers = self.watched
        first = targets % 4 == 0  # byte 0 of each dword written
        dwords = (targets[first] - start) // 4
        groups = w.workgroup.ids[w.lane_batch[lanes()[first]]]
        inside = (dwords >= 0) & (dwords < len(writers))
        writers[dwords[inside], 0] = groups[inside]
        writers[dwords[inside], 1:] = (w.id, w.cur)

    def read_out_of_range(self, kernel: int, pc: int, lanes: int, executions: int = 1) -> None:
        """Note `lanes` lanes of the buffer load at `pc`, run by `executions` waves (one per workgroup of a batch),
        reading past num_records (they read 0, as on hardware)."""
        entry = self.out_of_range.setdefault((kernel, pc), [0, 0])
        entry[0] += executions
        entry[1] += lanes

    @property
    def writers(self) -> np.ndarray | None:
        return None if self.watched is None else self.watched[1]

    def allocate(self, nbytes: int) -> int:
        address = (self.end + 255) // 256 * 256
        self.end = address + nbytes
        grown = np.zeros(self.end - BASE_ADDRESS, np.uint8)
        grown[:len(self.data)] = self.data
        self.data = grown
        return address

    def allocate_many(self, sizes: list[int]) -> list[int]:
        """Several allocations with one growth of the byte array (no copy of the ones before)."""
        addresses = []
        end = self.end
        for nbytes in sizes:
            address = (end + 255) // 256 * 256
            addresses.append(address)
            end = address + nbytes
        grown = np.zeros(end - BASE_ADDRESS, np.uint8)
        grown[:len(self.data)] = self.data
        self.data, self.end = grown, end
        return addresses

    def write(self, address: int, payload: bytes | np.ndarray) -> None:
        raw = np.frombuffer(bytes(payload), np.uint8) if isinstance(payload, bytes) else payload.view(np.uint8)
        self.data[address - BASE_ADDRESS:address - BASE_ADDRESS + raw.size] = raw.reshape(-1)

    def read(self, address: int, nbytes: int) -> np.ndarray:
        return self.data[address - BASE_ADDRESS:address - BASE_ADDRESS + nbytes]

    def gather(self, addresses: np.ndarray, size: int, where: str) -> np.ndarray:
        """[accesses, size] bytes from each 64-bit address; whole aligned dwords are gathered as words."""
        offsets = self.index(addresses, where)
        if offsets.size and offsets.max() + size > len(self.data):
            self.index(addresses + np.uint64(size - 1), where)  # names the unmapped address
        if size % 4 == 0 and not (offsets & 3).any():
            words = self.data[:len(self.data) // 4 * 4].view(np.uint32)
            index = (offsets >> 2)[:, None] + np.arange(size // 4)[None, :]
            return words[index].view(np.uint8).reshape(len(offsets), size)
        return self.data[offsets[:, None] + np.arange(size)[None, :]]

    def index(self, addresses: np.ndarray, where: str) -> np.ndarray:
        """Byte indices into `data` for 64-bit addresses; an address outside every allocation is an error."""
        offsets = addresses.astype(np.int64) - BASE_ADDRESS
        if offsets.size and (offsets.min() < 0 or offsets.max() >= len(self.data)):
            bad = int(addresses.reshape(-1)[np.argmax((offsets < 0) | (offsets >= len(self.data)))])
            raise EmulatorError(f"{where} accesses unmapped global address {bad:#x}.")
        return offsets


# ---------------------------------------------------------------------------------------------------- queues


def retire(w, queue, keep: int) -> None:
    """Complete the oldest operations of `queue` until at most `keep` remain in flight."""
    while len(queue) > keep:
        op = queue.popleft()
        op.retire(w)
        for kind, first, count in op.dests:
            pend = w.pending[kind]
            for r in range(first, first + count):
                pend[r] -= 1


def issue(w, queue, op: Pending) -> None:
    op.pc = w.cur
    if getattr(w.workgroup, "immediate", False):  # a reference re-execution: no latency (localise.py)
        op.retire(w)
        return
    for kind, first, count in op.dests:
        pend = w.pending[kind]
        for r in range(first, first + count):
            pend[r] += 1
    if op.lds is not None:
        w.workgroup.open_window(w, op)
    queue.append(op)


def retire_all(w) -> None:
    retire(w, w.vm, 0)
    retire(w, w.lgkm, 0)


_WAIT = re.compile(r"(vmcnt|lgkmcnt|expcnt)\((\d+)\)")


@decoder("s_waitcnt", "s_waitcnt_lgkmcnt", "s_waitcnt_vmcnt")
def _waitcnt(inst, ctx):
    text = inst.operands[0]
    counts = dict((name, int(n)) for name, n in _WAIT.findall(text))
    if inst.opcode != "s_waitcnt":  # gfx10+ 's_waitcnt_lgkmcnt null, 0x0'
        value = int(text.split(",")[-1], 0)
        counts = {inst.opcode.split("_")[-1]: value}
    elif not counts:
        raw = int(text, 0)
        if ctx.gfx9:
            counts = {"vmcnt": (raw & 0xF) | ((raw >> 14) & 3) << 4, "lgkmcnt": (raw >> 8) & 0xF}
        else:
            counts = {"vmcnt": (raw >> 10) & 0x3F, "lgkmcnt": (raw >> 4) & 0x3F}
    vm, lgkm = counts.get("vmcnt"), counts.get("lgkmcnt")

    def run(w):
        if vm is not None:
            retire(w, w.vm, vm)
        if lgkm is not None:
            retire(w, w.lgkm, lgkm)
    return run


@decoder("s_barrier")
def _barrier(inst, ctx):
    def run(w):
        w.at_barrier = True
        w.stop = True
        w.workgroup.barriers += 1
    return run


@decoder("s_endpgm")
def _endpgm(inst, ctx):
    def run(w):
        retire_all(w)
        w.done = True
        w.stop = True
        w.pc -= 1
    return run


# ---------------------------------------------------------------------------------------------------- scalar loads

_SIZES = {"dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16, "dwordx8": 32, "dwordx16": 64,
          "b32": 4, "b64": 8, "b96": 12, "b128": 16, "b256": 32, "b512": 64, "ubyte": 1, "ushort": 2, "u8": 1,
          "u16": 2, "byte": 1, "short": 2, "b8": 1, "b16": 2}


@decoder(*(f"s_load_{s}" for s in ("dword", "dwordx2", "dwordx4", "dwordx8", "dwordx16", "b32", "b64", "b128",
                                   "b256", "b512")))
def _s_load(inst, ctx):
    size = _SIZES[inst.opcode.split("_")[-1]]
    dst = inst.operands[0]
    base = scalar_reader(inst.operands[1], 64)
    offset = scalar_reader(inst.operands[2])

    def run(w):
        address = base(w) + offset(w)  # [batch]
        memory = w.workgroup.memory
        index = memory.index(address[:, None] + np.arange(size, dtype=np.uint64)[None, :], w.where())
        data = memory.data[index].view("<u4").reshape(len(address), size // 4)  # [batch, dwords]

        def land(w):
            for i in range(size // 4):
                w.s[dst.index + i] = data[:, i]
        issue(w, w.lgkm, Pending(land, (("s", dst.index, size // 4),)))
    return run


# ---------------------------------------------------------------------------------------------------- vector memory


def _dest(reg: Reg, size: int):
    nregs = max(1, size // 4)
    return (reg.kind, reg.index, nregs)


def _store_lanes(w, kind: str, first: int, data: np.ndarray, mask: np.ndarray):
    """Write [lanes, bytes] data into registers from `first` for the lanes of `mask`."""
    regs = w.v if kind == "v" else w.a
    nbytes = data.shape[1]
    if nbytes % 4:
        padded = np.zeros((data.shape[0], 4), np.uint8)
        padded[:, :nbytes] = data
        data = padded
    values = np.ascontiguousarray(data).view(np.uint32).T  # [regs, lanes]
    rows = regs[first:first + values.shape[0]]
    if mask.all():
        rows[...] = values
    else:
        rows[:, mask] = values[:, mask]


def _lanes_bytes(w, kind: str, first: int, nbytes: int) -> np.ndarray:
    """[lanes, nbytes] little-endian bytes of registers from `first` (read at issue, as the hardware does)."""
    regs = read_rows(w, kind, first, (nbytes + 3) // 4)
    return np.ascontiguousarray(regs.T).view(np.uint8)[:, :nbytes].copy()


CACHE_SWIZZLE = 0x4000  # bit 14 of the descriptor's 16-bit stride field


def _buffer_descriptor(w, index: int, cache_swizzle: bool):
    """(base, num_records) per lane of the V# in s[index:index + 4]. A stride with the cache-swizzle bit (gfx942 and
    later) only changes how addresses map to cache lines: the access stays raw. Any other stride is a structured
    buffer, which is not modelled."""
    s = w.s
    base = s[index] | ((s[index + 1] & np.uint64(0xFFFF)) << np.uint64(32))
    field = (s[index + 1] >> np.uint64(16)) & np.uint64(0xFFFF)
    stride = field & np.uint64(0x3FFF)
    structured = (stride != 0) & ~(cache_swizzle & ((field & np.uint64(CACHE_SWIZZLE)) != 0))
    if structured.any():
        raise EmulatorError(f"{w.where()} uses a strided buffer descriptor (stride {int(stride[structured][0])}), "
                            "which is not modelled.")
    return w.spread(base), w.spread(s[index + 2]).astype(np.int64)


_BUFFER = re.compile(r"buffer_(load|store)_(?:(dword\w*|b\d+|ubyte|ushort|u8|u16|sbyte|sshort|short_d16_hi|short_d16|"
                     r"byte_d16_hi|byte|short))$")


@decoder(*(f"buffer_{kind}_{s}" for kind in ("load", "store")
           for s in ("dword", "dwordx2", "dwordx3", "dwordx4", "b32", "b64", "b96", "b128", "ubyte", "ushort")),
         "buffer_load_u8", "buffer_load_u16", "buffer_store_b8", "buffer_store_b16",  # gfx11 names
         "buffer_store_short", "buffer_store_byte")  # gfx9 names of the 16- and 8-bit stores: the low bytes
def _buffer(inst, ctx):
    kind, width = _BUFFER.match(inst.opcode).groups()
    size = _SIZES[width]
    ops, mods = inst.operands, inst.modifiers
    to_lds = bool(mods.get("lds"))
    if mods.keys() - {"offen", "offset", "lds", "glc", "slc", "nt", "sc0", "sc1"}:
        raise EmulatorError(f"unsupported buffer modifiers in '{inst.text}' at line {inst.line}.")
    if mods.get("idxen"):
        raise EmulatorError(f"idxen buffer addressing in '{inst.text}' is not modelled.")
    data_reg = None if to_lds else ops[0]
    vaddr, rsrc, soffset = (ops[0], ops[1], ops[2]) if to_lds else (ops[1], ops[2], ops[3])
    offen = bool(mods.get("offen"))
    voffset = vector_reader(vaddr, ctx) if offen else (lambda w: np.uint32(0))
    sofs = scalar_reader(soffset)
    inst_offset = int(mods.get("offset", 0))
    rsrc_index = sreg_index(rsrc)
    byte_range = np.arange(size, dtype=np.int64)
    counts_stores = ctx.gfx9  # gfx10+ count stores in vscnt, which this model never needs to wait for

    def addresses(w):
        """(base + soffset, the range-checked byte offsets, which bytes are in range) per lane."""
        base, records = _buffer_descriptor(w, rsrc_index, ctx.cache_swizzle)
        # The VGPR offset and the instruction offset are "included in bounds checking and swizzling", the SGPR
        # offset is "excluded from bounds checking and swizzling" (LLVM, SIISelLowering.h, on the raw buffer
        # intrinsics' two offsets). They add in 32 bits: LLVM folds a negative scalar into the VGPR offset and
        # relies on the wrap-around (gfx1151 K-tile-16 kernels read row 0 of A through such an offset).
        offset = (np.broadcast_to(voffset(w), (w.lanes,)).astype(np.int64) + inst_offset) & 0xFFFFFFFF
        byte_offsets = offset[:, None] + byte_range[None, :]
        inside = (byte_offsets < records[:, None]) & w.exec[:, None]
        return base + w.spread(sofs(w)), byte_offsets, inside

    if kind == "store":
        def store(w):
            base, byte_offsets, inside = addresses(w)
            data = _lanes_bytes(w, data_reg.kind, data_reg.index, size)
            memory = w.workgroup.memory
            targets = memory.index((base[:, None] + byte_offsets.astype(np.uint64))[inside], w.where())
            memory.data[targets] = data[inside]
            memory.stored(targets, w, lambda: np.nonzero(inside)[0])
            if counts_stores:
                issue(w, w.vm, Pending(lambda w: None))
        return store

    def load(w):
        base, byte_offsets, inside = addresses(w)
        memory = w.workgroup.memory
        outside = w.exec & ~inside.all(axis=1)
        if outside.any():
            memory.read_out_of_range(id(w.workgroup.code), w.cur, int(outside.sum()),
                                     len(np.unique(w.lane_batch[outside])))
        whole = inside.all(axis=1)
        starts = base + byte_offsets[:, 0].astype(np.uint64)
        if whole.all():
            data = memory.gather(starts, size, w.where())
        else:
            data = np.zeros(byte_offsets.shape, np.uint8)
            data[whole] = memory.gather(starts[whole], size, w.where())
            partial = inside & ~whole[:, None]
            if partial.any():
                data[partial] = memory.data[memory.index((base[:, None] + byte_offsets.astype(np.uint64))[partial],
                                                         w.where())]
        mask = w.exec.copy()
        if to_lds:
            # Direct-to-LDS: lane i's bytes go to M0 + inst_offset + i * size (the M0-based LDS destination).
            lds_base = w.spread(w.s[M0] & np.uint64(0x3FFFF)).astype(np.int64) + inst_offset
            lane = np.arange(w.lanes) % w.wave_lanes
            starts = (lds_base + lane * size)[mask]
            rows = w.lane_batch[mask]
            payload = data[mask]
            first = (starts[rows == 0][:, None] + byte_range[None, :]).reshape(-1)

            def land_lds(w):
                w.workgroup.lds_write(w, rows, starts, size, payload)
            issue(w, w.vm, Pending(land_lds, lds=(first, True)))
            return

        def land(w):
            _store_lanes(w, data_reg.kind, data_reg.index, data, mask)
        issue(w, w.vm, Pending(land, (_dest(data_reg, size),)))
    return load


@decoder("global_load_dwordx4", "global_load_dword", "global_load_b128", "global_load_b32", "global_store_dword",
         "global_store_dwordx4", "global_store_b32", "global_store_b128",
         # 16-bit stores of the low or the high half of the data register (HipKittens' bf16 C: an f32's top half)
         "global_store_short", "global_store_short_d16_hi")
def _global(inst, ctx):
    kind = "load" if "_load_" in inst.opcode else "store"
    high = inst.opcode.endswith("_d16_hi")  # "MEM[addr].b16 = VDATA[31 : 16]" (CDNA3 ISA, GLOBAL_STORE_SHORT_D16_HI)
    size = _SIZES[inst.opcode.removesuffix("_d16_hi").split("_")[-1]]
    shift = 2 if high else 0
    ops = inst.operands
    data_reg, vaddr, saddr = (ops[0], ops[1], ops[2]) if kind == "load" else (ops[1], ops[0], ops[2])
    offset = int(inst.modifiers.get("offset", 0)) % (1 << 64)  # a signed immediate: -16 wraps the 64-bit address
    if saddr == "off":
        lo, hi = vector_reader(Reg("v", vaddr.index), ctx), vector_reader(Reg("v", vaddr.index + 1), ctx)
        address = lambda w: lo(w).astype(np.uint64) | (hi(w).astype(np.uint64) << np.uint64(32))  # noqa: E731
    else:
        vofs, sbase = vector_reader(vaddr, ctx), scalar_reader(saddr, 64)
        address = lambda w: w.spread(sbase(w)) + vofs(w).astype(np.uint64)  # noqa: E731
    byte_range = np.arange(size, dtype=np.uint64)

    def run(w):
        addrs = np.broadcast_to(address(w), (w.lanes,)) + np.uint64(offset)
        memory = w.workgroup.memory
        targets = memory.index((addrs[:, None] + byte_range[None, :])[w.exec], w.where())
        if kind == "store":
            memory.data[targets] = _lanes_bytes(w, data_reg.kind, data_reg.index, size + shift)[w.exec, shift:]
            memory.stored(targets.reshape(-1), w, lambda: np.repeat(np.flatnonzero(w.exec), size))
            if ctx.gfx9:
                issue(w, w.vm, Pending(lambda w: None))
            return
        data = np.zeros((w.lanes, size), np.uint8)
        data[w.exec] = memory.data[targets].reshape(-1, size)
        mask = w.exec.copy()
        issue(w, w.vm, Pending(lambda w: _store_lanes(w, data_reg.kind, data_reg.index, data, mask),
                               (_dest(data_reg, size),)))
    return run


_SCRATCH_BYTES = {"b32": 4, "dword": 4, "b64": 8, "dwordx2": 8, "b96": 12, "dwordx3": 12, "b128": 16, "dwordx4": 16}


@decoder(*(f"scratch_{kind}_{width}" for kind in ("load", "store") for width in _SCRATCH_BYTES))
def _scratch(inst, ctx):
    # Per-lane private memory; IREE's kernels address it with constant offsets only ('off' for both bases). A
    # wider access moves consecutive registers to consecutive bytes of the lane's segment.
    kind = "load" if "_load_" in inst.opcode else "store"
    size = _SCRATCH_BYTES[inst.opcode.rsplit("_", 1)[1]]
    ops = inst.operands
    data_reg = ops[0] if kind == "load" else ops[1]
    if (ops[1] if kind == "load" else ops[0]) != "off" or ops[2] != "off":
        raise EmulatorError(f"scratch addressing in '{inst.text}' (line {inst.line}) is not modelled.")
    offset = int(inst.modifiers.get("offset", 0))
    private_bytes = ctx.kernel.descriptor.get("private_segment_fixed_size", 0)
    if offset + size > private_bytes:
        raise EmulatorError(f"'{inst.text}' (line {inst.line}) is outside the {private_bytes}-byte private segment.")

    def run(w):
        if w.private is None:
            w.private = np.zeros((w.lanes, private_bytes), np.uint8)
        if kind == "store":
            w.private[w.exec, offset:offset + size] = _lanes_bytes(w, data_reg.kind, data_reg.index, size)[w.exec]
            if ctx.gfx9:
                issue(w, w.vm, Pending(lambda w: None))
            return
        data, mask = w.private[:, offset:offset + size].copy(), w.exec.copy()
        issue(w, w.vm, Pending(lambda w: _store_lanes(w, data_reg.kind, data_reg.index, data, mask),
                               (_dest(data_reg, size),)))
    return run


# ---------------------------------------------------------------------------------------------------- LDS


def bank_cycles(addresses: np.ndarray, size: int, banks: int, lanes: int) -> tuple[int, int]:
    """(cycles, conflict-free cycles) of one LDS access: per-lane byte addresses (-1: lane inactive)."""
    lanes_per_cycle = max(1, min(lanes, banks * 4 // max(size, 4)))
    dwords_per_lane = max(1, (size + 3) // 4)
    lane_ids = np.flatnonzero(addresses >= 0)
    if not lane_ids.size:
        return 0, 0
    groups = -(-lanes // lanes_per_cycle)
    dwords = (addresses[lane_ids] // 4)[:, None] + np.arange(dwords_per_lane)[None, :]
    keys = (np.repeat(lane_ids // lanes_per_cycle, dwords_per_lane) << 32) | dwords.reshape(-1)
    unique = np.unique(keys)  # a dword read by several lanes of one cycle is a broadcast: counted once
    per_bank = np.bincount((unique >> 32) * banks + (unique & 0xFFFFFFFF) % banks, minlength=groups * banks)
    cycles = per_bank.reshape(groups, banks).max(axis=1)
    return int(cycles.sum()), int((cycles > 0).sum())


_DS = re.compile(r"ds_(read|write|load|store)(2st64|2|_2addr_stride64|_2addr)?_(b8|b16|b32|b64|b96|b128|u8|u16|i8|"
                 r"i16)(_d16_hi|_d16)?$")


def _ds_shape(opcode: str):
    match = _DS.match(opcode)
    if not match:
        return None
    kind, two, width, d16 = match.groups()
    read = kind in ("read", "load")
    size = {"b8": 1, "u8": 1, "i8": 1, "b16": 2, "u16": 2, "i16": 2}.get(width) or int(width[1:]) // 8
    stride64 = bool(two) and "st" in two
    return read, bool(two), stride64, size, width, d16


_DS_OPCODES = [f"ds_{k}_{w}" for k in ("read", "load") for w in ("b32", "b64", "b96", "b128", "u8", "u16", "i8",
                                                                 "i16", "u16_d16", "u16_d16_hi", "u8_d16",
                                                                 "u8_d16_hi")]
_DS_OPCODES += [f"ds_{k}_{w}" for k in ("write", "store") for w in ("b8", "b16", "b32", "b64", "b96", "b128",
                                                                    "b16_d16_hi", "b8_d16_hi")]
_DS_OPCODES += [f"ds_{k}{t}_{w}" for k in ("read", "write") for t in ("2", "2st64") for w in ("b32", "b64")]
_DS_OPCODES += [f"ds_{k}{t}_{w}" for k in ("load", "store") for t in ("_2addr", "_2addr_stride64")
                for w in ("b32", "b64")]


@decoder(*_DS_OPCODES)
def _ds(inst, ctx):
    read, two, stride64, size, width, d16 = _ds_shape(inst.opcode)
    ops, mods = inst.operands, inst.modifiers
    if read:
        dst, vaddr, sources = ops[0], ops[1], ()
    else:
        vaddr, sources = ops[0], ops[1:]
    address = vector_reader(vaddr, ctx)
    if two:
        unit = size * (64 if stride64 else 1)
        offsets = [int(mods.get("offset0", 0)) * unit, int(mods.get("offset1", 0)) * unit]
    else:
        offsets = [int(mods.get("offset", 0))]
    signed = width in ("i8", "i16")
    byte_range = np.arange(size, dtype=np.int64)
    # Which bytes of the data registers are stored: the high half for *_d16_hi stores.
    src_shift = 2 if (not read and d16 == "_d16_hi") else 0

    def run(w):
        base = np.broadcast_to(address(w), (w.lanes,)).astype(np.int64)
        mask = w.exec.copy()
        wg = w.workgroup
        for off in offsets:  # bank passes and races are followed in the batch's first workgroup
            wg.count_banks(w, np.where(mask[:w.wave_lanes], base[:w.wave_lanes] + off, -1), size)
        rows = w.lane_batch[mask]
        starts = np.concatenate([base[mask] + off for off in offsets])
        all_rows = np.tile(rows, len(offsets))
        first = (starts[all_rows == 0][:, None] + byte_range[None, :]).reshape(-1)
        active = len(rows)
        if read:
            def land(w):
                raw = wg.lds_read(w, all_rows, starts, size)
                if len(offsets) > 1:
                    raw = raw.reshape(len(offsets), active, size).transpose(1, 0, 2).reshape(active, -1)
                if active == w.lanes:
                    data = raw
                else:
                    data = np.zeros((w.lanes, raw.shape[1]), np.uint8)
                    data[mask] = raw
                if size >= 4:
                    _store_lanes(w, dst.kind, dst.index, data, mask)
                    return
                value = data.astype(np.uint32)
                value = value[:, 0] | (value[:, 1] << 8) if size == 2 else value[:, 0]
                if signed:
                    top = np.uint32(1 << (8 * size - 1))
                    value = (value ^ top) - top
                regs = w.v if dst.kind == "v" else w.a
                old = regs[dst.index]
                if d16 == "_d16":
                    value = (old & np.uint32(0xFFFF0000)) | (value & np.uint32(0xFFFF))
                elif d16 == "_d16_hi":
                    value = (old & np.uint32(0xFFFF)) | (value << np.uint32(16))
                regs[dst.index] = np.where(mask, value, old)
            nregs = max(1, size * len(offsets) // 4)
            issue(w, w.lgkm, Pending(land, ((dst.kind, dst.index, nregs),), lds=(first, False)))
            return
        payload = []
        for src in sources:
            data = _lanes_bytes(w, src.kind, src.index, size + src_shift)[:, src_shift:]
            payload.append(data[mask])
        # One row per access, all lanes of the first address, then of the second (matches `starts`).
        payload = np.concatenate(payload, axis=0) if len(payload) > 1 else payload[0]
        issue(w, w.lgkm, Pending(lambda w: wg.lds_write(w, all_rows, starts, size, payload), lds=(first, True)))
    return run


@decoder("ds_read_b64_tr_b16", "ds_read_b64_tr_b8", "ds_read_b64_tr_b4")
def _ds_transpose(inst, ctx):
    """gfx950 transposing LDS reads: each lane reads 8 bytes; within every block of 16 lanes the 16 × (8 bytes)
    matrix of elements is transposed so that lane i receives element i % n of the rows read by lanes
    (i // n) + (16 // n) · j, for j over its output elements (n = elements per lane)."""
    elem_bits = int(inst.opcode.rsplit("_b", 1)[1])
    if elem_bits not in (8, 16):
        raise EmulatorError(f"{inst.opcode} is not modelled.")
    dst, vaddr = inst.operands[0], inst.operands[1]
    offset = int(inst.modifiers.get("offset", 0))
    address = vector_reader(vaddr, ctx)
    n = 64 // elem_bits  # elements per lane
    ebytes = elem_bits // 8
    byte_range = np.arange(8, dtype=np.int64)
    # source lane (within the 16-lane block) and element for output lane i, output element j
    lane_in_block = np.arange(16)
    src_lane = (lane_in_block[:, None] // n) + (16 // n) * np.arange(n)[None, :]
    src_elem = np.broadcast_to(lane_in_block[:, None] % n, (16, n))

    def run(w):
        base = np.broadcast_to(address(w), (w.lanes,)).astype(np.int64) + offset
        mask = w.exec.copy()
        if not mask.all():
            raise EmulatorError(f"{w.where()}: transposing LDS read with inactive lanes is not modelled.")
        wg = w.workgroup
        wg.count_banks(w, base[:w.wave_lanes], 8)
        first = (base[:w.wave_lanes, None] + byte_range[None, :]).reshape(-1)

        def land(w):
            raw = wg.lds_read(w, w.lane_batch, base, 8).reshape(w.lanes // 16, 16, n, ebytes)
            out = raw[:, src_lane, src_elem, :]  # [blocks, 16, n, ebytes]
            _store_lanes(w, dst.kind, dst.index, out.reshape(w.lanes, 8), mask)
        issue(w, w.lgkm, Pending(land, ((dst.kind, dst.index, 2),), lds=(first, False)))
    return run
