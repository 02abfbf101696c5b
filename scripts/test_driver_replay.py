"""Tests of benches/cuda/driver_replay.c, built against the stand-in driver in benches/cuda/stub (no GPU needed):
what it asks of the driver for a placement log and for PyTorch's segment operations, and that the stand-in, which
refuses what the H200's driver refused, accepts it. Needs gcc; says it skipped without it.

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA = os.path.join(ROOT, "benches", "cuda")
CHECKER = os.path.join(ROOT, "scripts", "check_placements.py")
PAGE = 2 << 20

# Two new pages mapped in one call, the second shown again at a fresh address in another, then its first address
# unmapped (the page lives on at the other), and a page mapped and unmapped alone (created, then released).
LOG = [
    "event,id,offset,size",
    f"map,,0,{2 * PAGE}",
    "pages,0,0,2",
    "alloc,1,0,1000",
    f"map,,{4 * PAGE},{PAGE}",
    f"pages,1,{4 * PAGE},1",
    f"alloc,2,{4 * PAGE},4096",
    f"unmap,,{PAGE},{PAGE}",
    "free,1,,",
    "free,2,,",
    f"map,,{8 * PAGE},{PAGE}",
    f"pages,2,{8 * PAGE},1",
    f"unmap,,{8 * PAGE},{PAGE}",
]


@unittest.skipIf(shutil.which("gcc") is None, "no gcc")
class DriverReplay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp()
        cls.binary = os.path.join(cls.folder, "driver_replay")
        sources = [os.path.join(CUDA, "driver_replay.c"), os.path.join(CUDA, "stub", "stub_cuda.c")]
        include = "-I" + os.path.join(CUDA, "stub")
        subprocess.run(["gcc", "-O2", "-std=c11", include, *sources, "-o", cls.binary], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def write(self, name, lines):
        path = os.path.join(self.folder, name)
        with open(path, "w") as file:
            file.write("\n".join(lines) + "\n")
        return path

    def replay(self, *args):
        return subprocess.run([self.binary, *args], capture_output=True, text=True)

    @staticmethod
    def figures(line):
        return {key: float(value) for key, value in re.findall(r"(\w+) ([\d.]+)", line)}

    def test_a_placement_log_becomes_a_handle_per_page(self):
        log = self.write("log.csv", LOG)
        result = self.replay("heap", log)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), 2, result.stdout)
        figures = self.figures(lines[0])
        counts = {key: int(figures[key]) for key in ("ops", "created", "released", "mapped", "unmapped", "mappings")}
        self.assertEqual(counts, {"ops": 5, "created": 3, "released": 1, "mapped": 4, "unmapped": 2, "mappings": 4})
        self.assertTrue(lines[1].startswith("all heap ops 5 created 3 released 1"), lines[1])
        # The same work as the checker counts it from the same log.
        checked = subprocess.run([sys.executable, CHECKER, log, "--handles"], capture_output=True, text=True)
        self.assertIn("3 created, 4 pages mapped in 3 calls, 2 unmapped in 2 calls, 1 released", checked.stdout)

    def test_larger_pages_map_whole_handles_of_their_size(self):
        big = 4 * PAGE
        lines = [f"map,,0,{2 * big}", "pages,0,0,2", f"unmap,,{big},{big}"]
        result = self.replay("heap", "--page-size", str(big), self.write("big.csv", lines))
        self.assertEqual(result.returncode, 0, result.stderr)
        figures = self.figures(result.stdout.splitlines()[0])
        self.assertEqual((figures["created"], figures["mapped"], figures["released"]), (2, 2, 1))

    def test_a_tier_maps_handles_of_its_page_size(self):
        big, start = 16 * PAGE, 64 * PAGE
        lines = [
            "event,id,offset,size",
            f"map,,0,{PAGE}",
            "pages,0,0,1",
            f"tier,1,{start},{big}",
            f"map,,{start},{2 * big}",
            f"pages,{1 << 28},{start},2",
            f"unmap,,{start},{big}",
            f"unmap,,0,{PAGE}",
        ]
        log = self.write("tiers.csv", lines)
        result = self.replay("heap", log)
        self.assertEqual(result.returncode, 0, result.stderr)
        figures = self.figures(result.stdout.splitlines()[0])
        counts = {key: int(figures[key]) for key in ("ops", "created", "released", "mapped", "unmapped")}
        self.assertEqual(counts, {"ops": 4, "created": 3, "released": 2, "mapped": 3, "unmapped": 2})
        checked = subprocess.run([sys.executable, CHECKER, log, "--handles"], capture_output=True, text=True)
        self.assertIn("3 created, 3 pages mapped in 2 calls, 2 unmapped in 2 calls, 2 released", checked.stdout)
        # A physical page of the first tier shown in the second's pages is refused.
        bad = lines[:4] + [f"map,,{start},{big}", f"pages,5,{start},1"]
        result = self.replay("heap", self.write("mixed.csv", bad))
        self.assertEqual(result.returncode, 1)
        self.assertIn("another size", result.stderr)

    def test_segment_operations_are_allocations_and_expandable_mappings(self):
        lines = [
            f"segment_alloc,4096,{20 << 20}",
            f"segment_alloc,{1 << 40},{PAGE}",
            f"segment_free,4096,{20 << 20}",
            f"segment_free,999,{PAGE}",  # from before the trace: nothing to free
            f"segment_map,{1 << 50},{2 * PAGE}",
            f"segment_unmap,{1 << 50},{2 * PAGE}",
        ]
        result = self.replay("segments", self.write("segments.csv", lines))
        self.assertEqual(result.returncode, 0, result.stderr)
        figures = self.figures(result.stdout.splitlines()[0])
        counts = {key: int(figures[key]) for key in ("ops", "created", "released", "mapped", "unmapped")}
        self.assertEqual(counts, {"ops": 5, "created": 3, "released": 2, "mapped": 2, "unmapped": 2})

    def test_what_the_driver_refuses_stops_the_replay_naming_the_line(self):
        result = self.replay("heap", self.write("bad.csv", [f"map,,0,{PAGE}", "pages,0,0,1", f"unmap,,{PAGE},{PAGE}"]))
        self.assertEqual(result.returncode, 1)
        self.assertIn("bad.csv: line 3", result.stderr)
        orphan = [f"map,,0,{PAGE}", "pages,0,0,1", "alloc,1,0,8", f"pages,1,{PAGE},1"]
        result = self.replay("heap", self.write("orphan.csv", orphan))
        self.assertEqual(result.returncode, 1)
        self.assertIn("pages without a map", result.stderr)
        self.assertEqual(self.replay("copy", "x").returncode, 2)


if shutil.which("gcc") is None:
    print("test_driver_replay: skipped (no gcc)", file=sys.stderr)

if __name__ == "__main__":
    unittest.main()
