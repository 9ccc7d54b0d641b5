#!/usr/bin/env python3
"""The first-seen graph rule against what the stack ran (docs/host.md, "What a first-seen shape pays for").

For every record that carries the executor's SDPA trace (`sdpa`: each distinct call and the backend PyTorch picked),
the cuDNN graphs the tool says its shape builds (`stepcast predict --measurements F --format json`,
`first_seen_graphs`: distinct head sizes, heads and mask-or-causal among the layers it plans on cuDNN) against the
distinct cuDNN calls the record traced. Prints the agreement per model and every disagreement with its file:line.

    python3 tools/cudnn_graphs.py [RECORDS.jsonl ...]   (default: every committed records file)
STEPCAST names the binary (default build/cli/stepcast).
"""
import collections
import glob
import json
import os
import subprocess
import sys

BIN = os.environ.get("STEPCAST", "build/cli/stepcast")


def traced_graphs(record):
    return len({(s["qk_head_dim"], s["v_head_dim"], s["q_heads"], s["kv_heads"], s["mask"] != "none")
                for s in record["sdpa"] if s["backend"] == "cudnn"})


def check(path, agree, disagree):
    lines = [json.loads(line) for line in open(path) if line.strip()]
    traced = [(n, r) for n, r in enumerate(lines, 1) if isinstance(r, dict) and r.get("sdpa")]
    if not traced:
        return
    args = [BIN, "predict", "--measurements", path, "--stack", "transformers-peft", "--dtype", "bfloat16",
            "--format", "json"]
    if "H200" not in traced[0][1].get("gpu", ""):
        args.append("--transfer")
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode:
        print("%s: predict failed: %s" % (path, out.stderr.strip().splitlines()[-1:]), file=sys.stderr)
        return
    predicted = json.loads(out.stdout)["records"]
    rows = [(n, r) for n, r in enumerate(lines, 1) if isinstance(r, dict) and "rows" in r]
    for (n, r), p in zip(rows, predicted):  # predict answers every record, in file order
        if not r.get("sdpa"):
            continue
        key = (r["model"], p["first_seen_graphs"], traced_graphs(r))
        if key[1] == key[2]:
            agree[key] += 1
        else:
            disagree.append((path, n, key))


def main(files):
    files = files or sorted(set(glob.glob("measurements/records/**/*.jsonl", recursive=True)))
    agree, disagree = collections.Counter(), []
    for f in files:
        check(f, agree, disagree)
    for (model, graphs, _), count in sorted(agree.items()):
        print("%-20s %2d graph(s) a shape: %4d records agree" % (model, graphs, count))
    for path, line, (model, predicted, traced) in disagree:
        print("%s:%d: %s predicted %d graph(s), traced %d" % (path, line, model, predicted, traced))
    print("%d records: %d agree, %d disagree" % (sum(agree.values()) + len(disagree), sum(agree.values()),
                                                 len(disagree)))


if __name__ == "__main__":
    main(sys.argv[1:])
