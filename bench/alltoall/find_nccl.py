#!/usr/bin/env python3
"""Prints the path of the libnccl.so that PyTorch's NCCL package (or torch
itself) installs, for kinet-alltoall-bench's KINET_NCCL_LIB; nothing (and
exit 1) when there is none."""
import glob
import os
import sys

for mod in ("nvidia.nccl", "torch"):
    try:
        m = __import__(mod, fromlist=["x"])
    except Exception:
        continue
    dirs = list(getattr(m, "__path__", []))
    if getattr(m, "__file__", None):
        dirs.append(os.path.dirname(m.__file__))
    for d in dirs:
        hits = sorted(glob.glob(os.path.join(d, "**", "libnccl.so*"), recursive=True))
        if hits:
            print(hits[0])
            sys.exit(0)
sys.exit(1)
