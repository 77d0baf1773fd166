#!/usr/bin/env python3
"""Summarise a unified diff read from stdin: files, lines added/removed, test coverage of the change.

Usage: git diff main... | python3 diff_stats.py
"""
import re
import sys

LARGE_CHANGE = 400
TEST_PATTERN = re.compile(r"(^|/)(tests?|__tests__|spec)(/|$)|[._-](test|spec)\.[a-z]+$")


def main() -> int:
    files = {}
    current = None
    for line in sys.stdin:
        if line.startswith("diff --git "):
            parts = line.split()
            current = parts[3][2:] if len(parts) >= 4 else parts[-1]
            files[current] = [0, 0]
        elif current is None or line.startswith(("+++", "---")):
            continue
        elif line.startswith("+"):
            files[current][0] += 1
        elif line.startswith("-"):
            files[current][1] += 1

    if not files:
        print("no diff on stdin")
        return 1

    added = sum(a for a, _ in files.values())
    removed = sum(r for _, r in files.values())
    tests = [f for f in files if TEST_PATTERN.search(f)]
    test_lines = sum(files[f][0] + files[f][1] for f in tests)

    print(f"files changed: {len(files)}  (+{added} / -{removed})")
    for name, (a, r) in sorted(files.items(), key=lambda kv: -(kv[1][0] + kv[1][1])):
        marker = "  [test]" if name in tests else ""
        print(f"  {a + r:6d}  +{a:<5d} -{r:<5d} {name}{marker}")
    print(f"test files: {len(tests)}; share of changed lines in tests: {test_lines / max(1, added + removed):.0%}")
    if added + removed > LARGE_CHANGE:
        print(f"note: more than {LARGE_CHANGE} changed lines; consider asking for a split")
    if not tests and any(not f.endswith((".md", ".txt")) for f in files):
        print("note: code changed but no test file changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
