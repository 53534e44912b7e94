#!/usr/bin/env python3
"""layers.py - ferry's file call graph and its floors (make check).

Theory of operation: every .c file at the top of the tree is compiled to an
object (release flags, no sanitizers, into build/layers/); nm gives, per
object, the symbols it defines and the ones it leaves undefined. A file
calls another when one of its undefined symbols is defined by the other:
exact, whatever macros or inline helpers the source uses (a static inline
function in a header is not a call between files). The test build's flags are used (FERRY_TEST: the calls of
fault injection count too). Tarjan's algorithm finds
the strongly connected sets of that graph: the largest is the largest call
circle, files that all reach each other through calls.

Include arrows: each '#include "x.h"' in a .c or .h file is an arrow to
x.h; it runs up when x.h sits on a higher floor than the including file
(FLOORS below; a header has its module's floor unless named itself). The
floors are the ones doc/architecture.md draws: 0 tools, 1 link, 2
protocols, 3 drivers (dispatch, loop, modes, start-up). ferry.h, the
struct ctx that every floor is handed, is counted apart: the module
headers above floor 0 it includes (each one a module whose state any
includer can reach; floor 0 is everybody's anyway) and, for information,
the files that include it.

Each bounded figure has its bound (a ratchet: lower it when the code gets
better, never raise it). Exit 1 when one is above its bound, or when a
source file has no floor.

Usage: test/layers.py [-v]   (-v: every set of more than one file, the
calls inside the largest, every upward include)
"""
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

# Bounds (the ratchet). Before issue 19 (a86fa38): a 27-file circle, 3
# upward includes besides ferry.h's; ferry.h includes 12 module
# headers, 9 above floor 0 (isolate.h since 8628554). The six TCP
# files' circle went with tcp_conn.c (issue 19 item 4).
MAX_CIRCLE = 3
MAX_UP_INCLUDES = 1
MAX_CTX_HEADERS = 9

# Floor of each module (file name without .c/.h); a full file name
# overrides it for that file alone.
FLOORS = {
    # 0: tools every floor may use
    "util": 0, "log": 0, "checksum": 0, "pkt": 0, "flow": 0, "nat": 0,
    "drop": 0, "vnet": 0, "pcap": 0, "fwd": 0, "fwd_scan": 0,
    "netlink": 0, "neigh": 0, "fault": 0, "busypoll": 0, "ev": 0,
    "tcp_conn": 0, "tcp_sack": 0, "tcp_ooo": 0, "ip": 0, "dns": 0,
    "wire": 0, "dheap": 0,
    "mig_state": 0, "json": 0, "flow_log": 0, "tcp_repair": 0,
    # 1: the guest link: the transmit batch and the backends
    "tap_tx": 1, "tap_dev": 1, "tap_stream": 1, "tap_vu": 1,
    "vhost_user": 1, "virtq": 1, "vu_log": 1, "tap.h": 1,
    # 2: protocols
    "arp": 2, "ndp": 2, "dhcp": 2, "dhcpv6": 2, "icmp": 2, "icmp_err": 2,
    "udp": 2, "udp_int": 2, "udp_fwd": 2, "tcp": 2, "tcp_out": 2,
    "tcp_fwd": 2, "tcp_splice": 2, "tcp_tw": 2, "tcp_guard": 2, "tcp_timer": 2,
    "tcp_in": 2, "nsexec": 1, "mcast": 2, "igmp": 2, "repair": 2,
    # 3: drivers: receive dispatch, the loop, the modes, start-up
    "tap.c": 3, "loop": 3, "ns": 3, "isolate": 3, "drain": 3, "vm": 3, "ferry": 3, "conf": 3,
    "hostconf": 3, "priv": 3, "seccomp": 3, "slirp": 3, "notify": 3, "migrate": 3,
    "ctl": 3, "ctl_cmd": 3,
}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "layers")
CFLAGS = ["-std=gnu11", "-D_GNU_SOURCE", "-O0", "-w", "-c",
          "-DFERRY_VERSION=\"layers\"", "-DFERRY_TEST", "-Ibuild"]
# -Ibuild: seccomp.c includes the table make generates (build/seccomp_tab.h)


def floor_of(name):
    """The floor of a file name (None: not in FLOORS)."""
    if name in FLOORS:
        return FLOORS[name]
    return FLOORS.get(os.path.splitext(name)[0])


def compile_one(src):
    """Compile src into OUT unless its object is newer than every source
    and header; return the object's path."""
    obj = os.path.join(OUT, src[:-2] + ".o")
    newest = max(os.path.getmtime(os.path.join(ROOT, f))
                 for f in os.listdir(ROOT) if f.endswith((".c", ".h")))
    if not os.path.exists(obj) or os.path.getmtime(obj) < newest:
        subprocess.run(["cc"] + CFLAGS + ["-o", obj, src], cwd=ROOT,
                       check=True)
    return obj


def symbols(obj):
    """(defined, undefined) global symbol sets of one object."""
    out = subprocess.run(["nm", obj], capture_output=True, text=True,
                         check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWC":
            defined.add(parts[2])
    return defined, undefined


def call_graph(srcs):
    """{file: {file it calls: symbols it uses there}} from the objects'
    symbols."""
    os.makedirs(OUT, exist_ok=True)
    with ThreadPoolExecutor(max_workers=2) as ex:
        objs = list(ex.map(compile_one, srcs))
    syms = {s: symbols(o) for s, o in zip(srcs, objs)}
    owner = {}
    for s, (defined, _) in syms.items():
        for d in defined:
            owner[d] = s
    graph = {s: {} for s in srcs}
    for s, (_, und) in syms.items():
        for u in und:
            if u in owner and owner[u] != s:
                graph[s].setdefault(owner[u], set()).add(u)
    return graph


def sccs(graph):
    """Strongly connected sets of graph (Tarjan, iterative)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = n[0]; n[0] += 1
        stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        x = stack.pop(); on.discard(x); comp.add(x)
                        if x == v:
                            break
                    out.append(comp)
            elif w not in index:
                index[w] = low[w] = n[0]; n[0] += 1
                stack.append(w); on.add(w)
                work.append((w, iter(sorted(graph[w]))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def includes(files):
    """{file: [headers it includes with #include "..."]}."""
    inc = {}
    for f in files:
        with open(os.path.join(ROOT, f)) as fh:
            inc[f] = re.findall(r'^#include "([^"]+)"', fh.read(), re.M)
    return inc


def up_includes(inc):
    """[(file, header)] for every include arrow that runs up a floor,
    ferry.h's aside."""
    return [(f, h) for f in sorted(inc) for h in inc[f]
            if h != "ferry.h" and floor_of(h) is not None
            and floor_of(h) > floor_of(f)]


def main():
    verbose = "-v" in sys.argv[1:]
    files = sorted(f for f in os.listdir(ROOT) if f.endswith((".c", ".h")))
    missing = [f for f in files if floor_of(f) is None]
    if missing:
        print("layers: no floor for", " ".join(missing), "(FLOORS in "
              "test/layers.py)")
        return 1
    srcs = [f for f in files if f.endswith(".c")]
    graph = call_graph(srcs)
    comps = sorted(sccs(graph), key=len, reverse=True)
    inc = includes(files)
    up = up_includes(inc)
    ctx_all = [h for h in inc["ferry.h"] if h in files]
    ctx_headers = [h for h in ctx_all if floor_of(h) > 0]
    ctx_users = [f for f in files if "ferry.h" in inc[f]]
    big = comps[0]
    print("layers: largest call circle %d of %d .c files (bound %d): %s"
          % (len(big), len(srcs), MAX_CIRCLE, " ".join(sorted(big))))
    print("layers: %d include arrows run up a floor besides ferry.h's "
          "(bound %d)" % (len(up), MAX_UP_INCLUDES))
    print("layers: ferry.h includes %d module headers, %d above floor 0 "
          "(bound %d): %s; %d files include it"
          % (len(ctx_all), len(ctx_headers), MAX_CTX_HEADERS,
             " ".join(ctx_headers), len(ctx_users)))
    if verbose:
        for comp in comps:
            if len(comp) > 1:
                print("  circle:", " ".join(sorted(comp)))
        for f in sorted(big):
            for g in sorted(set(graph[f]) & big):
                print("  call: %s -> %s: %s" % (f, g,
                                             " ".join(sorted(graph[f][g]))))
        for f, h in up:
            print("  up: %s (%d) -> %s (%d)" % (f, floor_of(f), h,
                                                floor_of(h)))
    if (len(big) > MAX_CIRCLE or len(up) > MAX_UP_INCLUDES
            or len(ctx_headers) > MAX_CTX_HEADERS):
        print("layers: above the bound: a call or include now runs up a "
              "floor (test/layers.py -v names them)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
