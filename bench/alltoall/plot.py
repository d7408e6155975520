#!/usr/bin/env python3
"""Plots and summarises kinet-alltoall-bench results (run-gpu.sh's OUTDIR).

    python3 bench/alltoall/plot.py OUTDIR

Reads OUTDIR/results-*.jsonl and writes into OUTDIR:
  latency.{png|svg}    median latency (host-timed: launch to synchronised)
                       vs tokens, kinet and NCCL, p10-p90 as error bars
  bandwidth.{png|svg}  GB/s (bytes sent to other ranks / median) vs tokens
  summary.md           the tables docs/benchmarks/alltoall.md takes, with the
                       ratios the targets name (NCCL / kinet latency at
                       T = 128, kinet / NCCL bandwidth at T = 4096)
PNG with matplotlib when it is installed, else a plain SVG written here.
"""
import glob
import json
import os
import sys

SERIES = [
    ("kinet_dispatch_combine", "kinet dispatch+combine", "#1f77b4", "-"),
    ("kinet_copy_dispatch_combine", "kinet dispatch+combine, layout copied", "#9467bd", "-"),
    ("nccl_dispatch_combine", "NCCL all-to-all(v), same bytes (x2)", "#d62728", "-"),
    ("kinet_alltoall", "kinet all-to-all", "#2ca02c", "--"),
    ("nccl_alltoall", "NCCL all-to-all", "#ff7f0e", "--"),
    ("floor_store", "floor: stores, no signals", "#7f7f7f", ":"),
]


def load(out):
    rows = []
    for path in sorted(glob.glob(os.path.join(out, "results-*.jsonl"))):
        run = os.path.basename(path)[len("results-"):-len(".jsonl")]
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    d = json.loads(line)
                    d["run"] = run
                    rows.append(d)
    return rows


def pick(rows, run, what, timing="host"):
    pts = {}
    for d in rows:
        if d["run"] == run and d["what"] == what and d["timing"] == timing:
            pts[d["tokens"]] = d
    return [pts[t] for t in sorted(pts)]


def svg_plot(path, title, ylabel, lines, ylog=True):
    """lines: [(label, color, dash, [(x, y, lo, hi)])] on log-log axes."""
    import math
    w, h, ml, mr, mt, mb = 760, 460, 70, 250, 40, 50
    xs = [p[0] for _, _, _, pts in lines for p in pts]
    ys = [v for _, _, _, pts in lines for p in pts for v in p[1:] if v > 0]
    if not xs or not ys:
        return
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs)) or 1
    ly0, ly1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    if lx1 == lx0:
        lx1 = lx0 + 1
    if ly1 == ly0:
        ly1 = ly0 + 1

    def X(x):
        return ml + (math.log10(x) - lx0) / (lx1 - lx0) * (w - ml - mr)

    def Y(y):
        return h - mb - (math.log10(max(y, 10 ** ly0)) - ly0) / (ly1 - ly0) * (h - mt - mb)

    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="12"><rect width="100%%" height="100%%" fill="white"/>' % (w, h),
         '<text x="%d" y="24" font-size="15">%s</text>' % (ml, title)]
    for e in range(int(ly0), int(ly1) + 1):
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (ml, w - mr, Y(10 ** e), Y(10 ** e)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">1e%d</text>' % (ml - 6, Y(10 ** e) + 4, e))
    for x in sorted(set(xs)):
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (X(x), h - mb + 18, x))
    o.append('<text x="%d" y="%d" text-anchor="middle">tokens per rank (T)</text>' % ((ml + w - mr) // 2, h - 10))
    o.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">%s</text>'
             % ((mt + h - mb) // 2, (mt + h - mb) // 2, ylabel))
    dashes = {"-": "", "--": ' stroke-dasharray="6,4"', ":": ' stroke-dasharray="2,3"'}
    for i, (label, color, dash, pts) in enumerate(lines):
        if not pts:
            continue
        d = " ".join("%s%.1f,%.1f" % ("M" if j == 0 else "L", X(p[0]), Y(p[1])) for j, p in enumerate(pts))
        o.append('<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>' % (d, color, dashes[dash]))
        for p in pts:
            o.append('<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>' % (X(p[0]), X(p[0]), Y(p[2]),
                                                                                     Y(p[3]), color))
            o.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (X(p[0]), Y(p[1]), color))
        ly = mt + 20 + 20 * i
        o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                 % (w - mr + 10, w - mr + 40, ly, ly, color, dashes[dash]))
        o.append('<text x="%d" y="%d">%s</text>' % (w - mr + 46, ly + 4, label))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o))


def plot(out, rows, run):
    lat, bw = [], []
    for what, label, color, dash in SERIES:
        pts = pick(rows, run, what)
        lat.append((label, color, dash, [(d["tokens"], d["median_us"], d["p10_us"], d["p90_us"]) for d in pts]))
        bw.append((label, color, dash, [(d["tokens"], d["gb_per_s"], d["gb_per_s"], d["gb_per_s"]) for d in pts]))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    for name, title, ylabel, lines in (("latency", "latency vs tokens (%s)" % run, "median us (launch included)", lat),
                                        ("bandwidth", "bandwidth vs tokens (%s)" % run, "GB/s per rank", bw)):
        if plt is None:
            svg_plot(os.path.join(out, "%s-%s.svg" % (name, run)), title, ylabel, lines)
            continue
        fig, ax = plt.subplots(figsize=(8, 5))
        for label, color, dash, pts in lines:
            if pts:
                xs = [p[0] for p in pts]
                ys = [p[1] for p in pts]
                err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
                ax.errorbar(xs, ys, yerr=err, label=label, color=color, linestyle=dash, marker="o", capsize=3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tokens per rank (T)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "%s-%s.png" % (name, run)), dpi=120)
        plt.close(fig)


def summary(out, rows):
    lines = ["# kinet-alltoall-bench summary", ""]
    for run in sorted({d["run"] for d in rows}):
        any_row = next(d for d in rows if d["run"] == run)
        lines += ["## %s: %d ranks, %s, path %s" % (run, any_row["ranks"], any_row["gpu"], any_row["path"]), "",
                  "| T | what | timing | bytes/rank | median us | p10 | p90 | max-rank median | GB/s |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for d in sorted((d for d in rows if d["run"] == run), key=lambda d: (d["tokens"], d["what"], d["timing"])):
            lines.append("| %d | %s | %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
                d["tokens"], d["what"], d["timing"], d["bytes"], d["median_us"], d["p10_us"], d["p90_us"],
                d["median_us_max_rank"], d["gb_per_s"]))
        lines.append("")
        for t in sorted({d["tokens"] for d in rows if d["run"] == run}):
            for timing in ("host", "gpu"):
                k = {d["what"]: d for d in rows if d["run"] == run and d["tokens"] == t and d["timing"] == timing}
                kd, nd = k.get("kinet_dispatch_combine"), k.get("nccl_dispatch_combine")
                ka, na = k.get("kinet_alltoall"), k.get("nccl_alltoall")
                if kd and nd:
                    lines.append("- T=%d (%s): dispatch+combine latency NCCL/kinet = %.2fx; bandwidth kinet/NCCL = %.0f%%"
                                 % (t, timing, nd["median_us"] / kd["median_us"], 100 * kd["gb_per_s"] / max(nd["gb_per_s"], 1e-9)))
                if ka and na:
                    lines.append("- T=%d (%s): all-to-all latency NCCL/kinet = %.2fx; bandwidth kinet/NCCL = %.0f%%"
                                 % (t, timing, na["median_us"] / ka["median_us"], 100 * ka["gb_per_s"] / max(na["gb_per_s"], 1e-9)))
        lines.append("")
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    rows = load(out)
    if not rows:
        sys.exit("plot.py: no results-*.jsonl in %s" % out)
    for run in sorted({d["run"] for d in rows}):
        plot(out, rows, run)
    summary(out, rows)
    print("plot.py: wrote plots and summary.md into %s" % out)


if __name__ == "__main__":
    main()
