#!/usr/bin/env python3
"""Lists functions longer than a limit (default 100 lines) outside test code.

Usage: scripts/fnlen.py [LIMIT] [PATH...]   (default PATH: crates)
A function runs from its `fn` line to the line that closes its body at the same indent.
Code after a `#[cfg(test)]` module line is skipped. Exits 1 if any function is over.
"""
import os, re, sys

limit = int(sys.argv[1]) if len(sys.argv) > 1 else 100
roots = sys.argv[2:] or ["crates"]
fn_re = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))? )?(?:const )?(?:async )?(?:unsafe )?fn (\w+)")
over = []
for root in roots:
    for dirpath, _, files in os.walk(root):
        if "/tests" in dirpath or "/benches" in dirpath or "/target" in dirpath:
            continue
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            lines = open(path, encoding="utf-8").read().split("\n")
            for i, line in enumerate(lines):
                if line.startswith("#[cfg(test)]"):
                    break
                m = fn_re.match(line)
                if not m or line.rstrip().endswith(";"):
                    continue
                indent = m.group(1)
                for j in range(i + 1, len(lines)):
                    if lines[j] == indent + "}":
                        length = j - i + 1
                        if length > limit:
                            over.append((length, path, i + 1, m.group(2)))
                        break
for length, path, line, fn in sorted(over, reverse=True):
    print(f"{length:5} {path}:{line} {fn}")
sys.exit(1 if over else 0)
