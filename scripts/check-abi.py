#!/usr/bin/env python3
"""Checks libkinet's versioned ABI: the global names of the linker version
script (src/libkinet.map, one node per ABI version: KINET_0.1, ...) are
exactly the functions the public headers declare KINET_API
(include/kinet/), none of which is declared in an implementation header
(include/kinet/device/impl/), and, given the built library, exactly its
exported dynamic symbols, each carrying a version of the map.

  scripts/check-abi.py [--root DIR] [--lib libkinet.so] [--print-map]

A new KINET_API function fails the check until it is added to the map
(to the node of the version that adds it; --print-map prints a map of one
node with every declared name, to start from).  Exits 1 on a mismatch."""
import argparse
import os
import re
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ap.add_argument("--lib", help="the built libkinet.so to check too")
ap.add_argument("--map", help="the version script (default: ROOT/src/libkinet.map)")
ap.add_argument("--print-map", action="store_true")
args = ap.parse_args()
root = os.path.abspath(args.root)
inc = os.path.join(root, "include", "kinet")
mapfile = args.map or os.path.join(root, "src", "libkinet.map")
failed = False


def fail(msg):
    global failed
    failed = True
    print("FAIL: " + msg)


# KINET_API declarations: from the macro to the name before "(", across
# line breaks; comments and the macro's own definition left out.
declared = {}
for d, _, names in os.walk(inc):
    for n in sorted(names):
        if not n.endswith((".h", ".cuh")):
            continue
        path = os.path.join(d, n)
        rel = os.path.relpath(path, root)
        text = open(path, encoding="utf-8").read()
        text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
        text = re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", " ", text, flags=re.M)
        for m in re.finditer(r"\bKINET_API\b([^;{(]*?)\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", text):
            name = m.group(2)
            if os.path.commonpath([path, os.path.join(inc, "device", "impl")]) == os.path.join(inc, "device", "impl"):
                fail(f"{rel} declares {name} KINET_API: an implementation header exports nothing "
                     "(declare it in a public header)")
            if name in declared and declared[name] != rel:
                fail(f"{name} is declared KINET_API in {declared[name]} and {rel}")
            declared[name] = rel
if not declared:
    fail(f"no KINET_API declaration found under {inc}")

if args.print_map:
    print("KINET_0.1 {\n  global:\n" + "".join(f"    {n};\n" for n in sorted(declared)) + "  local: *;\n};")
    sys.exit(0)

# The map: nodes "NAME { global: a; b; local: *; } [PARENT];".
try:
    mtext = open(mapfile, encoding="utf-8").read()
except OSError as e:
    fail(f"cannot read the version script: {e}")
    sys.exit(1)
mtext = re.sub(r"#[^\n]*", " ", mtext)
mapped, nodes = {}, []
for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_.]*)\s*\{(.*?)\}\s*([A-Za-z0-9_.]*)\s*;", mtext, flags=re.S):
    node, body = m.group(1), m.group(2)
    nodes.append(node)
    g = re.search(r"global\s*:(.*?)(local\s*:|$)", body, flags=re.S)
    for name in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*;", g.group(1) if g else ""):
        if name in mapped:
            fail(f"{name} is in two nodes of the map ({mapped[name]}, {node})")
        mapped[name] = node
if not nodes or any(not re.fullmatch(r"KINET_\d+\.\d+", n) for n in nodes):
    fail(f"the map's nodes must be KINET_<major>.<minor>: {nodes}")
for n in sorted(set(declared) - set(mapped)):
    fail(f"{n} ({declared[n]}) is declared KINET_API but not in {os.path.relpath(mapfile, root)}")
for n in sorted(set(mapped) - set(declared)):
    fail(f"{n} is in {os.path.relpath(mapfile, root)} ({mapped[n]}) but declared KINET_API nowhere")

if args.lib:
    try:
        out = subprocess.run(["nm", "-D", "--defined-only", args.lib], check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"nm -D {args.lib}: {e}")
        out = ""
    exported = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 3 or f[1] == "A":  # the version nodes themselves
            continue
        name, _, ver = f[2].partition("@")
        exported[name] = ver.lstrip("@")
    for n in sorted(set(declared) - set(exported)):
        fail(f"{n} is declared KINET_API but {args.lib} does not export it")
    for n in sorted(set(exported) - set(declared)):
        fail(f"{args.lib} exports {n}, which no public header declares KINET_API")
    for n in sorted(set(exported) & set(mapped)):
        if exported[n] != mapped[n]:
            fail(f"{args.lib} exports {n} with version '{exported[n]}', the map says {mapped[n]}")

if failed:
    sys.exit(1)
print(f"ok: {len(declared)} KINET_API functions = the map's {len(mapped)} names ({', '.join(nodes)})"
      + (f" = the {len(declared)} exports of {args.lib}" if args.lib else ""))
