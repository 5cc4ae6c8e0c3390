/* SPDX-License-Identifier: MIT */
#include <band/band.h>
#include <stdio.h>

int main(void)
{
    band_budget *mem; /* 4 MiB of payload, shared by every job */
    if (band_budget_create(&mem, 4 << 20, NULL) != 0)
        return 1;
    band_time deadline = band_deadline_after(50 * BAND_MSEC);
    void *a, *b;
    if (band_budget_alloc(mem, 3 << 20, &a, deadline, NULL) != 0) /* reserve, then allocate */
        return 1;
    int rc = band_budget_alloc(mem, 2 << 20, &b, deadline, NULL); /* 1 MiB left: waits */
    printf("2 MiB more: %s\n", band_err_name(rc));                /* BAND_ETIMEDOUT */
    rc = band_budget_alloc(mem, 5 << 20, &b, deadline, NULL);     /* can never fit */
    printf("5 MiB: %s\n", band_err_name(rc));                     /* BAND_E2BIG, at once */
    band_budget_free(a); /* frees the bytes and returns their reservation */
    printf("available: %llu bytes\n", (unsigned long long)band_budget_available(mem));
    return band_budget_destroy(mem);
}
