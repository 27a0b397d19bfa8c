/* Registers the pid given, samples it, moves its main thread to CPU 0, checks the errors, and
 * prints what it saw as key=value lines for the Rust test to check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lull_ctl.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        return 2;
    }
    int32_t pid = (int32_t)atoi(argv[1]);
    lull_ctl *ctl = lull_ctl_open();
    printf("sizeof=%zu\n", sizeof(struct lull_ctl_thread));
    printf("bad_pid=%d\n", lull_ctl_register(ctl, -1));
    printf("kthread=%d\n", lull_ctl_register(ctl, 2));
    printf("register=%d\n", lull_ctl_register(ctl, pid));
    size_t n = 0;
    int short_rc = lull_ctl_sample(ctl, NULL, 0, &n);
    printf("short=%d n=%zu\n", short_rc, n);
    struct lull_ctl_thread t[64];
    int rc = lull_ctl_sample(ctl, t, 64, &n);
    printf("sample=%d n=%zu\n", rc, n);
    for (size_t i = 0; i < n && i < 64; i++) {
        printf("thread pid=%d tid=%d state=%c cpu=%u comm=%s\n", t[i].pid, t[i].tid, t[i].state,
               t[i].cpu, t[i].comm);
    }
    printf("set_mask=%d\n", lull_ctl_set_mask(ctl, pid, 1));
    printf("no_thread=%d\n", lull_ctl_set_mask(ctl, 0x3fffffff, 1));
    printf("strerror=%s\n", lull_ctl_strerror(LULL_CTL_ERR_KERNEL_THREAD));
    fflush(stdout);
    lull_ctl_close(ctl);
    return 0;
}
