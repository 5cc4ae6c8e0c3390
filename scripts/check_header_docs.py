#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_header_docs.py - the installed headers' doc comments, as compilers and Doxygen read them.

    scripts/check_header_docs.py [--clang CLANG] [--generated DIR] [ROOT]

1. Every installed header (include/band/*.h, the generated band/version.h from DIR, the
   adapters' band/uv.h, band/fd.h and band/adapter_nodes.h) is compiled alone with
   `clang -fsyntax-only -std=c11 -Wdocumentation -Wdocumentation-unknown-command -Werror`
   (with _POSIX_C_SOURCE=200809L, which band/uv.h asks for),
   once as a program sees it and once with -DBAND_NO_INLINE: a @param that names no
   parameter, a @return on a void function, an unknown command (a bare @name instead of
   @p name) or a malformed comment fails. A header whose system dependency is missing
   (<uv.h> without libuv1-dev) is skipped with a note.
2. Every function a header exports (BAND_API, BAND_UV_API) has a /** comment right above
   it with one @param (or @param[in], [out], [in,out]) per parameter, named as in the
   prototype, and a @return unless it returns void: clang does not see a missing @param.

ctest runs it as header_docs (tests/docs.cmake). Exits 1 with one line per problem.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

EXPORT = r'(?:BAND_API|BAND_UV_API)'
HEADER_DIRS = ['include/band', 'adapters/uv/include/band', 'adapters/fd/include/band',
               'adapters/redis/include/band', 'adapters/etcd/include/band',
               'adapters/common/include/band']


def split_params(s):
    out, depth, cur = [], 0, ''
    for ch in s:
        if ch == '(':
            depth += 1
        elif ch == ')':
            depth -= 1
        if ch == ',' and depth == 0:
            out.append(cur.strip())
            cur = ''
        else:
            cur += ch
    if cur.strip() and cur.strip() != 'void':
        out.append(cur.strip())
    return out


def param_name(p):
    m = re.search(r'\(\s*\*\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)', p)  # a function pointer
    if m:
        return m.group(1)
    p = re.sub(r'\[[^]]*\]\s*$', '', p)
    m = re.search(r'([A-Za-z_][A-Za-z0-9_]*)\s*$', p)
    return m.group(1) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--clang', default='clang')
    ap.add_argument('--generated', help='directory holding the generated band/version.h')
    ap.add_argument('root', nargs='?', default=os.path.join(os.path.dirname(__file__), '..'))
    args = ap.parse_args()
    root = os.path.abspath(args.root)

    headers = []
    for d in HEADER_DIRS:
        full = os.path.join(root, d)
        if os.path.isdir(full):
            headers += [os.path.join(full, f) for f in sorted(os.listdir(full)) if f.endswith('.h')]
    incs = [os.path.join(root, d) for d in
            ['include', 'adapters/uv/include', 'adapters/fd/include', 'adapters/redis/include',
             'adapters/etcd/include', 'adapters/common/include']]
    if args.generated:
        incs.append(os.path.abspath(args.generated))
        v = os.path.join(args.generated, 'band', 'version.h')
        if os.path.exists(v):
            headers.append(os.path.abspath(v))
    problems, skipped, seen = [], [], set()

    # 1. clang's -Wdocumentation on each header alone.
    with tempfile.TemporaryDirectory() as tmp:
        for h in headers:
            rel = os.path.relpath(h, root)
            for defs in ([], ['-DBAND_NO_INLINE']):
                cmd = [args.clang, '-fsyntax-only', '-std=c11', '-D_POSIX_C_SOURCE=200809L', '-x', 'c',
                       '-Wdocumentation', '-Wdocumentation-unknown-command', '-Werror',
                       *defs, *[f'-I{i}' for i in incs], h]
                r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
                if r.returncode == 0:
                    continue
                m = re.search(r"fatal error: '([^']+)' file not found", r.stderr)
                if m and not m.group(1).startswith('band/'):
                    skipped.append(f'{rel} (<{m.group(1)}> is not installed)')
                    break
                for line in r.stderr.splitlines():
                    if (': error: ' in line or ': warning: ' in line) and line not in seen:
                        seen.add(line)  # an included header's warnings come once
                        problems.append(line.replace(root + os.sep, ''))
                if not any(': error: ' in x or ': warning: ' in x for x in r.stderr.splitlines()):
                    problems.append(f'{rel}: clang failed: {r.stderr.strip()}')
                break  # the second run would repeat the same warnings

    # 2. @param and @return of every exported function.
    decl = re.compile(r'(/\*\*?(?:(?!\*/).)*\*/\s*)?' + EXPORT +
                      r'\s+([^;(]*?)\b(band_[a-z0-9_]+)\s*\(([^;]*?)\)\s*;', re.S)
    nfun = 0
    for h in headers:
        rel = os.path.relpath(h, root)
        text = open(h).read()
        # macros hold no exports; keep the line count so problems name the right line
        text = re.sub(r'#define [^\n]*(\\\n[^\n]*)*', lambda m: '\n' * m.group(0).count('\n'), text)
        for m in decl.finditer(text):
            nfun += 1
            line = text.count('\n', 0, m.start(3)) + 1
            at = f'{rel}:{line}: {m.group(3)}()'
            doc = m.group(1)
            if not doc or not doc.startswith('/**'):
                problems.append(f'{at}: no /** doc comment right above it')
                continue
            documented = set(re.findall(r'[@\\]param(?:\[[a-z, ]+\])?\s+([A-Za-z_][A-Za-z0-9_]*)', doc))
            for p in split_params(' '.join(m.group(4).split())):
                name = param_name(p)
                if name and name not in documented:
                    problems.append(f'{at}: no @param {name}')
            ret = ' '.join(m.group(2).split())
            if ret != 'void' and not re.search(r'[@\\]returns?\b', doc):
                problems.append(f'{at}: returns {ret} but has no @return')

    for s in skipped:
        print(f'check_header_docs: skipped {s}')
    if problems:
        print('check_header_docs: the headers\' doc comments have problems:')
        for p in problems:
            print(f'  {p}')
        sys.exit(1)
    print(f'check_header_docs: {len(headers) - len(skipped)} headers compile without a '
          f'-Wdocumentation warning; {nfun} exported functions document every parameter '
          f'and result')


if __name__ == '__main__':
    main()
