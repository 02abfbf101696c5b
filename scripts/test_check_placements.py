"""Tests of check_placements.py on small hand-made logs: what it accepts, and each rule it enforces.

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_placements.py")
PAGE = 2 << 20


def run(lines, figures=None, extra=()):
    """Runs the checker on a log of `lines` (after the header), with a one-row JSON of `figures` if given, and
    the options in `extra`."""
    with tempfile.TemporaryDirectory() as folder:
        log = os.path.join(folder, "log.csv")
        with open(log, "w") as file:
            file.write("\n".join(["event,id,offset,size", *lines]) + "\n")
        args = [sys.executable, SCRIPT, log]
        if figures is not None:
            path = os.path.join(folder, "replay.json")
            with open(path, "w") as file:
                json.dump({"traces": [dict(figures, name="test.pickle", policy="vmm")]}, file)
            args += ["--json", path]
        result = subprocess.run(args + list(extra), capture_output=True, text=True)
        return result.returncode, result.stdout + result.stderr


# Two pages mapped onto physical pages 0 and 1; two allocations on them; the second page mapped again at a
# fresh address (physical page 1 shows twice) once the allocation on it is gone, and used there.
VIRTUAL = [
    f"map,,0,{2 * PAGE}",
    "pages,0,0,2",
    "alloc,1,0,1000",
    f"alloc,2,{PAGE},{PAGE}",
    "free,2,,",
    f"map,,{4 * PAGE},{PAGE}",
    f"pages,1,{4 * PAGE},1",
    f"alloc,3,{4 * PAGE},4096",
    f"unmap,,{PAGE},{PAGE}",
    "free,1,,",
    "free,3,,",
]
# The replay's row for VIRTUAL: three pages mapped (two new), one unmapped that stays shown elsewhere. (The block
# test's figures leave the page work out, as rows written before it was counted do: those still check out.)
VIRTUAL_FIGURES = {
    "allocations": 3,
    "driver_ops": 3,
    "peak_committed_bytes": 2 * PAGE,
    "peak_live_bytes": 1000 + PAGE,
    "pages_mapped": 3,
    "pages_created": 2,
    "pages_unmapped": 1,
    "pages_released": 0,
}


class CheckPlacements(unittest.TestCase):
    def assert_fails(self, lines, reason, figures=None):
        code, output = run(lines, figures)
        self.assertEqual(code, 1, output)
        self.assertIn(reason, output)

    def test_a_sound_virtual_heap_log_checks_out_with_its_figures(self):
        code, output = run(VIRTUAL, VIRTUAL_FIGURES)
        self.assertEqual(code, 0, output)
        self.assertIn("3 driver operations (as", output)
        self.assertIn("of test.pickle, vmm", output)

    def test_a_sound_block_log_checks_out_with_its_figures(self):
        lines = [
            "map,,0,33554432",
            "alloc,1,0,100",
            "alloc,2,512,100",
            "map,,67108864,4096",
            "alloc,3,67108864,4096",
            "free,1,,",
            "free,2,,",
            "unmap,,0,33554432",
            "free,3,,",
        ]
        figures = {"allocations": 3, "driver_ops": 3, "peak_committed_bytes": 33558528, "peak_live_bytes": 4296}
        code, output = run(lines, figures)
        self.assertEqual(code, 0, output)

    def test_kinds_sort_the_operations_by_what_they_mapped(self):
        # VIRTUAL: a mapping of two new pages, one of a page alive elsewhere, an unmap. Then a mapping of a page
        # alive elsewhere (0) and a new one (2), and a block.
        lines = VIRTUAL + [f"map,,{8 * PAGE},{2 * PAGE}", f"pages,0,{8 * PAGE},1", f"pages,2,{9 * PAGE},1",
                           f"alloc,4,{8 * PAGE},8", f"map,,{16 * PAGE},4096", "free,4,,", f"unmap,,{16 * PAGE},4096"]
        code, output = run(lines, extra=["--kinds"])
        self.assertEqual(code, 0, output)
        self.assertIn("6 driver operations", output)
        self.assertIn("1 mappings of new pages, 1 of pages shown again elsewhere, 1 of both, 1 unmaps, "
                      "2 block creations and destructions", output)
        code, output = run(VIRTUAL)
        self.assertNotIn("by kind", output)

    def test_peaks_say_where_the_memory_is_and_must_match_the_replays_split(self):
        # Three pages mapped for the first allocation (the peak committed, read once it is placed: one page in
        # use, two empty); the peak live bytes later, on two pages, one of them full, with page 0 empty.
        lines = [f"map,,0,{3 * PAGE}", "pages,0,0,3", "alloc,1,0,1000", f"alloc,2,{PAGE},{PAGE}", "free,1,,",
                 f"alloc,3,{2 * PAGE},{PAGE // 2}", "free,2,,", "free,3,,"]
        figures = {"allocations": 3, "driver_ops": 1, "peak_committed_bytes": 3 * PAGE,
                   "peak_live_bytes": PAGE + PAGE // 2, "at_peak_live_bytes": 1000,
                   "at_peak_partly_used_bytes": PAGE - 1000, "at_peak_empty_bytes": 2 * PAGE}
        code, output = run(lines, figures, extra=["--peaks"])
        self.assertEqual(code, 0, output)
        self.assertIn(f"at the peak live bytes (line 7): {PAGE + PAGE // 2} live bytes on 2 pages in use "
                      f"({PAGE // 2} bytes free in them), 1 empty pages, {3 * PAGE} bytes committed", output)
        self.assertIn(f"at the peak committed bytes (line 4): 1000 live bytes on 1 pages in use ({PAGE - 1000} "
                      f"bytes free in them), 2 empty pages, {3 * PAGE} bytes committed", output)
        for key in ("at_peak_live_bytes", "at_peak_partly_used_bytes", "at_peak_empty_bytes"):
            code, output = run(lines, dict(figures, **{key: figures[key] + 1}), extra=["--peaks"])
            self.assertEqual(code, 1, output)
            self.assertIn("recounted from the log", output)
            self.assertNotIn("checks out", output)
        # A page the log shows empty may be in use to the heap (a range longer than its request), not the reverse.
        fewer_empty = dict(figures, at_peak_partly_used_bytes=2 * PAGE - 1000, at_peak_empty_bytes=PAGE)
        code, output = run(lines, fewer_empty, extra=["--peaks"])
        self.assertEqual(code, 0, output)
        more_empty = dict(figures, at_peak_partly_used_bytes=0, at_peak_empty_bytes=3 * PAGE - 1000)
        code, output = run(lines, more_empty, extra=["--peaks"])
        self.assertEqual(code, 1, output)
        code, output = run(lines)
        self.assertNotIn("at the peak", output)

    def test_peaks_count_pages_of_small_requests_alone_and_pages_over_the_limit(self):
        # The peaks test's log: at the peak committed bytes (line 4) page 0 holds only the 1,000-byte request; at the
        # peak live bytes (line 7) a whole-page request and a half-page one, neither small. The limit is 1.05 x
        # 1.5 pages, so 3 pages committed are 2 pages over it.
        lines = [f"map,,0,{3 * PAGE}", "pages,0,0,3", "alloc,1,0,1000", f"alloc,2,{PAGE},{PAGE}", "free,1,,",
                 f"alloc,3,{2 * PAGE},{PAGE // 2}", "free,2,,", "free,3,,"]
        code, output = run(lines, extra=["--peaks"])
        self.assertEqual(code, 0, output)
        self.assertIn("bytes committed; 0 pages hold only requests under 65536 bytes (0 live bytes on them)\n",
                      output)
        self.assertIn("bytes committed; 1 pages hold only requests under 65536 bytes (1000 live bytes on them); 2 "
                      "pages over 1.05 x the peak live bytes", output)
        # A page shared with a large request is not the small requests' alone; --small-below moves the bound.
        shared = [f"map,,0,{PAGE}", "pages,0,0,1", "alloc,1,0,1000", f"alloc,2,1024,{PAGE // 2}", "free,1,,",
                  "free,2,,"]
        code, output = run(shared, extra=["--peaks"])
        self.assertEqual(code, 0, output)
        self.assertIn("0 pages hold only requests under 65536 bytes (0 live bytes on them)", output)
        code, output = run(lines, extra=["--peaks", "--small-below", "1000"])
        self.assertIn("0 pages hold only requests under 1000 bytes (0 live bytes on them); 2 pages over", output)

    def test_in_use_gives_the_most_bytes_on_pages_live_allocations_touch(self):
        # VIRTUAL: both physical pages in use once allocation 2 is placed (line 5), 1000 + PAGE bytes live then.
        code, output = run(VIRTUAL, extra=["--in-use"])
        self.assertEqual(code, 0, output)
        self.assertIn(
            f"pages in use at most {2 * PAGE} bytes (2 pages, line 5): 1.999 x the peak live bytes, over 1.05 x",
            output,
        )
        # An empty page mapped ahead is not in use: the same allocation alone on its page is within the limit.
        lines = [f"map,,0,{3 * PAGE}", "pages,0,0,3", f"alloc,1,{PAGE},{PAGE}", "free,1,,"]
        code, output = run(lines, extra=["--in-use"])
        self.assertEqual(code, 0, output)
        self.assertIn(f"at most {PAGE} bytes (1 pages, line 4): 1.000 x the peak live bytes, within 1.05 x", output)
        # Requests of no bytes touch their page but hold no live bytes: no ratio, and no failure.
        code, output = run([f"map,,0,{PAGE}", "pages,0,0,1", "alloc,1,0,0", "free,1,,"], extra=["--in-use"])
        self.assertEqual(code, 0, output)
        self.assertIn(f"at most {PAGE} bytes (1 pages, line 4): no live bytes", output)

    def test_figures_that_differ_from_the_replays_fail(self):
        for key in VIRTUAL_FIGURES:
            figures = dict(VIRTUAL_FIGURES, **{key: VIRTUAL_FIGURES[key] + 1})
            self.assert_fails(VIRTUAL, key, figures)

    def test_overlapping_allocations_fail(self):
        self.assert_fails([f"map,,0,{PAGE}", "pages,0,0,1", "alloc,1,0,1000", "alloc,2,512,10"], "overlaps")

    def test_an_allocation_on_an_unmapped_page_fails(self):
        self.assert_fails([f"map,,0,{PAGE}", "pages,0,0,1", f"alloc,1,{PAGE - 8},16"], "unmapped page")

    def test_one_physical_page_used_through_two_addresses_fails_where_the_bytes_meet(self):
        lines = [f"map,,0,{PAGE}", "pages,0,0,1", f"map,,{PAGE},{PAGE}", f"pages,0,{PAGE},1", "alloc,1,0,8"]
        self.assert_fails(lines + [f"alloc,2,{PAGE},8"], "that 0 uses")
        # A whole page's request at the second address meets any byte held at the first.
        self.assert_fails(lines + [f"alloc,2,{PAGE},{PAGE}"], "that 0 uses")
        # And a request at the first address meets a whole page held at the second.
        whole = [f"map,,0,{PAGE}", "pages,0,0,1", f"map,,{PAGE},{PAGE}", f"pages,0,{PAGE},1",
                 f"alloc,1,{PAGE},{PAGE}"]
        self.assert_fails(whole + [f"alloc,2,{PAGE - 8},8"], f"that {PAGE} uses")

    def test_one_physical_page_shared_by_two_addresses_where_the_bytes_do_not_meet(self):
        # Physical page 0 at address pages 0 and 1: `1` holds its first bytes through page 0, `2` its second half
        # through page 1; `1` freed, `3` takes bytes under the half through page 0. One physical page committed.
        half = PAGE // 2
        lines = [f"map,,0,{PAGE}", "pages,0,0,1", "alloc,1,0,100", f"map,,{PAGE},{PAGE}", f"pages,0,{PAGE},1",
                 f"alloc,2,{PAGE + half},{half}", "free,1,,", f"alloc,3,{half - 64},64", "free,2,,", "free,3,,"]
        code, output = run(lines, {"allocations": 3, "driver_ops": 2, "peak_committed_bytes": PAGE,
                                   "peak_live_bytes": 100 + half})
        self.assertEqual(code, 0, output)
        # Unmapping the second address under its live allocation fails as on any page.
        self.assert_fails(lines[:6] + [f"unmap,,{PAGE},{PAGE}"], "under a live allocation")

    def test_unmapping_under_a_live_allocation_fails(self):
        lines = [f"map,,0,{PAGE}", "pages,0,0,1", "alloc,1,0,8", f"unmap,,0,{PAGE}"]
        self.assert_fails(lines, "under a live allocation")

    def test_mapping_a_page_twice_fails(self):
        self.assert_fails([f"map,,0,{PAGE}", "pages,0,0,1", f"map,,0,{PAGE}"], "mapped twice")

    def test_destroying_a_block_that_holds_an_allocation_fails(self):
        self.assert_fails(["map,,0,4096", "alloc,1,0,8", "unmap,,0,4096"], "destroyed while it holds")

    def test_an_allocation_across_a_block_end_fails(self):
        self.assert_fails(["map,,0,4096", "alloc,1,4000,200"], "unmapped page")

    def test_freeing_what_is_not_live_fails(self):
        self.assert_fails([f"map,,0,{PAGE}", "pages,0,0,1", "alloc,1,0,8", "free,1,,", "free,1,,"], "not live")

    def test_a_pages_line_without_its_map_fails(self):
        self.assert_fails([f"map,,0,{PAGE}", "pages,0,0,1", f"pages,1,{PAGE},1"], "did not map")

    def test_handles_count_the_work_per_page_and_its_driver_time(self):
        # VIRTUAL maps two new pages in one call and one of them again elsewhere in another, then unmaps one
        # address of that page (still shown at the other). Unmapping the other address too releases its handle.
        code, output = run(VIRTUAL, extra=["--handles"])
        self.assertEqual(code, 0, output)
        self.assertIn("2 created, 3 pages mapped in 2 calls, 1 unmapped in 1 calls, 0 released", output)
        # 3 pages mapped x 29.6 + 2 creates x 12.4 + 1 page unmapped x 20.8 = 134.4 us.
        self.assertIn("0.1 ms of driver time", output)
        sys.path.insert(0, os.path.dirname(SCRIPT))
        from check_placements import handle_time_us

        work = {"map_calls": 2, "mapped": 3, "created": 2, "unmap_calls": 1, "unmapped": 1, "released": 0}
        self.assertAlmostEqual(handle_time_us(work, PAGE), 134.4)
        code, output = run(VIRTUAL + [f"unmap,,{4 * PAGE},{PAGE}"], extra=["--handles"])
        self.assertEqual(code, 0, output)
        self.assertIn("2 created, 3 pages mapped in 2 calls, 2 unmapped in 2 calls, 1 released", output)
        # Pages of 8 MiB release at that size's cost: the same log read with 8 MiB pages is another log, so the
        # cost function is checked directly.
        handles = {"map_calls": 0, "mapped": 0, "created": 0, "unmap_calls": 0, "unmapped": 0, "released": 1}
        self.assertEqual(handle_time_us(handles, 8 << 20), 12.3)
        self.assertEqual(handle_time_us(handles, PAGE), 9.6)

    def test_a_tier_line_sets_the_page_size_from_its_offset_on(self):
        # A first tier of 2 MiB pages, then a tier of 8 MiB pages at 1 GiB: committed bytes count each physical
        # page at its size, allocations and unmaps follow the page size where they are.
        big, start = 4 * PAGE, 1 << 30
        tiered = [
            f"map,,0,{PAGE}",
            "pages,0,0,1",
            "alloc,1,0,100",
            f"tier,1,{start},{big}",
            f"map,,{start},{2 * big}",
            f"pages,{1 << 28},{start},2",
            f"alloc,2,{start + 100},{big + PAGE}",
            "free,1,,",
            f"unmap,,0,{PAGE}",
            "free,2,,",
            f"unmap,,{start + big},{big}",
        ]
        figures = {
            "allocations": 2,
            "driver_ops": 4,
            "peak_committed_bytes": PAGE + 2 * big,
            "peak_live_bytes": 100 + big + PAGE,
            "pages_mapped": 3,
            "pages_created": 3,
            "pages_unmapped": 2,
            "pages_released": 2,
        }
        code, output = run(tiered, figures, extra=["--handles"])
        self.assertEqual(code, 0, output)
        # Each handle at its size's costs: 3 pages mapped x 29.6, created 12.4 (2 MiB) + 2 x 10.6 (8 MiB), 2 pages
        # unmapped x 20.8, released 9.6 (2 MiB) + 12.3 (8 MiB): 185.9 us.
        self.assertIn("0.2 ms of driver time", output)
        # An unmap of part of a tier's page, a tier below the pages before it, or out of order, fails.
        self.assert_fails(tiered[:6] + [f"unmap,,{start},{PAGE}"], "neither a block nor whole pages")
        self.assert_fails([f"tier,1,{start},{PAGE}"], "not a power of two larger")
        self.assert_fails([f"tier,2,{start},{big}"], "tier 2 after 0 tiers")
        self.assert_fails([f"map,,{start},{PAGE}", f"pages,0,{start},1", f"tier,1,{start},{big}"], "over mapped")

    def test_a_malformed_line_fails_and_an_empty_log_checks_out(self):
        self.assert_fails(["map,,x,4096"], "malformed")
        self.assert_fails(["resize,1,0,8"], "unknown event")
        code, output = run([])
        self.assertEqual(code, 0, output)


if __name__ == "__main__":
    unittest.main()
