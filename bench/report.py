#!/usr/bin/env python3
"""Regenerates docs/benchmarks/README.md and its pages docs/benchmarks/*.md (and docs/benchmarks/img/*.png) from a bench/run.sh
output directory.

    python3 bench/report.py OUTDIR [--docs DIR]

Reads OUTDIR/results.jsonl (one kinet-perf JSON document per line) and
OUTDIR/machine.json.  Every result is shown beside the floor measured in the
same kinet-perf run and beside the CPU-initiated alternative; the targets
of issue 5 are printed as target vs measured (also on stdout).  Without
matplotlib the report has tables only, and says so.
"""
import json
import re
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    HAVE_MPL = True
except Exception:  # any import problem: tables only
    HAVE_MPL = False


def load(outdir):
    docs = []
    path = os.path.join(outdir, "results.jsonl")
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                docs.append(json.loads(line))
            except ValueError as e:
                print(f"report.py: {path}:{n}: skipped, not JSON ({e})", file=sys.stderr)
    machine = {}
    mpath = os.path.join(outdir, "machine.json")
    if os.path.exists(mpath):
        with open(mpath) as f:
            machine = json.load(f)
    return docs, machine


def rows(docs):
    """Every result, with its document (floors, command) attached."""
    out = []
    for d in docs:
        for r in d.get("results", []):
            r = dict(r)
            r["_doc"] = d
            out.append(r)
    return out


def fmt_size(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def f3(x):
    return "-" if x is None else f"{x:.3f}"


def f2(x):
    return "-" if x is None else f"{x:.2f}"


def lat(r, key="median"):
    return r.get("lat_us", {}).get(key)


def copy_floor(r):
    for c in ((r["_doc"].get("floors") or {}).get("copy") or []):
        if c["size"] == r["size"]:
            return c
    return None


def rtt(doc):
    fl = doc.get("floors") or {}
    return (fl.get("rtt_us") or {}).get("median")


def ok(r):
    return r.get("status", 1) == 0


def table(header, body):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for b in body:
        lines.append("| " + " | ".join(str(x) for x in b) + " |")
    return "\n".join(lines) + "\n"


def pick(rs, **kw):
    out = []
    for r in rs:
        if all(r.get(k) == v for k, v in kw.items()):
            out.append(r)
    return out


def path_name(r):
    return f'{r["src_mem"]}->{r["dst_mem"]}'


# ---------------------------------------------------------------- targets


def targets(rs):
    """[(target, measured, verdict)]"""
    res = []

    # 1. 8-byte put to host memory, GPU-initiated, completion seen by the kernel.
    c = [r for r in pick(rs, op="write", mode="lat", initiator="gpu", size=8, dst_mem="host")
         if ok(r) and "--db" not in (r["_doc"].get("command") or "")]
    if c:
        r = c[0]
        fl = rtt(r["_doc"])
        m = lat(r)
        if fl:
            ratio = m / fl
            res.append(("8 B put to host memory, GPU-initiated, median <= 1.5x GPU<->CPU round trip",
                        f"{m:.3f} us vs round trip {fl:.3f} us = {ratio:.2f}x",
                        "MET" if ratio <= 1.5 else "NOT MET"))
        else:
            res.append(("8 B put latency <= 1.5x round trip", f"{m:.3f} us, no floor measured", "n/a"))
    else:
        res.append(("8 B put latency <= 1.5x round trip", "no result", "n/a"))

    # 2. Message rate of 8-byte puts, many threads over many QPs.
    rate = [r for r in pick(rs, op="write", mode="rate", initiator="gpu", size=8) if ok(r)]
    by_eng, busy = {}, {}
    for r in rate:
        e = r["engine_threads"]
        if r["mops"] > by_eng.get(e, 0):
            by_eng[e] = r["mops"]
            busy[e] = (r.get("engine") or {}).get("busy_max")
    if by_eng:
        best1 = by_eng.get(1)
        engs = sorted(by_eng)
        trend = ", ".join(f"{e} eng: {by_eng[e]:.2f}" for e in engs)
        res.append(("8 B put rate, one engine thread >= 20 M/s",
                    f"{best1:.2f} M/s" if best1 is not None else "no 1-engine result",
                    "MET" if best1 is not None and best1 >= 20 else "NOT MET"))
        # More engine threads must help while the engines are the limit;
        # when the added ones leave the busiest idle (< 90 % busy) the
        # posters are, and a flat rate is the GPU side's limit.
        grows = all(by_eng[b] > 1.05 * by_eng[a] or (busy[b] is not None and busy[b] < 0.9)
                    for a, b in zip(engs, engs[1:]))
        limit = ", ".join(f"{e} eng: {100 * busy[e]:.0f}%" for e in engs if busy[e] is not None)
        res.append(("8 B put rate grows with engine threads until the posters are the limit",
                    f"best M/s per engine count: {trend}; busiest engine thread: {limit}",
                    "MET" if len(engs) > 1 and grows else "NOT MET"))
        best = max(by_eng.values())
        res.append(("8 B put rate with several engine threads >= 50 M/s", f"{best:.2f} M/s",
                    "MET" if best >= 50 else "NOT MET"))
    else:
        res.append(("8 B put rate >= 20 M/s", "no result", "n/a"))

    # 3. Large puts: >= 90 % of the copy bandwidth of the same path.
    big = [r for r in pick(rs, op="write", mode="bw", initiator="gpu") if ok(r) and r["size"] >= (1 << 20)]
    paths = {}
    for r in big:
        c = copy_floor(r)
        if c and c["copy_GBs"] > 0:
            paths.setdefault(path_name(r), []).append((r["size"], r["bw_GBs"], c["copy_GBs"]))
    if paths:
        for p, v in sorted(paths.items()):
            worst = min(v, key=lambda t: t[1] / t[2])
            best = max(v, key=lambda t: t[1] / t[2])
            res.append((f"puts >= 1 MiB ({p}) >= 90% of cudaMemcpyAsync bandwidth of the same path",
                        f"worst {fmt_size(worst[0])}: {worst[1]:.2f}/{worst[2]:.2f} GB/s = "
                        f"{100 * worst[1] / worst[2]:.0f}%; best {fmt_size(best[0])}: "
                        f"{100 * best[1] / best[2]:.0f}%",
                        "MET" if worst[1] >= 0.9 * worst[2] else "NOT MET"))
    else:
        res.append(("puts >= 1 MiB >= 90% of copy bandwidth", "no result", "n/a"))

    # 4. Compute + put + wait at <= 4 KiB: GPU-initiated >= 3x faster.  A
    # command's bound is what free communication would give (kernel
    # boundary over compute alone): where it is below 3x the compute step,
    # not the put, decides, and the row says how much of the bound is
    # reached; the verdict is on the commands whose bound allows 3x.
    # A loop's code posts with the form it chooses, thread 0's or the
    # block's (--group block: the block that computed stages and posts), so
    # commands that differ only in the form (and its --stage-bytes) are one
    # loop, judged by the better form at each size.
    it = [r for r in pick(rs, mode="iter") if ok(r)]
    pairs = {}
    for r in it:
        key = (r["_doc"].get("command"), r["size"])
        pairs.setdefault(key, {})[r["variant"]] = r
    loop_of = lambda cmd: re.sub(r" --(group \w+|stage-bytes \d+)", "", cmd or "")
    best = {}  # (loop, size) -> (sp, bound, g, c, src, co, form, other forms)
    for (cmd, size), v in pairs.items():
        g, c, co = v.get("gpu-persistent"), v.get("cpu-kernel-boundary"), v.get("compute-only")
        if g and c and co and lat(g) and lat(co):
            x = (lat(c) / lat(g), lat(c) / lat(co), lat(g), lat(c), g["src_mem"], lat(co), g.get("group", "thread"))
            cur = best.get((loop_of(cmd), size))
            if cur is None:
                best[(loop_of(cmd), size)] = x + ([],)
            else:
                lo, hi = sorted([cur[:7], x], key=lambda y: y[0])
                best[(loop_of(cmd), size)] = hi + (cur[7] + [lo],)
    per_cmd = {}
    for (loop, size), x in best.items():
        if loop not in per_cmd or x[0] < per_cmd[loop][0]:
            per_cmd[loop] = (x[0], x[1], size) + x[2:]
    if per_cmd:
        free = [x for x in per_cmd.values() if x[1] >= 3]
        capped = [x for x in per_cmd.values() if x[1] < 3]
        parts = []
        for sp, bound, size, g, c, src, co, form, others in sorted(free, key=lambda x: x[0]):
            also = "".join(f"; {o[6]} form {o[0]:.2f}x" for o in others)
            parts.append(f"compute {co:.1f} us, src {src}, worst {fmt_size(size)}: {c:.2f} / {g:.2f} us = "
                         f"{sp:.2f}x ({form} form{also})")
        for sp, bound, size, g, c, src, co, form, others in sorted(capped, key=lambda x: x[0]):
            parts.append(f"compute {co:.1f} us, src {src}: bounded by the compute at {bound:.2f}x (free "
                         f"communication), worst {fmt_size(size)} {sp:.2f}x = {100 * sp / bound:.0f}% of it")
        verdict = ("MET" if free and all(x[0] >= 3 for x in free) else
                   "NOT MET" if free else "n/a (no command's compute allows 3x)")
        res.append(("compute+put+wait <= 4 KiB: GPU-initiated >= 3x faster than kernel boundary "
                    "(where the compute step allows it)", "; ".join(parts), verdict))
    else:
        res.append(("compute+put+wait >= 3x", "no result", "n/a"))
    return res


def remote_targets(outdir):
    """Rows for the remote path from bench/ofi_compare.sh's summaries
    (run.sh section 8: ofi-shm.txt, ofi-tcp.txt)."""
    res = []
    for prov, name in (("shm", "shm"), ("tcp", "tcp;ofi_rxm in two netns")):
        path = os.path.join(outdir, f"ofi-{prov}.txt")
        if not os.path.exists(path):
            continue
        vals, skip = {}, None
        with open(path) as f:
            for line in f:
                m = re.match(r"(lat|rate) 8 B (?:us|M/s) \(([A-Za-z0-9, -]+)\)\s+([0-9.]+)\s+([0-9.]+)\s", line)
                if m:
                    vals[(m.group(1), m.group(2))] = (float(m.group(3)), float(m.group(4)))
                elif re.search(r"\bSKIP: ", line):
                    skip = line.split("SKIP: ", 1)[1].strip()
        lat_c, lat_g = vals.get(("lat", "cpu-initiated")), vals.get(("lat", "gpu-initiated"))
        if lat_c:
            ratio = lat_c[0] / lat_c[1]
            also = f"; GPU-initiated {lat_g[0]:.2f} us (adds the GPU<->CPU round trip)" if lat_g else ""
            res.append((f"remote path over {name}: 8 B write latency <= 1.3x libfabric's round trip",
                        f"CPU-initiated {lat_c[0]:.2f} us vs {lat_c[1]:.2f} us = {ratio:.2f}x{also}",
                        "MET" if ratio <= 1.3 else "NOT MET"))
        else:
            res.append((f"remote path over {name}", f"skipped: {skip}" if skip else "no result (log.txt)",
                        "n/a"))
        rate_c, rate_g = vals.get(("rate", "cpu-initiated")), vals.get(("rate", "gpu, 16 QPs"))
        rate_g4 = vals.get(("rate", "gpu, 16 QPs, 4 engines"))
        if rate_c:
            pct = 100 * rate_c[0] / rate_c[1]
            also = (f"; GPU-initiated, 16 QPs: {rate_g[0]:.2f} M/s = {100 * rate_g[0] / rate_g[1]:.0f}%"
                    if rate_g else "")
            if rate_g4:
                also += f" (4 engine threads: {rate_g4[0]:.2f} M/s)"
            res.append((f"remote path over {name}: 8 B write rate >= 80% of libfabric's",
                        f"CPU-initiated {rate_c[0]:.2f} vs {rate_c[1]:.2f} M/s = {pct:.0f}%{also}",
                        "MET" if pct >= 80 else "NOT MET"))
    return res


# ---------------------------------------------------------------- plots


def plot_lat(rs, path):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for cmd_rows in group_by_doc(pick(rs, op="write", mode="lat")):
        sizes = sorted({r["size"] for r in cmd_rows})
        if len(sizes) < 3:
            continue
        for init, style in (("gpu", "-o"), ("cpu", "--s")):
            pts = sorted((r["size"], lat(r)) for r in cmd_rows if r["initiator"] == init and ok(r))
            if pts:
                p = path_name(cmd_rows[0])
                ax.plot([x for x, _ in pts], [y for _, y in pts], style, ms=3, label=f"{init}-initiated {p}")
        fl = rtt(cmd_rows[0]["_doc"])
        if fl:
            ax.axhline(fl, color="gray", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("median latency (us)")
    ax.set_title("write latency vs size (dotted: GPU<->CPU round trip)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_bw(rs, path):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for cmd_rows in group_by_doc(pick(rs, mode="bw")):
        r0 = cmd_rows[0]
        p = f'{r0["op"]} {path_name(r0)}'
        for init, style in (("gpu", "-o"), ("cpu", "--s")):
            pts = sorted((r["size"], r["bw_GBs"]) for r in cmd_rows if r["initiator"] == init and ok(r))
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], style, ms=3, label=f"{init} {p}")
        cps = sorted((c["size"], c["copy_GBs"]) for c in ((r0["_doc"].get("floors") or {}).get("copy") or []))
        if cps:
            ax.plot([x for x, _ in cps], [y for _, y in cps], ":", color="gray", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("GB/s")
    ax.set_title("bandwidth vs size (dotted: cudaMemcpyAsync, same path)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_rate(rs, path):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    rate = [r for r in pick(rs, op="write", mode="rate", size=8) if ok(r)]
    for eng in sorted({r["engine_threads"] for r in rate}):
        for init, style in (("gpu", "-o"), ("cpu", "--s")):
            pts = sorted((r["qps"], r["mops"]) for r in rate if r["engine_threads"] == eng and r["initiator"] == init)
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], style, ms=3, label=f"{init}, {eng} engine thr")
    ax.axhline(20, color="gray", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("QPs (32 posting GPU threads per QP; CPU: 1 thread per QP)")
    ax.set_ylabel("M puts/s (8 B)")
    ax.set_title("message rate (dotted: 20 M/s target)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def group_by_doc(rs):
    groups = {}
    for r in rs:
        groups.setdefault(id(r["_doc"]), []).append(r)
    return list(groups.values())


# ---------------------------------------------------------------- report


INDEX = "README.md"
# The pages of the report under docs/benchmarks/: the generated ones, then
# those written from other runs (kept as they are, listed when present).
PAGES = [
    ("limits.md", "What limits each target",
     "where the time of each target goes (bench/latency_breakdown, profiling)"),
    ("latency.md", "Floors and latency",
     "the physical floors measured in the same run; latency of every operation at 8 B and against size"),
    ("bandwidth.md", "Bandwidth, message rate, compute + put",
     "bandwidth against size and cudaMemcpyAsync, message rate, a compute loop with a put per iteration"),
    ("commands.md", "Commands", "the sweep, command by command"),
    ("peer-path.md", "Two GPUs: the peer path",
     "from another run: GPUs of one host, device loads and stores instead of WQEs"),
    ("pingpong.md", "One GPU, two contexts: ping-pong",
     "from another run: ping-pong between two contexts of one GPU"),
    ("h200-one-gpu.md", "One H200, 2026-12-01",
     "from another run: the peer path after its two-round-trip checks, the software NIC after issue 16, "
     "the header split's perf check"),
    ("h200-two-gpu.md", "Two H200s, 2026-12-01",
     "from another run: the peer path over NVLink against issue 10's targets, the software NIC's rate on "
     "32 cores, all-to-all and MoE dispatch/combine beside NCCL"),
    ("verbs.md", "The verbs front door",
     "from another run: perftest over kinet's libibverbs beside kinet-perf (bench/verbs_compare.sh)"),
]
GENERATED = {"latency.md", "bandwidth.md", "commands.md"}
# limits.md (what limits each target) is measured by hand (bench/latency_breakdown
# and profiling) and written there: the report lists it, never rewrites it.
# Sections of the index that point to measurements made with other tools
# (kept as written, after the targets).
POINTERS = """## The software NIC at full speed (issue 16)

Completion word, completion moderation, combined doorbells of shared QPs,
one-sided fences, engine threads without shared locks, and the remote path
beside libfabric's own: measurements (development machine, emulation and
ofi) and the H200 commands in
[software-nic.md](software-nic.md); the design in
[architecture/message-rate.md](../architecture/message-rate.md); the rate
on 32 cores, posters against engine threads, in
[h200-two-gpu.md](h200-two-gpu.md).

## Device all-to-all and MoE dispatch/combine, beside NCCL

Measured on two H200s: [alltoall.md](alltoall.md)
(`kinet-alltoall-bench`, `bench/alltoall/run-gpu.sh`): kinet's device
all-to-all and DeepEP-style dispatch/combine against NCCL's all-to-all of
the same bytes.
"""


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    docs_dir = os.path.join(ROOT, "docs")
    if "--docs" in argv:
        docs_dir = argv[argv.index("--docs") + 1]
        args = [a for a in args if a != docs_dir]
    outdir = args[0] if args else "bench-out"
    docs, machine = load(outdir)
    if not docs:
        print(f"report.py: no results in {outdir}/results.jsonl", file=sys.stderr)
        return 1
    rs = rows(docs)
    emulated = any(d.get("emulated") for d in docs)
    img_dir = os.path.join(docs_dir, "benchmarks", "img")
    os.makedirs(img_dir, exist_ok=True)

    # The index (docs/benchmarks/README.md) and its pages (docs/benchmarks/): each
    # section is written to the page open at the time.
    pages = {}
    cur = []

    def w(text):
        cur.append(text)

    def page(name, title):
        nonlocal cur
        cur = pages.setdefault(name, [])
        if name != INDEX:
            cur.append(f"# kinet benchmarks: {title}\n")
            cur.append("Part of [the benchmarks](README.md).\n")

    page(INDEX, None)
    w("# kinet benchmarks\n")
    commit = machine.get("commit") or docs[0].get("commit") or "unknown"
    w("Generated by `bench/report.py` from the output of `bench/run.sh` (kinet-perf). Do not edit by hand: "
      "re-run the sweep and the report.\n")
    w(f"Measured at commit {commit}: `git log {commit}..` lists what changed since. Sections added after "
      "the generated ones come from other runs and name their own commits.\n")
    if emulated:
        w("> **Host emulation.** These numbers come from a machine without a GPU: the device code ran on CPU "
          "threads and the floors are CPU floors (thread-to-thread ping-pong, memcpy). They check that the "
          "benchmark works; they say nothing about GPU performance.\n")

    d0 = docs[0]
    m = d0.get("machine", {})
    w("## Machine and build\n")
    w(table(["", ""], [
        ["GPU", machine.get("gpu") or m.get("device", "?")],
        ["driver / CUDA", f'{machine.get("driver", "?")} / {machine.get("cuda", "?")}'],
        ["CPU", f'{machine.get("cpu") or m.get("cpu", "?")} ({machine.get("cores") or m.get("cores", "?")} cores)'],
        ["provider", d0.get("provider", "?") + " (software NIC: engine threads execute the WQEs)"],
        ["topology", d0.get("topology", "loopback") + " (initiator and target QPs in one process)"],
        ["commit", commit],
        ["date", machine.get("date", "?")],
        ["sweep wall time", f'{machine.get("wall_s", "?")} s, {machine.get("failed", 0)} failed, '
                            f'{machine.get("skipped", 0)} skipped commands'],
    ]))

    w("## Targets\n")
    tg = targets(rs) + remote_targets(outdir)
    w(table(["target", "measured (same run)", "verdict"], tg))
    print("target vs measured:")
    for t, meas, v in tg:
        print(f"  [{v}] {t}: {meas}")
    w(POINTERS)
    w("## Pages\n")
    w("\n".join(f"- [{title}]({name}): {what}" for name, title, what in PAGES
                 if name in GENERATED or os.path.exists(os.path.join(docs_dir, "benchmarks", name))) + "\n")

    # Floors
    page("latency.md", "Floors and latency")
    w("## Floors\n")
    w("Measured by every kinet-perf run before its QPs exist; the values below are from the first run "
      "(`" + (d0.get("command") or "") + "`).\n")
    fl = d0.get("floors") or {}
    if fl:
        lab = fl.get("labels", {})
        body = []
        for key, name in (("rtt_us", "rtt"), ("launch_sync_us", "launch_sync"), ("small_copy_sync_us", "small_copy_sync")):
            s = fl.get(key) or {}
            body.append([lab.get(name, key), f3(s.get("median")), f3(s.get("p5")), f3(s.get("p95")),
                         f3(s.get("min")), f3(s.get("max"))])
        w(table(["floor", "median us", "p5", "p95", "min", "max"], body))
    copies = {}
    for d in docs:
        f = d.get("floors") or {}
        label = (f.get("labels") or {}).get("copy", "copy")
        for c in f.get("copy") or []:
            copies[(label, c["size"])] = c
    big = sorted(k for k in copies if k[1] >= (1 << 20))
    if big:
        w("Copy bandwidth of the paths used (GB/s, 1e9 B/s):\n")
        w(table(["path", "size", "cudaMemcpyAsync", "memcpy host->host"],
                [[k[0], fmt_size(k[1]), f2(copies[k]["copy_GBs"]), f2(copies[k]["memcpy_GBs"])] for k in big]))

    # Latency of all ops
    w("## Latency, 8 B, every operation\n")
    w("Per operation: post, then wait for its completion in the initiator (the kernel for GPU-initiated, "
      "the host thread for CPU-initiated). Microseconds; `x rtt` is the median over the GPU<->CPU round "
      "trip of the same run.\n")
    body = []
    for r in rs:
        if r["mode"] != "lat" or r["size"] != 8 or r["dst_mem"] != "host" or r["src_mem"] != "host":
            continue
        if len({x["size"] for x in r["_doc"]["results"]}) > 1:
            continue  # the size sweeps come below
        fl_rtt = rtt(r["_doc"])
        if ok(r):
            body.append([r["op"], r["initiator"], r["db"], f3(lat(r)), f3(lat(r, "p5")), f3(lat(r, "p95")),
                         f3(lat(r, "min")), f3(lat(r, "max")), f2(lat(r) / fl_rtt) if fl_rtt else "-"])
        else:
            body.append([r["op"], r["initiator"], r["db"], "FAILED: " + r.get("error", ""), "", "", "", "", ""])
    w(table(["op", "initiator", "doorbell", "median", "p5", "p95", "min", "max", "x rtt"], body))

    # Latency vs size
    w("## Latency vs size\n")
    if HAVE_MPL:
        plot_lat(rs, os.path.join(img_dir, "lat_vs_size.png"))
        w("![latency vs size](img/lat_vs_size.png)\n")
    for g in group_by_doc([r for r in rs if r["mode"] == "lat"]):
        if len({r["size"] for r in g}) < 3:
            continue
        w(f'`{g[0]["_doc"].get("command")}`\n')
        body = []
        for size in sorted({r["size"] for r in g}):
            gg = [r for r in g if r["size"] == size and r["initiator"] == "gpu"]
            cc = [r for r in g if r["size"] == size and r["initiator"] == "cpu"]
            gl = lat(gg[0]) if gg and ok(gg[0]) else None
            cl = lat(cc[0]) if cc and ok(cc[0]) else None
            body.append([fmt_size(size), f3(gl), f3(lat(gg[0], "p5")) if gl else "-",
                         f3(lat(gg[0], "p95")) if gl else "-", f3(cl), f2(cl / gl) if gl and cl else "-"])
        w(table(["size", "GPU median us", "p5", "p95", "CPU-initiated median us", "CPU/GPU"], body))

    # Bandwidth
    page("bandwidth.md", "Bandwidth, message rate, compute + put")
    w("## Bandwidth vs size\n")
    w("Each posting thread keeps a window of 64 operations outstanding; bandwidth = bytes / time of the "
      "timed window (after a warm-up and a grid barrier). `% copy` is against cudaMemcpyAsync of the same "
      "size and direction in the same run.\n")
    if HAVE_MPL:
        plot_bw(rs, os.path.join(img_dir, "bw_vs_size.png"))
        w("![bandwidth vs size](img/bw_vs_size.png)\n")
    for g in group_by_doc([r for r in rs if r["mode"] == "bw"]):
        w(f'`{g[0]["_doc"].get("command")}`\n')
        body = []
        for size in sorted({r["size"] for r in g}):
            gg = [r for r in g if r["size"] == size and r["initiator"] == "gpu" and ok(r)]
            cc = [r for r in g if r["size"] == size and r["initiator"] == "cpu" and ok(r)]
            c = copy_floor(g[0] if not gg else gg[0]) if g else None
            gb = gg[0]["bw_GBs"] if gg else None
            cb = cc[0]["bw_GBs"] if cc else None
            cp = c["copy_GBs"] if c else None
            body.append([fmt_size(size), f2(gb), f2(cb), f2(cp), f2(c["memcpy_GBs"]) if c else "-",
                         f"{100 * gb / cp:.0f}%" if gb and cp else "-"])
        w(table(["size", "GPU-initiated GB/s", "CPU-initiated GB/s", "cudaMemcpyAsync GB/s", "memcpy GB/s",
                 "GPU % copy"], body))

    # Rate
    w("## Message rate\n")
    w("8-byte operations; GPU: 32 posting threads per block, one block per QP; CPU-initiated: one host "
      "thread per QP. M operations per second.\n")
    if HAVE_MPL:
        plot_rate(rs, os.path.join(img_dir, "rate.png"))
        w("![message rate](img/rate.png)\n")
    body = []
    for r in sorted([r for r in rs if r["mode"] == "rate"],
                    key=lambda r: (r["op"], r["engine_threads"], r["qps"], r["initiator"])):
        body.append([r["op"], r["initiator"], r["engine_threads"], r["qps"], r["threads"] * r["blocks"],
                     r["sharing"], f2(r["mops"]) if ok(r) else "FAILED: " + r.get("error", "")])
    w(table(["op", "initiator", "engine threads", "QPs", "posting threads", "sharing", "M ops/s"], body))

    # Iteration
    w("## Compute + put + wait per iteration\n")
    w("One block computes (a fixed few microseconds of arithmetic over a buffer), then its thread 0 (form `thread`) "
      "or the whole block (`block`: the _block calls) puts SIZE bytes of the result and waits for completion. `gpu-persistent`: one kernel does every "
      "iteration; `cpu-kernel-boundary`: a compute kernel per iteration, the host posts the put after it "
      "ends and waits; `compute-only`: the persistent kernel without the put. Microseconds per "
      "iteration. `bound`: kernel boundary over compute-only, the speed-up free communication would "
      "give (below 3x the compute step, not the put, decides). GPU-memory sources are staged by the "
      "posting thread ([staged sources](../device-api/staged-sources.md)).\n")
    body = []
    for g in group_by_doc([r for r in rs if r["mode"] == "iter"]):
        for size in sorted({r["size"] for r in g}):
            v = {r["variant"]: r for r in g if r["size"] == size}
            gp, cb, co = v.get("gpu-persistent"), v.get("cpu-kernel-boundary"), v.get("compute-only")
            cell = lambda r: f'{lat(r):.2f} ({lat(r, "p5"):.2f}..{lat(r, "p95"):.2f})' if r and ok(r) else "-"
            sp = f2(lat(cb) / lat(gp)) if gp and cb and ok(gp) and ok(cb) else "-"
            bound = f2(lat(cb) / lat(co)) if co and cb and ok(co) and ok(cb) else "-"
            form = gp.get("group", "thread") if gp else "-"
            body.append([fmt_size(size), g[0]["src_mem"], form, cell(gp), cell(cb), cell(co), sp, bound])
    w(table(["size", "src", "form", "gpu-persistent median (p5..p95)", "cpu-kernel-boundary", "compute-only",
             "speed-up", "bound (free communication)"], body))

    page("commands.md", "Commands")
    w("## Commands\n")
    w("Built with `cmake -S . -B build-gpu && make -C build-gpu`, then `bench/run.sh OUT` and "
      "`python3 bench/report.py OUT`. Each command below also prints its own table "
      "(`kinet-perf --help` for the options).\n")
    cmds = machine.get("commands") or [d.get("command") for d in docs]
    w("```\n" + "\n".join(c for c in cmds if c) + "\n```\n")
    if not HAVE_MPL:
        w("_matplotlib was not available when this report was generated: tables only, no plots._\n")

    os.makedirs(os.path.join(docs_dir, "benchmarks"), exist_ok=True)
    for name, md in pages.items():
        path = os.path.join(docs_dir, "benchmarks", name)
        with open(path, "w") as f:
            f.write("\n".join(md))
        print(f"report.py: wrote {path}" + ("" if HAVE_MPL else " (tables only: matplotlib not available)"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
