/*
 * A data-plane producer in C: connects to lulld as the producer of network messages and keys,
 * then pushes N events straight into the queues of the apps registered for them, singly and in
 * bursts, never letting more than WINDOW records wait unread (so none is dropped). Checks that
 * bad arguments are refused with the documented codes on the way.
 *
 *   producer SOCKET N WINDOW
 *
 * Event i is a key press with code i % 200 when i % 10 == 9, else a network message on channel
 * 7 whose length is i. Prints one JSON line with its counters and exits 0, or names the failed
 * check on stderr and exits 1.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "lull.h"

#define BURST 16

static int failed(const char *what, int got) {
    fprintf(stderr, "producer: %s (got %d: %s)\n", what, got, esm_strerror(got));
    return 1;
}

static struct lull_event event_at(unsigned long i) {
    struct lull_event ev = {0};
    if (i % 10 == 9) {
        ev.kind = ESM_KIND_KEY;
        ev.a = (int32_t)(i % 200);
        ev.b = 1;
    } else {
        ev.kind = ESM_KIND_NET_MESSAGE;
        ev.a = 7;
        ev.b = (int32_t)i;
    }
    return ev;
}

/* Waits until at most `window` records wait unread in the apps' rings. */
static int wait_window(esm_producer_t *p, uint64_t window) {
    struct esm_producer_counters c;
    for (;;) {
        int rc = esm_producer_counters(p, &c);
        if (rc != ESM_OK) {
            return rc;
        }
        if (c.unread <= window) {
            return ESM_OK;
        }
        sched_yield();
    }
}

int main(int argc, char **argv) {
    const uint16_t kinds[] = {ESM_KIND_NET_MESSAGE, ESM_KIND_KEY};
    const uint16_t bad_kinds[] = {99};
    struct lull_event burst[BURST];
    struct esm_producer_counters c;
    esm_producer_t *p;
    unsigned long n, window, i = 0;
    int err = 0, rc;
    if (argc != 4) {
        fprintf(stderr, "usage: producer SOCKET N WINDOW\n");
        return 1;
    }
    n = strtoul(argv[2], NULL, 10);
    window = strtoul(argv[3], NULL, 10);

    /* Refusals. */
    if (esm_producer_connect(argv[1], NULL, 1, &err) != NULL || err != ESM_ERR_BAD_ARG) {
        return failed("NULL kinds not refused", err);
    }
    if (esm_producer_connect(argv[1], bad_kinds, 1, &err) != NULL || err != ESM_ERR_BAD_KIND) {
        return failed("kind 99 not refused", err);
    }
    if (esm_producer_connect("/nonexistent/lull.sock", kinds, 2, &err) != NULL ||
        err != ESM_ERR_CONNECT) {
        return failed("a missing daemon not reported", err);
    }

    p = esm_producer_connect(argv[1], kinds, 2, &err);
    if (p == NULL) {
        return failed("connect", err);
    }
    burst[0] = event_at(0);
    burst[0].kind = 42;
    if ((rc = esm_producer_push(p, &burst[0])) != ESM_ERR_BAD_KIND) {
        return failed("an unknown kind was pushed", rc);
    }
    burst[0].kind = ESM_KIND_KEY;
    burst[0].a = 70000;
    if ((rc = esm_producer_push_burst(p, burst, 1)) != ESM_ERR_BAD_EVENT) {
        return failed("a key code above 65535 was pushed", rc);
    }
    if ((rc = esm_producer_push(p, NULL)) != ESM_ERR_BAD_ARG) {
        return failed("a NULL event was pushed", rc);
    }
    if ((rc = esm_producer_push_burst(p, burst, ESM_MAX_BURST + 1)) != ESM_ERR_BAD_ARG) {
        return failed("a burst above ESM_MAX_BURST was taken", rc);
    }

    /* Singles and bursts, alternating. */
    while (i < n) {
        unsigned long k, m = (i / BURST) % 2 == 0 ? 1 : BURST;
        if (m > n - i) {
            m = n - i;
        }
        if ((rc = wait_window(p, window)) != ESM_OK) {
            return failed("counters", rc);
        }
        if (m == 1) {
            struct lull_event ev = event_at(i);
            if ((rc = esm_producer_push(p, &ev)) != 1) {
                return failed("a single event did not reach exactly one app", rc);
            }
        } else {
            for (k = 0; k < m; k++) {
                burst[k] = event_at(i + k);
            }
            if ((rc = esm_producer_push_burst(p, burst, (uint32_t)m)) != ESM_OK) {
                return failed("push_burst", rc);
            }
        }
        i += m;
    }
    if ((rc = esm_producer_flush(p)) != 1) {
        return failed("markers still owed with nothing dropped", rc);
    }
    if ((rc = esm_producer_counters(p, &c)) != ESM_OK) {
        return failed("counters", rc);
    }
    printf("{\"events\":%llu,\"queued\":%llu,\"dropped\":%llu,\"unrouted\":%llu,\"rings\":%llu,"
           "\"rings_closed\":%llu,\"markers\":%llu,\"wakes\":%llu}\n",
           (unsigned long long)c.events, (unsigned long long)c.queued,
           (unsigned long long)c.dropped, (unsigned long long)c.unrouted,
           (unsigned long long)c.rings, (unsigned long long)c.rings_closed,
           (unsigned long long)c.markers, (unsigned long long)c.wakes);
    esm_producer_close(p);
    return 0;
}
