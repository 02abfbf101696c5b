"""Tests of placement_bound.py on small hand-made logs: best fit, merging, page counts, operations, size classes,
the two lifetime splits and shared physical pages.

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import placement_bound  # noqa: E402

PAGE = 2 << 20
MIB = 1 << 20


def events(*items):
    """("a", id, size) and ("f", id) as the script's requests."""
    return [("alloc", str(item[1]), item[2]) if item[0] == "a" else ("free", str(item[1]), 0) for item in items]


class RegionTest(unittest.TestCase):
    def test_smallest_range_that_fits_lowest_first(self):
        region = placement_bound.Region(0)
        for size in (3, 1, 2, 1, 1):
            region.take(size * 100)
        # Taken: [0, 300), [300, 400), [400, 600), [600, 700), [700, 800); then [0, 300) and [600, 700) free.
        region.give(0, 300)
        region.give(600, 100)
        self.assertEqual(region.take(100), 600)
        self.assertEqual(region.take(100), 0)
        # [100, 300) is left, too small: the top.
        self.assertEqual(region.take(300), 800)

    def test_merges_neighbours_and_the_top(self):
        region = placement_bound.Region(0)
        starts = [region.take(100) for _ in range(3)]
        region.give(starts[0], 100)
        region.give(starts[2], 100)
        self.assertEqual(region.top, 200)
        region.give(starts[1], 100)
        self.assertEqual((region.top, region.by_size), (0, []))


def laid_out(sizes, freed):
    """A region whose ranges of `sizes` (MiB) were taken in order, then those at the indexes in `freed` given
    back; with the pages (2 MiB) that the ranges still taken touch."""
    region = placement_bound.Region(0)
    starts = [region.take(int(size * MIB)) for size in sizes]
    for index in freed:
        region.give(starts[index], int(sizes[index] * MIB))
    used = set()
    for index, (start, size) in enumerate(zip(starts, sizes)):
        if index not in freed:
            used.update(range(start // PAGE, (start + int(size * MIB) - 1) // PAGE + 1))

    def touches_new(start, size):
        return sum(page not in used for page in range(start // PAGE, (start + size - 1) // PAGE + 1))

    return region, touches_new


class PageAwareTest(unittest.TestCase):
    # Free ranges [1, 3.5) MiB, between requests on pages 0 and 1, and [6, 8.25) MiB, over the whole of page 3.
    SIZES, FREED = (1, 2.5, 0.5, 1.5, 0.5, 2.25, 0.25), (1, 5)

    def test_best_fit_takes_the_smaller_range(self):
        region, _ = laid_out(self.SIZES, self.FREED)
        self.assertEqual(region.take(2 * MIB), 6 * MIB)

    def test_fewest_new_pages_first(self):
        region, touches_new = laid_out(self.SIZES, self.FREED)
        self.assertEqual(region.take_page_aware(2 * MIB, touches_new, 64), 1 * MIB)
        # What is left of the range: [3, 3.5) MiB.
        self.assertEqual(region.by_size, [(MIB // 2, 3 * MIB), (9 * MIB // 4, 6 * MIB)])

    def test_the_end_of_a_range_or_the_top(self):
        # A free range [1, 5) MiB between requests on pages 0 and 2 (page 1 free); the top at 5.5 MiB on page 2.
        region, touches_new = laid_out((1, 4, 0.5), (1,))
        # 0.5 MiB: the range's start, on page 0 (no new page; the lower address of the two ends).
        self.assertEqual(region.take_page_aware(MIB // 2, touches_new, 64), 1 * MIB)
        # 2.5 MiB: either end of what is left, [1.5, 5), touches page 1 as its one new page, and so does the top
        # (page 3); the range wins over the top, its start over its end.
        self.assertEqual(region.take_page_aware(5 * MIB // 2, touches_new, 64), 3 * MIB // 2)
        # 1.5 MiB: the one range left, [4, 5) MiB, is too small: the top.
        self.assertEqual(region.take_page_aware(3 * MIB // 2, touches_new, 64), 11 * MIB // 2)


class ReplayTest(unittest.TestCase):
    def test_pages_follow_live_requests(self):
        result = placement_bound.replay(
            events(("a", 1, PAGE), ("a", 2, PAGE), ("f", 1), ("a", 3, PAGE // 2)), PAGE, 512)
        self.assertEqual(result["peak_committed_bytes"], 2 * PAGE)
        self.assertEqual(result["peak_live_bytes"], 2 * PAGE)
        # Two mappings, one unmap, one mapping again (the half page reuses the first page's range).
        self.assertEqual(result["ops"], 4)

    def test_a_shared_page_is_one_mapping(self):
        result = placement_bound.replay(events(("a", 1, 1000), ("a", 2, 1000), ("f", 1), ("f", 2)), PAGE, 512)
        self.assertEqual((result["peak_committed_bytes"], result["ops"]), (PAGE, 2))

    def test_requests_round_up_to_the_granule(self):
        # Two 1-byte requests at a 1 MiB granule fill one page; a third starts the next.
        result = placement_bound.replay(events(("a", 1, 1), ("a", 2, 1), ("a", 3, 1)), PAGE, MIB)
        self.assertEqual((result["peak_committed_bytes"], result["peak_live_bytes"]), (2 * PAGE, 3))

    def test_unknown_frees_are_skipped(self):
        result = placement_bound.replay(events(("f", 9), ("a", 1, PAGE)), PAGE, 512)
        self.assertEqual((result["peak_committed_bytes"], result["ops"]), (PAGE, 1))


# Long-lived (2, 4) and short-lived (1, 3, 5) requests of 1 MiB in turn: in one heap each long one keeps half a
# page, and the 2 MiB request after the short ones' frees needs a third page; apart, the long ones fill one page
# and the short ones' page is free again for it.
INTERLEAVED = events(
    ("a", 1, MIB), ("a", 2, MIB), ("a", 3, MIB), ("a", 4, MIB), ("f", 1), ("f", 3), ("a", 5, 2 * MIB), ("f", 5),
)


class SplitTest(unittest.TestCase):
    def test_lifetimes(self):
        life = placement_bound.lifetimes(INTERLEAVED)
        self.assertEqual((life["1"], life["3"], life["5"], life["2"]), (4, 3, 1, placement_bound.NEVER))

    def test_hindsight_split_lowers_this_peak(self):
        one = placement_bound.replay(INTERLEAVED, PAGE, 512)
        life = placement_bound.lifetimes(INTERLEAVED)
        split = placement_bound.replay(INTERLEAVED, PAGE, 512, lambda ident, _: int(life[ident] > 4))
        self.assertEqual((one["peak_live_bytes"], split["peak_live_bytes"]), (4 * MIB, 4 * MIB))
        self.assertEqual((one["peak_committed_bytes"], split["peak_committed_bytes"]), (3 * PAGE, 2 * PAGE))

    def test_online_guess_uses_the_last_freed_of_a_size(self):
        # 1 lives 2 events, 2 lives 3; 3 comes after 1 is freed, 4 after 2.
        sequence = events(("a", 1, MIB), ("a", 2, 2 * MIB), ("f", 1), ("a", 3, MIB), ("f", 2), ("a", 4, 2 * MIB))
        guess = placement_bound.predicted_long(sequence, 2, 512, unknown_long=False)
        self.assertEqual([guess[str(i)] for i in range(1, 5)], [False, False, False, True])
        guess = placement_bound.predicted_long(sequence, 2, 512, unknown_long=True)
        self.assertEqual([guess[str(i)] for i in range(1, 5)], [True, True, False, True])


class SizeClassTest(unittest.TestCase):
    def test_a_region_per_size_class(self):
        # Four 512 KiB requests between four of 1.5 MiB fill four pages; the large ones freed, the small ones pin all
        # four, and a request of 6 MiB goes to the top: seven pages for 8 MiB live. With the 512 KiB ones in a class
        # of their own (64 KiB to 1 MiB), they fill one page of their region and the 6 MiB request takes the three
        # pages the large ones left: four.
        lines = ["event,id,offset,size"]
        for index in range(4):
            lines += [f"alloc,l{index},0,{3 * MIB // 2}", f"alloc,m{index},0,{MIB // 2}"]
        lines += [f"free,l{index},," for index in range(4)] + [f"alloc,big,0,{6 * MIB}"]
        with tempfile.TemporaryDirectory() as folder:
            log = os.path.join(folder, "log.csv")
            with open(log, "w") as file:
                file.write("\n".join(lines) + "\n")
            mixed = placement_bound.bound(log, PAGE, 512, small_below=(65536,))["best_fit"]
            apart = placement_bound.bound(log, PAGE, 512, small_below=(65536, 1 << 20))["best_fit"]
        self.assertEqual((mixed["peak_live_bytes"], apart["peak_live_bytes"]), (8 * MIB, 8 * MIB))
        self.assertEqual((mixed["peak_committed_bytes"], apart["peak_committed_bytes"]), (7 * PAGE, 4 * PAGE))

    def test_sizes_are_read_sorted_and_checked(self):
        self.assertEqual(placement_bound.sizes("1048576,65536"), (65536, 1048576))
        self.assertEqual(placement_bound.sizes("0"), ())
        for text in ("x", "-1", "65536,"):
            with self.assertRaises(argparse.ArgumentTypeError, msg=text):
                placement_bound.sizes(text)


class CarveTest(unittest.TestCase):
    def test_inside_a_range_and_above_the_top(self):
        region = placement_bound.Region(0)
        starts = [region.take(100) for _ in range(3)]
        region.give(starts[1], 100)
        region.carve_at(120, 30)
        self.assertEqual(sorted(region.by_size), [(20, 100), (50, 150)])
        # Above the top: the gap between becomes a free range.
        region.carve_at(400, 50)
        self.assertEqual((region.top, region.by_start[300]), (450, 100))
        with self.assertRaises(ValueError):
            region.carve_at(140, 20)


# A page of 4 KiB, a granule of 1 byte: `a` and `b` fill page 0, `a` is freed, and `c` fills page 1 and the first
# quarter of page 2, where page 0's physical page is free (`b` holds its last three quarters).
SHARED = events(("a", 1, 1024), ("a", 2, 3072), ("f", 1), ("a", 3, 5120))


class SharedPagesTest(unittest.TestCase):
    def test_a_partly_used_page_shows_a_physical_page_in_use(self):
        plain = placement_bound.replay(SHARED, 4096, 1)
        shared = placement_bound.replay_shared(SHARED, 4096, 1, check=True)
        self.assertEqual(plain["peak_committed_bytes"], 3 * 4096)
        self.assertEqual((shared["peak_committed_bytes"], shared["shared_mappings"]), (2 * 4096, 1))
        # Page 0's first quarter now holds `c`'s last bytes: a request of that size cannot go there.
        more = placement_bound.replay_shared(SHARED + events(("a", 4, 1024)), 4096, 1, check=True)
        self.assertEqual(more["peak_committed_bytes"], 3 * 4096)

    def test_freed_pages_stop_sharing_and_give_their_bytes_back(self):
        # `c` freed: page 2 stops showing page 0's physical page, page 1's is released, and page 0's first quarter
        # is free again for `d`, with no mapping.
        log = SHARED + events(("f", 3), ("a", 4, 1024))
        shared = placement_bound.replay_shared(log, 4096, 1, check=True)
        # a's mapping, c's mapping, c's unmap; none for d.
        self.assertEqual(shared["ops"], 3)
        self.assertEqual(shared["peak_committed_bytes"], 2 * 4096)

    def test_only_at_a_peak(self):
        # At `c`, a fresh page would raise the peak (two pages before): it shares, as without the rule.
        self.assertEqual(placement_bound.replay_shared(SHARED, 4096, 1, at_peak=True)["shared_mappings"], 1)
        # With a third page mapped before, and freed, `c`'s second page is under the peak: a fresh one.
        log = events(("a", 9, 3 * 4096), ("f", 9)) + SHARED
        result = placement_bound.replay_shared(log, 4096, 1, at_peak=True, check=True)
        self.assertEqual((result["shared_mappings"], result["peak_committed_bytes"]), (0, 3 * 4096))

    def test_closed_pages_take_no_new_request_while_shared(self):
        closed = placement_bound.replay_closed(SHARED, 4096, 1, check=True)
        self.assertEqual((closed["peak_committed_bytes"], closed["shared_mappings"]), (2 * 4096, 1))
        # Pages 0 and 2 show one physical page: both closed, so `d` goes above them, to a fresh page.
        more = placement_bound.replay_closed(SHARED + events(("a", 4, 1024)), 4096, 1, check=True)
        self.assertEqual(more["peak_committed_bytes"], 3 * 4096)
        # `c` freed: page 2 leaves the physical page, page 0 is its only page again and opens; `d` fits there.
        after = placement_bound.replay_closed(SHARED + events(("f", 3), ("a", 4, 1024)), 4096, 1, check=True)
        self.assertEqual((after["ops"], after["peak_committed_bytes"]), (3, 2 * 4096))

    def test_a_closed_page_keeps_freed_bytes_out(self):
        # Page 0 holds `x` (from 1,024) and `y` (from 2,048) when `c`'s tail of 1,024 bytes at page 2 shares its
        # physical page: page 0 closes; `x` freed there stays closed, and `d` goes to a fresh page above.
        log = events(("a", 1, 1024), ("a", 5, 1024), ("a", 2, 2048), ("f", 1), ("a", 3, 5120), ("f", 5),
                     ("a", 4, 1024))
        result = placement_bound.replay_closed(log, 4096, 1, check=True)
        self.assertEqual(result["shared_mappings"], 1)
        self.assertEqual(result["peak_committed_bytes"], 3 * 4096)

    def test_random_logs_keep_spans_apart(self):
        import random
        rng = random.Random(7)
        shared = 0
        for _ in range(20):
            log, live, ident = [], [], 0
            for _ in range(300):
                if live and rng.random() < 0.45:
                    log += events(("f", live.pop(rng.randrange(len(live)))))
                else:
                    ident += 1
                    live.append(ident)
                    log += events(("a", ident, rng.choice((100, 700, 1500, 3000, 5000, 9000))))
            for heap in (placement_bound.replay_shared, placement_bound.replay_closed):
                for at_peak in (False, True):
                    result = heap(log, 4096, 1, at_peak=at_peak, check=True)
                    self.assertGreaterEqual(result["peak_committed_bytes"], result["peak_live_bytes"])
                    shared += result["shared_mappings"]
        # The logs do share pages (hundreds of times), so the checks above looked at shared pages.
        self.assertGreater(shared, 100)


class CommandTest(unittest.TestCase):
    def test_bad_logs_are_one_line_errors(self):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "placement_bound.py")
        with tempfile.TemporaryDirectory() as folder:
            cases = {"short.csv": "event,id,offset,size\nalloc,1,0\n",
                     "size.csv": "event,id,offset,size\nalloc,1,0,x\n"}
            for name, text in cases.items():
                with open(os.path.join(folder, name), "w") as file:
                    file.write(text)
            for name, said in [("short.csv", "line 2: an alloc line needs four fields"),
                               ("size.csv", "invalid literal"), ("missing.csv", "No such file")]:
                done = subprocess.run([sys.executable, script, os.path.join(folder, name)], capture_output=True,
                                      text=True)
                self.assertEqual(done.returncode, 1, name)
                self.assertIn(said, done.stderr)
                self.assertNotIn("Traceback", done.stderr)

    def test_reads_a_placement_log(self):
        lines = ["event,id,offset,size", f"map,,0,{2 * PAGE}", "pages,0,0,2", "alloc,1,0,1000",
                 f"alloc,2,{PAGE},{PAGE}", "free,1,,", f"unmap,,0,{PAGE}", "tier,,0,2097152"]
        with tempfile.TemporaryDirectory() as folder:
            log = os.path.join(folder, "log.csv")
            with open(log, "w") as file:
                file.write("\n".join(lines) + "\n")
            out = os.path.join(folder, "out.json")
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "placement_bound.py")
            done = subprocess.run([sys.executable, script, log, "--split-after", "10", "--predict-after", "10",
                                   "--json", out], capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("best fit 1.999 x, 2 ops", done.stdout)
            with open(out) as file:
                result = json.load(file)[0]
            # The 1000-byte request alone in a region of its own: a page of its own, unmapped at its free.
            done = subprocess.run([sys.executable, script, log, "--page-aware", "8", "--small-below", "65536"],
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("page aware 1.999 x, 3 ops", done.stdout)
            self.assertNotIn("best fit", done.stdout)
        self.assertEqual(result["peak_live_bytes"], PAGE + 1000)
        self.assertEqual(result["best_fit"]["peak_committed_bytes"], 2 * PAGE)
        self.assertIn("hindsight_split", result)
        self.assertIn("online_split", result)


if __name__ == "__main__":
    unittest.main()
