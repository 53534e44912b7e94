#!/usr/bin/env python3
"""docrefs.py - every file and function doc/*.md names still exists, and
doc/architecture.md's sentences are short (make check).

Theory of operation: a document is true only while what it points at is
there. In each doc/*.md this script collects the file names (a word
ending in .c, .h, .py or .sh, with or without its directory) and the
function names (an identifier followed by "()"). A file is found when the
path exists from the top of the tree, or a tracked file has that base
name ("test_dhcp.c" is test/unit/test_dhcp.c). A function is found when a
tracked source file (.c, .h, .py, .sh) writes its name followed by "(":
ferry's own functions and the libc and kernel calls it makes alike.

Names of other projects (Linux's tcp_grow_window(), qemu's files), which
the documents cite for comparison, are listed in EXTERNAL: they are not
looked for.

doc/architecture.md is read by newcomers first: its sentences stay under
30 words (code blocks and tables aside; a list item, like a paragraph,
ends its sentence). Exit 1, naming each, when a reference is not found
or a sentence there is too long.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Cited from other projects, not ferry's: never looked for in the tree.
EXTERNAL = {
    # Linux (net/ipv4/tcp_*.c, kernel/sched), read for comparison
    "__tcp_ack_snd_check", "__tcp_adjust_rcv_ssthresh",
    "__tcp_select_window", "tcp_ack", "tcp_ack_probe", "tcp_cleanup_rbuf",
    "tcp_event_data_recv", "tcp_grow_window", "tcp_measure_rcv_mss",
    "tcp_probe0_base", "tcp_send_probe0", "tcp_set_window_clamp",
    "tcp_validate_incoming", "tcp_write_wakeup", "sched_setattr",
    "sched_yield", "vmsplice",
    # qemu and libvirt sources, podman's Go functions (doc/compat.md)
    "net/passt.c", "src/qemu/qemu_passt.c", "Setup", "setupPasta",
    "checkSlirpFlags", "createBasicSlirp4netnsCmdArgs", "setupSlirp4netns",
}

SHORT_DOCS = {"doc/architecture.md": 30}	# words a sentence stays under

FILE_RE = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.(?:c|h|py|sh))\b")
FUNC_RE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(\)")


def tracked():
    """The tracked files (git ls-files), relative to ROOT."""
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return [f for f in out.split("\n") if f]


def called_names(files):
    """Every identifier that a source file writes followed by "("."""
    names = set()
    for f in files:
        if f.endswith((".c", ".h", ".py", ".sh")):
            with open(os.path.join(ROOT, f), errors="replace") as fh:
                names |= set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(",
                                        fh.read()))
    return names


def missing(doc, bases, names):
    """[(kind, name)] for the references of doc that are not found."""
    with open(os.path.join(ROOT, doc)) as fh:
        text = fh.read()
    out = []
    for f in sorted(set(FILE_RE.findall(text))):
        if f not in EXTERNAL and not os.path.exists(
                os.path.join(ROOT, f)) and os.path.basename(f) not in bases:
            out.append(("file", f))
    for fn in sorted(set(FUNC_RE.findall(text))):
        if fn not in EXTERNAL and fn not in names:
            out.append(("function", fn + "()"))
    return out


def long_sentences(doc, limit):
    """The sentences of doc of limit words or more, outside code blocks
    and tables."""
    with open(os.path.join(ROOT, doc)) as fh:
        text = re.sub(r"```.*?```", "", fh.read(), flags=re.S)
    out = []
    for para in re.split(r"\n\s*\n|\n(?=- )", text):
        lines = [ln for ln in para.split("\n")
                 if not ln.startswith(("|", "#"))]
        para = re.sub(r"\s+", " ", " ".join(lines)).strip()
        for s in re.split(r"(?<=[.!?])\)?\s+(?=[A-Z`(]|ferry )", para):
            if len(s.split()) >= limit:
                out.append(s)
    return out


def main():
    files = tracked()
    bases = {os.path.basename(f) for f in files}
    names = called_names(files)
    docs = sorted(f for f in files
                  if f.startswith("doc/") and f.endswith(".md"))
    bad = 0
    for doc in docs:
        for kind, name in missing(doc, bases, names):
            print("docrefs: %s names the %s %s, which no longer exists"
                  % (doc, kind, name))
            bad += 1
    for doc, limit in SHORT_DOCS.items():
        for s in long_sentences(doc, limit):
            print("docrefs: %s: a sentence of %d words (under %d): %s..."
                  % (doc, len(s.split()), limit, s[:60]))
            bad += 1
    print("docrefs: %d documents, %d stale references or long sentences"
          % (len(docs), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
