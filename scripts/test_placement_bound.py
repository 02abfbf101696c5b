"""Tests of placement_bound.py on small hand-made logs: best fit, merging, page counts, operations, and the two
lifetime splits.

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""

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


class CommandTest(unittest.TestCase):
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
        self.assertEqual(result["peak_live_bytes"], PAGE + 1000)
        self.assertEqual(result["best_fit"]["peak_committed_bytes"], 2 * PAGE)
        self.assertIn("hindsight_split", result)
        self.assertIn("online_split", result)


if __name__ == "__main__":
    unittest.main()
