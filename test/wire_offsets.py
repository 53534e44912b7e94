#!/usr/bin/env python3
"""wire_offsets.py - no protocol file holds a numeric header offset.

Issue 19 item 5: frames are parsed and built through the named field
views of wire.h (each header's field offsets named once, used by the
parser and by every builder). This check reads the protocol files
(PROTO_FILES) and reports each place that still indexes a frame with a
number: make check runs it as one test and fails when any file holds more
such places than its bound in BOUND (a ratchet: lower it as files are
converted; 0 is the goal).

The heuristic, on the code with comments and string literals removed:
  - byte buffers are the names a function declares as uint8_t pointers
    or arrays (its parameters and locals, and the file's own top-level
    ones and struct members), and the frame members l3, l4, payload,
    frame (text in char buffers is no header);
  - an offset is a byte buffer subscripted with a number or with an
    expression whose added term is a number (b[12], opt[i + 1]), or a
    byte buffer plus such a term (b + 14, opt + i + 2, o + 2 + 8 * i);
  - a declaration's size (uint8_t mac[6]) is no offset; a subscript or
    a sum with names only (opt[i], b + off) is none either, so loop
    indices and offsets named in wire.h pass.
A line that must keep a number (an address's bytes, little-endian
bytes) says why with the marker comment "wire: <reason>" on it. The
heuristic's own test (SELF_TEST: offsets it must find, loop indices and
named offsets it must pass) runs first and fails the check if it breaks.

Usage: wire_offsets.py [-v] [FILE...]  (-v: list every place found)
"""
import re
import sys

PROTO_FILES = [
    "arp.c", "ip.c", "ndp.c", "dhcp.c", "dhcpv6.c", "icmp.c", "icmp_err.c",
    "udp.c", "udp_fwd.c", "tcp.c", "tcp_in.c", "tcp_out.c", "tcp_timer.c",
    "tcp_conn.c", "tcp_guard.c", "tcp_fwd.c", "tcp_sack.c",
    "tcp_ooo.c", "tcp_tw.c", "tcp_splice.c", "dns.c", "igmp.c", "mcast.c",
    "vnet.c", "tap_vu.c",	# the virtio-net header's parser and writers
]

# Places allowed per file (a ratchet while files were converted). On
# ed518fd, before wire.h: 233 places in 12 of these files; none since.
BOUND = {}

MARKER = re.compile(r"/\*\s*wire:")
BYTE_DECL = re.compile(
    r"\b(?:u?int8_t)\b(?:\s+const)?\s*((?:\*\s*(?:const\s+)?)*)(\w+)"
    r"\s*(\[)?")
MORE_DECL = re.compile(r",\s*(\*+)\s*(\w+)|,\s*(\w+)\s*\[")
FRAME_MEMBERS = {"l3", "l4", "payload", "frame"}
NUMBER = re.compile(r"^(?:0x[0-9a-fA-F]+|\d+)[uUlL]*$")


def strip(text):
    """The code without comments and string/char literals (newlines
    kept, so line numbers hold), and the set of lines with a marker."""
    marked = set()
    out = []
    i, line, n = 0, 1, len(text)
    while i < n:
        ch = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            body = text[i:j]
            if MARKER.match(body):
                marked.add(line)
            out.append("\n" * body.count("\n"))
            line += body.count("\n")
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            out.append(ch + ch)
            i = j + 1
        else:
            if ch == "\n":
                line += 1
            out.append(ch)
            i += 1
    return "".join(out), marked


def byte_names(code):
    """Names declared as byte pointers or arrays in code."""
    names = set(FRAME_MEMBERS)
    for stmt in re.split(r"[;{}]", code):
        for m in BYTE_DECL.finditer(stmt):
            if m.group(1) or m.group(3):
                names.add(m.group(2))
            rest = re.split(r"\b(?:u?int\d+_t|size_t|struct|bool|char)\b",
                            stmt[m.end():])[0]
            for more in MORE_DECL.finditer(rest):
                names.add(more.group(2) or more.group(3))
    return names


def terms(expr):
    """The additive terms of expr at its top level (parentheses kept)."""
    out, depth, cur = [], 0, ""
    for ch in expr:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch in "+-" and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return out


def has_number_term(expr):
    return any(NUMBER.match(t) for t in terms(expr))


def sum_after(code, pos):
    """The '+ ...' chain starting at pos, up to the end of the
    expression (a comma, ';', or a closing bracket at depth 0)."""
    depth, j = 0, pos
    while j < len(code):
        ch = code[j]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                break
            depth -= 1
        elif ch in ",;?:<>=&|" and depth == 0:
            break
        j += 1
    return code[pos:j]


def subscript_at(code, pos):
    """The text inside the brackets opening at pos."""
    depth, j = 0, pos
    while j < len(code):
        if code[j] == "[":
            depth += 1
        elif code[j] == "]":
            depth -= 1
            if depth == 0:
                return code[pos + 1:j]
        j += 1
    return ""


def blocks(code):
    """(head start, body start, body end) of each top-level brace block
    (function bodies, struct and initializer bodies), in order."""
    out, depth, head, start = [], 0, 0, 0
    for i, ch in enumerate(code):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                out.append((head, start, i))
                head = i + 1
        elif ch == ";" and depth == 0:
            head = i + 1
    return out


def scope_names(code):
    """A function (position -> byte names a plain name there may be):
    the names its function declares (parameters and locals), else the
    file's top-level ones."""
    spans, outside, last = [], [], 0
    for h, b, e in blocks(code):
        spans.append((b, e, byte_names(code[h:e])))
        outside.append(code[last:b])
        last = e + 1
    top = byte_names("".join(outside) + code[last:])

    def names_at(pos):
        for b, e, names in spans:
            if b <= pos <= e:
                return names | top
        return top
    return names_at


def offsets(path):
    """(line, text) of each numeric offset in path."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    code, marked = strip(text)
    return find(code, marked, text.split("\n"))


def find(code, marked, src_lines):
    """(line, text) of each numeric offset in code (stripped; marked:
    lines with the marker; src_lines: the original lines)."""
    members = byte_names(code)
    names_at = scope_names(code)
    found = []
    name_re = re.compile(
        r"(?<![\w.>])((?:\w+(?:->|\.))*)(\w+)\s*(\[|\+(?!\+|=))")
    decl_re = re.compile(r"\b(?:u?int\d+_t|char|bool|size_t)\s+\**\w+\s*\[$")
    for m in name_re.finditer(code):
        names = members if m.group(1) else names_at(m.start())
        if m.group(2) not in names:
            continue
        line = code.count("\n", 0, m.start()) + 1
        if line in marked:
            continue
        if m.group(3) == "[":
            before = code[code.rfind("\n", 0, m.start()) + 1:m.end()]
            if decl_re.search(before) or re.search(
                    r"^\s*(?:static\s+)?(?:const\s+)?(?:u?int8_t|char)\b"
                    r"[^=(]*$", before):
                continue	# a declaration's size
            expr = subscript_at(code, m.end() - 1)
        else:
            expr = sum_after(code, m.end())
        if has_number_term(expr):
            found.append((line, src_lines[line - 1].strip()))
    return found


# The heuristic's own test, run first every time: each CAUGHT line is an
# offset it must find, each PASSED line none.
SELF_TEST = """
static void f(uint8_t *b, const uint8_t *opt, size_t off, struct pkt *p)
{
	uint8_t na[32], buf[64];
	uint32_t w;
	size_t i, n;

	b[12] = 1;					/* CAUGHT */
	memcpy(buf + 14, b, 6);				/* CAUGHT */
	wr16(p->l4 + 20, 0);				/* CAUGHT */
	n = opt[off + 2];				/* CAUGHT */
	w = rd32(opt + i + 6 + 8 * n);			/* CAUGHT */
	na[0] = 136;					/* CAUGHT */
	for (i = 0; i < n; i++) na[i] = b[i];		/* PASSED */
	n = opt[i + TCPOPT_OFF_LEN] + 2;		/* PASSED */
	wr16(b + off + IP4_OFF_CSUM, 0);		/* PASSED */
	n = n + 1;					/* PASSED */
	b[0] = 0x33;		/* wire: an address */	/* PASSED */
}
"""


def self_test():
    """Whether the heuristic finds exactly the CAUGHT lines of
    SELF_TEST."""
    code, marked = strip(SELF_TEST)
    want = {i + 1 for i, line in enumerate(SELF_TEST.split("\n"))
            if "CAUGHT" in line}
    got = {line for line, _ in find(code, marked, SELF_TEST.split("\n"))}
    if got != want:
        print(f"wire_offsets: self-test: found lines {sorted(got)}, "
              f"want {sorted(want)}")
    return got == want


def main(argv):
    verbose = "-v" in argv
    if not self_test():
        return 1
    files = [a for a in argv if a != "-v"] or PROTO_FILES
    total, bad = 0, 0
    for path in files:
        places = offsets(path)
        total += len(places)
        bound = BOUND.get(path, 0)
        if verbose or len(places) > bound:
            for line, src in places:
                print(f"{path}:{line}: {src}")
        if len(places) > bound:
            print(f"{path}: {len(places)} numeric header offsets "
                  f"(bound {bound})")
            bad += 1
    left = sum(BOUND.get(p, 0) for p in files)
    print(f"wire_offsets: {total} numeric header offsets in "
          f"{len(files)} protocol files (bounds allow {left})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
