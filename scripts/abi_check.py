#!/usr/bin/env python3
"""Check the C ABI of libsicore against the committed record, abi/sicore.abi.

The record lists every exported function (from ``nm -D`` of the built
library) with its prototype in include/sicore.h, every enumerator with its
value, and every struct and function-pointer type of the header, all
normalized to one line each, under the ABI version they belong to.

- A removed or changed entry fails the check, unless Cargo.toml's ABI
  version is above the record's: that is what a major bump is for. The ABI
  version is the major version, and while that is 0 the major and minor
  (``0.1``, ``0.2``), as in Cargo's semver rules: a 0.x minor bump is the
  breaking bump, and the soname carries it (``libsicore.so.0.2``).
- Added functions, enumerators and types are compatible: they are reported,
  and the check passes. Refresh the record (and commit it) with

      python3 scripts/abi_check.py --update

  which CI never runs, so a merge that adds functions keeps passing and the
  additions are listed until someone refreshes.
- Every exported symbol must be declared in the header, and every function
  the header declares must be exported.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "abi" / "sicore.abi"
HEADER = ROOT / "include" / "sicore.h"


def abi_version(version: str) -> tuple[int, ...]:
    """The part of a version that changes with a breaking change, as Cargo's
    semver rules and cargo-c's soname have it: the major version; while
    that is 0, the major and minor; for 0.0.x all three."""
    parts = [int(p) for p in version.split("+")[0].split("-")[0].split(".")]
    parts += [0] * (3 - len(parts))
    if parts[0] > 0:
        return (parts[0],)
    if parts[1] > 0:
        return (0, parts[1])
    return tuple(parts[:3])


def abi_text(abi: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in abi)


def cargo_version() -> tuple[tuple[int, ...], str]:
    text = (ROOT / "Cargo.toml").read_text()
    version = re.search(r'^version\s*=\s*"([^"]+)"', text, re.MULTILINE)
    if version is None:
        sys.exit("abi_check: no version in Cargo.toml")
    return abi_version(version.group(1)), version.group(1)


def exported_symbols(library: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(library)],
                         check=True, capture_output=True, text=True).stdout
    return {parts[2] for parts in (line.split() for line in out.splitlines())
            if len(parts) == 3 and parts[1] == "T"}


def without_parameter_names(decl: str) -> str:
    """Drop parameter names from a prototype: renaming one changes no ABI."""
    head, _, params = decl.rpartition("(")
    kept = []
    for param in params.rstrip(")").split(","):
        param = param.strip()
        if len(param.replace("*", " * ").split()) > 1:
            param = re.sub(r"\s*\b\w+$", "", param)
        kept.append(param)
    return f"{head}({', '.join(kept)})"


def header_entries() -> dict[str, str]:
    """Map ``kind name`` to the normalized declaration, from the header."""
    text = HEADER.read_text()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#.*$", " ", text, flags=re.MULTILINE)
    text = re.sub(r'extern\s+"C"\s*\{', " ", text)
    entries: dict[str, str] = {}
    # Struct layouts are ABI: each struct is one entry, fields in order.
    for struct in re.finditer(r"typedef struct (\w+) \{(.*?)\} \w+;", text, flags=re.DOTALL):
        fields = "; ".join(" ".join(f.split()) for f in struct.group(2).split(";") if f.strip())
        entries[f"struct {struct.group(1)}"] = f"struct {struct.group(1)} {{ {fields}; }}"
    text = re.sub(r"typedef struct \w+ \{.*?\} \w+;", " ", text, flags=re.DOTALL)
    for decl in text.split(";"):
        decl = " ".join(decl.replace("{", " { ").replace("}", " } ").split())
        decl = decl.lstrip("} ").strip()
        if not decl:
            continue
        enum = re.match(r"typedef enum (\w+) \{(.*)\} \w+$", decl)
        if enum:
            for item in enum.group(2).split(","):
                name, _, value = (part.strip() for part in item.partition("="))
                if name:
                    entries[f"enumerator {name}"] = f"{enum.group(1)}.{name} = {value}"
            continue
        fnptr = re.match(r"typedef .*\(\*(\w+)\)\(.*\)$", decl)
        if fnptr:
            entries[f"type {fnptr.group(1)}"] = without_parameter_names(decl)
            continue
        function = re.match(r"[\w\s\*]*?\b(sicore_\w+)\(.*\)$", decl)
        if function and not decl.startswith("typedef"):
            entries[f"function {function.group(1)}"] = without_parameter_names(decl)
    return entries


def read_record() -> tuple[tuple[int, ...], dict[str, str]]:
    """The record's ABI version and entries. A record written before the
    ABI version line had only ``# major N``; with N = 0 its minor comes
    from the ``# taken at version`` line."""
    abi = major = taken = None
    entries: dict[str, str] = {}
    for line in RECORD.read_text().splitlines():
        if line.startswith("# abi version "):
            abi = tuple(int(p) for p in line.split()[3].split("."))
        elif line.startswith("# major "):
            major = int(line.split()[2])
        elif line.startswith("# taken at version "):
            taken = line.split()[4]
        elif line and not line.startswith("#"):
            key, _, decl = line.partition("\t")
            entries[key] = decl
    if abi is None and taken is not None:
        abi = abi_version(taken)
    if abi is None and major is not None and major > 0:
        abi = (major,)
    if abi is None:
        sys.exit(f"abi_check: {RECORD} has no '# abi version N' line")
    return abi, entries


def write_record(abi: tuple[int, ...], version: str, entries: dict[str, str]) -> None:
    RECORD.parent.mkdir(exist_ok=True)
    lines = [
        "# The C ABI of libsicore, checked by scripts/abi_check.py (see there).",
        "# Refresh with: python3 scripts/abi_check.py --update",
        f"# abi version {abi_text(abi)}",
        f"# taken at version {version}",
    ]
    lines += [f"{key}\t{entries[key]}" for key in sorted(entries)]
    RECORD.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", type=Path, default=ROOT / "target" / "release" / "libsicore.so")
    parser.add_argument("--update", action="store_true", help="rewrite abi/sicore.abi from the build")
    args = parser.parse_args(argv)

    abi, version = cargo_version()
    current = header_entries()
    declared = {key.split()[1] for key in current if key.startswith("function ")}
    exported = exported_symbols(args.library)
    problems = [f"exported but not declared in include/sicore.h: {name}"
                for name in sorted(exported - declared)]
    problems += [f"declared in include/sicore.h but not exported by {args.library.name}: {name}"
                 for name in sorted(declared - exported)]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1

    if args.update:
        write_record(abi, version, current)
        print(f"abi_check: wrote {RECORD.relative_to(ROOT)} ({len(current)} entries, "
              f"ABI version {abi_text(abi)})")
        return 0

    recorded_abi, recorded = read_record()
    removed = sorted(set(recorded) - set(current))
    changed = sorted(k for k in set(recorded) & set(current) if recorded[k] != current[k])
    added = sorted(set(current) - set(recorded))
    for key in added:
        print(f"abi_check: added (compatible): {key}")
    breaks = [f"removed: {key}\n    was: {recorded[key]}" for key in removed]
    breaks += [f"changed: {key}\n    was: {recorded[key]}\n    now: {current[key]}" for key in changed]
    if breaks and abi > recorded_abi:
        print(f"abi_check: ABI version {abi_text(recorded_abi)} -> {abi_text(abi)}: "
              "incompatible changes allowed:")
        print("\n".join(breaks))
        print("abi_check: refresh the record with `python3 scripts/abi_check.py --update`")
        return 0
    if breaks:
        print(f"abi_check: incompatible C ABI changes without an ABI-version bump "
              f"(Cargo.toml {version}, ABI version {abi_text(abi)}; record "
              f"{abi_text(recorded_abi)}; while the major is 0 the minor is the breaking "
              "bump):", file=sys.stderr)
        print("\n".join(breaks), file=sys.stderr)
        return 1
    if added:
        print("abi_check: refresh the record with `python3 scripts/abi_check.py --update`")
    print(f"abi_check: {len(recorded)} recorded entries present and unchanged, {len(added)} added")
    return 0


if __name__ == "__main__":
    sys.exit(main())
