/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What lull-scx's BPF side and its user space share. The fact record's layout is
 * lull_os::bpf::scx_facts::FactRecord (the writer's side, in lulld); a test of this
 * crate checks that both agree.
 */
#ifndef __LULL_SCX_INTF_H
#define __LULL_SCX_INTF_H

/* guiS table 1's window classes of a GUI thread, as the display server knows them. */
enum lull_class {
	LULL_CLASS_OTHER = 0,	/* no GUI app's thread: plain fair service */
	LULL_CLASS_FRONT = 1,	/* the app in the foreground */
	LULL_CLASS_VISIBLE = 2,	/* visible, not in front */
	LULL_CLASS_BEHIND = 3,	/* in the background */
	LULL_CLASS_NR = 4,
};

/* Run-queue lengths the eq. 6 tables cover; longer queues use the last entry. */
#define LULL_NR_MAX 64

/* Most threads lulld may describe at once. */
#define LULL_FACTS_MAX 4096

/*
 * UCSG's placement (seed 001 §3.2.2): tid -> the one CPU the thread may run on, written by
 * lull-scx's user space (src/ucsg.rs) every sampling period.
 */
#define LULL_PLACE_MAX LULL_FACTS_MAX

/* The first per-CPU queue's id: CPU n's placed tasks wait in LULL_PLACED_DSQ + n. */
#define LULL_PLACED_DSQ 0x1000

/* One thread's facts, keyed by its tid. */
struct lull_fact {
	unsigned int class;	 /* enum lull_class */
	unsigned int input_seq;	 /* bumped by every input pushed to this thread */
	unsigned long long input_ns; /* CLOCK_MONOTONIC time of the latest push */
};

#endif
