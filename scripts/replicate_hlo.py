#!/usr/bin/env python3
"""replicate_hlo.py IN.hlo K: writes to standard output a module whose entry
computation holds K renamed copies of IN's entry computation side by side,
for benchmarks of how a command's time grows with module size.

Copy r renames every instruction the entry defines NAME -> NAME.rR and
numbers its parameters after the copies before it; the new root is a tuple
of the K copies' roots, so nothing is dead. The other computations are
written once and shared. The header keeps only the module's name (its
aliasing refers to the original parameters). Instruction names must be
written with their '%' (as XLA prints them); the entry's signature is
dropped (HLO lets an entry omit it).
"""
import re
import sys

NAME = re.compile(r"%([A-Za-z0-9_.\-]+)")
DEF = re.compile(r"^(\s*)(ROOT\s+)?%([A-Za-z0-9_.\-]+)\s*=\s*")
OPCODE = re.compile(r"\s([a-z][a-z0-9\-_]*)\(")
PARAM = re.compile(r"parameter\((\d+)\)")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: replicate_hlo.py IN.hlo K")
    k = int(sys.argv[2])
    if k < 1:
        sys.exit("replicate_hlo.py: K must be at least 1")
    lines = open(sys.argv[1]).read().split("\n")
    if not lines or not lines[0].startswith("HloModule"):
        sys.exit("replicate_hlo.py: no HloModule header")
    name = lines[0].split()[1].rstrip(",")
    start = next((i for i, l in enumerate(lines) if l.startswith("ENTRY")), None)
    if start is None:
        sys.exit("replicate_hlo.py: no ENTRY computation")
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    body = lines[start + 1:end]
    defined = {m.group(3) for m in map(DEF.match, body) if m}
    n_params = sum(1 for l in body if PARAM.search(l))
    out = ["HloModule %s_x%d" % (name, k)]
    out += lines[1:start]
    out.append("ENTRY %%%s_x%d {" % (name, k))
    roots = []
    for r in range(k):
        def rename(m):
            return "%" + m.group(1) + (".r%d" % r if m.group(1) in defined else "")

        def renumber(m):
            return "parameter(%d)" % (int(m.group(1)) + r * n_params)

        for line in body:
            m = DEF.match(line)
            if m and m.group(2):
                rhs = line[m.end():]
                op = OPCODE.search(" " + rhs)
                if not op:
                    sys.exit("replicate_hlo.py: cannot read the root's shape")
                roots.append(("%%%s.r%d" % (m.group(3), r), rhs[:op.start()].strip()))
                line = m.group(1) + line[len(m.group(1)) + len(m.group(2)):]
            out.append(PARAM.sub(renumber, NAME.sub(rename, line)))
    out.append("  ROOT %%replicated = (%s) tuple(%s)" %
               (", ".join(s for _, s in roots), ", ".join(n for n, _ in roots)))
    out.append("}")
    out += lines[end + 1:]
    sys.stdout.write("\n".join(out))


main()
