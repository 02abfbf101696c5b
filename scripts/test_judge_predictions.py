"""Tests of judge_predictions.py on hand-made replay rows.

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judge_predictions  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "judge_predictions.py")


def row(name, overhead, ops, pytorch_ops=20, refused=0):
    """A replay row; the operation limit is 1.5 × `pytorch_ops` (30 by default)."""
    return {"name": f"{name}.pickle.gz", "overhead": overhead, "driver_ops": ops, "peak_live_bytes": 100 << 20,
            "pytorch_overhead": 1.3, "pytorch_segment_ops": pytorch_ops, "refused": refused}


def verdict(default, candidate, **kwargs):
    lines = judge_predictions.judge(judge_predictions.paired(default, candidate), **kwargs)
    return lines, lines[-1]


class JudgeTest(unittest.TestCase):
    def test_a_candidate_that_gains_loses_nothing_and_saves_calls_is_adopted(self):
        default = [row("a", 1.03, 25), row("b", 1.04, 33), row("c", 1.02, 10)]
        candidate = [row("a", 1.04, 20), row("b", 1.045, 29), row("c", 1.02, 10)]
        lines, last = verdict(default, candidate)
        self.assertEqual(last, "verdict: adopt")
        self.assertIn("1. no loss: holds (met 2 → 3 of 3; lost: none; gained: b)", lines)
        self.assertIn("2. fewer operations: holds (total 68 → 59; 2 traces with fewer, 0 with more)", lines)
        self.assertIn("| b | 30 | 1.040 / 33 | 1.045 / 29 | not met → met |", lines)

    def test_one_loss_keeps_the_default_whatever_the_gains(self):
        default = [row("a", 1.03, 25), row("b", 1.04, 33), row("c", 1.06, 33), row("d", 1.048, 10)]
        # a, b and c gain or keep; d goes over 1.05 ×.
        candidate = [row("a", 1.03, 20), row("b", 1.04, 29), row("c", 1.04, 29), row("d", 1.051, 9)]
        lines, last = verdict(default, candidate)
        self.assertEqual(last, "verdict: keep the default")
        self.assertIn("1. no loss: fails (met 2 → 3 of 4; lost: d; gained: b, c)", lines)

    def test_operations_must_fall_in_total_and_on_more_traces_than_they_rise(self):
        default = [row("a", 1.03, 10), row("b", 1.03, 10), row("c", 1.03, 10)]
        # The total falls (30 → 27) but two traces rise against one that falls: prediction 2 fails.
        candidate = [row("a", 1.03, 11), row("b", 1.03, 11), row("c", 1.03, 5)]
        lines, last = verdict(default, candidate)
        self.assertEqual(last, "verdict: keep the default")
        self.assertIn("2. fewer operations: fails (total 30 → 27; 1 traces with fewer, 2 with more)", lines)
        # Equal operations everywhere is not fewer either.
        _, last = verdict(default, default)
        self.assertEqual(last, "verdict: keep the default")

    def test_an_overhead_rising_past_the_bound_is_reported_but_does_not_decide(self):
        default = [row("a", 1.00, 25), row("b", 1.03, 20)]
        candidate = [row("a", 1.035, 20), row("b", 1.03, 20)]
        lines, last = verdict(default, candidate)
        self.assertIn("3. overheads stay near: fails (risen by more than 0.03: a 1.000 → 1.035)", lines)
        self.assertEqual(last, "verdict: adopt")
        lines, _ = verdict(default, candidate, max_rise=0.04)
        self.assertIn("3. overheads stay near: holds (risen by more than 0.04: none)", lines)

    def test_a_memory_candidate_is_judged_by_its_overheads(self):
        default = [row("a", 1.075, 9), row("b", 1.042, 15), row("c", 1.03, 10), row("d", 1.04, 20)]
        # a gains (lower memory for two operations more), d's overhead falls, c's rises a little: adopted.
        candidate = [row("a", 1.031, 11), row("b", 1.042, 15), row("c", 1.031, 10), row("d", 1.035, 20)]
        lines, last = verdict(default, candidate, predictions="memory")
        self.assertEqual(last, "verdict: adopt")
        self.assertIn("1. no loss: holds (met 3 → 4 of 4; lost: none; gained: a)", lines)
        self.assertIn("2. lower overheads: holds (sum 4.187 → 4.139; 2 traces lower, 1 higher)", lines)
        self.assertIn("3. operations, reported: total 54 → 56; 0 traces with fewer, 1 with more; more: a 9 → 11 "
                      "(limit 30)", lines)
        # The same candidate judged for operations fails: it saves none.
        _, last = verdict(default, candidate)
        self.assertEqual(last, "verdict: keep the default")
        # b lost (1.042 → 1.062 ×, as bart_small_greedy_summarize under the rule): kept out, whatever the rest.
        lost = candidate[:1] + [row("b", 1.062, 23)] + candidate[2:]
        lines, last = verdict(default, lost, predictions="memory")
        self.assertEqual(last, "verdict: keep the default")
        self.assertIn("1. no loss: fails (met 3 → 3 of 4; lost: b; gained: a)", lines)
        # Overheads that fall on as many traces as they rise, or on fewer, or not in sum, fail prediction 2.
        even = [row("a", 1.07, 9), row("b", 1.047, 15), row("c", 1.03, 10), row("d", 1.04, 20)]
        lines, last = verdict(default, even, predictions="memory")
        self.assertEqual(last, "verdict: keep the default")
        self.assertIn("2. lower overheads: fails (sum 4.187 → 4.187; 1 traces lower, 1 higher)", lines)
        base = [row("a", 1.03, 10), row("b", 1.03, 10), row("c", 1.03, 10)]
        one_big_fall = [row("a", 1.0, 10), row("b", 1.031, 10), row("c", 1.031, 10)]
        lines, _ = verdict(base, one_big_fall, predictions="memory")
        self.assertIn("2. lower overheads: fails (sum 3.090 → 3.062; 1 traces lower, 2 higher)", lines)
        # Equal sums but for a float's last bits are equal: 1.03 + 1.04 + 1.03 against 1.02 + 1.03 + 1.05.
        lines, _ = verdict([row("a", 1.03, 10), row("b", 1.04, 10), row("c", 1.03, 10)],
                           [row("a", 1.02, 10), row("b", 1.03, 10), row("c", 1.05, 10)], predictions="memory")
        self.assertIn("2. lower overheads: fails (sum 3.100 → 3.100; 2 traces lower, 1 higher)", lines)
        one_big_rise = [row("a", 1.029, 10), row("b", 1.029, 10), row("c", 1.045, 10)]
        lines, _ = verdict(base, one_big_rise, predictions="memory")
        self.assertIn("2. lower overheads: fails (sum 3.090 → 3.103; 2 traces lower, 1 higher)", lines)

    def test_files_that_do_not_pair_up_are_errors(self):
        a, b = row("a", 1.03, 10), row("b", 1.03, 10)
        for default, candidate, expect, says in [
            ([a, b], [a], None, "different traces: b"),
            ([a, a], [a, a], None, "appears twice"),
            ([a], [a], ["a", "b"], "missing ['b']"),
            ([a, b], [a, b], ["a"], "unexpected ['b']"),
            ([a], [row("a", 1.03, 10, refused=1)], None, "refused allocations in a"),
            ([], [], None, "no traces"),
        ]:
            with self.assertRaises(judge_predictions.JudgeError) as caught:
                judge_predictions.paired(default, candidate, expect)
            self.assertIn(says, str(caught.exception))


class CommandLineTest(unittest.TestCase):
    def run_script(self, default, candidate, *extra):
        with tempfile.TemporaryDirectory() as folder:
            paths = []
            for index, rows in enumerate((default, candidate)):
                path = os.path.join(folder, f"{index}.json")
                with open(path, "w") as file:
                    json.dump({"traces": rows}, file)
                paths.append(path)
            return subprocess.run([sys.executable, SCRIPT, *paths, *extra], capture_output=True, text=True)

    def test_the_last_line_is_the_verdict(self):
        done = self.run_script([row("a", 1.03, 25)], [row("a", 1.03, 20)], "--expect", "a")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip().splitlines()[-1], "verdict: adopt")

    def test_the_predictions_are_chosen_by_name(self):
        default, candidate = [row("a", 1.04, 20)], [row("a", 1.03, 22)]
        done = self.run_script(default, candidate, "--predictions", "memory")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("2. lower overheads: holds", done.stdout)
        self.assertEqual(done.stdout.strip().splitlines()[-1], "verdict: adopt")
        done = self.run_script(default, candidate)
        self.assertEqual(done.stdout.strip().splitlines()[-1], "verdict: keep the default")
        done = self.run_script(default, candidate, "--predictions", "speed")
        self.assertEqual(done.returncode, 2)
        self.assertIn("invalid choice", done.stderr)

    def test_an_unexpected_batch_is_an_error_on_stderr(self):
        done = self.run_script([row("a", 1.03, 25)], [row("a", 1.03, 20)], "--expect", "b")
        self.assertEqual(done.returncode, 1)
        self.assertIn("not the expected traces", done.stderr)
        self.assertEqual(done.stdout, "")


if __name__ == "__main__":
    unittest.main()
