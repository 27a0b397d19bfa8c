/*
 * Seed 000, figure 19, in C: an app that splits its code over the KDS threads. A keyboard
 * handler runs on the event thread (registered through the display server, which sets it aside
 * while the app is in the background); figure 18's drawing runs on the drawing thread; a stand-in
 * for audio decoding runs on the background thread.
 *
 * Once the drawing is on the screen it prints {"app":N,"window":{…},"drawn":true} on stdout;
 * then each key event prints {"key":CODE,"pressed":0|1}. A line (or end of file) on stdin makes
 * it detach and exit 0. Errors go to stderr with exit status 1.
 *
 *   cargo build -p lull-client
 *   cc -std=c11 -D_POSIX_C_SOURCE=200809L -Iinclude apps/kds-c/figure19.c \
 *      target/debug/liblull.a -lpthread -ldl -lm -o figure19
 *   ./figure19 [--socket PATH]
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lull.h"

enum { WINDOW_PX = 25, SQUARE_PX = 15, OFFSET_PX = 10, SURFACE_ID = 1 };

/* Units of stand-in work the background thread does, each after passing its gate. */
enum { BACKGROUND_WORK = 1000 };

struct app {
    kds_t *k;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int drawn; /* 0 not yet, 1 on the screen, -1 failed */
};

static void keyboard_callback(const struct lull_event *ev, void *user) {
    (void)user;
    printf("{\"key\":%d,\"pressed\":%d}\n", ev->a, ev->b);
    fflush(stdout);
}

static void drawing_thread(kds_thread_t *ctx, void *user) {
    struct app *a = user;
    const kds_layer layers[2] = {
        {.z = 0, .x = 0, .y = 0, .width = SQUARE_PX, .height = SQUARE_PX, .argb = 0xffff0000u},
        {.z = 1, .x = OFFSET_PX, .y = OFFSET_PX, .width = SQUARE_PX, .height = SQUARE_PX,
         .argb = 0xff00ff00u},
    };
    int ok = kds_thread_gate(ctx) == 1 &&
             kds_compose(a->k, SURFACE_ID, WINDOW_PX, WINDOW_PX, layers, 2) == KDS_OK &&
             kds_draw(a->k, SURFACE_ID, 0, 0) == KDS_OK;
    if (!ok) {
        fprintf(stderr, "figure19: drawing: %s\n", kds_last_error_message());
    }
    pthread_mutex_lock(&a->lock);
    a->drawn = ok ? 1 : -1;
    pthread_cond_broadcast(&a->changed);
    pthread_mutex_unlock(&a->lock);
}

static void background_thread(kds_thread_t *ctx, void *user) {
    (void)user;
    for (unsigned long done = 0; done < BACKGROUND_WORK && kds_thread_gate(ctx) == 1; done++) {
        /* Perform actions, such as decoding audio. */
    }
}

int main(int argc, char **argv) {
    const char *socket_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            socket_path = argv[++i];
        } else {
            fprintf(stderr, "usage: figure19 [--socket PATH]\n");
            return 1;
        }
    }
    static struct app a = {
        .lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    a.k = kds_connect(socket_path, WINDOW_PX, WINDOW_PX, "figure19");
    if (a.k == NULL) {
        fprintf(stderr, "figure19: kds_connect: %s\n", kds_last_error_message());
        return 1;
    }
    if (kds_esm_register(a.k, ESM_KIND_KEY, keyboard_callback, &a) != KDS_OK ||
        kds_run_thread(a.k, KDS_THREAD_DRAWING, drawing_thread, &a) != KDS_OK ||
        kds_run_thread(a.k, KDS_THREAD_BACKGROUND, background_thread, &a) != KDS_OK) {
        fprintf(stderr, "figure19: %s\n", kds_last_error_message());
        kds_detach(a.k);
        return 1;
    }

    pthread_mutex_lock(&a.lock);
    while (a.drawn == 0) {
        pthread_cond_wait(&a.changed, &a.lock);
    }
    int drawn = a.drawn;
    pthread_mutex_unlock(&a.lock);
    if (drawn < 0) {
        kds_detach(a.k);
        return 1;
    }
    kds_rect win;
    if (kds_window(a.k, &win) != KDS_OK) {
        fprintf(stderr, "figure19: kds_window: %s\n", kds_last_error_message());
        kds_detach(a.k);
        return 1;
    }
    printf("{\"app\":%llu,\"window\":{\"x\":%d,\"y\":%d,\"width\":%u,\"height\":%u},"
           "\"drawn\":true}\n",
           (unsigned long long)kds_app_id(a.k), win.x, win.y, win.width, win.height);
    fflush(stdout);

    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL) {
        /* End of file: detach as well. */
    }
    if (kds_detach(a.k) != KDS_OK) {
        fprintf(stderr, "figure19: kds_detach: %s\n", kds_last_error_message());
        return 1;
    }
    return 0;
}
