"""Tests of goal_table.py on hand-made replay rows.

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import goal_table  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "goal_table.py")


def row(name, overhead, ops, pytorch_ops, pytorch_overhead=1.5, live_mib=100, refused=0):
    return {"name": f"{name}.pickle.gz", "overhead": overhead, "driver_ops": ops, "peak_live_bytes": live_mib << 20,
            "pytorch_overhead": pytorch_overhead, "pytorch_segment_ops": pytorch_ops, "refused": refused}


# At the memory goal and at the operation limit (15 of 10 × 1.5); one over each; 7 of 5 is within 7.5 rounded down.
DEFAULT = [
    row("at_both_edges", 1.05, 15, 10),
    row("over_memory", 1.0501, 3, 10),
    row("over_ops", 1.01, 8, 5),
    row("rounded_limit", 1.02, 7, 5),
]
BLOCKS = [
    row("at_both_edges", 1.0504, 4, 10),  # 1.050 to three decimals: counted at the goal
    row("over_memory", 1.40, 12, 10, pytorch_overhead=1.3),
    row("over_ops", 1.10, 8, 5),
    row("rounded_limit", 2.0, 9, 5, refused=2),  # refused: left out of the figures, still checked for calls
]


class GoalTableTest(unittest.TestCase):
    def test_limits_and_goal(self):
        self.assertEqual([goal_table.limit(r) for r in DEFAULT], [15, 15, 7, 7])
        self.assertEqual([goal_table.met(r) for r in DEFAULT], [True, False, False, True])

    def test_table_rows_and_summary(self):
        lines = goal_table.table(DEFAULT, BLOCKS)
        self.assertEqual(len(lines), 2 + len(DEFAULT) + 2)
        self.assertEqual(lines[2], "| at_both_edges | 100 MiB | 1.500 / 10 | 1.050 / 15 | 15 | met | 1.050 / 4 |")
        self.assertIn("| **not met** | 1.400 / 12 |", lines[3])
        self.assertTrue(lines[4].endswith("| **not met** | 1.100 / 8 (over) |"), lines[4])
        self.assertTrue(lines[5].endswith("| met | 2.000 / 9 (over), 2 refused |"), lines[5])
        summary = lines[-1]
        self.assertTrue(summary.startswith("memory and operations met on 2 of 4; block mode on 3 of 4"), summary)
        # Over the three served: overheads 1.0504, 1.40, 1.10 (mean 3.5504 / 3).
        self.assertIn("overhead median 1.100, mean 1.183 (PyTorch median 1.500)", summary)
        self.assertIn("at most 1.05 on 1,", summary)
        # Both at most PyTorch's: at_both_edges (1.0504 <= 1.5, 4 <= 10) only.
        self.assertIn("both at most PyTorch's on 1", summary)
        self.assertTrue(summary.endswith("over the call limit: over_ops, rounded_limit"), summary)

    def test_without_blocks(self):
        lines = goal_table.table(DEFAULT)
        self.assertNotIn("block mode", lines[0])
        self.assertEqual(lines[-1], "memory and operations met on 2 of 4")

    def test_command_line_and_bad_input(self):
        with tempfile.TemporaryDirectory() as tmp:
            default, blocks, broken = (os.path.join(tmp, n) for n in ("d.json", "b.json", "x.json"))
            for path, rows in ((default, DEFAULT), (blocks, BLOCKS)):
                with open(path, "w") as file:
                    json.dump({"traces": rows}, file)
            with open(broken, "w") as file:
                json.dump({"traces": [{"name": "no_figures"}]}, file)
            done = subprocess.run([sys.executable, SCRIPT, default, "--blocks", blocks], capture_output=True,
                                  text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(done.stdout.splitlines(), goal_table.table(DEFAULT, BLOCKS))
            failed = subprocess.run([sys.executable, SCRIPT, broken], capture_output=True, text=True)
            self.assertEqual(failed.returncode, 1)
            self.assertIn("has no 'overhead'", failed.stderr)


if __name__ == "__main__":
    unittest.main()
