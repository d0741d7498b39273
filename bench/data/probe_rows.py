"""The row writer the secret probes share (`make_secrets_lookalikes*.py`): labelled rows of
one source, each with the kind of look-alike or secret it is, written as JSONL for
`loci bench policy --data FILE --no-builtin --by kind` (the file name must start with
"secrets")."""

import json


class ProbeRows:
    def __init__(self, source: str):
        self.source = source
        self.rows: list[dict] = []

    def add(self, kind: str, label: int, texts) -> None:
        self.rows.extend({"text": t, "label": label, "source": self.source, "kind": kind} for t in texts)

    def write(self, path: str) -> None:
        """Write the rows to `path`; print how many and how many are secrets."""
        with open(path, "w") as fh:
            for r in self.rows:
                fh.write(json.dumps(r) + "\n")
        print(len(self.rows), sum(r["label"] for r in self.rows))
