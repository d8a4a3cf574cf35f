/* bench/bench_util.h — what the benchmarks share: a monotonic clock. */
#ifndef MESHPLAN_BENCH_UTIL_H
#define MESHPLAN_BENCH_UTIL_H

#include <time.h>

/* Seconds on the monotonic clock (CLOCK_MONOTONIC): differences time a loop. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
