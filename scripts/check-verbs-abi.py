#!/usr/bin/env python3
"""Does kinet's verbs front door export every versioned symbol that
Debian's verbs programs and libraries import?

    check-verbs-abi.py BUILD_VERBS_DIR

BUILD_VERBS_DIR holds the built libibverbs.so.1, libmlx5.so.1 and
libefa.so.1 (<build>/lib/verbs).  The consumers are the installed
ibverbs-utils (ibv_*), perftest (ib_*, raw_ethernet_*), librdmacm and
libfabric, found through dpkg -L so that any architecture works.  Debian
links them BIND_NOW: a single import that kinet lacks and the program does
not start at all, so every IBVERBS_*/MLX5_*/EFA_* import is checked, not
only those a test happens to call.

Prints one line per missing "symbol@VERSION (needed by X)" and exits 1;
else prints how many imports were checked.  A second check loads each
consumer with kinet's folder first on the library path (ldd -r under
LD_BIND_NOW) and fails on any unresolved symbol of kinet's libraries.
Exits 77 (SKIP) when ibverbs-utils or perftest is not installed.
"""

import os
import re
import subprocess
import sys

SKIP = 77
OURS = {"IBVERBS": "libibverbs.so.1", "MLX5": "libmlx5.so.1", "EFA": "libefa.so.1"}
NODE = re.compile(r"^(IBVERBS|MLX5|EFA)_")


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def dpkg_files(pkg):
    r = run(["dpkg", "-L", pkg])
    return r.stdout.splitlines() if r.returncode == 0 else None


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def consumers():
    """[(path, package)] of the installed programs and libraries to check."""
    found = []
    for pkg in ("ibverbs-utils", "perftest"):
        files = dpkg_files(pkg)
        if files is None:
            print("SKIP: %s is not installed, or no dpkg (apt-get install ibverbs-utils perftest)" % pkg)
            sys.exit(SKIP)
        for p in files:
            name = os.path.basename(p)
            if "/bin/" in p and re.match(r"^(ibv_|ib_|raw_ethernet_)", name) and is_elf(p):
                found.append((p, pkg))
    # The libraries: optional (a machine may lack libfabric), found by
    # package where dpkg knows them.
    for pkg, soname in (("librdmacm1", "librdmacm.so.1"), ("libfabric1", "libfabric.so.1")):
        files = dpkg_files(pkg) or []
        paths = [p for p in files if os.path.basename(p) == soname and os.path.exists(p)]
        if paths:
            found.append((paths[0], pkg))
        else:
            print("note: %s (%s) not installed, not checked" % (soname, pkg))
    return found


def dyn_syms(path):
    """[(name, version, defined, default)] from readelf --dyn-syms."""
    out = []
    r = run(["readelf", "--dyn-syms", "-W", path])
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":") or "@" not in f[7]:
            continue
        if f[6] == "ABS":
            continue
        name, _, ver = f[7].partition("@")
        default = ver.startswith("@")
        ver = ver.lstrip("@")
        # readelf appends " (n)" for the version index on some versions.
        ver = ver.split()[0].split("(")[0]
        out.append((name, ver, f[6] != "UND", default))
    return out


def weak_defs(path):
    """(name, version) of the weak definitions: the stubs left unimplemented."""
    out = set()
    for line in run(["readelf", "--dyn-syms", "-W", path]).stdout.splitlines():
        f = line.split()
        if len(f) >= 8 and f[4] == "WEAK" and f[6] != "UND" and "@" in f[7]:
            name, _, ver = f[7].partition("@")
            out.add((name, ver.lstrip("@").split()[0]))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check-verbs-abi.py BUILD_VERBS_DIR")
    verbs_dir = os.path.abspath(sys.argv[1])
    exported, weak = set(), set()
    for soname in OURS.values():
        lib = os.path.join(verbs_dir, soname)
        if not os.path.exists(lib):
            print("FAIL: %s not built" % lib)
            return 1
        exported.update((n, v) for n, v, defined, _ in dyn_syms(lib) if defined)
        weak.update(weak_defs(lib))

    targets = consumers()
    missing, checked = [], set()
    for path, _ in targets:
        for name, ver, defined, _ in dyn_syms(path):
            if defined or not NODE.match(ver):
                continue
            checked.add((name, ver, path))
            if (name, ver) not in exported:
                missing.append("%s@%s (needed by %s)" % (name, ver, path))
    for m in sorted(missing):
        print(m)

    # Load check: resolve every consumer against kinet's folder, as
    # kinet-verbs runs them.  ldd -r reports each unresolved symbol with the
    # library whose version it asked for.
    env = dict(os.environ, LD_LIBRARY_PATH=verbs_dir, LD_BIND_NOW="1")
    load_fail = []
    for path, _ in targets:
        r = run(["ldd", "-r", path], env=env)
        text = r.stdout + r.stderr
        for line in text.splitlines():
            if ("symbol not found" in line or "undefined symbol" in line or "version `" in line) and \
                    any(s in line for s in OURS.values()):
                load_fail.append("%s: %s" % (path, line.strip()))
        # The consumer must load kinet's libraries, not the system's.
        for soname in OURS.values():
            m = re.search(r"^\s*%s => (\S+)" % re.escape(soname), text, re.M)
            if m and os.path.dirname(os.path.realpath(m.group(1))) != os.path.realpath(verbs_dir):
                load_fail.append("%s: %s resolves to %s, not kinet's" % (path, soname, m.group(1)))
    for l in load_fail:
        print("load: " + l)

    # Not a failure: a stub loads, and fails only when called.
    stubbed = sorted({"%s@%s" % (n, v) for n, v, _ in checked if (n, v) in weak})
    if stubbed:
        print("imported but still stubs (EOPNOTSUPP when called), %d: %s" % (len(stubbed), " ".join(stubbed)))
    binaries = len({p for _, _, p in checked})
    imports = len({(n, v) for n, v, _ in checked})
    if missing or load_fail:
        print("FAIL: %d of %d imports (%d distinct symbol versions, %d consumers) missing, %d load errors"
              % (len(missing), len(checked), imports, len(targets), len(load_fail)))
        return 1
    print("OK: all %d verbs imports (%d distinct symbol versions) of %d programs and libraries (%d with verbs "
          "imports) resolve to kinet's exports, and all load" % (len(checked), imports, len(targets), binaries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
