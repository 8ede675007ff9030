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
files under tests/data/robots/ (kept byte for byte as published), and this checker and its two
pattern files. Each finding is printed as 'path:line: text  [pattern]'; the exit status is 1
when there is any, 2 on a usage or configuration error, 0 otherwise (also outside a git
checkout, where there is no list of files to check). Python 3 standard library only.
"""
from __future__ import annotations

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

BINARY_EXTENSIONS = (".pt", ".png", ".gif", ".gz", ".npz", ".xz", ".jpg", ".jpeg", ".pdf", ".so", ".a", ".o",
                     ".zip", ".npy", ".pkl", ".stl", ".obj", ".dae")
SKIP_PREFIXES = ("tests/data/robots/",)
SELF = ("scripts/check_words.py", "scripts/process_words.txt", "scripts/process_words_allow.txt")

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


def gates(patterns: Sequence[Pattern]) -> List[Tuple[bool, "re.Pattern[str]"]]:
    """A fast necessary condition per pattern, to skip the files and lines it cannot match:
    the pattern without a leading word boundary, in lower case, searched case-sensitively in
    the lower-cased text (Python's scan for a literal prefix is then some 30x faster than a
    case-insensitive search behind a \\b). A pattern that turns case-insensitivity off,
    (?-i:...), is its own gate on the original text. (lowered?, regex) per pattern."""
    out = []
    for text, rx in patterns:
        if text.startswith("(?-i:"):
            out.append((False, rx))
            continue
        t = text[2:] if text.startswith("\\b") else text
        lowered, i = [], 0
        while i < len(t):  # lower-case all but escapes: \D, \S, \W and \B keep their sense
            if t[i] == "\\" and i + 1 < len(t):
                lowered.append(t[i:i + 2])
                i += 2
            else:
                lowered.append(t[i].lower())
                i += 1
        out.append((True, re.compile("".join(lowered))))
    return out


def check_file(path: str, full: str, patterns: Sequence[Pattern], allow: Sequence[Allow],
               pattern_gates: Optional[List[Tuple[bool, "re.Pattern[str]"]]] = None) -> List[str]:
    try:
        with open(full, "rb") as f:
            data = f.read()
    except OSError:
        return []  # listed by git but deleted in the working tree
    if b"\0" in data[:8192]:
        return []
    text = data.decode("utf-8", errors="replace")
    pattern_gates = pattern_gates or gates(patterns)
    low = text.lower()
    live = [i for i, (lowered, g) in enumerate(pattern_gates) if g.search(low if lowered else text)]
    if not live:
        return []
    findings = []
    for n, line in enumerate(text.splitlines(), 1):
        line_low = line.lower()
        maybe = [patterns[i] for i in live if pattern_gates[i][1].search(line_low if pattern_gates[i][0] else line)]
        if not maybe:
            continue
        for pattern in check_line(path, line, maybe, allow):
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
        print(f"check_words: {root} is not a git checkout (or git is missing): nothing to check")
        return 0
    files = [p for p in listed if not skipped(p)]
    if only:
        prefixes = [os.path.relpath(os.path.abspath(p), root).replace(os.sep, "/") for p in only]
        files = [p for p in files if any(p == q or p.startswith(q.rstrip("/") + "/") or q == "." for q in prefixes)]
    pattern_gates = gates(patterns)
    findings = []
    for p in files:
        findings += check_file(p, os.path.join(root, p), patterns, allow, pattern_gates)
    for f in findings:
        print(f)
    if findings:
        print(f"check_words: {len(findings)} line(s) with process words in {len(files)} files "
              f"(patterns: scripts/process_words.txt; allowed uses: scripts/process_words_allow.txt)",
              file=sys.stderr)
        return 1
    print(f"check_words: {len(files)} files clean")
    return 0


def self_test() -> int:
    """The shipped patterns catch a process word, the shipped allow-list spares a legitimate use
    without sparing the rest of its line, and the skip rules hold."""
    patterns, allow = load_patterns(), load_allow()
    failures = []

    def expect(cond: bool, what: str) -> None:
        if not cond:
            failures.append(what)

    expect(bool(check_line("docs/x.md", "measured in session 5 on the VM", patterns, allow)),
           "'session 5' is not caught")
    expect(bool(check_line("docs/x.md", "the criterion of issue 15", patterns, allow)), "'issue 15' is not caught")
    expect(bool(check_line("README.md", "see ../shared/design/SCIENCE.md", patterns, allow)),
           "a citation of SCIENCE.md is not caught")
    expect(not check_line("docs/gpu.md", "DRAM 27 % of its peak, issue 13 %", patterns, allow),
           "the allow-listed Nsight 'issue 13 %' is caught")
    expect(bool(check_line("docs/gpu.md", "issue 13 % (session 19)", patterns, allow)),
           "a process word beside an allowed span is spared")
    expect(not check_line("docs/x.md", "the step's position update", patterns, allow), "a plain line is caught")
    expect(not check_line("include/moreau/simulator.h", "// soft: docs/contact.md", patterns, allow),
           "the repository's own docs/contact.md is caught")
    # the mechanism, independent of the shipped files
    own = [("foo", re.compile("foo", re.IGNORECASE))]
    expect(bool(check_line("a/b.txt", "a FOO here", own, [])), "a case-insensitive match is missed")
    expect(not check_line("a/b.txt", "a foobar here", own, [("a/*", re.compile("foobar", re.IGNORECASE))]),
           "an allowed span in a matching path is caught")
    expect(bool(check_line("c/b.txt", "a foobar here", own, [("a/*", re.compile("foobar", re.IGNORECASE))])),
           "an allow entry applies outside its glob")
    # the whole-file path, with its fast gates, on a file written here
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.md")
        with open(path, "w", encoding="utf-8") as f:
            f.write("Nsight: issue 13 % of cycles\nfigures of Session 5\nplain text\n(see CONTACT.md)\n")
        found = check_file("docs/x.md", path, patterns, allow)
        expect(len(found) == 2 and found[0].startswith("docs/x.md:2:") and found[1].startswith("docs/x.md:4:"),
               f"check_file found {found}, expected lines 2 and 4")
    expect(skipped("results/x/policy.pt") and skipped("tests/data/robots/anymal/README.md")
           and skipped("scripts/process_words.txt") and not skipped("docs/contact.md"), "the skip rules changed")
    for f in failures:
        print(f"check_words --self-test: FAIL: {f}", file=sys.stderr)
    if failures:
        return 1
    print(f"check_words --self-test: ok ({len(patterns)} patterns, {len(allow)} allowed uses)")
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
