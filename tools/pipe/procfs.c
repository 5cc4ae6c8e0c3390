/* SPDX-License-Identifier: MIT */
/*
 * procfs.c - open descriptors, resident set and its peak of the process (procfs.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "procfs.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

uint64_t procfs_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return 0;
    uint64_t n = 0;
    const struct dirent *e;
    while ((e = readdir(d)) != NULL) { // NOLINT(concurrency-mt-unsafe): d is ours alone
        if (e->d_name[0] == '.')
            continue; /* "." and ".." */
        n++;
    }
    closedir(d);
    return n > 0 ? n - 1 : 0; /* the listing's own descriptor */
}

uint64_t procfs_rss(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    unsigned long long size = 0, resident = 0;
    int got = fscanf(f, "%llu %llu", &size, &resident);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    if (got != 2 || page <= 0)
        return 0;
    return (uint64_t)resident * (uint64_t)page;
}

uint64_t procfs_peak_rss(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f != NULL) {
        char line[256];
        unsigned long long kb = 0;
        int found = 0;
        while (fgets(line, sizeof line, f) != NULL) {
            if (strncmp(line, "VmHWM:", 6) == 0) {
                found = sscanf(line + 6, "%llu", &kb) == 1;
                break;
            }
        }
        fclose(f);
        if (found)
            return (uint64_t)kb * 1024;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0 || ru.ru_maxrss <= 0)
        return 0;
    return (uint64_t)ru.ru_maxrss * 1024; /* kilobytes on Linux */
}
