"""Tests of pytorch_segments.py on a small hand-made snapshot, plain and gzip.

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""

import gzip
import lzma
import os
import pickle
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch_segments.py")

# Two devices; allocations and frees around the segment operations, which are the only lines written, in order,
# with the second device's addresses keyed apart.
SNAPSHOT = {
    "segments": [],
    "device_traces": [
        [
            {"action": "segment_alloc", "addr": 4096, "size": 2 << 20, "stream": 0},
            {"action": "alloc", "addr": 4096, "size": 512, "stream": 0},
            {"action": "free_requested", "addr": 4096, "size": 512, "stream": 0},
            {"action": "free_completed", "addr": 4096, "size": 512, "stream": 0},
            {"action": "segment_free", "addr": 4096, "size": 2 << 20, "stream": 0},
        ],
        [
            {"action": "segment_map", "addr": 4096, "size": 20 << 20, "stream": 0},
            {"action": "snapshot", "addr": 0, "size": 0, "stream": 0},
            {"action": "segment_unmap", "addr": 4096, "size": 20 << 20, "stream": 0},
        ],
    ],
}

EXPECTED = [
    f"segment_alloc,4096,{2 << 20}",
    f"segment_free,4096,{2 << 20}",
    f"segment_map,{(1 << 56) | 4096},{20 << 20}",
    f"segment_unmap,{(1 << 56) | 4096},{20 << 20}",
]


class PyTorchSegments(unittest.TestCase):
    def extract(self, opener, name):
        with tempfile.TemporaryDirectory() as folder:
            trace, out = os.path.join(folder, name), os.path.join(folder, "segments.csv")
            with opener(trace, "wb") as file:
                pickle.dump(SNAPSHOT, file)
            result = subprocess.run(
                [sys.executable, SCRIPT, trace, "--out", out], capture_output=True, text=True, check=True
            )
            with open(out) as file:
                return file.read().splitlines(), result.stderr

    def test_writes_the_segment_operations_in_order_with_devices_apart(self):
        lines, stderr = self.extract(open, "trace.pickle")
        self.assertEqual(lines, EXPECTED)
        self.assertIn("4 segment operations", stderr)

    def test_reads_gzip_snapshots(self):
        lines, _ = self.extract(gzip.open, "trace.pickle.gz")
        self.assertEqual(lines, EXPECTED)

    def test_reads_xz_snapshots(self):
        lines, _ = self.extract(lzma.open, "trace.pickle.xz")
        self.assertEqual(lines, EXPECTED)


if __name__ == "__main__":
    unittest.main()
