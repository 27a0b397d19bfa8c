/*
 * Seed 000, figure 18, in C: attach to the display server, compose two 15x15 squares on a
 * 25x25 surface — layer 1 (z 0) at (0, 0) in red, layer 2 (z 1) at (10, 10) in green, so a
 * 5x5 corner of layer 1 lies under layer 2 — draw it at (0, 0) of a 25x25 window, and detach.
 *
 * Between drawing and detaching it prints one line of JSON on stdout and waits for a line (or
 * end of file) on stdin, so a caller can snapshot the screen meanwhile:
 *
 *   {"app":N,"window":{"x":X,"y":Y,"width":25,"height":25},
 *    "layers":[{"z":0,"x":0,"y":0,"width":15,"height":15,"argb":"0xffff0000"},…]}
 *
 * app is kds_app_id() (index + generation << 32); the window is on the screen, the layers in
 * window coordinates (the surface fills the window and is drawn at its origin); argb is a hex
 * string. Errors go to stderr with exit status 1. `lull kds demo figure18` builds and runs it.
 *
 *   cargo build -p lull-client
 *   cc -std=c11 -Iinclude apps/kds-c/figure18.c target/debug/liblull.a \
 *      -lpthread -ldl -lm -o figure18
 *   ./figure18 [--socket PATH]      (default: $LULL_KDS_SOCKET, else lulld's default socket)
 */
#include <stdio.h>
#include <string.h>

#include "lull.h"

enum { WINDOW_PX = 25, SQUARE_PX = 15, OFFSET_PX = 10, SURFACE_ID = 1 };

#define RED 0xffff0000u
#define GREEN 0xff00ff00u

static int fail(const char *what) {
    fprintf(stderr, "figure18: %s: %s\n", what, kds_last_error_message());
    return 1;
}

int main(int argc, char **argv) {
    const char *socket_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            socket_path = argv[++i];
        } else {
            fprintf(stderr, "usage: figure18 [--socket PATH]\n");
            return 1;
        }
    }

    /* kds_connect: open the control socket, ATTACH, keep the private channel (figure 14). */
    kds_t *k = kds_connect(socket_path, WINDOW_PX, WINDOW_PX, "figure18");
    if (k == NULL) {
        return fail("kds_connect");
    }

    /* Two layers; the higher z lies on top. pixels NULL: each is one solid colour. */
    const kds_layer layers[2] = {
        {.z = 0, .x = 0, .y = 0, .width = SQUARE_PX, .height = SQUARE_PX, .argb = RED},
        {.z = 1, .x = OFFSET_PX, .y = OFFSET_PX, .width = SQUARE_PX, .height = SQUARE_PX,
         .argb = GREEN},
    };
    const uint32_t n = sizeof layers / sizeof layers[0];
    kds_rect win;
    if (kds_compose(k, SURFACE_ID, WINDOW_PX, WINDOW_PX, layers, n) != KDS_OK) {
        fail("kds_compose");
        kds_detach(k);
        return 1;
    }
    if (kds_draw(k, SURFACE_ID, 0, 0) != KDS_OK) {
        fail("kds_draw");
        kds_detach(k);
        return 1;
    }
    if (kds_window(k, &win) != KDS_OK) {
        fail("kds_window");
        kds_detach(k);
        return 1;
    }

    printf("{\"app\":%llu,\"window\":{\"x\":%d,\"y\":%d,\"width\":%u,\"height\":%u},\"layers\":[",
           (unsigned long long)kds_app_id(k), win.x, win.y, win.width, win.height);
    for (uint32_t i = 0; i < n; i++) {
        const kds_layer *l = &layers[i];
        printf("%s{\"z\":%d,\"x\":%d,\"y\":%d,\"width\":%u,\"height\":%u,\"argb\":\"0x%08x\"}",
               i ? "," : "", l->z, l->x, l->y, l->width, l->height, l->argb);
    }
    printf("]}\n");
    fflush(stdout);

    /* The caller snapshots the screen now; a line or end of file says it is done. */
    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL) {
        /* End of file: done as well. */
    }

    if (kds_detach(k) != KDS_OK) {
        return fail("kds_detach");
    }
    return 0;
}
