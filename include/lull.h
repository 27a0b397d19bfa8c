/*
 * lull.h — the C client library of Lull's Event Stream Model (ESM).
 *
 * The ESM daemon (lulld) pushes events to applications: an app registers a handler per event
 * kind with esm_register() and then loops in esm_wait(), which blocks in the kernel (no timeout)
 * until the daemon pushes the next event and runs its handler on the calling thread.
 *
 * All calls belong to one thread: the app's event thread. Handlers must not call esm_*
 * functions (they get ESM_ERR_REENTRANT).
 *
 * Link with liblull_linux (cdylib .so or staticlib .a, built by `cargo build -p lull-linux`).
 */
#ifndef LULL_H
#define LULL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Event kinds (stable wire numbers, lull_model::EventKind). */
enum {
    ESM_KIND_TOUCH_MOTION = 0,
    ESM_KIND_TOUCH_PRESS = 1,
    ESM_KIND_TOUCH_RELEASE = 2,
    ESM_KIND_KEY = 3,
    ESM_KIND_MOUSE = 4,
    ESM_KIND_NET_MESSAGE = 5,
    ESM_KIND_TIMER = 6
};

/* Return codes. */
enum {
    ESM_OK = 0,               /* esm_wait: a handler ran */
    ESM_OVERFLOW = 1,         /* esm_wait: events were lost, see esm_last_overflow() */
    ESM_ERR_CONNECT = -1,     /* no daemon listens on the socket */
    ESM_ERR_DAEMON_GONE = -2, /* the daemon closed the connection */
    ESM_ERR_PROTOCOL = -3,    /* malformed message from the daemon */
    ESM_ERR_BAD_KIND = -4,    /* unknown event kind */
    ESM_ERR_IO = -5,          /* socket error */
    ESM_ERR_BAD_PATH = -6,    /* socket path not valid UTF-8 */
    ESM_ERR_REENTRANT = -7    /* esm_* called from inside a handler */
};

/* An event as a handler receives it. */
struct lull_event {
    uint64_t seq;         /* ESM sequence number, in injection order */
    uint64_t injected_ns; /* CLOCK_MONOTONIC at injection; latency = handler start - this */
    uint16_t kind;        /* an ESM_KIND_* */
    /* touch: x, y | key: code, pressed | mouse: dx, dy, buttons | net: channel, len | timer: id */
    int32_t a, b, c;
};

typedef void (*esm_handler)(const struct lull_event *ev);

/* Connects this thread to the daemon at path (NULL: $LULL_SOCKET, else
 * $XDG_RUNTIME_DIR/lull/esm.sock, else /run/lull/esm.sock). Optional: the first esm_register or
 * esm_wait connects on its own. */
int esm_connect(const char *path);

/* The seed's esm_register(event, handler): handler runs for every event of kind; NULL
 * unregisters. Returns once the daemon has the registration in effect. */
int esm_register(uint16_t kind, esm_handler handler);

/* The seed's esm_wait(): blocks until the daemon pushes an event and runs its handler. */
int esm_wait(void);

/* After esm_wait returned ESM_OVERFLOW: events lost and their sequence range (NULLs allowed). */
void esm_last_overflow(uint64_t *dropped, uint64_t *first, uint64_t *last);

/* Closes this thread's connection; the daemon forgets the app's registrations and queue. */
int esm_disconnect(void);

/* A static description of a return code. */
const char *esm_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* LULL_H */
