#!/usr/bin/env python3
"""Says whether the best of several variants of a policy beats the default on traces it was not chosen on.

    memcarve replay TRACE... --json DEFAULT.json
    memcarve replay TRACE... --config VARIANT_A.toml --json A.json   (and so on, one file per variant)
    python3 scripts/variant_cv.py DEFAULT.json A.json B.json ... [--splits 200] [--seed 1]

A sweep of settings replayed on the same traces finds a best setting; how much of its margin over the default is
the setting, and how much the luck of a rough landscape (a change that moves placements swaps traces both ways,
docs/BENCHMARKS.md, thirty-fifth session), this answers by cross-validation: the traces are split at random into two
halves, the setting that meets issue 7's memory and operation goal (`goal_table.met`) on most traces of the first
half is chosen (the default wins ties), and its count on the second half is compared with the default's there.
Prints, per file: the traces met, those gained and lost against the default, and for a variant the one-sided sign
test of its gains against its losses (the chance of at least that many gains if each trace it changes were a coin
toss: 5 gained and none lost, 0.031; 8 and 5, 0.29); then, over the splits, the mean
and median of the held-out gain and in how many splits it is above and below zero. A held-out gain at zero or
below says that the sweep's best is no better than chance: a variant that only swaps traces is chosen where its
gains happened to fall and loses where they did not. Every file must hold the same traces.
"""

import argparse
import math
import random
import statistics
import sys

from goal_table import met, rows_of


def load(path):
    """The rows of a replay's `--json` output by trace name."""
    return {row["name"]: row for row in rows_of(path)}


def sign_test(gained, lost):
    """The one-sided sign test: the chance of `gained` or more heads in `gained + lost` fair coin tosses (1.0 when
    nothing changed)."""
    tosses = gained + lost
    return sum(math.comb(tosses, heads) for heads in range(gained, tosses + 1)) / 2 ** tosses


def held_out_gains(default, variants, splits, seed):
    """Per random split of the traces in halves: the count of the variant (or the default) that meets the goal
    on most traces of the first half, on the second half, less the default's there."""
    names = sorted(default)
    candidates = [default] + variants
    rng = random.Random(seed)
    gains = []
    for _ in range(splits):
        shuffled = names[:]
        rng.shuffle(shuffled)
        chosen, held = shuffled[: len(names) // 2], shuffled[len(names) // 2:]
        # max keeps the first of equals: the default, listed first, wins ties.
        best = max(candidates, key=lambda rows: sum(met(rows[name]) for name in chosen))
        gains.append(sum(met(best[name]) for name in held) - sum(met(default[name]) for name in held))
    return gains


def report(paths, splits, seed):
    """The lines printed for the files at `paths` (the default's first)."""
    tables = [load(path) for path in paths]
    default = tables[0]
    for path, rows in zip(paths[1:], tables[1:]):
        if set(rows) != set(default):
            raise ValueError(f"{path} does not hold the same traces as {paths[0]}")
    lines = []
    for path, rows in zip(paths, tables):
        gained = sum(met(rows[name]) and not met(default[name]) for name in default)
        lost = sum(met(default[name]) and not met(rows[name]) for name in default)
        test = f", sign test {sign_test(gained, lost):.3g}" if rows is not default else ""
        lines.append(f"{path}: met on {sum(met(row) for row in rows.values())} of {len(rows)} "
                     f"({gained} gained, {lost} lost{test})")
    gains = held_out_gains(default, tables[1:], splits, seed)
    lines.append(f"held-out gain of the best on half the traces, over {splits} splits: "
                 f"mean {statistics.mean(gains):.2f}, median {statistics.median(gains):g}, "
                 f"above zero in {sum(g > 0 for g in gains)}, "
                 f"below zero in {sum(g < 0 for g in gains)}")
    return lines


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("default", help="the default policy's `replay --json` output")
    parser.add_argument("variants", nargs="+", help="the variants' outputs, on the same traces")
    parser.add_argument("--splits", type=int, default=200, help="random splits in halves (default 200)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the splits (default 1)")
    args = parser.parse_args(argv)
    if args.splits < 1:
        parser.error("--splits must be at least 1")
    try:
        lines = report([args.default] + args.variants, args.splits, args.seed)
    except (OSError, ValueError, KeyError) as error:
        print(f"variant_cv.py: {error}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
