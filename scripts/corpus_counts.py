#!/usr/bin/env python3
"""corpus_counts.py: an independent count of HLO instructions per opcode.

For every module of every file in data/hlo-corpus and data/tpugraphs-tile-v3/
modules, writes the number of computations and the instruction count per
opcode to tests/golden/corpus_counts.txt, which tests/test_corpus.c compares
with what the C parser (sim/hlo_parse.c) builds. The method is deliberately
different from the parser's: regular expressions blank out strings and
comments, then a bracket-depth scan finds computation bodies and the
`name =` definitions at body level. It relies on the printer's conventions
(attributes follow a comma) rather than on the grammar.

Usage: scripts/corpus_counts.py [shared dir] [output file]
  defaults: ../shared beside the checkout, tests/golden/corpus_counts.txt
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Strings first so that // or /* inside them are not taken as comments.
TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|//[^\n]*|/\*.*?\*/',
                      re.S)
SEPARATOR_RE = re.compile(r'^[ \t]*//[ \t]*-----', re.M)
HEADER_RE = re.compile(r'(?m)^[ \t]*HloModule\b')
DEF_RE = re.compile(r'(?:ROOT\s+)?%?([A-Za-z_][\w.\-]*)\s*=(?!=)')
WORD_RE = re.compile(r'[A-Za-z_][\w\-]*')


def load_opcodes():
    ops = set()
    with open(os.path.join(ROOT, 'sim', 'ir_ops.def')) as f:
        for m in re.finditer(r'^X\(\w+, "([^"]+)"', f.read(), re.M):
            ops.add(m.group(1))
    return ops


def blank(text):
    """Strings become "" and comments a space; newlines are kept."""
    def repl(m):
        s = m.group(0)
        if s[0] in '"\'':
            return s[0] * 2
        return ' ' + '\n' * s.count('\n')
    return TOKEN_RE.sub(repl, text)


def split_modules(raw):
    """Chunks at `// -----` lines, then at each HloModule header."""
    mods = []
    for chunk in SEPARATOR_RE.split(raw):
        text = blank(chunk)
        starts = [m.start() for m in HEADER_RE.finditer(text)]
        if not starts or starts[0] > 0:
            starts = [0] + starts
        for i, s in enumerate(starts):
            e = starts[i + 1] if i + 1 < len(starts) else len(text)
            part = text[s:e]
            if part.strip():
                mods.append(part)
    return mods


def skip_balanced(text, i):
    """text[i] is an opener; returns the index after its closer."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c in '([{':
            depth += 1
        elif c in ')]}':
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def opcode_after(text, i, ops):
    """Opcode of the definition whose '=' ends at i (shape optional)."""
    while text[i].isspace():
        i += 1
    if text[i] == '(':            # tuple shape
        i = skip_balanced(text, i)
    else:
        m = WORD_RE.match(text, i)
        j = m.end()
        k = j
        while text[k].isspace():
            k += 1
        if text[k] == '[':        # array shape, then an optional layout
            i = skip_balanced(text, k)
            k = i
            while text[k].isspace():
                k += 1
            if text[k] == '{':
                i = skip_balanced(text, k)
        else:
            return m.group(0)
    while text[i].isspace():
        i += 1
    m = WORD_RE.match(text, i)
    return m.group(0)


def normalise(op, ops):
    if op in ops:
        return op
    for suffix in ('-start', '-update', '-done'):
        if op.endswith(suffix) and op[:-len(suffix)] in ops:
            return 'async' + suffix
    raise ValueError('unknown opcode ' + op)


def count_module(text, ops):
    """Returns (computations, {opcode: count})."""
    counts = {}
    comps = 0
    i = 0
    n = len(text)
    prev = ''  # last non-space character at depth 0
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c in '([':
            i = skip_balanced(text, i)
            prev = ')' if c == '(' else ']'
            continue
        if c == '{':
            nxt = text[i + 1:].lstrip()[:1]
            if prev == '=' or (prev == ']' and (nxt.isdigit() or nxt in ':}')):
                i = skip_balanced(text, i)   # header value or layout
                prev = '}'
                continue
            end = skip_balanced(text, i)
            comps += 1
            body = text[i + 1:end - 1]
            for op in body_opcodes(body, ops):
                counts[op] = counts.get(op, 0) + 1
            i = end
            prev = '}'
            continue
        prev = c
        i += 1
    return comps, counts


def body_opcodes(body, ops):
    """Definitions at depth 0 of a body not introduced by a comma."""
    i = 0
    n = len(body)
    prev = '{'
    while i < n:
        c = body[i]
        if c.isspace():
            i += 1
            continue
        if c in '([{':
            i = skip_balanced(body, i)
            prev = ')'
            continue
        m = DEF_RE.match(body, i)
        if m and prev != ',' and (i == 0 or not re.match(r'[\w.\-%]', body[i - 1])):
            yield normalise(opcode_after(body, m.end(), ops), ops)
            i = m.end()
            prev = '='
            continue
        prev = c
        i += 1


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, '..', 'shared')
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, 'tests', 'golden',
                                                            'corpus_counts.txt')
    ops = load_opcodes()
    data = os.path.join(shared, 'data')
    files = []
    for folder in ('hlo-corpus', os.path.join('tpugraphs-tile-v3', 'modules')):
        for name in sorted(os.listdir(os.path.join(data, folder))):
            if name.endswith('.hlo'):
                files.append(os.path.join(folder, name))
    lines = ['# Instruction counts per module, written by scripts/corpus_counts.py.',
             '# <file under data/> <module index> comps=<n> <opcode>=<count>...',
             '# Do not edit by hand: rerun the script.']
    for rel in files:
        with open(os.path.join(data, rel), encoding='utf-8') as f:
            raw = f.read()
        k = 0
        for mod in split_modules(raw):
            comps, counts = count_module(mod, ops)
            if comps == 0:
                continue
            fields = ['%s=%d' % (op, counts[op]) for op in sorted(counts)]
            lines.append(' '.join([rel, str(k), 'comps=%d' % comps] + fields))
            k += 1
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('%d files, %d modules -> %s' % (len(files), len(lines) - 3, out))


if __name__ == '__main__':
    main()
