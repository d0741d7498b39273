# ruff: noqa: E501
"""How many of the write policy's errors on the secret dev sources are kinds the sources label
both ways (issue 14). Each row of `secrets_dev.jsonl` gets a shape class from its text (IP
address, filler or masked value, periodic value, example/test word, trivial password,
template, other); an error counts as a label conflict when its class is labelled the other
way by another source in at least 3 rows and 25% of that source's rows of the class.

    loci bench policy --data $D/policy/secrets_dev.jsonl --no-builtin --verdicts /tmp/v.jsonl
    python bench/data/secrets_dev_conflicts.py $D/policy/secrets_dev.jsonl /tmp/v.jsonl

(With the secret layer inert, these verdicts are the leave-one-source-out ones.)
"""

from __future__ import annotations

import collections
import json
import re
import sys


def shape_class(t: str) -> str:
    if re.search(r"\b\d{1,3}(?:\.\d{1,3}){3}\b", t) and not re.search(r"(?i)pass|key|token|secret", t):
        return "ip_address"
    if re.search(r"(?i)x{5,}|z{6,}|\*{4,}|\.\.\.|\[redacted\]", t):
        return "filler_or_masked"
    if re.search(r"(?i)(\w{3,8})\1\1", t):
        return "periodic"
    if re.search(r"EXAMPLE|(?i:example|dummy|fake|sample|test)", t):
        return "example_or_test_word"
    if re.search(r"(?i)(?:pass(?:word)?|pwd|passwd)\W{1,4}\s*[\"']?(?:pass|admin|user\d?|\w{1,5}|[a-z]+)[\"']?\s*(?:[,}\]\n]|$)", t) \
            or re.search(r"://\w+:pass@", t):
        return "trivial_password"
    if re.search(r"%s|\{\{|\$\{|fmt\.|<\w+>", t):
        return "template"
    return "other"


def main(data: str, verdicts: str) -> None:
    rows = [json.loads(line) for line in open(data, encoding="utf-8")]
    judged = [json.loads(line) for line in open(verdicts, encoding="utf-8")]
    src = [r["source"].split("@")[0].split(":")[0] for r in rows]
    labels: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r, s in zip(rows, src, strict=True):
        labels[shape_class(r["text"])][(s, r["label"])] += 1

    def both_ways(c: str, s: str, label: int) -> bool:
        for (s2, l2), n in labels[c].items():
            total = labels[c][(s2, 0)] + labels[c][(s2, 1)]
            if s2 != s and l2 != label and n >= 3 and n / total >= 0.25:
                return True
        return False

    errors: collections.Counter = collections.Counter()
    conflicts: collections.Counter = collections.Counter()
    by_class: collections.Counter = collections.Counter()
    for r, v, s in zip(rows, judged, src, strict=True):
        if (v[0] == "reject") != bool(r["label"]):
            c = shape_class(r["text"])
            errors[s] += 1
            by_class[(s, c, "FN" if r["label"] else "FP")] += 1
            if c not in ("other", "ip_address") and both_ways(c, s, r["label"]):
                conflicts[s] += 1
    print("labels of each class, by (source, label):")
    for c, counts in sorted(labels.items()):
        print(f"  {c}: {dict(counts)}")
    print("errors by (source, class, FN/FP):")
    for k, n in sorted(by_class.items()):
        print(f"  {k}: {n}")
    total, conflicting = sum(errors.values()), sum(conflicts.values())
    print(f"errors {total}, label conflicts across sources {conflicting} ({conflicting / max(1, total):.1%}); by source:")
    for s in sorted(errors):
        print(f"  {s}: {conflicts[s]} of {errors[s]}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
