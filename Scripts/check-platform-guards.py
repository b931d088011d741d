#!/usr/bin/env python3
"""Fails when a Linux-only header, call or path appears in Sources/ outside a Linux guard.

macOS users build swift-apns too, and no Mac is at hand here: this check is what keeps the
library's sources portable. A Linux-only name is allowed only inside `#if os(Linux)`,
`#if canImport(Glibc)` (Swift) or `#ifdef __linux__` / `#if defined(__linux__)` (C), and not in
the `#else` of one. Comments are skipped.

    python3 Scripts/check-platform-guards.py            # Sources/
    python3 Scripts/check-platform-guards.py DIR ...    # other trees
"""
import pathlib
import re
import sys

# Linux-only: headers and calls Darwin lacks, /proc, socket options Darwin does not have, Glibc
# imported without asking whether it can be.
LINUX_ONLY = re.compile(
    r"\bprctl\b|\bPR_SET_NAME\b|\bTCP_CORK\b|/proc/|\bepoll_?\w*|\beventfd\b|\binotify_\w+|\bsched_getaffinity\b"
    r"|\bSO_(BINDTODEVICE|PEERCRED|PRIORITY|MARK|BUSY_POLL|INCOMING_CPU)\b|\bMSG_NOSIGNAL\b|\baccept4\b|\bpipe2\b"
    r"|\bSOCK_(CLOEXEC|NONBLOCK)\b|^\s*import\s+Glibc\b|^\s*import\s+Musl\b|<sys/prctl\.h>|<sys/epoll\.h>|<linux/"
)
LINUX_GUARD = re.compile(r"os\(Linux\)|canImport\((Glibc|Musl)\)|__linux__")
IF = re.compile(r"^\s*#\s*(if|ifdef|ifndef)\b(.*)")
ELSE = re.compile(r"^\s*#\s*(else|elseif|elif)\b(.*)")
ENDIF = re.compile(r"^\s*#\s*endif\b")
COMMENT = re.compile(r"^\s*(//|/\*|\*)")


def problems(path: pathlib.Path):
    # Each frame: [is a Linux guard, currently in its Linux branch]
    stack: list[list[bool]] = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if m := IF.match(line):
            negated = m.group(1) == "ifndef" or "!" in m.group(2)
            guard = bool(LINUX_GUARD.search(m.group(2)))
            stack.append([guard, guard and not negated])
            continue
        if m := ELSE.match(line):
            if stack:
                frame = stack[-1]
                if frame[0]:
                    # `#elif defined(__linux__)` turns a Linux branch on; a plain `#else` flips it.
                    frame[1] = bool(LINUX_GUARD.search(m.group(2))) if m.group(1) != "else" else not frame[1]
                elif LINUX_GUARD.search(m.group(2)):
                    frame[0], frame[1] = True, True
            continue
        if ENDIF.match(line):
            if stack:
                stack.pop()
            continue
        if COMMENT.match(line):
            continue
        if LINUX_ONLY.search(line) and not any(in_linux for _, in_linux in stack):
            yield f"{path}:{number}: {line.strip()}"


def main() -> int:
    roots = [pathlib.Path(p) for p in (sys.argv[1:] or ["Sources"])]
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if any(part.startswith(".build") for part in path.parts):
                continue
            if path.suffix in {".swift", ".h", ".c", ".modulemap"} and path.is_file():
                found.extend(problems(path))
    if found:
        print("Linux-only code outside an #if os(Linux) / #ifdef __linux__ guard (macOS users build this too):")
        print("\n".join(found))
        return 1
    print(f"platform guards: no Linux-only code outside a Linux guard in {', '.join(map(str, roots))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
