"""Tests of variant_cv.py on hand-made replay rows.

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variant_cv  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "variant_cv.py")


def rows(met_flags):
    """One row per flag: a trace meeting the goal (overhead 1.03, 10 operations of a limit of 15) or missing it on
    memory (1.06)."""
    return {f"t{index}.pickle.gz": {"name": f"t{index}.pickle.gz", "overhead": 1.03 if flag else 1.06,
                                    "driver_ops": 10, "peak_live_bytes": 100 << 20, "pytorch_overhead": 1.5,
                                    "pytorch_segment_ops": 10, "refused": 0}
            for index, flag in enumerate(met_flags)}


class HeldOutGainTest(unittest.TestCase):
    def test_a_variant_better_everywhere_gains_on_every_split(self):
        # The default misses every fourth trace; the variant meets them all: half the misses fall in each half.
        default = rows([index % 4 != 0 for index in range(40)])
        better = rows([True] * 40)
        gains = variant_cv.held_out_gains(default, [better], splits=50, seed=3)
        self.assertEqual(len(gains), 50)
        self.assertTrue(all(gain > 0 for gain in gains))
        # Each held-out half holds the misses that fell in it: the gains sum to the ten misses, split by chance.
        self.assertTrue(all(gain <= 10 for gain in gains))

    def test_a_variant_no_better_than_the_default_is_never_chosen_over_it(self):
        default = rows([index % 2 == 0 for index in range(20)])
        same = rows([index % 2 == 0 for index in range(20)])
        worse = rows([index % 4 == 0 for index in range(20)])
        self.assertEqual(variant_cv.held_out_gains(default, [same, worse], splits=30, seed=1), [0] * 30)

    def test_a_variant_that_only_swaps_traces_loses_where_it_was_not_chosen(self):
        # A variant that meets 10 traces the default misses and misses 10 it meets: it is chosen only on a half
        # where more of its gains than its losses fell, so the other half holds more losses than gains.
        flags = [index < 20 for index in range(40)]
        default = rows(flags)
        swapped = rows([not flag if index % 2 == 0 else flag for index, flag in enumerate(flags)])
        gains = variant_cv.held_out_gains(default, [swapped], splits=400, seed=2)
        self.assertTrue(all(gain <= 0 for gain in gains))
        self.assertTrue(any(gain < 0 for gain in gains))

    def test_sign_test(self):
        self.assertAlmostEqual(variant_cv.sign_test(5, 0), 1 / 32)
        self.assertAlmostEqual(variant_cv.sign_test(8, 5), 2380 / 8192)  # 8 or more heads in 13 tosses
        self.assertEqual(variant_cv.sign_test(0, 0), 1.0)
        self.assertEqual(variant_cv.sign_test(0, 3), 1.0)
        self.assertLess(variant_cv.sign_test(3, 0), variant_cv.sign_test(3, 1))

    def test_files_with_other_traces_are_refused(self):
        with tempfile.TemporaryDirectory() as folder:
            paths = []
            for name, table in (("default", rows([True, False])), ("other", rows([True, False, True]))):
                path = os.path.join(folder, f"{name}.json")
                with open(path, "w") as file:
                    json.dump({"traces": list(table.values())}, file)
                paths.append(path)
            result = subprocess.run([sys.executable, SCRIPT] + paths, capture_output=True, text=True)
            self.assertEqual(result.returncode, 1)
            self.assertIn("does not hold the same traces", result.stderr)
            result = subprocess.run([sys.executable, SCRIPT, paths[0], paths[0], "--splits", "5"],
                                    capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("met on 1 of 2 (0 gained, 0 lost)\n", result.stdout)
            self.assertIn("met on 1 of 2 (0 gained, 0 lost, sign test 1)", result.stdout)
            self.assertIn("over 5 splits: mean 0.00", result.stdout)
            result = subprocess.run([sys.executable, SCRIPT, paths[0], paths[0], "--splits", "0"],
                                    capture_output=True, text=True)
            self.assertEqual(result.returncode, 2)
            self.assertIn("--splits must be at least 1", result.stderr)


if __name__ == "__main__":
    unittest.main()
