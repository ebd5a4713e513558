// SPDX-License-Identifier: GPL-2.0
/* The kernel side of calltrace: one program for entry sites, one for exit
 * sites (RET, tail JMP, morestack CALL, goexit).  Each hit identifies the
 * thread of execution (goroutine or thread), computes the frame key that
 * survives Go stack copies, and sends a 56-byte event (plus captured
 * arguments) to user space, which does all the interpreting.
 *
 * Only record-time limits and sampling (--max-depth, --min-duration, --root,
 * --sample*) are decided here, because what they cut must never cost
 * transport: they keep a small shadow stack per goroutine that follows the
 * same rules as user space's reconstruction (reconstruct.c). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "event.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct ct_config cfg = {};
struct ct_bin_config bins[CT_MAX_BINS] = {}; /* written by user space, any time */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* resized by user space before load */
} events SEC(".maps");

/* Events dropped because the ring buffer was full, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* Probe hits per CPU: on which CPUs the overhead correction must know what
 * a hit costs (record/calibrate.c; the same trap costs a quarter more on
 * one vCPU than on the other at times). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

/* Ring-buffer bytes each CPU sent since it last woke the reader
 * (wake_flags). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} unwoken SEC(".maps");

/* enum ct_counter */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CT_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* tgids of the traced processes: whose thread and process ends are
 * reported, and the pid filter when one link cannot carry it (--follow).
 * (1024 once: a program with more children at once lost the calls of the
 * rest without a word; those beyond are counted now, forks_unfollowed) */
#define CT_MAX_TRACED_PIDS 8192
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CT_MAX_TRACED_PIDS);
	__type(key, __u32);
	__type(value, __u8);
} traced_pids SEC(".maps");

/* tgids ct_exec held stopped, until user space continues them and takes
 * them out; what is left when calltrace dies, its guard process continues
 * (probes.c ct_probes_guard). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} held_pids SEC(".maps");

/* CHECK sites: their planned call sites, CT_PLANNED_KEY(site, return
 * address - probe address) -> the CALL site it reports: those that found
 * no slot in planned_slots (below), where the others are. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by user space before load */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct ct_planned_call);
} planned_calls SEC(".maps");

/* ... and, in front of it, the same entries without a helper call
 * (struct ct_planned_slot, event.h).  Mapped into user space, which writes
 * them there. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized by user space before load */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ct_planned_slot);
} planned_slots SEC(".maps");

/* Set by user space once an entry went to planned_calls itself. */
__u64 planned_overflow = 0;

/* Return addresses in other files than the probe's where a probe sees a
 * call end (struct ct_file_ret; the value is unused).  Filled by user space
 * before attaching. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by user space before load */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ct_file_ret);
	__type(value, __u8);
} file_rets SEC(".maps");

/* CHECK sites' callers in other files than theirs, found while recording
 * (a library calling back a program's exported function): struct
 * ct_file_ret (the CHECK's site, the return address's file and offset) ->
 * the CALL site it reports, as planned_calls' entries.  Looked up after a
 * miss there, once user space put one in (file_calls_open).  Also, keyed
 * by a tail jump's probe, where such a call's end is watched (as file_rets). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * CT_MAX_CALLERS); /* (calls, and tail jumps' checks of them) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ct_file_ret);
	__type(value, struct ct_planned_call);
} file_calls SEC(".maps");
__u64 file_calls_open = 0;

/* The return addresses CHECKs reported to user space (CT_PROC_CALLER), as
 * CT_PLANNED_KEY (the value is unused): each once, at most CT_MAX_CALLERS. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CT_MAX_CALLERS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, __u8);
} callers_seen SEC(".maps");

/* Argument fetch programs, each once: a function's RETs all read the same
 * results, so do most exit sites of its calls.  Mapped into user space,
 * which writes them there: a system call each took ~10 us, thousands of
 * them a good part of the start-up. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized by user space before load */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ct_fetch);
} fetch SEC(".maps");

/* Which of those a site runs, by site id (0: none).  Mapped too.  A
 * slot of ~800 bytes per site id held the programs before: on 14,577
 * sites of net/http and crypto (581 distinct programs) calltrace record's
 * resident memory was 84 MB, 74 MB this way. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized by user space before load */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64); /* (an array's elements are 8 bytes apart anyway) */
} fetch_index SEC(".maps");

/* ... and those of sites added later (binaries exec'd under --follow). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* resized by user space before load */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct ct_fetch);
} fetch_later SEC(".maps");

/* Where an event with arguments is assembled before it is copied to the
 * ring buffer (a run's, struct run): the fetch program runs into PAYLOAD,
 * its fixed layout, and the event carries what the ops got, compacted as
 * the file keeps it (send_op): on net/http 35 of 97 bytes a hit, and each
 * byte into the ring cost ~4 ns of the program's time here. */
struct scratch {
	__u32 len;      /* of SENT so far */
	__u32 slow;     /* ns the capture spent faulting pages in (fault_in_timed) */
	__u64 regs[24]; /* copy of struct pt_regs (21 slots), indexed by enum ct_reg */
	__u8 payload[2 * CT_MAX_PAYLOAD];
	struct ct_event e;
	__u8 sent[2 * CT_MAX_PAYLOAD]; /* right after e: one ring record */
};

/* ---- shadow stacks for limits and sampling ---- */

#define F_ACTIVE 0x01   /* inside a recorded (rooted, sampled) tree */
#define F_RECORD 0x02   /* active and within --max-depth: to be sent */
#define F_EMITTED 0x04  /* its entry was sent */
#define F_RESTART 0x08  /* a morestack CALL was seen: the entry runs again */
#define F_TAILPEND 0x10 /* left by a tail JMP: goes on in its target */
#define F_INTREE 0x20   /* matches --root, or under a frame that does */
#define F_TAILOUT 0x40  /* F_TAILPEND: the jump went to untraced code */
#define F_FALLS 0x80    /* its code runs on into the next function (a tail call) */

struct lframe {
	__u64 key;
	__u64 ts;
	__u64 tail_ts;
	__u32 site;
	__u32 func;
	__u32 tail_site;
	__u16 adepth; /* recorded ancestors: the depth replay will show */
	__u8 flags;
	/* its tail jump's event is held back with its entry (--min-duration):
	 * it goes out with the entry, even after its target nested (which
	 * clears F_TAILPEND) */
	__u8 tail_held;
};

struct gstate {
	__u32 depth;
	__u32 g_sampled;
	struct lframe f[CT_LIM_FRAMES];
};

struct gkey {
	__u32 tgid;
	__u32 sys;
	__u64 id; /* goid, or tid for threads */
};

/* The calls of each goroutine/thread entered from a call site without an
 * exit probe (a CHECK's unplanned caller, or one not planned yet), the
 * innermost CT_UNOBSERVED_DEPTH of those open at once: the frame key of
 * its return address slot and what the call put there.  No probe sees
 * such a call end; a later, deeper hit that finds something else in the
 * innermost one's slot (the caller's next call put its own return address
 * there) knows it has ended (CT_EV_UNOBSERVED_DONE), where the frame key
 * alone would take the hit for one inside it; the one outside it is the
 * innermost again (an interim RET sees it end: the outer of two calls
 * through call sites found while recording).  (CT_UNOBSERVED_DEPTH:
 * event.h) */
struct unobserved_call {
	__u64 key;
	__u64 ret;
	__u32 check; /* its function's CHECK site */
	/* The function's own return address slot, KEY + INNER_DROP, and what
	 * is there (INNER_RET): the same, unless a wrapper made the call last
	 * (struct ct_planned_call.via: KEY and RET are where that returns to).
	 * Its interim RETs see its end from there. */
	__u32 inner_drop;
	__u64 inner_ret;
};

struct unobserved_stack {
	__u32 n; /* calls in c[], the innermost last */
	__u32 pad;
	struct unobserved_call c[CT_UNOBSERVED_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct gkey);
	__type(value, struct unobserved_stack);
} unobserved_calls SEC(".maps");

/* Entries in unobserved_calls: hits look there only while there are some. */
__u64 unobserved_open = 0;

/* The interim RETs (their site ids) that saw a call end that some other
 * probe sees end too, and how many times since user space last looked:
 * their function's callers are being found, user space takes them out
 * once that has gone quiet and they are hit often enough to be worth it
 * (session.c settle_interim). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* (full: the others wait for user space's next look) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, __u32);
} interim_passed SEC(".maps");

/* The watched exit probes of indirect calls planned before recording
 * (CT_COOKIE_ICALL_EXIT: site id -> hits so far).  Every call made at such
 * a call instruction hits its exit probe, of an untraced implementation
 * too (sort.IsSorted's data.Less with a type no -F names), where such a
 * hit closes nothing; user space, told each time the count doubles
 * (CT_PROC_ICALL_EXIT), weighs that and may take the probe out (the
 * calls it closed end at their functions' RETs then).  Counted here, not
 * by user space: its reads of the ring wait for a quarter of it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CT_ICALL_EXITS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} icall_exit_hits SEC(".maps");

/* Each conditional tail jump's probe: its condition (CT_COOKIE_JCC). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* (user space sets it: the plan's sites) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, __u32);
} jcc_conds SEC(".maps");

/* Each interim RET's function's CHECK (struct ct_interim_check). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* (user space sets it: the plan's sites) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct ct_interim_check);
} interim_checks SEC(".maps");

/* The record-time limits' state of each goroutine/thread inside traced
 * calls.  An LRU map: with more stacks inside traced calls at once than it
 * holds (or nearly: its free lists are per CPU), one pushes another out,
 * whose held entries (--min-duration) and depth are gone; gstates_live
 * counts those it holds, and a stack that begins while it is nearly full is
 * counted (CT_CNT_LIMITS_FULL: record warns). */
#define CT_GSTATES_MAX 8192
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CT_GSTATES_MAX);
	__type(key, struct gkey);
	__type(value, struct gstate);
} gstates SEC(".maps");
__s64 gstates_live = 0;

/* A zeroed gstate to insert from (too big for the BPF stack); only read,
 * so a run preempted on its CPU leaves it as the next one needs it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gstate);
} gstate_zero SEC(".maps");

/* What one probe hit knows about itself. */
struct hit {
	__u64 cookie;
	__u64 pid_tgid;
	__u64 goid;
	__u64 key;
	__u64 now;
	__u32 loss_gen; /* read before anything is reserved */
	__u32 site; /* the event's site: the cookie's, or the CALL a CHECK reports */
	__u16 flags;
};

/* map "desched"'s key: a g of a process */
struct desched_key {
	__u64 g;
	__u32 tgid, pad;
};

/* One probe run's working memory: what the hit knows, the keys it looks
 * maps up with, and the scratch of its event with arguments.  The program
 * is sleepable: a run may sleep in a page fault (fault_in), or on a
 * preemptible kernel be preempted anywhere, and the next run on its CPU is
 * another thread's.  So this lives in the thread's task storage, not in a
 * per-CPU buffer (a sleeper held it, and the runs meanwhile sent their
 * hits without values) nor on the BPF stack: the kernel (6.14+) puts a
 * tracing program's stack frames of 64 bytes or more on a per-CPU private
 * stack, also a sleepable one's, and the next run on that CPU overwrote a
 * sleeper's struct hit (it woke to send another thread's call twice and
 * its own never).  Every frame of the program stays under 64 bytes (STATS
 * probe.stack_depth; tests/e2e/test_bpf_stack.py), so it is on the task's
 * own stack; a thread's runs never overlap (a uprobe fires from user mode),
 * so nothing of a run is shared with another and none needs to check. */
struct run {
	struct hit h; /* first: run_of() */
	/* on_hit's findings for later in the run (kept here, not in
	 * registers it would spill to its frame) */
	__s64 key_delta;      /* the event's frame key - the probe's (CHECK) */
	__u64 unobserved_ret; /* a call no exit probe sees starts here: its return address */
	__u64 new_caller;     /* a return address to report (CT_PLANNED_KEY) */
	__u64 new_ret;        /* ... and itself, as the process sees it */
	__u32 caller_depth;   /* a planned call's: its caller's entry key is */
	__u32 caller_check;   /* the event's less this (struct ct_planned_call) */
	/* The goroutine id of the g (of bin) the thread's last hit read it
	 * from, good while goid_gen is GOID_GEN: a g's id changes only when
	 * newproc1 takes it from the free list for a new goroutine, which a
	 * bump follows (goid_gen, below); g's are never freed, so a new one
	 * (cgo's extra Ms') is at an address no thread has an id of.  With it,
	 * the g's stack.hi (0: not kept), also good while goid_gen is GOID_GEN:
	 * a goroutine's stack bounds change only when the runtime moves its
	 * stack (copystack) or newproc1 gives a reused g a new one, which
	 * bumps follow too; kept for goroutines only (an id not 0): g0's and
	 * gsignal's bounds change elsewhere (cgo callbacks, signal stacks) */
	__u64 goid_g, goid, goid_gen, goid_stack_hi;
	__u32 goid_bin;
	struct gkey k;
	struct unobserved_stack us; /* a goroutine/thread's first (track_unobserved) */
	struct ct_planned_call pc; /* planned_call's finding */
	__u64 check_sp, check_ret, check_k; /* check_planned's */
	__u64 check_ret0;   /* ... and the return address it looked up first */
	__u32 check_drop;   /* ... check_sp - SP at the function's entry */
	__u32 interim_drop; /* interim_ends: its event's frame, this far above SP */
	__u64 hit_sp, hit_bp; /* track_unobserved's, for unobserved_over */
	__u64 wait_begin;     /* a wait for the mmap_lock began (ct_wait_begin) */
	__u64 off_since;      /* the thread went off CPU then (ct_switch), 0: it runs */
	__u64 off_goid;       /* ... running this goroutine (0: its own calls) */
	__u32 off_flags;      /* ... CT_OFFCPU_* */
	/* go_scheduler's map key and value (here, not in its frame) */
	struct desched_key desched_key;
	__u64 desched_at;
	__u32 silent;         /* hits since the thread's last event that sent none (ct_event.silent) */
	__u8 sent;            /* this run sent an event */
	__u64 silent_g;       /* ... on this g (hit_g) */
	__u64 hit_g;          /* the g of this run's hit (0 before on_hit finds it) */
	__u64 probe_cookie;   /* the hit's attach cookie (a CHECK's event changes h.cookie) */
	__u64 start;          /* the clock when the program began (ct_event.extra_ns) */
	__s32 extra;          /* ... this hit's extra_ns, for its own event (take_extra) */
	__u32 tick;           /* the thread's hits: which are timed (on_hit) */
	__u32 read_ns;        /* what a clock read took, last measured (hit_end) */
	__u8 timed;           /* this hit reads the clock at its start and end */
	__u32 slow_pre;       /* ns its report of a new caller took (timed anyway) */
	__u32 icall_report;   /* a watched exit's site to report (its hits doubled), + 1 */
	__u64 icall_hits;     /* ... and its hits */
	/* What the thread's timed hits of each class took beyond the
	 * calibration's before their clock read (PRE) and after it (POST):
	 * moving averages, which the untimed hits carry instead */
	__s32 est_pre[CT_HIT_CLASS_SLOTS], est_post[CT_HIT_CLASS_SLOTS];
	__u8 sent_now;        /* this run sent an event stamped at its clock read */
	__s32 carry;          /* what the ends of hits since the thread's last event took
				 beyond the calibration's (their class's bpf_post_ns) */
	__u64 carry_g;        /* ... on this g (hit_g) */
	__u32 post_raw;       /* the last hit's end, as measured (ct_event.pad) */
	__u32 hit_cls;        /* the hit's class (hit_class) */
	struct scratch s;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct run);
} runs SEC(".maps");

/* Goroutine ids given out and goroutine stacks moved since the probes are
 * in, as far as a thread's cached id and stack.hi (struct run) must know:
 * bumped by the hits that come after the runtime gave a g its id and
 * before anything can run it, and by those in copystack, before the
 * goroutine whose stack it moves runs again (the probes bins[].goid_site
 * names), and by user space once probes are attached (probes.c).  A thread
 * reads it before the g's fields, so what it caches from a g that dies and
 * is given a new id, or whose stack moves, is stale by then. */
__u64 goid_gen = 0;

/* What a hit of each class (enum ct_hit_class) costs in CT_SILENT_UNITs
 * (an emulated hit's start-up price is CT_SILENT_UNIT), set by user space
 * from its calibration (0: none, nothing is priced).  Ratios, not
 * nanoseconds: replay prices the units with the trace's own measurement,
 * taken at the end too, as it prices the events. */
__u32 silent_weight[CT_HIT_CLASS_SLOTS] = {};

/* What the BPF program takes from its start to its clock read in a hit of
 * each class in the calibration, in ns, set by user space from it (0
 * before: the calibration's own hits see their whole time): a hit's
 * ct_event.extra_ns has its own less this (and the ends of the hits
 * before it, hit_end). */
__u32 bpf_pre_ns[CT_HIT_CLASS_SLOTS] = {};
/* ... and from its clock read to its end, with no values captured; what
 * capturing the calibration's values added to that (bpf_args_ns). */
__u32 bpf_post_ns[CT_HIT_CLASS_SLOTS] = {};
__u32 bpf_args_ns = 0;
/* Set with those: until then every hit is timed (the calibration's, which
 * learn them), from then on a thread's first CT_TIMED_FIRST hits and one in
 * CT_TIMED_EVERY after (the two clock reads cost ~70 ns a hit here, ~7%
 * of a traced Go fib's time); the others carry their class's moving
 * average of the thread's timed ones (est_pre, est_post). */
__u32 bpf_times_set = 0;
/* calltrace's own process, set with those: the calibration's hits, which
 * are never timed then (their prices are of hits without the clock reads;
 * a timed hit adds what its reads took to its extra_ns) */
__u32 self_tgid = 0;

/* The run H is the hit of (on_hit: every struct hit is a run's). */
static __always_inline struct run *run_of(const struct hit *h)
{
	return (struct run *)h;
}

/* The key of the hit's goroutine/thread stack (gstates, unobserved_calls),
 * in R->k. */
static __always_inline struct gkey *stack_key(struct run *r)
{
	const struct hit *h = &r->h;
	r->k.tgid = h->pid_tgid >> 32;
	r->k.sys = ((h->flags & CT_EV_SYSSTACK) != 0) | ((h->flags & CT_EV_ALTSTACK) ? 2 : 0);
	r->k.id = h->goid && !(h->flags & CT_EV_SYSSTACK) ? h->goid : (__u32)h->pid_tgid;
	return &r->k;
}

/* A word of the thread's own runtime state or stack (g's fields, a
 * return address slot), which is mapped: bpf_copy_from_user (the program
 * is sleepable) took ~10-15 ns less a read than bpf_probe_read_user here
 * (Go fib: 2-3 reads a hit, 355 -> 330 ns of BPF a hit).  An address that
 * is not mapped reads as 0 all the same. */
static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;
	bpf_copy_from_user(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);
	if (c)
		__sync_fetch_and_add(c, n);
}

/* Events dropped so far, all CPUs: each event carries the count as its hit
 * began (ct_event.loss_gen). */
__u64 loss_gen = 0;

static __always_inline void count_lost(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&lost, &zero);
	if (n) /* atomic: the sleepable program can be preempted by another hit on this CPU */
		__sync_fetch_and_add(n, 1);
	__sync_fetch_and_add(&loss_gen, 1);
}

static __always_inline __u32 read_loss_gen(void)
{
	return (__u32)*(volatile __u64 *)&loss_gen;
}

/* Wake the reader only when a good share of the buffer is pending: a
 * wakeup per event costs more than the probe hit itself.  Each CPU wakes it
 * after its share of that (cfg.wake_bytes) since its last wakeup: so no
 * more than that is pending unwoken, without asking the ring
 * (bpf_ringbuf_query, a helper call: ~50 ns a hit).  BYTES: the record's. */
static __always_inline __u64 wake_flags(__u32 bytes)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&unwoken, &zero);
	if (!n)
		return BPF_RB_FORCE_WAKEUP;
	*n += bytes + 8; /* and the ring's record header */
	if (*n < cfg.wake_bytes)
		return BPF_RB_NO_WAKEUP;
	*n = 0;
	return BPF_RB_FORCE_WAKEUP;
}

/* --max-events: true if one more event may go out. */
static __always_inline int budget_ok(void)
{
	if (!(cfg.limits & CT_LIM_MAXEV))
		return 1;
	__u32 k = CT_CNT_EMITTED;
	__u64 *c = bpf_map_lookup_elem(&counters, &k);
	if (!c)
		return 1;
	if (*c >= cfg.max_events) {
		count(CT_CNT_CUT, 1);
		return 0;
	}
	__sync_fetch_and_add(c, 1);
	return 1;
}

#define PMASK (CT_MAX_PAYLOAD - 1)

/* The word of the payload at OFF (8-aligned, as the fetch program lays it
 * out): one load or store, where clang, which does not see the alignment,
 * moves 8 bytes one by one (8 registers: the frames grew past what struct
 * run allows). */
static __always_inline __u64 *payload_word(struct scratch *s, __u32 off)
{
	return __builtin_assume_aligned(&s->payload[off & PMASK & ~7U], 8);
}

/* Stores word V at P, any byte: x86 and the verifier take an unaligned
 * store (clang would store bytes, for the same reason). */
static __always_inline void put_u64(void *p, __u64 v)
{
	asm volatile("*(u64 *)(%0 + 0) = %1" ::"r"(p), "r"(v) : "memory");
}

/* Zeroes the words of payload bytes [at, at + size), 8-byte aligned, by
 * stores: a helper call (bpf_probe_read_kernel from NULL) cost ~100 ns a
 * time here, and a nil pointer's field (Go's nil error: a nil interface's
 * data) is the common case. */
static __always_inline void zero_words(struct scratch *s, __u32 at, __u32 size)
{
	for (__u32 k = 0; k < size && k < CT_MAX_PAYLOAD; k += 8)
		*payload_word(s, at + k) = 0;
}

/* A page the program has not touched yet (a string literal in .rodata on
 * its first use) is not mapped, and the fast read cannot fault it in: the
 * programs are sleepable so that they can.  Touch the pages of [addr, addr +
 * size) as the program itself is about to; 0 if none could be.  A global
 * function: the verifier checks it once, not at every fetch op. */
__noinline int fault_in(__u64 addr, __u32 size)
{
	char c;
	int ok = 0;
	for (int i = 0; i < 2; i++) { /* size < 4 KiB: at most two pages */
		__u64 at = i ? (addr & ~4095ULL) + 4096 : addr;
		if (i && at >= addr + size)
			break;
		ok |= bpf_copy_from_user(&c, 1, (void *)at) == 0;
	}
	return ok;
}

/* A clock read's time since T0, if the thread did not wait for a CPU in
 * between (CT_EXTRA_MAX_NS), else 0 */
static __always_inline __u32 ns_since(__u64 t0)
{
	__u64 d = bpf_ktime_get_ns() - t0;
	return d < CT_EXTRA_MAX_NS ? (__u32)d : 0;
}

/* fault_in, timed whether the hit is or not (a page fault: microseconds,
 * which a moving average of hits would not price) */
static __always_inline int fault_in_timed(struct scratch *s, __u64 addr, __u32 size)
{
	__u64 t0 = bpf_ktime_get_ns();
	int ok = fault_in(addr, size);
	s->slow += ns_since(t0);
	return ok;
}

/* Reads SIZE bytes (1..SMALL_READ) at ADDR to payload offset AT (8-aligned)
 * through the BPF stack: a read into the run's memory, a map value, pays
 * the hardened-usercopy check of a heap object (~70 ns a read here), one
 * into the stack a cheaper one.  Returns what bpf_probe_read_user does (on
 * an error the bytes read as 0, as there).  The bytes of the last word
 * past SIZE are 0.  A global function: its buffer is not in fetch_op's
 * frame (see struct run). */
#define SMALL_READ 48
__noinline int read_small(struct scratch *s, __u32 at, __u32 size, __u64 addr)
{
	__u64 buf[SMALL_READ / 8] = {};
	if (!s || !size || size > SMALL_READ)
		return -1;
	long n = bpf_probe_read_user(buf, size, (void *)addr);
	for (__u32 k = 0; k < SMALL_READ / 8 && k * 8 < size; k++)
		*payload_word(s, at + k * 8) = buf[k];
	return n;
}

/* Copies memory for one fetch op: header at dst, bytes at dst + 8.  What
 * the fast read could not get is faulted in and read again.  Bytes that
 * overlap [glo, ghi) (struct ct_fetch's guard) read as failed: a string
 * whose bytes do, and others from address 0.  WORDS: the op's SIZE-byte slot
 * may hold words later ops follow (an interface's data, a slice's items):
 * what was not read of it is zeroed, so none follows a pointer or length
 * an earlier hit left there -- a garbage address that cost a page fault,
 * and fault_in two more (net/http with arguments: 2.0 -> 1.5 us a hit). */
static __always_inline void fetch_mem(struct scratch *s, __u32 dst, __u32 size, __u64 addr, int str, __u64 glo,
				      __u64 ghi, __u32 words)
{
	dst &= PMASK & ~7U;
	size &= PMASK;
	if (!str && addr < ghi && addr + size > glo)
		addr = 0;
	__u16 *hdr = (__u16 *)&s->payload[dst];
	void *data = &s->payload[dst + CT_MEM_HDR];
	long n;
	if (words && size < words) /* all of it if the read fails (it zeroes what it tried); the
				      word the read ends in too, before the read fills its start */
		zero_words(s, (dst + CT_MEM_HDR + size) & ~7U, (words - (size & ~7U)) & PMASK);
	if (!size) {
		*hdr = 0;
		return;
	}
	/* A nil pointer's field (Go's optional fields, a result slot read
	 * before it is set): no read.  Measured on net/http with arguments:
	 * each such failed read took a page fault, and fault_in a second one,
	 * a third of the program's time (6.1 -> 4.0 us a hit). */
	if (addr < cfg.min_addr) {
		*hdr = CT_FETCH_FAILED;
		if (words) /* the short-read zeroing above left [0, size) */
			zero_words(s, dst + CT_MEM_HDR, size);
		return;
	}
	if (str) {
		n = bpf_probe_read_user_str(data, size, (void *)addr);
		if (n <= 0 && fault_in_timed(s, addr, size))
			n = bpf_probe_read_user_str(data, size, (void *)addr);
		*hdr = n > 0 && !(addr < ghi && addr + n > glo) ? (__u16)(n - 1) : CT_FETCH_FAILED; /* without the NUL */
		return;
	}
	n = size <= SMALL_READ ? read_small(s, dst + CT_MEM_HDR, size, addr)
			       : bpf_probe_read_user(data, size, (void *)addr);
	if (n && fault_in_timed(s, addr, size))
		n = bpf_probe_read_user(data, size, (void *)addr);
	*hdr = n == 0 ? (__u16)size : CT_FETCH_FAILED;
}

static __always_inline __u64 payload_u64(struct scratch *s, __u32 off)
{
	return *payload_word(s, off);
}

/* Appends what op I of F got to S->sent (at S->len), as the file keeps
 * it (format/payload.c ct_fetch_compact): a word, or a memory op's u16
 * count (or CT_FETCH_FAILED) and bytes, copied word by word (what follows
 * them is overwritten by the next op, or not sent; bpf_probe_read_kernel
 * cost ~100 ns a time here).  A global function: the verifier checks its
 * loop once, not in every op's. */
__noinline int send_op(struct scratch *s, const struct ct_fetch *f, __u32 i)
{
	if (!s || !f || i >= CT_MAX_OPS)
		return 0;
	const struct ct_fetch_op *op = &f->ops[i];
	__u32 dst = op->dst & PMASK & ~7U, pos = s->len & PMASK;
	if (op->code == CT_OP_REG || op->code == CT_OP_STACKWORD || op->code == CT_OP_REGDIFF ||
	    op->code == CT_OP_MEMWORD) {
		put_u64(&s->sent[pos], *payload_word(s, dst));
		s->len = pos + 8;
		return 0;
	}
	__u16 n = *(__u16 *)&s->payload[dst];
	*(__u16 *)&s->sent[pos] = n;
	if (n == CT_FETCH_FAILED)
		n = 0;
	__u32 from = dst + CT_MEM_HDR, to = pos + 2;
	for (__u32 k = 0; k < n && k < CT_MAX_PAYLOAD; k += 8)
		put_u64(&s->sent[(to + k) & PMASK], *payload_word(s, from + k));
	s->len = pos + 2 + n;
	return 0;
}

/* Runs op I of F into S.  0, or -1: the hit's values are dropped.  A
 * global function: its frame is not the loop's (the registers the loop
 * keeps across it are few: no spills, see struct run). */
__noinline int fetch_op(struct scratch *s, const struct ct_fetch *f, __u32 i)
{
	if (!s || !f || i >= CT_MAX_OPS)
		return -1;
	__u64 sp = s->regs[CT_REG_SP];
	const struct ct_fetch_op *op = &f->ops[i];
	__u32 dst = op->dst & PMASK;
	__u64 *word = payload_word(s, dst);
	int guard = i >= f->guard_from && i < f->guard_to;
	__u64 glo = sp + f->guard_lo, ghi = guard ? sp + f->guard_hi : 0;
	/* memory ops: what to copy, at one fetch_mem (one copy of it
	 * inlined keeps the frame small: struct run) */
	__u64 at, n = op->size;
	int str = 0;
	switch (op->code) { /* (CT_OP_REG: send_fetch's loop, without a call) */
	case CT_OP_STACK:
		at = sp + op->off;
		ghi = 0; /* no guard */
		break;
	case CT_OP_REGMEM:
		at = s->regs[op->reg & CT_REG_MASK] + op->off;
		break;
	case CT_OP_DEREF:
		at = payload_u64(s, op->src) + op->off;
		break;
	case CT_OP_DEREF_LEN:
		n = payload_u64(s, op->src2) * op->scale;
		if (n > op->size)
			n = op->size;
		at = payload_u64(s, op->src) + op->off;
		break;
	case CT_OP_DEREF_STR:
		at = payload_u64(s, op->src) + op->off;
		str = 1;
		break;
	case CT_OP_DEREF_SPAN:
		n = payload_u64(s, op->src2) - payload_u64(s, op->src);
		if (n > op->size)
			n = op->size; /* also an end before the begin */
		at = payload_u64(s, op->src) + op->off;
		break;
	/* (the word ops read through read_small, as memory ops do) */
	case CT_OP_STACKWORD:
		read_small(s, dst, 8, sp + op->off); /* 0 if unreadable */
		return 0;
	case CT_OP_REGDIFF:
		if (op->src) { /* a struct field: no value rather than a wrong one */
			if (read_small(s, dst, 8, s->regs[(op->src - 1) & CT_REG_MASK] + op->off))
				return -1;
		} else if (read_small(s, dst, 8, sp + op->off))
			*word = s->regs[op->reg & CT_REG_MASK]; /* unreadable: 0, as STACKWORD */
		*word = s->regs[op->reg & CT_REG_MASK] - *word;
		return 0;
	case CT_OP_MEMWORD: {
		at = s->regs[op->reg & CT_REG_MASK] + op->off;
		n = ((op->size - 1) & 7) + 1;
		/* no value rather than a wrong one: unreadable, or in stack
		 * written on the way (the struct lies there) */
		if (op->scale && at < sp + (__s16)op->src2 && at + n > sp + (__s16)op->src)
			return -1;
		if (read_small(s, dst, n, at)) /* zero-extended */
			return -1;
		return 0;
	}
	default:
		return 0;
	}
	/* a slot of one-byte items (a string's) holds no words */
	fetch_mem(s, dst, (__u32)n, at, str, glo, ghi,
		  str || (op->code == CT_OP_DEREF_LEN && op->scale == 1) ? 0 : op->size);
	return 0;
}

/* What the event about to be sent carries of the thread's silent hits
 * (silent_hit): theirs if it is on their g -- and if it is this hit's,
 * stamped now.  An entry sent at its call's return (--min-duration) has
 * its entry's time: the hits since were inside the call, so they go with
 * the return's event, sent after it. */
static __always_inline __u32 take_silent(struct run *r, __u64 ts)
{
	r->sent = 1;
	if (ts != r->h.now)
		return 0;
	__u32 v = r->silent_g == r->hit_g ? r->silent : 0;
	r->silent = 0;
	return v;
}

/* The hit's extra_ns, for an event stamped now (once: a second event of
 * the hit did not take its time again). */
static __always_inline __s32 take_extra(struct run *r, __u64 ts)
{
	if (ts != r->h.now)
		return 0;
	__s32 v = r->extra + (r->carry_g == r->hit_g ? r->carry : 0);
	r->extra = 0;
	r->carry = 0;
	r->sent_now = 1;
	return v;
}

/* Sends an event with the site's captured values.  Returns 1 if it could
 * not capture (no program): send a plain one.  A global function: the
 * verifier checks the fetch loop once, not at every place the limits send
 * an event from. */
__noinline int send_fetch(struct run *r)
{
	if (!r)
		return 1;
	const struct hit *h = &r->h;
	struct scratch *s = &r->s;
	__u32 site = CT_COOKIE_SITE(h->cookie);
	/* index 0: none there (a site added later has its own, by id) */
	const __u64 *index = bpf_map_lookup_elem(&fetch_index, &site);
	__u32 i = index ? (__u32)*index : 0;
	const struct ct_fetch *f = i ? bpf_map_lookup_elem(&fetch, &i) : NULL;
	if (!f)
		f = bpf_map_lookup_elem(&fetch_later, &site);
	if (!f)
		return 1;
	s->e.ts = h->now;
	s->e.goid = h->goid;
	s->e.key = h->key;
	s->e.pid = h->pid_tgid >> 32;
	s->e.tid = (__u32)h->pid_tgid;
	s->e.site = h->site;
	s->e.flags = h->flags;
	s->e.loss_gen = h->loss_gen;
	s->e.silent = take_silent(r, h->now);
	s->e.extra_ns = take_extra(r, h->now);
	s->e.pad = r->post_raw;
	/* Each op runs into S->payload, its fixed layout, and what it got
	 * goes to S->sent at once, compacted as the file keeps it (later ops
	 * read only the layout): one loop, no call for a register op */
	s->len = 0;
	for (__u32 i = 0; i < CT_MAX_OPS && i < f->nops; i++) {
		const struct ct_fetch_op *op = &f->ops[i];
		if (op->code == CT_OP_REG) { /* the most common op, without a call */
			__u64 w = s->regs[op->reg & CT_REG_MASK] + (__s64)op->off;
			__u32 pos = s->len & PMASK;
			*payload_word(s, op->dst) = w;
			put_u64(&s->sent[pos], w);
			s->len = pos + 8;
			continue;
		}
		if (fetch_op(s, f, i)) {
			s->len = 0;
			s->e.flags |= CT_EV_ARGS_DROPPED;
			break;
		}
		send_op(s, f, i);
	}
	__u32 len = s->len & PMASK; /* no more than f->size, < CT_MAX_PAYLOAD */
	s->e.len = len;
	if (bpf_ringbuf_output(&events, &s->e, sizeof(struct ct_event) + len, wake_flags(sizeof(struct ct_event) + len)))
		count_lost();
	return 0;
}

/* An event without values: assembled in the run's scratch and copied, one
 * helper call (a reserve and a submit are two). */
static __always_inline void send_plain(const struct hit *h, __u32 site, __u64 ts, __u64 key, __u16 flags)
{
	struct run *r = run_of(h);
	struct ct_event *e = &r->s.e;
	e->loss_gen = h->loss_gen;
	e->silent = take_silent(r, ts);
	e->extra_ns = take_extra(r, ts);
	e->pad = r->post_raw;
	e->ts = ts;
	e->goid = h->goid;
	e->key = key;
	e->pid = h->pid_tgid >> 32;
	e->tid = (__u32)h->pid_tgid;
	e->site = site;
	e->len = 0;
	e->flags = flags;
	if (bpf_ringbuf_output(&events, e, sizeof(*e), wake_flags(sizeof(*e))))
		count_lost();
}

/* The event of this hit itself (with its captured values, if any). */
static __always_inline void send_this(const struct hit *h)
{
	if (!budget_ok())
		return;
	__u16 flags = h->flags;
	if (CT_COOKIE_FETCH(h->cookie)) {
		if (send_fetch(run_of(h)) == 0)
			return;
		flags |= CT_EV_ARGS_DROPPED;
	}
	send_plain(h, h->site, h->now, h->key, flags);
}

/* ---- limits: the shadow stack, same rules as reconstruct.c ---- */

static __always_inline struct lframe *top(struct gstate *st)
{
	__u32 d = st->depth;
	if (d == 0 || d > CT_LIM_FRAMES)
		return NULL;
	return &st->f[(d - 1) & (CT_LIM_FRAMES - 1)];
}

/* Sends the held-back entries of recorded frames, outermost first, so that
 * the stream stays in call order (--min-duration).  A global function: the
 * verifier checks it once, not at every place that calls it. */
__noinline int send_delayed_entries(struct run *r, struct gstate *st)
{
	if (!r || !st)
		return 0;
	const struct hit *h = &r->h; /* (a run's: send_plain assembles in it) */
	for (int i = 0; i < CT_LIM_FRAMES; i++) {
		if (i >= st->depth)
			break;
		struct lframe *f = &st->f[i & (CT_LIM_FRAMES - 1)];
		if ((f->flags & (F_RECORD | F_EMITTED)) != F_RECORD)
			continue;
		if (!budget_ok())
			return 0;
		f->flags |= F_EMITTED;
		send_plain(h, f->site, f->ts, f->key, CT_EV_DELAYED);
		if (f->tail_held && f->tail_site != f->site) /* (else its entry's event says it) */
			send_plain(h, f->tail_site, f->tail_ts, f->key, CT_EV_DELAYED);
		f->tail_held = 0;
	}
	return 0;
}

/* A recorded frame ends: does it qualify, and was it sent? */
static __always_inline int frame_sent(const struct hit *h, struct gstate *st, struct lframe *f, __u64 end)
{
	if (!(f->flags & F_RECORD))
		return 0;
	if (f->flags & F_EMITTED)
		return 1;
	if (end - f->ts >= cfg.min_dur_ns) {
		send_delayed_entries(run_of(h), st);
		return (f->flags & F_EMITTED) != 0;
	}
	return 0;
}

/* Pops frames deeper than KEY (unwound).  Returns 1 if one of them had been
 * sent, so user space must learn of the unwinding. */
static __always_inline int unwind_deeper(struct gstate *st, __u64 key)
{
	int sent = 0;
	for (int i = 0; i < CT_LIM_FRAMES; i++) {
		struct lframe *f = top(st);
		if (!f || f->key <= key)
			break;
		sent |= (f->flags & F_EMITTED) != 0;
		st->depth--;
	}
	return sent;
}

/* An entry: its frame goes on the shadow stack.  A global function: its
 * stack frame is not limits_hit's (see struct run). */
__noinline int limits_entry(struct run *r, struct gstate *st)
{
	if (!r || !st)
		return 0;
	const struct hit *h = &r->h;
	__u32 func = CT_COOKIE_FUNC(h->cookie);
	int marker = unwind_deeper(st, h->key);
	struct lframe *t = top(st);
	if (t && t->key == h->key) {
		if (t->func == func && (t->flags & F_RESTART) && !(t->flags & F_TAILPEND)) {
			t->flags &= ~F_RESTART; /* morestack re-ran the entry */
			return 0;
		}
		if ((t->flags & F_TAILPEND) || (bins[CT_COOKIE_BIN(h->cookie)].is_go && t->func != func) ||
		    ((t->flags & F_FALLS) && t->func + 1 == func)) {
			t->flags &= ~(F_TAILPEND | F_TAILOUT); /* tail call: nests */
		} else {
			/* unwound (longjmp), with the tail callers it replaced */
			for (int i = 0; i < 8 && t && t->key == h->key; i++) {
				marker |= (t->flags & F_EMITTED) != 0;
				st->depth--;
				t = top(st);
			}
		}
	}
	/* which tree is this call in? */
	__u8 flags = 0;
	__u16 adepth = 0;
	if (t) {
		adepth = t->adepth + ((t->flags & F_ACTIVE) != 0);
		flags = t->flags & F_INTREE;
	}
	if (!(cfg.limits & CT_LIM_ROOT) || CT_COOKIE_ROOT(h->cookie))
		flags |= F_INTREE;
	int tree_root = (flags & F_INTREE) && !(t && (t->flags & F_INTREE));
	int active;
	if (tree_root) {
		active = st->g_sampled;
		if (active && (cfg.limits & CT_LIM_SAMPLE)) {
			__u32 k = CT_CNT_SAMPLE;
			__u64 *c = bpf_map_lookup_elem(&counters, &k);
			active = c && (__sync_fetch_and_add(c, 1) % cfg.sample_n) == 0;
		}
	} else {
		active = (flags & F_INTREE) && t && (t->flags & F_ACTIVE);
	}
	if (active)
		flags |= F_ACTIVE;
	if (active && (!(cfg.limits & CT_LIM_DEPTH) || adepth < cfg.max_depth))
		flags |= F_RECORD;
	if (st->depth >= CT_LIM_FRAMES) {
		count(CT_CNT_OVERFLOW, 1);
		count(CT_CNT_CUT, 1);
		return 0;
	}
	struct lframe *n = &st->f[st->depth & (CT_LIM_FRAMES - 1)];
	n->key = h->key;
	n->ts = h->now;
	n->site = CT_COOKIE_SITE(h->cookie);
	n->func = func;
	n->adepth = adepth;
	n->flags = flags | (CT_COOKIE_FALLS(h->cookie) ? F_FALLS : 0);
	n->tail_held = 0;
	st->depth++;
	if ((flags & F_RECORD) && !(cfg.limits & CT_LIM_MINDUR)) {
		n->flags |= F_EMITTED;
		send_this(h);
	} else {
		count(CT_CNT_CUT, 1);
		if (marker)
			send_plain(h, CT_COOKIE_SITE(h->cookie), h->now, h->key, CT_EV_MARKER);
	}
	return 0;
}

/* RET (KEY: the event's), or a return site (KEY: its callee's): the frame
 * at KEY ends, with the tail callers it replaced. */
static __always_inline void limits_return(const struct hit *h, struct gstate *st, __u64 key)
{
	int marker = unwind_deeper(st, key);
	int sent = 0;
	/* the returning frame and the tail callers it replaced (short chains) */
	for (int i = 0; i < 8; i++) {
		struct lframe *f = top(st);
		if (!f || f->key != key)
			break;
		sent |= frame_sent(h, st, f, h->now);
		st->depth--;
	}
	if (sent)
		send_this(h);
	else {
		count(CT_CNT_CUT, 1);
		if (marker)
			send_plain(h, CT_COOKIE_SITE(h->cookie), h->now, h->key, CT_EV_MARKER);
	}
}

/* A frame left by a tail jump goes on in its target (reconstruct.c
 * settle_tail): a traced one entering at its key, or untraced code that
 * returns to its return site and whose calls are deeper.  Otherwise it
 * ended at the jump. */
static __always_inline void settle_tail(const struct hit *h, struct gstate *st)
{
	struct lframe *t = top(st);
	__u32 kind = CT_COOKIE_KIND(h->cookie);
	if (!t || !(t->flags & F_TAILPEND) || h->key > t->key)
		return;
	if ((kind == CT_SITE_ENTRY && t->key == h->key && !(t->flags & F_TAILOUT)) ||
	    (kind == CT_SITE_RETSITE && t->key == h->key + 8))
		return; /* the target entering (limits_entry nests it), or returning */
	if (!frame_sent(h, st, t, t->tail_ts))
		count(CT_CNT_CUT, 1);
	/* if it was sent, user space settles it at the tail time by itself */
	st->depth--;
}

/* A global function: its stack frame is not on_hit's (see struct run). */
__noinline int limits_hit(struct run *r)
{
	if (!r)
		return 0;
	const struct hit *h = &r->h;
	struct gkey *k = stack_key(r);
	struct gstate *st = bpf_map_lookup_elem(&gstates, k);
	__u32 kind = CT_COOKIE_KIND(h->cookie);
	if (!st) {
		if (kind != CT_SITE_ENTRY) {
			/* Nothing of it is open here: a call from before the
			 * probes (-p), or one whose stack's state the map
			 * evicted (more than it holds inside traced calls at
			 * once: its calls were sent, their ends must be too).
			 * Sent as without limits (replay places it, or not). */
			send_this(h);
			return 0;
		}
		__u32 zero = 0;
		struct gstate *z = bpf_map_lookup_elem(&gstate_zero, &zero);
		if (!z)
			return 0;
		/* 1 in N goroutines (threads), by a hash of their id
		 * (murmur3's finalizer; docs/FORMAT.md gives the formula) */
		__u64 x = k->id;
		x ^= x >> 33;
		x *= 0xff51afd7ed558ccdULL;
		x ^= x >> 33;
		if (bpf_map_update_elem(&gstates, k, z, BPF_NOEXIST) == 0 &&
		    __sync_fetch_and_add(&gstates_live, 1) >= CT_GSTATES_MAX - CT_GSTATES_MAX / 8)
			count(CT_CNT_LIMITS_FULL, 1);
		st = bpf_map_lookup_elem(&gstates, k);
		if (!st)
			return 0;
		st->g_sampled = !(cfg.limits & CT_LIM_SAMPLE_G) || x % cfg.sample_g_n == 0;
	}
	settle_tail(h, st);
	struct lframe *t;
	switch (kind) {
	case CT_SITE_ENTRY:
		limits_entry(r, st);
		t = top(st);
		if (CT_COOKIE_ENTRYTAIL(h->cookie) && t && t->key == h->key && t->func == CT_COOKIE_FUNC(h->cookie)) {
			/* its first instruction jumps on (as a TAIL below;
			 * the entry's event has that role too) */
			t->flags |= F_TAILPEND | (CT_COOKIE_ENTRYTAIL_TRACED(h->cookie) || (h->flags & CT_EV_WATCHED)
							  ? 0
							  : F_TAILOUT);
			t->tail_ts = h->now;
			t->tail_site = CT_COOKIE_SITE(h->cookie);
			t->tail_held = !(t->flags & F_EMITTED);
		}
		break;
	case CT_SITE_RET:
		limits_return(h, st, h->key);
		break;
	case CT_SITE_RETSITE:
		/* with limits, only at return addresses: the callee's key is 8 up */
		limits_return(h, st, h->key + 8);
		break;
	case CT_SITE_TAIL:
		if (h->flags & CT_EV_NOT_TAKEN) { /* (its other roles: see below) */
			count(CT_CNT_CUT, 1);
			break;
		}
		unwind_deeper(st, h->key);
		t = top(st);
		if (t && t->key == h->key && t->func == CT_COOKIE_FUNC(h->cookie)) {
			/* (untraced code that returns where a probe watches
			 * may jump on to a traced function: it nests) */
			t->flags |= F_TAILPEND |
				    (CT_COOKIE_TAILTRACED(h->cookie) || (h->flags & CT_EV_WATCHED) ? 0 : F_TAILOUT);
			t->tail_ts = h->now;
			t->tail_site = CT_COOKIE_SITE(h->cookie);
			t->tail_held = !(t->flags & F_EMITTED);
			if (t->flags & F_EMITTED) {
				send_this(h);
				break;
			}
		}
		count(CT_CNT_CUT, 1);
		break;
	case CT_SITE_RESTART:
		t = top(st);
		if (t && t->key == h->key && t->func == CT_COOKIE_FUNC(h->cookie))
			t->flags |= F_RESTART;
		count(CT_CNT_CUT, 1); /* the dropped duplicate needs no event */
		break;
	case CT_SITE_GOEXIT: {
		int sent = 0;
		for (int i = 0; i < CT_LIM_FRAMES; i++) {
			t = top(st);
			if (!t)
				break;
			sent |= (t->flags & F_EMITTED) != 0;
			st->depth--;
		}
		if (sent)
			send_this(h);
		if (bpf_map_delete_elem(&gstates, k) == 0)
			__sync_fetch_and_add(&gstates_live, -1);
		return 0;
	}
	}
	/* The other roles of the probe: a function whose entry is its RET
	 * (`f: ret`) has returned, and a call whose end no probe will see
	 * (reconstruct.c on_tail) is over for this stack: what comes next is
	 * not inside it.  The event went out if its frame was sent. */
	if ((h->flags & CT_EV_UNWATCHED) || (kind == CT_SITE_ENTRY && CT_COOKIE_ENTRYRET(h->cookie)))
		for (int i = 0; i < 8; i++) {
			t = top(st);
			if (!t || t->key != h->key)
				break;
			st->depth--;
		}
	if (st->depth == 0 && bpf_map_delete_elem(&gstates, k) == 0)
		__sync_fetch_and_add(&gstates_live, -1);
	return 0;
}

static __always_inline struct ct_event *reserve_proc(__u32 kind, __u32 pid, __u32 tid);
static __always_inline void fill_proc(struct ct_event *e, __u32 gen, __u32 kind, __u32 pid, __u32 tid);

/* bpf_find_vma's callback: the file and file offset of the address in
 * K->off (no file: ino stays 0). */
static long file_of(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	struct ct_file_ret *k = ctx;
	struct file *f = vma->vm_file;
	if (!f)
		return 0;
	k->off = k->off - vma->vm_start + (vma->vm_pgoff << 12);
	k->ino = f->f_inode->i_ino;
	k->dev = f->f_inode->i_sb->s_dev;
	return 0;
}

/* Does a probe planned in another file see the end of the call that the
 * tail jump at probe SITE hands to untraced code, returning to RET? */
static __noinline int watched_in_file(__u32 site, __u64 ret)
{
	struct ct_file_ret k = {.site = site, .off = ret};
	if (bpf_find_vma(bpf_get_current_task_btf(), ret, file_of, &k, 0) || !k.ino)
		return 0;
	/* (planned before recording, or found while recording: a call
	 * site in another file, watched by the probe after it) */
	return bpf_map_lookup_elem(&file_rets, &k) != NULL ||
	       (file_calls_open && bpf_map_lookup_elem(&file_calls, &k) != NULL);
}

/* Is the call from RET to CHECK site SITE's function one planned in
 * another file (file_calls)?  Its entry in R->pc if so. */
static __noinline int planned_in_file(struct run *r, __u32 site, __u64 ret)
{
	if (!r)
		return 0;
	struct ct_file_ret k = {.site = site, .off = ret};
	if (bpf_find_vma(bpf_get_current_task_btf(), ret, file_of, &k, 0) || !k.ino)
		return 0;
	const struct ct_planned_call *pc = bpf_map_lookup_elem(&file_calls, &k);
	if (!pc)
		return 0;
	r->pc = *pc;
	return 1;
}

/* RET's file as file_of sees it, into OUT (ino 0: none). */
static __noinline void caller_file(__u64 ret, struct ct_caller_file *out)
{
	struct ct_file_ret k = {.off = ret};
	if (!out)
		return;
	out->pad = 0;
	if (bpf_find_vma(bpf_get_current_task_btf(), ret, file_of, &k, 0) || !k.ino) {
		out->dev = 0;
		out->ino = 0;
		return;
	}
	out->dev = k.dev;
	out->ino = k.ino;
}

/* A CHECK's first call from return address KEY (RET: that address), or a
 * tail jump's to untraced code that returns there unwatched: tell user
 * space (before the call's own event), which adds an exit probe there for
 * the calls after it.  The program is not held meanwhile: a stop would be
 * seen by its parent or tracer, and a SIGCONT by its own handlers (README). */
static __always_inline void report_caller(const struct hit *h, __u64 key, __u64 ret)
{
	__u32 gen = read_loss_gen();
	struct ct_event *e = bpf_ringbuf_reserve(&events, sizeof(*e) + sizeof(struct ct_caller_file), 0);
	if (!e) {
		count_lost();
		/* dropped (the ring buffer is full): report it again next time,
		 * or that site would stay without its exit probe for good */
		bpf_map_delete_elem(&callers_seen, &key);
		return;
	}
	fill_proc(e, gen, CT_PROC_CALLER, h->pid_tgid >> 32, (__u32)h->pid_tgid);
	e->goid = key;
	e->key = ret;
	e->len = sizeof(struct ct_caller_file);
	caller_file(ret, (struct ct_caller_file *)(e + 1));
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/* A watched exit probe of an indirect call (CT_COOKIE_ICALL_EXIT) hit:
 * counted, and reported each time its hits double from
 * CT_ICALL_FIRST_REPORT (R->icall_report).  A global function: on_hit's
 * frame stays small (see struct run). */
__noinline int icall_exit_hit(struct run *r)
{
	if (!r)
		return 0;
	__u32 site = CT_COOKIE_SITE(r->h.cookie);
	__u64 *n = bpf_map_lookup_elem(&icall_exit_hits, &site);
	if (!n)
		return 0;
	__u64 v = __sync_fetch_and_add(n, 1) + 1;
	if (v >= CT_ICALL_FIRST_REPORT && !(v & (v - 1))) {
		r->icall_report = site + 1;
		r->icall_hits = v;
	}
	return 0;
}

/* ... the report, timed as a new caller's is (the ring full: dropped, not
 * counted as lost -- it is no event of the trace; the next doubling
 * reports again).  A global function, as above. */
__noinline int report_icall_exit(struct run *r)
{
	if (!r)
		return 0;
	__u64 t0 = bpf_ktime_get_ns();
	struct ct_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (e) {
		fill_proc(e, read_loss_gen(), CT_PROC_ICALL_EXIT, r->h.pid_tgid >> 32, (__u32)r->h.pid_tgid);
		e->goid = r->icall_hits;
		e->key = r->icall_report - 1;
		bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	}
	r->slow_pre += ns_since(t0);
	return 0;
}

/* Is K a planned call?  Its entry in R->pc if so.  A global function: the
 * stack its loop needs is not on_hit's (see struct run). */
__noinline int planned_call(struct run *r, __u64 k)
{
	if (!r)
		return 0;
	__u32 mask = (1u << cfg.planned_bits) - 1, at = ct_planned_slot_of(k, cfg.planned_bits);
	for (__u32 n = 0; n < CT_PLANNED_PROBES; n++) {
		__u32 i = (at + n) & mask;
		const struct ct_planned_slot *s = bpf_map_lookup_elem(&planned_slots, &i);
		if (!s)
			break;
		__u64 sk = *(volatile const __u64 *)&s->key;
		if (sk == k + 1) {
			asm volatile("" ::: "memory"); /* the value after its key (user space wrote it first) */
			r->pc = s->val;
			return 1;
		}
		if (!sk)
			break;
	}
	const struct ct_planned_call *pc = planned_overflow ? bpf_map_lookup_elem(&planned_calls, &k) : NULL;
	if (!pc)
		return 0;
	r->pc = *pc;
	return 1;
}

/* A CHECK's call from the return address at SP: planned (1), and from
 * where the wrapper that made it last returns to (2: struct
 * ct_planned_call.via, looked up again from there); R->check_sp, check_ret
 * and check_k say where it was looked up last, R->pc what was found.  A
 * global function: on_hit's frame stays small (see struct run). */
__noinline int check_planned(struct run *r, __u64 sp, __u64 site, __u64 ip)
{
	if (!r)
		return 0;
	int planned = 0, via = 0;
	__u64 sp0 = sp;
	for (int n = 0; n <= CT_VIA_LEVELS; n++) {
		if (n) {
			if (!planned || !r->pc.via)
				break;
			via = 2;
			sp += r->pc.via;
		}
		r->check_sp = sp;
		r->check_drop = (__u32)(sp - sp0);
		r->check_ret = read_u64(sp);
		if (!n)
			r->check_ret0 = r->check_ret;
		r->check_k = CT_PLANNED_KEY(site, r->check_ret - ip);
		planned = planned_call(r, r->check_k);
		/* (the caller in another file: where it is loaded is not
		 * the probe's business, its file and offset are; no via) */
		if (!planned && !n && file_calls_open)
			planned = planned_in_file(r, (__u32)site, r->check_ret);
	}
	return planned | via;
}

/* Go keeps a frame pointer chain in every function that calls (BP: the
 * saved BP, the return address above it): is the call watched at key
 * WKEY still on it, seen from the hit of R at SP whose BP is BP?  A live
 * call's record is at its key; a record above that key without one means
 * it returned, though its slot may still hold its return address (stack
 * nothing wrote since: a reflect call, under reflect's and text/template's
 * frames).  0: returned; 1: on it, or not known within CT_FP_WALK records. */
#define CT_FP_WALK 16
__noinline int go_call_on_stack(struct run *r, __u64 bp, __u64 sp, __u64 wkey)
{
	if (!r)
		return 1;
	__u64 hi = r->h.key + sp; /* the stack's base (the key not moved yet) */
	for (int n = 0; n < CT_FP_WALK; n++) {
		if (bp < sp || bp + 8 >= hi)
			return 1;
		__u64 k = hi - (bp + 8);
		if (k <= wkey)
			return k == wkey;
		__u64 up = read_u64(bp);
		if (up <= bp)
			return 1;
		bp = up;
	}
	return 1;
}

/* Has the call watched in W ended, seen from H (its key still the probe's
 * own, SP + KEY = the stack's base)?  1: H is not deeper (the frame key
 * says so); 2: H is deeper, but finds the call's slot changed (it has
 * ended), or enters a function from an untraced or unknown caller on a
 * goroutine's stack whose frame pointer chain skips that call's frame;
 * 0: H is inside it. */
__noinline int unobserved_over(struct run *r, const struct unobserved_call *w)
{
	if (!r || !w)
		return 0;
	struct hit *h = &r->h;
	__u64 sp = r->hit_sp, bp = r->hit_bp;
	__u32 kind = CT_COOKIE_KIND(h->cookie);
	/* (an exit site at its key is in its own epilogue, its frame already
	 * given back -- Go 1.21+ `add $n, %rsp; pop %rbp`, then a nop before
	 * its ret: a call's exit inside it, which goes on to return) */
	if (h->key < w->key || (h->key == w->key && kind != CT_SITE_RETSITE))
		return 1;
	/* its slot holds another return address; or the caller of this
	 * planned call, another function, was entered at its level or above
	 * (from the same call instruction, the slot holds the same return
	 * address) */
	if (read_u64(h->key + sp - w->key) != w->ret ||
	    (r->caller_depth && h->key - r->caller_depth <= w->key && r->caller_check != w->check + 1) ||
	    ((((kind == CT_SITE_CHECK || kind == CT_SITE_ENTRY) && !(r->caller_depth && r->caller_check)) ||
	      (kind != CT_SITE_ENTRY && CT_COOKIE_CALLWALK(h->cookie))) &&
	     h->goid && !(h->flags & CT_EV_SYSSTACK) && !go_call_on_stack(r, bp, sp, w->key)))
		return 2;
	return 0;
}

/* unobserved_calls: lets go the calls H shows ended, innermost first (one
 * found by its slot a hit, CT_EV_UNOBSERVED_DONE: the reconstruction ends
 * the innermost such call it has open; one further out, if it ended too,
 * at the next hit); RET: a call without an exit probe starts here. */
__noinline int track_unobserved(struct run *r, __u64 sp, __u64 bp, __u64 ret)
{
	if (!r)
		return 0;
	struct hit *h = &r->h;
	r->hit_sp = sp;
	r->hit_bp = bp;
	struct gkey *k = stack_key(r);
	struct unobserved_stack *w = unobserved_open ? bpf_map_lookup_elem(&unobserved_calls, k) : NULL;
	if (w) {
		for (int i = 0; i < CT_UNOBSERVED_DEPTH; i++) {
			__u32 n = w->n;
			if (!n || n > CT_UNOBSERVED_DEPTH)
				break;
			int over = unobserved_over(r, &w->c[(n - 1) & (CT_UNOBSERVED_DEPTH - 1)]);
			if (!over || (over == 2 && (h->flags & CT_EV_UNOBSERVED_DONE)))
				break;
			if (over == 2)
				h->flags |= CT_EV_UNOBSERVED_DONE;
			w->n = n - 1;
		}
		if (!w->n && !ret && bpf_map_delete_elem(&unobserved_calls, k) == 0)
			__sync_fetch_and_add(&unobserved_open, -1);
	}
	if (!ret)
		return 0;
	struct unobserved_call *c = &r->us.c[0];
	if (w) {
		__u32 n = w->n;
		if (n >= CT_UNOBSERVED_DEPTH) { /* the outermost goes */
			for (int i = 0; i < CT_UNOBSERVED_DEPTH - 1; i++)
				w->c[i] = w->c[i + 1];
			n = CT_UNOBSERVED_DEPTH - 1;
		}
		c = &w->c[n & (CT_UNOBSERVED_DEPTH - 1)];
		w->n = n + 1;
	}
	c->key = h->key;
	c->ret = ret;
	c->check = CT_COOKIE_SITE(h->cookie);
	c->inner_drop = r->check_drop;
	c->inner_ret = r->check_ret0;
	if (!w) {
		r->us.n = 1;
		if (bpf_map_update_elem(&unobserved_calls, k, &r->us, BPF_NOEXIST) == 0)
			__sync_fetch_and_add(&unobserved_open, 1);
	}
	return 0;
}

/* An interim RET (CT_COOKIE_INTERIM: its function's RETs are probed until
 * the callers it has are found): does the innermost call of the hit's
 * goroutine/thread that no exit probe sees end here -- its frame, its
 * return address still in the slot at SP?  Then the RET is that call's
 * exit (track_unobserved then lets it go).  Else (below) its call site's
 * lookup decides; where that has an exit probe, the RET's event says it
 * may not be the call's end (CT_EV_INTERIM_PASS: replay does not close a
 * call that has an exit probe there, which reads its results), and user
 * space learns that this RET let one go by (interim_passed, counted). */
static __noinline int interim_ends(struct run *r, __u64 sp, __u64 ip)
{
	struct hit *h = &r->h;
	struct unobserved_stack *u = unobserved_open ? bpf_map_lookup_elem(&unobserved_calls, stack_key(r)) : NULL;
	__u32 n = u ? u->n : 0;
	const struct unobserved_call *w = n && n <= CT_UNOBSERVED_DEPTH ? &u->c[(n - 1) & (CT_UNOBSERVED_DEPTH - 1)] : NULL;
	/* (made last by a wrapper, which returns right after it: the call's
	 * own slot, and the wrapper's still holding where that returns to;
	 * the event is at the call's frame key, as its entry's) */
	r->interim_drop = 0;
	if (w && w->key + w->inner_drop == h->key && read_u64(sp) == w->inner_ret &&
	    (!w->inner_drop || read_u64(sp + w->inner_drop) == w->ret)) {
		h->key = w->key;
		r->interim_drop = w->inner_drop;
		count(CT_CNT_INTERIM_ENDS, 1);
		return 1;
	}
	__u32 site = CT_COOKIE_SITE(h->cookie);
	/* The probes may no longer track the call: a coroutine's body, on a
	 * stack of its own, is let go by the first hit on the thread's other
	 * stack (its key is not deeper), and only the innermost
	 * CT_UNOBSERVED_DEPTH are kept.  The CHECK's own lookup of the return
	 * address, done again, says whether its call site has an exit probe
	 * (the slot is the one the CHECK read): if not, this is its end --
	 * at the key its CHECK gave it (a wrapper's). */
	const struct ct_interim_check *ic = bpf_map_lookup_elem(&interim_checks, &site);
	int found = ic ? check_planned(r, sp, ic->check, ip - (__s64)ic->delta) : 1;
	if (ic && !((found & 1) && !r->pc.via)) {
		count(CT_CNT_INTERIM_ENDS, 1);
	} else {
		__u32 *passes = bpf_map_lookup_elem(&interim_passed, &site), one = 1;
		if (passes)
			__sync_fetch_and_add(passes, 1);
		else /* (two CPUs at once: one of the two is not counted) */
			bpf_map_update_elem(&interim_passed, &site, &one, BPF_NOEXIST);
		count(CT_CNT_INTERIM_PASSES, 1);
		if (!ic)
			return 0;
		/* Its call site has an exit probe: from before the call (that
		 * one sees it end, with its results), or added while it ran
		 * (none will: it began as a call without one).  Replay knows
		 * which. */
		h->flags |= CT_EV_INTERIM_PASS;
	}
	/* Either way at the call's frame key, as its entry's (a wrapper's
	 * that made it last, as above: a pass keyed at the function's own
	 * frame left restic's rateLimitedBackend.Load -- entered through its
	 * pointer wrapper from a closure's call found while it ran, in tail
	 * position there -- unwound when the closure returned). */
	h->key -= r->check_drop;
	r->interim_drop = r->check_drop;
	return 1;
}

/* The g (Go) the hit's goroutine runs on, where the cookie says it is
 * (0: none, C code). */
static __always_inline __u64 hit_g(struct pt_regs *ctx, __u64 cookie)
{
	__u32 gsrc = CT_COOKIE_GSRC(cookie);
	if (gsrc == CT_G_R14)
		return ctx->r14;
	if (gsrc == CT_G_TLS) {
		struct task_struct *task = (void *)bpf_get_current_task();
		__u64 fsbase = BPF_CORE_READ(task, thread.fsbase);
		return read_u64(fsbase + bins[CT_COOKIE_BIN(cookie)].tls_g_off);
	}
	return 0;
}

/* A hit that sent no event (nothing happened, or limits cut it) costs
 * the program its trap all the same: weighed by the class of its site
 * (fetch_index's high bits, set by user space; sites added while recording
 * have none: by kind), it goes with the thread's next event -- if that is
 * on the same g (goroutine): another goroutine's calls did not pay it, so
 * the cost of hits on a g the thread left is dropped (it stays in the
 * durations around them, as before there was this).  A global function:
 * its stack frame is not on_hit's (see struct run). */
/* The class (enum ct_hit_class) of the hit of the probe with COOKIE: its
 * site's, as user space set it (plus one in fetch_index's high word), or
 * by its kind. */
static __always_inline __u32 hit_class(__u64 cookie)
{
	__u32 site = CT_COOKIE_SITE(cookie);
	const __u64 *index = bpf_map_lookup_elem(&fetch_index, &site);
	__u32 cls = index ? (__u32)(*index >> 32) & (CT_HIT_CLASS_SLOTS - 1) : 0;
	cls = cls ? cls - 1 : CT_COOKIE_KIND(cookie) == CT_SITE_RET ? CT_HIT_RET : CT_HIT_EMULATED;
	return cls & (CT_HIT_CLASS_SLOTS - 1);
}

__noinline int silent_hit(struct pt_regs *ctx, struct run *r)
{
	if (!r)
		return 0;
	__u64 cookie = r->probe_cookie;
	__u32 cls = hit_class(cookie);
	__u64 g = hit_g(ctx, cookie);
	if (r->silent && r->silent_g != g)
		r->silent = 0;
	r->silent_g = g;
	__u32 w = silent_weight[cls & (CT_HIT_CLASS_SLOTS - 1)], v = r->silent + w;
	r->silent = v < w ? ~0u : v; /* (saturates) */
	return 0;
}


/* Never at the cost of calls: a program that switches very often (threads
 * yielding by the million) filled the ring with times off CPU and pushed
 * its calls' events out.  Over half full, such a record is not sent, only
 * counted (CT_CNT_OFFCPU_DROPPED). */
static __always_inline int ring_crowded(void)
{
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) <= bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 2)
		return 0;
	__u32 k = CT_CNT_OFFCPU_DROPPED;
	__u64 *c = bpf_map_lookup_elem(&counters, &k);
	if (c)
		__sync_fetch_and_add(c, 1);
	return 1;
}

/* Goroutines the Go scheduler took off their threads (record --parks): g
 * -> when, until execute runs them again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct desched_key);
	__type(value, __u64);
} desched SEC(".maps");

/* The Go scheduler's markers (record --parks, GOREADY sites, by their
 * CT_GOSCHED_* in the cookie's func field), each at its function's entry,
 * whose first argument is a g: in RAX (register ABI: the cookie's g source
 * is R14) or on the stack (ABI0).  ready(gp): gp is runnable from now,
 * its park ends when it runs (CT_PROC_READY).  goschedImpl(gp),
 * preemptPark(gp): gp leaves its thread, runnable (or stopped for the GC);
 * execute(gp): it runs again -- the time between is sent as its time off
 * CPU (CT_PROC_OFFCPU, CT_OFFCPU_GOSCHED).  A global function: its stack
 * frame is not hit_run's (see struct run). */
__noinline int go_scheduler(struct pt_regs *ctx, struct run *r)
{
	if (!r)
		return 0;
	const struct hit *h = &r->h;
	__u64 gp = CT_COOKIE_GSRC(h->cookie) == CT_G_R14 ? ctx->ax : read_u64(ctx->sp + 8);
	__u32 tgid = (__u32)(h->pid_tgid >> 32), what = CT_COOKIE_FUNC(h->cookie);
	if (!gp)
		return 0;
	r->desched_key.g = gp;
	r->desched_key.tgid = tgid;
	r->desched_key.pad = 0;
	__u64 now = bpf_ktime_get_ns(), since = 0;
	if (what == CT_GOSCHED_DESCHED) {
		r->desched_at = now;
		bpf_map_update_elem(&desched, &r->desched_key, &r->desched_at, BPF_ANY);
		return 0;
	}
	if (what == CT_GOSCHED_EXECUTE) {
		__u64 *v = bpf_map_lookup_elem(&desched, &r->desched_key);
		if (!v)
			return 0; /* (nearly always: it parked, or is new) */
		since = *v;
		bpf_map_delete_elem(&desched, &r->desched_key);
		if (since >= now)
			return 0;
	}
	__u64 goid = read_u64(gp + bins[CT_COOKIE_BIN(h->cookie)].goid_off);
	if (!goid || ring_crowded())
		return 0;
	struct ct_event *e = reserve_proc(what == CT_GOSCHED_EXECUTE ? CT_PROC_OFFCPU : CT_PROC_READY, tgid,
					  (__u32)h->pid_tgid);
	if (!e)
		return 0;
	e->goid = goid;
	if (what == CT_GOSCHED_EXECUTE) {
		e->key = now - since;
		e->pad = CT_OFFCPU_PREEMPTED | CT_OFFCPU_GOSCHED;
	}
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

/* The hit itself: on_hit's, with its thread's run R, whose hit has its
 * cookie, pid_tgid and loss_gen. */
static __always_inline int hit_body(struct pt_regs *ctx, struct run *r)
{
	struct hit *h = &r->h;
	const struct ct_bin_config *hb = &bins[CT_COOKIE_BIN(h->cookie)];
	__u32 nth_goid_site = CT_COOKIE_SITE(h->cookie) + 1 - hb->goid_site;
	if (nth_goid_site < hb->goid_sites) {
		__sync_fetch_and_add(&goid_gen, 1);
		if (nth_goid_site) /* not GOCREATE: its only use */
			return 0;
	}
	if (CT_COOKIE_KIND(h->cookie) == CT_SITE_GOREADY) {
		go_scheduler(ctx, r);
		return 0; /* (no call: its cost goes with the thread's next event, as a silent hit's) */
	}
	h->flags = 0;
	h->site = CT_COOKIE_SITE(h->cookie);
	if (CT_COOKIE_JCC(h->cookie)) {
		__u32 site = h->site;
		const __u32 *cc = bpf_map_lookup_elem(&jcc_conds, &site);
		if (cc && !ct_jcc_taken(*cc, ctx->flags)) {
			if (*cc & CT_JCC_ALONE) {
				count(CT_CNT_JCC_SILENT, 1);
				return 0; /* nothing happened: the function goes on */
			}
			h->flags |= CT_EV_NOT_TAKEN;
		}
	}
	r->key_delta = 0;
	r->icall_report = 0;
	r->unobserved_ret = 0;
	r->new_caller = 0;
	r->new_ret = 0;
	r->caller_depth = 0;
	__u64 sp = PT_REGS_SP(ctx);
	if (CT_COOKIE_KIND(h->cookie) == CT_SITE_CHECK) {
		sp += CT_COOKIE_SPDROP(h->cookie); /* SP at the entry: the return address */
		/* A function observed from its callers: a call from a planned
		 * call site is that site's CALL event; from anywhere else, an
		 * unplanned call, whose return address user space learns once
		 * (it adds the exit probe there and plans the call site). */
		/* (made last by a wrapper: the call from where that returns
		 * to, whose exit sees this call end; its frame key from there) */
		int found = check_planned(r, sp, CT_COOKIE_SITE(h->cookie), PT_REGS_IP(ctx));
		sp = r->check_sp;
		__u64 ret = r->check_ret, k = r->check_k;
		if ((found & 1) && !r->pc.via) {
			h->site = r->pc.site;
			r->key_delta = r->pc.key_delta;
			r->caller_depth = r->pc.caller_depth;
			r->caller_check = r->pc.caller_check;
			if (r->pc.fetch) /* the program of the exit it sends too: this hit's */
				h->cookie = (h->cookie & ~(__u64)(CT_MAX_SITES - 1)) | (r->pc.fetch - 1) | 1ULL << 30;
		} else {
			r->unobserved_ret = ret;
			/* (where a wrapper returns to is found as an indirect
			 * call's site is) */
			count((found & 2) || CT_COOKIE_INDIRECT(h->cookie) ? CT_CNT_INDIRECT : CT_CNT_UNPLANNED, 1);
			/* the first hit from there is reported, once (not past
			 * CT_VIA_LEVELS wrappers: that one is planned) */
			__u8 seen = 1;
			if (cfg.report_callers && !(found & 1) &&
			    bpf_map_update_elem(&callers_seen, &k, &seen, BPF_NOEXIST) == 0) {
				r->new_caller = k;
				r->new_ret = ret;
			}
		}
	} else if (CT_COOKIE_RETCHECK(h->cookie) && !(h->flags & CT_EV_NOT_TAKEN)) {
		/* A tail jump to untraced code, which returns to the return
		 * address at SP: is there a probe that sees the call end?  If
		 * not, user space learns that address once and puts one there. */
		__u64 ret = read_u64(sp);
		__u64 k = CT_PLANNED_KEY(CT_COOKIE_SITE(h->cookie), ret - PT_REGS_IP(ctx));
		if (!planned_call(r, k) &&
		    !((cfg.file_rets || file_calls_open) && watched_in_file(CT_COOKIE_SITE(h->cookie), ret))) {
			h->flags |= CT_EV_UNWATCHED;
			__u8 seen = 1;
			if (cfg.report_callers &&
			    bpf_map_update_elem(&callers_seen, &k, &seen, BPF_NOEXIST) == 0) {
				r->new_caller = k;
				r->new_ret = ret;
			}
		} else {
			h->flags |= CT_EV_WATCHED;
		}
	} else if (CT_COOKIE_KIND(h->cookie) == CT_SITE_RETSITE && CT_COOKIE_ICALL_EXIT(h->cookie)) {
		icall_exit_hit(r);
	}

	/* The registers for the site's fetch program (struct scratch), by
	 * plain loads from the context (bpf_probe_read_kernel cost ~100 ns). */
	if (CT_COOKIE_FETCH(h->cookie))
		__builtin_memcpy(r->s.regs, ctx, sizeof(struct pt_regs));

	__u32 bin = CT_COOKIE_BIN(h->cookie);
	__u64 g = hit_g(ctx, h->cookie);
	r->hit_g = g;
	h->goid = 0;
	if (g) {
		const struct ct_bin_config *bc = &bins[bin];
		__u64 gen = *(volatile __u64 *)&goid_gen; /* before the g's fields */
		__u64 stack_hi = 0;
		if (bc->goid_sites && r->goid_g == g && r->goid_gen == gen && r->goid_bin == bin) {
			h->goid = r->goid; /* a helper call (~80 ns here) less */
			stack_hi = r->goid_stack_hi; /* ... and another (~60 ns) */
		} else {
			h->goid = read_u64(g + bc->goid_off);
			r->goid_g = g;
			r->goid = h->goid;
			r->goid_gen = gen;
			r->goid_bin = bin;
			r->goid_stack_hi = 0;
		}
		if (!stack_hi) {
			stack_hi = read_u64(g + bc->stack_hi_off);
			if (h->goid)
				r->goid_stack_hi = stack_hi;
		}
		h->key = stack_hi - sp;
		if (!h->goid && bc->curg_off) {
			/* On g0 (C called through cgo, or runtime system
			 * stack): say which goroutine it runs for; keep the
			 * stack separate, its keys come from another stack. */
			__u64 curg = read_u64(read_u64(g + bc->m_off) + bc->curg_off);
			if (curg) {
				h->goid = read_u64(curg + bc->goid_off);
				if (h->goid)
					h->flags |= CT_EV_SYSSTACK;
			}
		}
		/* A thread's own code on g0, for no goroutine: keyed as C
		 * code is, whose frames may be below it on the same stack
		 * (a cgo thread's threadentry, _start), set up before g was:
		 * keyed from g0's stack.hi instead, they seemed to return
		 * into a frame far above them and unwound those. */
		if (!h->goid)
			h->key = CT_C_KEY_BASE - sp;
		/* On the signal stack (the M's gsignal stack, which Go gives
		 * sigaltstack): a signal handler, whatever g says.
		 * runtime.sigtrampgo enters with the interrupted g (R14 or
		 * TLS) and calls setg(gsignal) partway, so its entry and RET
		 * were keyed from one g's stack and its calls from another's
		 * (its calls unwound it).  Keyed from the signal stack's top,
		 * and all for the M's goroutine (the interrupted g's, or
		 * gsignal's m.curg: the same one, without telling whether it
		 * ran on g0 for it), they nest in one stack. */
		struct task_struct *t = bpf_get_current_task_btf();
		if (sp - t->sas_ss_sp < t->sas_ss_size) {
			h->key = t->sas_ss_sp + t->sas_ss_size - sp;
			h->flags = (h->flags & ~CT_EV_SYSSTACK) | CT_EV_ALTSTACK;
		}
	} else {
		h->key = CT_C_KEY_BASE - sp;
		/* On the alternate signal stack (a handler): its keys come from
		 * another stack than the frames it interrupted. */
		struct task_struct *t = bpf_get_current_task_btf();
		if (sp - t->sas_ss_sp < t->sas_ss_size)
			h->flags |= CT_EV_ALTSTACK;
	}
	if (CT_COOKIE_KIND(h->cookie) == CT_SITE_RET && CT_COOKIE_INTERIM(h->cookie)) {
		if (!interim_ends(r, sp, PT_REGS_IP(ctx)))
			return 0;
		/* the SP of the frame the event is at now (a wrapper's, which
		 * made the call last): what track_unobserved reads the open
		 * calls' return address slots from -- at the RET's own SP, a
		 * call still open further out read another slot and passed
		 * for ended, and the call this RET ends with it (age's
		 * writeWrapped through its -fm wrapper, in WriterFunc.Write) */
		sp += r->interim_drop;
	}
	if (unobserved_open || r->unobserved_ret)
		track_unobserved(r, sp, ctx->bp, r->unobserved_ret);
	h->key += r->key_delta;
	/* A new caller's report wakes calltrace (~13-16 us a report in
	 * lefthook --help): before the clock read, so that extra_ns has it. */
	if (r->new_caller) {
		__u64 t0 = bpf_ktime_get_ns();
		report_caller(h, r->new_caller, r->new_ret);
		r->slow_pre = ns_since(t0);
	}
	if (r->icall_report)
		report_icall_exit(r);
	/* (looked up before the clock read: the lookup is the hit's too) */
	r->hit_cls = hit_class(r->probe_cookie);
	__u32 cls = r->hit_cls & (CT_HIT_CLASS_SLOTS - 1);
	h->now = bpf_ktime_get_ns();
	/* untimed: the moving average, and the rare slow part, timed */
	__s32 est = r->est_pre[cls];
	r->extra = est + (__s32)r->slow_pre;
	__u64 pre = h->now - r->start;
	/* (beyond: the thread waited for a CPU, a sleepable program can) */
	if (r->timed && pre < CT_EXTRA_MAX_NS) {
		__s32 x = (__s32)pre - (__s32)bpf_pre_ns[cls];
		r->est_pre[cls] = est + ((x - (__s32)r->slow_pre - est) >> 3);
		/* and its clock read at the start, which the others skip
		 * (the calibration's prices are of hits without) */
		r->extra = x + (bpf_times_set ? (__s32)r->read_ns : 0);
	}
	/* a goroutine's creation is no call: limits do not apply to it */
	if ((cfg.limits & CT_LIM_SHADOW) && CT_COOKIE_KIND(h->cookie) != CT_SITE_GOCREATE)
		limits_hit(r);
	else
		send_this(h);
	return 0;
}

/* What the end of the hit, after its clock read, took beyond the
 * calibration's (its class's bpf_post_ns; capturing values: bpf_args_ns
 * more): carried to the thread's next event on the same g (take_extra),
 * whose interval it is in.  Untimed: the moving average of the thread's
 * timed hits of its class, and the pages its capture faulted in.  A hit
 * that read no clock (it sent nothing before it would) carries nothing. */
static __always_inline void hit_end(struct run *r)
{
	if (!r->h.now)
		return;
	__u32 cls = r->hit_cls & (CT_HIT_CLASS_SLOTS - 1);
	__s32 est = r->est_post[cls], x = est + (__s32)r->s.slow;
	if (r->timed) {
		__u64 end = bpf_ktime_get_ns(), post = end - r->h.now;
		__u64 read = bpf_ktime_get_ns() - end; /* what a clock read takes */
		if (post >= CT_EXTRA_MAX_NS)
			return;
		if (read < CT_EXTRA_MAX_NS)
			r->read_ns = (__u32)read;
		__u32 cal = bpf_post_ns[cls] + (r->sent_now && r->s.e.len ? bpf_args_ns : 0);
		x = (__s32)post - (__s32)cal;
		r->est_post[cls] = est + ((x - (__s32)r->s.slow - est) >> 3);
		if (bpf_times_set) /* its clock reads at the end, this one's too */
			x += 2 * (__s32)r->read_ns;
		r->post_raw = (__u32)post;
	}
	if (r->carry && r->carry_g != r->hit_g)
		r->carry = 0;
	r->carry_g = r->hit_g;
	r->carry += x;
}

/* The hit, and its cost if it sent no event.  A global function: its
 * stack frame is not on_hit's (see struct run). */
__noinline int hit_run(struct pt_regs *ctx, struct run *r)
{
	if (!r)
		return 0;
	r->sent = 0;
	r->sent_now = 0;
	r->hit_g = 0;
	r->h.now = 0;
	r->slow_pre = 0;
	r->s.slow = 0;
	hit_body(ctx, r);
	if (!r->sent)
		silent_hit(ctx, r);
	hit_end(r);
	return 0;
}

static __always_inline int on_hit(struct pt_regs *ctx)
{
	__u32 loss_gen = read_loss_gen();
	/* (plain loads from the task, where bpf_get_current_pid_tgid finds
	 * them too: no helper call) */
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid;
	if (cfg.filter_pids && !bpf_map_lookup_elem(&traced_pids, &tgid))
		return 0;
	__u32 zero = 0;
	__u64 *nhits = bpf_map_lookup_elem(&hits, &zero);
	if (nhits) /* (atomic, as count_lost's) */
		__sync_fetch_and_add(nhits, 1);
	struct run *r = bpf_task_storage_get(&runs, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!r) {
		count_lost(); /* no memory for the thread's first run */
		__sync_fetch_and_add(&goid_gen, 1); /* (it may be the goid_site's) */
		return 0;
	}
	/* (the clock read after the lookups: the calibration's hits time the
	 * same part of the program) */
	r->tick++;
	r->timed = !bpf_times_set ||
		   (tgid != self_tgid && (r->tick <= CT_TIMED_FIRST || !(r->tick & (CT_TIMED_EVERY - 1))));
	r->start = r->timed ? bpf_ktime_get_ns() : 0;
	r->extra = 0;
	r->h.cookie = r->probe_cookie = bpf_get_attach_cookie(ctx);
	r->h.pid_tgid = (__u64)tgid << 32 | (__u32)task->pid;
	r->h.loss_gen = loss_gen;
	return hit_run(ctx, r);
}

/* Sleepable (uprobe.s, with uprobe_multi since Linux 6.6): fetch_mem may
 * fault in a page the program has not touched yet.  Measured: no cost when
 * the fast read works.  One program for every site (the cookie says what
 * the site is): entry and exit sites are two links of it, and the verifier,
 * most of the load time, runs once. */
SEC("uprobe.s")
int ct_hit(struct pt_regs *ctx)
{
	return on_hit(ctx);
}

/* A process's first probe hit, and its first single-step, cost more than
 * the others (the thread's state, here and in the kernel; the area the
 * kernel steps instructions in): one probe on the way from the program's
 * entry point to main pays for them before any call is open
 * (ct_warm_up_site).  It sends nothing. */
SEC("uprobe.s")
int ct_warm(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid;
	if (cfg.filter_pids && !bpf_map_lookup_elem(&traced_pids, &tgid))
		return 0;
	bpf_task_storage_get(&runs, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	count(CT_CNT_WARM_UPS, 1);
	return 0;
}

/* ---- processes: forks and execs (--follow), ends of threads and processes ---- */

/* A process record, reserved (NULL: counted lost); submit with
 * bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP): process events are rare and
 * user space acts on them, so it is woken. */
static __always_inline void fill_proc(struct ct_event *e, __u32 gen, __u32 kind, __u32 pid, __u32 tid)
{
	e->loss_gen = gen;
	e->silent = 0;
	e->extra_ns = 0;
	e->pad = 0;
	e->ts = bpf_ktime_get_ns();
	e->goid = 0;
	e->key = 0;
	e->pid = pid;
	e->tid = tid;
	e->site = kind;
	e->len = 0;
	e->flags = CT_EV_PROC;
}

static __always_inline struct ct_event *reserve_proc(__u32 kind, __u32 pid, __u32 tid)
{
	__u32 gen = read_loss_gen();
	struct ct_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost();
		return NULL;
	}
	fill_proc(e, gen, kind, pid, tid);
	return e;
}

static __always_inline void send_proc(__u32 kind, __u32 pid, __u32 tid, __u32 other)
{
	struct ct_event *e = reserve_proc(kind, pid, tid);
	if (!e)
		return;
	e->goid = other;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/* Processes the traced ones forked without --follow: not traced, only
 * counted (where the calls were, when the traced process made none). */
__u64 forks_untraced = 0;
/* --follow: processes forked while CT_MAX_TRACED_PIDS were traced: not traced */
__u64 forks_unfollowed = 0;

SEC("tp_btf/sched_process_fork")
int BPF_PROG(ct_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, pid), ctgid = BPF_CORE_READ(child, tgid);
	if (cpid != ctgid || !bpf_map_lookup_elem(&traced_pids, &ptgid))
		return 0; /* a new thread, or not ours */
	if (!cfg.filter_pids) { /* (no --follow) */
		__sync_fetch_and_add(&forks_untraced, 1);
		return 0;
	}
	__u8 one = 1;
	if (bpf_map_update_elem(&traced_pids, &ctgid, &one, BPF_ANY)) {
		__sync_fetch_and_add(&forks_unfollowed, 1); /* (the map is full) */
		return 0;
	}
	send_proc(CT_PROC_FORK, ptgid, BPF_CORE_READ(parent, pid), ctgid);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ct_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	if (!bpf_map_lookup_elem(&traced_pids, &tgid))
		return 0;
	/* What the thread last read of its old program's g (struct run) is no
	 * use in the new one: ct_switch would read the new program's memory by
	 * the old one's offsets until its next Go hit */
	struct run *r = bpf_task_storage_get(&runs, p, NULL, 0);
	if (r)
		r->goid_g = 0;
	/* Another binary: hold the process (SIGSTOP) until user space has put
	 * the probes on it and sends SIGCONT, so its first calls are seen.
	 * Only once the event that makes user space continue it is sure to
	 * arrive: with the ring buffer full it runs on, its new binary untraced
	 * (the loss is counted). */
	struct ct_event *e = reserve_proc(CT_PROC_EXEC, tgid, tgid);
	if (!e)
		return 0;
	__u64 ino = BPF_CORE_READ(bprm, file, f_inode, i_ino);
	e->goid = 0;
	e->key = ino; /* (-p: another program than the traced one?) */
	if (cfg.filter_pids /* --follow */ && ino != cfg.follow_ino) {
		/* in held_pids before it stops: the guard must know it */
		__u8 one = 1;
		if (bpf_map_update_elem(&held_pids, &tgid, &one, BPF_ANY) == 0) {
			e->goid = bpf_send_signal(19 /* SIGSTOP */) == 0;
			if (!e->goid)
				bpf_map_delete_elem(&held_pids, &tgid);
		}
	}
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* ---- the program's waits for calltrace's probe changes ---- */

/* Probe links being made or closed right now (user space counts them,
 * probes.c).  Making or taking out a breakpoint holds the process's
 * mmap_lock for writing: a thread that faults a page in, or hits a probe
 * the kernel's fast lookup misses, waits for it meanwhile (30-100 us a
 * time here, ms in all on a short run whose call sites are found as it
 * goes).  That wait is sent (CT_PROC_STALL), and replay takes it out. */
__u64 probe_changes = 0;

static __always_inline bool is_mmap_lock(struct task_struct *task, void *lock)
{
	__u64 mm = (__u64)BPF_CORE_READ(task, mm);
	return mm && (__u64)lock == mm + bpf_core_field_offset(struct mm_struct, mmap_lock);
}

SEC("tp_btf/contention_begin")
int BPF_PROG(ct_wait_begin, void *lock, unsigned int flags)
{
	if (!*(volatile __u64 *)&probe_changes)
		return 0;
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid;
	if (!bpf_map_lookup_elem(&traced_pids, &tgid) || !is_mmap_lock(task, lock))
		return 0;
	struct run *r = bpf_task_storage_get(&runs, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (r)
		r->wait_begin = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(ct_wait_end, void *lock, int ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid;
	if (!bpf_map_lookup_elem(&traced_pids, &tgid))
		return 0;
	struct run *r = bpf_task_storage_get(&runs, task, NULL, 0);
	if (!r || !r->wait_begin || !is_mmap_lock(task, lock))
		return 0;
	__u64 now = bpf_ktime_get_ns(), waited = now - r->wait_begin;
	r->wait_begin = 0;
	struct ct_event *e = reserve_proc(CT_PROC_STALL, tgid, task->pid);
	if (!e)
		return 0;
	e->ts = now;
	e->key = waited;
	e->goid = r->goid;
	bpf_ringbuf_submit(e, wake_flags(sizeof(*e)));
	return 0;
}

/* ---- off CPU: when the scheduler ran something else on a traced thread ---- */

/* The goroutine thread TASK (the one running: current) is running, by the
 * bins of its last Go hit; 0 when it runs none (an idle M in the runtime's
 * scheduler: g0 with no m.curg) or never hit a Go probe.  A non-sleepable
 * program: bpf_probe_read_user (the g and its TLS slot are hot). */
static __always_inline __u64 switch_goid(struct task_struct *task, struct run *r, bool *is_go)
{
	*is_go = false;
	if (!r->goid_g)
		return 0;
	__u32 bin = r->goid_bin & (CT_MAX_BINS - 1);
	const struct ct_bin_config *bc = &bins[bin];
	if (!bc->is_go)
		return 0;
	*is_go = true;
	__u64 g = 0, goid = 0, m = 0, curg = 0;
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase);
	if (bpf_probe_read_user(&g, sizeof(g), (void *)(fsbase + bc->tls_g_off)) || !g)
		return 0;
	bpf_probe_read_user(&goid, sizeof(goid), (void *)(g + bc->goid_off));
	if (!goid && bc->curg_off && !bpf_probe_read_user(&m, sizeof(m), (void *)(g + bc->m_off)) && m &&
	    !bpf_probe_read_user(&curg, sizeof(curg), (void *)(m + bc->curg_off)) && curg)
		bpf_probe_read_user(&goid, sizeof(goid), (void *)(curg + bc->goid_off));
	return goid;
}

/* A traced thread that goes off CPU is noted (in its task storage, which
 * only threads that hit a probe have: the others have no calls open), and
 * when it runs again its time off is sent (CT_PROC_OFFCPU), with the
 * goroutine it ran.  Runs at every context switch of the machine while
 * recording: two task-storage lookups for others' threads.  Never wakes
 * the reader (inside the scheduler; the timed poll gets it). */
SEC("tp_btf/sched_switch")
int BPF_PROG(ct_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	struct run *r = bpf_task_storage_get(&runs, prev, NULL, 0);
	__u32 tgid = prev->tgid;
	if (r && bpf_map_lookup_elem(&traced_pids, &tgid)) {
		bool is_go;
		__u64 goid = switch_goid(prev, r, &is_go);
		if (goid || !is_go) {
			r->off_since = bpf_ktime_get_ns();
			r->off_goid = goid;
			/* taken off the CPU (or yielding it) runnable: not
			 * waiting for anything but a CPU */
			r->off_flags = preempt || prev_state == 0 /* TASK_RUNNING */ ? CT_OFFCPU_PREEMPTED : 0;
			if (r->off_flags && next->tgid == cfg.self_tgid)
				r->off_flags |= CT_OFFCPU_BY_TRACER;
		}
	}
	r = bpf_task_storage_get(&runs, next, NULL, 0);
	if (!r || !r->off_since)
		return 0;
	__u64 since = r->off_since;
	r->off_since = 0;
	tgid = next->tgid;
	if (!bpf_map_lookup_elem(&traced_pids, &tgid))
		return 0;
	if (ring_crowded())
		return 0;
	struct ct_event *e = reserve_proc(CT_PROC_OFFCPU, tgid, next->pid);
	if (!e)
		return 0;
	e->key = e->ts - since;
	e->goid = r->off_goid;
	e->len = 0;
	e->pad = r->off_flags;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

/* bpf_for_each_map_elem's callback: deletes the gstates entry K if it is
 * of process *TGID. */
static long drop_state_of(struct bpf_map *map, struct gkey *k, struct gstate *v, __u32 *tgid)
{
	if (k->tgid == *tgid && bpf_map_delete_elem(map, k) == 0)
		__sync_fetch_and_add(&gstates_live, -1);
	return 0;
}

/* Every thread of a traced process that ends (its open calls end with it).
 * do_exit() counts the live threads down before this tracepoint: at 0 the
 * last one is leaving and the process is gone (not when the thread group
 * leader leaves: the others may run on). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(ct_proc_exit, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, pid), tgid = BPF_CORE_READ(p, tgid);
	if (!bpf_map_lookup_elem(&traced_pids, &tgid))
		return 0;
	int last = BPF_CORE_READ(p, signal, live.counter) == 0;
	/* A process that ends inside traced calls (every one that calls exit
	 * in main): the limits' state of its stacks goes with it.  (Not per
	 * thread: a Go stack's key is its goroutine's id, which may equal an
	 * ending thread's id.) */
	if (last && (cfg.limits & CT_LIM_SHADOW))
		bpf_for_each_map_elem(&gstates, drop_state_of, &tgid, 0);
	if (last) {
		bpf_map_delete_elem(&traced_pids, &tgid);
		bpf_map_delete_elem(&held_pids, &tgid); /* killed while held */
	}
	send_proc(last ? CT_PROC_EXIT : CT_PROC_THREAD_EXIT, tgid, pid, 0);
	return 0;
}
