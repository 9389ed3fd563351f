#!/usr/bin/env python3
"""Times the ways a log flush can be made durable on this machine's file system.

For each flush size it compares, interleaved over rounds, the microseconds per flush of:
  - write + fdatasync (through the page cache);
  - O_DIRECT | O_DSYNC (one synchronous write that bypasses the cache; what the log does);
  - O_DIRECT + fdatasync.
Direct writes rewrite the partial last block each time, as the log does. The file is
zero-filled first, as the log's segments are.
Usage: scripts/log_write_modes.py [DIR] [rounds]   (DIR defaults to the current directory)
"""
import mmap, os, statistics, sys, time

directory = sys.argv[1] if len(sys.argv) > 1 else "."
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
path = os.path.join(directory, "log-write-modes.tmp")
BLOCK = 4096

fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
os.write(fd, b"\0" * (256 << 20))
os.fsync(fd)
os.close(fd)

def one(flags, sync, size, seconds=1.5):
    fd = os.open(path, os.O_RDWR | flags)
    buf = mmap.mmap(-1, size + 2 * BLOCK)  # page-aligned, as direct I/O needs
    buf.write(b"x" * (size + 2 * BLOCK))
    count, offset, start = 0, 0, time.time()
    while time.time() - start < seconds:
        if flags & os.O_DIRECT:
            first = offset // BLOCK * BLOCK
            end = (offset + size + BLOCK - 1) // BLOCK * BLOCK
            os.pwrite(fd, memoryview(buf)[: end - first], first)
        else:
            os.pwrite(fd, memoryview(buf)[:size], offset)
        if sync:
            os.fdatasync(fd)
        offset += size
        count += 1
    os.close(fd)
    return (time.time() - start) * 1e6 / count

modes = [
    ("write + fdatasync", 0, True),
    ("O_DIRECT | O_DSYNC", os.O_DIRECT | os.O_DSYNC, False),
    ("O_DIRECT + fdatasync", os.O_DIRECT, True),
]
results = {}
for _ in range(rounds):
    for size in (600, 12000):
        for name, flags, sync in modes:
            results.setdefault((size, name), []).append(one(flags, sync, size))
os.remove(path)
print(f"{'flush bytes':>11}  {'mode':22} {'median us':>9}  runs")
for (size, name), runs in results.items():
    print(f"{size:>11}  {name:22} {statistics.median(runs):>9.1f}  {[round(r) for r in runs]}")
