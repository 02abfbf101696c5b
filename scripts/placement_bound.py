#!/usr/bin/env python3
"""What placement alone could do on a trace: an idealized heap replayed from a placement log's requests.

    python3 scripts/placement_bound.py LOG... [--page-size BYTES] [--granule BYTES] [--split-after EVENTS]
                                      [--predict-after EVENTS] [--unknown long|short] [--small-below BYTES[,BYTES...]]
                                      [--page-aware CANDIDATES] [--share-pages MODE] [--json FILE]

A placement log of `memcarve replay --placements FILE` holds the trace's requests in replay order (`alloc,<id>,
<offset>,<requested size>` and `free,<id>,,`); this script reads those lines alone, whatever policy wrote the log,
and places the requests again in an idealized heap: one flat address range, free ranges merged with their
neighbours, each request (rounded up to `--granule`, 512 bytes as PyTorch rounds) in the smallest free range that
holds it (the lowest such address on a tie), or at the top. A page (`--page-size`, 2 MiB as CUDA's granularity on
the H200) is committed exactly while a live request touches it: mapped the moment one does, unmapped the moment
none does. That costs no memory beyond the pages live data touches, and driver operations without limit, so its
peak committed bytes show what a best-fit placement reaches when mapping costs nothing; `ops` counts what it would
take all the same (an allocation that touches a page no other live request does is one mapping, a free that leaves
a page untouched one unmap).

With `--split-after L`, a second heap is replayed with hindsight: requests that live more than L events (or are
never freed) in one address region, the rest in another, each placed by best fit in its own region, the pages
counted over both. The trace does not say how long a request will live, so this is a bound on what a lifetime
split could give, not a policy. `--predict-after L` replays the same split with an online guess instead: a request
goes with the long-lived ones when the last freed request of the same rounded size lived more than L events
(`--unknown` says where a size not freed yet goes: with the long-lived ones by default).

Two online variants of the placement itself: `--small-below BYTES` puts requests below that size in a region of
their own in every heap (as the virtual heap's small region does, 64 KiB there; several sizes, comma-separated, make
a region per size class: `65536,1048576` keeps requests under 64 KiB, those from 64 KiB to 1 MiB and the rest
apart), and `--page-aware N` places each
request where it touches the fewest pages no live request touches, among either end of the N smallest free ranges
that hold it and the top (then the smaller range, then the lower address), instead of by best fit.

`--share-pages` adds a heap that places as the best fit does but lets physical pages back several address pages
at once where their live bytes do not overlap (CUDA maps one physical allocation at any number of addresses): an
address page that a request touches only in part, and no live request touches yet, shows the physical page in use
holding the most live bytes among those with none where the request's are (a fresh page when none has room). What
each physical page holds through one address is blocked at its others (taken out of the free ranges, as if
allocated) until it is freed, so that placements never overlap through another address; `at-peak` shares only
where a fresh page would raise the peak committed so far. `closed` and `closed-at-peak` share the same way but keep
no spans: while a physical page backs two address pages with live bytes, both are closed to new requests (what a
heap could do with no more than a check at the choice). Online (they look only at what is live), memory only.

One line per log: the peak live bytes, and for each heap its overhead (peak committed over peak live bytes) and its
operations; with `--json`, the same as a list of objects. A log it cannot read (missing, an `alloc` line short of
fields or with a size that is no number) is a one-line error and exit status 1. docs/BENCHMARKS.md ("Thirty-ninth
session") has what it showed on the shipped traces.
"""

import argparse
import bisect
import csv
import json
import sys

NEVER = float("inf")


def rounded_up(size, granule):
    """`size` (at least 1) rounded up to a multiple of `granule`."""
    return -(-max(size, 1) // granule) * granule


def pages_of(start, size, page_size):
    """The pages `[start, start + size)` touches."""
    return range(start // page_size, (start + size - 1) // page_size + 1)


def requests(path):
    """The log's requests in order: ("alloc", id, size) and ("free", id, 0); every other line is skipped."""
    out = []
    with open(path, newline="") as file:
        rows = csv.reader(file)
        next(rows, None)
        for row in rows:
            if row and row[0] == "alloc":
                if len(row) < 4:
                    raise ValueError(f"{path}: line {rows.line_num}: an alloc line needs four fields")
                out.append(("alloc", row[1], int(row[3])))
            elif row and row[0] == "free":
                out.append(("free", row[1], 0))
    return out


def lifetimes(events):
    """Each allocation's lifetime in events (its free's index less its own), NEVER for one never freed."""
    born, life = {}, {}
    for index, (kind, ident, _) in enumerate(events):
        if kind == "alloc":
            born[ident] = index
        elif ident in born:
            life[ident] = index - born.pop(ident)
    for ident in born:
        life[ident] = NEVER
    return life


class Region:
    """Free ranges of one address region, best fit: `by_size` sorted by (size, start), merged on free."""

    def __init__(self, base):
        self.by_start = {}
        self.by_end = {}
        self.by_size = []
        # The starts of the free ranges, sorted (for `carve_at`).
        self.starts = []
        self.top = base

    def _remove(self, start):
        size = self.by_start.pop(start)
        del self.by_end[start + size]
        del self.by_size[bisect.bisect_left(self.by_size, (size, start))]
        del self.starts[bisect.bisect_left(self.starts, start)]
        return size

    def _insert(self, start, size):
        self.by_start[start] = size
        self.by_end[start + size] = start
        bisect.insort(self.by_size, (size, start))
        bisect.insort(self.starts, start)

    def _carve(self, start, found, place, size):
        """Takes `[place, place + size)` out of the free range `[start, start + found)`; what is left either side
        stays free. Returns `place`."""
        self._remove(start)
        if place > start:
            self._insert(start, place - start)
        if place + size < start + found:
            self._insert(place + size, start + found - place - size)
        return place

    def take(self, size):
        """The start of the smallest free range of at least `size` bytes (lowest on a tie), or the top."""
        index = bisect.bisect_left(self.by_size, (size, -1))
        if index == len(self.by_size):
            start = self.top
            self.top += size
            return start
        found, start = self.by_size[index]
        return self._carve(start, found, start, size)

    def take_page_aware(self, size, touches_new, candidates):
        """The place, at either end of one of the `candidates` smallest free ranges that hold `size` bytes, or at
        the top, that touches the fewest pages no live request touches (`touches_new(start, size)`); then the
        smaller range, then the lower address."""
        first = bisect.bisect_left(self.by_size, (size, -1))
        best = (touches_new(self.top, size), NEVER, self.top)
        chosen = None
        for found, start in self.by_size[first:first + candidates]:
            for place in (start, start + found - size):
                cost = (touches_new(place, size), found, place)
                if cost < best:
                    best, chosen = cost, (start, found)
        place = best[2]
        if chosen is None:
            self.top += size
            return place
        return self._carve(*chosen, place, size)

    def carve_at(self, start, size):
        """Takes `[start, start + size)`, which must be free: inside one free range, or at or above the top (the
        addresses between the top and `start` become a free range)."""
        if start >= self.top:
            if start > self.top:
                self._insert(self.top, start - self.top)
            self.top = start + size
            return
        index = bisect.bisect_right(self.starts, start) - 1
        found = self.by_start[self.starts[index]] if index >= 0 else 0
        if index < 0 or start + size > self.starts[index] + found:
            raise ValueError(f"[{start}, {start + size}) is not free")
        self._carve(self.starts[index], found, start, size)

    def give(self, start, size):
        """Frees `[start, start + size)`, merged with free neighbours (and with the top when it ends there)."""
        if start + size in self.by_start:
            size += self._remove(start + size)
        if start in self.by_end:
            before = self.by_end[start]
            size += self._remove(before)
            start = before
        if start + size == self.top:
            self.top = start
        else:
            self._insert(start, size)


def replay(events, page_size, granule, region_of=lambda ident, size: 0, page_aware=0):
    """Replays `events` on regions chosen by `region_of(id, rounded size)`; the peaks and operations. With
    `page_aware` candidates, a request goes where it touches the fewest new pages (`Region.take_page_aware`)
    instead of the best fit."""
    regions = {}
    live = {}
    users = {}
    live_bytes = peak_live = committed = peak_committed = ops = 0

    def touches_new(start, size):
        return sum(page not in users for page in pages_of(start, size, page_size))

    for kind, ident, size in events:
        if kind == "alloc":
            rounded = rounded_up(size, granule)
            key = region_of(ident, rounded)
            region = regions.setdefault(key, Region(key << 48))
            if page_aware:
                start = region.take_page_aware(rounded, touches_new, page_aware)
            else:
                start = region.take(rounded)
            live[ident] = (start, rounded, size, key)
            live_bytes += size
            peak_live = max(peak_live, live_bytes)
            mapped = False
            for page in pages_of(start, rounded, page_size):
                count = users.get(page, 0)
                if count == 0:
                    committed += 1
                    mapped = True
                users[page] = count + 1
            ops += mapped
            peak_committed = max(peak_committed, committed)
        elif ident in live:
            start, rounded, size, key = live.pop(ident)
            live_bytes -= size
            unmapped = False
            for page in pages_of(start, rounded, page_size):
                users[page] -= 1
                if users[page] == 0:
                    del users[page]
                    committed -= 1
                    unmapped = True
            ops += unmapped
            regions[key].give(start, rounded)
    peak_committed_bytes = peak_committed * page_size
    overhead = peak_committed_bytes / peak_live if peak_live else 1.0
    return {"peak_live_bytes": peak_live, "peak_committed_bytes": peak_committed_bytes, "overhead": overhead,
            "ops": ops}


def page_pieces(start, size, page_size):
    """(page, low, high) for each page `[start, start + size)` touches: the offsets it covers within the page."""
    for page in pages_of(start, size, page_size):
        base = page * page_size
        yield page, max(start, base) - base, min(start + size, base + page_size) - base


def fullest_disjoint(held, low, high, page_size):
    """Of the physical pages in use (`held`: page -> its live (low, high, address page) spans), the one holding the
    most live bytes with none in `[low, high)` and room for them, or None."""
    best, chosen = -1, None
    for physical, spans in held.items():
        used = sum(b - a for a, b, _ in spans)
        if used > best and used + high - low <= page_size and all(b <= low or high <= a for a, b, _ in spans):
            best, chosen = used, physical
    return chosen


def replay_shared(events, page_size, granule, region_of=lambda ident, size: 0, at_peak=False, closed=False,
                  check=False):
    """`replay`'s best fit with physical pages shared: an address page that a new request touches only in part, and
    that no live request touches yet, is backed by the physical page in use elsewhere holding the most live bytes
    among those whose bytes are disjoint from the request's (offsets within the page; a fresh physical page when
    none is), as CUDA can map one physical page at several addresses. Each physical page's live bytes, through
    whichever address, are blocked (taken out of the free ranges, as if allocated) at every other address page it
    backs, so that no later placement overlaps them; a page that no live request touches any more stops showing its
    physical page, and a physical page shown nowhere is released. Committed memory counts physical pages. An online
    rule (it looks only at what is live), not a bound; it costs no operation beyond `replay`'s (a new address page
    backed is one mapping of the allocation that needs it, as there). With `at_peak`, pages are shared only where a
    fresh one would raise the peak committed so far. With `closed`, no spans are kept past the choice: while a
    physical page backs two address pages or more with live requests, those pages are closed (every byte of them
    not live is blocked, bytes freed meanwhile too), and a page opens again once it alone shows its physical page.
    With `check` (for tests), after every event: no two live spans on one physical page overlap, and each address
    page's blocked bytes are what its physical page holds through its other addresses (`closed`: a closed page has
    no free byte)."""
    regions = {}
    live = {}
    # Address page -> its physical page, and the live requests touching it; physical page -> the live bytes on it
    # as sorted (low, high, address page) offsets, and the address pages showing it; address page -> the absolute
    # (start, size) ranges blocked there.
    backing, touching, held, shown_at, blocked = {}, {}, {}, {}, {}
    fresh = live_bytes = peak_live = committed = peak_committed = ops = shared = 0

    def region_at(page):
        return regions[(page * page_size) >> 48]

    def block(page, start, size):
        region_at(page).carve_at(start, size)
        blocked.setdefault(page, []).append((start, size))

    def unblock(page, start, size):
        blocked[page].remove((start, size))
        if not blocked[page]:
            del blocked[page]
        region_at(page).give(start, size)

    def free_in(page):
        """The free ranges of `page`'s addresses, as (start, size), above its region's top included."""
        region, low, high = region_at(page), page * page_size, (page + 1) * page_size
        out = []
        index = max(bisect.bisect_right(region.starts, low) - 1, 0)
        while index < len(region.starts) and region.starts[index] < high:
            start = region.starts[index]
            a, b = max(start, low), min(start + region.by_start[start], high)
            if a < b:
                out.append((a, b - a))
            index += 1
        if region.top < high:
            out.append((max(region.top, low), high - max(region.top, low)))
        return out

    def close(page):
        if page not in blocked:
            for start, size in free_in(page):
                block(page, start, size)

    def reopen(page):
        for start, size in list(blocked.get(page, ())):
            unblock(page, start, size)

    for kind, ident, size in events:
        if kind == "alloc":
            rounded = rounded_up(size, granule)
            key = region_of(ident, rounded)
            region = regions.setdefault(key, Region(key << 48))
            start = region.take(rounded)
            live[ident] = (start, rounded, size, key)
            live_bytes += size
            peak_live = max(peak_live, live_bytes)
            mapped = False
            for page, low, high in page_pieces(start, rounded, page_size):
                physical = backing.get(page)
                if physical is None:
                    mapped = True
                    sharing = high - low < page_size and (not at_peak or committed >= peak_committed)
                    physical = fullest_disjoint(held, low, high, page_size) if sharing else None
                    if physical is None:
                        physical, fresh = fresh, fresh + 1
                        held[physical], shown_at[physical] = [], set()
                        committed += 1
                    else:
                        shared += 1
                        if not closed:
                            for a, b, _ in held[physical]:
                                block(page, page * page_size + a, b - a)
                    backing[page] = physical
                    shown_at[physical].add(page)
                    touching[page] = 0
                bisect.insort(held[physical], (low, high, page))
                touching[page] += 1
                if closed and len(shown_at[physical]) > 1:
                    for other in shown_at[physical]:
                        close(other)
                elif not closed:
                    for other in shown_at[physical] - {page}:
                        block(other, other * page_size + low, high - low)
            ops += mapped
            peak_committed = max(peak_committed, committed)
        elif ident in live:
            start, rounded, size, key = live.pop(ident)
            live_bytes -= size
            regions[key].give(start, rounded)
            unmapped = False
            for page, low, high in page_pieces(start, rounded, page_size):
                physical = backing[page]
                held[physical].remove((low, high, page))
                if not closed:
                    for other in shown_at[physical] - {page}:
                        unblock(other, other * page_size + low, high - low)
                touching[page] -= 1
                if touching[page] == 0:
                    unmapped = True
                    reopen(page)
                    del touching[page], backing[page]
                    shown_at[physical].discard(page)
                    if not shown_at[physical]:
                        del shown_at[physical], held[physical]
                        committed -= 1
                    elif closed and len(shown_at[physical]) == 1:
                        reopen(next(iter(shown_at[physical])))
                elif page in blocked and closed:
                    # Freed bytes of a closed page stay out of the free ranges.
                    block(page, page * page_size + low, high - low)
            ops += unmapped
        if check:
            for physical, spans in held.items():
                if any(spans[k][1] > spans[k + 1][0] for k in range(len(spans) - 1)):
                    raise AssertionError(f"physical page {physical}: overlapping live spans {spans}")
                for page in shown_at[physical]:
                    if closed:
                        if page in blocked and free_in(page):
                            raise AssertionError(f"closed address page {page} has free bytes {free_in(page)}")
                        continue
                    others = sorted((page * page_size + a, b - a) for a, b, at in spans if at != page)
                    if sorted(blocked.get(page, ())) != others:
                        raise AssertionError(f"address page {page}: blocked {blocked.get(page)}, held {others}")
    peak_committed_bytes = peak_committed * page_size
    overhead = peak_committed_bytes / peak_live if peak_live else 1.0
    return {"peak_live_bytes": peak_live, "peak_committed_bytes": peak_committed_bytes, "overhead": overhead,
            "ops": ops, "shared_mappings": shared}


def replay_closed(events, page_size, granule, region_of=lambda ident, size: 0, at_peak=False, check=False):
    """`replay_shared` with `closed`."""
    return replay_shared(events, page_size, granule, region_of, at_peak, True, check)


def predicted_long(events, after, granule, unknown_long):
    """Per allocation, the online guess: the last freed allocation of its rounded size lived more than `after`
    events (a size not freed yet: `unknown_long`)."""
    last, born, guess = {}, {}, {}
    for index, (kind, ident, size) in enumerate(events):
        if kind == "alloc":
            rounded = rounded_up(size, granule)
            seen = last.get(rounded)
            guess[ident] = unknown_long if seen is None else seen > after
            born[ident] = (index, rounded)
        elif ident in born:
            start, rounded = born.pop(ident)
            last[rounded] = index - start
    return guess


def bound(path, page_size, granule, split_after=None, predict_after=None, unknown_long=True, small_below=(),
          page_aware=0, share_pages=None):
    """The heaps `main` reports for the log at `path`. Each size class that the sizes `small_below` mark out
    (requests below the first, from the first to the second, ..., the rest) has a region of its own in each heap;
    with `page_aware`, each heap places by new pages touched (see `replay`)."""
    events = requests(path)

    def small(size):
        # Even keys: a lifetime split adds one.
        return 2 * sum(size >= below for below in small_below)

    first = "page_aware" if page_aware else "best_fit"
    result = {"log": path, first: replay(events, page_size, granule, lambda _, size: small(size), page_aware)}
    if split_after is not None:
        life = lifetimes(events)
        result["hindsight_split"] = replay(
            events, page_size, granule, lambda ident, size: small(size) + int(life[ident] > split_after),
            page_aware)
    if predict_after is not None:
        guess = predicted_long(events, predict_after, granule, unknown_long)
        result["online_split"] = replay(
            events, page_size, granule, lambda ident, size: small(size) + int(guess[ident]), page_aware)
    if share_pages:
        result["shared_pages"] = replay_shared(events, page_size, granule, lambda _, size: small(size),
                                               share_pages.endswith("at-peak"), share_pages.startswith("closed"))
    result["peak_live_bytes"] = result[first]["peak_live_bytes"]
    return result


def sizes(text):
    """`--small-below`'s comma-separated sizes, ascending (0 marks no class and is dropped)."""
    try:
        values = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of sizes: {text!r}") from None
    if values and values[0] < 0:
        raise argparse.ArgumentTypeError(f"sizes must be 0 or more: {text!r}")
    return tuple(value for value in values if value > 0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", metavar="LOG")
    parser.add_argument("--page-size", type=int, default=2 << 20)
    parser.add_argument("--granule", type=int, default=512)
    parser.add_argument("--split-after", type=int, metavar="EVENTS")
    parser.add_argument("--predict-after", type=int, metavar="EVENTS")
    parser.add_argument("--unknown", choices=("long", "short"), default="long")
    parser.add_argument("--small-below", type=sizes, default=(), metavar="BYTES[,BYTES...]")
    parser.add_argument("--page-aware", type=int, default=0, metavar="CANDIDATES")
    parser.add_argument("--share-pages", choices=("always", "at-peak", "closed", "closed-at-peak"))
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    if args.page_size <= 0 or args.granule <= 0:
        parser.error("--page-size and --granule must be positive")
    if args.page_aware < 0:
        parser.error("--page-aware must be 0 or more")
    results = []
    for path in args.logs:
        try:
            result = bound(path, args.page_size, args.granule, args.split_after, args.predict_after,
                           args.unknown == "long", args.small_below, args.page_aware, args.share_pages)
        except (OSError, ValueError) as error:
            print(f"placement_bound.py: {error}", file=sys.stderr)
            return 1
        results.append(result)
        parts = [f"{path}: peak live {result['peak_live_bytes']} bytes"]
        for name in ("best_fit", "page_aware", "hindsight_split", "online_split", "shared_pages"):
            if name in result:
                heap = result[name]
                parts.append(f"{name.replace('_', ' ')} {heap['overhead']:.3f} x, {heap['ops']} ops")
        print("; ".join(parts))
    if args.json:
        with open(args.json, "w") as file:
            json.dump(results, file, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
