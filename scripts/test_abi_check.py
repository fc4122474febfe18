#!/usr/bin/env python3
"""Tests of scripts/abi_check.py: which version bumps allow a breaking change.

Each case writes a small checkout (Cargo.toml, include/sicore.h and the
record) to a temporary directory and runs the check's ``main`` on it, with
the library's exported symbols taken as exactly the header's functions.
Run with ``python3 scripts/test_abi_check.py`` (scripts/test.sh does).
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import abi_check  # noqa: E402

HEADER_V1 = """
typedef struct sicore_callbacks {
  void *user_data;
} sicore_callbacks;
int sicore_a(int x);
"""

# The table gained a leading field: a layout change, so a breaking one.
HEADER_V2 = """
typedef struct sicore_callbacks {
  size_t struct_size;
  void *user_data;
} sicore_callbacks;
int sicore_a(int x);
"""

# Only a function added: compatible.
HEADER_ADDED = HEADER_V1 + "const char *sicore_b(int status);\n"


class AbiCheckTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        root = Path(self.dir.name)
        (root / "include").mkdir()
        (root / "abi").mkdir()
        self.root = root
        self.saved = (abi_check.ROOT, abi_check.RECORD, abi_check.HEADER,
                      abi_check.exported_symbols)
        abi_check.ROOT = root
        abi_check.RECORD = root / "abi" / "sicore.abi"
        abi_check.HEADER = root / "include" / "sicore.h"
        abi_check.exported_symbols = lambda _library: {
            key.split()[1] for key in abi_check.header_entries() if key.startswith("function ")
        }

    def tearDown(self) -> None:
        (abi_check.ROOT, abi_check.RECORD, abi_check.HEADER,
         abi_check.exported_symbols) = self.saved
        self.dir.cleanup()

    def checkout(self, version: str, header: str) -> None:
        (self.root / "Cargo.toml").write_text(f'[package]\nname = "x"\nversion = "{version}"\n')
        (self.root / "include" / "sicore.h").write_text(header)

    def run_check(self, *argv: str) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rc = abi_check.main(["--library", "unused.so", *argv])
        return rc, out.getvalue()

    def record(self, version: str, header: str) -> None:
        self.checkout(version, header)
        rc, out = self.run_check("--update")
        self.assertEqual(rc, 0, out)

    def test_abi_version_is_the_minor_while_the_major_is_zero(self) -> None:
        self.assertEqual(abi_check.abi_version("0.1.0"), (0, 1))
        self.assertEqual(abi_check.abi_version("0.2.7"), (0, 2))
        self.assertEqual(abi_check.abi_version("0.3.0-rc.1"), (0, 3))
        self.assertEqual(abi_check.abi_version("0.0.4"), (0, 0, 4))
        self.assertEqual(abi_check.abi_version("1.0.0"), (1,))
        self.assertEqual(abi_check.abi_version("1.4.2"), (1,))
        self.assertLess(abi_check.abi_version("0.9.0"), abi_check.abi_version("1.0.0"))

    def test_the_record_names_its_abi_version(self) -> None:
        self.record("0.2.0", HEADER_V1)
        text = abi_check.RECORD.read_text()
        self.assertIn("# abi version 0.2\n", text)
        self.assertIn("# taken at version 0.2.0\n", text)

    def test_unchanged_passes(self) -> None:
        self.record("0.1.0", HEADER_V1)
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)
        self.assertIn("present and unchanged, 0 added", out)

    def test_a_change_with_a_patch_bump_at_zero_fails(self) -> None:
        self.record("0.1.0", HEADER_V1)
        self.checkout("0.1.1", HEADER_V2)
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn("changed: struct sicore_callbacks", out)

    def test_a_change_with_a_minor_bump_at_zero_passes(self) -> None:
        self.record("0.1.0", HEADER_V1)
        self.checkout("0.2.0", HEADER_V2)
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)
        self.assertIn("ABI version 0.1 -> 0.2: incompatible changes allowed", out)

    def test_a_change_with_a_minor_bump_after_one_fails(self) -> None:
        self.record("1.0.0", HEADER_V1)
        self.checkout("1.1.0", HEADER_V2)
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)

    def test_a_change_with_a_major_bump_passes(self) -> None:
        self.record("1.3.0", HEADER_V1)
        self.checkout("2.0.0", HEADER_V2)
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)
        self.assertIn("ABI version 1 -> 2", out)

    def test_an_addition_needs_no_bump(self) -> None:
        self.record("0.2.0", HEADER_V1)
        self.checkout("0.2.1", HEADER_ADDED)
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)
        self.assertIn("added (compatible): function sicore_b", out)

    def test_a_removal_with_a_patch_bump_fails(self) -> None:
        self.record("0.2.0", HEADER_ADDED)
        self.checkout("0.2.1", HEADER_V1)
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn("removed: function sicore_b", out)

    def test_a_record_of_the_older_format_reads_its_minor(self) -> None:
        # Records written before the ABI version line: `# major 0` only.
        self.record("0.1.0", HEADER_V1)
        text = abi_check.RECORD.read_text().replace("# abi version 0.1\n", "# major 0\n")
        abi_check.RECORD.write_text(text)
        self.checkout("0.1.3", HEADER_V2)
        self.assertEqual(self.run_check()[0], 1)
        self.checkout("0.2.0", HEADER_V2)
        self.assertEqual(self.run_check()[0], 0)


if __name__ == "__main__":
    unittest.main()
