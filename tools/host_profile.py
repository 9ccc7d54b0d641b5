#!/usr/bin/env python3
"""What a shape new to the process costs on the host, by operator (docs/host.md, "What a first-seen shape pays for").

Reads probe records that carry `host_profile` (a campaign's `host_profiles` points, tools/device/hf_campaign.py): the
first step of a new shape and one repeat, each under torch.profiler. Prints per probe the two wall clocks, the
allocator's device allocations, and the first step's extra host self-time by operator (first minus repeat), the
largest first; then, per model, the median extra time of cuDNN's SDPA forward and backward operators (where cuDNN
builds an execution graph for a shape it has not met) against the rest.

    python3 tools/host_profile.py RECORDS.jsonl [...] [--top N]
"""
import collections
import json
import statistics
import sys

CUDNN_FORWARD = "aten::_cudnn_attention_forward"
CUDNN_BACKWARD = "aten::_cudnn_attention_backward"


def extra_by_operator(profile):
    """{operator: first-step self µs minus the repeat's} over the first step's listed operators."""
    repeat = {o["name"]: o["self_us"] for o in profile["repeat"]["operators"]}
    return {o["name"]: o["self_us"] - repeat.get(o["name"], 0.0) for o in profile["first"]["operators"]}


def main(argv):
    top = 6
    if "--top" in argv:
        i = argv.index("--top")
        top = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if not argv:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    per_model = collections.defaultdict(list)
    for path in argv:
        for n, line in enumerate(open(path), 1):
            r = json.loads(line)
            hp = r.get("host_profile")
            if not hp:
                continue
            first, rep = hp["first"], hp["repeat"]
            extra = extra_by_operator(hp)
            fwd, bwd = extra.get(CUDNN_FORWARD, 0.0) / 1e6, extra.get(CUDNN_BACKWARD, 0.0) / 1e6
            host = (first["host_self_us"] - rep["host_self_us"]) / 1e6
            per_model[r["model"]].append((fwd, bwd, host - fwd - bwd, first["wall_s"] - rep["wall_s"]))
            print("%s %s x %d rows %s: wall %.3f / %.3f s (+%.3f), host self +%.3f s, device allocs %d / %d, "
                  "reserved +%.2f GiB, kernels %d / %d" % (
                      r["model"], len(r["rows"]), r["width"], r["rows"], first["wall_s"], rep["wall_s"],
                      first["wall_s"] - rep["wall_s"], host, first["device_allocs"], rep["device_allocs"],
                      first["reserved_grown_gib"], first["kernels"], rep["kernels"]))
            for name, us in sorted(extra.items(), key=lambda kv: -kv[1])[:top]:
                print("    %+8.1f ms  %s" % (us / 1000, name))
    for model, xs in sorted(per_model.items()):
        med = lambda k: statistics.median(x[k] for x in xs)
        print("%s: %d first-seen shapes, median extra host time: cuDNN SDPA forward %.3f s, backward %.3f s, "
              "everything else %.3f s; median wall excess (profiled) %.3f s" % (model, len(xs), med(0), med(1), med(2),
                                                                                 med(3)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
