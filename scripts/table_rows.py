#!/usr/bin/env python3
"""Adds the rows of `memcarve replay --policy all` to the all-traces table of docs/BENCHMARKS.md.

    cargo run --release -p memcarve-cli -- replay traces/NEW.pickle.xz ... --policy all > rows.txt
    python3 scripts/table_rows.py docs/BENCHMARKS.md rows.txt

The table is the first fenced `text` block whose header line starts with `trace` and names a `policy` column. Each
trace's rows (one per policy, in the order the replay printed them) go in before the first trace of the table whose
name sorts after it, so that the table stays in name order; traces from outside `traces/` (named in `--last`,
`gpt2_generate.pickle.gz` by default: the project's shared original, listed after the others) stay at the end. The
names are padded to the table's own column, whatever width the replay's output used. A trace already in the table is
an error (the figures of a trace replayed again belong in a session's section, not in a second row), and so is a
file with no rows. The file is rewritten in place.
"""

import argparse
import sys


# Traces kept at the end of the table: the project's shared original, from outside `traces/`.
SHARED = ("gpt2_generate.pickle.gz",)


class TableError(Exception):
    """The table or the rows are not as expected; the message says how."""


def parse_rows(text):
    """The replay's output: its header's `policy` column and, per trace in order, its rows without the padding."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("trace") or "policy" not in lines[0]:
        raise TableError("the rows do not start with the replay's header (trace ... policy ...)")
    column = lines[0].index("policy")
    rows = {}
    for line in lines[1:]:
        name = line[:column].strip()
        if not name or line[column:column + 1] == " ":
            raise TableError(f"a row does not line up with the header: {line!r}")
        rows.setdefault(name, []).append(line[column:])
    if not rows:
        raise TableError("no rows")
    return rows


def insert_rows(document, rows, last=SHARED):
    """`document` with `rows` (from `parse_rows`) in its all-traces table."""
    lines = document.split("\n")
    header = next(
        (at for at, line in enumerate(lines)
         if line.startswith("trace ") and " policy " in line and at > 0 and lines[at - 1] == "```text"),
        None,
    )
    if header is None:
        raise TableError("no all-traces table (a ```text block whose first line is trace ... policy ...)")
    column = lines[header].index("policy")
    end = header + 1
    while end < len(lines) and lines[end] != "```":
        end += 1
    if end == len(lines):
        raise TableError("the all-traces table does not end")
    present = {line.split()[0] for line in lines[header + 1:end] if line.strip()}
    for name in sorted(rows):
        if name in present:
            raise TableError(f"{name} is in the table already")
        at = end
        for index in range(header + 1, end):
            other = lines[index].split()[0]
            if other in last or other > name:
                at = index
                break
        new = [name.ljust(column - 1) + " " + row for row in rows[name]]
        lines[at:at] = new
        end += len(new)
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("document", help="the markdown file holding the table (docs/BENCHMARKS.md)")
    parser.add_argument("rows", help="the output of memcarve replay ... --policy all")
    parser.add_argument("--last", action="append", default=None,
                        help="a trace kept at the end of the table (default gpt2_generate.pickle.gz)")
    args = parser.parse_args()
    try:
        with open(args.rows) as file:
            rows = parse_rows(file.read())
        with open(args.document) as file:
            document = file.read()
        updated = insert_rows(document, rows, tuple(args.last) if args.last else SHARED)
    except TableError as error:
        print(f"{args.document}: {error}", file=sys.stderr)
        return 1
    with open(args.document, "w") as file:
        file.write(updated)
    print(f"{args.document}: {sum(len(r) for r in rows.values())} rows of {len(rows)} traces added")
    return 0


if __name__ == "__main__":
    sys.exit(main())
