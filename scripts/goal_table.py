#!/usr/bin/env python3
"""Tabulates issue 7's goal for a batch of traces from `memcarve replay --json` output, the way the sessions of
docs/BENCHMARKS.md judge a batch of unseen recordings against predictions written before them.

    memcarve replay TRACE... --json DEFAULT.json
    memcarve replay TRACE... --policy blocks --json BLOCKS.json
    python3 scripts/goal_table.py DEFAULT.json [--blocks BLOCKS.json]

Prints one markdown row per trace of DEFAULT.json (in its order): the peak live bytes, PyTorch's overhead and
segment operations, the policy's overhead and driver operations, the operation limit (1.5 × PyTorch's, rounded
down), whether memory (overhead at most 1.05) and operations (at most the limit) are both met, and with --blocks
the block-mode overhead and operations, marked where over the same limit. Then one summary line: how many meet
memory and operations, and with --blocks, block mode over the traces where it refused nothing: the median and mean
overhead, PyTorch's median, how many are at most 1.05 × (to three decimals, as the tables print them), how many
have overhead and operations both at most PyTorch's, and which go over the call limit. Throughput is left out: the
goal's third part is measured by `replay-goal`, which takes medians over passes.
"""

import argparse
import json
import statistics
import sys

MIB = float(1 << 20)
OVERHEAD_GOAL = 1.05


def rows_of(path):
    """The replay's rows, each with the figures the table needs (a missing field is an error)."""
    with open(path) as file:
        rows = json.load(file)["traces"]
    for row in rows:
        for key in ("name", "overhead", "driver_ops", "peak_live_bytes", "pytorch_overhead", "pytorch_segment_ops",
                    "refused"):
            if key not in row:
                raise ValueError(f"{path}: a row has no {key!r}")
    return rows


def limit(row):
    """Issue 7's operation limit: 1.5 × PyTorch's segment operations, rounded down."""
    return 3 * row["pytorch_segment_ops"] // 2


def met(row):
    return row["overhead"] <= OVERHEAD_GOAL and row["driver_ops"] <= limit(row)


def short(name):
    return name.split(".pickle")[0]


def table(default, blocks=None):
    """The markdown lines: header, one row per trace of `default`, the summary."""
    by_name = {row["name"]: row for row in blocks or []}
    header = ["trace", "peak live", "PyTorch (overhead / ops)", "policy", "limit", "memory and operations"]
    if blocks is not None:
        header.append("block mode")
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in default:
        cells = [
            short(row["name"]),
            f"{row['peak_live_bytes'] / MIB:,.0f} MiB",
            f"{row['pytorch_overhead']:.3f} / {row['pytorch_segment_ops']}",
            f"{row['overhead']:.3f} / {row['driver_ops']}",
            str(limit(row)),
            "met" if met(row) else "**not met**",
        ]
        if blocks is not None:
            block = by_name.get(row["name"])
            if block is None:
                cells.append("absent")
            else:
                over = " (over)" if block["driver_ops"] > limit(block) else ""
                refused = f", {block['refused']} refused" if block["refused"] else ""
                cells.append(f"{block['overhead']:.3f} / {block['driver_ops']}{over}{refused}")
        lines.append("| " + " | ".join(cells) + " |")
    summary = f"memory and operations met on {sum(map(met, default))} of {len(default)}"
    if blocks is not None:
        summary += "; " + block_summary(blocks)
    lines.append("")
    lines.append(summary)
    return lines


def block_summary(blocks):
    """Block mode's figures over the traces where it refused nothing, and the traces over the call limit."""
    served = [row for row in blocks if not row["refused"]]
    over = [short(row["name"]) for row in blocks if row["driver_ops"] > limit(row)]
    text = f"block mode on {len(served)} of {len(blocks)} with nothing refused"
    if served:
        overheads = [row["overhead"] for row in served]
        at_goal = sum(1 for value in overheads if round(value, 3) <= OVERHEAD_GOAL)
        both = sum(
            1 for row in served
            if row["overhead"] <= row["pytorch_overhead"] and row["driver_ops"] <= row["pytorch_segment_ops"]
        )
        pytorch = statistics.median(row["pytorch_overhead"] for row in served)
        text += (
            f": overhead median {statistics.median(overheads):.3f}, mean {statistics.mean(overheads):.3f} "
            f"(PyTorch median {pytorch:.3f}), at most {OVERHEAD_GOAL} on {at_goal}, overhead and operations both "
            f"at most PyTorch's on {both}"
        )
    text += f"; over the call limit: {', '.join(over) if over else 'none'}"
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("default", help="`memcarve replay --json` output of the policy judged")
    parser.add_argument("--blocks", help="the same traces' `--policy blocks --json` output")
    args = parser.parse_args(argv)
    try:
        default = rows_of(args.default)
        blocks = rows_of(args.blocks) if args.blocks else None
    except (OSError, ValueError, KeyError) as error:
        print(f"goal_table.py: {error}", file=sys.stderr)
        return 1
    print("\n".join(table(default, blocks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
