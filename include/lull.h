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
 * The display server's client API (kds_*, below) has its own rules on threads; see there.
 *
 * Link with liblull (-llull: the cdylib .so or staticlib .a of the lull-client crate, built by
 * `cargo build -p lull-client`).
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
    ESM_ERR_CONNECT = -1,     /* no daemon listens on the socket (is lulld running?) */
    ESM_ERR_DAEMON_GONE = -2, /* the daemon closed the connection */
    ESM_ERR_PROTOCOL = -3,    /* malformed message from the daemon */
    ESM_ERR_BAD_KIND = -4,    /* unknown event kind */
    ESM_ERR_IO = -5,          /* socket error */
    ESM_ERR_BAD_PATH = -6,    /* socket path not valid UTF-8 */
    ESM_ERR_REENTRANT = -7,   /* esm_* called from inside a handler */
    ESM_ERR_BAD_EVENT = -8,   /* producer: the event's fields do not fit its kind */
    ESM_ERR_BAD_ARG = -9,     /* producer: a NULL pointer or a count out of range */
    ESM_ERR_PERMISSION = -10  /* the socket refused this user (EACCES): join its group (input) or run as root */
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

/*
 * Producers: sources outside the daemon (a device driver, a network or timer source) that write
 * events straight into the apps' queues, with no daemon on the per-event path.
 *
 * A producer connects to lulld as the producer of some kinds; for every app registered for one
 * of them, lulld creates a bounded ring in shared memory and hands one end to the producer and
 * the other to the app (whose esm_wait reads it). Pushing writes the event into the ring of
 * every app routed for its kind and wakes an app only if it is blocked in esm_wait. It never
 * blocks: an event for a full ring is dropped and counted, and the app gets an overflow marker
 * (ESM_OVERFLOW) in its place. Route changes (apps registering, leaving) are read at each push.
 *
 * A handle may move between threads but is used by one thread at a time.
 */

typedef struct esm_producer esm_producer_t;

/* Most events one esm_producer_push_burst takes. */
enum {
    ESM_MAX_BURST = 4096
};

/* What a producer did, summed over every ring it has had. */
struct esm_producer_counters {
    uint64_t events;       /* events pushed */
    uint64_t queued;       /* ring pushes (one per event and routed app) that queued it */
    uint64_t dropped;      /* ring pushes that dropped it: the ring was full (marked there) */
    uint64_t unrouted;     /* events no app was routed for */
    uint64_t rings;        /* rings received from the daemon */
    uint64_t rings_closed; /* rings whose route the daemon ended */
    uint64_t markers;      /* overflow markers written */
    uint64_t wakes;        /* wake-ups of apps blocked in esm_wait */
    uint64_t unread;       /* records the apps have yet to read (UINT64_MAX: an app's index is
                              impossible) */
};

/* Connects to the daemon at path (NULL: as esm_connect) as the producer of the n_kinds kinds
 * (ESM_KIND_*) at kinds; returns once every app registered for them now is routed, or NULL
 * with *error (if error is not NULL) set to an ESM_ERR_*. */
esm_producer_t *esm_producer_connect(const char *path, const uint16_t *kinds, uint32_t n_kinds,
                                     int *error);

/* Pushes one event: kind, a, b, c as a handler receives them; seq is ignored (the producer
 * numbers events) and injected_ns 0 means now. Returns the number of apps it was queued for
 * (0 or more) or an ESM_ERR_*. */
int esm_producer_push(esm_producer_t *p, const struct lull_event *ev);

/* Pushes n events that arrived together: one look at the routes, and each app's ring gets its
 * events with at most one wake-up. Returns ESM_OK, or an ESM_ERR_* with nothing pushed. */
int esm_producer_push_burst(esm_producer_t *p, const struct lull_event *events, uint32_t n);

/* Writes the overflow markers still owed where the rings have room: 1 when none is left, 0 when
 * some wait for their app to read. */
int esm_producer_flush(esm_producer_t *p);

/* The producer's counters. */
int esm_producer_counters(const esm_producer_t *p, struct esm_producer_counters *out);

/* Closes the producer and frees p (NULL is ignored); its apps keep what they have not read. */
void esm_producer_close(esm_producer_t *p);

/*
 * KDS apps: the display server's client API (seed 000, figures 14-19).
 *
 * kds_connect() attaches to the display server (lulld's KDS) and starts the app's four KDS
 * threads: event (runs the handlers of kds_esm_register), drawing, foreground and background
 * (each runs the function given to kds_run_thread). guiS table 1 applies in the library: a
 * drawing call blocks while the window cannot be seen, and kds_thread_gate() blocks while the
 * calling thread's category may not run.
 *
 * Every kds_* function but kds_detach may be called from any thread at once, including from
 * handlers and thread functions. kds_detach is the last call on a kds_t and is refused on the
 * app's own KDS threads; those may still be using k while it runs (see there). Functions return KDS_OK or a negative KDS_ERR_*; a failing call
 * records its code and a message for the calling thread (kds_last_error,
 * kds_last_error_message), as does a kds_connect that returns NULL.
 */

typedef struct kds kds_t;               /* an attached app */
typedef struct kds_thread kds_thread_t; /* what a function running on a KDS thread is given */

/* Return codes. */
enum {
    KDS_OK = 0,
    KDS_ERR_CONNECT = -1,      /* nothing listens on the control socket (is lulld running?) */
    KDS_ERR_SERVER_GONE = -2,  /* the display server closed the connection */
    KDS_ERR_PROTOCOL = -3,     /* an unexpected or malformed message from the server */
    KDS_ERR_REFUSED = -4,      /* the server refused the request: see kds_last_refusal() */
    KDS_ERR_NULL = -5,         /* a required pointer is NULL */
    KDS_ERR_BAD_ARG = -6,      /* an argument is out of range */
    KDS_ERR_BAD_STRING = -7,   /* a path or name is not valid UTF-8 */
    KDS_ERR_IO = -8,           /* socket error */
    KDS_ERR_STOPPING = -9,     /* the app is detaching, or this thread's function was replaced */
    KDS_ERR_WRONG_THREAD = -10, /* kds_detach on one of the app's KDS threads */
    KDS_ERR_INTERNAL = -11,    /* a fault inside the library */
    KDS_ERR_PERMISSION = -12   /* the socket refused this user (EACCES): join its group (input) or run as root */
};

/* Why the server refused a request (kds_last_refusal; the wire's ErrorCode numbers). */
enum {
    KDS_REFUSED_MALFORMED = 1,
    KDS_REFUSED_WRONG_CHANNEL = 2,
    KDS_REFUSED_NOT_PERMITTED = 3,
    KDS_REFUSED_NO_WINDOW = 4,
    KDS_REFUSED_NO_SURFACE = 5,
    KDS_REFUSED_COMPOSE = 6,
    KDS_REFUSED_OUTSIDE_WINDOW = 7,
    KDS_REFUSED_TOO_MANY_APPS = 8,
    KDS_REFUSED_BAD_THREAD = 9,
    KDS_REFUSED_WINDOW_TOO_LARGE = 10,
    KDS_REFUSED_ESM = 11,
    KDS_REFUSED_RESOURCES = 12
};

/* Thread categories (guiS table 1). The event thread runs handlers only. */
enum {
    KDS_THREAD_EVENT = 0,
    KDS_THREAD_DRAWING = 1,
    KDS_THREAD_FOREGROUND = 2,
    KDS_THREAD_BACKGROUND = 3
};

/* Most layers one kds_compose may carry. */
enum {
    KDS_MAX_LAYERS = 1024
};

/* Most draws one kds_draw_batch may carry (more is KDS_ERR_BAD_ARG). */
enum {
    KDS_MAX_DRAW_BATCH = 1024
};

/* What kds_app_id returns for a NULL handle. */
#define KDS_NO_APP UINT64_MAX

/* A rectangle in pixels. */
typedef struct kds_rect {
    int32_t x, y;
    uint32_t width, height;
} kds_rect;

/* A layer of a surface (figure 16): a rectangle in surface coordinates, its z-index (higher
 * lies on top) and its paint: pixels (row-major ARGB, width * height of them) or, when pixels
 * is NULL, argb over the whole rectangle. */
typedef struct kds_layer {
    int32_t z;
    int32_t x, y;
    uint32_t width, height;
    uint32_t argb;
    const uint32_t *pixels;
} kds_layer;

/* The window's state as the window manager last pushed it. */
typedef struct kds_window_state {
    uint8_t stacking;   /* 0 foreground, 1 background */
    uint8_t visibility; /* 0 visible, 1 covered by a system decoration */
    uint8_t screen;     /* 0 on, 1 off */
    uint8_t can_see;    /* 1 when drawing reaches the user's eyes (the seed's CAN_SEE()) */
} kds_window_state_t;

/* The seed's kds_connect (figure 14): attaches to the display server at socket_path (NULL:
 * $LULL_KDS_SOCKET, else kds.sock beside the default ESM socket) with a width x height window
 * (0 x 0: the whole screen), centred on the screen, labelled name (NULL: no label). Returns
 * NULL on failure; kds_last_error() says why. */
kds_t *kds_connect(const char *socket_path, uint32_t width, uint32_t height, const char *name);

/* The app's window on the screen. */
int kds_window(kds_t *k, kds_rect *out);

/* The app's id in the ESM and the display server: index in the low 32 bits, generation in the
 * high 32 (lull kds writes it app<index>.<generation>). KDS_NO_APP for NULL, or once kds_detach has started. */
uint64_t kds_app_id(kds_t *k);

/* COMPOSE (figure 16): flattens the n layers onto a transparent width x height surface, lower
 * z first, into the server's slot surface_id. Blocks while the window cannot be seen. */
int kds_compose(kds_t *k, uint32_t surface_id, uint32_t width, uint32_t height,
                const kds_layer *layers, uint32_t n);

/* DRAW (figure 17): the flattened surface surface_id at (x, y) of the window. Refused whole
 * (KDS_REFUSED_OUTSIDE_WINDOW) if any pixel would leave the window. Blocks as kds_compose. */
int kds_draw(kds_t *k, uint32_t surface_id, int32_t x, int32_t y);

/* One draw of kds_draw_batch: what kds_draw takes. */
typedef struct kds_draw_item {
    uint32_t surface_id;
    int32_t x, y;
} kds_draw_item;

/* DRAW_BATCH: the n draws in order as one message and one reply; refused whole (nothing
 * drawn) if any one would be. Blocks as kds_compose; n 0 does nothing. */
int kds_draw_batch(kds_t *k, const kds_draw_item *items, uint32_t n);

/* Frame pacing: blocks until the app may draw its next frame, and counts it. At once if no
 * frame was drawn in the screen's current refresh period (60 Hz headless); otherwise it sends
 * FRAME and returns at the next refresh boundary, when the server answers FRAME_DONE (held
 * while the window cannot be seen). Call it before each frame, and draw only what changed:
 * an app then draws at most once per refresh and an idle one causes no wake-up. */
int kds_next_frame(kds_t *k);

/* esm_register through the display server (figure 19): handler(event, user) runs on the app's
 * event thread for every event of kind (an ESM_KIND_*); NULL unregisters. Input handlers are
 * set aside while the app is in the background and put back in front. */
typedef void (*kds_event_handler)(const struct lull_event *ev, void *user);
int kds_esm_register(kds_t *k, uint16_t kind, kds_event_handler handler, void *user);

/* Hands fn(ctx, user) to the drawing, foreground or background thread (figure 19), replacing
 * a function that thread has not started; a running one sees kds_thread_should_stop(). */
typedef void (*kds_thread_fn)(kds_thread_t *ctx, void *user);
int kds_run_thread(kds_t *k, int category, kds_thread_fn fn, void *user);

/* guiS table 1 for the calling thread: blocks while its category may not run. 1: run on;
 * 0: return now (detaching, or the function was replaced). */
int kds_thread_gate(kds_thread_t *ctx);

/* 1 when the running function should return, 0 otherwise. Never blocks. */
int kds_thread_should_stop(kds_thread_t *ctx);

/* The window's state. */
int kds_window_state(kds_t *k, kds_window_state_t *out);

/* DETACH: the window and registrations go, the KDS threads stop (running functions must
 * return once told) and k is freed, also when the server was already gone. Returns
 * KDS_ERR_WRONG_THREAD, freeing nothing, on one of the app's KDS threads.
 * The KDS threads may still use k meanwhile: from the start of kds_detach their kds_* calls
 * on k fail with KDS_ERR_STOPPING (kds_app_id gives KDS_NO_APP; a call blocked in
 * kds_compose or kds_draw returns), and k is freed only after all of them have returned.
 * The caller must still make sure that no thread other than the KDS threads is in a call on
 * k, or starts one, once kds_detach is called (the library cannot wait for a call it has not
 * seen yet), that kds_detach is called once, and that nothing uses k after it returns. */
int kds_detach(kds_t *k);

/* The calling thread's last failure: its KDS_ERR_* code (KDS_OK if none), the server's
 * KDS_REFUSED_* reason after KDS_ERR_REFUSED (0 otherwise), and a message valid until the
 * thread's next failing kds_* call. */
int kds_last_error(void);
int kds_last_refusal(void);
const char *kds_last_error_message(void);

/* A static description of a KDS_* code. */
const char *kds_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* LULL_H */
