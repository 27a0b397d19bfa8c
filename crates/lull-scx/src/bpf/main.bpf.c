/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lull-scx: Lull's scheduling policies as a sched_ext scheduler.
 *
 * Fair service by virtual time, as CFS/EEVDF give it: every task's vtime advances by its run
 * time scaled by 1024 / weight, and the CPUs run the smallest vtime first from one shared queue.
 * What Lull adds is where the weights and the slices come from — tables that user space fills
 * at load from lull-sched's pure policies (see src/tables.rs) — and the facts lulld writes into
 * the pinned map `lull_facts`:
 *   - the thread's guiS class (front, visible, behind) picks its UCSG sensitivity weight,
 *     and the front app is "high" for UCSG's hold time after an input;
 *   - a thread whose input_seq moved since it last ran was just given an input: its next
 *     wake-up is boosted (seed 003, eq. 6/7): it goes straight to the head of its CPU's local
 *     queue, preempting the task running there, and runs one slice at eq. 6's weight W';
 *     the boost ends when that slice ends or the thread blocks.
 * UCSG's core allocation (seed 001 §3.2.2): user space runs lull-sched's UCSG over the facts and
 * writes where each managed thread may run into `lull_place`; such a thread waits in its CPU's
 * own queue, which that CPU serves beside the shared one, smallest vtime first.
 * Everything else (threads lulld did not name) runs at its own nice weight.
 * The watchdog (timeout_ms) bounds how long any runnable task may wait; any error ends the
 * scheduler and the kernel takes every task back.
 */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

/*
 * The headers name sched_ext's constants as read-only globals a loader fills from the running
 * kernel's BTF. Here libbpf does it instead: a CO-RE enum relocation resolves each at load
 * against the kernel's own enum, so the object carries no value of its own.
 */
#undef SCX_DSQ_LOCAL
#undef SCX_DSQ_LOCAL_ON
#undef SCX_ENQ_HEAD
#undef SCX_ENQ_PREEMPT
#undef SCX_KICK_IDLE
#undef SCX_KICK_PREEMPT
#define SCX_DSQ_LOCAL bpf_core_enum_value(enum scx_dsq_id_flags, SCX_DSQ_LOCAL)
#define SCX_DSQ_LOCAL_ON bpf_core_enum_value(enum scx_dsq_id_flags, SCX_DSQ_LOCAL_ON)
#define SCX_ENQ_HEAD bpf_core_enum_value(enum scx_enq_flags, SCX_ENQ_HEAD)
#define SCX_ENQ_PREEMPT bpf_core_enum_value(enum scx_enq_flags, SCX_ENQ_PREEMPT)
#define SCX_KICK_IDLE bpf_core_enum_value(enum scx_kick_flags, SCX_KICK_IDLE)
#define SCX_KICK_PREEMPT bpf_core_enum_value(enum scx_kick_flags, SCX_KICK_PREEMPT)

UEI_DEFINE(uei);

/* The user DSQ's id (any below the built-in flag bit 63). */
#define SHARED_DSQ 0x100

/* Filled by user space before load (src/tables.rs). */
const volatile u64 class_weight[LULL_CLASS_NR];
const volatile u64 high_weight;
const volatile u64 high_hold_ns;
const volatile u64 boost_weight[LULL_NR_MAX + 1];
const volatile u64 period_ns[LULL_NR_MAX + 1];
const volatile u64 min_slice_ns;
const volatile u64 sleeper_credit_ns;
const volatile u64 max_lead_ns;

/* Counters user space reads (bss). */
u64 nr_boosted, nr_high, nr_direct, nr_shared, nr_kicks, nr_facts_seen, nr_behind;
u64 nr_placed, nr_placed_direct;

static u64 vtime_now;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LULL_FACTS_MAX);
	__type(key, u32);
	__type(value, struct lull_fact);
} lull_facts SEC(".maps");

/*
 * Seed 001 §3.2.2 (thread allocation and migration), §3.2.3 (DPM, cluster switching): the CPU
 * UCSG gives each thread it manages, as a slot of the active cluster turned into a CPU by user
 * space. Like the affinity lulld's live UCSG host sets, it is a rule, not a preference: the
 * thread runs there only, even when another CPU idles (the seed allocates "to an active core"
 * and moves threads only at the 200 ms migration).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LULL_PLACE_MAX);
	__type(key, u32);
	__type(value, u32);
} lull_place SEC(".maps");

struct task_ctx {
	u64 weight;	/* 1024 = nice 0, the weight its vtime advances by */
	u64 slice_ns;	/* the slice it was given */
	u64 running_ns;	/* when it last went on a CPU */
	u32 seen_seq;	/* the input_seq it was last boosted for */
	u32 boosted;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

static struct task_ctx *ctx_of(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

/* The CPU UCSG placed p on, or -1 (not placed, or a CPU its affinity excludes). */
static s32 placed_cpu(struct task_struct *p)
{
	u32 tid = p->pid;
	u32 *cpu = bpf_map_lookup_elem(&lull_place, &tid);

	if (!cpu || *cpu >= scx_bpf_nr_cpu_ids() || !bpf_cpumask_test_cpu(*cpu, p->cpus_ptr))
		return -1;
	return *cpu;
}

static u64 runnable_now(void)
{
	u64 n = scx_bpf_dsq_nr_queued(SHARED_DSQ) + scx_bpf_nr_cpu_ids();
	s32 cpu = bpf_get_smp_processor_id();

	n += scx_bpf_dsq_nr_queued(LULL_PLACED_DSQ + cpu);
	return n > LULL_NR_MAX ? LULL_NR_MAX : n;
}

/* The weight of a thread, and whether this wake-up is boosted. */
static u64 weight_of(struct task_struct *p, struct task_ctx *tctx, u64 nr, bool *boost)
{
	/* The kernel's own weight: p->scx.weight is 100 at nice 0. */
	u64 w = (u64)p->scx.weight * 1024 / 100;
	struct lull_fact *f;
	u32 tid = p->pid;

	*boost = false;
	f = bpf_map_lookup_elem(&lull_facts, &tid);
	if (!f)
		return w;
	__sync_fetch_and_add(&nr_facts_seen, 1);
	if (f->class < LULL_CLASS_NR && f->class != LULL_CLASS_OTHER)
		w = class_weight[f->class];
	if (f->class == LULL_CLASS_BEHIND)
		__sync_fetch_and_add(&nr_behind, 1);
	if (f->class == LULL_CLASS_FRONT && f->input_ns &&
	    bpf_ktime_get_ns() - f->input_ns < high_hold_ns) {
		w = high_weight;
		__sync_fetch_and_add(&nr_high, 1);
	}
	if (f->input_seq != tctx->seen_seq) {
		tctx->seen_seq = f->input_seq;
		if (nr <= LULL_NR_MAX && boost_weight[nr] > w)
			w = boost_weight[nr];
		*boost = true;
	}
	return w;
}

/* Seed 003 eq. 7: TS = P x W / sum W, for a task of weight w among nr runnable tasks, the
 * others taken at nice 0 (Tables::slice_ns in src/tables.rs is the same arithmetic). */
static u64 slice_for(u64 w, u64 nr)
{
	u64 s;

	if (nr < 1)
		nr = 1;
	if (nr > LULL_NR_MAX)
		nr = LULL_NR_MAX;
	s = period_ns[nr] * w / (w + (nr - 1) * 1024);
	return s < min_slice_ns ? min_slice_ns : s;
}

s32 BPF_STRUCT_OPS(lull_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	struct task_ctx *tctx = ctx_of(p);
	bool is_idle = false;
	s32 cpu = placed_cpu(p);

	if (cpu >= 0)
		/* Its own CPU only; straight to it when it idles. */
		is_idle = scx_bpf_test_and_clear_cpu_idle(cpu);
	else
		cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (is_idle && tctx) {
		u64 nr = runnable_now();
		bool boost;
		u64 w = weight_of(p, tctx, nr, &boost);

		tctx->weight = w;
		tctx->slice_ns = slice_for(w, nr);
		tctx->boosted = boost;
		if (boost)
			__sync_fetch_and_add(&nr_boosted, 1);
		__sync_fetch_and_add(&nr_direct, 1);
		if (placed_cpu(p) >= 0)
			__sync_fetch_and_add(&nr_placed_direct, 1);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, tctx->slice_ns, 0);
	}
	return cpu;
}

void BPF_STRUCT_OPS(lull_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = ctx_of(p);
	u64 nr = runnable_now(), vtime, w;
	bool boost;
	s32 cpu, placed = placed_cpu(p);

	if (!tctx) {
		scx_bpf_error("lull-scx: task %d has no context", p->pid);
		return;
	}
	w = weight_of(p, tctx, nr, &boost);
	tctx->weight = w;
	tctx->slice_ns = slice_for(w, nr);
	tctx->boosted = boost;

	if (boost) {
		/*
		 * Straight into the local queue of the CPU select_cpu chose (its previous one: no
		 * CPU was idle), at its head, preempting the task running there. A shared boost
		 * queue instead costs a kick (an IPI, or an irq_work on this CPU), the preempted
		 * task's trip through dispatch and a lock on the shared queue; measured in the lab
		 * guest it made the boosted p99 worse than EEVDF's (docs/scx.md).
		 */
		cpu = placed >= 0 ? placed : scx_bpf_task_cpu(p);
		__sync_fetch_and_add(&nr_boosted, 1);
		__sync_fetch_and_add(&nr_kicks, 1);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, tctx->slice_ns,
				   enq_flags | SCX_ENQ_HEAD | SCX_ENQ_PREEMPT);
		return;
	}

	/* A sleeper is credited at most sleeper_credit_ns of vtime (CFS's place_entity). */
	vtime = p->scx.dsq_vtime;
	if (time_before(vtime, vtime_now - sleeper_credit_ns))
		vtime = vtime_now - sleeper_credit_ns;
	/*
	 * Nor is any task placed more than max_lead_ns ahead: a tick's run at nice 19's weight
	 * (10 of 1024) is charged a hundred times its length, and a few such runs put a task past
	 * the watchdog (measured: khugepaged waited 5.7 s and the kernel ended lull-scx).
	 */
	if (time_before(vtime_now + max_lead_ns, vtime))
		vtime = vtime_now + max_lead_ns;
	if (placed >= 0) {
		/* UCSG's CPU (seed 001 §3.2.2): its queue, that CPU woken if it idles. */
		__sync_fetch_and_add(&nr_placed, 1);
		scx_bpf_dsq_insert_vtime(p, LULL_PLACED_DSQ + placed, tctx->slice_ns, vtime,
					 enq_flags);
		scx_bpf_kick_cpu(placed, SCX_KICK_IDLE);
		return;
	}
	__sync_fetch_and_add(&nr_shared, 1);
	scx_bpf_dsq_insert_vtime(p, SHARED_DSQ, tctx->slice_ns, vtime, enq_flags);
	cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (cpu >= 0)
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

/* The vtime at the head of a queue; false when it is empty. */
static bool head_vtime(u64 dsq, u64 *vtime)
{
	struct task_struct *p;

	bpf_for_each(scx_dsq, p, dsq, 0) {
		*vtime = p->scx.dsq_vtime;
		return true;
	}
	return false;
}

/*
 * A CPU serves its own placed queue and the shared one, the smaller head vtime first: placed
 * and free tasks share one virtual time, so neither kind can hold the other back past the
 * watchdog.
 */
void BPF_STRUCT_OPS(lull_dispatch, s32 cpu, struct task_struct *prev)
{
	u64 own_dsq = LULL_PLACED_DSQ + cpu, own = 0, shared = 0;
	bool has_own = head_vtime(own_dsq, &own);
	bool has_shared = head_vtime(SHARED_DSQ, &shared);

	if (has_own && (!has_shared || !time_before(shared, own)) &&
	    scx_bpf_dsq_move_to_local(own_dsq, 0))
		return;
	if (scx_bpf_dsq_move_to_local(SHARED_DSQ, 0))
		return;
	scx_bpf_dsq_move_to_local(own_dsq, 0);
}

void BPF_STRUCT_OPS(lull_running, struct task_struct *p)
{
	struct task_ctx *tctx = ctx_of(p);

	if (tctx)
		tctx->running_ns = bpf_ktime_get_ns();
	if (time_before(vtime_now, p->scx.dsq_vtime))
		vtime_now = p->scx.dsq_vtime;
}

void BPF_STRUCT_OPS(lull_stopping, struct task_struct *p, bool runnable)
{
	struct task_ctx *tctx = ctx_of(p);
	u64 used, w;

	if (!tctx)
		return;
	/*
	 * The time it ran, by the clock. Not the slice's used part: when nothing else waits, the
	 * kernel refills a running task's slice (SCX_EV_REFILL_SLICE_DFL: 545 times in one
	 * 12 s painting run in the lab guest), and that run would go uncharged.
	 */
	used = tctx->running_ns ? bpf_ktime_get_ns() - tctx->running_ns : 0;
	w = tctx->weight ? tctx->weight : 1024;
	p->scx.dsq_vtime += used * 1024 / w;
	/* Seed 003: the boost lasts one slice, or until the thread blocks. */
	tctx->boosted = 0;
}

void BPF_STRUCT_OPS(lull_enable, struct task_struct *p)
{
	p->scx.dsq_vtime = vtime_now;
}

s32 BPF_STRUCT_OPS(lull_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	tctx = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	tctx->weight = 1024;
	return 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(lull_init)
{
	u32 nr = scx_bpf_nr_cpu_ids();
	s32 err, i;

	err = scx_bpf_create_dsq(SHARED_DSQ, -1);
	if (err)
		return err;
	bpf_for(i, 0, nr) {
		err = scx_bpf_create_dsq(LULL_PLACED_DSQ + i, -1);
		if (err)
			return err;
	}
	return 0;
}

void BPF_STRUCT_OPS(lull_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(lull_ops,
	       .select_cpu = (void *)lull_select_cpu,
	       .enqueue = (void *)lull_enqueue,
	       .dispatch = (void *)lull_dispatch,
	       .running = (void *)lull_running,
	       .stopping = (void *)lull_stopping,
	       .enable = (void *)lull_enable,
	       .init_task = (void *)lull_init_task,
	       .init = (void *)lull_init,
	       .exit = (void *)lull_exit,
	       .timeout_ms = 5000,
	       .name = "lull");
