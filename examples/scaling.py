#!/usr/bin/env python3
"""examples/scaling.py — a notebook-style walk through the Python API: the best plan at each GPU
count (meshplan.search), the scaling curve it makes, and a look at the winner at the largest
count (meshplan.predict). Plots the curve with matplotlib when it is installed (scaling.png, or
the path given), else prints the table only.

    python3 examples/scaling.py                          # llama3-70b on 64..1024 H100, gb 1024
    python3 examples/scaling.py --model llama3-8b --gpus 8:128 --gb 256 -o curve.png
"""
import argparse

import meshplan

# %% The job and the GPU counts (doubling, as `meshplan scale --gpus A:B`).
ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
ap.add_argument("--model", default="llama3-70b")
ap.add_argument("--gpu", default="h100-sxm5-80gb")
ap.add_argument("--gpus", default="64:1024", help="A:B, doubling")
ap.add_argument("--gb", type=int, default=1024, help="global batch, sequences")
ap.add_argument("-o", "--output", default="scaling.png")
args = ap.parse_args()
lo, hi = (int(x) for x in args.gpus.split(":"))
counts = []
while lo <= hi:
    counts.append(lo)
    lo *= 2

# %% The best plan at each count.
rows = []
for n in counts:
    best = meshplan.search(args.model, gpu=args.gpu, gpus=n, gb=args.gb, top=1)["top"]
    if not best:
        print(f"{n:6d} GPUs: no plan fits")
        continue
    rows.append((n, best[0]))

# %% Strong-scaling efficiency: tokens/s per GPU relative to the smallest count.
print(f"{args.model} on {args.gpu}, global batch {args.gb} sequences")
print(f"{'GPUs':>6} {'tokens/s':>12} {'per GPU':>9} {'MFU':>6} {'efficiency':>10}  plan")
base = rows[0][1]["tokens_per_s"] / rows[0][0] if rows else 1.0
curve = []
for n, b in rows:
    eff = b["tokens_per_s"] / n / base
    curve.append((n, b["tokens_per_s"], eff))
    print(f"{n:6d} {b['tokens_per_s']:12.0f} {b['tokens_per_s'] / n:9.0f} {b['mfu']:6.3f} "
          f"{eff:10.1%}  {b['plan']}")

# %% The winner at the largest count, predicted on its own: what bounds it.
if rows:
    n, b = rows[-1]
    r = meshplan.predict(args.model, gpu=args.gpu, gpus=n, plan=b["plan"])
    print(f"\nat {n} GPUs: step {r['step_s']:.3f} s, bound by {r['bottleneck']}")

# %% The curve (matplotlib is optional).
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("\n(matplotlib not installed: table only)")
else:
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([c[0] for c in curve], [c[1] / 1e3 for c in curve], "o-", label="tokens/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("throughput (k tokens/s)")
    ax2 = ax.twinx()
    ax2.plot([c[0] for c in curve], [100 * c[2] for c in curve], "s--", color="tab:red")
    ax2.set_ylabel("strong-scaling efficiency (%)")
    ax.set_title(f"{args.model} on {args.gpu}, gb {args.gb}")
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"\nwrote {args.output}")
