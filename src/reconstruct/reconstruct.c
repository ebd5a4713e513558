#include "reconstruct/reconstruct.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct frame {
	struct ct_call c;
	uint8_t *args;          /* owned copy of the entry payload */
	uint8_t *spill;         /* owned copy of its SPILL hit's payload */
	bool waiting;           /* not reported yet: its SPILL hit may follow */
	bool restart_pending;   /* a morestack CALL was seen in this frame */
	bool tail_pending;      /* left by a JMP to a traced function */
	bool tailpos;           /* its call is in tail position: it ends with its parent */
	bool no_exit;           /* entered at a CHECK from a call site without an exit probe */
	uint32_t tail_target;
	bool tail_any;          /* ... through a pointer, or to untraced code whose return a
				   probe watches: any traced function may be the target */
	uint64_t tail_ts;
	bool has_children;
	/* a tail call replaced it: it returns without results (the callee
	 * returns them); TAKES_EXIT: the top of a tail chain whose replaced
	 * caller's exit probe closes it, what that reads is this one's */
	bool replaced, takes_exit;
	/* when an interim RET of it passed (CT_EV_INTERIM_PASS; 0: none): it
	 * returned, its exit probe is yet to read its results */
	uint64_t ret_passed_ts;
	uint64_t losses; /* loss records seen before its entry */
	/* its last child's exit site (UINT32_MAX: none, or not one that
	 * returned with an integer word) and that word */
	uint32_t prev_exit;
	/* a tail call's result worked out from its caller's (CT_SITE_TAILDIFF
	 * derived_site, UINT32_MAX: none) */
	uint32_t derived_site;
	uint64_t prev_word;
	uint64_t derived;
	/* a runtime.gopark call (record --parks): when its goroutine was made
	 * runnable again (CT_PROC_READY; 0: not seen) */
	uint64_t ready_ts;
	uint64_t unused; /* (zero16n: a multiple of 16 bytes) */
};

struct thread_stacks;

/* A goroutine's origin, shared by reference: the origins map holds it until
 * the goroutine (or its process) ends, and each stack that shows it holds
 * it while the stack lives.  Frames hold none: a call's origin is its
 * stack's, put in its ct_call only for the callback (report).  Frames held
 * a pointer, which outlived the origin wherever a call that showed it was
 * open when the goroutine ended: make fuzz found two (calls a damaged file
 * left open past the end on the goroutine's own stack, a call of another
 * stack waiting for its SPILL hit), and a Go signal handler's calls for
 * it, a stack whose key another took and a fork's copy of one were more. */
struct origin {
	struct ct_goroutine_origin o;
	uint32_t refs;
};

static struct origin *origin_hold(struct origin *o)
{
	if (o)
		o->refs++;
	return o;
}

static void origin_release(struct origin *o)
{
	if (o && !--o->refs)
		free(o);
}

struct stack {
	CT_VEC(struct frame) f;
	uint32_t pid;
	uint64_t goid;
	uint64_t key; /* its thread key */
	bool recover_pending;   /* a recovered panic: the next resume point unwinds */
	bool ran;               /* image_ran was told of its process, */
	uint32_t image;         /* ... whose image_of this is (stacks end at an exec) */
	struct origin *origin;  /* what its calls show (a reference: stack_show) */
	/* C threads that switch stacks (thread_stack): which of its thread's
	 * stacks this is, as shown (a signal handler's is the context it
	 * interrupted), and the depth its frames start at (under that frame) */
	struct thread_stacks *th;
	uint32_t context, depth_base;
	bool go_signal; /* a Go thread's signal handler (go_signal_stack) */
	bool sched_on;      /* --sched: r->sched_pending[sched_idx] is its (in
			       padding: a stack's size is what a million threads cost) */
	uint32_t sched_idx;
	uint64_t under; /* ... the key of the stack it interrupted */
	bool orphan;    /* another stack took its key (in ct_recon.orphans) */
	/* its frames with no_exit set: close_unplanned has nothing to close
	 * without one (its walk down the tail-position frames of a deep
	 * recursion was ~4% of report's time) */
	uint32_t no_exit_open;
	uint32_t ret_passed_open; /* its frames with ret_passed_ts set */
	size_t th_idx;                         /* in th->all */
	bool parked;                           /* in th->parked (a suspended stack) */
	uint64_t park_bucket;
	struct stack *park_prev, *park_next;
	/* the corrected clock (struct ct_costs): the cost of the hits on this
	 * stack so far, the last corrected time, and measured minus corrected
	 * for the event being applied; and of its last hit's price, the part
	 * after its clock read (hit_cost's floor for the next one's extra) */
	uint64_t cost, last, shift, post_left;
};

struct pending_sched {
	struct stack *s;
	uint64_t from, to, start;
	uint32_t tid;
	uint8_t flags;
};

struct ct_recon {
	const struct ct_file_site *sites;
	size_t nsites;
	const struct ct_file_func *funcs; /* NULL: `go` speaks for every function */
	size_t nfuncs;
	bool go;                          /* with funcs: any function is Go */
	size_t nfuncs_seen;               /* of them, looked at for `go` */
	/* runtime.gopark's ids (one a Go binary: --follow traces several) */
	CT_VEC(uint32_t) gopark_funcs;
	bool parks;                       /* record --parks: a GOREADY site (parked) */
	struct ct_recon_ops ops;
	void *ctx;
	struct ct_map stacks; /* thread key -> struct stack * */
	/* stacks whose key another took (new_stack): still in use where they
	 * are referred to, ended and freed with the rest */
	CT_VEC(struct stack *) orphans;
	struct ct_map threads; /* C thread key -> struct thread_stacks * */
	size_t go_signal_stacks; /* go_signal_stack's, open */
	struct ct_recent recent; /* the stacks of the last events, by key */
	struct ct_map seen;   /* thread keys seen (value: pid + 1), for st.threads; an
				 ended goroutine, thread or process is forgotten */
	struct ct_recon_stats st;
	uint64_t seq;
	uint64_t losses; /* loss records so far */
	struct ct_map origins; /* goroutine's thread key -> struct origin * (a reference) */
	struct ct_map images;  /* pid -> its exec count (ct_call.image) * 2, + 1 if a
				  call of its current program was seen */
	bool delayed_were_silent; /* CT_EV_DELAYED events' hits were priced as silent ones (version 16) */
	struct ct_costs costs;
	/* a whole hit of each class, and its part before the clock read
	 * (ct_recon_set_costs) */
	uint64_t hit_ns[CT_HIT_CLASSES], pre_ns[CT_HIT_CLASSES];
	struct ct_map spill_of; /* function + 1 -> its SPILL site + 1 */
	/* per CALL site: its TAILDIFF site + 1 (0: none), NULL when no site is
	 * a TAILDIFF; an array, not a map: every return of a call in tail
	 * position looks it up */
	uint32_t *tail_diff_of;
	struct ct_map riding_exit_of; /* CALL site + 1 -> its exit riding on another's probe + 1 */
	struct ct_map check_roles_of; /* function + 1 -> its CHECK site + 1, where that probe has other roles */
	const struct ct_trace *trace; /* the site FETCHes (NULL: none) */
	CT_VEC(struct stack *) waiting; /* stacks whose top frame waits for its SPILL hit */
	/* the last time off CPU of a stack, not reported yet (pend_off_cpu):
	 * a wait for calltrace's probe changes that follows (its
	 * record comes after the thread runs again) is taken out of it as out
	 * of the calls around it.  START: its beginning on the corrected clock. */
	CT_VEC(struct pending_sched) sched_pending;
	uint8_t *site_class; /* each site's enum ct_hit_class (hit_cost) */
	void *free_args; /* entry payload buffers of CT_SMALL_ARGS bytes to reuse (args_alloc) */
	/* function id -> until when (raw ns) its interim RETs were probed,
	 * UINT64_MAX: to the end; 0: it has none (CT_SITEF_INTERIM) */
	CT_VEC(uint64_t) interim_until;
	/* function id -> it has a tail jump (a TAIL site): 1 */
	CT_VEC(uint8_t) jumps_out;
	/* the functions named runtime.asyncPreempt2 (one a Go program) */
	CT_VEC(uint32_t) preempt_funcs;
	/* pid -> (raw ns) when the last of its probes went in, where calltrace
	 * attached to it running (CT_PROC_PROBES_IN; UINT64_MAX while that
	 * went on): a call entered before then was maybe ended unseen */
	struct ct_map probes_in;
};

/* Entry payloads of up to CT_SMALL_ARGS bytes (nearly all) reuse buffers of
 * that size from a free list: malloc and free of one per call were ~7% of
 * report's instructions.  The list holds as many as were open at once. */
#define CT_SMALL_ARGS 64

static uint8_t *args_alloc(struct ct_recon *r, const uint8_t *from, uint32_t len)
{
	uint8_t *p;
	if (len <= CT_SMALL_ARGS && r->free_args) {
		p = r->free_args;
		memcpy(&r->free_args, p, sizeof(void *));
	} else {
		p = xmalloc(len <= CT_SMALL_ARGS ? CT_SMALL_ARGS : len);
	}
	memcpy(p, from, len);
	return p;
}

static void args_release(struct ct_recon *r, struct frame *f)
{
	if (f->args && f->c.args_len <= CT_SMALL_ARGS) {
		memcpy(f->args, &r->free_args, sizeof(void *));
		r->free_args = f->args;
	} else {
		free(f->args);
	}
	f->args = NULL;
}

/* S's calls show origin O from now on (NULL: none). */
static void stack_show(struct stack *s, struct origin *o)
{
	origin_hold(o);
	origin_release(s->origin);
	s->origin = o;
}

/* A call's time off CPU is never more than its duration: the correction
 * may take out of a call more of its probes' time than the time it had
 * on CPU (tens of us of 5 ms preempted, in a program of 3,000 threads). */
static void cap_off_cpu(struct ct_call *c)
{
	uint64_t dur = c->ts_exit > c->ts_entry ? c->ts_exit - c->ts_entry : 0;
	uint64_t off = c->off_preempted + c->off_blocked;
	if (off <= dur)
		return;
	uint64_t over = off - dur, b = c->off_blocked < over ? c->off_blocked : over;
	c->off_blocked -= b;
	c->off_preempted -= over - b;
	if (c->off_tracer > c->off_preempted)
		c->off_tracer = c->off_preempted;
}

/* Is FUNC runtime.gopark? */
static bool is_gopark(const struct ct_recon *r, uint32_t func)
{
	for (size_t k = 0; k < r->gopark_funcs.n; k++)
		if (r->gopark_funcs.v[k] == func)
			return true;
	return false;
}

/* F, a runtime.gopark call that returned (record --parks; S's frames: the
 * calls open over it): its goroutine did not run while it lasted.  Until
 * it was made runnable (F->ready_ts, CT_PROC_READY) it was blocked, then
 * it waited for the Go scheduler to run it -- runnable, as a thread whose
 * CPU was taken is (`preempted`).  Without a READY record (the network
 * poller queues the goroutines it wakes itself) all of it is blocked.
 * Time off CPU of its thread's that records gave it already is in that
 * (the thread's time, while the goroutine still held it); the calls open
 * over it hold what it adds. */
static void parked(struct stack *s, struct frame *f)
{
	uint64_t from = f->c.raw_entry, to = f->c.raw_exit;
	if (to <= from)
		return;
	uint64_t ready = f->ready_ts > from && f->ready_ts < to ? f->ready_ts : to;
	uint64_t blk = ready - from, pre = to - ready;
	blk = blk > f->c.off_blocked ? blk - f->c.off_blocked : 0;
	pre = pre > f->c.off_preempted ? pre - f->c.off_preempted : 0;
	for (size_t i = 0; i <= s->f.n; i++) { /* (F: the popped one, at s->f.v[s->f.n]) */
		s->f.v[i].c.off_blocked += blk;
		s->f.v[i].c.off_preempted += pre;
	}
}

/* Is S inside a call of runtime.gopark that record --parks alone traced
 * (CT_FN_PARKS) and that no traced call holds?  Such a wait (a worker's
 * between jobs, the runtime's own goroutines') says nothing about the
 * traced calls, which --parks is for: neither it nor anything in it is
 * shown. */
static bool in_hidden_park(const struct ct_recon *r, const struct stack *s, const struct frame *f)
{
	/* (F: the frame reported, popped already at its end) */
	const struct ct_call *c = s->f.n ? &s->f.v[0].c : f ? &f->c : NULL;
	return c && c->depth == 0 && c->func < r->nfuncs && ct_file_func_parks_only(&r->funcs[c->func]);
}

/* Every callback of a call goes through here (END: its exit, else its
 * entry): F, a frame of S, shows S's origin for as long as the callback
 * runs (see struct origin). */
static void report(struct ct_recon *r, const struct stack *s, struct frame *f, bool end)
{
	void (*to)(void *, const struct ct_call *) = end ? r->ops.exit : r->ops.enter;
	if (!to || in_hidden_park(r, s, f))
		return;
	if (end)
		cap_off_cpu(&f->c);
	f->c.origin = s->origin ? &s->origin->o : NULL;
	to(r->ctx, &f->c);
	f->c.origin = NULL;
}

/* S's top frame, a call waiting for its SPILL hit (settle_waiting), is
 * reported now, without it: S leaves r->waiting.  Before anything is
 * pushed over it or it is popped, so that a call is reported before its
 * callees and its end, and r->waiting never holds a stack without frames
 * (dropped, freed): a goroutine's events on another thread than the one
 * it entered the call on did both (a pop, then a use after free). */
static void report_waiting(struct ct_recon *r, struct stack *s)
{
	for (size_t i = 0; i < r->waiting.n; i++)
		if (r->waiting.v[i] == s) {
			r->waiting.v[i] = r->waiting.v[--r->waiting.n];
			break;
		}
	struct frame *f = &s->f.v[s->f.n - 1];
	f->waiting = false;
	report(r, s, f, false);
}

const char *ct_status_name(enum ct_call_status s)
{
	switch (s) {
	case CT_CALL_RETURNED:
		return "returned";
	case CT_CALL_UNWOUND:
		return "unwound";
	case CT_CALL_UNFINISHED:
		return "unfinished";
	case CT_CALL_LOST:
		return "lost";
	case CT_CALL_EXITED:
		return "exited";
	case CT_CALL_UNOBSERVED:
		return "unobserved";
	default:
		return "open";
	}
}

struct ct_recon *ct_recon_new(const struct ct_file_site *sites, size_t nsites, bool go,
			      const struct ct_recon_ops *ops, void *ctx)
{
	struct ct_recon *r = xcalloc(1, sizeof(*r));
	r->sites = sites;
	r->nsites = nsites;
	r->go = go;
	r->ops = *ops;
	r->ctx = ctx;
	ct_recon_set_sites(r, sites, nsites);
	return r;
}

/* Is FUNC Go code (its own flag, as the BPF side decides per binary)? */
static bool is_go_code(const struct ct_recon *r, uint32_t func)
{
	if (!r->funcs)
		return r->go;
	return func < r->nfuncs && ct_file_func_is_go(&r->funcs[func]);
}

/* Goroutines are identified by (pid, goid); everything else (C threads,
 * Go code on a g0/system stack) by (pid, tid), and the stack of the thread
 * (CONTEXT: 0 its own, n the n-th other it switched to; pids and tids are
 * below 2^22). */
#define ALT_CONTEXT ((1u << 18) - 1) /* internal: a thread's signal stack */
static uint64_t make_thread_key(uint32_t pid, uint32_t tid, uint64_t goid, bool sysstack, uint32_t context)
{
	if (goid && !sysstack)
		return ((uint64_t)pid << 42) ^ goid;
	/* Threads, and code on a goroutine's system stack (its keys come from
	 * another stack, so it gets a stack of its own). */
	return (1ULL << 63) | ((uint64_t)(goid != 0) << 62) | ((uint64_t)(context & ALT_CONTEXT) << 44) |
	       ((uint64_t)(pid & 0x3fffff) << 22) | (tid & 0x3fffff);
}

static uint64_t thread_key(const struct ct_rec_event *ev)
{
	return make_thread_key(ev->pid, ev->tid, ev->goid, (ev->flags & CT_EV_SYSSTACK) != 0, 0);
}

uint64_t ct_call_thread_key(const struct ct_call *c)
{
	uint64_t k = make_thread_key(c->pid, c->tid, c->goid, c->sysstack, c->context);
	/* the program a process exec'd has goroutine 1 and thread PID again */
	return c->image ? k ^ hash64(c->image) : k;
}

uint64_t ct_call_nest_key(const struct ct_call *c)
{
	uint64_t k = make_thread_key(c->pid, c->tid, c->goid, false, c->context);
	return c->image ? k ^ hash64(c->image) : k;
}

static uint32_t image_of(const struct ct_recon *r, uint32_t pid)
{
	return (uint32_t)((uintptr_t)map_get((struct ct_map *)&r->images, pid) >> 1);
}

/* A call of PID's current program was seen: its next exec starts another
 * image.  (The exec of the command record launched, or of a child that
 * forked only to exec, is no new image: nothing ran before it.) */
static void image_ran(struct ct_recon *r, uint32_t pid)
{
	void **slot = map_slot(&r->images, pid, true);
	*slot = (void *)((uintptr_t)*slot | 1);
}

static void image_exec(struct ct_recon *r, uint32_t pid)
{
	uintptr_t v = (uintptr_t)map_get(&r->images, pid);
	if (v & 1)
		map_put(&r->images, pid, (void *)(((v >> 1) + 1) << 1));
}

/* Measured time TS on S's corrected clock: minus the cost of the hits
 * before it on S and PRE, the part of its own hit before the clock read
 * (negative: the end of the stack's last hit was priced above what it
 * took); never before the stack's previous time.  corrected_time also
 * moves the clock there, and sets s->shift for it. */
static uint64_t on_clock(const struct stack *s, uint64_t ts, int64_t pre)
{
	/* a damaged file's times may be anything: saturate, never overflow */
	int64_t v;
	if (__builtin_sub_overflow((int64_t)ts, (int64_t)s->cost, &v) || __builtin_sub_overflow(v, pre, &v))
		v = (int64_t)s->last;
	if (v < (int64_t)s->last)
		v = (int64_t)s->last;
	return (uint64_t)v;
}

static uint64_t corrected_time(struct stack *s, uint64_t ts, int64_t pre)
{
	uint64_t v = on_clock(s, ts, pre);
	s->last = v;
	s->shift = ts - v;
	return v;
}

/* What the hit of EV cost (may be below nothing: the end of the last hit
 * POST_LEFT priced was dearer than this says it was), and in PRE the part
 * before its clock read.  With the hits of its thread since its previous
 * event that sent none (ct_event.silent, weighed in emulated hits' worth):
 * all before it. */
static int64_t hit_cost(const struct ct_recon *r, const struct ct_rec_event *ev, uint64_t post_left, int64_t *pre)
{
	*pre = 0;
	if (!r->costs.ok || ev->site >= r->nsites)
		return 0;
	enum ct_hit_class k = r->site_class[ev->site];
	int64_t silent = ev->silent ? (int64_t)((uint64_t)ev->silent * r->hit_ns[CT_HIT_EMULATED] / CT_SILENT_UNIT) : 0;
	/* an event sent later than its hit (an entry at its call's return,
	 * --min-duration): the hit sent nothing then, and was priced with the
	 * thread's next event (files since version 16) */
	if ((ev->flags & CT_EV_DELAYED) && r->delayed_were_silent) {
		*pre = silent;
		return silent;
	}
	/* What the BPF programs took beyond the calibration's before its
	 * clock read: its own hit's start, and the ends of the hits since the
	 * thread's last event (ct_event.extra_ns).  Less, as low as the start
	 * and the stack's last hit's end were priced together, no lower: a
	 * hit capturing a register or two takes ~200 ns less than the
	 * calibration's capture of a string (the price of capturing values),
	 * which the next event's extra_ns says (a floor at this hit's start
	 * alone left leaves that took nothing at ~150 ns). */
	int64_t extra = ev->extra_ns, floor = -(int64_t)(r->pre_ns[k] + post_left);
	if (extra < floor)
		extra = floor;
	*pre = (int64_t)r->pre_ns[k] + extra + silent;
	return (int64_t)r->hit_ns[k] + extra + silent + (ev->payload_len ? (int64_t)r->costs.args_ns : 0);
}

/* EV's hit on stack S: its time on S's corrected clock, and its cost on
 * S's clock from then on. */
static uint64_t charge_hit(const struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev)
{
	int64_t pre, cost = hit_cost(r, ev, s->post_left, &pre);
	uint64_t at = corrected_time(s, ev->ts, pre);
	s->cost = cost >= 0 || (uint64_t)-cost < s->cost ? s->cost + (uint64_t)cost : 0;
	s->post_left = cost > pre ? (uint64_t)(cost - pre) : 0;
	return at;
}

/* The one integer word the FETCH of SITE describes in PAYLOAD (compact, LEN
 * bytes), the first of its first value; false if there is none or it was
 * not read. */
static bool result_word(const struct ct_recon *r, uint32_t site, const uint8_t *payload, uint32_t len, uint64_t *out)
{
	const struct ct_site_fetch *f = r->trace && site < r->trace->nsites && r->trace->fetch ? r->trace->fetch[site] : NULL;
	if (!f || !f->nvals || f->vals[0].npieces != 1 || f->vals[0].pieces[0].kind != CT_PIECE_REG ||
	    f->vals[0].pieces[0].size != 8)
		return false;
	uint8_t buf[CT_MAX_PAYLOAD];
	size_t n = ct_fetch_expand(&f->prog, payload, len, buf, sizeof(buf));
	const uint8_t *b = n ? ct_val_piece_bytes(&f->vals[0].pieces[0], buf, n, 0, 8) : NULL;
	if (!b)
		return false;
	memcpy(out, b, 8);
	return true;
}

/* Frames IDX+1..M end with frame IDX at EV: a call in tail position among
 * them whose result is its caller's less the one of the call just before
 * (CT_SITE_TAILDIFF: the caller returned their sum) gets it, outermost
 * first, as each needs its caller's. */
static void derive_tail_results(struct ct_recon *r, struct stack *s, size_t idx, size_t m,
				const struct ct_rec_event *ev)
{
	uint64_t word = 0;
	bool have = r->tail_diff_of && ev && (ev->kind == CT_SITE_RET || ev->kind == CT_SITE_RETSITE) && ev->site < r->nsites &&
		    r->sites[ev->site].func == s->f.v[idx].c.func && ev->payload_len &&
		    !(s->f.v[idx].tailpos && ev->kind == CT_SITE_RETSITE) &&
		    result_word(r, ev->site, ev->payload, ev->payload_len, &word);
	for (size_t k = idx + 1; k <= m; k++) {
		struct frame *f = &s->f.v[k], *caller = &s->f.v[k - 1];
		uint32_t d = have && f->tailpos && f->c.entry_site < r->nsites ? r->tail_diff_of[f->c.entry_site] : 0;
		f->derived_site = UINT32_MAX;
		/* the caller's last call returned at this call's instruction */
		if (!d || caller->prev_exit >= r->nsites ||
		    r->sites[caller->prev_exit].addr != r->sites[f->c.entry_site].addr) {
			have = false;
			continue;
		}
		f->derived_site = d - 1;
		f->derived = word - caller->prev_word;
		word = f->derived;
	}
}

/* pop's STATUS for a call that ends UNOBSERVED at TS without having ended
 * before TS: it went on past its tail jump into untraced code (TS is that
 * jump), or it may have been running still (its thread's or the trace's
 * end).  Plain CT_CALL_UNOBSERVED is a call over before TS (end_bound):
 * TS is the time of a later event of its goroutine/thread that showed it
 * over -- one not deeper, one whose hit found its return address slot
 * overwritten, a shallower call's exit -- and that event's hit came after
 * the call's return in the goroutine's own order.  Its time is after it
 * too: bpf_ktime_get_ns is CLOCK_MONOTONIC, one clock for every CPU, so
 * a goroutine that moved to another CPU (or thread) in between reads a
 * later time there (the move goes through the scheduler's locks, after
 * the return); the events of one goroutine/thread come in the order of
 * its hits (one ring buffer, each hit's event written within the hit) and
 * the corrected clock never goes back (corrected_time).  Corrected, the
 * bound is the event's corrected time: the hits in the window, inside the
 * call or after its return, are taken out as if the call had ended there,
 * so the bound stays above the call's corrected duration as long as the
 * calibration does not overestimate them; raw_exit is the strict bound. */
#define UNOBSERVED_UNBOUNDED (CT_CALL_UNOBSERVED | 0x80)

static void pop(struct ct_recon *r, struct stack *s, uint8_t status, uint64_t ts, uint32_t tid,
		const struct ct_rec_event *ev)
{
	if (s->f.v[s->f.n - 1].waiting)
		report_waiting(r, s);
	struct frame *f = &s->f.v[--s->f.n];
	/* Its RET passed (CT_EV_INTERIM_PASS): it returned then, whatever
	 * ends it now -- a shallower call's end, its thread's -- without the
	 * results its exit probe was to read (that probe saw none of it: one
	 * of a call site found while it ran, in tail position there). */
	if (f->ret_passed_ts && status != CT_CALL_RETURNED) {
		status = CT_CALL_RETURNED;
		ts = f->ret_passed_ts;
		ev = NULL;
	}
	bool unbounded = status == UNOBSERVED_UNBOUNDED;
	if (unbounded)
		status = CT_CALL_UNOBSERVED;
	s->no_exit_open -= f->no_exit;
	s->ret_passed_open -= f->ret_passed_ts != 0;
	/* entered before events were lost: not a panic or longjmp we can
	 * vouch for, nor that the process ended inside it (it may have
	 * returned among the lost events) */
	if ((status == CT_CALL_UNWOUND || status == CT_CALL_EXITED) && f->losses != r->losses)
		status = CT_CALL_LOST;
	/* entered while the probes of a running process went in: its exit
	 * probe, or the interim RET or caller's exit that would have seen it
	 * end, may not have been live yet (CT_PROC_PROBES_IN) */
	uint64_t probes_in = (uint64_t)(uintptr_t)map_get(&r->probes_in, s->pid);
	if (status == CT_CALL_UNWOUND && f->c.raw_entry < probes_in)
		status = CT_CALL_UNOBSERVED;
	if (status == CT_CALL_UNWOUND && f->tailpos) {
		/* a call in tail position ends with the call whose exit closes
		 * it: if that one began before a loss, the caller between them
		 * may have been lost (its entry), and with it that end */
		size_t i = s->f.n;
		while (i > 0 && s->f.v[i - 1].tailpos)
			i--;
		if (i > 0 && s->f.v[i - 1].losses != r->losses)
			status = CT_CALL_LOST;
		/* no caller open below it (entered before the trace began: -p
		 * attached inside it), or only one entered while the probes
		 * went in, which may have ended unseen long before (its caller
		 * never entered either), and the exit of a shallower call
		 * here: that caller ended, returned or unwound, and the call
		 * ended with it -- how, the trace does not say */
		else if ((i == 0 || s->f.v[i - 1].c.raw_entry < probes_in) && ev &&
			 (ev->kind == CT_SITE_RET || ev->kind == CT_SITE_RETSITE))
			status = CT_CALL_UNOBSERVED;
	}
	f->c.status = status;
	f->c.end_bound = status == CT_CALL_UNOBSERVED && !unbounded;
	f->c.ts_exit = ts;
	f->c.raw_exit = ts + s->shift;
	f->c.exit_tid = tid;
	if (r->parks && status == CT_CALL_RETURNED && is_gopark(r, f->c.func))
		parked(s, f);
	f->c.leaf = !f->has_children;
	/* Only the frame that executed the RET (or whose call returned to the
	 * exit probe) holds the results; tail callers it replaced return
	 * without them, and their exit site is none (its plan describes the
	 * callee's results). */
	/* (a call in tail position has no exit probe of its own: one of its
	 * function closing it is its caller's, a recursive call's) */
	bool own = status == CT_CALL_RETURNED && ev && (ev->kind == CT_SITE_RET || ev->kind == CT_SITE_RETSITE) &&
		   ev->site < r->nsites && r->sites[ev->site].func == f->c.func &&
		   !(f->tailpos && ev->kind == CT_SITE_RETSITE) && !f->replaced;
	/* (a tail jump returns its callee's values as they are: the exit
	 * probe after the replaced call reads the chain's last function's) */
	own |= status == CT_CALL_RETURNED && ev && ev->kind == CT_SITE_RETSITE && f->takes_exit;
	f->c.exit_site = own ? ev->site : UINT32_MAX;
	bool own_retsite = own && ev->kind == CT_SITE_RETSITE;
	/* A call in tail position whose caller returned its results as they
	 * are: a role of the caller's exit probe describes them. */
	if (!own && status == CT_CALL_RETURNED && ev && ev->kind == CT_SITE_RETSITE && f->tailpos)
		for (uint32_t k = ev->site, n = 0; k < r->nsites && n < 8 && !own; k = r->sites[k].next, n++)
			if (r->sites[k].kind == CT_SITE_TAILRES && r->sites[k].call_site == f->c.entry_site &&
			    r->sites[k].func == f->c.func) {
				own = true;
				f->c.exit_site = k;
			}
	if (own && ev->payload_len) {
		f->c.ret = ev->payload;
		f->c.ret_len = ev->payload_len;
	} else if (!own && status == CT_CALL_RETURNED && f->derived_site != UINT32_MAX) {
		f->c.exit_site = f->derived_site; /* its caller's result less its sibling's */
		f->c.ret = (const uint8_t *)&f->derived;
		f->c.ret_len = sizeof(f->derived);
	} else {
		f->c.ret = NULL;
		f->c.ret_len = 0;
	}
	if (s->f.n) { /* what the next call in tail position may need of this one */
		struct frame *parent = &s->f.v[s->f.n - 1];
		parent->prev_exit = UINT32_MAX;
		/* (only a TAILDIFF site needs it: most traces have none) */
		if (own_retsite && f->c.ret && r->tail_diff_of &&
		    result_word(r, f->c.exit_site, f->c.ret, f->c.ret_len, &parent->prev_word))
			parent->prev_exit = f->c.exit_site;
	}
	switch (status) {
	case CT_CALL_RETURNED:
		r->st.returned++;
		break;
	case CT_CALL_UNWOUND:
		r->st.unwound++;
		break;
	case CT_CALL_LOST:
		r->st.cut_by_loss++;
		break;
	case CT_CALL_EXITED:
		r->st.exited++;
		break;
	case CT_CALL_UNOBSERVED:
		r->st.unobserved++;
		break;
	default:
		r->st.unfinished++;
	}
	report(r, s, f, true);
	args_release(r, f);
	free(f->spill);
	f->spill = NULL;
}

/* Does frame I end when its parent does (its call was in tail position, or
 * it was entered by a tail call that replaced its parent)? */
static bool ends_with_parent(const struct stack *s, size_t i)
{
	return s->f.v[i].tailpos || s->f.v[i].c.tail;
}

/* Were FUNC's interim RETs probed at (raw) time TS?  Then a call of it
 * without an exit probe that did not end at one of them had not returned
 * (a `main` that called exit()): they end every such call, tracked by the
 * probes (the innermost CT_UNOBSERVED_DEPTH of its thread) or not (the
 * RET looks the return address up again: calltrace.bpf.c interim_ends). */
static bool interim_in(const struct ct_recon *r, uint32_t func, uint64_t ts)
{
	return func < r->interim_until.n && ts < r->interim_until.v[func];
}

/* Frame IDX returns (at EV): the frames above it that end with it return
 * with it, any other frame above it was unwound. */
static void return_frame(struct ct_recon *r, struct stack *s, size_t idx, uint64_t ts, uint32_t tid,
			 const struct ct_rec_event *ev)
{
	size_t m = idx;
	while (m + 1 < s->f.n && ends_with_parent(s, m + 1))
		m++;
	while (s->f.n > m + 1)
		pop(r, s, CT_CALL_UNWOUND, ts, tid, NULL);
	r->st.returned_with_caller += m - idx;
	if (ev && ev->kind == CT_SITE_RETSITE && ev->site < r->nsites) {
		size_t top = idx;
		while (top + 1 <= m && s->f.v[top + 1].c.key == s->f.v[idx].c.key && s->f.v[top + 1].c.tail)
			top++;
		bool group = false; /* (the exit of a call of the chain's) */
		for (size_t k = idx; k < top && !group; k++)
			group = r->sites[ev->site].func == s->f.v[k].c.func;
		s->f.v[top].takes_exit = group;
	}
	derive_tail_results(r, s, idx, m, ev);
	if (ev && ev->kind == CT_SITE_RET)
		r->st.returned_at_ret++;
	else if (ev && ev->kind == CT_SITE_RETSITE) {
		r->st.returned_at_retsite++;
		r->st.returned_at_stepped += (r->sites[ev->site].flags & CT_SITEF_STEPPED) != 0;
		r->st.returned_at_dynamic += (r->sites[ev->site].flags & CT_SITEF_DYNAMIC) != 0;
	}
	while (s->f.n > idx)
		pop(r, s, CT_CALL_RETURNED, ts, tid, ev);
}

/* The lowest frame of the group at KEY on top of the stack (a call and the
 * tail calls that replaced it share its key), once deeper ones are set
 * aside; -1 if no frame has KEY. */
static long frame_at(const struct stack *s, uint64_t key)
{
	long i = (long)s->f.n - 1;
	while (i >= 0 && s->f.v[i].c.key > key)
		i--;
	if (i < 0 || s->f.v[i].c.key != key)
		return -1;
	while (i > 0 && s->f.v[i - 1].c.key == key)
		i--;
	return i;
}

/* Pops the top frame and the tail callers it replaced (same key). */
static void pop_tail_chain(struct ct_recon *r, struct stack *s, uint8_t status, uint64_t ts, uint32_t tid,
			   const struct ct_rec_event *ev)
{
	uint64_t key = s->f.v[s->f.n - 1].c.key;
	if (status == CT_CALL_RETURNED) {
		long i = frame_at(s, key);
		return_frame(r, s, (size_t)i, ts, tid, ev);
		return;
	}
	do
		pop(r, s, status, ts, tid, ev);
	while (s->f.n && s->f.v[s->f.n - 1].c.key == key);
}

/* Does role RS of a hit apply, the way its jump went (EV_FLAGS)?  A
 * conditional tail jump that went on in its function is no tail call; a
 * call seen ahead on the other way of the jump was not made (its FALL:
 * made when the jump does not go). */
static bool on_its_way(const struct ct_file_site *rs, uint16_t ev_flags)
{
	bool went = !(ev_flags & CT_EV_NOT_TAKEN);
	if (rs->kind == CT_SITE_TAIL)
		return went;
	if (rs->kind == CT_SITE_CALL && (rs->flags & CT_SITEF_COND))
		return went != !!(rs->flags & CT_SITEF_FALL);
	return true;
}

/* Was a call entered at SITE made by the call instruction of CALL_SITE (one
 * CALL site per callee: the runtime's shared ones have one exit probe)? */
static bool same_call(const struct ct_recon *r, uint32_t site, uint32_t call_site)
{
	return site == call_site || (site < r->nsites && call_site < r->nsites && r->sites[site].kind == CT_SITE_CALL &&
				     r->sites[call_site].kind == CT_SITE_CALL && r->sites[site].addr == r->sites[call_site].addr &&
				     !((r->sites[site].flags | r->sites[call_site].flags) & CT_SITEF_AHEAD));
}

/* Is EV the exit of the frame the top frames end with (calls in tail
 * position in it, tail calls), which return_frame closes with them? */
static bool closes_its_caller(const struct ct_recon *r, const struct stack *s, const struct ct_rec_event *ev)
{
	long i = frame_at(s, ev->key);
	if (i < 0 || (ev->kind != CT_SITE_RET && (ev->kind != CT_SITE_RETSITE ||
						   !same_call(r, s->f.v[i].c.entry_site, r->sites[ev->site].call_site))))
		return false;
	for (size_t m = (size_t)i + 1; m < s->f.n; m++)
		if (!ends_with_parent(s, m))
			return false;
	return (size_t)i + 1 < s->f.n;
}

/* A frame left by a tail jump goes on in its target: a traced target enters
 * at the same key (a tail call); untraced code returns to the caller, where
 * a return site closes the frame, and whatever it calls meanwhile is deeper;
 * a RET at the key is the target's, whose entry record-time limits cut
 * (--max-depth): the frame returns there; a call in tail position (no exit
 * probe of its own) returns with its caller, at the caller's exit.  Any
 * other event means that never happened: it ended at the jump. */
/* Is EV a function's entry seen at the function itself: its ENTRY, its
 * CHECK, or the CALL event a CHECK sends for a call site it knows?  (A
 * tail jump to an address-taken function -- a C++ `return p->f()` -- is
 * seen at its CHECK, whose return address is that of the jumping
 * function's call: the CHECK may have it planned as a call site.) */
static bool callee_entry(const struct ct_rec_event *ev, const struct ct_file_site *site)
{
	return ev->kind == CT_SITE_ENTRY || ev->kind == CT_SITE_CHECK ||
	       (ev->kind == CT_SITE_CALL && (site->flags & CT_SITEF_ATCHECK));
}

static void settle_tail(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev)
{
	if (!s->f.n)
		return;
	struct frame *top = &s->f.v[s->f.n - 1];
	if (!top->tail_pending || ev->key > top->c.key)
		return;
	const struct ct_file_site *site = &r->sites[ev->site];
	if (ev->key == top->c.key &&
	    ((callee_entry(ev, site) && (site->func == top->tail_target || top->tail_any)) ||
	     ev->kind == CT_SITE_RETSITE || ev->kind == CT_SITE_RET))
		return;
	if (closes_its_caller(r, s, ev))
		return; /* the code it jumped to returned to its caller, which returns now */
	pop_tail_chain(r, s, CT_CALL_RETURNED, top->tail_ts, ev->tid, NULL);
}

/* (EV goes to pop: the exit of a call whose caller the trace never entered) */
static void unwind_deeper(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev)
{
	while (s->f.n && s->f.v[s->f.n - 1].c.key > ev->key)
		pop(r, s, CT_CALL_UNWOUND, ev->ts, ev->tid, ev);
}

/* How frame F, a call without an exit probe that an event at (corrected)
 * time TS of S shows over, ended: its function's interim RETs were in all
 * along (interim_in), and they end every such call that returns, so it
 * never returned -- a function an untraced caller calls never to return,
 * Go's mcall(park_m), whose frame on g0 is left when it switches to another
 * goroutine: UNWOUND, as with --exit=ret, whose RETs see the same; else
 * when it ended is not known: UNOBSERVED (also after its tail jump: it may
 * have returned through the jump's target). */
static uint8_t unobserved_end(const struct ct_recon *r, const struct stack *s, const struct frame *f, uint64_t ts)
{
	return interim_in(r, f->c.func, ts + s->shift) && !f->tail_pending ? CT_CALL_UNWOUND : CT_CALL_UNOBSERVED;
}

/* A call entered from a call site without an exit probe (CHECK: nobody
 * planned it, or its probe was not in yet) ends at the first event of its
 * goroutine/thread that is not deeper: when exactly is not known, so it is
 * UNOBSERVED, never RETURNED (unwound where it surely did not return:
 * unobserved_end); and so are the calls in tail position in it (they end
 * with it), which may be open above it then. */
static void close_unplanned(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev)
{
	while (s->no_exit_open && s->f.n) {
		size_t i = s->f.n - 1;
		while (i > 0 && !s->f.v[i].no_exit && s->f.v[i].tailpos)
			i--;
		struct frame *nf = &s->f.v[i];
		if (!nf->no_exit || nf->c.key < ev->key)
			return;
		/* its own RET, probed once a caller of it no exit probe can
		 * watch was found (ct_plan_rets_from_now): it returns there */
		if (ev->kind == CT_SITE_RET && nf->c.key == ev->key && r->sites[ev->site].func == nf->c.func)
			return;
		if (i == s->f.n - 1) {
			/* its own tail jump, or morestack re-running its entry
			 * (after its RESTART: a CHECK without one is the next
			 * call from that call site, back to back), which the
			 * CHECK sends as a CALL once that site is planned */
			if (nf->c.key == ev->key && r->sites[ev->site].func == nf->c.func &&
			    (ev->kind == CT_SITE_TAIL || ev->kind == CT_SITE_RESTART ||
			     ((ev->kind == CT_SITE_CHECK || ev->kind == CT_SITE_CALL) && nf->restart_pending)))
				return;
			if (nf->c.key == ev->key && nf->tail_pending && ev->kind == CT_SITE_ENTRY &&
			    (r->sites[ev->site].func == nf->tail_target || nf->tail_any))
				return; /* the tail call it jumped to */
		}
		uint8_t status = unobserved_end(r, s, nf, ev->ts);
		while (s->f.n > i)
			pop(r, s, status, ev->ts, ev->tid, NULL);
	}
}

/* Is EV's CT_EV_UNOBSERVED_DONE the kernel side's frame pointer walk
 * (go_call_on_stack) misled by a call the code never made?  A signal's
 * handler makes the goroutine it preempts call runtime.asyncPreempt where
 * it runs, which calls asyncPreempt2: in a leaf, or in a function's first
 * instructions, that has no frame record (yet), and the walk from there
 * takes the innermost call without an exit probe for gone.  Where that
 * call's function has its interim RETs in, which would have ended it had
 * it returned, it is the one preempted: it goes on (its RET ends it). */
static bool preempted_inside(const struct ct_recon *r, const struct stack *s, const struct ct_rec_event *ev)
{
	if (ev->site >= r->nsites || r->sites[ev->site].kind != CT_SITE_ENTRY)
		return false;
	bool preempt = false;
	for (size_t k = 0; k < r->preempt_funcs.n && !preempt; k++)
		preempt = r->preempt_funcs.v[k] == r->sites[ev->site].func;
	size_t i = s->f.n;
	while (preempt && i > 0 && !s->f.v[i - 1].no_exit)
		i--;
	return preempt && i > 0 && interim_in(r, s->f.v[i - 1].c.func, ev->ts);
}

/* The kernel side saw the return address slot of the innermost call
 * without an exit probe hold something else (CT_EV_UNOBSERVED_DONE): that
 * call has ended, however deeper this event is, and so has what was open
 * inside it. */
static void end_unobserved(struct ct_recon *r, struct stack *s, uint64_t ts, uint32_t tid)
{
	size_t i = s->f.n;
	while (i > 0 && !s->f.v[i - 1].no_exit)
		i--;
	uint8_t status = i > 0 ? unobserved_end(r, s, &s->f.v[i - 1], ts) : CT_CALL_UNOBSERVED;
	while (i > 0 && s->f.n >= i)
		pop(r, s, status, ts, tid, NULL);
}

static void push_frame(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev, uint32_t func, bool tail)
{
	if (s->f.n && s->f.v[s->f.n - 1].waiting)
		report_waiting(r, s);
	/* Most goroutines/threads have a frame or two open: start with one
	 * (16 each took 2.4 GB for a million threads) and double. */
	if (s->f.n == s->f.cap) {
		s->f.cap = s->f.cap ? 2 * s->f.cap : 1;
		s->f.v = xrealloc(s->f.v, s->f.cap * sizeof(*s->f.v));
	}
	if (s->f.n)
		s->f.v[s->f.n - 1].has_children = true;
	/* made in place: a struct frame is ~300 bytes, and building it aside
	 * and copying it in was ~5% of report's instructions */
	struct frame *f = &s->f.v[s->f.n++];
	_Static_assert(sizeof(*f) % 16 == 0, "zero16n");
	zero16n(f, sizeof(*f));
	f->prev_exit = f->derived_site = UINT32_MAX;
	f->c.seq = r->seq++;
	f->c.func = func;
	f->c.ts_entry = ev->ts;
	f->c.raw_entry = ev->ts + s->shift;
	f->c.pid = ev->pid;
	f->c.tid = ev->tid;
	f->c.goid = ev->goid;
	if (!s->ran) { /* once per stack: stacks end at an exec */
		s->image = image_of(r, ev->pid);
		image_ran(r, ev->pid);
		s->ran = true;
	}
	f->c.image = s->image;
	f->c.key = ev->key;
	f->c.depth = s->depth_base + (uint32_t)(s->f.n - 1);
	f->c.context = s->context;
	f->c.tail = tail;
	if (tail && s->f.n >= 2)
		s->f.v[s->f.n - 2].replaced = true;
	f->c.sysstack = (ev->flags & CT_EV_SYSSTACK) != 0;
	f->c.entry_site = ev->site;
	f->c.exit_site = UINT32_MAX;
	/* from a call site not known in advance: at a CHECK (no exit probe), or
	 * at one found while recording (its exit probe added then) */
	uint8_t sf = r->sites[ev->site].flags;
	/* (a CALL site at an indirect call instruction, planned or found
	 * while recording, is a call through an address too) */
	bool fresh = ev->kind == CT_SITE_CHECK || (ev->kind == CT_SITE_CALL && (sf & (CT_SITEF_DYNAMIC | CT_SITEF_INDIRECT)));
	f->c.unplanned = fresh && !(sf & CT_SITEF_INDIRECT);
	f->c.indirect = fresh && (sf & CT_SITEF_INDIRECT);
	f->no_exit = ev->kind == CT_SITE_CHECK;
	s->no_exit_open += f->no_exit;
	f->tailpos = ev->kind == CT_SITE_CALL && (r->sites[ev->site].flags & CT_SITEF_TAILPOS);
	f->losses = r->losses;
	void *spill = map_get(&r->spill_of, (uint64_t)func + 1);
	f->c.spill_site = spill ? (uint32_t)((uintptr_t)spill - 1) : UINT32_MAX;
	f->waiting = spill != NULL;
	if (ev->payload_len) {
		f->args = args_alloc(r, ev->payload, ev->payload_len);
		f->c.args = f->args;
		f->c.args_len = ev->payload_len;
	}
	r->st.calls++;
	r->st.unplanned += f->c.unplanned;
	r->st.indirect += f->c.indirect;
	if (f->c.depth + 1 > r->st.max_depth)
		r->st.max_depth = f->c.depth + 1;
	if (f->waiting)
		CT_VEC_PUSH(r->waiting, s); /* reported with its SPILL hit (settle_waiting) */
	else
		report(r, s, f, false);
}

/* Calls waiting for their SPILL hit (arguments passed in SSE registers, read
 * where the prologue stored them), at an event of EV's thread or of the
 * call's goroutine (NULL: every one): EV is the hit of the one it completes
 * (same function, same frame key: it is merged into it); any other such
 * event means the call went on without getting there (a signal, a
 * longjmp, a lost event, a goroutine preempted and moved to another
 * thread): it is reported without them.  A waiting call is its stack's top
 * frame: each event of its thread or goroutine settles it first, and a
 * push or pop on its stack (report_waiting). */
static void settle_waiting(struct ct_recon *r, const struct ct_rec_event *ev)
{
	bool used = false;
	uint64_t evk = ev ? thread_key(ev) : 0;
	for (size_t i = 0; i < r->waiting.n;) {
		struct stack *s = r->waiting.v[i];
		struct frame *f = &s->f.v[s->f.n - 1];
		if (ev && (f->c.pid != ev->pid || (f->c.tid != ev->tid && s->key != evk))) {
			i++;
			continue;
		}
		if (ev && !used && ev->kind == CT_SITE_SPILL && ev->site == f->c.spill_site &&
		    ev->key + (uint64_t)(int64_t)r->sites[ev->site].key_adj == f->c.key) {
			used = true;
			if (ev->payload_len) {
				f->spill = xmalloc(ev->payload_len);
				memcpy(f->spill, ev->payload, ev->payload_len);
				f->c.spill = f->spill;
				f->c.spill_len = ev->payload_len;
			}
		}
		f->waiting = false;
		r->waiting.v[i] = r->waiting.v[--r->waiting.n];
		report(r, s, f, false);
	}
}

/* Does FROM's code run on into TO's entry (CT_FN_FALLS: no exit ends it)?
 * TO's entry at FROM's key is then FROM going on there, as a tail call. */
static bool runs_into(const struct ct_recon *r, uint32_t from, uint32_t to)
{
	return r->funcs && from < r->nfuncs && to < r->nfuncs && ct_file_func_runs_into(&r->funcs[from], &r->funcs[to]);
}

/* Is another Go function FUNC entered at open frame TOP's key TOP going on
 * there, a tail call whose jump was not seen?  Not where TOP has no tail
 * jump to make, on a system stack: every mcall starts g0 again at its top,
 * and a function it called that never returns (runtime.park_m schedules
 * another goroutine) is left there, not gone on in the next one. */
static bool go_tail_unseen(const struct ct_recon *r, const struct frame *top, uint32_t func)
{
	if (!is_go_code(r, func) || top->c.func == func || top->losses != r->losses)
		return false;
	return !top->c.sysstack || (top->c.func < r->jumps_out.n && r->jumps_out.v[top->c.func]);
}

/* Is the entry EV on a system stack, less than 16 bytes deeper than the
 * Go function of open frame TOP (not assembly), no call of it?  A Go
 * function that calls saved its BP below its return address: its callee's
 * frame key is at least 16 deeper.  mcall starts g0 afresh 8 bytes below
 * where morestack called runtime.newstack, which never returns (gogo
 * resumes the goroutine): mcall's callee (park_m, goexit0, recovery, for
 * whichever goroutine) nested under that stale frame. */
static bool fresh_on_sysstack(const struct ct_recon *r, const struct frame *top, const struct ct_rec_event *ev)
{
	if (!top->c.sysstack || !(ev->flags & CT_EV_SYSSTACK) || ev->key <= top->c.key || ev->key - top->c.key >= 16)
		return false;
	return r->funcs && top->c.func < r->nfuncs && ct_file_func_is_go(&r->funcs[top->c.func]) &&
	       !ct_file_func_is_asm(&r->funcs[top->c.func]);
}

/* Callee side: the function's own entry (ENTRY), or a call from a site
 * nobody planned (CHECK). */
static void on_entry(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev, uint32_t func)
{
	bool tail = false;
	unwind_deeper(r, s, ev);
	if (s->f.n) {
		struct frame *top = &s->f.v[s->f.n - 1];
		if (fresh_on_sysstack(r, top, ev))
			pop_tail_chain(r, s, CT_CALL_UNWOUND, ev->ts, ev->tid, NULL);
		top = s->f.n ? &s->f.v[s->f.n - 1] : NULL;
		if (top && top->c.key == ev->key) {
			if (top->c.func == func && !top->tail_pending && top->restart_pending) {
				/* morestack re-ran the entry: same call. */
				top->restart_pending = false;
				r->st.restarts++;
				return;
			}
			if (top->tail_pending || runs_into(r, top->c.func, func) || go_tail_unseen(r, top, func)) {
				tail = true;
				top->tail_pending = false;
				r->st.tails++;
			} else {
				/* a new call where one was open: that one, and the
				 * tail callers it replaced, were unwound (longjmp) */
				pop_tail_chain(r, s, CT_CALL_UNWOUND, ev->ts, ev->tid, NULL);
			}
		}
	}
	push_frame(r, s, ev, func, tail);
}

/* Caller side: the call instruction.  A frame still open at the callee's
 * key (or deeper) is a call whose end was never seen: unwound. */
static void on_call(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev, uint32_t func)
{
	if (s->f.n) {
		struct frame *top = &s->f.v[s->f.n - 1];
		if (top->restart_pending && top->c.key == ev->key && top->c.func == func &&
		    (top->c.entry_site == ev->site || top->no_exit)) {
			/* morestack re-ran the callee's entry, whose CHECK
			 * sends its calls (CT_SITEF_ATCHECK): same call.  One
			 * entered at the CHECK (its call site without an exit
			 * probe then) has it now: it returns there. */
			top->restart_pending = false;
			r->st.restarts++;
			if (top->no_exit) {
				top->no_exit = false;
				s->no_exit_open--;
				top->c.entry_site = ev->site;
				top->tailpos = (r->sites[ev->site].flags & CT_SITEF_TAILPOS) != 0;
			}
			return;
		}
	}
	/* sent by the CHECK at the entry of a function the open call at the
	 * key jumped to: a tail call, as an entry there is (on_entry) */
	if (s->f.n && callee_entry(ev, &r->sites[ev->site])) {
		struct frame *top = &s->f.v[s->f.n - 1];
		/* ... and the call a wrapper made last, keyed as the wrapper's
		 * frame (via), whose call instruction is the one the open call
		 * at the key came from: the open call went on into that
		 * wrapper (Go 1.26's reflectcall jumps to runtime.call16,
		 * which calls callRet last) -- its exit probe would have seen
		 * it end before that instruction ran again */
		if (top->c.key == ev->key && (top->tail_pending ||
					      (!top->no_exit && top->c.func != func && top->losses == r->losses &&
					       top->c.entry_site != ev->site && same_call(r, top->c.entry_site, ev->site)))) {
			top->tail_pending = false;
			r->st.tails++;
			push_frame(r, s, ev, func, true);
			return;
		}
	}
	while (s->f.n && s->f.v[s->f.n - 1].c.key >= ev->key)
		pop(r, s, CT_CALL_UNWOUND, ev->ts, ev->tid, NULL);
	push_frame(r, s, ev, func, false);
}

/* Is RET EV the return of frame I or of a tail call at its key? */
static bool returns_at(const struct ct_recon *r, const struct stack *s, size_t i, const struct ct_rec_event *ev)
{
	for (size_t k = i; k < s->f.n && s->f.v[k].c.key == ev->key; k++)
		if (s->f.v[k].c.func == r->sites[ev->site].func)
			return true;
	return false;
}

static void on_ret(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev)
{
	long i = frame_at(s, ev->key);
	/* An interim RET that could not tell whether the call had an exit
	 * probe (one was added while it ran): it ends here if it had none;
	 * one that has is left to that probe, which reads its results. */
	if (ev->flags & CT_EV_INTERIM_PASS) {
		if (i >= 0 && s->f.v[i].no_exit)
			return_frame(r, s, (size_t)i, ev->ts, ev->tid, ev);
		else if (i >= 0 && !s->f.v[i].ret_passed_ts && returns_at(r, s, (size_t)i, ev)) {
			s->f.v[i].ret_passed_ts = ev->ts ? ev->ts : 1;
			s->ret_passed_open++;
		}
		return;
	}
	if (i < 0) {
		unwind_deeper(r, s, ev);
		r->st.unmatched_exits++;
		return;
	}
	/* The returning frame, the frames it replaced by tail calls, and the
	 * calls in tail position in it. */
	return_frame(r, s, (size_t)i, ev->ts, ev->tid, ev);
}

/* Caller side: the first probe after a call's return address.  It closes
 * that call if the call is open at the key; otherwise the caller got here
 * another way (a loop, a jump table): whatever is deeper has ended. */
static void on_retsite(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev, uint32_t call_site)
{
	long i = frame_at(s, ev->key);
	uint32_t entry = i >= 0 ? s->f.v[i].c.entry_site : UINT32_MAX;
	/* Each function found called from one call instruction while
	 * recording has its own exit probe after it; they fire one after the
	 * other, and the call's own closes it, with its results: another's is
	 * no sign of an unwinding (encoding/json's s.step(s, c)). */
	if (i >= 0 && entry != call_site && same_call(r, entry, call_site) &&
	    (r->sites[entry].flags & r->sites[call_site].flags & (CT_SITEF_DYNAMIC | CT_SITEF_INDIRECT))) {
		/* ... unless its own has no probe but rides on this one (a
		 * companion no chain names): this hit is its exit too */
		void *own = map_get(&r->riding_exit_of, (uint64_t)entry + 1);
		if (own) {
			struct ct_rec_event rv = *ev;
			rv.site = (uint32_t)((uintptr_t)own - 1);
			return_frame(r, s, (size_t)i, ev->ts, ev->tid, &rv);
		}
		return;
	}
	if (i >= 0 && same_call(r, entry, call_site)) {
		/* the last of the tail calls that replaced it may have its exit
		 * riding on this probe (its function's found there too) */
		size_t top = (size_t)i;
		while (top + 1 < s->f.n && s->f.v[top + 1].c.key == ev->key && s->f.v[top + 1].c.tail)
			top++;
		void *own = top > (size_t)i && r->sites[ev->site].func != s->f.v[top].c.func
				    ? map_get(&r->riding_exit_of, (uint64_t)s->f.v[top].c.entry_site + 1)
				    : NULL;
		struct ct_rec_event rv = *ev;
		if (own)
			rv.site = (uint32_t)((uintptr_t)own - 1);
		return_frame(r, s, (size_t)i, ev->ts, ev->tid, &rv);
		return;
	}
	/* A callee-side function's call that went on in untraced code (its
	 * tail jump) returns here, with the calls that tail-jumped to it: the
	 * group at the key (a return address found while recording is where
	 * any of them may have been called from). */
	for (long k = i; k >= 0 && k < (long)s->f.n && s->f.v[k].c.key == ev->key; k++) {
		if (s->f.v[k].c.entry_site != call_site)
			continue;
		if (call_site < r->nsites && r->sites[call_site].kind == CT_SITE_ENTRY) {
			return_frame(r, s, (size_t)i, ev->ts, ev->tid, ev);
			return;
		}
		/* A tail call's own exit, where the call it replaced returns
		 * too (both found there while recording, one probe each, in
		 * either order): it returns with the calls in tail position in
		 * it; the call it replaced waits for its own (OpenSSL's
		 * lh_OBJ_NAME_hfn_thunk jumps to obj_name_hash, which calls
		 * ossl_lh_strcasehash last: 618 of those were unwound). */
		if (s->f.v[k].c.tail) {
			return_frame(r, s, (size_t)k, ev->ts, ev->tid, ev);
			return;
		}
	}
	/* Deeper frames are over.  Those in tail position in the call open
	 * at the key (transitively) end with it, which is still open or
	 * ended unseen: when is not known -- no unwinding (a call through an
	 * address that a callee-side thunk tail-jumped on from, whose return
	 * another function's exit probe there sees). */
	size_t top = i >= 0 ? (size_t)i : s->f.n;
	while (top + 1 < s->f.n && s->f.v[top + 1].c.key == ev->key)
		top++;
	size_t m = top;
	while (top < s->f.n && m + 1 < s->f.n && ends_with_parent(s, m + 1))
		m++;
	while (s->f.n > m + 1)
		pop(r, s, CT_CALL_UNWOUND, ev->ts, ev->tid, ev);
	while (top < s->f.n && s->f.n > top + 1)
		pop(r, s, CT_CALL_UNOBSERVED, ev->ts, ev->tid, ev);
	unwind_deeper(r, s, ev);
}

static void on_tail(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev, uint32_t func,
		    uint32_t target)
{
	long i = frame_at(s, ev->key);
	if (i < 0 || s->f.v[s->f.n - 1].c.key < ev->key) {
		unwind_deeper(r, s, ev);
		r->st.unmatched_exits++;
		return;
	}
	/* the frame jumping is the top one of the group at its key */
	while (s->f.n && s->f.v[s->f.n - 1].c.key > ev->key)
		pop(r, s, CT_CALL_UNWOUND, ev->ts, ev->tid, NULL);
	struct frame *top = &s->f.v[s->f.n - 1];
	if (top->c.func != func) {
		r->st.unmatched_exits++;
		return;
	}
	/* Untraced code returns to the caller: if no probe is there (the
	 * kernel side found none at the return address, or the call came
	 * from a site without an exit probe), its end will not be seen, and
	 * the calls after it are not inside it: it is over now, unobserved. */
	bool watched = target != CT_NOFUNC || !(ev->flags & CT_EV_UNWATCHED);
	for (long k = i; watched && k < (long)s->f.n; k++)
		watched = !s->f.v[k].no_exit || target != CT_NOFUNC;
	if (!watched) {
		pop_tail_chain(r, s, UNOBSERVED_UNBOUNDED, ev->ts, ev->tid, NULL);
		return;
	}
	top->tail_pending = true;
	top->tail_target = target;
	/* Untraced code that goes on where a probe sees the call end (the
	 * kernel side found one at the return address, or the call was
	 * entered at a planned call site, whose exit probe is there) returns
	 * there: a traced function entering at the key before that is where
	 * it jumped on to (a PLT stub to a traced library's function), not
	 * the caller's next call.  Without either fact (older files, a jump
	 * no probe checks) that entry ends the call at the jump. */
	const struct frame *bottom = &s->f.v[i];
	bool sure = (ev->flags & CT_EV_WATCHED) ||
		    (!bottom->no_exit && bottom->c.entry_site < r->nsites &&
		     r->sites[bottom->c.entry_site].kind == CT_SITE_CALL);
	top->tail_any = target == CT_NOFUNC && ((r->sites[ev->site].flags & CT_SITEF_INDIRECT) || sure);
	top->tail_ts = ev->ts;
}

static void on_restart(const struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev, uint32_t func)
{
	if (!s->f.n)
		return;
	struct frame *top = &s->f.v[s->f.n - 1];
	/* A call its CHECK sent from where the untraced wrapper that made it
	 * was called (struct ct_planned_call.via) is keyed at the wrapper's
	 * frame, shallower than the callee's own by the wrapper's; its entry
	 * was seen (that CALL), so this is its restart, not an unseen call's
	 * (restic's pflag VarPF: fmt.Sprintf preempted in its prologue showed
	 * as an unwound call and a second one). */
	const struct ct_file_site *entry = top->c.entry_site < r->nsites ? &r->sites[top->c.entry_site] : NULL;
	bool via = top->c.key < ev->key && entry && entry->kind == CT_SITE_CALL &&
		   (entry->flags & (CT_SITEF_ATCHECK | CT_SITEF_DYNAMIC));
	if ((top->c.key == ev->key || via) && top->c.func == func)
		top->restart_pending = true;
}

/* A recovered panic resumes its frame at the deferreturn call: the first
 * event after the marker there (the return site that call may be, or
 * deferreturn's entry) is at the resumed frame's callee level, and every
 * frame at or below it was unwound by the panic. */
static bool resume_after_recover(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev)
{
	if (!s->recover_pending || (ev->kind != CT_SITE_RETSITE && ev->kind != CT_SITE_DEFERRET))
		return false;
	s->recover_pending = false;
	while (s->f.n && s->f.v[s->f.n - 1].c.key >= ev->key)
		pop(r, s, CT_CALL_UNWOUND, ev->ts, ev->tid, NULL);
	return true;
}

static void forget_stack(struct ct_recon *r, struct stack *s);

/* (frames still open: a stack never ended, ct_recon_free without
 * ct_recon_finish) */
static void free_stack(struct stack *s)
{
	for (size_t j = 0; j < s->f.n; j++) {
		free(s->f.v[j].args);
		free(s->f.v[j].spill);
	}
	CT_VEC_FREE(s->f);
	origin_release(s->origin);
	free(s);
}

static void thread_clock(struct stack *to, const struct stack *from);

static void flush_sched(struct ct_recon *r, struct stack *s);

static void drop_stack(struct ct_recon *r, uint64_t k, struct stack *s)
{
	flush_sched(r, s); /* (off r->sched_pending before it goes) */
	/* A signal handler's stack: its hits delayed the code it interrupted,
	 * on that code's clock now (thread_clock) -- they were left in the
	 * interrupted call's corrected time.  (A C thread's: forget_stack.) */
	if (s->go_signal)
		thread_clock(map_get(&r->stacks, s->under), s);
	recent_forget(&r->recent, s);
	r->go_signal_stacks -= s->go_signal;
	if (s->th)
		forget_stack(r, s);
	if (s->orphan) {
		for (size_t i = 0; i < r->orphans.n; i++)
			if (r->orphans.v[i] == s) {
				r->orphans.v[i] = r->orphans.v[--r->orphans.n];
				break;
			}
	} else {
		map_del(&r->stacks, k);
	}
	free_stack(s);
}

static int cmp_stack_first(const void *a, const void *b);

/* THREAD: the goroutine or thread it is a stack of (st.threads counts those). */
static struct stack *new_stack(struct ct_recon *r, uint64_t k, uint64_t thread, uint32_t pid, uint64_t goid)
{
	/* Keys never meet in a recording; a crafted file can make a goroutine's
	 * key a thread's (or a C thread's signal stack's a Go one's).  The stack
	 * that had it lives on where it is referred to and ends with the rest:
	 * dropped from the map, its frames would leak. */
	struct stack *old = map_get(&r->stacks, k);
	if (old) {
		recent_forget(&r->recent, old);
		old->orphan = true;
		CT_VEC_PUSH(r->orphans, old);
	}
	struct stack *s = xcalloc(1, sizeof(*s));
	s->pid = pid;
	s->goid = goid;
	s->key = k;
	s->origin = origin_hold(map_get(&r->origins, k)); /* NULL for thread keys */
	map_put(&r->stacks, k, s);
	if (!map_get(&r->seen, thread)) {
		map_put(&r->seen, thread, (void *)((uintptr_t)pid + 1));
		r->st.threads++;
	}
	return s;
}

static bool opens_frame(uint8_t kind)
{
	return kind == CT_SITE_ENTRY || kind == CT_SITE_CALL || kind == CT_SITE_CHECK;
}

/* A call opens at or deeper than KEY, which is not inside a frame whose
 * RET passed, waiting for its exit probe, at or above KEY.  The goroutine
 * was made to call it where that frame had returned to (a signal's
 * handler preempting it right after the single-stepped RET:
 * runtime.asyncPreempt; the handler itself, which comes first, at any
 * KEY): the frame returned then, its results unread (its exit probe finds
 * it closed), and so did the frames above it whose RETs passed before. */
static void close_passed(struct ct_recon *r, struct stack *s, uint64_t key, uint32_t tid)
{
	size_t lo = s->f.n;
	for (size_t i = s->f.n; i > 0; i--)
		if (s->f.v[i - 1].ret_passed_ts && s->f.v[i - 1].c.key <= key)
			lo = i - 1;
	for (size_t i = s->f.n; lo < s->f.n && i > lo; i--)
		if (i <= s->f.n && s->f.v[i - 1].ret_passed_ts)
			return_frame(r, s, i - 1, s->f.v[i - 1].ret_passed_ts, tid, NULL);
}

/* One role of the probe that fired (EV is the event as that role sees it). */
static void apply_role(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev)
{
	const struct ct_file_site *site = &r->sites[ev->site];
	if (s->ret_passed_open && opens_frame(ev->kind))
		close_passed(r, s, ev->key, ev->tid);
	close_unplanned(r, s, ev);
	if (ev->kind == CT_SITE_CATCH) {
		/* __cxa_begin_catch, called by the frame that catches: every
		 * frame at its key or deeper is gone, by the exception (one
		 * left by a tail jump too: it did not return) */
		while (s->f.n && s->f.v[s->f.n - 1].c.key >= ev->key)
			pop(r, s, CT_CALL_UNWOUND, ev->ts, ev->tid, ev);
		return;
	}
	settle_tail(r, s, ev);
	if (resume_after_recover(r, s, ev))
		return;
	switch (ev->kind) {
	case CT_SITE_ENTRY:
	case CT_SITE_CHECK:
		on_entry(r, s, ev, site->func);
		break;
	case CT_SITE_CALL:
		on_call(r, s, ev, site->func);
		break;
	case CT_SITE_RET:
		on_ret(r, s, ev);
		break;
	case CT_SITE_RETSITE:
		on_retsite(r, s, ev, site->call_site);
		break;
	case CT_SITE_TAIL:
		on_tail(r, s, ev, site->func, site->target_func);
		break;
	case CT_SITE_RESTART:
		on_restart(r, s, ev, site->func);
		break;
	case CT_SITE_GOEXIT:
		while (s->f.n)
			pop(r, s, CT_CALL_UNWOUND, ev->ts, ev->tid, NULL);
		break;
	default: /* DEFERRET without a recovered panic: nothing */
		break;
	}
}

/* ---- The stacks of a C thread ----
 *
 * A thread's code can run on other stacks than its own: a signal handler on
 * the alternate signal stack (sigaltstack), a coroutine on the stack its
 * context was made with (swapcontext, or a library's own switch).  Frame
 * keys compare only within one stack, and a switch is not an unwinding: the
 * frames left behind are suspended, and return when their stack is resumed.
 *
 *  - A hit on the alternate signal stack (CT_EV_ALTSTACK, from the kernel's
 *    sigaltstack settings) goes to the thread's signal stack, whose frames
 *    nest under the frame the handler interrupted.  A hit on the thread's
 *    other stacks while handler frames are open means the handler was left
 *    by a jump (siglongjmp): they are unwound.
 *  - Otherwise the hit stays on the current stack if its key is at most
 *    SWITCH_DOWN deeper than the top frame, or (shallower) at most
 *    SWITCH_UP above the frame it would unwind: the SP of a function's calls
 *    does not move by more than a page, a coroutine's stack is bigger.
 *    Else the SP left the stack: the hit is on a suspended stack whose top
 *    it is at (a resume), or on a new one (a coroutine's first call), shown
 *    as a sequence of its own ("context" n, in order of appearance).
 *
 * A longjmp or exception that leaves more than a page of untraced frames is
 * taken for a switch too (its calls are then shown as another context and
 * the frames it left stay open); a coroutine whose stack lies less than
 * SWITCH_DOWN below the current one, entered without a resume of another
 * stack in between, is taken for nested calls.  Go code has a stack per
 * goroutine already. */
#define SWITCH_UP 4096ULL
#define SWITCH_DOWN (1ULL << 20)
#define RESUME_NEAR (64ULL << 10)
/* Suspended stacks are found by their top key in buckets of RESUME_NEAR
 * (a resume looks at three), at most RESUME_LOOK of them: a thread with
 * thousands of suspended coroutines, or a file crafted to look like one,
 * costs the same per event as one with a few. */
#define PARK_SHIFT 16
#define RESUME_LOOK 256
/* Context numbers go round below ALT_CONTEXT, skipping the ones in use:
 * keys stay unique (a renderer's state is per key). */
#define CONTEXT_TRIES 256

struct thread_stacks {
	CT_VEC(struct stack *) all; /* with open frames (and the current one) */
	struct stack *alt;          /* the signal stack's frames, or NULL */
	struct stack *cur;          /* the stack in use, or NULL once it emptied */
	uint32_t current;           /* context of the stack in use */
	uint32_t next_context;
	uint64_t key;               /* thread key, context 0 */
	struct ct_map parked;       /* top key >> PARK_SHIFT -> suspended stacks (a list) */
};

static void park(struct thread_stacks *th, struct stack *s)
{
	if (s->parked || !s->f.n)
		return;
	s->park_bucket = s->f.v[s->f.n - 1].c.key >> PARK_SHIFT;
	void **head = map_slot(&th->parked, s->park_bucket, true);
	s->park_prev = NULL;
	s->park_next = *head;
	if (s->park_next)
		s->park_next->park_prev = s;
	*head = s;
	s->parked = true;
}

static void unpark(struct thread_stacks *th, struct stack *s)
{
	if (!s->parked)
		return;
	if (s->park_prev)
		s->park_prev->park_next = s->park_next;
	else if (s->park_next)
		map_put(&th->parked, s->park_bucket, s->park_next);
	else
		map_del(&th->parked, s->park_bucket);
	if (s->park_next)
		s->park_next->park_prev = s->park_prev;
	s->parked = false;
}

static void free_thread(struct thread_stacks *th)
{
	CT_VEC_FREE(th->all);
	map_free(&th->parked);
	free(th);
}

static void forget_stack(struct ct_recon *r, struct stack *s)
{
	struct thread_stacks *th = s->th;
	if (th->alt == s) {
		thread_clock(th->cur, s); /* (the handler's hits: drop_stack) */
		th->alt = NULL;
	}
	if (th->cur == s)
		th->cur = NULL;
	unpark(th, s);
	if (s->th_idx < th->all.n && th->all.v[s->th_idx] == s) {
		struct stack *last = th->all.v[--th->all.n];
		th->all.v[s->th_idx] = last;
		last->th_idx = s->th_idx;
	}
	if (!th->all.n && !th->alt) {
		map_del(&r->threads, th->key);
		free_thread(th);
	}
}

static struct thread_stacks *thread_of(struct ct_recon *r, uint32_t pid, uint32_t tid, bool create)
{
	uint64_t tk = make_thread_key(pid, tid, 0, false, 0);
	struct thread_stacks *th = map_get(&r->threads, tk);
	if (!th && create) {
		th = xcalloc(1, sizeof(*th));
		th->key = tk;
		th->next_context = 1;
		map_put(&r->threads, tk, th);
	}
	return th;
}

static void add_stack(struct thread_stacks *th, struct stack *s)
{
	s->th = th;
	s->th_idx = th->all.n;
	CT_VEC_PUSH(th->all, s);
}

static struct stack *context_stack(struct ct_recon *r, struct thread_stacks *th, uint32_t pid, uint32_t tid,
				   uint32_t context)
{
	struct stack *s = new_stack(r, make_thread_key(pid, tid, 0, false, context), th->key, pid, 0);
	s->context = context;
	add_stack(th, s);
	return s;
}

/* A number for another stack of the thread: the next one whose key no open
 * stack has, or 0 if none is found soon. */
static uint32_t new_context(struct ct_recon *r, struct thread_stacks *th, uint32_t pid, uint32_t tid)
{
	for (int i = 0; i < CONTEXT_TRIES; i++) {
		uint32_t c = th->next_context++;
		if (th->next_context == ALT_CONTEXT)
			th->next_context = 1;
		if (!map_get(&r->stacks, make_thread_key(pid, tid, 0, false, c)))
			return c;
	}
	return 0;
}

/* Does the SP at KEY stay on S (see above)? */
static bool on_this_stack(const struct stack *s, uint64_t key)
{
	uint64_t top = s->f.v[s->f.n - 1].c.key;
	if (key >= top)
		return key - top <= SWITCH_DOWN;
	size_t i = s->f.n - 1; /* the shallowest frame deeper than KEY */
	while (i > 0 && s->f.v[i - 1].c.key > key)
		i--;
	if (i > 0 && s->f.v[i - 1].c.key == key)
		return true;
	return s->f.v[i].c.key - key <= SWITCH_UP;
}

/* A suspended stack that resumes at KEY: at its top frame (at most
 * SWITCH_UP shallower) or up to RESUME_NEAR deeper; the nearest. */
static struct stack *resumed_stack(struct thread_stacks *th, uint64_t key)
{
	if (!th->parked.n)
		return NULL;
	uint64_t lo = key > RESUME_NEAR ? key - RESUME_NEAR : 0;
	uint64_t hi = key > UINT64_MAX - SWITCH_UP ? UINT64_MAX : key + SWITCH_UP;
	struct stack *best = NULL;
	uint64_t dist = 0;
	unsigned looked = 0;
	for (uint64_t b = lo >> PARK_SHIFT; b <= hi >> PARK_SHIFT; b++)
		for (struct stack *s = map_get(&th->parked, b); s && looked < RESUME_LOOK; s = s->park_next, looked++) {
			uint64_t top = s->f.v[s->f.n - 1].c.key;
			if (top < lo || top > hi)
				continue;
			uint64_t d = key > top ? key - top : top - key;
			if (!best || d < dist) {
				best = s;
				dist = d;
			}
		}
	return best;
}

/* The stacks of one thread (coroutines' contexts, a signal stack) run one
 * after another on its time: the hits on one delayed what runs on the next
 * as much.  Stack TO, taking over from FROM, goes on on the thread's
 * corrected clock, not on the one it had when it last ran (a new one's
 * started at the thread's raw time: a coroutine that ran inside a call of
 * another context seemed to run after that call's corrected end, once the
 * process's first hits cost ~100 us). */
static void thread_clock(struct stack *to, const struct stack *from)
{
	if (!from || !to)
		return;
	if (to->cost < from->cost)
		to->cost = from->cost;
	/* (and never before the time it had got to: a handler on the signal
	 * stack, started under a call whose clock was held at that floor,
	 * began before that call -- CPython's under -X faulthandler) */
	if (to->last < from->last)
		to->last = from->last;
}

static struct stack *thread_stack(struct ct_recon *r, const struct ct_rec_event *ev, bool create)
{
	uint64_t k0 = make_thread_key(ev->pid, ev->tid, 0, false, 0);
	struct thread_stacks *th = r->threads.n ? map_get(&r->threads, k0) : NULL;
	if (!th) {
		/* Most threads use one stack: no bookkeeping until one switches. */
		struct stack *s0 = recent_get(&r->recent, k0);
		if (!s0)
			s0 = map_get(&r->stacks, k0);
		if (!(ev->flags & CT_EV_ALTSTACK) && (!s0 || !s0->f.n || on_this_stack(s0, ev->key))) {
			if (!s0 && create)
				s0 = new_stack(r, k0, k0, ev->pid, 0);
			if (s0)
				recent_put(&r->recent, k0, s0);
			return s0;
		}
		th = thread_of(r, ev->pid, ev->tid, true);
		if (s0) {
			add_stack(th, s0);
			th->cur = s0;
		}
	}
	struct stack *cur = th->cur;
	if (!cur)
		cur = th->cur = context_stack(r, th, ev->pid, ev->tid, th->current);
	if (ev->flags & CT_EV_ALTSTACK) {
		if (!th->alt) {
			struct stack *alt = new_stack(r, make_thread_key(ev->pid, ev->tid, 0, false, ALT_CONTEXT), th->key,
						      ev->pid, 0);
			alt->th = th;
			thread_clock(alt, cur);
			alt->context = cur->context;
			alt->depth_base = cur->depth_base + (uint32_t)cur->f.n;
			th->alt = alt;
		}
		return th->alt;
	}
	if (th->alt) {
		struct stack *alt = th->alt;
		flush_sched(r, alt);
		while (alt->f.n)
			pop(r, alt, CT_CALL_UNWOUND, ev->ts, ev->tid, NULL);
		drop_stack(r, alt->key, alt);
	}
	if (cur->f.n && on_this_stack(cur, ev->key))
		return cur;
	struct stack *s = resumed_stack(th, ev->key);
	if (!s && !cur->f.n)
		s = cur;
	if (!s && create) {
		uint32_t c = new_context(r, th, ev->pid, ev->tid);
		s = c ? context_stack(r, th, ev->pid, ev->tid, c) : cur;
	}
	if (!s) {
		/* an exit on no stack this thread has frames on */
		if (!cur->f.n)
			drop_stack(r, cur->key, cur);
		return NULL;
	}
	if (s != cur) {
		unpark(th, s);
		park(th, cur);
		thread_clock(s, cur);
		th->cur = s;
		th->current = s->context;
		if (!cur->f.n)
			drop_stack(r, cur->key, cur);
	}
	return s;
}

/* ---- A Go thread's signal handler ----
 *
 * Go runs signal handlers on the M's gsignal stack, its sigaltstack, for the
 * goroutine the M runs (or none).  The probes key those hits from the signal
 * stack's top and flag them CT_EV_ALTSTACK, with that goroutine's id:
 * runtime.sigtrampgo enters with the interrupted g and switches to gsignal
 * partway, and its frame and its calls' are one stack all the same.  Its
 * frames nest under that goroutine's (or the thread's) innermost open frame,
 * as a C thread's handler's do.  A Go handler returns (the sigpanic or
 * asyncPreempt it injects runs after it, on the goroutine's stack): a hit of
 * the thread off the signal stack while handler frames are open means their
 * ends were not seen, and they are unwound (left_go_signal). */
static uint64_t go_signal_key(uint32_t pid, uint32_t tid)
{
	return make_thread_key(pid, tid, 0, false, ALT_CONTEXT);
}

static struct stack *go_signal_stack(struct ct_recon *r, const struct ct_rec_event *ev, bool create)
{
	uint64_t k = go_signal_key(ev->pid, ev->tid);
	struct stack *s = map_get(&r->stacks, k);
	if (s && s->f.n)
		return s;
	uint64_t ik = make_thread_key(ev->pid, ev->tid, ev->goid, false, 0);
	if (!s) {
		if (!create)
			return NULL;
		s = new_stack(r, k, ik, ev->pid, ev->goid);
		s->go_signal = true;
		r->go_signal_stacks++;
	}
	/* a handler starts: under what it interrupted, on its clock */
	struct stack *in = map_get(&r->stacks, ik);
	if (in && in->ret_passed_open)
		close_passed(r, in, UINT64_MAX, ev->tid);
	thread_clock(s, in);
	s->under = ik;
	s->goid = ev->goid;
	stack_show(s, ev->goid ? map_get(&r->origins, ik) : NULL);
	s->depth_base = in ? in->depth_base + (uint32_t)in->f.n : 0;
	return s;
}

/* A hit of EV's thread off its signal stack: the handler is over. */
static void left_go_signal(struct ct_recon *r, const struct ct_rec_event *ev)
{
	uint64_t k = go_signal_key(ev->pid, ev->tid);
	struct stack *s = map_get(&r->stacks, k);
	if (!s)
		return;
	while (s->f.n)
		pop(r, s, CT_CALL_UNWOUND, ev->ts, ev->tid, NULL);
	drop_stack(r, k, s);
}

static struct stack *stack_of(struct ct_recon *r, uint64_t k, const struct ct_rec_event *ev, bool create)
{
	if (!r->go && !ev->goid)
		return thread_stack(r, ev, create);
	if (ev->flags & CT_EV_ALTSTACK)
		return go_signal_stack(r, ev, create);
	if (r->go_signal_stacks)
		left_go_signal(r, ev);
	/* Consecutive events mostly belong to one or two goroutines: skip the hash. */
	struct stack *s = recent_get(&r->recent, k);
	if (!s)
		s = map_get(&r->stacks, k);
	if (!s && create)
		s = new_stack(r, k, k, ev->pid, ev->goid);
	if (s)
		recent_put(&r->recent, k, s);
	return s;
}

/* The open frames of S end (STATUS, at TS; a pending tail chain returns).  A
 * signal handler's frames nested in them end first: a thread's calls end
 * innermost first, as each renderer expects of one thread.  The innermost
 * call from a site without an exit probe may have ended long before (its
 * end is never seen): unobserved, not STATUS; one with a call open inside
 * it was still running. */
static void end_frames(struct ct_recon *r, struct stack *s, uint8_t status, uint64_t ts)
{
	struct stack *alt = s->th ? s->th->alt : NULL;
	if (alt && alt != s && alt->context == s->context)
		end_frames(r, alt, status, ts);
	uint64_t at = corrected_time(s, ts, 0);
	bool live = false; /* a call that was surely running is inside */
	while (s->f.n) {
		struct frame *top = &s->f.v[s->f.n - 1];
		uint32_t tid = top->c.tid;
		if (top->tail_pending && status == CT_CALL_UNFINISHED)
			pop_tail_chain(r, s, CT_CALL_RETURNED, top->tail_ts, tid, NULL);
		else if (!live && top->no_exit && !interim_in(r, top->c.func, ts))
			pop(r, s, UNOBSERVED_UNBOUNDED, at, tid, NULL);
		else {
			pop(r, s, status, at, tid, NULL);
			live = true;
		}
	}
}

/* The thread PID/TID (TID 0: every thread and goroutine of PID) ended: a
 * thread seen again with its id (reused) is another one. */
static void forget_ended(struct ct_recon *r, uint32_t pid, uint32_t tid)
{
	if (tid) {
		map_del(&r->seen, make_thread_key(pid, tid, 0, false, 0));
		map_del(&r->seen, make_thread_key(pid, tid, 1, true, 0));
		return;
	}
	CT_VEC(uint64_t) gone = {0};
	MAP_FOREACH(&r->seen, i)
	if ((uintptr_t)r->seen.vals[i] == (uintptr_t)pid + 1)
		CT_VEC_PUSH(gone, r->seen.keys[i]);
	/* a process that exec'd another Go program numbers its goroutines anew */
	MAP_FOREACH(&r->origins, i)
	if (((struct origin *)r->origins.vals[i])->o.pid == pid)
		CT_VEC_PUSH(gone, r->origins.keys[i]);
	for (size_t i = 0; i < gone.n; i++) {
		map_del(&r->seen, gone.v[i]);
		origin_release(map_get(&r->origins, gone.v[i]));
		map_del(&r->origins, gone.v[i]);
	}
	CT_VEC_FREE(gone);
}

/* Ends the stacks of a thread (TID) or of a whole process (TID 0): their
 * open frames are EXITED, outermost stacks in order of their first call. */
static void end_stacks(struct ct_recon *r, uint32_t pid, uint32_t tid, uint64_t ts)
{
	CT_VEC(struct stack *) ends = {0};
	if (tid) {
		struct thread_stacks *th = thread_of(r, pid, tid, false);
		for (size_t i = 0; th && i < th->all.n; i++)
			CT_VEC_PUSH(ends, th->all.v[i]);
		if (th && th->alt)
			CT_VEC_PUSH(ends, th->alt);
		uint64_t keys[3] = {make_thread_key(pid, tid, 1, true, 0), /* its system stack (cgo) */
				    go_signal_key(pid, tid),                  /* its signal handler (Go) */
				    make_thread_key(pid, tid, 0, false, 0)}; /* a thread of a Go program */
		for (int i = 0; i < (th ? 1 : 3); i++) {
			struct stack *s = map_get(&r->stacks, keys[i]);
			bool listed = false; /* (keys of a crafted file may meet) */
			for (size_t j = 0; s && j < ends.n && !listed; j++)
				listed = ends.v[j] == s;
			if (s && !listed)
				CT_VEC_PUSH(ends, s);
		}
	} else {
		MAP_FOREACH(&r->stacks, i) {
			struct stack *s = r->stacks.vals[i];
			if (s->pid == pid)
				CT_VEC_PUSH(ends, s);
		}
	}
	if (ends.n > 1)
		qsort(ends.v, ends.n, sizeof(*ends.v), cmp_stack_first);
	for (size_t i = 0; i < ends.n; i++) {
		struct stack *s = ends.v[i];
		end_frames(r, s, CT_CALL_EXITED, ts);
		drop_stack(r, s->key, s);
	}
	CT_VEC_FREE(ends);
	forget_ended(r, pid, tid);
}

/* After fork() the child is inside the calls its forking thread had open:
 * they go on in the child (uftrace's daemon case: main returns there).  Go
 * forks only to exec, from a goroutine the thread id does not name: a thread
 * in Go code copies nothing. */
static void fork_stack(struct ct_recon *r, const struct ct_rec_event *ev)
{
	struct thread_stacks *fth = thread_of(r, ev->pid, ev->tid, false);
	struct stack *from = fth ? fth->cur : map_get(&r->stacks, make_thread_key(ev->pid, ev->tid, 0, false, 0));
	uint64_t k = make_thread_key(ev->child, ev->child, 0, false, 0);
	if (!from || !from->f.n || map_get(&r->stacks, k) || thread_of(r, ev->child, ev->child, false))
		return;
	if (is_go_code(r, from->f.v[from->f.n - 1].c.func))
		return;
	struct stack *s = new_stack(r, k, k, ev->child, 0);
	for (size_t i = 0; i < from->f.n; i++) {
		struct frame f = from->f.v[i];
		f.c.seq = r->seq++;
		f.c.pid = f.c.tid = ev->child;
		f.c.image = image_of(r, ev->child);
		image_ran(r, ev->child);
		f.c.context = 0; /* the child's own stack */
		if (f.args) {
			f.args = args_alloc(r, from->f.v[i].args, f.c.args_len);
			f.c.args = f.args;
		}
		if (f.spill) {
			f.spill = xmalloc(f.c.spill_len);
			memcpy(f.spill, from->f.v[i].spill, f.c.spill_len);
			f.c.spill = f.spill;
		}
		f.waiting = false; /* (none: on_proc settled them) */
		CT_VEC_PUSH(s->f, f);
		s->no_exit_open += f.no_exit;
		s->ret_passed_open += f.ret_passed_ts != 0;
		r->st.calls++;
		report(r, s, &s->f.v[s->f.n - 1], false);
	}
}

/* A thread waited for calltrace's probe changes (CT_PROC_STALL): the wait
 * goes on the corrected clock of the stack it ran, as a probe hit's cost
 * does (a goroutine's: the one that last hit a probe on the thread). */
static void stalled(struct ct_recon *r, const struct ct_rec_event *ev)
{
	if (!r->costs.ok)
		return;
	/* (a thread's: the stack it is on, when it switched stacks) */
	struct thread_stacks *th = ev->goid ? NULL : thread_of(r, ev->pid, ev->tid, false);
	struct stack *s = th && th->cur ? th->cur : map_get(&r->stacks, make_thread_key(ev->pid, ev->tid, ev->goid, false, 0));
	if (!s)
		return;
	s->cost += ev->child;
	/* The thread slept through that wait: the time off CPU just before
	 * (its record comes when the thread runs again, this one after) held
	 * it.  It is calltrace's, taken out of the calls' durations, so out of
	 * their time off CPU too (none more off CPU than it lasted). */
	if (s->sched_on) {
		const struct pending_sched *p = &r->sched_pending.v[s->sched_idx];
		uint64_t w = p->to - p->from < ev->child ? p->to - p->from : ev->child;
		for (size_t i = 0; !(p->flags & CT_OFFCPU_PREEMPTED) && i < s->f.n; i++) {
			struct ct_call *c = &s->f.v[i].c;
			c->off_blocked -= c->off_blocked < w ? c->off_blocked : w;
		}
	}
}

/* When EV's time off CPU began, as far as a call entered (its clock read)
 * at RAW_ENTRY goes: not before that.  A probe's BPF program may sleep
 * before its clock read (it faults a page in), and the hit's event goes
 * out after the time off: that call began after it (and the correction
 * takes that time out of it as the hit's). */
static uint64_t off_since(const struct ct_rec_event *ev, uint64_t raw_entry)
{
	uint64_t from = ev->ts > ev->key ? ev->ts - ev->key : 0;
	return from > raw_entry ? from : raw_entry;
}

/* Every call open on stack S (if any) ran EV's time off CPU, the part of
 * it since it began. */
static void off_cpu_in(struct stack *s, const struct ct_rec_event *ev)
{
	for (size_t i = 0; s && i < s->f.n; i++) {
		struct ct_call *c = &s->f.v[i].c;
		uint64_t from = off_since(ev, c->raw_entry), ns = ev->ts > from ? ev->ts - from : 0;
		if (!(ev->child & CT_OFFCPU_PREEMPTED))
			c->off_blocked += ns;
		else if (ev->child & CT_OFFCPU_BY_TRACER)
			c->off_tracer += ns, c->off_preempted += ns;
		else
			c->off_preempted += ns;
	}
}

bool ct_sched_calls;

/* --sched (ct_sched_calls): S's pending time off CPU (pend_off_cpu), reported
 * now as a call of its own under the innermost call open on S -- before
 * S's next event changes its frames, or any process record.  Its start on
 * S's corrected clock was taken when it came; its end is taken now, after
 * any wait for calltrace's probe changes that followed it (stalled): that
 * part of it is calltrace's, as for the calls around it.  Its time off CPU
 * is its corrected duration (the call over it has the whole). */
static void flush_sched_before(struct ct_recon *r, struct stack *s, uint64_t limit)
{
	if (!s->sched_on)
		return;
	s->sched_on = false;
	struct pending_sched p = r->sched_pending.v[s->sched_idx];
	r->sched_pending.v[s->sched_idx] = r->sched_pending.v[--r->sched_pending.n];
	if (s->sched_idx < r->sched_pending.n)
		r->sched_pending.v[s->sched_idx].s->sched_idx = s->sched_idx;
	if (!ct_sched_calls || !s->f.n || in_hidden_park(r, s, NULL))
		return;
	const struct frame *top = &s->f.v[s->f.n - 1];
	struct ct_call c = {
		.seq = r->seq++,
		.func = CT_FUNC_SCHED,
		.ts_entry = p.start,
		.raw_entry = p.from,
		.raw_exit = p.to,
		.pid = s->pid,
		.tid = p.tid,
		.exit_tid = p.tid,
		.image = s->image,
		.goid = top->c.goid,
		.key = top->c.key,
		.depth = s->depth_base + (uint32_t)s->f.n,
		/* (still off CPU when the trace ended: no end of it was seen) */
		.status = p.flags & CT_OFFCPU_AT_END ? CT_CALL_UNFINISHED : CT_CALL_RETURNED,
		.sysstack = top->c.sysstack,
		.context = s->context,
		.leaf = true,
		.entry_site = UINT32_MAX,
		.exit_site = UINT32_MAX,
		.spill_site = UINT32_MAX,
		.origin = s->origin ? &s->origin->o : NULL,
	};
	/* (on_clock: the stack's clock moves as it would without it, so that
	 * --sched changes no other call's times) */
	/* (before the next hit of its thread on that stack: a thread taken
	 * off CPU in a probe's BPF program after its clock read sends the
	 * time with the hit after it -- it was not in the call that hit saw
	 * end) */
	if (c.ts_entry >= limit)
		return;
	uint64_t end = on_clock(s, p.to, 0);
	if (end > limit)
		end = limit;
	c.ts_exit = end > c.ts_entry ? end : c.ts_entry;
	uint64_t ns = c.ts_exit - c.ts_entry;
	if (!(p.flags & CT_OFFCPU_PREEMPTED))
		c.off_blocked = ns;
	else
		c.off_preempted = ns, c.off_tracer = p.flags & CT_OFFCPU_BY_TRACER ? ns : 0;
	r->st.sched_calls++;
	if (r->ops.enter)
		r->ops.enter(r->ctx, &c);
	if (r->ops.exit)
		r->ops.exit(r->ctx, &c);
}

static void flush_sched(struct ct_recon *r, struct stack *s)
{
	flush_sched_before(r, s, UINT64_MAX);
}

/* The pending times off CPU of thread PID/TID (any of its stacks: a
 * signal handler's first hit comes on another than the one the thread
 * slept on), before its next event; OWN's ends before LIMIT. */
static void flush_thread_sched(struct ct_recon *r, uint32_t pid, uint32_t tid, struct stack *own, uint64_t limit)
{
	for (size_t i = r->sched_pending.n; i-- > 0;) {
		/* (a flush moves the last one to I: one already looked at) */
		struct pending_sched *p = &r->sched_pending.v[i];
		if (p->tid == tid && p->s->pid == pid)
			flush_sched_before(r, p->s, p->s == own ? limit : UINT64_MAX);
	}
}

static void flush_sched_all(struct ct_recon *r)
{
	while (r->sched_pending.n)
		flush_sched(r, r->sched_pending.v[r->sched_pending.n - 1].s);
}

/* EV's time off CPU, kept until S's next event (struct pending_sched): a
 * wait for calltrace's probe changes that comes just after it is taken
 * out of it (stalled); with --sched it is then a call of its own under
 * the innermost call open on S (flush_sched).  Not while that call waits
 * for its SPILL hit: it would be reported without the arguments that hit
 * brings (its note still says the time). */
static void pend_off_cpu(struct ct_recon *r, struct stack *s, const struct ct_rec_event *ev)
{
	if (!s)
		return;
	flush_thread_sched(r, ev->pid, ev->tid, NULL, UINT64_MAX);
	flush_sched(r, s);
	/* (the Go scheduler's, record --parks: not the kernel's schedule --
	 * the goroutine's calls hold it, no linux:schedule call shows it) */
	if (!s->f.n || s->f.v[s->f.n - 1].waiting || (ev->child & CT_OFFCPU_GOSCHED))
		return;
	struct frame *top = &s->f.v[s->f.n - 1];
	uint64_t from = off_since(ev, top->c.raw_entry);
	if (from >= ev->ts)
		return;
	if (ct_sched_calls)
		top->has_children = true;
	struct pending_sched p = {s, from, ev->ts, on_clock(s, from, 0), ev->tid, (uint8_t)ev->child};
	s->sched_on = true;
	s->sched_idx = (uint32_t)r->sched_pending.n;
	CT_VEC_PUSH(r->sched_pending, p);
}

/* A thread was off CPU (CT_PROC_OFFCPU) while it ran its goroutine's or
 * its own calls: every call open there ran that long off CPU (the
 * goroutine could not have moved meanwhile: its thread held it) -- a
 * goroutine's, and those of C it called through cgo on that thread's
 * system stack (blocked in a read there, say); with --sched, the time is
 * a call of its own under the innermost of them. */
static void off_cpu(struct ct_recon *r, const struct ct_rec_event *ev)
{
	struct stack *inner;
	if (ev->goid) {
		struct stack *gs = map_get(&r->stacks, make_thread_key(ev->pid, ev->tid, ev->goid, false, 0));
		struct stack *ss = map_get(&r->stacks, make_thread_key(ev->pid, ev->tid, ev->goid, true, 0));
		off_cpu_in(gs, ev);
		off_cpu_in(ss, ev);
		inner = ss && ss->f.n ? ss : gs;
	} else {
		struct thread_stacks *th = thread_of(r, ev->pid, ev->tid, false);
		inner = th && th->cur ? th->cur : map_get(&r->stacks, make_thread_key(ev->pid, ev->tid, 0, false, 0));
		off_cpu_in(inner, ev);
		/* a signal handler on the alternate stack: nested in the call it
		 * interrupted, the innermost */
		if (th && th->alt && th->alt->f.n) {
			inner = th->alt;
			off_cpu_in(inner, ev);
		}
	}
	pend_off_cpu(r, inner, ev);
}

/* Goroutine EV->goid was made runnable (CT_PROC_READY): if it is parked in
 * a traced runtime.gopark call, that call's park ends now, its wait for
 * the scheduler begins (parked). */
static void goroutine_ready(struct ct_recon *r, const struct ct_rec_event *ev)
{
	struct stack *s = map_get(&r->stacks, make_thread_key(ev->pid, 0, ev->goid, false, 0));
	struct frame *top = s && s->f.n ? &s->f.v[s->f.n - 1] : NULL;
	if (top && is_gopark(r, top->c.func) && !top->ready_ts && ev->ts >= top->c.raw_entry)
		top->ready_ts = ev->ts;
}

static void on_proc(struct ct_recon *r, const struct ct_rec_event *ev)
{
	if (ev->proc == CT_PROC_STALL) {
		stalled(r, ev);
		return;
	}
	if (ev->proc == CT_PROC_OFFCPU) {
		off_cpu(r, ev);
		return;
	}
	if (ev->proc == CT_PROC_READY) {
		goroutine_ready(r, ev);
		return;
	}
	flush_sched_all(r);
	settle_waiting(r, NULL); /* a fork copies, an exit ends what is reported */
	switch (ev->proc) {
	case CT_PROC_FORK:
		fork_stack(r, ev);
		break;
	case CT_PROC_EXEC:
		end_stacks(r, ev->pid, 0, ev->ts);
		image_exec(r, ev->pid);
		break;
	case CT_PROC_EXIT:
		end_stacks(r, ev->pid, 0, ev->ts);
		map_del(&r->images, ev->pid); /* a pid used again is another process */
		break;
	case CT_PROC_THREAD_EXIT:
		end_stacks(r, ev->pid, ev->tid, ev->ts);
		break;
	case CT_PROC_PROBES_IN:
		map_put(&r->probes_in, ev->pid, (void *)(uintptr_t)(ev->child ? ev->ts : UINT64_MAX));
		break;
	case CT_PROC_INTERIM_GONE:
		if (ev->child < r->interim_until.n && r->interim_until.v[ev->child])
			r->interim_until.v[ev->child] = ev->ts ? ev->ts : 1;
		break;
	}
}

/* A goroutine was made: goid = its creator, key = the new one, payload =
 * the `go` statement's address (record/session.c). */
static void on_created(struct ct_recon *r, const struct ct_rec_event *ev)
{
	if (!ev->key)
		return;
	void **slot = map_slot(&r->origins, make_thread_key(ev->pid, 0, ev->key, false, 0), true);
	if (*slot)
		return; /* goroutine ids are never reused: a duplicate */
	struct origin *ref = xcalloc(1, sizeof(*ref));
	ref->refs = 1; /* the map's */
	struct ct_goroutine_origin *o = &ref->o;
	o->goid = ev->key;
	o->parent = ev->goid;
	o->ts = ev->ts;
	/* the probe ran on the creator's thread, inside its open calls */
	struct stack *cs = ev->goid ? map_get(&r->stacks, make_thread_key(ev->pid, 0, ev->goid, false, 0)) : NULL;
	if (cs) {
		o->ts = charge_hit(r, cs, ev);
	}
	o->pid = ev->pid;
	o->image = image_of(r, ev->pid);
	o->tid = ev->tid;
	o->site = ev->site;
	if (ev->payload_len >= 8)
		memcpy(&o->pc, ev->payload, 8);
	*slot = ref;
	if (r->ops.spawn)
		r->ops.spawn(r->ctx, o);
}

/* The goroutine ended: its id is never reused, so its origin goes (memory
 * stays flat however many goroutines come and go) once no stack shows it
 * (struct origin). */
static void forget_goroutine(struct ct_recon *r, uint64_t k)
{
	/* a stack kept past its end (a recovery pending, or a damaged file
	 * reusing the id): calls after the end are no longer of it */
	struct stack *s = map_get(&r->stacks, k);
	if (s)
		stack_show(s, NULL);
	origin_release(map_get(&r->origins, k));
	map_del(&r->origins, k);
	map_del(&r->seen, k);
}

void ct_recon_event(struct ct_recon *r, const struct ct_rec_event *ev)
{
	r->st.events++;
	if (ev->kind == CT_EV_PROC_REC) {
		on_proc(r, ev);
		return;
	}
	if (ev->kind == CT_EV_LOST) {
		r->st.lost += ev->lost;
		r->losses++;
		if (r->ops.lost)
			r->ops.lost(r->ctx, ev->ts, ev->lost);
		return;
	}
	if (ev->site >= r->nsites)
		return;
	const struct ct_file_site *site = &r->sites[ev->site];
	if (r->waiting.n)
		settle_waiting(r, ev);
	if (ev->kind == CT_SITE_SPILL) {
		/* it completed the call entered just before, or no call waits
		 * for it (not the innermost): either way its hit cost time */
		struct stack *ss = stack_of(r, thread_key(ev), ev, false);
		if (ss) {
			flush_sched(r, ss);
			charge_hit(r, ss, ev);
		}
		return;
	}
	if (ev->kind == CT_SITE_GOCREATE) {
		on_created(r, ev);
		return;
	}
	if (ev->flags & CT_EV_MARKER) {
		/* The kernel cut this event (limits) but frames it had sent
		 * were unwound: close them. */
		struct stack *ms = stack_of(r, thread_key(ev), ev, false);
		if (ms) {
			flush_sched(r, ms);
			/* (its hit, and those before it that sent none, cost time too) */
			charge_hit(r, ms, ev);
			settle_tail(r, ms, ev);
			unwind_deeper(r, ms, ev);
			if (!ms->f.n)
				drop_stack(r, ms->key, ms);
		}
		return;
	}
	/* The roles of this probe, in order (a call's exit, then the next
	 * call...): at most a few, never a loop. */
	uint32_t roles[8];
	int64_t role_adj[8] = {0}; /* added to the event's key besides the role's key_adj */
	size_t nroles = 0;
	bool opens = false;
	for (uint32_t k = ev->site; nroles < 8;) {
		roles[nroles++] = k;
		opens |= opens_frame(r->sites[k].kind);
		k = r->sites[k].next;
		if (k >= r->nsites || !(r->sites[k].flags & CT_SITEF_COMPANION))
			break;
	}
	/* A call its callee's CHECK sent as its CALL site's event (the last
	 * role, after the exits it sends too): the CHECK probe's other roles
	 * happened as well, at the callee's key (`hop: jmp hopped`: the entry
	 * is the tail jump). */
	const struct ct_file_site *sent = &r->sites[roles[nroles - 1]];
	size_t check = (sent->flags & CT_SITEF_ATCHECK) && sent->kind == CT_SITE_CALL
			       ? (size_t)(uintptr_t)map_get(&r->check_roles_of, (uint64_t)sent->func + 1)
			       : 0;
	int32_t sent_adj = sent->key_adj;
	for (uint32_t k = check ? r->sites[check - 1].next : UINT32_MAX;
	     nroles < 8 && k < r->nsites && (r->sites[k].flags & CT_SITEF_COMPANION); k = r->sites[k].next) {
		role_adj[nroles] = sent_adj;
		roles[nroles++] = k;
		opens |= opens_frame(r->sites[k].kind);
	}
	for (size_t i = 0; i < nroles; i++)
		if (r->sites[roles[i]].kind == CT_SITE_RECOVER && ev->goid) {
			/* runtime.recovery runs on the system stack (mcall): the
			 * mark is for the goroutine it runs for. */
			struct stack *gs = map_get(&r->stacks, make_thread_key(ev->pid, ev->tid, ev->goid, false, 0));
			if (gs)
				gs->recover_pending = true;
		}
	if (nroles == 1 && site->kind == CT_SITE_RECOVER)
		return;
	uint64_t k = thread_key(ev);
	/* A C thread's stack is told by the key the first role is at, not the
	 * probe's: a return site past the caller's freeing of the stack
	 * arguments of the call it closes (a struct of 8 KiB passed by value)
	 * is keyed from pages above that call, which the probe's key alone
	 * took for a switch to another stack. */
	struct ct_rec_event at_role;
	const struct ct_rec_event *sev = ev;
	int64_t adj0 = (int64_t)r->sites[roles[0]].key_adj + role_adj[0];
	if (adj0 && !r->go && !ev->goid) {
		at_role = *ev;
		at_role.key = ev->key + (uint64_t)adj0;
		sev = &at_role;
	}
	struct stack *s = stack_of(r, k, sev, opens);
	if (r->sched_pending.n) {
		/* (a time off CPU before this hit ends before it does on the
		 * clock: before the part of the hit ahead of its clock read) */
		int64_t pre = 0;
		if (s && s->sched_on)
			hit_cost(r, ev, s->post_left, &pre);
		uint64_t limit = s && s->sched_on ? on_clock(s, ev->ts, pre) : UINT64_MAX;
		flush_thread_sched(r, ev->pid, ev->tid, s, limit);
		/* (and its own: a goroutine's next event may come on another
		 * thread than the one it slept on) */
		if (s)
			flush_sched_before(r, s, limit);
	}
	if (!s) {
		if (site->kind == CT_SITE_RET || site->kind == CT_SITE_TAIL)
			r->st.unmatched_exits++;
		if (ev->kind == CT_SITE_GOEXIT)
			forget_goroutine(r, k);
		return;
	}
	uint64_t at = charge_hit(r, s, ev);
	if ((ev->flags & CT_EV_UNOBSERVED_DONE) && !preempted_inside(r, s, ev))
		end_unobserved(r, s, at, ev->tid);
	for (size_t i = 0; i < nroles; i++) {
		const struct ct_file_site *rs = &r->sites[roles[i]];
		struct ct_rec_event rv = *ev;
		rv.ts = at;
		rv.site = roles[i];
		rv.kind = rs->kind;
		rv.key = ev->key + (uint64_t)((int64_t)rs->key_adj + role_adj[i]);
		if (!on_its_way(rs, ev->flags))
			continue;
		if (rs->kind != CT_SITE_RECOVER && rs->kind != CT_SITE_TAILRES) /* TAILRES: read at a pop */
			apply_role(r, s, &rv);
	}
	/* Goroutines come and go by the million: forget empty stacks. */
	if (!s->f.n && !s->recover_pending)
		drop_stack(r, s->key, s);
	if (ev->kind == CT_SITE_GOEXIT)
		forget_goroutine(r, k);
}

/* (A Go signal handler's stack first: its frames nest in another's, and
 * end before them.) */
static int cmp_stack_first(const void *a, const void *b)
{
	const struct stack *x = *(struct stack *const *)a, *y = *(struct stack *const *)b;
	if (x->go_signal != y->go_signal)
		return x->go_signal ? -1 : 1;
	uint64_t sx = x->f.n ? x->f.v[0].c.seq : 0, sy = y->f.n ? y->f.v[0].c.seq : 0;
	return sx < sy ? -1 : sx > sy;
}

static void free_threads(struct ct_recon *r)
{
	MAP_FOREACH(&r->threads, i)
	{
		free_thread(r->threads.vals[i]);
	}
	map_free(&r->threads);
}

void ct_recon_finish(struct ct_recon *r, uint64_t end_ts)
{
	flush_sched_all(r);
	settle_waiting(r, NULL);
	/* Report in a stable order: by when each stack's outermost frame began. */
	CT_VEC(struct stack *) all = {0};
	MAP_FOREACH(&r->stacks, i) CT_VEC_PUSH(all, (struct stack *)r->stacks.vals[i]);
	for (size_t i = 0; i < r->orphans.n; i++)
		CT_VEC_PUSH(all, r->orphans.v[i]);
	r->orphans.n = 0;
	if (all.n)
		qsort(all.v, all.n, sizeof(*all.v), cmp_stack_first);
	for (size_t i = 0; i < all.n; i++) {
		struct stack *s = all.v[i];
		end_frames(r, s, CT_CALL_UNFINISHED, end_ts);
		if (s->th && s->th->alt == s)
			s->th->alt = NULL;
		free_stack(s);
	}
	CT_VEC_FREE(all);
	map_free(&r->stacks);
	/* (the stacks are gone: none is looked up again through the cache) */
	r->recent = (struct ct_recent){0};
	r->go_signal_stacks = 0;
	free_threads(r);
}

bool ct_raw_durations;

bool ct_trace_costs(struct ct_trace *t, struct ct_costs *out)
{
	/* measured at the end where the program ran (STATS), else at start-up */
	return !ct_raw_durations &&
	       (ct_costs_parse(ct_trace_stat(t, "calib"), out) || ct_costs_parse(ct_trace_meta(t, "calib"), out));
}

/* PRE[K], the start of class K's hit as that of its kind KIND, by the
 * difference of their BPF programs' starts BPF_PRE (0: unknown) */
static void shift_pre(uint64_t *pre, int k, int kind, const uint64_t *bpf_pre)
{
	if (!bpf_pre[k] || !bpf_pre[kind])
		return;
	int64_t v = (int64_t)pre[kind] + (int64_t)bpf_pre[k] - (int64_t)bpf_pre[kind];
	pre[k] = v > 0 ? (uint64_t)v : 0;
}

void ct_recon_set_costs(struct ct_recon *r, const struct ct_costs *c)
{
	r->costs = *c;
	uint64_t *hit = r->hit_ns, *pre = r->pre_ns;
	ct_costs_hit_prices(c, hit);
	/* The split of a hit around its clock read: an emulated entry's end
	 * plus a single-stepped exit's start was measured (mixed); the split
	 * of the emulated hit itself is free (it only moves the corrected
	 * clock, no duration), so half.  What an emulated `call` or a
	 * stepped `ret` costs more is its instruction's handling, after the
	 * program's clock read (measured: a `call` entry's end plus an
	 * emulated exit's start is dearer by what a whole `call` hit is),
	 * so their start is that of their kind.  A CHECK's extra, the
	 * lookup of its call site, comes before the clock read. */
	pre[CT_HIT_EMULATED] = hit[CT_HIT_EMULATED] / 2;
	uint64_t post0 = hit[CT_HIT_EMULATED] - pre[CT_HIT_EMULATED];
	pre[CT_HIT_STEPPED] = c->mixed_ns > post0 ? c->mixed_ns - post0 : 0;
	pre[CT_HIT_CALL] = pre[CT_HIT_EMULATED];
	pre[CT_HIT_RET] = pre[CT_HIT_STEPPED];
	/* ... but for its BPF program's part (the trap before it is the
	 * same), which the calibration's timed hits measured: a `call` hit's
	 * began ~65 ns sooner than an emulated entry's here, and a leaf
	 * entered at its call and left at an emulated return site kept that
	 * much of the hits (and the time between two such calls lost it). */
	shift_pre(pre, CT_HIT_CALL, CT_HIT_EMULATED, c->bpf_pre_ns);
	shift_pre(pre, CT_HIT_RET, CT_HIT_STEPPED, c->bpf_pre_ns);
	pre[CT_HIT_CHECK] = pre[CT_HIT_EMULATED] + (hit[CT_HIT_CHECK] > hit[CT_HIT_EMULATED]
							    ? hit[CT_HIT_CHECK] - hit[CT_HIT_EMULATED]
							    : 0);
	pre[CT_HIT_NOTRAP] = hit[CT_HIT_NOTRAP] / 2;
	for (int k = 0; k < CT_HIT_CLASSES; k++)
		if (pre[k] > hit[k])
			pre[k] = hit[k];
}

struct ct_recon *ct_recon_for_trace(struct ct_trace *t, const struct ct_recon_ops *ops, void *ctx)
{
	struct ct_recon *r = ct_recon_new(t->sites, t->nsites, false, ops, ctx);
	r->trace = t;
	r->delayed_were_silent = t->version >= 16;
	ct_recon_set_funcs(r, t->funcs, t->nfuncs);
	struct ct_costs costs;
	if (ct_trace_costs(t, &costs))
		ct_recon_set_costs(r, &costs);
	return r;
}

void ct_recon_set_sites(struct ct_recon *r, const struct ct_file_site *sites, size_t nsites)
{
	/* live and the OTLP exporter call this before every event, in case the
	 * table grew (it only grows): rebuilding what follows from 159,000
	 * sites each time made `live -F '*'` of lefthook take 213 s, not 2 */
	if (sites == r->sites && nsites == r->nsites && r->site_class)
		return;
	r->sites = sites;
	r->nsites = nsites;
	map_free(&r->spill_of);
	memset(&r->spill_of, 0, sizeof(r->spill_of));
	free(r->tail_diff_of);
	r->tail_diff_of = NULL;
	map_free(&r->riding_exit_of);
	memset(&r->riding_exit_of, 0, sizeof(r->riding_exit_of));
	map_free(&r->check_roles_of);
	memset(&r->check_roles_of, 0, sizeof(r->check_roles_of));
	/* a companion RETSITE no chain names rides on another's probe */
	uint8_t *named = xcalloc(nsites ? nsites : 1, 1);
	for (size_t i = 0; i < nsites; i++)
		if (sites[i].next < nsites)
			named[sites[i].next] = 1;
	free(r->site_class);
	r->site_class = xmalloc(nsites ? nsites : 1);
	for (size_t i = 0; i < nsites; i++)
		r->site_class[i] = (uint8_t)ct_hit_class_of(sites[i].kind, sites[i].flags);
	for (size_t i = 0; i < nsites; i++) {
		r->parks |= sites[i].kind == CT_SITE_GOREADY;
		if (sites[i].kind == CT_SITE_CHECK && sites[i].func != CT_NOFUNC &&
		    !(sites[i].flags & CT_SITEF_COMPANION) && sites[i].next < nsites)
			map_put(&r->check_roles_of, (uint64_t)sites[i].func + 1, (void *)(uintptr_t)(i + 1));
		if (sites[i].kind == CT_SITE_RETSITE && sites[i].call_site < nsites && !named[i] &&
		    (sites[i].flags & CT_SITEF_COMPANION) && (sites[i].flags & (CT_SITEF_DYNAMIC | CT_SITEF_INDIRECT)))
			map_put(&r->riding_exit_of, (uint64_t)sites[i].call_site + 1, (void *)(uintptr_t)(i + 1));
		if (sites[i].kind == CT_SITE_SPILL && sites[i].func != CT_NOFUNC)
			map_put(&r->spill_of, (uint64_t)sites[i].func + 1, (void *)(uintptr_t)(i + 1));
		if (sites[i].kind == CT_SITE_TAILDIFF && sites[i].call_site < nsites) {
			if (!r->tail_diff_of)
				r->tail_diff_of = xcalloc(nsites, sizeof(*r->tail_diff_of));
			r->tail_diff_of[sites[i].call_site] = (uint32_t)(i + 1);
		}
		if (sites[i].kind == CT_SITE_TAIL && sites[i].func != CT_NOFUNC) {
			while (r->jumps_out.n <= sites[i].func)
				CT_VEC_PUSH(r->jumps_out, 0);
			r->jumps_out.v[sites[i].func] = 1;
		}
		if ((sites[i].flags & CT_SITEF_INTERIM) && sites[i].func != CT_NOFUNC) {
			while (r->interim_until.n <= sites[i].func)
				CT_VEC_PUSH(r->interim_until, 0);
			if (!r->interim_until.v[sites[i].func])
				r->interim_until.v[sites[i].func] = UINT64_MAX;
		}
	}
	free(named);
}

void ct_recon_set_funcs(struct ct_recon *r, const struct ct_file_func *funcs, size_t nfuncs)
{
	r->funcs = funcs;
	r->nfuncs = nfuncs;
	/* what no function decides (events on no goroutine): Go if any is;
	 * called again as the table grows, it looks at the new ones only */
	for (size_t i = r->nfuncs_seen; i < nfuncs; i++) {
		r->go |= ct_file_func_is_go(&funcs[i]);
		if (funcs[i].name && !strcmp(funcs[i].name, "runtime.asyncPreempt2"))
			CT_VEC_PUSH(r->preempt_funcs, (uint32_t)i);
		if (funcs[i].name && !strcmp(funcs[i].name, "runtime.gopark") && ct_file_func_is_go(&funcs[i]))
			CT_VEC_PUSH(r->gopark_funcs, (uint32_t)i);
	}
	r->nfuncs_seen = nfuncs;
}

size_t ct_recon_remembered(const struct ct_recon *r)
{
	return r->seen.n;
}

const struct ct_recon_stats *ct_recon_stats(const struct ct_recon *r)
{
	return &r->st;
}

void ct_recon_free(struct ct_recon *r)
{
	if (!r)
		return;
	MAP_FOREACH(&r->stacks, i) free_stack(r->stacks.vals[i]);
	for (size_t i = 0; i < r->orphans.n; i++)
		free_stack(r->orphans.v[i]);
	CT_VEC_FREE(r->orphans);
	while (r->free_args) {
		void *p = r->free_args;
		memcpy(&r->free_args, p, sizeof(void *));
		free(p);
	}
	map_free(&r->stacks);
	free_threads(r);
	map_free(&r->seen);
	MAP_FOREACH(&r->origins, i) origin_release(r->origins.vals[i]);
	map_free(&r->origins);
	map_free(&r->images);
	map_free(&r->probes_in);
	map_free(&r->spill_of);
	free(r->tail_diff_of);
	map_free(&r->riding_exit_of);
	map_free(&r->check_roles_of);
	CT_VEC_FREE(r->waiting);
	CT_VEC_FREE(r->sched_pending);
	free(r->site_class);
	CT_VEC_FREE(r->interim_until);
	CT_VEC_FREE(r->jumps_out);
	CT_VEC_FREE(r->preempt_funcs);
	CT_VEC_FREE(r->gopark_funcs);
	free(r);
}

struct ct_recon_stats ct_recon_run(struct ct_trace *t, const struct ct_recon_ops *ops, void *ctx)
{
	struct ct_recon *r = ct_recon_for_trace(t, ops, ctx);
	struct ct_event_iter it;
	struct ct_rec_event ev;
	uint64_t last_ts = t->first_ts;
	ct_iter_init(&it, t);
	while (ct_iter_next(&it, &ev)) {
		ct_recon_event(r, &ev);
		if (ev.ts > last_ts)
			last_ts = ev.ts;
	}
	ct_iter_free(&it);
	const char *end = ct_trace_stat(t, "clock.end_ns");
	uint64_t end_ts = end ? strtoull(end, NULL, 10) : last_ts;
	ct_recon_finish(r, end_ts > last_ts ? end_ts : last_ts);
	struct ct_recon_stats st = r->st;
	ct_recon_free(r);
	return st;
}
