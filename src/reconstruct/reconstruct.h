/* Reconstruction: turns the flat stream of probe hits into calls, with one
 * shadow stack per goroutine (Go) or thread (C) keyed by frame key.  Every
 * renderer (tree, JSON, report, Chrome, flame graphs) and every backend goes
 * through this one module, so the rules live in exactly one place:
 *
 *  entry(f, K):  pop frames deeper than K (key > K) as UNWOUND (panic, Goexit,
 *                longjmp); if the top frame has key K:
 *                  same f, a morestack restart was seen  -> duplicate, dropped
 *                  Go, other f                           -> tail call: nest f
 *                  otherwise (C longjmp, lost exit)      -> top was UNWOUND
 *                push f.
 *  ret(f, K):    pop frames deeper than K as UNWOUND, then every frame at K
 *                (the returning one and the tail callers it replaced) as
 *                RETURNED.  A return with no frame at K (attached mid-call,
 *                lost entry) is counted and dropped.
 *  tail(f, K):   f jumps to another function.  If that target is traced its
 *                entry nests under f; otherwise f ends here as RETURNED.
 *  restart(f,K): f is about to call morestack and re-run its entry.
 *  goexit:       the goroutine ends: every open frame is UNWOUND.
 *  process records: a thread that ends ends its stack, a process that ends
 *                or execs ends all of its stacks: open frames are EXITED.  A
 *                fork copies the forking thread's open frames (C) to the
 *                child, where they go on (same entry time).
 *  C threads on other stacks: a signal handler on the alternate signal stack
 *                nests under the call it interrupted; a coroutine's calls
 *                (a key far from the current stack's frames) are a context
 *                of their own, and the stack it left resumes later
 *                (reconstruct.c, thread_stack).
 *  spill(f, K): f's arguments passed in SSE registers, read where its
 *                prologue stored them: they complete the call entered just
 *                before (its thread's or goroutine's next event, at K, of
 *                f); the call is reported (enter) only then, or at any
 *                other event of its thread or goroutine without them.
 *  unplanned(f,K): a call from a call site with no exit probe (CHECK) ends
 *                at the next event of its goroutine/thread that is not
 *                deeper: UNOBSERVED (never RETURNED), before that
 *                event's time (end_bound).
 *  end of trace: open frames are UNFINISHED.
 *  After a loss record (ring buffer full), a frame entered before it that
 *  would be popped as UNWOUND is LOST instead (its return may be among the
 *  lost events), and in Go a same-key entry over it is not taken for a tail
 *  call.
 */
#ifndef CT_RECONSTRUCT_H
#define CT_RECONSTRUCT_H

#include <stdbool.h>
#include <stdint.h>

#include "probes/event.h"
#include "format/calib.h"
#include "format/tracefile.h"

enum ct_call_status {
	CT_CALL_OPEN = 0,
	CT_CALL_RETURNED = 1,
	CT_CALL_UNWOUND = 2,
	CT_CALL_UNFINISHED = 3,
	CT_CALL_LOST = 4, /* it ended unseen: its return was among lost events */
	CT_CALL_EXITED = 5, /* its thread or process ended (exit, signal, exec) */
	CT_CALL_UNOBSERVED = 6, /* entered from a call site that had no exit probe
				   (yet): closed by the next event of its
				   goroutine/thread that is not deeper, its end
				   not observed */
};

const char *ct_status_name(enum ct_call_status s);

/* Where a goroutine came from (Go): the goroutine that ran its `go`
 * statement, when, and the statement's address (source position:
 * ct_trace_pcpos(t, pid, pc)).  Known for goroutines made while the trace
 * ran; valid during the callback that passes it (copy what you keep). */
struct ct_goroutine_origin {
	uint64_t goid;   /* the new goroutine */
	uint64_t parent; /* the goroutine that made it */
	uint64_t ts;     /* when */
	uint64_t pc;     /* its `go` statement (g.gopc, a return address); 0 unknown */
	uint32_t pid, tid; /* where the parent ran */
	uint32_t image;    /* of the process, as ct_call.image */
	uint32_t site;   /* the event's: ct_trace_pcpos finds PC's position by it */
	/* (no padding: with reconstruct.c's reference count it stays a 64-byte
	 * allocation, one for each goroutine alive) */
};

/* One call, as reconstructed.  Passed to the callbacks by pointer; valid
 * only during the callback (copy what you keep). */
struct ct_call {
	uint64_t seq;      /* entry order over the whole trace, from 0 */
	uint32_t func;     /* function id (index into the trace's table) */
	uint64_t ts_entry; /* ns, CLOCK_MONOTONIC, on its stack's corrected clock */
	uint64_t ts_exit;  /* RETURNED: return time; UNWOUND: when noticed */
	uint64_t raw_entry, raw_exit; /* the same as measured (--raw, JSON dur_raw) */
	uint32_t pid, tid; /* tid at entry */
	uint32_t exit_tid; /* tid at exit (goroutines migrate) */
	uint32_t image;    /* how many times its process had exec'd before the call:
			      the program it exec'd numbers goroutines and threads anew */
	uint64_t goid;     /* 0 for threads */
	uint64_t key;
	uint32_t depth;    /* 0 = outermost traced frame of its goroutine/thread */
	uint8_t status;    /* enum ct_call_status */
	bool tail;         /* entered through a tail call from its parent */
	bool sysstack;     /* ran on a system stack (C via cgo) for goroutine goid */
	uint32_t context;  /* thread only: 0 its own stack, n the n-th other stack it
			      switched to (a coroutine); depth counts on that stack */
	bool leaf;         /* (exit only) no traced call ran inside it */
	bool unplanned;    /* entered from a call site the plan did not know,
			      of a function it took for only called directly */
	bool indirect;     /* entered from a call site of an address-taken
			      function found while recording (its exit probe
			      added then; the first calls may be UNOBSERVED) */
	bool end_bound;    /* UNOBSERVED: ts_exit (raw_exit) is the time of the
			      later event of its goroutine/thread that showed
			      it over, so it ended before then and lasted at
			      most ts_exit - ts_entry (JSON dur_max, the text's
			      "<=").  False for every other call, and for one
			      that ended with its thread or the trace, or at
			      its tail jump into untraced code: its end is not
			      bounded by anything seen */
	/* Captured arguments / results: compacted payloads of the entry and
	 * exit site (decode with render/values.h), NULL when absent. */
	uint32_t entry_site, exit_site; /* exit_site: RET/TAIL site, or UINT32_MAX */
	const uint8_t *args;
	uint32_t args_len;
	const uint8_t *ret;
	uint32_t ret_len;
	/* Arguments passed in SSE registers (unreadable at the entry), read
	 * where the function stored them (its SPILL site, UINT32_MAX if it has
	 * none): that hit's payload, NULL when the call had not got there by
	 * its thread's next event (then they stay unavailable).  Decode the
	 * arguments with ct_values_load_args (render/values.h). */
	uint32_t spill_site;
	const uint8_t *spill;
	uint32_t spill_len;
	/* How long its thread was off CPU while it ran (ns, CT_PROC_OFFCPU:
	 * in the durations, not taken out): taken off it runnable
	 * (preempted, of which by calltrace's own thread: tracer), or
	 * waiting in the kernel (blocked: a sleep, I/O, a lock).  Known at
	 * its exit; 0 in files recorded with --no-sched or before there was
	 * this.  ct_buf_off_cpu (render.h) says it. */
	uint64_t off_preempted, off_tracer, off_blocked;
	/* Its goroutine's creation, if seen (NULL for threads and system
	 * stacks); renderers show it with the goroutine's outermost calls. */
	const struct ct_goroutine_origin *origin;
};

struct ct_recon_ops {
	void (*enter)(void *ctx, const struct ct_call *c);
	void (*exit)(void *ctx, const struct ct_call *c);
	void (*lost)(void *ctx, uint64_t ts, uint64_t n);
	/* A goroutine was made (before any call of it). */
	void (*spawn)(void *ctx, const struct ct_goroutine_origin *o);
};

struct ct_recon_stats {
	uint64_t events, calls, returned, unwound, unfinished, exited, restarts, tails;
	uint64_t cut_by_loss; /* calls ended by CT_CALL_LOST */
	uint64_t unmatched_exits; /* exits without an entry (attached mid-call, lost) */
	uint64_t unplanned;       /* calls entered from an unplanned call site */
	uint64_t indirect;        /* ... of address-taken functions (c.indirect) */
	uint64_t unobserved;      /* calls closed as CT_CALL_UNOBSERVED */
	uint64_t returned_at_dynamic; /* of returned_at_retsite: at an exit probe
					 added while recording */
	/* How returned calls were seen to end: at a RET, at their exit probe
	 * after the call (--exit=auto), or with the call they are in tail
	 * position in (or replaced by a tail call); the rest at tail jumps. */
	uint64_t returned_at_ret, returned_at_retsite, returned_with_caller;
	uint64_t returned_at_stepped; /* of returned_at_retsite: a single-stepped one */
	uint64_t sched_calls;         /* --sched: CT_FUNC_SCHED calls reported (not in calls) */
	uint64_t lost;
	uint64_t threads;         /* goroutines + threads seen */
	uint32_t max_depth;
};

/* --sched: each time a thread was off CPU (CT_PROC_OFFCPU) inside traced
 * calls is also a call of its own, of the pseudo-function CT_FUNC_SCHED
 * (shown "linux:schedule", uftrace's name for it): under the innermost
 * call open on its goroutine's or thread's stack, from when it went off
 * CPU to when it came back, RETURNED, that time in its off_preempted or
 * off_blocked.  Every renderer then shows where inside a call it
 * happened: a line in the tree, a slice in Chrome, a frame of flame
 * graphs, a row of report.  Set before the first reconstruction. */
extern bool ct_sched_calls;
#define CT_FUNC_SCHED (UINT32_MAX - 2) /* (not CT_NOFUNC, CT_FLAME_DEEPER) */

/* The costs of trace T (false: none recorded, or --raw). */
bool ct_trace_costs(struct ct_trace *t, struct ct_costs *out);
/* --raw: durations as measured (no correction). */
extern bool ct_raw_durations;

struct ct_recon;

/* SITES/NSITES: the trace's site table.  GO: the code is Go (tail calls
 * may be inferred from equal keys; a fork copies no frames) — for every
 * function until ct_recon_set_funcs gives each its own flag. */
struct ct_recon *ct_recon_new(const struct ct_file_site *sites, size_t nsites, bool go,
			      const struct ct_recon_ops *ops, void *ctx);
void ct_recon_event(struct ct_recon *r, const struct ct_rec_event *ev);
/* A reconstruction of trace T's events (Go or not, corrected by its
 * calibration unless --raw), for readers that feed events themselves. */
struct ct_recon *ct_recon_for_trace(struct ct_trace *t, const struct ct_recon_ops *ops, void *ctx);
/* Turns the overhead correction on (before the first event). */
void ct_recon_set_costs(struct ct_recon *r, const struct ct_costs *c);
/* The site table grew (a file read while it is written: live, --follow). */
void ct_recon_set_sites(struct ct_recon *r, const struct ct_file_site *sites, size_t nsites);
/* The function table (again when it grew): each function's CT_FN_GO flag
 * decides the rules that differ between Go and C code. */
void ct_recon_set_funcs(struct ct_recon *r, const struct ct_file_func *funcs, size_t nfuncs);
/* Closes every open frame as UNFINISHED at END_TS and reports them. */
void ct_recon_finish(struct ct_recon *r, uint64_t end_ts);
const struct ct_recon_stats *ct_recon_stats(const struct ct_recon *r);
/* Goroutines and threads it remembers having seen (for st.threads): those
 * that ended are forgotten. */
size_t ct_recon_remembered(const struct ct_recon *r);
void ct_recon_free(struct ct_recon *r);

/* The goroutine/thread a call belongs to, as a map key (same identity the
 * reconstruction uses for its stacks). */
uint64_t ct_call_thread_key(const struct ct_call *c);
/* The stack a call nests in, as a map key: its thread key, but for C that a
 * goroutine called through cgo (sysstack) that goroutine's: those calls
 * run inside its innermost open call (from a goroutine's point of view, the
 * system stack is where its call went on), and their own callbacks into Go
 * inside them.  Calls of one such stack come in entry order and mostly end
 * innermost first (a call of one of its two stacks may end while the other
 * has calls open in it: find it by seq).  Graph, folded and report nest by
 * it, so that a call's self time is its duration less its traced children's
 * wherever they ran. */
uint64_t ct_call_nest_key(const struct ct_call *c);

/* Runs every event of T through a reconstruction with OPS: the usual
 * driver for renderers.  Returns the stats. */
struct ct_recon_stats ct_recon_run(struct ct_trace *t, const struct ct_recon_ops *ops, void *ctx);

#endif
