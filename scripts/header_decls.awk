# SPDX-License-Identifier: MIT
# header_decls.awk - the exported functions of C headers, with their doc comments' codes.
#
#   awk -v macro=BAND_API -f scripts/header_decls.awk HEADER...
#
# Prints one tab-separated line per statement that contains the word @macro (outside
# comments and preprocessor lines):
#   header  function  return-type  codes
# header is the file as given; function is the identifier before the statement's first
# '(' ("?" plus the statement when there is none); return-type is what precedes the name,
# without @macro; codes are the result codes (BAND_OK, BAND_PENDING, BAND_E<NAME>) that the
# function's doc comment names, sorted, space-separated ("-" for none). A function's doc
# comment is the comment that comes right before its declaration or, for a declaration
# right after another one with no comment between them, the one that comment documents.
# With -v all=1, each header also gets a line "header  *  *  codes" with the codes that
# any of its comments names.
# Used by scripts/check_exports.sh and scripts/check_errors_doc.sh.

function flush_stmt(   s, p, pre, name, ret, t) {
    s = stmt
    stmt = ""
    if (s ~ word && s !~ /^[ \t\n]*$/) {
        p = index(s, "(")
        if (p == 0) {
            gsub(/[ \t\n]+/, " ", s)
            print FILENAME "\t?" s "\t-\t-"
        } else {
            pre = substr(s, 1, p - 1)
            if (match(pre, /[A-Za-z_][A-Za-z0-9_]*[ \t\n]*$/)) {
                name = substr(pre, RSTART, RLENGTH)
                gsub(/[ \t\n]/, "", name)
                ret = substr(pre, 1, RSTART - 1)
                gsub(word, " ", ret)
                gsub(/[ \t\n]+/, " ", ret)
                gsub(/^ | $/, "", ret)
                if (pending == "" && prev_decl)
                    t = prev_comment
                else
                    t = pending
                print FILENAME "\t" name "\t" ret "\t" codes_of(t)
                prev_comment = t
                prev_decl = 1
                pending = ""
                return
            }
            gsub(/[ \t\n]+/, " ", s)
            print FILENAME "\t?" s "\t-\t-"
        }
    }
    if (s !~ /^[ \t\n]*$/)
        prev_decl = 0
    if (s !~ /^[ \t\n]*$/ || pending != "")
        pending = ""
}

function codes_of(t,   out, n, i, c, seen, list, k) {
    n = 0
    while (match(t, /BAND_(OK|PENDING|E[A-Z0-9]+)/)) {
        c = substr(t, RSTART, RLENGTH)
        k = substr(t, RSTART + RLENGTH, 1)
        t = substr(t, RSTART + RLENGTH)
        if (k ~ /[A-Za-z0-9_]/)
            continue # part of a longer name (BAND_EXEC_..., BAND_OKAY)
        if (!(c in seen)) {
            seen[c] = 1
            list[++n] = c
        }
    }
    if (n == 0)
        return "-"
    # insertion sort: a handful of codes
    for (i = 2; i <= n; i++) {
        c = list[i]
        for (k = i - 1; k >= 1 && list[k] > c; k--)
            list[k + 1] = list[k]
        list[k + 1] = c
    }
    out = list[1]
    for (i = 2; i <= n; i++)
        out = out " " list[i]
    return out
}

function end_file() {
    flush_stmt()
    if (all)
        print prev_file "\t*\t*\t" codes_of(allc)
}

FNR == 1 {
    if (NR > 1)
        end_file()
    prev_file = FILENAME
    stmt = ""; pending = ""; prev_comment = ""; prev_decl = 0; allc = ""
    incomment = 0; inpp = 0
    word = "(^|[^A-Za-z0-9_])" macro "([^A-Za-z0-9_]|$)"
}

{
    line = $0
    if (inpp) {
        inpp = (line ~ /\\$/)
        next
    }
    if (!incomment && line ~ /^[ \t]*#/) {
        inpp = (line ~ /\\$/)
        next
    }
    while (length(line) > 0) {
        if (incomment) {
            i = index(line, "*/")
            if (i == 0) {
                ctext = ctext " " line
                line = ""
                break
            }
            ctext = ctext " " substr(line, 1, i - 1)
            line = substr(line, i + 2)
            incomment = 0
            pending = pending " " ctext
            allc = allc " " ctext
            continue
        }
        i = index(line, "/*")
        j = index(line, "//")
        if (j > 0 && (i == 0 || j < i)) {
            code = substr(line, 1, j - 1)
            allc = allc " " substr(line, j + 2)
            line = ""
        } else if (i > 0) {
            code = substr(line, 1, i - 1)
            line = substr(line, i + 2)
            incomment = 1
            ctext = ""
        } else {
            code = line
            line = ""
        }
        # split the code on statement ends
        while (match(code, /[;{}]/)) {
            stmt = stmt " " substr(code, 1, RSTART - 1)
            code = substr(code, RSTART + 1)
            flush_stmt()
        }
        stmt = stmt " " code
    }
    stmt = stmt "\n"
}

END {
    if (NR > 0)
        end_file()
}
