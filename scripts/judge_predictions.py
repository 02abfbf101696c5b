#!/usr/bin/env python3
"""Judges a pre-registered policy change on traces recorded after its predictions, by the predictions' own words,
so that the verdict is fixed in code before the traces exist.

    memcarve replay NEW_TRACE... --json DEFAULT.json
    memcarve replay NEW_TRACE... --config CANDIDATE.toml --json CANDIDATE.json
    python3 scripts/judge_predictions.py DEFAULT.json CANDIDATE.json [--expect NAME ...] [--max-rise 0.03]
                                         [--predictions calls|memory]

The predictions read for any candidate against the default. `--predictions calls` (the default) are those written
for the 4.5 % slack in docs/BENCHMARKS.md ("Thirty-fifth session, second part"), for a candidate meant to save
driver operations:
1. No loss: every trace that meets issue 7's memory and operation goal (`goal_table.met`) under the default meets
   it under the candidate.
2. Fewer operations: the traces' total driver operations are lower under the candidate, and more traces have fewer
   operations than have more.
3. Overheads stay near: no trace's overhead rises by more than `--max-rise` (0.03).
`--predictions memory` are those written for `spare_until_allocations` ("Fortieth session"), for a candidate meant to
save memory at the cost of some operations: 1 as above; 2, lower overheads: the traces' overheads sum to less
under the candidate, and more traces' overheads fall than rise; 3, operations reported: the total under each and
the traces with more. Either way the candidate is adopted when 1 and 2 hold, whatever 3 says (it is reported); when
1 fails it is not, whatever the gains. Prints one markdown row per trace, then a line per prediction (`holds` or
`fails`, with the traces or counts behind it), and last `verdict: adopt` or `verdict: keep the default`. With
`--expect`, the files must hold exactly those traces (by name without `.pickle` and what follows), so that a trace
missing from a batch, or one from an earlier batch, is an error rather than a silent change of what is judged. A
refused allocation in either file is an error too: its bytes are out of every figure. Exit status 0 when judged, 1 on
an error.
"""

import argparse
import sys

from goal_table import limit, met, rows_of, short


class JudgeError(ValueError):
    pass


def paired(default, candidate, expect=None):
    """The two files' rows by short trace name, in the default file's order; checks that they hold the same
    traces, none refused, and with `expect` exactly those."""
    base = {short(row["name"]): row for row in default}
    other = {short(row["name"]): row for row in candidate}
    if len(base) != len(default) or len(other) != len(candidate):
        raise JudgeError("a trace appears twice in one file")
    if base.keys() != other.keys():
        only = sorted(base.keys() ^ other.keys())
        raise JudgeError(f"the files hold different traces: {', '.join(only)}")
    if expect is not None and set(expect) != base.keys():
        missing = sorted(set(expect) - base.keys())
        extra = sorted(base.keys() - set(expect))
        raise JudgeError(f"not the expected traces: missing {missing or 'none'}, unexpected {extra or 'none'}")
    refused = [name for name in base if base[name]["refused"] or other[name]["refused"]]
    if refused:
        raise JudgeError(f"refused allocations in {', '.join(refused)}")
    if not base:
        raise JudgeError("no traces")
    return [(short(row["name"]), row, other[short(row["name"])]) for row in default]


def moved(pairs, field):
    """The sums of `field` under the default and the candidate, and how many traces it falls and rises on."""
    total = (sum(base[field] for _, base, _ in pairs), sum(other[field] for _, _, other in pairs))
    down = sum(1 for _, base, other in pairs if other[field] < base[field])
    up = sum(1 for _, base, other in pairs if other[field] > base[field])
    return total, down, up


def judge(pairs, max_rise=0.03, predictions="calls"):
    """The lines to print: table, one line per prediction, the verdict (`predictions`: "calls" or "memory", as the
    module's documentation says)."""
    lines = [
        "| trace | limit | default (overhead / ops) | candidate | goal: default → candidate |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, base, other in pairs:
        lines.append(
            f"| {name} | {limit(base)} | {base['overhead']:.3f} / {base['driver_ops']} | "
            f"{other['overhead']:.3f} / {other['driver_ops']} | "
            f"{'met' if met(base) else 'not met'} → {'met' if met(other) else 'not met'} |"
        )
    lost = [name for name, base, other in pairs if met(base) and not met(other)]
    gained = [name for name, base, other in pairs if not met(base) and met(other)]
    total, fewer, more = moved(pairs, "driver_ops")
    no_loss = not lost
    lines.append("")
    lines.append(
        f"1. no loss: {'holds' if no_loss else 'fails'} (met {sum(met(b) for _, b, _ in pairs)} → "
        f"{sum(met(o) for _, _, o in pairs)} of {len(pairs)}; lost: {', '.join(lost) or 'none'}; "
        f"gained: {', '.join(gained) or 'none'})"
    )
    ops_counts = f"total {total[0]} → {total[1]}; {fewer} traces with fewer, {more} with more"
    if predictions == "memory":
        sums, lower, higher = moved(pairs, "overhead")
        # Rounded, so that sums equal but for the last bits of a float are equal.
        sums = (round(sums[0], 9), round(sums[1], 9))
        second = sums[1] < sums[0] and lower > higher
        lines.append(
            f"2. lower overheads: {'holds' if second else 'fails'} (sum {sums[0]:.3f} → {sums[1]:.3f}; "
            f"{lower} traces lower, {higher} higher)"
        )
        with_more = [f"{name} {base['driver_ops']} → {other['driver_ops']} (limit {limit(base)})"
                     for name, base, other in pairs if other["driver_ops"] > base["driver_ops"]]
        lines.append(f"3. operations, reported: {ops_counts}; more: {', '.join(with_more) or 'none'}")
    else:
        second = total[1] < total[0] and fewer > more
        lines.append(f"2. fewer operations: {'holds' if second else 'fails'} ({ops_counts})")
        risen = [
            f"{name} {base['overhead']:.3f} → {other['overhead']:.3f}"
            for name, base, other in pairs
            if other["overhead"] - base["overhead"] > max_rise
        ]
        lines.append(
            f"3. overheads stay near: {'holds' if not risen else 'fails'} (risen by more than {max_rise}: "
            f"{', '.join(risen) or 'none'})"
        )
    lines.append("verdict: " + ("adopt" if no_loss and second else "keep the default"))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("default", help="`memcarve replay --json` output of the default policy")
    parser.add_argument("candidate", help="the same traces' output under the candidate (`--config`)")
    parser.add_argument("--expect", nargs="+", metavar="NAME", help="the traces the files must hold, exactly")
    parser.add_argument("--max-rise", type=float, default=0.03,
                        help="prediction 3's bound under --predictions calls (default 0.03)")
    parser.add_argument("--predictions", choices=("calls", "memory"), default="calls",
                        help="which candidate's predictions: one that saves operations (calls, the 4.5 %% slack's) "
                             "or memory (spare_until_allocations')")
    args = parser.parse_args(argv)
    try:
        pairs = paired(rows_of(args.default), rows_of(args.candidate), args.expect)
    except (OSError, ValueError, KeyError) as error:
        print(f"judge_predictions.py: {error}", file=sys.stderr)
        return 1
    print("\n".join(judge(pairs, args.max_rise, args.predictions)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
