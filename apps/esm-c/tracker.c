/*
 * A stylus tracker on the ESM, in C: registers handlers for touch press, motion and release,
 * then loops in esm_wait(). Each handler reads CLOCK_MONOTONIC first and prints the event's
 * latency (handler start - injection). Stops after N events (argv[1], default: forever) or when
 * the daemon goes away.
 *
 *   cargo build -p lull-client -p lulld
 *   cc -O2 -Iinclude apps/esm-c/tracker.c target/debug/liblull.a -lpthread -ldl -lm -o tracker
 *   target/debug/lulld --socket /tmp/esm.sock --replay traces/stylus-spiral.trace &
 *   ./tracker 100 /tmp/esm.sock
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lull.h"

static unsigned long handled;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_touch(const struct lull_event *ev) {
    uint64_t start = now_ns();
    static const char *names[] = {"motion", "press", "release"};
    handled++;
    printf("%-7s seq %llu at (%d, %d) latency %.1f us\n", names[ev->kind],
           (unsigned long long)ev->seq, ev->a, ev->b, (double)(start - ev->injected_ns) / 1e3);
}

int main(int argc, char **argv) {
    unsigned long limit = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
    int rc = esm_connect(argc > 2 ? argv[2] : NULL);
    if (rc != ESM_OK) {
        fprintf(stderr, "tracker: %s\n", esm_strerror(rc));
        return 1;
    }
    if (esm_register(ESM_KIND_TOUCH_MOTION, on_touch) != ESM_OK ||
        esm_register(ESM_KIND_TOUCH_PRESS, on_touch) != ESM_OK ||
        esm_register(ESM_KIND_TOUCH_RELEASE, on_touch) != ESM_OK) {
        fprintf(stderr, "tracker: registration failed\n");
        return 1;
    }
    while (limit == 0 || handled < limit) {
        rc = esm_wait();
        if (rc == ESM_OVERFLOW) {
            uint64_t dropped, first, last;
            esm_last_overflow(&dropped, &first, &last);
            printf("lost %llu events (seq %llu..%llu)\n", (unsigned long long)dropped,
                   (unsigned long long)first, (unsigned long long)last);
        } else if (rc != ESM_OK) {
            fprintf(stderr, "tracker: %s\n", esm_strerror(rc));
            return rc == ESM_ERR_DAEMON_GONE ? 0 : 1;
        }
    }
    esm_disconnect();
    return 0;
}
