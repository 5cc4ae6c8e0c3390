#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_api.py - check every installed header against the API grammar (docs/api.md).

    scripts/check_api.py [ROOT]

The objects and their verbs come from the table in docs/api.md, so the table and the
headers cannot drift apart: a public function whose object or verb the table does not
list fails, and so does a verb in the table that no header declares. Then, for every
declaration:

  - create: band_<obj>_create(band_<obj> **out, ...), and `const band_<obj>_opts *opts`
    last when the object has an options type;
  - every object that can be created can be destroyed: int band_<obj>_destroy(band_<obj> *);
  - get_stats: (const band_<obj> *, band_<obj>_stats *out); is_<state>: int (const ... *);
  - try_<verb>: never takes a deadline;
  - blocking calls: `band_time deadline, band_cancel *cancel` are the last two parameters;
    a call with a deadline and no token (a rate booking) has the deadline last;
  - <verb>_async: the last parameter is the op: `band_waiter *w` or a pointer to a
    `..._op` struct (an admission request is its own op);
  - every function has a doc comment, and one that returns int names what it returns
    ("Returns", or a result code).

Exits 1 with one line per problem.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
HEADER_DIRS = ['include/band', 'adapters/uv/include/band', 'adapters/fd/include/band',
               'adapters/redis/include/band', 'adapters/etcd/include/band']
EXPORT = r'(?:BAND_API|BAND_UV_API|BAND_FD_API)'
# Functions of no object: the clock, the version, the result codes.
FREE = {'band_now', 'band_deadline_after', 'band_version', 'band_version_number',
        'band_strerror', 'band_err_name'}

problems = []


def problem(where, msg):
    problems.append(f'{where}: {msg}')


def read_table():
    """{object: set(verbs)} from the table of docs/api.md."""
    objs = {}
    text = open(os.path.join(ROOT, 'docs/api.md')).read()
    for line in text.splitlines():
        m = re.match(r'\| `(band_[a-z0-9_]+)` \| [^|]+ \| [^|]+ \| ([^|]+) \|$', line)
        if not m:
            continue
        verbs = set()
        if m.group(2).strip().startswith('see '):
            verbs.add('*')  # an adapter: its verbs are in its own guide
        for v in ([] if '*' in verbs else m.group(2).split(',')):
            v = re.sub(r'\(.*?\)', '', v).strip()
            if v:
                verbs.add(v)
        objs[m.group(1)] = verbs
    if not objs:
        problem('docs/api.md', 'no object table found')
    return objs


def split_params(params):
    out, depth, cur = [], 0, ''
    for ch in params:
        if ch == ',' and depth == 0:
            out.append(cur.strip())
            cur = ''
            continue
        depth += ch == '('
        depth -= ch == ')'
        cur += ch
    if cur.strip() and cur.strip() != 'void':
        out.append(cur.strip())
    return out


def declarations():
    """(header, name, return type, [params], doc comment or None) for every export."""
    decl = re.compile(r'(/\*\*?(?:(?!\*/).)*\*/\s*)?' + EXPORT +
                      r'\s+([^;(]*?)\b(band_[a-z0-9_]+)\s*\(([^;]*?)\)\s*;', re.S)
    for d in HEADER_DIRS:
        full = os.path.join(ROOT, d)
        if not os.path.isdir(full):
            continue
        for f in sorted(os.listdir(full)):
            if not f.endswith('.h'):
                continue
            text = open(os.path.join(full, f)).read()
            text = re.sub(r'#define [^\n]*(\\\n[^\n]*)*', '', text)  # macros hold no exports
            for m in decl.finditer(text):
                ret = ' '.join(m.group(2).split())
                params = split_params(' '.join(m.group(4).split()))
                yield f'{d}/{f}', m.group(3), ret, params, m.group(1)


def object_of(name, objs):
    """The longest table object that prefixes @name, and the verb after it."""
    best = None
    for o in objs:
        if name.startswith(o + '_') and (best is None or len(o) > len(best)):
            best = o
    if best is None:
        return None, None
    return best, name[len(best) + 1:]


def verb_listed(verb, verbs):
    if verb in verbs:
        return True
    return any(v.endswith('*') and verb.startswith(v[:-1]) for v in verbs)  # '*': any


def main():
    objs = read_table()
    decls = list(declarations())
    types = set()
    for d in HEADER_DIRS:
        full = os.path.join(ROOT, d)
        if os.path.isdir(full):
            for f in os.listdir(full):
                if f.endswith('.h'):
                    types.update(re.findall(r'\b(band_[a-z0-9_]+_(?:opts|stats))\b',
                                            open(os.path.join(full, f)).read()))
    seen = {o: set() for o in objs}
    names = {name for _, name, _, _, _ in decls}
    for where, name, ret, params, doc in decls:
        at = f'{where}: {name}()'
        if doc is None:
            problem(at, 'no doc comment')
        elif ret == 'int' and not re.search(r'[Rr]eturns?|BAND_E[A-Z0-9]+|\b0\b', doc):
            problem(at, 'the doc comment does not say what it returns')
        if name in FREE:
            continue
        obj, verb = object_of(name, objs)
        if obj is None:
            problem(at, 'names no object of the table in docs/api.md')
            continue
        if not verb_listed(verb, objs[obj]):
            problem(at, f'verb "{verb}" is not listed for {obj} in docs/api.md')
        else:
            seen[obj].add(verb)
        ptypes = [' '.join(p.split()[:-1]) if ' ' in p else p for p in params]
        pnames = [re.sub(r'.*[\s*]', '', p) for p in params]
        if verb == 'create':
            if not params or not re.fullmatch(obj + r'\s*\*\*\s*out', params[0]):
                problem(at, f'the first parameter must be `{obj} **out`')
            if f'{obj}_opts' in types and (
                    not params or not re.fullmatch(r'const ' + obj + r'_opts\s*\*\s*opts',
                                                   params[-1])):
                problem(at, f'the last parameter must be `const {obj}_opts *opts`')
            if f'{obj}_destroy' not in names:
                problem(at, f'{obj} can be created but has no {obj}_destroy()')
        if verb == 'destroy' and (ret != 'int' or len(params) != 1):
            problem(at, 'destroy returns int and takes only the object')
        if verb == 'get_stats':
            if (len(params) != 2 or not params[0].startswith(f'const {obj} ')
                    or not params[1].startswith(f'{obj}_stats ')):
                problem(at, f'must be ({obj} const *, {obj}_stats *out)')
        if verb.startswith('is_') and (ret != 'int' or len(params) != 1
                                       or not params[0].startswith('const ')):
            problem(at, 'a predicate returns int and takes one const pointer')
        has_deadline = 'deadline' in pnames
        has_cancel = 'cancel' in pnames
        if verb.startswith('try_') and (has_deadline or has_cancel):
            problem(at, 'a try_ call never waits, so it takes no deadline or token')
        if has_cancel and pnames[-2:] != ['deadline', 'cancel']:
            problem(at, 'a blocking call ends with (band_time deadline, band_cancel *cancel)')
        if has_deadline and not has_cancel and pnames[-1] != 'deadline':
            problem(at, 'the deadline is the last parameter')
        if has_deadline and ptypes[pnames.index('deadline')] != 'band_time':
            problem(at, 'the deadline is a band_time')
        if verb.endswith('_async'):
            last = params[-1] if params else ''
            if not re.match(r'(band_waiter \*\s*w|.*_op\s*\*\s*op|(?:band_admit_req|band_shm_req|band_etcd_req) \*\s*r)$',
                            last):
                problem(at, 'an _async call takes the op last (band_waiter *w or an _op *op)')
    for obj, verbs in objs.items():
        for v in verbs:
            if not v.endswith('*') and v not in seen[obj]:
                problem('docs/api.md', f'{obj}: verb "{v}" is declared by no header')
    if problems:
        print('check_api: the headers do not follow docs/api.md:')
        for p in problems:
            print('  - ' + p)
        return 1
    print(f'check_api: {len(decls)} functions of {len(objs)} objects follow docs/api.md')
    return 0


if __name__ == '__main__':
    sys.exit(main())
