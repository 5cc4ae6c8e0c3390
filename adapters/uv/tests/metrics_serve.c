/* SPDX-License-Identifier: MIT */
/*
 * metrics_serve.c - serve /metrics over one of every primitive kind, for the end-to-end
 * scrape test (metrics_scrape.sh).
 *
 *     metrics_serve [ADDR]
 *
 * Listens on ADDR (default 127.0.0.1) at a free port, prints the port on one line of
 * standard output, and serves until SIGTERM or SIGINT: then it closes the endpoint, ends
 * the loop, stops its worker thread, destroys everything and exits 0. A worker thread
 * keeps taking and returning units of the semaphore, the budget and the fair share and
 * sending and receiving on the channel meanwhile, so the scrapes read counters that move.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/uv_metrics.h"

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        if ((expr) != 0) {                                                                         \
            fprintf(stderr, "metrics_serve: %s failed at line %d\n", #expr, __LINE__);             \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

struct world {
    band_sem *sem;
    band_budget *budget;
    band_chan *chan;
    band_rate *rate;
    band_front_door *door;
    band_fair *fair;
    band_budget *cpu;
    band_cap_tree *root, *leaf;
    band_limit *limit;
    band_exec *exec;
    band_oneshot *oneshot;
    band_watch *watch;
    band_broadcast *bcast;
    band_broadcast_rx rx;
    band_group *group;
    band_latch *latch;
    band_histo sem_wait, chan_wait, hold, custom;
    band_permit door_permit;
    band_admit_grant tree_grant;
    _Atomic int stop;
};

static void *churn(void *arg)
{
    struct world *w = arg;
    uint64_t i = 0;
    while (!atomic_load(&w->stop)) {
        if (band_sem_try_acquire(w->sem, 1) == 0)
            (void)band_sem_release(w->sem, 1);
        if (band_budget_try_acquire(w->budget, 100) == 0)
            (void)band_budget_release(w->budget, 100);
        if (band_fair_try_acquire(w->fair, i % 5, (uint32_t)(i % 2), 1) == 0)
            (void)band_fair_release(w->fair, i % 5, 1);
        uint64_t v = i;
        if (band_chan_try_send(w->chan, &v, 8) == 0)
            (void)band_chan_try_recv(w->chan, &v, NULL);
        band_histo_record(&w->custom, i % 5000);
        i++;
    }
    return NULL;
}

static void build(struct world *w)
{
    memset(w, 0, sizeof(*w));
    band_histo_init(&w->sem_wait);
    band_histo_init(&w->chan_wait);
    band_histo_init(&w->hold);
    band_histo_init(&w->custom);
    band_sem_opts so = {.wait_histo = &w->sem_wait};
    CHECK(band_sem_create(&w->sem, 8, &so));
    CHECK(band_sem_set_name(w->sem, "db \"pool\"\n"));
    CHECK(band_budget_create(&w->budget, 4096, NULL));
    band_chan_opts co = {.byte_capacity = 1024, .wait_histo = &w->chan_wait};
    CHECK(band_chan_create(&w->chan, sizeof(uint64_t), 16, &co));
    CHECK(band_rate_create(&w->rate, 100, BAND_SEC, 10, NULL));
    band_front_door_opts fo;
    memset(&fo, 0, sizeof(fo));
    fo.sem = w->sem;
    fo.classes = 2;
    fo.hold = &w->hold;
    CHECK(band_front_door_create(&w->door, &fo));
    band_answer a;
    w->door_permit = (band_permit)BAND_PERMIT_INIT;
    CHECK(band_front_door_admit(w->door, 0, 1, NULL, &w->door_permit, &a, BAND_FOREVER, NULL));
    band_fair_opts fa;
    memset(&fa, 0, sizeof(fa));
    fa.classes = 2;
    fa.headroom[1] = 2;
    CHECK(band_fair_create(&w->fair, 16, &fa));
    band_fair_key_opts ko = {.weight = 2, .cap = 8, .reserve = 2};
    CHECK(band_fair_key_set(w->fair, 42, &ko));
    CHECK(band_budget_create(&w->cpu, 8, NULL));
    CHECK(band_budget_set_name(w->cpu, "cpu"));
    CHECK(band_cap_tree_create(&w->root, NULL, 100, 0));
    CHECK(band_cap_tree_create(&w->leaf, w->root, 40, 10));
    band_admit_req r;
    band_admit_req_init(&r, NULL, NULL);
    CHECK(band_admit_req_add_tree(&r, w->leaf, 5));
    w->tree_grant = (band_admit_grant)BAND_ADMIT_GRANT_INIT;
    CHECK(band_admit_try_acquire(&r, &w->tree_grant));
    band_limit_opts lo;
    memset(&lo, 0, sizeof(lo));
    lo.initial = 4;
    CHECK(band_limit_create(&w->limit, &lo));
    CHECK(band_exec_create(&w->exec, 1, 8, NULL));
    CHECK(band_oneshot_create(&w->oneshot, sizeof(int)));
    int x = 1;
    CHECK(band_watch_create(&w->watch, sizeof(int), &x));
    CHECK(band_watch_send(w->watch, &x));
    CHECK(band_broadcast_create(&w->bcast, sizeof(int), 4, BAND_BROADCAST_LOSSY));
    band_broadcast_rx_init(&w->rx);
    CHECK(band_broadcast_subscribe(w->bcast, &w->rx));
    CHECK(band_broadcast_try_send(w->bcast, &x));
    CHECK(band_group_create(&w->group));
    CHECK(band_group_add(w->group, 2));
    CHECK(band_latch_create(&w->latch, 3));
}

static void teardown(struct world *w)
{
    CHECK(band_latch_destroy(w->latch));
    CHECK(band_group_done_n(w->group, 2));
    CHECK(band_group_destroy(w->group));
    CHECK(band_broadcast_unsubscribe(&w->rx));
    CHECK(band_broadcast_destroy(w->bcast));
    CHECK(band_watch_destroy(w->watch));
    CHECK(band_oneshot_destroy(w->oneshot));
    CHECK(band_exec_shutdown(w->exec, BAND_EXEC_DRAIN));
    CHECK(band_exec_join(w->exec));
    CHECK(band_exec_destroy(w->exec));
    CHECK(band_limit_destroy(w->limit));
    CHECK(band_admit_release(&w->tree_grant));
    CHECK(band_cap_tree_destroy(w->leaf));
    CHECK(band_cap_tree_destroy(w->root));
    CHECK(band_budget_destroy(w->cpu));
    CHECK(band_fair_destroy(w->fair));
    CHECK(band_front_door_done(w->door, &w->door_permit, 0));
    CHECK(band_front_door_destroy(w->door));
    CHECK(band_rate_destroy(w->rate));
    CHECK(band_chan_destroy(w->chan));
    CHECK(band_budget_destroy(w->budget));
    CHECK(band_sem_destroy(w->sem));
}

static band_uv_metrics *server;
static uv_signal_t sig_term, sig_int;

static void on_server_closed(void *data)
{
    (void)data;
}

static void on_signal(uv_signal_t *h, int signum)
{
    (void)h;
    (void)signum;
    if (band_uv_metrics_close(server, on_server_closed, NULL) == 0) {
        uv_close((uv_handle_t *)&sig_term, NULL);
        uv_close((uv_handle_t *)&sig_int, NULL);
    }
}

int main(int argc, char **argv)
{
    const char *addr = argc > 1 ? argv[1] : "127.0.0.1";
    struct world *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return 2;
    build(w);

    band_metrics *m = NULL;
    CHECK(band_metrics_create(&m, 32));
    CHECK(band_metrics_add_sem(m, "db \"pool\"\n", w->sem, &w->sem_wait));
    CHECK(band_metrics_add_budget(m, "mem", w->budget, NULL));
    CHECK(band_metrics_add_chan(m, "ingest", w->chan, &w->chan_wait));
    CHECK(band_metrics_add_rate(m, "partner", w->rate));
    CHECK(band_metrics_add_front_door(m, "front", w->door, &w->hold));
    CHECK(band_metrics_add_fair(m, "tenants", w->fair, 16));
    const band_sem *set[] = {band_budget_sem(w->cpu), band_budget_sem(w->budget)};
    CHECK(band_metrics_add_admit(m, "jobs", set, 2));
    CHECK(band_metrics_add_cap_tree(m, "cluster", w->root));
    CHECK(band_metrics_add_cap_tree(m, "team\\a", w->leaf));
    CHECK(band_metrics_add_limit(m, "backend", w->limit));
    CHECK(band_metrics_add_exec(m, "workers", w->exec));
    CHECK(band_metrics_add_oneshot(m, "reply", w->oneshot));
    CHECK(band_metrics_add_watch(m, "config", w->watch));
    CHECK(band_metrics_add_broadcast(m, "events", w->bcast));
    CHECK(band_metrics_add_group(m, "tasks", w->group));
    CHECK(band_metrics_add_latch(m, "start", w->latch));
    CHECK(band_metrics_add_histo(m, "app_request", "api", "Request time.", &w->custom));

    uv_loop_t loop;
    CHECK(uv_loop_init(&loop));
    CHECK(band_uv_metrics_serve(&server, &loop, addr, 0, m));
    CHECK(uv_signal_init(&loop, &sig_term));
    CHECK(uv_signal_init(&loop, &sig_int));
    CHECK(uv_signal_start(&sig_term, on_signal, SIGTERM));
    CHECK(uv_signal_start(&sig_int, on_signal, SIGINT));
    int port = band_uv_metrics_port(server);
    if (port <= 0)
        return 2;
    printf("%d\n", port);
    (void)fflush(stdout);

    pthread_t t;
    if (pthread_create(&t, NULL, churn, w) != 0)
        return 2;
    int rc = uv_run(&loop, UV_RUN_DEFAULT);
    atomic_store(&w->stop, 1);
    (void)pthread_join(t, NULL);
    if (rc != 0 || uv_loop_close(&loop) != 0) {
        fprintf(stderr, "metrics_serve: the loop did not end cleanly\n");
        return 1;
    }
    CHECK(band_uv_metrics_destroy(server));
    CHECK(band_metrics_destroy(m));
    teardown(w);
    free(w);
    return 0;
}
