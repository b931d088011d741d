#!/usr/bin/env python3
"""Fails when a citation of the protocol reference names no section of it, or when a file cites a
path outside the repository.

Sources/APNs.docc/ProtocolReference.md is the one owner of the APNs protocol facts. Documentation
comments cite a section as `<doc:ProtocolReference#Section-title>`, everything else as
"protocol reference, Section title" (or "…, First to Last" for a run of sections). A renamed
section must take its citations along; this check is what notices one left behind.
"""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
article = root / "Sources/APNs.docc/ProtocolReference.md"
sections = [line[3:].strip() for line in article.read_text().splitlines() if line.startswith("## ")]
anchors = {title.replace(" ", "-") for title in sections}
files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()

link = re.compile(r"<doc:ProtocolReference#([^>]+)>")
words = re.compile(r"protocol reference, ((?:[A-Z][\w ]*?)(?: (?:to|and) [A-Z][\w ]*?)?)(?=[).;:\"\n]|$)")
outside = re.compile(r"\.\./shared/|apns-reference\.md|APNs reference §")
failures = []
for name in files:
    path = root / name
    if path.suffix not in {".swift", ".md", ".sh", ".py", ".yml", ".c", ".h"} and name != ".ci/run":
        continue
    if path == pathlib.Path(__file__).resolve():
        continue
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        for anchor in link.findall(line):
            if anchor not in anchors:
                failures.append(f"{name}:{number}: no section '{anchor}' in ProtocolReference.md")
        for cited in words.findall(line):
            for title in [cited] if cited.strip() in sections else re.split(r" (?:to|and) ", cited):
                if title.strip() not in sections:
                    failures.append(f"{name}:{number}: no section '{title.strip()}' in ProtocolReference.md")
        if outside.search(line):
            failures.append(f"{name}:{number}: cites something outside the repository: {line.strip()}")
for failure in failures:
    print(failure, file=sys.stderr)
if failures:
    sys.exit(1)
print(f"protocol reference: {len(sections)} sections; every citation names one, and nothing cites outside the repository")
