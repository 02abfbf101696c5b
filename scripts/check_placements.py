#!/usr/bin/env python3
"""Checks a placement log of `memcarve replay --placements FILE` from the log alone, and recounts its figures.

    python3 scripts/check_placements.py LOG [--json REPLAY_JSON] [--page-size BYTES] [--kinds] [--peaks]
        [--small-below BYTES] [--handles] [--in-use]

It verifies, event by event, that
- no live allocation overlaps another in addresses;
- every allocation lies on mapped pages (virtual heap) or inside one live block (block mode);
- no byte of a physical page is used by two live allocations at once: a physical page may show at several
  addresses, and hold live allocations through more than one of them only where their bytes in the page do not
  overlap (a virtual heap may share a page between two partly used address pages);
- nothing is unmapped under a live allocation, no page is mapped twice, no block is destroyed while it holds one,
  and every free names a live allocation;
and recounts the driver operations (`map` and `unmap` lines), the peak committed bytes (live physical pages times
the page size, plus live blocks), the peak live bytes and the allocations. With `--json`, the replay's JSON
output for the same trace and policy (`memcarve replay ... --json FILE --placements LOG`, one row), those four
figures must equal the replay's own. With `--kinds`, a second line sorts the driver operations by what they did:
virtual-heap mappings of new physical pages only, of pages already alive elsewhere only (shown again at other
addresses: no new memory), of both, page unmaps, and block creations and destructions. With `--peaks`, two more
lines say where the memory is at the peak live bytes (the first allocation that reaches it) and at the peak
committed bytes (once the allocation that the peak's mapping was for is placed, as the replay's `--json` reads it;
with `--json`, the replay's split of its peak committed bytes must agree: the same live bytes, the same free bytes
in all, and no more empty pages than the log shows, since the heap counts the pages of the ranges it placed, longer
than the requests for a growing series, and may hold a page with nothing on it): the live bytes, the virtual heap's
physical pages that live allocations use and the bytes free inside them, its empty committed pages, and the
committed bytes (blocks included); then how many of the pages in use hold only requests under `--small-below`
bytes (default 64 KiB, the virtual heap's small region's bound) and their live bytes, and, at the peak committed
bytes, how many pages of `--page-size` it lies above 1.05 times the peak live bytes (issue 7's memory goal). The
pages in use at the peak live bytes are a floor under the peak committed bytes that no rule for mapping and
unmapping pages reaches below with this placement; with `--in-use`, a line gives the tighter floor, the most bytes
of physical pages live allocations touch at any one time (the pages, the line, and that against the peak live bytes:
within 1.05 times or over it with no empty page held). With `--handles`, a last line
counts the virtual heap's work as CUDA does it, with one physical handle per page (what CUDA requires of this
heap: `cuMemMap` maps a handle only whole, so a page shown again alone elsewhere, or given back alone, must be a
handle of its own): the handles created and released, the pages mapped and unmapped, and the driver time that
takes at the costs measured on the H200 (`HANDLE_COSTS_US`, from whole replays of placement logs by
`benches/cuda/driver_replay.c`; for pages of another size than 2 MiB the costs of a handle of the nearest size
measured). A heap in tiers writes a `tier` line as each tier opens: from its offset on, pages are of its size
(`--page-size` is the first tier's), and every check and count above follows the page size where it is. The format
is in docs/TRACE_FORMAT.md ("Placement logs"). Exit status 0 when everything checks out, 1 with the first violation
otherwise.
"""

import argparse
import bisect
import csv
import json
import math
import sys

# Requests under this many bytes are small by default: the virtual heap's small region's bound.
SMALL_BELOW = 64 << 10


# Driver time on the H200 (driver 580.159.04, CUDA 13.0), in microseconds, as whole replays of the 197 shipped
# traces' placement logs paid it (`benches/cuda/driver_replay.c heap`, medians of two runs at 01:35-01:37 UTC on
# 2026-12-04, docs/BENCHMARKS.md "Twenty-ninth session"): per page a map call maps (`cuMemMap` for its handle and
# its share of `cuMemSetAccess` over the range), per handle created (`cuMemCreate`), per page an unmap call unmaps
# (`cuMemUnmap`), each call's own cost inside those; per handle released (`cuMemRelease`, which no replay called
# before its teardown: from `benches/cuda/vmm_costs.c`, 22:33 UTC on 2026-12-03). Create and release by page
# size in MiB (creation measured in replays for 2 and 8 MiB, release in the micro-benchmark for all five).
HANDLE_COSTS_US = {
    "page_mapped": 29.6,
    "page_unmapped": 20.8,
    "create": {2: 12.4, 8: 10.6},
    "release": {2: 9.6, 4: 10.5, 8: 12.3, 16: 15.7, 32: 16.7},
}


def handle_time_us(handles, page_size):
    """The driver time of `handles` (the counts `Checker.handles` keeps) at `HANDLE_COSTS_US`, for pages of
    `page_size` bytes (the nearest measured size for the costs that depend on it)."""
    costs = HANDLE_COSTS_US
    mib = page_size / (1 << 20)

    def nearest(table):
        return table[min(table, key=lambda size: abs(size - mib))]

    return (
        handles["mapped"] * costs["page_mapped"]
        + handles["created"] * nearest(costs["create"])
        + handles["unmapped"] * costs["page_unmapped"]
        + handles["released"] * nearest(costs["release"])
    )


def driver_time_us(handles_by_page):
    """`handle_time_us` summed over page sizes (`Checker.handles_by_page`: page size -> counts)."""
    return sum(handle_time_us(handles, page) for page, handles in handles_by_page.items())


class Violation(Exception):
    """The log breaks a rule; the message says which, and where."""


class Checker:
    def __init__(self, page_size, small_below=SMALL_BELOW):
        self.page = page_size
        # Requests under this many bytes are small (`snapshot` counts the pages that hold nothing else).
        self.small_below = small_below
        # Tiers of the virtual heap opened (`tier` lines): sorted starts and their page sizes. Below the first
        # start, pages are `page_size` bytes.
        self.tier_starts = []
        self.tier_pages = {}
        # Physical page -> its size; the bytes of those alive (mapped somewhere).
        self.physical_size = {}
        self.physical_bytes = 0
        # Virtual heap: address page -> physical page shown there; physical page -> addresses showing it;
        # physical page -> {address page using it: live allocations on it there}; physical page -> the (low, high,
        # address page, id) bytes that live allocations covering it only in part hold there.
        self.shows = {}
        self.mappings = {}
        self.users = {}
        self.spans = {}
        # Mapped pages whose `pages` line has not come yet (the map just before).
        self.unassigned = set()
        # Block mode: live blocks by start -> end, and live allocations per block start.
        self.block_starts = []
        self.block_end = {}
        self.block_live = {}
        # Live allocations: sorted starts, start -> (end, id, size, block start or None), id -> start.
        self.starts = []
        self.live = {}
        self.by_id = {}
        self.ops = 0
        # Operations by kind (see `--kinds`); the mapping whose `pages` lines are being read: [new, shown again].
        self.kinds = {"new": 0, "again": 0, "both": 0, "unmaps": 0, "blocks": 0}
        self.mapping = None
        # The virtual heap's work with one handle per page (see `--handles`; its calls are those `kinds` counts), by
        # page size (what the driver time depends on); `handles` sums it.
        self.handles_by_page = {}
        self.block_bytes = 0
        self.peak_committed = 0
        self.live_bytes = 0
        self.peak_live = 0
        self.allocations = 0
        self.line = 1
        # Where the peaks are: the first allocation that reaches the peak live bytes; the line that reaches the
        # peak committed bytes, moved to the next allocation placed before any free.
        self.peak_live_line = None
        self.peak_committed_line = None
        self.peak_committed_pending = False
        # Bytes of the physical pages live allocations touch (the virtual heap's pages in use), and their most at any
        # one time: the pages a heap needs that holds no empty page, its placement unchanged (see `--in-use`).
        self.in_use_bytes = 0
        self.peak_in_use_bytes = 0
        self.peak_in_use_pages = 0
        self.peak_in_use_line = None

    def fail(self, message):
        raise Violation(f"line {self.line}: {message}")

    def committed(self):
        return self.physical_bytes + self.block_bytes

    def page_at(self, address):
        """The page size of the virtual heap at `address`: its tier's, or the heap's first."""
        at = bisect.bisect_right(self.tier_starts, address)
        return self.tier_pages[self.tier_starts[at - 1]] if at else self.page

    HANDLE_WORK = ("mapped", "created", "unmapped", "released")

    @property
    def handles(self):
        """The handle work of every page size together."""
        return {name: sum(by_page[name] for by_page in self.handles_by_page.values()) for name in self.HANDLE_WORK}

    def count_handles(self, page, **counts):
        by_page = self.handles_by_page.setdefault(page, dict.fromkeys(self.HANDLE_WORK, 0))
        for name, count in counts.items():
            by_page[name] += count

    def on_tier(self, index, offset, page):
        self.settle_map()
        if index != len(self.tier_starts) + 1:
            self.fail(f"tier {index} after {len(self.tier_starts)} tiers")
        if self.tier_starts and offset <= self.tier_starts[-1]:
            self.fail(f"tier {index} at {offset}, not above the tier before it")
        if page <= self.page_at(offset) or page & (page - 1):
            self.fail(f"tier {index}: pages of {page} bytes, not a power of two larger than the tier's before it")
        if offset % page or any(address >= offset for address in self.shows):
            self.fail(f"tier {index} at {offset}: not on a page boundary, or over mapped pages")
        self.tier_starts.append(offset)
        self.tier_pages[offset] = page

    def note_committed(self):
        committed = self.committed()
        if committed > self.peak_committed:
            self.peak_committed = committed
            self.peak_committed_line = self.line
            self.peak_committed_pending = True

    def count_mapping(self):
        """Counts the mapping whose `pages` lines were just read by the kind of its physical pages (`run` calls it
        before every other line and at the end)."""
        if self.mapping is not None:
            new, again = self.mapping
            self.kinds["both" if new and again else "new" if new else "again"] += 1
            self.mapping = None

    def settle_map(self):
        """A `map` not followed by `pages` lines is a block (block mode, or a dedicated block)."""
        if not self.unassigned:
            return
        pages = sorted(self.unassigned)
        start, end = pages[0], pages[-1] + self.page_at(pages[-1])
        for page in pages:
            del self.shows[page]
        self.unassigned.clear()
        self.add_block(start, end)

    def add_block(self, start, end):
        at = bisect.bisect_right(self.block_starts, start)
        if at > 0 and self.block_end[self.block_starts[at - 1]] > start:
            self.fail(f"block [{start}, {end}) overlaps a live block")
        if at < len(self.block_starts) and self.block_starts[at] < end:
            self.fail(f"block [{start}, {end}) overlaps a live block")
        self.block_starts.insert(at, start)
        self.kinds["blocks"] += 1
        self.block_end[start] = end
        self.block_live[start] = 0
        self.block_bytes += end - start
        self.note_committed()

    def block_of(self, offset, end):
        at = bisect.bisect_right(self.block_starts, offset) - 1
        if at >= 0:
            start = self.block_starts[at]
            if end <= self.block_end[start]:
                return start
        return None

    def on_map(self, offset, size):
        self.settle_map()
        if size == 0:
            self.fail("empty map")
        self.ops += 1
        # Block ranges need not be page multiples; a virtual-heap mapping is, and gets `pages` lines.
        page_size = self.page_at(offset)
        if offset % page_size or size % page_size:
            self.add_block(offset, offset + size)
            return
        for page in range(offset, offset + size, page_size):
            if page in self.shows or self.block_of(page, page + 1) is not None:
                self.fail(f"page {page} mapped twice")
            self.shows[page] = None
            self.unassigned.add(page)

    def on_pages(self, first, offset, count):
        page_size = self.page_at(offset)
        for index in range(count):
            page = offset + index * page_size
            if page not in self.unassigned:
                self.fail(f"pages line for page {page}, which the map before did not map")
            self.unassigned.remove(page)
            physical = first + index
            self.shows[page] = physical
            if self.mapping is None:
                self.mapping = [0, 0]
            created = physical not in self.mappings
            self.count_handles(page_size, mapped=1, created=int(created))
            if created:
                self.physical_size[physical] = page_size
                self.physical_bytes += page_size
            elif self.physical_size[physical] != page_size:
                size = self.physical_size[physical]
                self.fail(f"physical page {physical} of {size} bytes shown in pages of {page_size}")
            self.mapping[physical in self.mappings] += 1
            self.mappings[physical] = self.mappings.get(physical, 0) + 1
        self.note_committed()

    def on_unmap(self, offset, size):
        self.settle_map()
        self.ops += 1
        if offset in self.block_end and self.block_end[offset] == offset + size:
            if self.block_live[offset]:
                self.fail(f"block [{offset}, {offset + size}) destroyed while it holds allocations")
            self.block_starts.remove(offset)
            self.kinds["blocks"] += 1
            del self.block_end[offset]
            del self.block_live[offset]
            self.block_bytes -= size
            return
        page_size = self.page_at(offset)
        if offset % page_size or size % page_size:
            self.fail(f"unmap of [{offset}, {offset + size}), neither a block nor whole pages")
        self.kinds["unmaps"] += 1
        for page in range(offset, offset + size, page_size):
            if page not in self.shows:
                self.fail(f"page {page} unmapped while not mapped")
            physical = self.shows.pop(page)
            if page in self.users.get(physical, ()):
                self.fail(f"page {page} unmapped under a live allocation")
            self.mappings[physical] -= 1
            self.count_handles(page_size, unmapped=1)
            if self.mappings[physical] == 0:
                del self.mappings[physical]
                self.physical_bytes -= self.physical_size.pop(physical)
                self.count_handles(page_size, released=1)

    def handle_counts(self):
        """`handles` with the calls they took: the virtual heap's mappings and unmaps, as `kinds` counts them."""
        kinds = self.kinds
        calls = {"map_calls": kinds["new"] + kinds["again"] + kinds["both"], "unmap_calls": kinds["unmaps"]}
        return dict(self.handles, **calls)

    def pages_of(self, offset, end):
        page = self.page_at(offset)
        return range(offset - offset % page, end, page)

    def on_alloc(self, ident, offset, size):
        self.settle_map()
        if ident in self.by_id:
            self.fail(f"allocation {ident} placed while live")
        end = offset + max(size, 1)
        at = bisect.bisect_right(self.starts, offset)
        if at > 0 and self.live[self.starts[at - 1]][0] > offset:
            self.fail(f"allocation {ident} overlaps allocation {self.live[self.starts[at - 1]][1]}")
        if at < len(self.starts) and self.starts[at] < end:
            self.fail(f"allocation {ident} overlaps allocation {self.live[self.starts[at]][1]}")
        block = self.block_of(offset, end)
        if block is not None:
            self.block_live[block] += 1
        else:
            for page in self.pages_of(offset, end):
                physical = self.shows.get(page)
                if physical is None:
                    self.fail(f"allocation {ident} on unmapped page {page}")
                low, high = max(offset, page) - page, min(end, page + self.page_at(page)) - page
                self.use_bytes(ident, physical, page, low, high)
        self.starts.insert(at, offset)
        self.live[offset] = (end, ident, size, block)
        self.by_id[ident] = offset
        self.allocations += 1
        if self.in_use_bytes > self.peak_in_use_bytes:
            self.peak_in_use_bytes = self.in_use_bytes
            self.peak_in_use_pages = len(self.users)
            self.peak_in_use_line = self.line
        self.live_bytes += size
        if self.live_bytes > self.peak_live:
            self.peak_live = self.live_bytes
            self.peak_live_line = self.line
        if self.peak_committed_pending:
            self.peak_committed_pending = False
            self.peak_committed_line = self.line

    def use_bytes(self, ident, physical, page, low, high):
        """Allocation `ident` holds bytes `[low, high)` of `physical` through address page `page`: a failure where
        another address page's live allocations hold any of them."""
        users = self.users.setdefault(physical, {})
        spans = self.spans.setdefault(physical, [])
        for other, count in users.items():
            if other == page:
                continue
            partial = [span for span in spans if span[2] == other]
            whole = high - low == self.page_at(page) or count > len(partial)
            if whole or any(a < high and low < b for a, b, _, _ in partial):
                self.fail(f"allocation {ident} uses bytes of physical page {physical} at {page} that {other} uses")
        if not users:
            self.in_use_bytes += self.physical_size[physical]
        users[page] = users.get(page, 0) + 1
        if high - low < self.page_at(page):
            spans.append((low, high, page, ident))

    def on_free(self, ident):
        self.settle_map()
        self.peak_committed_pending = False
        if ident not in self.by_id:
            self.fail(f"free of allocation {ident}, which is not live")
        offset = self.by_id.pop(ident)
        end, _, size, block = self.live.pop(offset)
        self.starts.remove(offset)
        self.live_bytes -= size
        if block is not None:
            self.block_live[block] -= 1
            return
        for page in self.pages_of(offset, end):
            physical = self.shows[page]
            users = self.users[physical]
            users[page] -= 1
            if users[page] == 0:
                del users[page]
            if not users:
                del self.users[physical]
                self.in_use_bytes -= self.physical_size[physical]
            spans = self.spans.get(physical)
            if spans:
                spans[:] = [span for span in spans if span[3] != ident]

    def snapshot(self):
        """Where the memory is now: live bytes, the virtual heap's physical pages in use, the bytes free in them,
        its empty committed pages, the committed bytes, and the pages in use that only requests under
        `small_below` bytes touch, with their live bytes."""
        used = {}
        # Physical pages that a request of at least `small_below` bytes touches.
        large = set()
        for offset, (end, _, size, block) in self.live.items():
            if block is not None:
                continue
            for page in self.pages_of(offset, end):
                physical = self.shows[page]
                used[physical] = used.get(physical, 0) + min(end, page + self.page_at(page)) - max(offset, page)
                if size >= self.small_below:
                    large.add(physical)
        used_bytes = sum(self.physical_size[physical] for physical in used)
        small_only = [physical for physical in used if physical not in large]
        return {
            "line": self.line,
            "live_bytes": self.live_bytes,
            "pages_in_use": len(used),
            "free_in_used_pages": used_bytes - sum(used.values()),
            "empty_pages": len(self.mappings) - len(used),
            "empty_bytes": self.physical_bytes - used_bytes,
            "committed_bytes": self.committed(),
            "small_only_pages": len(small_only),
            "small_only_live_bytes": sum(used[physical] for physical in small_only),
        }

    def run(self, rows, snapshots_at=()):
        """Checks `rows` (the log, header first); with `snapshots_at`, line numbers, only up to the last of them,
        and returns the `snapshot` after each of those lines by line."""
        header = next(rows, None)
        if header != ["event", "id", "offset", "size"]:
            self.fail(f"header {header}, not event,id,offset,size")
        snapshots, last = {}, max(snapshots_at, default=None)
        for row in rows:
            if self.line in snapshots_at:
                snapshots[self.line] = self.snapshot()
            if self.line == last:
                return snapshots
            self.line += 1
            try:
                event = row[0]
                if event != "pages":
                    self.count_mapping()
                if event == "map":
                    self.on_map(int(row[2]), int(row[3]))
                elif event == "pages":
                    self.on_pages(int(row[1]), int(row[2]), int(row[3]))
                elif event == "unmap":
                    self.on_unmap(int(row[2]), int(row[3]))
                elif event == "alloc":
                    self.on_alloc(int(row[1]), int(row[2]), int(row[3]))
                elif event == "free":
                    self.on_free(int(row[1]))
                elif event == "tier":
                    self.on_tier(int(row[1]), int(row[2]), int(row[3]))
                else:
                    self.fail(f"unknown event {event!r}")
            except (IndexError, ValueError):
                self.fail(f"malformed line {row}")
        if self.line in snapshots_at:
            snapshots[self.line] = self.snapshot()
        self.count_mapping()
        self.settle_map()
        return snapshots


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="placement log (CSV) of one trace and one policy")
    parser.add_argument("--json", help="the replay's --json output for the same run, to compare figures with")
    parser.add_argument(
        "--page-size", type=int, default=2 << 20, help="virtual-heap page size, of its first tier (default 2 MiB)"
    )
    parser.add_argument("--kinds", action="store_true", help="also print the driver operations by kind")
    parser.add_argument("--peaks", action="store_true", help="also print where the memory is at the two peaks")
    parser.add_argument(
        "--small-below", type=int, default=SMALL_BELOW,
        help="with --peaks, requests under this many bytes are small (default 64 KiB, the small region's bound)",
    )
    parser.add_argument(
        "--handles", action="store_true", help="also print the work and driver time with one CUDA handle per page"
    )
    parser.add_argument(
        "--in-use", action="store_true",
        help="also print the most bytes of virtual-heap pages live allocations touch at once, against the peak live "
        "bytes: what a heap holding no empty page would commit, its placement unchanged",
    )
    args = parser.parse_args()
    checker = Checker(args.page_size)
    row = None
    try:
        with open(args.log, newline="") as file:
            checker.run(csv.reader(file))
        figures = {
            "allocations": checker.allocations,
            "driver_ops": checker.ops,
            "peak_committed_bytes": checker.peak_committed,
            "peak_live_bytes": checker.peak_live,
        }
        if args.json:
            with open(args.json) as file:
                rows = json.load(file)["traces"]
            if len(rows) != 1:
                raise Violation(f"{args.json} has {len(rows)} rows; a placement log is of one trace and policy")
            row = rows[0]
            # The page work too, where the replay gives it (one row per trace since the twenty-ninth session).
            handles = checker.handles
            pages = {"pages_mapped": "mapped", "pages_created": "created", "pages_unmapped": "unmapped",
                     "pages_released": "released"}
            figures.update({key: handles[name] for key, name in pages.items() if key in row})
            for key, value in figures.items():
                if row[key] != value:
                    raise Violation(f"{key}: {value} recounted from the log, {row[key]} in {args.json}")
        peaks = []
        if args.peaks:
            peaks = [("live", checker.peak_live_line), ("committed", checker.peak_committed_line)]
            peaks = [(what, line) for what, line in peaks if line is not None]
            with open(args.log, newline="") as file:
                # One more pass, as far as the later peak.
                snapshots = Checker(args.page_size, args.small_below).run(
                    csv.reader(file), {line for _, line in peaks}
                )
            peaks = [(what, snapshots[line]) for what, line in peaks]
            at = dict(peaks).get("committed")
            if at and row and row.get("at_peak_live_bytes") is not None:
                # The replay's own split of its peak committed bytes must agree with the log's. The heap counts
                # the pages of the ranges it placed, which can be longer than the requests (a growing series'
                # members), and holds its small region's first page with nothing on it: pages this log shows
                # empty may be in use to it, never the other way round.
                ours = (at["live_bytes"], at["free_in_used_pages"], at["empty_bytes"])
                theirs = (row["at_peak_live_bytes"], row["at_peak_partly_used_bytes"], row["at_peak_empty_bytes"])
                if (ours[0], ours[1] + ours[2]) != (theirs[0], theirs[1] + theirs[2]) or theirs[2] > ours[2]:
                    raise Violation(f"at the peak committed bytes: live, partly used and empty bytes {ours} "
                                    f"recounted from the log, {theirs} in {args.json}")
    except Violation as violation:
        print(f"{args.log}: {violation}", file=sys.stderr)
        return 1
    print(
        f"{args.log}: checks out: {checker.allocations} allocations, peak live {checker.peak_live} bytes, "
        f"peak committed {checker.peak_committed} bytes, {checker.ops} driver operations"
        + (f" (as {args.json} says of {row.get('name')}, {row.get('policy')})" if row else "")
    )
    if args.kinds:
        kinds = checker.kinds
        print(
            f"{args.log}: driver operations by kind: {kinds['new']} mappings of new pages, {kinds['again']} of "
            f"pages shown again elsewhere, {kinds['both']} of both, {kinds['unmaps']} unmaps, "
            f"{kinds['blocks']} block creations and destructions"
        )
    if args.handles:
        handles = checker.handle_counts()
        print(
            f"{args.log}: with one handle per page: {handles['created']} created, {handles['mapped']} pages mapped "
            f"in {handles['map_calls']} calls, {handles['unmapped']} unmapped in {handles['unmap_calls']} calls, "
            f"{handles['released']} released: {driver_time_us(checker.handles_by_page) / 1000:.1f} ms of driver "
            f"time on the H200"
        )
    if args.in_use and checker.peak_in_use_line is not None:
        # Requests of no bytes still touch a page: against no live bytes there is no ratio.
        against = "no live bytes"
        if checker.peak_live > 0:
            ratio = checker.peak_in_use_bytes / checker.peak_live
            verdict = "within" if ratio <= 1.05 else "over"
            against = f"{ratio:.3f} x the peak live bytes, {verdict} 1.05 x with no empty page held"
        print(
            f"{args.log}: pages in use at most {checker.peak_in_use_bytes} bytes ({checker.peak_in_use_pages} pages, "
            f"line {checker.peak_in_use_line}): {against}"
        )
    for what, at in peaks:
        over = ""
        if what == "committed":
            # Pages of the first tier's size above issue 7's limit: the fewest pages less that would meet it.
            excess = at["committed_bytes"] - 1.05 * checker.peak_live
            over = f"; {max(0, math.ceil(excess / args.page_size))} pages over 1.05 x the peak live bytes"
        print(
            f"{args.log}: at the peak {what} bytes (line {at['line']}): {at['live_bytes']} live bytes on "
            f"{at['pages_in_use']} pages in use ({at['free_in_used_pages']} bytes free in them), "
            f"{at['empty_pages']} empty pages, {at['committed_bytes']} bytes committed; "
            f"{at['small_only_pages']} pages hold only requests under {args.small_below} bytes "
            f"({at['small_only_live_bytes']} live bytes on them){over}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
