/* SPDX-License-Identifier: MIT */
/*
 * etcd_probe - the protected resource of the fencing tests: checks a fencing token the
 * way a resource that receives work with a token does, through a client of its own.
 *
 *   etcd_probe -e ENDPOINTS -n NAME -k TOKEN
 *
 * Prints the band code's name of band_etcd_budget_check_token() (BAND_OK, BAND_ESTALE,
 * ...). Exit status: 0 valid, 1 stale, 2 bad usage, 3 any other answer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <band/band.h>
#include <band/etcd.h>

int main(int argc, char **argv)
{
    const char *endpoints = NULL, *name = NULL;
    long long token = 0;
    int c;
    while ((c = getopt(argc, argv, "e:n:k:")) != -1) {
        switch (c) {
        case 'e':
            endpoints = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 'k':
            token = strtoll(optarg, NULL, 10);
            break;
        default:
            fprintf(stderr, "usage: etcd_probe -e ENDPOINTS -n NAME -k TOKEN\n");
            return 2;
        }
    }
    if (!endpoints || !name || token <= 0 || optind != argc) {
        fprintf(stderr, "usage: etcd_probe -e ENDPOINTS -n NAME -k TOKEN\n");
        return 2;
    }
    band_etcd *e;
    int rc = band_etcd_create(&e, endpoints, NULL);
    if (rc == 0) {
        band_etcd_budget *b;
        rc = band_etcd_budget_create(&b, e, name, 0);
        if (rc == 0) {
            rc = band_etcd_budget_check_token(b, (int64_t)token);
            (void)band_etcd_budget_destroy(b);
        }
        (void)band_etcd_destroy(e);
    }
    printf("%s\n", band_err_name(rc));
    return rc == 0 ? 0 : rc == BAND_ESTALE ? 1 : 3;
}
