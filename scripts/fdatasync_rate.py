#!/usr/bin/env python3
"""The disk's single-writer commit limit: N times (write 112 bytes at the next offset of a
preallocated, zero-filled file, then fdatasync). Prints fdatasyncs per second. This is what
one session's durable autocommit can reach at best on this file system; compare it with
`hotpage stress --sessions 1` in the same interleaved run (docs/BENCHMARKS.md).
Usage: scripts/fdatasync_rate.py [DIR] [N]   (default: $TMPDIR, 5000)"""
import os
import sys
import tempfile
import time

directory = sys.argv[1] if len(sys.argv) > 1 else tempfile.gettempdir()
count = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
path = os.path.join(directory, "fdatasync_rate.dat")
record = b"x" * 112
fd = os.open(path, os.O_RDWR | os.O_CREAT)
try:
    size = count * len(record)
    os.pwrite(fd, b"\0" * size, 0)  # preallocated, as hotpage's log segments are
    os.fsync(fd)
    start = time.perf_counter()
    for i in range(count):
        os.pwrite(fd, record, i * len(record))
        os.fdatasync(fd)
    print(round(count / (time.perf_counter() - start)))
finally:
    os.close(fd)
    os.unlink(path)
