/*
 * The fan-out bench's client as a separate C program (`lull bench fanout --processes`): an app
 * with the library's default settings, registered for network messages, that counts every
 * delivery and checks their order until the daemon goes away.
 *
 *   fanout_client SOCKET
 *
 * Prints "ready" once its registration is in effect, then, when the daemon has gone, one JSON
 * line: {"handled":H,"overflow_markers":M,"dropped":D,"out_of_order":O}. Exits 0, or 1 on any
 * other error.
 */
#include <stdio.h>

#include "lull.h"

static unsigned long long handled, out_of_order;
static unsigned long long next_seq; /* the lowest sequence number the next delivery may carry */

static void on_message(const struct lull_event *ev) {
    if (ev->seq < next_seq) {
        out_of_order++;
    }
    next_seq = ev->seq + 1;
    handled++;
}

int main(int argc, char **argv) {
    unsigned long long markers = 0, dropped = 0;
    int rc;
    if (argc != 2) {
        fprintf(stderr, "usage: fanout_client SOCKET\n");
        return 1;
    }
    rc = esm_connect(argv[1]);
    if (rc == ESM_OK) {
        rc = esm_register(ESM_KIND_NET_MESSAGE, on_message);
    }
    if (rc != ESM_OK) {
        fprintf(stderr, "fanout_client: %s\n", esm_strerror(rc));
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        rc = esm_wait();
        if (rc == ESM_OK) {
            continue;
        }
        if (rc == ESM_OVERFLOW) {
            uint64_t d, first, last;
            esm_last_overflow(&d, &first, &last);
            if (first < next_seq) {
                out_of_order++;
            }
            next_seq = last + 1;
            markers++;
            dropped += d;
            continue;
        }
        break;
    }
    if (rc != ESM_ERR_DAEMON_GONE) {
        fprintf(stderr, "fanout_client: %s\n", esm_strerror(rc));
        return 1;
    }
    printf("{\"handled\":%llu,\"overflow_markers\":%llu,\"dropped\":%llu,\"out_of_order\":%llu}\n",
           handled, markers, dropped, out_of_order);
    return 0;
}
