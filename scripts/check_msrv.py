#!/usr/bin/env python3
"""Fails when a locked dependency declares a newer rust-version than the workspace's MSRV.

    cargo metadata --format-version 1 --locked | python3 scripts/check_msrv.py

Clippy's `incompatible_msrv` lint (on by default, and CI denies warnings) already flags standard-library items
newer than the MSRV in our own code; this covers the dependencies, which only the compiler of that version would
otherwise catch, and no such compiler is available on the build machines.
"""

import json
import re
import sys


def version(text):
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def main():
    packages = json.load(sys.stdin)["packages"]
    msrv = next(p["rust_version"] for p in packages if p["name"] == "memcarve-core")
    newer = [
        f"{p['name']} {p['version']} needs {p['rust_version']}"
        for p in packages
        if p.get("rust_version") and version(p["rust_version"]) > version(msrv)
    ]
    if newer:
        sys.exit(f"dependencies newer than the MSRV {msrv}: " + ", ".join(newer))
    print(f"{len(packages)} packages, none needs a newer Rust than {msrv}")


if __name__ == "__main__":
    main()
