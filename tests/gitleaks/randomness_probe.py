#!/usr/bin/env python3
"""What a randomness test in a key-value shape would add, measured on
gitleaks' cases before building it (issue 31, docs/scrubbing.md).

A prototype, not the scrubber: any name (not only a secret's), then `=`,
`:`, `:=` or `=>`, then a run of 20 to 256 token characters that is not hex
or a UUID, mixes two classes of letters and digits, is not camel-case words,
and carries at least 3.5 bits of entropy a character (ripsecrets' idea: how
likely the run is random). It is applied to what the scrubber leaves: the
true positives it misses and the false positives it keeps, read from

    GITLEAKS_CASES_VERBOSE=1 cargo test --test scrub gitleaks_rule_cases -- --nocapture > out.txt
    python3 tests/gitleaks/randomness_probe.py out.txt
"""
import base64
import gzip
import json
import math
import os
import re
import sys
from collections import Counter

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "cases.jsonl.gz.b64")) as f:
    raw = gzip.decompress(base64.b64decode("".join(f.read().split())))
cases = [json.loads(line) for line in raw.decode().splitlines()]

missed, flagged = set(), set()
with open(sys.argv[1]) as f:
    for line in f:
        m = re.match(r"^(missed|flagged) (literal|generated) [\w.-]+: (.*)$", line.rstrip("\n"))
        if not m:
            continue
        text = m.group(3)
        if m.group(1) == "flagged":
            text = text.rsplit(" -> ", 1)[0]
        (missed if m.group(1) == "missed" else flagged).add(json.loads(text))

KV = re.compile(r"""([A-Za-z_][\w.\-]{0,60})["']?\s{0,8}(?::=|=>|=|:)\s{0,8}["'`]?([A-Za-z0-9+/_=.\-~]{20,256})""")
HEX = re.compile(r"^[0-9a-fA-F-]+$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


def entropy(s):
    n = len(s)
    return -sum(v / n * math.log2(v / n) for v in Counter(s).values())


def random_run(v):
    v = v.rstrip("=")
    if HEX.match(v) or UUID.match(v):
        return False
    if sum([any(c.islower() for c in v), any(c.isupper() for c in v), any(c.isdigit() for c in v)]) < 2:
        return False
    if re.search(r"[a-z]{6,}", v) and len(re.findall(r"[A-Z][a-z]{2,}", v)) >= 2:
        return False
    return entropy(v) >= 3.5


def hits(text):
    return any(random_run(m.group(2)) for m in KV.finditer(text))


gained = [c for c in cases if c["tp"] and c["text"] in missed and hits(c["text"])]
lost = [c for c in cases if not c["tp"] and c["text"] not in flagged and hits(c["text"])]
print(f"true positives missed now: {len(missed)}; the probe catches {len(gained)} "
      f"({sum(1 for c in gained if c.get('lit'))} literal)")
print(f"false positives kept now, the probe changes: {len(lost)} "
      f"({sum(1 for c in lost if c.get('lit'))} literal)")
for c in gained:
    print("  gained", c["rule"], repr(c["text"])[:100])
