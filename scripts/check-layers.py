#!/usr/bin/env python3
"""Checks the layering of src/: the folders' include graph (and, given a
build directory, their call graph from the library's object files) has no
cycle, and core (src/core) includes or calls nothing of a provider
(src/provider/*): it reaches providers only through src/core/provider.h.
Each outer layer sees core through one header: src/provider/* and
src/boot include only src/core/driver.h of core (besides include/kinet/),
src/verbs only src/core/front.h; given the objects, driver.h must declare
exactly the non-public core functions providers and boot call.

A folder with rooms (src/provider/soft: engine/, rp/, carrier/) keeps its
shared headers at its top (soft.h, transport.h), which every room
includes, and its entry point (provider.c), which includes the rooms: in
the folder graph the top's headers are a node of their own
("src/provider/soft/*.h"), so the rooms' use of them is not taken for a
cycle with the entry point, while a room calling the entry point is.

  scripts/check-layers.py [--root DIR] [--objects BUILD_DIR] [--graph] [--files]

--files also checks the graph of files (includes, and calls from the
objects): no cycle of files that spans two folders; with --graph it prints
the file edges that cross folders.
Exits 1 on a violation; --graph prints the folder edges."""
import argparse
import os
import re
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ap.add_argument("--objects", help="build directory whose library objects give the call graph")
ap.add_argument("--graph", action="store_true")
ap.add_argument("--files", action="store_true", help="also check the graph of files across folders")
args = ap.parse_args()
root = os.path.abspath(args.root)
src = os.path.join(root, "src")

files = []
for d, _, names in os.walk(src):
    files += [os.path.join(d, n) for n in names if n.endswith((".c", ".h"))]
search = [src, os.path.join(src, "core")] + sorted(
    os.path.join(src, "provider", p) for p in os.listdir(os.path.join(src, "provider"))
) if os.path.isdir(os.path.join(src, "provider")) else [src, os.path.join(src, "core")]


def has_rooms(d):
    """Whether folder d has subfolders holding sources."""
    for sub, _, names in os.walk(d):
        if sub != d and any(n.endswith((".c", ".h")) for n in names):
            return True
    return False


rooms_cache = {}


def folder(path):
    d = os.path.dirname(path)
    rel = os.path.relpath(d, root)
    if path.endswith(".h"):
        if d not in rooms_cache:
            rooms_cache[d] = has_rooms(d)
        if rooms_cache[d]:
            return rel + "/*.h"
    return rel


def resolve(f, inc):
    for d in [os.path.dirname(f)] + search:
        p = os.path.normpath(os.path.join(d, inc))
        if os.path.isfile(p):
            return p
    return None


def scc(edges):
    """Tarjan: the strongly connected components of more than one node."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    nodes = set(edges) | {b for v in edges.values() for b in v}

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def is_core(fo):
    return fo == "src/core"


def is_provider(fo):
    return fo.startswith("src/provider/")


# The one core header each outer layer includes (besides include/kinet/):
# providers and boot see core through driver.h, the verbs front door
# through front.h; the rest of core (internal.h and what it gathers) is
# core's own.
CORE_DOORS = (("src/provider", "driver.h"), ("src/boot", "driver.h"), ("src/verbs", "front.h"))


bad = 0
inc_edges = {}
file_edges = {}  # file -> files it includes or calls (paths relative to root)
for f in files:
    for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(f, errors="replace").read(), re.M):
        p = resolve(f, inc)
        if not p or not p.startswith(src + os.sep):
            continue
        file_edges.setdefault(os.path.relpath(f, root), set()).add(os.path.relpath(p, root))
        a, b = folder(f), folder(p)
        if a != b:
            inc_edges.setdefault(a, set()).add(b)
            if is_core(a) and is_provider(b):
                print(f"core includes a provider's file: {os.path.relpath(f, root)} -> {os.path.relpath(p, root)}")
                bad += 1
            # What each outer layer may see of core: one header each.
            allowed = next((h for pre, h in CORE_DOORS if a == pre or a.startswith(pre + "/")), None)
            if allowed and is_core(b) and os.path.basename(p) != allowed:
                print(f"{a} may include only {allowed} of core: {os.path.relpath(f, root)} includes "
                      f"{os.path.relpath(p, root)}")
                bad += 1

# The library's sources compile once, into the object library
# kinet_objects (src/CMakeLists.txt), which libkinet.so and the white-box
# tests link; CMake puts the objects under <target>.dir.
OBJ_DIR = "kinet_objects.dir"

call_edges = {}
if args.objects:
    objs = []
    for d, _, names in os.walk(args.objects):
        if os.sep + OBJ_DIR + os.sep in d + os.sep:
            objs += [os.path.join(d, n) for n in names if n.endswith(".o")]
    if not objs:
        # An empty call graph has no cycle: say so instead of passing.
        print(f"no object files under {OBJ_DIR} in {args.objects}: the call graph cannot be checked")
        sys.exit(1)
    defined, used, defined_in, used_by_file = {}, {}, {}, {}
    for o in objs:
        rel = o.split(OBJ_DIR + os.sep, 1)[1]
        if not os.path.isfile(os.path.join(src, rel[: -len(".o")])):
            continue  # left over from a source that moved
        fo = "src/" + os.path.dirname(rel).replace(os.sep, "/")
        out = subprocess.run(["nm", o], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBR":
                defined[parts[2]] = fo
                defined_in[parts[2]] = "src/" + rel[: -len(".o")]
            elif len(parts) == 2 and parts[0] == "U":
                used.setdefault(fo, set()).add(parts[1])
                used_by_file.setdefault("src/" + rel[: -len(".o")], set()).add(parts[1])
    for fo, syms in used.items():
        for s in syms:
            to = defined.get(s)
            if to and to != fo:
                call_edges.setdefault(fo, set()).add(to)
                if is_core(fo) and is_provider(to):
                    print(f"core calls into a provider: {fo} uses {s} of {to}")
                    bad += 1

    # The public API (include/kinet/*.h) is open to every layer.
    exported = set()
    for d, _, names in os.walk(os.path.join(root, "include")):
        for n in names:
            if n.endswith(".h"):
                exported |= set(re.findall(r"\b(kinet_\w+)\s*\(", open(os.path.join(d, n), errors="replace").read()))
    # driver.h declares exactly what providers and boot take from core.
    driver = os.path.join(src, "core", "driver.h")
    if os.path.isfile(driver):
        text = re.sub(r"/\*.*?\*/", "", open(driver).read(), flags=re.S)
        declared = set(re.findall(r"\b(kinet_\w+)\s*\(", text))
        needed = set()
        for fo, syms in used.items():
            if is_provider(fo) or fo == "src/boot" or fo.startswith("src/boot/"):
                needed |= {s for s in syms if defined.get(s) == "src/core" and s not in exported}
        for s in sorted(needed - declared):
            print(f"driver.h does not declare {s}, which a provider or boot calls")
            bad += 1
        for s in sorted(declared - needed - exported):
            if s in defined:
                print(f"driver.h declares {s}, which no provider or boot calls")
                bad += 1

    for fi, syms in used_by_file.items():
        for sym in syms:
            to = defined_in.get(sym)
            if to and to != fi:
                file_edges.setdefault(fi, set()).add(to)

if args.files:
    # Files of one folder may call each other both ways (engine.c and
    # execute.c); a cycle through two folders would make them one layer.
    def room(path):
        return os.path.dirname(path)

    for c in scc(file_edges):
        rooms = sorted({room(p) for p in c})
        if len(rooms) > 1:
            print(f"file cycle across folders {', '.join(rooms)}: {' <-> '.join(c)}")
            bad += 1
    if args.graph:
        for a in sorted(file_edges):
            out = sorted(b for b in file_edges[a] if room(b) != room(a))
            if out:
                print(f"file: {a} -> {', '.join(out)}")
    print(f"file graph: {sum(len(v) for v in file_edges.values())} file edges, no cycle across folders"
          if not any(len({room(p) for p in c}) > 1 for c in scc(file_edges)) else "file graph: cycles across folders")

for name, edges in (("include", inc_edges), ("call", call_edges)):
    if name == "call" and not args.objects:
        continue
    if args.graph:
        for a in sorted(edges):
            print(f"{name}: {a} -> {', '.join(sorted(edges[a]))}")
    cycles = scc(edges)
    for c in cycles:
        print(f"{name} cycle between folders: {' <-> '.join(c)}")
        bad += 1
    if not cycles:
        print(f"{name} graph: {sum(len(v) for v in edges.values())} folder edges, no cycle")
sys.exit(1 if bad else 0)
