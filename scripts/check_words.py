#!/usr/bin/env python3
"""Fails when a tracked text file speaks of how the work was organised instead of the product.

    python3 scripts/check_words.py              # every file git lists (tracked, and untracked
                                                # files that are not ignored)
    python3 scripts/check_words.py docs bench   # only files under these paths
    python3 scripts/check_words.py --self-test  # checks the checker

Patterns: scripts/process_words.txt, one case-insensitive regex per line ('#' comments).
Allowed uses: scripts/process_words_allow.txt, 'path-glob<TAB>regex' per line; a match of the
regex in a file that matches the glob is blanked before the patterns are searched, so only the
allowed span is exempt, not the rest of its line.

Skipped: binary files (by extension, or a NUL byte in the first 8 KiB), the vendored robot
files under tests/data/robots/ (kept byte for byte as published), and this checker and its three
data files (patterns, allowed uses, self-test cases). Each finding is printed as
'path:line: text  [pattern]'; the exit status is 1 when there is any, 2 on a usage or
configuration error (or outside a git checkout, where there is no list of files to check), 0
otherwise. The self-test's cases: scripts/process_words_cases.txt.
Python 3 standard library only.
"""
from __future__ import annotations

import codecs
import fnmatch
import os
import re
import subprocess
import sys
from typing import Iterable, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PATTERNS_FILE = os.path.join(HERE, "process_words.txt")
ALLOW_FILE = os.path.join(HERE, "process_words_allow.txt")
CASES_FILE = os.path.join(HERE, "process_words_cases.txt")

BINARY_EXTENSIONS = (".pt", ".png", ".gif", ".gz", ".npz", ".xz", ".jpg", ".jpeg", ".pdf", ".so", ".a", ".o",
                     ".zip", ".npy", ".pkl", ".stl", ".obj", ".dae")
SKIP_PREFIXES = ("tests/data/robots/",)
SELF = ("scripts/check_words.py", "scripts/process_words.txt", "scripts/process_words_allow.txt",
        "scripts/process_words_cases.txt")

Pattern = Tuple[str, "re.Pattern[str]"]
Allow = Tuple[str, "re.Pattern[str]"]


def _lines(path: str) -> Iterable[Tuple[int, str]]:
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            yield n, line.rstrip("\n")


def load_patterns(path: str = PATTERNS_FILE) -> List[Pattern]:
    out = []
    for n, line in _lines(path):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        try:
            out.append((s, re.compile(s, re.IGNORECASE)))
        except re.error as e:
            raise ValueError(f"{path}:{n}: bad regex {s!r}: {e}")
    return out


def load_allow(path: str = ALLOW_FILE) -> List[Allow]:
    out = []
    if not os.path.exists(path):
        return out
    for n, line in _lines(path):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise ValueError(f"{path}:{n}: expected 'path-glob<TAB>regex', got {line!r}")
        try:
            out.append((parts[0].strip(), re.compile(parts[1].strip(), re.IGNORECASE)))
        except re.error as e:
            raise ValueError(f"{path}:{n}: bad regex {parts[1]!r}: {e}")
    return out


def skipped(path: str) -> bool:
    """Files the check does not read: binaries by name, vendored files, the checker itself."""
    return (path.lower().endswith(BINARY_EXTENSIONS) or path.startswith(SKIP_PREFIXES) or path in SELF)


def check_line(path: str, line: str, patterns: Sequence[Pattern], allow: Sequence[Allow]) -> List[str]:
    """The patterns that match ``line`` of ``path`` outside its allowed spans."""
    for glob, rx in allow:
        if fnmatch.fnmatch(path, glob):
            line = rx.sub(lambda m: " " * len(m.group(0)), line)
    return [text for text, rx in patterns if rx.search(line)]


def check_file(path: str, full: str, patterns: Sequence[Pattern], allow: Sequence[Allow]) -> List[str]:
    try:
        with open(full, "rb") as f:
            data = f.read()
    except OSError:
        return []  # listed by git but deleted in the working tree
    if b"\0" in data[:8192]:
        return []
    findings = []
    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        for pattern in check_line(path, line, patterns, allow):
            findings.append(f"{path}:{n}: {line.strip()}  [{pattern}]")
    return findings


def listed_files(root: str) -> List[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode("utf-8", errors="replace")
    return sorted({p for p in out.split("\0") if p})


def run(root: str, only: Optional[Sequence[str]] = None) -> int:
    patterns, allow = load_patterns(), load_allow()
    try:
        listed = listed_files(root)
    except (OSError, subprocess.CalledProcessError):
        raise ValueError(f"{root} is not a git checkout (or git is missing): no list of files to check")
    files = [p for p in listed if not skipped(p)]
    if only:
        prefixes = [os.path.relpath(os.path.abspath(p), root).replace(os.sep, "/") for p in only]
        files = [p for p in files if any(p == q or p.startswith(q.rstrip("/") + "/") or q == "." for q in prefixes)]
    findings = []
    for p in files:
        findings += check_file(p, os.path.join(root, p), patterns, allow)
    for f in findings:
        print(f)
    if findings:
        print(f"check_words: {len(findings)} line(s) with process words in {len(files)} files "
              f"(patterns: scripts/process_words.txt; allowed uses: scripts/process_words_allow.txt)",
              file=sys.stderr)
        return 1
    print(f"check_words: {len(files)} files clean")
    return 0


def load_cases(path: str = CASES_FILE) -> List[Tuple[bool, str, str]]:
    """The self-test's cases: (caught?, path, line) per 'caught|clean<TAB>path<TAB>line', the
    line stored ROT13-encoded."""
    out = []
    for n, line in _lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 3 or parts[0] not in ("caught", "clean"):
            raise ValueError(f"{path}:{n}: expected 'caught|clean<TAB>path<TAB>line', got {line!r}")
        out.append((parts[0] == "caught", parts[1], codecs.decode(parts[2], "rot13")))
    return out


def self_test() -> int:
    """Every case of scripts/process_words_cases.txt is caught or spared as it says, line by
    line and through a whole file; the skip rules hold."""
    import tempfile
    patterns, allow, cases = load_patterns(), load_allow(), load_cases()
    failures = [f"{path}: {line!r} is {'not ' if caught else ''}caught" for caught, path, line in cases
                if bool(check_line(path, line, patterns, allow)) != caught]
    with tempfile.TemporaryDirectory() as tmp:
        full = os.path.join(tmp, "x.md")
        with open(full, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for _, _, line in cases))
        found = [int(x.split(":")[1]) for x in check_file("docs/x.md", full, patterns, allow)]
        expected = [n for n, (caught, _, _) in enumerate(cases, 1) if caught]
        if sorted(set(found)) != expected:
            failures.append(f"a whole file: lines {sorted(set(found))} caught, expected {expected}")
    if not (skipped("results/x/policy.pt") and skipped("tests/data/robots/anymal/README.md")
            and skipped("scripts/process_words.txt") and not skipped("docs/contact.md")):
        failures.append("the skip rules changed")
    for f in failures:
        print(f"check_words --self-test: FAIL: {f}", file=sys.stderr)
    if failures:
        return 1
    print(f"check_words --self-test: ok ({len(cases)} cases, {len(patterns)} patterns, {len(allow)} allowed uses)")
    return 0


def main(argv: Sequence[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if any(a.startswith("-") and a != "--self-test" for a in argv) or ("--self-test" in argv and len(argv) > 1):
        print(f"check_words: unexpected arguments {list(argv)} (--self-test, --help, or paths)", file=sys.stderr)
        return 2
    try:
        return self_test() if argv[:1] == ["--self-test"] else run(ROOT, argv)
    except ValueError as e:
        print(f"check_words: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
