#!/usr/bin/env python3
"""Writes PyTorch's segment operations in a snapshot, in order, for `benches/cuda/driver_replay.c segments`.

    python3 scripts/pytorch_segments.py TRACE [--out FILE]

TRACE is a `torch.cuda.memory._snapshot()` pickle (plain, gzip or xz), as in traces/. Its `device_traces` are walked
as memcarve's importer walks them (devices in index order, their entries one after another), and each
`segment_alloc`, `segment_free`, `segment_map` and `segment_unmap` entry becomes a line `action,key,size`, where
the key is the entry's address with the device's index in the bits above bit 56 (the same address on two devices
is two segments). These are the segment operations `memcarve replay` counts as PyTorch's (`pytorch ops`); the
last line on standard error says how many. Standard library only.
"""

import argparse
import gzip
import lzma
import pickle
import sys

SEGMENT_ACTIONS = ("segment_alloc", "segment_free", "segment_map", "segment_unmap")


def load(path):
    """The snapshot in `path`: a pickle, plain or compressed with gzip or xz."""
    with open(path, "rb") as file:
        magic = file.read(6)
    opener = gzip.open if magic[:2] == b"\x1f\x8b" else lzma.open if magic == b"\xfd7zXZ\x00" else open
    with opener(path, "rb") as file:
        return pickle.load(file)


def segment_operations(snapshot):
    """(action, key, size) for each segment operation of `snapshot`, in order."""
    for device, entries in enumerate(snapshot["device_traces"]):
        for entry in entries:
            action = entry.get("action")
            if action in SEGMENT_ACTIONS:
                yield action, (device << 56) | int(entry["addr"]), int(entry["size"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--out", help="file to write (default: standard output)")
    args = parser.parse_args()
    out = open(args.out, "w") if args.out else sys.stdout
    count = 0
    for action, key, size in segment_operations(load(args.trace)):
        out.write(f"{action},{key},{size}\n")
        count += 1
    if args.out:
        out.close()
    print(f"{args.trace}: {count} segment operations", file=sys.stderr)


if __name__ == "__main__":
    main()
