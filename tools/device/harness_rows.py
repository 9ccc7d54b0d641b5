#!/usr/bin/env python3
"""The rows the harness gives a padded point (model/batch.cpp padded_rows, which the harness runs): row 0 full, the other rows share
the real tokens, so a point's padding share is what it names. The one Python copy of that rule, without torch:
tools/device/hf_fidelity.py and the scripts that write predictions before a measurement import or run it.

usage: harness_rows.py RxW[:PAD]   prints the rows, comma-separated (e.g. 4x2048:0.37 -> 2048,1038,1038,1037)
"""
import sys


def padded_rows(rows, width, pad):
    total = round((1.0 - pad) * rows * width)
    if rows == 1:
        return [max(2, total)]
    rest = max(2 * (rows - 1), total - width)
    out = [width]
    for r in range(1, rows):
        out.append(min(width, rest // (rows - 1) + (1 if r <= rest % (rows - 1) else 0)))
    return out


def point_rows(point):
    """'RxW[:PAD]' -> (rows as the harness pads them, width)."""
    shape, _, pad = point.partition(":")
    r, w = (int(x) for x in shape.split("x"))
    return padded_rows(r, w, float(pad or 0)), w


if __name__ == "__main__":
    print(",".join(str(n) for n in point_rows(sys.argv[1])[0]))
