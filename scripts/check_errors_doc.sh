#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_errors_doc.sh - docs/errors.md agrees with the error table and with the headers.
#
#   scripts/check_errors_doc.sh          check; exit 1 with the list of mismatches
#   scripts/check_errors_doc.sh codes    print, per installed header and function, the
#                                        result codes its doc comment names (what the
#                                        doc's rows must cover)
#
# The result codes are BAND_OK and BAND_PENDING (enum band_result in include/band/error.h)
# and the entries of BAND_ERRNO_MAP there. The check fails when
#   - the doc's code table ("| code | value | meaning |") misses a code, lists one that is
#     not in the table, or gives a different value;
#   - the doc or a header names a code that does not exist (BAND_EUNKNOWN is only the name
#     band_err_name() gives unknown codes);
#   - an installed header has no section "### `band/<name>.h`" in the doc, or a section
#     names a header that does not exist;
#   - a function that returns int, or whose doc comment names a code, has no row in its
#     header's section; a row names a function its header does not declare, or a function
#     twice;
#   - a row does not name every code that its function's doc comment names, or a header's
#     comments name a code that no row of its section names;
#   - a code other than BAND_OK is named by no row at all.
# Comments and declarations are read by scripts/header_decls.awk. ctest runs this as
# errors_doc (labels unit and lint), and scripts/lint.sh runs it too.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DOC=${BAND_ERRORS_DOC:-$ROOT/docs/errors.md}
ERROR_H=$ROOT/include/band/error.h
AWK_DECLS=$ROOT/scripts/header_decls.awk

[[ -f "$DOC" ]] || {
    echo "check_errors_doc: $DOC does not exist" >&2
    exit 2
}

# Every installed header with its export macro: "path<TAB>macro".
headers()
{
    local h
    for h in "$ROOT"/include/band/*.h "$ROOT"/adapters/fd/include/band/*.h \
        "$ROOT"/adapters/redis/include/band/*.h "$ROOT"/adapters/etcd/include/band/*.h; do
        printf '%s\tBAND_API\n' "$h"
    done
    for h in "$ROOT"/adapters/uv/include/band/*.h; do
        printf '%s\tBAND_UV_API\n' "$h"
    done
}

# decls - "band/<name>.h<TAB>function<TAB>return type<TAB>codes" for every header, plus
# "band/<name>.h<TAB>*<TAB>*<TAB>codes" with every code its comments name.
decls()
{
    local h macro
    while IFS=$'\t' read -r h macro; do
        awk -v macro="$macro" -v all=1 -f "$AWK_DECLS" "$h" |
            sed "s|^[^\t]*/include/band/|band/|"
    done < <(headers)
}

if [[ "${1:-}" == codes ]]; then
    decls | awk -F'\t' '$2 != "*" { printf "%-16s %-34s %s\n", $1, $2, $4 }'
    exit 0
elif [[ -n "${1:-}" ]]; then
    echo "usage: $0 [codes]" >&2
    exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The error table: "NAME<TAB>value".
{
    sed -n 's/^ *X(\(E[A-Z0-9]*\), *\(-\{0,1\}[0-9]*\),.*/BAND_\1\t\2/p' "$ERROR_H"
    sed -n 's/^ *\(BAND_OK\|BAND_PENDING\) *= *\([0-9]*\),.*/\1\t\2/p' "$ERROR_H"
} | LC_ALL=C sort >"$tmp/table"
if ! grep -q '^BAND_OK' "$tmp/table" || ! grep -q '^BAND_PENDING' "$tmp/table" ||
    (($(wc -l <"$tmp/table") < 4)); then
    echo "check_errors_doc: could not read BAND_ERRNO_MAP and enum band_result from $ERROR_H" >&2
    exit 2
fi
cut -f1 "$tmp/table" >"$tmp/known"
decls >"$tmp/decls"

# The doc, as records: "table<TAB>code<TAB>value" for the code table,
# "row<TAB>header<TAB>functions<TAB>codes" for each row of a header's section,
# "section<TAB>header", and "name<TAB>code" for every code-like name anywhere.
awk -F'|' '
    function names(s, re,   out, m) {
        out = ""
        while (match(s, re)) {
            m = substr(s, RSTART, RLENGTH)
            s = substr(s, RSTART + RLENGTH)
            if (substr(s, 1, 1) ~ /[A-Za-z0-9_]/)
                continue
            out = out (out == "" ? "" : " ") m
        }
        return out
    }
    {
        n = split(names($0, "BAND_(OK|PENDING|E[A-Z0-9]+)"), c, " ")
        for (i = 1; i <= n; i++)
            print "name\t" c[i]
    }
    /^#/ { intable = 0; header = "" }
    /^### `band\/[a-z_]+\.h`/ {
        match($0, /band\/[a-z_]+\.h/)
        header = substr($0, RSTART, RLENGTH)
        print "section\t" header
        next
    }
    /^\| *code *\| *value *\|/ { intable = 1; next }
    /^\|[-| :]*$/ { next }
    /^\|/ && intable {
        code = $2; gsub(/[ `]/, "", code)
        val = $3; gsub(/[ `]/, "", val)
        print "table\t" code "\t" val
        next
    }
    /^\|/ && header != "" {
        if ($2 ~ /^ *function/)
            next
        f = names($2, "band_[a-z0-9_]+")
        rest = $0
        sub(/^\|[^|]*\|/, "", rest)
        print "row\t" header "\t" f "\t" names(rest, "BAND_(OK|PENDING|E[A-Z0-9]+)")
        next
    }
    !/^\|/ { intable = 0 }
' "$DOC" >"$tmp/doc"

fail=0
problem()
{
    if ((fail == 0)); then
        echo "check_errors_doc: docs/errors.md does not match the headers and error table:"
    fi
    fail=1
    echo "  - $*"
}

# 1. The code table.
awk -F'\t' '$1 == "table" { print $2 "\t" $3 }' "$tmp/doc" | LC_ALL=C sort >"$tmp/doctable"
while IFS=$'\t' read -r code val; do
    got=$(awk -F'\t' -v c="$code" '$1 == c { print $2 }' "$tmp/doctable")
    if [[ -z "$got" ]]; then
        problem "the code table misses $code ($val)"
    elif [[ "$got" != "$val" ]]; then
        problem "the code table gives $code the value $got; error.h says $val"
    fi
done <"$tmp/table"
while IFS=$'\t' read -r code val; do
    grep -qx "$code" "$tmp/known" || problem "the code table lists $code, which error.h does not define"
done <"$tmp/doctable"

# 2. Names that are no code.
while read -r w; do
    [[ "$w" == BAND_EUNKNOWN ]] && continue
    grep -qx "$w" "$tmp/known" || problem "the doc names $w, which is not a result code"
done < <(awk -F'\t' '$1 == "name" { print $2 }' "$tmp/doc" | LC_ALL=C sort -u)
while IFS=$'\t' read -r h f ret codes; do
    [[ "$f" == "*" && "$codes" != - ]] || continue
    for w in $codes; do
        [[ "$w" == BAND_EUNKNOWN && "$h" == band/error.h ]] && continue
        grep -qx "$w" "$tmp/known" || problem "$h names $w, which is not a result code"
    done
done <"$tmp/decls"

# 3. Sections.
awk -F'\t' '$1 == "section" { print $2 }' "$tmp/doc" | LC_ALL=C sort >"$tmp/sections"
awk -F'\t' '$2 != "*" { print $1 }' "$tmp/decls" | LC_ALL=C sort -u >"$tmp/with_functions"
while read -r h; do
    problem "no section ### \`$h\`"
done < <(LC_ALL=C comm -23 "$tmp/with_functions" <(LC_ALL=C sort -u "$tmp/sections"))
for h in $(LC_ALL=C comm -13 "$tmp/with_functions" <(LC_ALL=C sort -u "$tmp/sections")); do
    problem "section ### \`$h\` names a header that declares no function"
done
for h in $(uniq -d "$tmp/sections"); do
    problem "two sections for \`$h\`"
done

# 4. Rows against declarations: "header<TAB>function<TAB>codes of its rows".
awk -F'\t' '$1 == "row" {
        n = split($3, f, " ")
        if (n == 0) print $2 "\t(none)\t" $4
        for (i = 1; i <= n; i++) print $2 "\t" f[i] "\t" $4
    }' "$tmp/doc" >"$tmp/rows"
while IFS=$'\t' read -r h f codes; do
    if [[ "$f" == "(none)" ]]; then
        problem "a row of \`$h\` names no function"
    elif ! awk -F'\t' -v h="$h" -v f="$f" '$1 == h && $2 == f { found = 1 } END { exit !found }' \
        "$tmp/decls"; then
        problem "\`$h\` row names $f(), which $h does not declare"
    fi
done <"$tmp/rows"
while IFS=$'\t' read -r h f; do
    problem "\`$h\` has two rows for $f()"
done < <(cut -f1,2 "$tmp/rows" | LC_ALL=C sort | uniq -d)

while IFS=$'\t' read -r h f ret codes; do
    [[ "$f" == "*" || "$f" == \?* ]] && continue
    [[ "$ret" == int || "$codes" != - ]] || continue
    rowcodes=$(awk -F'\t' -v h="$h" -v f="$f" '$1 == h && $2 == f { print $3; found = 1 }
        END { if (!found) print "(no row)" }' "$tmp/rows")
    if [[ "$rowcodes" == "(no row)" ]]; then
        problem "\`$h\` has no row for $f() (returns $ret${codes:+; its comment names ${codes//-/no code}})"
        continue
    fi
    [[ "$codes" == - ]] && continue
    for c in $codes; do
        grep -qw -- "$c" <<<"$rowcodes" ||
            problem "\`$h\` row of $f() does not name $c, which its header comment names"
    done
done <"$tmp/decls"

# 5. Every code a header's comments name is named by a row of its section.
while IFS=$'\t' read -r h f ret codes; do
    [[ "$f" == "*" && "$codes" != - ]] || continue
    grep -qx "$h" "$tmp/sections" || continue
    rowcodes=$(awk -F'\t' -v h="$h" '$1 == h { print $3 }' "$tmp/rows" | tr '\n' ' ')
    for c in $codes; do
        [[ "$c" == BAND_EUNKNOWN || "$c" == BAND_OK ]] && continue
        grep -qw -- "$c" <<<"$rowcodes" ||
            problem "$h's comments name $c, but no row of its section does"
    done
done <"$tmp/decls"

# 6. Every code is returned somewhere.
allrows=$(cut -f3 "$tmp/rows" | tr '\n' ' ')
while read -r c; do
    [[ "$c" == BAND_OK ]] && continue
    grep -qw -- "$c" <<<"$allrows" || problem "no row names $c: which function returns it?"
done <"$tmp/known"

if ((fail)); then
    echo "check_errors_doc: fix docs/errors.md (scripts/check_errors_doc.sh codes lists what" \
        "each header's comments name)"
    exit 1
fi
echo "check_errors_doc: docs/errors.md covers the $(wc -l <"$tmp/known") codes of error.h and" \
    "the $(awk -F'\t' '$2 != "*" && ($3 == "int" || $4 != "-")' "$tmp/decls" | wc -l)" \
    "functions of $(wc -l <"$tmp/with_functions") headers that return or name one"
