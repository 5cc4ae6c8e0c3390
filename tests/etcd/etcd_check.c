/* SPDX-License-Identifier: MIT */
/*
 * etcd_check - proves from the cluster's own history, and from the workers' logs, that a
 * libband-etcd budget never granted more than its capacity.
 *
 *   etcd_check -e ENDPOINT -n NAME [-p PREFIX] LOG...
 *
 * The history: every change of the budget's keys [P N/, P N0) since revision 1, read
 * through one watch of the JSON gateway (a sentinel key put first ends it, so nothing is
 * missed and nothing waits). Replayed in revision order, with the capacity taken from the
 * cap key's puts, it checks at every grant (a request key put with "g":1 that was not
 * granted before):
 *   S1  the units of all granted requests, the new one included, <= the capacity then;
 *   S3  every request created before it and still queued is granted (no barging);
 *   S2  holds by construction: a grant's token is its revision (counted as unique here).
 * The logs (etcd_worker's G/R/S lines) are then matched to it: every logged grant is a
 * grant of the history at its token's revision with the same units, no grant is logged
 * twice, and every release answered BAND_OK is a delete after the grant. A grant of the
 * history that no log has is a request withdrawn (cancelled or timed out) while the
 * cluster granted it: the client deletes it, so each such grant must have a delete, and
 * there can be no more of them than the withdrawals the logs count (W lines).
 * Finally the holding intervals the processes logged (CLOCK_MONOTONIC, one host) never sum
 * above the largest capacity the history had (a holder whose release answered
 * BAND_ESTALE, its lease gone, is left out of this last check).
 *
 * Prints a summary; exit status 0 when every check holds, 1 when one fails, 2 on usage
 * or when the history cannot be read.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#define ID_MAX 48

/* ---------------------------------------------------------------------------------------
 * base64 (the gateway's keys and values) */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const char *s, size_t n)
{
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    size_t o = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)(unsigned char)s[i + 1] << 8;
        if (i + 2 < n)
            v |= (uint32_t)(unsigned char)s[i + 2];
        out[o++] = b64chars[(v >> 18) & 63];
        out[o++] = b64chars[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? b64chars[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* Decodes into @out (at least strlen(s) bytes + 1); NUL-terminates. Length, or -1. */
static long b64_decode(const char *s, char *out)
{
    uint32_t v = 0;
    int bits = 0;
    long o = 0;
    for (; *s && *s != '='; s++) {
        const char *p = strchr(b64chars, *s);
        if (!p)
            return -1;
        v = (v << 6) | (uint32_t)(p - b64chars);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((v >> bits) & 0xff);
        }
    }
    out[o] = '\0';
    return o;
}

static int64_t jint(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * The history: request records by id, the capacity, the running sums. */

struct req {
    char id[ID_MAX];
    int64_t created;
    uint64_t units;
    int granted;
    int present;
    int64_t token;    /* revision of its grant, 0 if never granted */
    int64_t released; /* revision of its delete, 0 if never */
    int logged;       /* grants of the logs that name it */
};

struct state {
    struct req *r;
    size_t n, cap;
    size_t *index; /* 1 + position in r, 0 empty; isize a power of two */
    size_t isize;
    uint64_t capacity, max_capacity;
    uint64_t held, max_held;
    uint64_t events, grants, deletes, cap_changes;
    uint64_t s1_fail, s3_fail, regrants, bad_values;
    int done;
    char sentinel[160];
    char qprefix[160];
    char capkey[160];
    char *buf;
    size_t blen, bcap;
};

static uint64_t id_hash(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return h;
}

/* Rebuilds the open-addressing index over st->r at twice the records' room. */
static void reindex(struct state *st)
{
    free(st->index);
    st->isize = st->cap * 2;
    st->index = calloc(st->isize, sizeof(*st->index));
    if (!st->index) {
        perror("calloc");
        exit(2);
    }
    for (size_t i = 0; i < st->n; i++) {
        size_t h = (size_t)(id_hash(st->r[i].id) & (st->isize - 1));
        while (st->index[h] != 0)
            h = (h + 1) & (st->isize - 1);
        st->index[h] = i + 1;
    }
}

static struct req *find(struct state *st, const char *id, int add)
{
    if (st->isize > 0) {
        size_t h = (size_t)(id_hash(id) & (st->isize - 1));
        for (; st->index[h] != 0; h = (h + 1) & (st->isize - 1))
            if (strcmp(st->r[st->index[h] - 1].id, id) == 0)
                return &st->r[st->index[h] - 1];
    }
    if (!add)
        return NULL;
    if (st->n == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 1024;
        st->r = realloc(st->r, st->cap * sizeof(*st->r));
        if (!st->r) {
            perror("realloc");
            exit(2);
        }
    }
    struct req *q = &st->r[st->n++];
    memset(q, 0, sizeof(*q));
    (void)snprintf(q->id, sizeof(q->id), "%s", id);
    if (st->isize < st->cap * 2) {
        reindex(st);
    } else {
        size_t h = (size_t)(id_hash(id) & (st->isize - 1));
        while (st->index[h] != 0)
            h = (h + 1) & (st->isize - 1);
        st->index[h] = st->n;
    }
    return q;
}

static void on_grant(struct state *st, struct req *q, int64_t rev)
{
    q->granted = 1;
    q->token = rev;
    st->grants++;
    st->held += q->units;
    if (st->held > st->max_held)
        st->max_held = st->held;
    if (st->held > st->capacity) {
        if (st->s1_fail++ < 5)
            fprintf(stderr,
                    "S1: grant %s at revision %" PRId64 ": held %" PRIu64 " > capacity %" PRIu64
                    "\n",
                    q->id, rev, st->held, st->capacity);
    }
    for (size_t i = 0; i < st->n; i++) {
        const struct req *a = &st->r[i];
        if (a->present && !a->granted && a->created < q->created) {
            if (st->s3_fail++ < 5)
                fprintf(stderr,
                        "S3: grant %s (created %" PRId64 ") at revision %" PRId64
                        " passed %s (created %" PRId64 ", waiting)\n",
                        q->id, q->created, rev, a->id, a->created);
        }
    }
}

static void on_event(struct state *st, json_t *ev)
{
    json_t *kv = json_object_get(ev, "kv");
    const char *type = json_string_value(json_object_get(ev, "type"));
    int del = type && strcmp(type, "DELETE") == 0;
    const char *k64 = json_string_value(json_object_get(kv, "key"));
    const char *v64 = json_string_value(json_object_get(kv, "value"));
    if (!k64)
        return;
    char key[256], val[512];
    if (strlen(k64) >= sizeof(key) || b64_decode(k64, key) < 0)
        return;
    val[0] = '\0';
    if (v64 && (strlen(v64) >= sizeof(val) || b64_decode(v64, val) < 0)) {
        st->bad_values++;
        return;
    }
    int64_t rev = jint(kv, "mod_revision");
    st->events++;
    if (strcmp(key, st->sentinel) == 0) {
        st->done = 1;
        return;
    }
    if (strcmp(key, st->capkey) == 0) {
        if (!del) {
            st->capacity = strtoull(val, NULL, 10);
            if (st->capacity > st->max_capacity)
                st->max_capacity = st->capacity;
            st->cap_changes++;
        }
        return;
    }
    size_t ql = strlen(st->qprefix);
    if (strncmp(key, st->qprefix, ql) != 0)
        return;
    struct req *q = find(st, key + ql, 1);
    if (del) {
        if (q->present && q->granted) {
            st->held -= q->units;
            q->released = rev;
        }
        q->present = 0;
        q->granted = 0;
        st->deletes++;
        return;
    }
    json_error_t jerr;
    json_t *v = json_loads(val, 0, &jerr);
    if (!v) {
        st->bad_values++;
        return;
    }
    uint64_t units = (uint64_t)jint(v, "u");
    int g = (int)jint(v, "g");
    json_decref(v);
    if (!q->present) {
        q->present = 1;
        q->created = jint(kv, "create_revision");
        q->units = units;
        q->granted = 0;
    }
    if (g == 1) {
        if (q->granted)
            st->regrants++;
        else
            on_grant(st, q, rev);
    }
}

/* libcurl's write callback: whole JSON messages are taken off the front of the buffer. */
static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
    struct state *st = arg;
    size_t n = size * nmemb;
    if (st->blen + n + 1 > st->bcap) {
        st->bcap = (st->blen + n + 1) * 2;
        st->buf = realloc(st->buf, st->bcap);
        if (!st->buf)
            return 0;
    }
    memcpy(st->buf + st->blen, p, n);
    st->blen += n;
    size_t off = 0;
    while (off < st->blen && !st->done) {
        while (off < st->blen && (st->buf[off] == '\n' || st->buf[off] == ' '))
            off++;
        if (off == st->blen)
            break;
        json_error_t jerr;
        json_t *m = json_loadb(st->buf + off, st->blen - off, JSON_DISABLE_EOF_CHECK, &jerr);
        if (!m)
            break; /* incomplete: wait for more */
        off += (size_t)jerr.position;
        json_t *res = json_object_get(m, "result");
        if (jint(res, "compact_revision") > 0) {
            fprintf(stderr, "etcd_check: the history is compacted\n");
            json_decref(m);
            return 0;
        }
        json_t *evs = json_object_get(res, "events");
        size_t i;
        json_t *ev;
        json_array_foreach(evs, i, ev) on_event(st, ev);
        json_decref(m);
    }
    memmove(st->buf, st->buf + off, st->blen - off);
    st->blen -= off;
    return st->done ? 0 : n;
}

static size_t discard(char *p, size_t size, size_t nmemb, void *arg)
{
    (void)p;
    (void)arg;
    return size * nmemb;
}

static int read_history(const char *endpoint, const char *prefix, const char *name,
                        struct state *st)
{
    char base[160], end[160], url[512];
    (void)snprintf(base, sizeof(base), "%s%s/", prefix, name);
    (void)snprintf(end, sizeof(end), "%s%s0", prefix, name);
    (void)snprintf(st->sentinel, sizeof(st->sentinel), "%s%s/~check-end", prefix, name);
    (void)snprintf(st->qprefix, sizeof(st->qprefix), "%s%s/q/", prefix, name);
    (void)snprintf(st->capkey, sizeof(st->capkey), "%s%s/cap", prefix, name);
    char *kb = b64_encode(base, strlen(base)), *eb = b64_encode(end, strlen(end));
    char *sb = b64_encode(st->sentinel, strlen(st->sentinel));
    char body[1024];
    CURL *c = curl_easy_init();
    if (!c || !kb || !eb || !sb)
        return -1;
    /* The sentinel first: its event ends the watch. */
    (void)snprintf(url, sizeof(url), "%s/v3/kv/put", endpoint);
    (void)snprintf(body, sizeof(body), "{\"key\":\"%s\",\"value\":\"\"}", sb);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    CURLcode cr = curl_easy_perform(c);
    if (cr != CURLE_OK) {
        fprintf(stderr, "etcd_check: put %s: %s\n", url, curl_easy_strerror(cr));
        return -1;
    }
    (void)snprintf(url, sizeof(url), "%s/v3/watch", endpoint);
    (void)snprintf(body, sizeof(body),
                   "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\","
                   "\"start_revision\":\"1\"}}",
                   kb, eb);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, st);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    cr = curl_easy_perform(c);
    curl_easy_cleanup(c);
    free(kb);
    free(eb);
    free(sb);
    if (!st->done) {
        fprintf(stderr, "etcd_check: watch %s ended before the sentinel: %s\n", url,
                curl_easy_strerror(cr));
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * The logs */

struct span {
    int64_t t;
    int64_t delta;
};

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->delta < y->delta ? -1 : x->delta > y->delta; /* ends first */
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL, *name = NULL, *prefix = "/band/";
    int c;
    while ((c = getopt(argc, argv, "e:n:p:")) != -1) {
        if (c == 'e')
            endpoint = optarg;
        else if (c == 'n')
            name = optarg;
        else if (c == 'p')
            prefix = optarg;
        else
            return 2;
    }
    if (!endpoint || !name || optind >= argc) {
        fprintf(stderr, "usage: etcd_check -e ENDPOINT -n NAME [-p PREFIX] LOG...\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct state st = {0};
    if (read_history(endpoint, prefix, name, &st) != 0)
        return 2;

    uint64_t withdrawn = 0, lgrants = 0, lreleases = 0, lstale = 0, unknown = 0, mismatch = 0,
             twice = 0, norelease = 0;
    struct span *sp = NULL;
    size_t nsp = 0, capsp = 0;
    for (int a = optind; a < argc; a++) {
        FILE *f = fopen(argv[a], "r");
        if (!f) {
            perror(argv[a]);
            return 2;
        }
        char line[256], id[ID_MAX], rc[32];
        long long token, t0, t1;
        unsigned long long units;
        int64_t pend_t0 = 0, pend_t1 = 0;
        uint64_t pend_units = 0;
        while (fgets(line, sizeof(line), f)) {
            if (sscanf(line, "G %47s %lld %llu %lld %lld", id, &token, &units, &t0, &t1) == 5) {
                lgrants++;
                struct req *q = find(&st, id, 0);
                if (!q || q->token == 0) {
                    if (unknown++ < 5)
                        fprintf(stderr, "log %s: grant %s (token %lld) is not in the history\n",
                                argv[a], id, token);
                } else {
                    if (q->token != token || q->units != units) {
                        if (mismatch++ < 5)
                            fprintf(stderr,
                                    "log %s: grant %s token %lld units %llu, history: "
                                    "token %" PRId64 " units %" PRIu64 "\n",
                                    argv[a], id, token, units, q->token, q->units);
                    }
                    if (q->logged++ > 0)
                        twice++;
                }
                pend_t0 = t0;
                pend_t1 = t1;
                pend_units = units;
            } else if (line[0] == 'W') {
                withdrawn++;
            } else if (sscanf(line, "R %47s %31s", id, rc) == 2) {
                struct req *q = find(&st, id, 0);
                if (strcmp(rc, "BAND_OK") == 0) {
                    lreleases++;
                    if (!q || q->released <= q->token) {
                        if (norelease++ < 5)
                            fprintf(stderr,
                                    "log %s: release of %s answered BAND_OK but "
                                    "the history has no delete after its grant\n",
                                    argv[a], id);
                    }
                } else {
                    lstale++;
                    pend_units = 0;
                }
                if (pend_units > 0) {
                    if (nsp + 2 > capsp) {
                        capsp = capsp ? capsp * 2 : 4096;
                        sp = realloc(sp, capsp * sizeof(*sp));
                        if (!sp)
                            return 2;
                    }
                    sp[nsp++] = (struct span){pend_t0, (int64_t)pend_units};
                    sp[nsp++] = (struct span){pend_t1, -(int64_t)pend_units};
                }
                pend_units = 0;
            }
        }
        fclose(f);
    }
    uint64_t orphans = 0, kept = 0;
    for (size_t i = 0; i < st.n; i++)
        if (st.r[i].token != 0 && st.r[i].logged == 0) {
            orphans++;
            if (st.r[i].released <= st.r[i].token && kept++ < 5)
                fprintf(stderr,
                        "history: grant %s at revision %" PRId64
                        " is in no log and was never deleted\n",
                        st.r[i].id, st.r[i].token);
        }
    if (orphans > withdrawn)
        fprintf(stderr,
                "history: %" PRIu64 " grants are in no log, more than the %" PRIu64
                " withdrawals\n",
                orphans, withdrawn);
    qsort(sp, nsp, sizeof(*sp), span_cmp);
    int64_t sum = 0, max_sum = 0;
    for (size_t i = 0; i < nsp; i++) {
        sum += sp[i].delta;
        if (sum > max_sum)
            max_sum = sum;
    }
    free(sp);

    printf("history: %" PRIu64 " events, %zu requests, %" PRIu64 " grants, %" PRIu64
           " deletes, %" PRIu64 " capacity puts (largest %" PRIu64 "), most held %" PRIu64 "\n",
           st.events, st.n, st.grants, st.deletes, st.cap_changes, st.max_capacity, st.max_held);
    printf("logs: %" PRIu64 " grants, %" PRIu64 " releases, %" PRIu64
           " releases of lost grants, most held at one instant %" PRId64 "\n",
           lgrants, lreleases, lstale, max_sum);
    printf("S1 violations %" PRIu64 ", S3 violations %" PRIu64 ", regrants %" PRIu64
           ", bad values %" PRIu64 ", logged grants not in the history %" PRIu64
           ", mismatched %" PRIu64 ", logged twice %" PRIu64 ", releases without a delete %" PRIu64
           "\n",
           st.s1_fail, st.s3_fail, st.regrants, st.bad_values, unknown, mismatch, twice, norelease);
    printf("withdrawn requests %" PRIu64 ", of which the cluster had granted %" PRIu64
           " (never deleted: %" PRIu64 ")\n",
           withdrawn, orphans, kept);
    int ok = st.s1_fail == 0 && st.s3_fail == 0 && st.regrants == 0 && st.bad_values == 0 &&
             unknown == 0 && mismatch == 0 && twice == 0 && kept == 0 && orphans <= withdrawn &&
             norelease == 0 && (uint64_t)max_sum <= st.max_capacity && st.grants > 0;
    if ((uint64_t)max_sum > st.max_capacity)
        fprintf(stderr,
                "the logged intervals held %" PRId64 " units at once, above every "
                "capacity the budget had (%" PRIu64 ")\n",
                max_sum, st.max_capacity);
    printf("%s\n", ok ? "conservation holds" : "CONSERVATION FAILED");
    free(st.r);
    free(st.index);
    free(st.buf);
    curl_global_cleanup();
    return ok ? 0 : 1;
}
