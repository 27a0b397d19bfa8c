/*
 * lull_ctl.h: the controller interface of seed 004 (§2.2), live on stock Linux, for C.
 *
 * Register processes (all their threads, and threads born later), sense per thread its CPU
 * time, scaled CPU time (work), state and CPU, and set CPU masks. Link -llull_ctl (the
 * lull-ctl crate's liblull_ctl.a or liblull_ctl.so) and -lpthread -ldl -lm.
 *
 * Every call returns LULL_CTL_OK (0), a positive status, or a negative LULL_CTL_ERR_* code;
 * lull_ctl_strerror describes any of them. Masks set are put back by lull_ctl_close.
 */
#ifndef LULL_CTL_H
#define LULL_CTL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    LULL_CTL_OK = 0,
    /* lull_ctl_sample: every registered process has exited (*n is 0). */
    LULL_CTL_ENDED = 1,
    LULL_CTL_ERR_NO_PROCESS = -1,
    LULL_CTL_ERR_KERNEL_THREAD = -2,
    LULL_CTL_ERR_PERMISSION = -3,
    LULL_CTL_ERR_NO_THREAD = -4,
    LULL_CTL_ERR_BAD_ARGUMENT = -5,
    LULL_CTL_ERR_IO = -6,
    /* lull_ctl_sample: more threads than cap; the first cap were written, *n says how many. */
    LULL_CTL_ERR_SHORT_BUFFER = -7
};

#define LULL_CTL_COMM_LEN 16

/* One thread at one sample. */
struct lull_ctl_thread {
    uint64_t t_ns;          /* nanoseconds since the handle was opened */
    uint64_t cpu_ns;        /* CPU time since the thread started */
    uint64_t work_ns;       /* scaled CPU time (equal to cpu_ns where speeds are unknown) */
    uint64_t delta_cpu_ns;  /* CPU time since the previous sample */
    int32_t pid;
    int32_t tid;
    uint32_t cpu;           /* the CPU it last ran on */
    char state;             /* 'R', 'S', 'D', ... */
    char comm[LULL_CTL_COMM_LEN]; /* NUL-terminated */
};

typedef struct LullCtl lull_ctl;

/* Opens a handle; never NULL. */
lull_ctl *lull_ctl_open(void);
/* Registers process pid and every thread it has; later threads are followed. */
int lull_ctl_register(lull_ctl *ctl, int32_t pid);
/* Samples every thread of the registered processes into out[0..cap); *n = number of threads. */
int lull_ctl_sample(lull_ctl *ctl, struct lull_ctl_thread *out, size_t cap, size_t *n);
/* Sets thread tid's CPU mask (bit n = CPU n). */
int lull_ctl_set_mask(lull_ctl *ctl, int32_t tid, uint64_t mask);
/* Puts every mask back and frees the handle. */
void lull_ctl_close(lull_ctl *ctl);
/* A static description of a code. */
const char *lull_ctl_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* LULL_CTL_H */
