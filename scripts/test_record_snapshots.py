"""Tests of what record_snapshots.py writes, apart from the recording itself (no torch needed)."""

import unittest

import record_snapshots


class Opaque:
    def __str__(self):
        return "opaque"


class BuiltinOnlyTest(unittest.TestCase):
    def test_frames_and_time_stamps_are_dropped_at_every_depth(self):
        snapshot = {
            "segments": [{"address": 4096, "blocks": [{"size": 512, "frames": [{"line": 1}], "time_us": 7}]}],
            "device_traces": [[{"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 123,
                                "frames": []}]],
        }
        self.assertEqual(record_snapshots.builtin_only(snapshot), {
            "segments": [{"address": 4096, "blocks": [{"size": 512}]}],
            "device_traces": [[{"action": "alloc", "addr": 4096, "size": 512, "stream": 0}]],
        })

    def test_other_values_keep_their_builtin_types_and_the_rest_becomes_strings(self):
        value = {"t": (1, 2.5, None, True, b"x"), "o": Opaque(), "s": "kept"}
        self.assertEqual(record_snapshots.builtin_only(value),
                         {"t": (1, 2.5, None, True, b"x"), "o": "opaque", "s": "kept"})


if __name__ == "__main__":
    unittest.main()
