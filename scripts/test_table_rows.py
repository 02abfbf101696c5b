"""Tests of table_rows.py: rows of `memcarve replay --policy all` put in name order into the all-traces table."""

import os
import subprocess
import sys
import tempfile
import unittest

import table_rows

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "table_rows.py")

# A table whose name column is 14 wide (`policy` at 14), as docs/BENCHMARKS.md has it at 43.
DOCUMENT = """# Benchmarks

Some prose, and a table of another kind:

```text
trace   other
x       1
```

```text
trace         policy   overhead
b.pickle.xz   vmm      1.040
b.pickle.xz   blocks   1.200
d.pickle.xz   vmm      1.010
d.pickle.xz   blocks   1.300
shared.gz     vmm      1.033
shared.gz     blocks   1.297
```

More prose.
"""

# The replay pads names to its own longest (`policy` at 12 here).
ROWS = """trace       policy   overhead
c.pickle.xz vmm      1.020
c.pickle.xz blocks   1.100
a.pickle.xz vmm      1.050
a.pickle.xz blocks   1.400
e.pickle.xz vmm      1.001
"""


class TableRows(unittest.TestCase):
    def test_rows_go_in_name_order_before_the_shared_trace_padded_to_the_table(self):
        rows = table_rows.parse_rows(ROWS)
        self.assertEqual(list(rows), ["c.pickle.xz", "a.pickle.xz", "e.pickle.xz"])
        updated = table_rows.insert_rows(DOCUMENT, rows, last=("shared.gz",))
        table = updated.split("```text\ntrace         policy   overhead\n")[1].split("\n```")[0].split("\n")
        self.assertEqual(table, [
            "a.pickle.xz   vmm      1.050",
            "a.pickle.xz   blocks   1.400",
            "b.pickle.xz   vmm      1.040",
            "b.pickle.xz   blocks   1.200",
            "c.pickle.xz   vmm      1.020",
            "c.pickle.xz   blocks   1.100",
            "d.pickle.xz   vmm      1.010",
            "d.pickle.xz   blocks   1.300",
            "e.pickle.xz   vmm      1.001",
            "shared.gz     vmm      1.033",
            "shared.gz     blocks   1.297",
        ])
        # Nothing else changes: the other block and the prose.
        self.assertTrue(updated.startswith(DOCUMENT.split("```text\ntrace         policy")[0]))
        self.assertTrue(updated.endswith("```\n\nMore prose.\n"))

    def test_a_trace_already_in_the_table_and_rows_without_a_header_are_errors(self):
        with self.assertRaisesRegex(table_rows.TableError, "b.pickle.xz is in the table already"):
            table_rows.insert_rows(DOCUMENT, table_rows.parse_rows("trace       policy\nb.pickle.xz vmm\n"))
        with self.assertRaisesRegex(table_rows.TableError, "header"):
            table_rows.parse_rows("a.pickle.xz vmm 1.0\n")
        with self.assertRaisesRegex(table_rows.TableError, "no rows"):
            table_rows.parse_rows("trace       policy\n")
        with self.assertRaisesRegex(table_rows.TableError, "line up"):
            table_rows.parse_rows("trace       policy\na.pickle.xz  vmm\n")
        with self.assertRaisesRegex(table_rows.TableError, "no all-traces table"):
            table_rows.insert_rows("no table here\n", table_rows.parse_rows(ROWS))

    def test_the_command_rewrites_the_file_or_leaves_it_as_it_was(self):
        with tempfile.TemporaryDirectory() as folder:
            document, rows = os.path.join(folder, "BENCHMARKS.md"), os.path.join(folder, "rows.txt")
            with open(document, "w") as file:
                file.write(DOCUMENT)
            with open(rows, "w") as file:
                file.write(ROWS)
            args = [sys.executable, SCRIPT, document, rows, "--last", "shared.gz"]
            result = subprocess.run(args, capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("5 rows of 3 traces added", result.stdout)
            with open(document) as file:
                once = file.read()
            self.assertIn("e.pickle.xz   vmm      1.001\nshared.gz", once)
            # Again: every trace is there already; an error, and the file stays as it was.
            result = subprocess.run(args, capture_output=True, text=True)
            self.assertEqual(result.returncode, 1)
            self.assertIn("is in the table already", result.stderr)
            with open(document) as file:
                self.assertEqual(file.read(), once)


if __name__ == "__main__":
    unittest.main()
