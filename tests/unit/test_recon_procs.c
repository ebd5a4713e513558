/* Threads and processes in the reconstruction: process records (fork, exec,
 * thread and process ends) through the record file, reconstruct.h's
 * "process records" rule; and a C thread that runs on other stacks
 * (reconstruct.c "The stacks of a C thread"): a signal handler on the
 * alternate signal stack nests under the call it interrupted, a coroutine's
 * calls are a context of their own, a suspended stack resumes where it
 * stopped, an unwinding that stays within a page is still an unwinding. */
#include "unit.h"

#include "plan/sites.h"
#include "probes/event.h"
#include "reconstruct/reconstruct.h"
#include "format/calib.h"
#include "format/tracefile.h"
#include "util/util.h"

#include <stdlib.h>
#include <unistd.h>

enum { FM, FW, NF };
enum { S_M_ENT, S_M_RET, S_W_ENT, S_W_RET, NS };

static const struct ct_file_site psites[NS] = {
	{S_M_ENT, 0x1000, FM, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_M_RET, 0x1010, FM, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_W_ENT, 0x2000, FW, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_W_RET, 0x2010, FW, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
};

struct seen {
	char type; /* 'E' or 'X' */
	uint32_t func, pid, tid, depth;
	uint8_t status;
	uint64_t seq, ts_entry, ts_exit, goid;
	uint8_t arg0;
	uint32_t context;
	uint64_t off_preempted, off_tracer, off_blocked;
	bool leaf, sysstack;
};
static CT_VEC(struct seen) seen;

static void note(char type, const struct ct_call *c)
{
	struct seen s = {type, c->func, c->pid, c->tid, c->depth, c->status, c->seq, c->ts_entry, c->ts_exit,
			 c->goid, c->args_len ? c->args[0] : 0, c->context, c->off_preempted, c->off_tracer,
			 c->off_blocked, c->leaf, c->sysstack};
	CT_VEC_PUSH(seen, s);
}

static void on_enter(void *ctx, const struct ct_call *c)
{
	(void)ctx;
	note('E', c);
}

static void on_exit_call(void *ctx, const struct ct_call *c)
{
	(void)ctx;
	note('X', c);
}

static const struct ct_recon_ops ops = {on_enter, on_exit_call, NULL, NULL};

static void call(struct ct_recon *r, uint32_t pid, uint32_t tid, uint64_t goid, uint64_t ts, uint64_t key,
		 uint32_t site, uint8_t arg)
{
	struct ct_rec_event e = {0};
	e.ts = ts;
	e.pid = pid;
	e.tid = tid;
	e.goid = goid;
	e.key = key;
	e.site = site;
	e.kind = psites[site].kind;
	if (arg) {
		e.payload = &arg;
		e.payload_len = 1;
	}
	ct_recon_event(r, &e);
}

/* A process record WHAT (CT_PROC_*); GOID and KEY for those that have them */
static void proc_goid(struct ct_recon *r, uint8_t what, uint32_t pid, uint32_t tid, uint64_t goid, uint64_t key,
		      uint32_t child, uint64_t ts)
{
	struct ct_rec_event e = {0};
	e.kind = CT_EV_PROC_REC;
	e.proc = what;
	e.pid = pid;
	e.tid = tid;
	e.goid = goid;
	e.key = key;
	e.child = child;
	e.ts = ts;
	ct_recon_event(r, &e);
}

static void proc(struct ct_recon *r, uint8_t what, uint32_t pid, uint32_t tid, uint32_t child, uint64_t ts)
{
	proc_goid(r, what, pid, tid, 0, 0, child, ts);
}

static const struct seen *find(char type, uint32_t func, uint32_t pid)
{
	for (size_t i = 0; i < seen.n; i++)
		if (seen.v[i].type == type && seen.v[i].func == func && seen.v[i].pid == pid)
			return &seen.v[i];
	return NULL;
}

TEST(recon_thread_end_closes_its_frames_only)
{
	CT_VEC_FREE(seen);
	struct ct_recon *r = ct_recon_new(psites, NS, false, &ops, NULL);
	CHECK_STR(ct_status_name(CT_CALL_EXITED), "exited");
	call(r, 10, 10, 0, 100, 5, S_M_ENT, 0);
	call(r, 10, 11, 0, 110, 5, S_W_ENT, 0);
	call(r, 10, 11, 0, 120, 9, S_M_ENT, 0);
	proc(r, CT_PROC_THREAD_EXIT, 10, 11, 0, 130); /* pthread_exit in thread 11 */
	call(r, 10, 10, 0, 140, 5, S_M_RET, 0);
	ct_recon_finish(r, 1000);
	CHECK_EQ_U(seen.n, 6);
	/* thread 11: innermost first, at the thread's end */
	CHECK(seen.v[3].type == 'X' && seen.v[3].func == FM && seen.v[3].tid == 11);
	CHECK_EQ_U(seen.v[3].status, CT_CALL_EXITED);
	CHECK_EQ_U(seen.v[3].ts_exit, 130);
	CHECK(seen.v[4].type == 'X' && seen.v[4].func == FW && seen.v[4].status == CT_CALL_EXITED);
	CHECK(seen.v[5].type == 'X' && seen.v[5].func == FM && seen.v[5].tid == 10);
	CHECK_EQ_U(seen.v[5].status, CT_CALL_RETURNED);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->exited, 2);
	CHECK_EQ_U(st->returned, 1);
	CHECK_EQ_U(st->unfinished, 0);
	ct_recon_free(r);
	CT_VEC_FREE(seen);
}

TEST(recon_process_end_closes_every_stack_of_it)
{
	CT_VEC_FREE(seen);
	struct ct_recon *r = ct_recon_new(psites, NS, true, &ops, NULL);
	call(r, 10, 10, 1, 100, 5, S_M_ENT, 0); /* goroutine 1 */
	call(r, 10, 12, 7, 110, 5, S_W_ENT, 0); /* goroutine 7 */
	call(r, 20, 20, 1, 115, 5, S_W_ENT, 0); /* another process */
	proc(r, CT_PROC_EXIT, 10, 12, 0, 130);  /* os.Exit from any thread */
	call(r, 20, 20, 1, 140, 5, S_W_RET, 0);
	/* the same pid may not come back, but nothing of it is left open */
	proc(r, CT_PROC_EXIT, 10, 10, 0, 150);
	ct_recon_finish(r, 1000);
	CHECK_EQ_U(seen.n, 6);
	/* stacks end in the order their outermost call began */
	CHECK(seen.v[3].type == 'X' && seen.v[3].func == FM && seen.v[3].goid == 1 && seen.v[3].pid == 10);
	CHECK(seen.v[4].type == 'X' && seen.v[4].func == FW && seen.v[4].goid == 7);
	CHECK_EQ_U(seen.v[3].status, CT_CALL_EXITED);
	CHECK_EQ_U(seen.v[4].status, CT_CALL_EXITED);
	CHECK_EQ_U(seen.v[4].ts_exit, 130);
	CHECK(seen.v[5].pid == 20 && seen.v[5].status == CT_CALL_RETURNED);
	ct_recon_free(r);
	CT_VEC_FREE(seen);
}

TEST(recon_fork_continues_open_calls_in_the_child)
{
	CT_VEC_FREE(seen);
	struct ct_recon *r = ct_recon_new(psites, NS, false, &ops, NULL);
	call(r, 10, 10, 0, 100, 5, S_M_ENT, 42);
	call(r, 10, 10, 0, 105, 9, S_W_ENT, 0);
	call(r, 10, 10, 0, 106, 9, S_W_RET, 0);
	call(r, 10, 10, 0, 107, 9, S_W_ENT, 0);  /* fork() is called in here */
	proc(r, CT_PROC_FORK, 10, 10, 33, 110);
	proc(r, CT_PROC_EXIT, 10, 10, 0, 120);   /* the parent _exits */
	call(r, 33, 33, 0, 130, 9, S_W_RET, 0);  /* the child returns from both */
	call(r, 33, 33, 0, 140, 5, S_M_RET, 0);
	ct_recon_finish(r, 1000);
	const struct seen *pm = find('X', FM, 10), *cm = find('X', FM, 33), *ce = find('E', FM, 33);
	CHECK(pm && cm && ce);
	CHECK_EQ_U(pm->status, CT_CALL_EXITED);
	CHECK_EQ_U(pm->ts_exit, 120);
	/* the child's copy: same entry time and arguments, its own identity */
	CHECK_EQ_U(cm->status, CT_CALL_RETURNED);
	CHECK_EQ_U(cm->ts_entry, 100);
	CHECK_EQ_U(cm->ts_exit, 140);
	CHECK_EQ_U(cm->tid, 33);
	CHECK_EQ_U(cm->arg0, 42);
	CHECK(ce->seq > pm->seq);
	const struct seen *cw = find('X', FW, 33);
	CHECK(cw && cw->status == CT_CALL_RETURNED && cw->ts_entry == 107 && cw->depth == 1);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->calls, 5);
	CHECK_EQ_U(st->unmatched_exits, 0);
	CHECK_EQ_U(st->threads, 2);
	ct_recon_free(r);

	/* Go forks only to exec: nothing is copied */
	CT_VEC_FREE(seen);
	r = ct_recon_new(psites, NS, true, &ops, NULL);
	call(r, 10, 10, 1, 100, 5, S_M_ENT, 0);
	proc(r, CT_PROC_FORK, 10, 10, 33, 110);
	proc(r, CT_PROC_EXEC, 33, 33, 0, 111);
	ct_recon_finish(r, 1000);
	CHECK_EQ_U(ct_recon_stats(r)->calls, 1);
	CHECK_EQ_U(ct_recon_stats(r)->unfinished, 1);
	ct_recon_free(r);
	CT_VEC_FREE(seen);
}

TEST(tracefile_process_records_round_trip)
{
	char path[] = "/tmp/ct-procrec-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	unlink(path);
	struct ct_file_func funcs[NF] = {{FM, "m", 0x1000, 16, 0}, {FW, "w", 0x2000, 16, 0}};
	struct ct_writer *w = ct_writer_create(path);
	CHECK(w != NULL);
	ct_writer_meta(w, "clock.start_ns", "%llu", 1000ULL);
	CHECK_EQ_I(ct_writer_begin(w, funcs, NF, psites, NS), 0);
	struct ct_event e = {0};
	e.ts = 1100;
	e.pid = e.tid = 10;
	e.key = 5;
	e.site = S_M_ENT;
	ct_writer_event(w, &e, NULL);
	ct_writer_proc(w, 1200, CT_PROC_FORK, 10, 11, 33);
	ct_writer_proc(w, 1150, CT_PROC_THREAD_EXIT, 10, 12, 0); /* another CPU's clock */
	e.ts = 1300;
	e.site = S_M_RET;
	ct_writer_event(w, &e, NULL); /* same thread as the previous call event */
	ct_writer_proc(w, 1400, CT_PROC_EXIT, 10, 10, 0);
	/* off CPU: its goroutine, its time (past 32 bits: a sleep of
	 * seconds) and its flags; a thread's own (goroutine 0) */
	ct_writer_offcpu(w, 5000000000ULL, 10, 11, 42, 4500000000ULL, CT_OFFCPU_PREEMPTED | CT_OFFCPU_BY_TRACER);
	ct_writer_stall(w, 5000000100ULL, 10, 11, 42, 30);
	ct_writer_offcpu(w, 5000000200ULL, 10, 12, 0, 17, 0);
	CHECK_EQ_I(ct_writer_close(w), 0);

	struct ct_trace t;
	CHECK_EQ_I(ct_trace_open(&t, path), 0);
	struct ct_event_iter it;
	struct ct_rec_event ev;
	ct_iter_init(&it, &t);
	struct {
		uint8_t kind, proc;
		uint64_t ts;
		uint32_t pid, tid, child;
		uint64_t goid, key; /* (key: CT_PROC_OFFCPU's time off) */
	} want[] = {
		{CT_SITE_ENTRY, 0, 1100, 10, 10, 0, 0, 5},
		{CT_EV_PROC_REC, CT_PROC_FORK, 1200, 10, 11, 33, 0, 0},
		{CT_EV_PROC_REC, CT_PROC_THREAD_EXIT, 1150, 10, 12, 0, 0, 0},
		{CT_SITE_RET, 0, 1300, 10, 10, 0, 0, 5},
		{CT_EV_PROC_REC, CT_PROC_EXIT, 1400, 10, 10, 0, 0, 0},
		{CT_EV_PROC_REC, CT_PROC_OFFCPU, 5000000000ULL, 10, 11, CT_OFFCPU_PREEMPTED | CT_OFFCPU_BY_TRACER, 42,
		 4500000000ULL},
		{CT_EV_PROC_REC, CT_PROC_STALL, 5000000100ULL, 10, 11, 30, 42, 0},
		{CT_EV_PROC_REC, CT_PROC_OFFCPU, 5000000200ULL, 10, 12, 0, 0, 17},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK(ct_iter_next(&it, &ev));
		CHECK_EQ_U(ev.kind, want[i].kind);
		CHECK_EQ_U(ev.proc, want[i].proc);
		CHECK_EQ_U(ev.ts, want[i].ts);
		CHECK_EQ_U(ev.pid, want[i].pid);
		CHECK_EQ_U(ev.tid, want[i].tid);
		CHECK_EQ_U(ev.child, want[i].child);
		CHECK_EQ_U(ev.goid, want[i].goid);
		if (want[i].proc == CT_PROC_OFFCPU || ev.kind != CT_EV_PROC_REC)
			CHECK_EQ_U(ev.key, want[i].key);
	}
	CHECK(!ct_iter_next(&it, &ev));
	CHECK(!t.truncated);
	ct_iter_free(&it);
	ct_trace_close(&t);
	unlink(path);
}

/* A thread off CPU (CT_PROC_OFFCPU) while calls were open on its stack:
 * each of them ran that long off CPU (blocked or preempted, by calltrace's
 * thread or not); a call that ended before, another thread's calls, and a
 * goroutine the record does not name get none.  A goroutine's time goes
 * to its own stack, whichever thread ran it. */
static void off_cpu(struct ct_recon *r, uint32_t pid, uint32_t tid, uint64_t goid, uint64_t ns, uint32_t flags,
		    uint64_t ts)
{
	proc_goid(r, CT_PROC_OFFCPU, pid, tid, goid, ns, flags, ts);
}

/* Goroutine 5's call (FM) calls C (FW) through cgo, on its thread's system
 * stack, where it is blocked for 30 ns. */
static void cgo_blocked(struct ct_recon *r)
{
	call(r, 10, 14, 5, 100, 5, S_M_ENT, 0);
	struct ct_rec_event c = {0};
	c.ts = 110, c.pid = 10, c.tid = 14, c.goid = 5, c.key = CT_C_KEY_BASE - 0x7ffd000, c.site = S_W_ENT;
	c.kind = CT_SITE_ENTRY, c.flags = CT_EV_SYSSTACK;
	ct_recon_event(r, &c);
	off_cpu(r, 10, 14, 5, 30, 0, 150);
	c.ts = 160, c.site = S_W_RET, c.kind = CT_SITE_RET;
	ct_recon_event(r, &c);
	call(r, 10, 14, 5, 170, 5, S_M_RET, 0);
}

TEST(recon_off_cpu_time_goes_to_the_calls_open_on_its_stack)
{
	CT_VEC_FREE(seen);
	struct ct_recon *r = ct_recon_new(psites, NS, false, &ops, NULL);
	call(r, 10, 10, 0, 100, 5, S_M_ENT, 0);
	call(r, 10, 11, 0, 105, 5, S_M_ENT, 0); /* another thread's call, open throughout */
	call(r, 10, 10, 0, 110, 9, S_W_ENT, 0);
	off_cpu(r, 10, 10, 0, 50, 0, 170);
	call(r, 10, 10, 0, 180, 9, S_W_RET, 0);
	off_cpu(r, 10, 10, 0, 7, CT_OFFCPU_PREEMPTED | CT_OFFCPU_BY_TRACER, 190);
	off_cpu(r, 10, 10, 0, 3, CT_OFFCPU_PREEMPTED, 195);
	off_cpu(r, 10, 10, 77, 1000, 0, 196); /* a goroutine with no calls here */
	call(r, 10, 10, 0, 200, 5, S_M_RET, 0);
	call(r, 10, 11, 0, 210, 5, S_M_RET, 0);
	const struct seen *w = find('X', FW, 10);
	CHECK(w != NULL);
	CHECK_EQ_U(w->off_blocked, 50);
	CHECK_EQ_U(w->off_preempted, 0);
	size_t outer = 0;
	for (size_t i = 0; i < seen.n; i++) {
		const struct seen *s = &seen.v[i];
		if (s->type != 'X' || s->func != FM)
			continue;
		if (s->tid == 10) {
			CHECK_EQ_U(s->off_blocked, 50);
			CHECK_EQ_U(s->off_preempted, 10);
			CHECK_EQ_U(s->off_tracer, 7);
		} else {
			CHECK_EQ_U(s->off_blocked + s->off_preempted + s->off_tracer, 0);
		}
		outer++;
	}
	CHECK_EQ_U(outer, 2);
	ct_recon_finish(r, 300);
	ct_recon_free(r);

	/* time off CPU that began before a call's entry (its probe's BPF
	 * program slept before its clock read): that call gets the part since */
	CT_VEC_FREE(seen);
	r = ct_recon_new(psites, NS, false, &ops, NULL);
	call(r, 10, 10, 0, 100, 5, S_M_ENT, 0);
	call(r, 10, 10, 0, 300, 9, S_W_ENT, 0);
	off_cpu(r, 10, 10, 0, 50, 0, 320);
	call(r, 10, 10, 0, 330, 9, S_W_RET, 0);
	call(r, 10, 10, 0, 340, 5, S_M_RET, 0);
	CHECK_EQ_U(find('X', FW, 10)->off_blocked, 20);
	CHECK_EQ_U(find('X', FM, 10)->off_blocked, 50);
	ct_recon_finish(r, 400);
	ct_recon_free(r);

	/* Go: goroutine 3's calls, its thread changed meanwhile */
	CT_VEC_FREE(seen);
	r = ct_recon_new(psites, NS, true, &ops, NULL);
	call(r, 10, 12, 3, 100, 5, S_M_ENT, 0);
	call(r, 10, 12, 4, 101, 5, S_W_ENT, 0);
	off_cpu(r, 10, 13, 3, 40, CT_OFFCPU_PREEMPTED, 150);
	call(r, 10, 13, 3, 160, 5, S_M_RET, 0);
	call(r, 10, 12, 4, 170, 5, S_W_RET, 0);
	const struct seen *g3 = find('X', FM, 10), *g4 = find('X', FW, 10);
	CHECK(g3 != NULL && g4 != NULL);
	CHECK_EQ_U(g3->off_preempted, 40);
	CHECK_EQ_U(g4->off_preempted + g4->off_blocked, 0);
	ct_recon_finish(r, 300);
	ct_recon_free(r);

	/* goroutine 5 blocked in C it called through cgo (on its thread's
	 * system stack): the C call and the Go call under it both were */
	CT_VEC_FREE(seen);
	r = ct_recon_new(psites, NS, true, &ops, NULL);
	cgo_blocked(r);
	const struct seen *go = find('X', FM, 10), *cgo = find('X', FW, 10);
	CHECK(go != NULL && cgo != NULL);
	CHECK_EQ_U(cgo->off_blocked, 30);
	CHECK_EQ_U(go->off_blocked, 30);
	ct_recon_finish(r, 300);
	ct_recon_free(r);
	CT_VEC_FREE(seen);
}

/* --sched: each time off CPU inside traced calls is also a call of its own
 * (CT_FUNC_SCHED) under the innermost call open on that stack, reported
 * between that call's entry and exit, from when the thread went off CPU
 * to when it came back, with its kind; the call over it is no leaf.  None
 * where nothing is open (the time is in no traced call), nor for another
 * thread. */
static size_t index_of(char type, uint32_t func, uint32_t tid)
{
	for (size_t i = 0; i < seen.n; i++)
		if (seen.v[i].type == type && seen.v[i].func == func && seen.v[i].tid == tid)
			return i;
	return SIZE_MAX;
}

TEST(recon_sched_calls_sit_under_the_call_they_interrupted)
{
	CT_VEC_FREE(seen);
	ct_sched_calls = true;
	struct ct_recon *r = ct_recon_new(psites, NS, false, &ops, NULL);
	call(r, 10, 10, 0, 100, 5, S_M_ENT, 0);
	call(r, 10, 11, 0, 105, 5, S_M_ENT, 0);
	call(r, 10, 10, 0, 110, 9, S_W_ENT, 0);
	off_cpu(r, 10, 10, 0, 50, 0, 170);
	call(r, 10, 10, 0, 180, 9, S_W_RET, 0);
	off_cpu(r, 10, 10, 0, 7, CT_OFFCPU_PREEMPTED | CT_OFFCPU_BY_TRACER, 190);
	off_cpu(r, 10, 12, 0, 1000, 0, 195); /* a thread with nothing open */
	call(r, 10, 10, 0, 200, 5, S_M_RET, 0);
	call(r, 10, 11, 0, 210, 5, S_M_RET, 0);
	size_t we = index_of('E', FW, 10), wx = index_of('X', FW, 10), mx = index_of('X', FM, 10);
	size_t n = 0;
	for (size_t i = 0; i < seen.n; i++)
		n += seen.v[i].func == CT_FUNC_SCHED;
	CHECK_EQ_U(n, 4); /* two calls: an entry and an exit each */
	size_t s1 = index_of('E', CT_FUNC_SCHED, 10);
	CHECK(we < s1 && s1 + 1 < wx); /* inside W */
	const struct seen *e = &seen.v[s1], *x = &seen.v[s1 + 1];
	CHECK(x->type == 'X' && x->func == CT_FUNC_SCHED && x->seq == e->seq);
	CHECK_EQ_U(x->depth, 2);
	CHECK_EQ_U(x->ts_entry, 120);
	CHECK_EQ_U(x->ts_exit, 170);
	CHECK_EQ_U(x->status, CT_CALL_RETURNED);
	CHECK_EQ_U(x->off_blocked, 50);
	CHECK_EQ_U(x->off_preempted, 0);
	CHECK(x->leaf);
	CHECK(!seen.v[wx].leaf);
	CHECK_EQ_U(seen.v[wx].off_blocked, 50); /* the call's own note is kept */
	/* the second: under M, after W ended, preempted by calltrace */
	const struct seen *y = &seen.v[wx + 2];
	CHECK(wx + 2 < mx && seen.v[wx + 1].func == CT_FUNC_SCHED && y->func == CT_FUNC_SCHED && y->type == 'X');
	CHECK_EQ_U(y->depth, 1);
	CHECK_EQ_U(y->ts_entry, 183);
	CHECK_EQ_U(y->off_preempted, 7);
	CHECK_EQ_U(y->off_tracer, 7);
	CHECK_EQ_U(ct_recon_stats(r)->sched_calls, 2);
	ct_recon_finish(r, 300);
	ct_recon_free(r);

	/* goroutine 5 blocked in C it called through cgo: under the C call,
	 * on its system stack */
	CT_VEC_FREE(seen);
	r = ct_recon_new(psites, NS, true, &ops, NULL);
	cgo_blocked(r);
	size_t ce = index_of('E', FW, 14), cs = index_of('X', CT_FUNC_SCHED, 14);
	const struct seen *cgo = &seen.v[ce];
	CHECK(ce < cs && cs < index_of('X', FW, 14));
	CHECK_EQ_U(seen.v[cs].goid, 5);
	CHECK(cgo->sysstack && seen.v[cs].sysstack);
	CHECK_EQ_U(seen.v[cs].depth, cgo->depth + 1);
	CHECK_EQ_U(seen.v[cs].off_blocked, 30);
	ct_recon_finish(r, 300);
	ct_recon_free(r);
	ct_sched_calls = false;
	CT_VEC_FREE(seen);
}

/* A thread still off CPU when the trace ended (CT_OFFCPU_AT_END, written by
 * the recorder at the end): its open calls have that time, and --sched's
 * linux:schedule call for it is unfinished, as they are (its end was not
 * seen). */
TEST(recon_off_cpu_until_the_end_is_unfinished)
{
	CT_VEC_FREE(seen);
	ct_sched_calls = true;
	struct ct_recon *r = ct_recon_new(psites, NS, false, &ops, NULL);
	call(r, 10, 10, 0, 100, 5, S_M_ENT, 0);
	off_cpu(r, 10, 10, 0, 150, CT_OFFCPU_AT_END, 300); /* blocked 150..300, the end */
	ct_recon_finish(r, 300);
	size_t sx = index_of('X', CT_FUNC_SCHED, 10), mx = index_of('X', FM, 10);
	CHECK(sx < mx);
	CHECK_EQ_U(seen.v[sx].status, CT_CALL_UNFINISHED);
	CHECK_EQ_U(seen.v[sx].ts_entry, 150);
	CHECK_EQ_U(seen.v[sx].off_blocked, 150);
	CHECK_EQ_U(seen.v[mx].status, CT_CALL_UNFINISHED);
	CHECK_EQ_U(seen.v[mx].off_blocked, 150);
	ct_recon_free(r);
	ct_sched_calls = false;
	CT_VEC_FREE(seen);
}

/* A thread that slept waiting for calltrace's probe changes (a stall: its
 * record comes after the time off CPU that held the wait): that wait is
 * calltrace's, out of the calls' durations, out of their time off CPU, and
 * out of the linux:schedule call (--sched), reported before the call's end. */
TEST(recon_a_stall_inside_a_time_off_cpu_is_calltraces)
{
	CT_VEC_FREE(seen);
	ct_sched_calls = true;
	struct ct_recon *r = ct_recon_new(psites, NS, false, &ops, NULL);
	struct ct_costs costs = {0};
	costs.ok = true; /* (every hit priced 0: only the stall moves the clock) */
	ct_recon_set_costs(r, &costs);
	call(r, 10, 10, 0, 100, 5, S_M_ENT, 0);
	off_cpu(r, 10, 10, 0, 50, 0, 170);               /* blocked 120..170 */
	proc_goid(r, CT_PROC_STALL, 10, 10, 0, 0, 30, 175); /* 30 of it waiting for calltrace */
	call(r, 10, 10, 0, 200, 5, S_M_RET, 0);
	size_t sx = index_of('X', CT_FUNC_SCHED, 10), mx = index_of('X', FM, 10);
	CHECK(sx < mx);
	CHECK_EQ_U(seen.v[sx].ts_entry, 120);
	CHECK_EQ_U(seen.v[sx].ts_exit, 140);
	CHECK_EQ_U(seen.v[sx].off_blocked, 20);
	CHECK_EQ_U(seen.v[mx].ts_exit, 170);
	CHECK_EQ_U(seen.v[mx].off_blocked, 20);
	ct_recon_finish(r, 300);
	ct_recon_free(r);
	ct_sched_calls = false;
	CT_VEC_FREE(seen);
}

/* ---- other stacks of a C thread ---- */

#define SNF 6
#define ENT(f) (2 * (f))
#define RET(f) (2 * (f) + 1)

static struct ct_file_site ssites[2 * SNF];

static struct ct_recon *start(void)
{
	for (uint32_t f = 0; f < SNF; f++) {
		ssites[ENT(f)] = (struct ct_file_site){.id = ENT(f), .addr = 0x1000 * (f + 1), .func = f,
							.kind = CT_SITE_ENTRY, .target_func = CT_NOFUNC};
		ssites[RET(f)] = (struct ct_file_site){.id = RET(f), .addr = 0x1000 * (f + 1) + 0x10, .func = f,
							.kind = CT_SITE_RET, .target_func = CT_NOFUNC};
	}
	CT_VEC_FREE(seen);
	return ct_recon_new(ssites, 2 * SNF, false, &ops, NULL);
}

static uint64_t now;

/* A hit of thread 7 (in a Go program: of goroutine GOID, 0 the thread's own). */
static void ghit(struct ct_recon *r, uint32_t site, uint64_t goid, uint64_t key, uint16_t flags)
{
	struct ct_rec_event e = {0};
	e.ts = ++now;
	e.pid = e.tid = 7;
	e.goid = goid;
	e.key = key;
	e.site = site;
	e.kind = ssites[site].kind;
	e.flags = flags;
	ct_recon_event(r, &e);
}

static void hit(struct ct_recon *r, uint32_t site, uint64_t key, uint16_t flags)
{
	ghit(r, site, 0, key, flags);
}

static struct ct_recon *start_go(void)
{
	struct ct_recon *r = start();
	ct_recon_free(r);
	return ct_recon_new(ssites, 2 * SNF, true, &ops, NULL);
}

/* The exit record of FUNC: its depth, context and status. */
static const struct seen *exit_of(uint32_t func)
{
	return find('X', func, 7);
}

#define K 0x7ffff0000000ULL /* a key on the thread's own stack */

TEST(recon_signal_handler_on_altstack_nests_under_interrupted_call)
{
	struct ct_recon *r = start();
	hit(r, ENT(0), K, 0);
	hit(r, ENT(1), K + 0x100, 0);
	/* the handler's stack lies inside frame 0: a smaller key */
	hit(r, ENT(2), K + 0x40, CT_EV_ALTSTACK);
	hit(r, ENT(3), K + 0x80, CT_EV_ALTSTACK);
	hit(r, RET(3), K + 0x80, CT_EV_ALTSTACK);
	hit(r, RET(2), K + 0x40, CT_EV_ALTSTACK);
	hit(r, RET(1), K + 0x100, 0);
	hit(r, RET(0), K, 0);
	ct_recon_finish(r, 1000);
	for (uint32_t f = 0; f < 4; f++) {
		const struct seen *x = exit_of(f);
		CHECK(x != NULL);
		CHECK_EQ_U(x->status, CT_CALL_RETURNED);
		CHECK_EQ_U(x->depth, f); /* handler under the interrupted call */
		CHECK_EQ_U(x->context, 0);
	}
	CHECK_EQ_U(ct_recon_stats(r)->threads, 1);
	ct_recon_free(r);

	/* a handler left by siglongjmp: its frames are unwound at the next
	 * hit on the thread's own stack */
	r = start();
	hit(r, ENT(0), K, 0);
	hit(r, ENT(1), K + 0x100, 0);
	hit(r, ENT(2), K + 0x40, CT_EV_ALTSTACK);
	hit(r, ENT(3), K + 0x100, 0); /* back where frame 1 was called from */
	hit(r, RET(3), K + 0x100, 0);
	hit(r, RET(0), K, 0);
	ct_recon_finish(r, 1000);
	CHECK_EQ_U(exit_of(2)->status, CT_CALL_UNWOUND);
	CHECK_EQ_U(exit_of(1)->status, CT_CALL_UNWOUND);
	CHECK_EQ_U(exit_of(3)->status, CT_CALL_RETURNED);
	CHECK_EQ_U(exit_of(3)->depth, 1);
	CHECK_EQ_U(exit_of(0)->status, CT_CALL_RETURNED);
	ct_recon_free(r);
	CT_VEC_FREE(seen);
}

/* A crafted file can give two stacks one key: a goroutine's signal stack
 * (goid set, a C program) and then the thread's own signal stack.  The
 * first lives on; its call still ends (it leaked, never reported). */
TEST(recon_stacks_whose_keys_meet_both_end)
{
	struct ct_recon *r = start();
	ghit(r, ENT(0), 5, K, CT_EV_ALTSTACK);
	hit(r, ENT(1), K + 0x40, CT_EV_ALTSTACK);
	hit(r, ENT(2), K + 0x80, 0);
	ct_recon_finish(r, 1000);
	for (uint32_t f = 0; f < 3; f++)
		CHECK(exit_of(f) != NULL);
	ct_recon_free(r);
	r = start();
	ghit(r, ENT(0), 5, K, CT_EV_ALTSTACK);
	hit(r, ENT(1), K + 0x40, CT_EV_ALTSTACK);
	ct_recon_free(r); /* (unfinished: freed all the same) */
	CT_VEC_FREE(seen);
}

/* The order of the exit records, as "f f f" (function numbers). */
static void exit_order(char *out, size_t n)
{
	size_t at = 0;
	out[0] = 0;
	for (size_t i = 0; i < seen.n && at + 4 < n; i++)
		if (seen.v[i].type == 'X')
			at += (size_t)snprintf(out + at, n - at, "%s%u", at ? " " : "", seen.v[i].func);
}

TEST(recon_go_signal_handler_nests_under_the_goroutine)
{
	/* Go's handler on the gsignal stack (reconstruct.c "A Go thread's
	 * signal handler"): runtime.sigtrampgo (2) and sighandler (3), keyed
	 * from the signal stack's top, smaller keys than the goroutine's */
	struct ct_recon *r = start_go();
	ghit(r, ENT(0), 5, 0x100, 0);
	ghit(r, ENT(1), 5, 0x200, 0);
	ghit(r, ENT(2), 5, 0x40, CT_EV_ALTSTACK);
	ghit(r, ENT(3), 5, 0x80, CT_EV_ALTSTACK);
	ghit(r, RET(3), 5, 0x80, CT_EV_ALTSTACK);
	ghit(r, RET(2), 5, 0x40, CT_EV_ALTSTACK);
	ghit(r, ENT(4), 5, 0x300, 0);
	ghit(r, RET(4), 5, 0x300, 0);
	ghit(r, RET(1), 5, 0x200, 0);
	ghit(r, RET(0), 5, 0x100, 0);
	ct_recon_finish(r, 1000);
	for (uint32_t f = 0; f < 5; f++) {
		const struct seen *x = exit_of(f);
		CHECK(x != NULL);
		CHECK_EQ_U(x->status, CT_CALL_RETURNED);
		CHECK_EQ_U(x->depth, f < 4 ? f : 2);
		CHECK_EQ_U(x->goid, 5);
	}
	CHECK_EQ_U(ct_recon_stats(r)->threads, 1);
	ct_recon_free(r);

	/* a handler whose end was not seen: unwound at the thread's next hit
	 * off the signal stack; a handler on an idle thread (no goroutine) is
	 * the thread's, at depth 0 */
	r = start_go();
	ghit(r, ENT(0), 5, 0x100, 0);
	ghit(r, ENT(2), 5, 0x40, CT_EV_ALTSTACK);
	ghit(r, ENT(1), 5, 0x200, 0);
	ghit(r, RET(1), 5, 0x200, 0);
	ghit(r, ENT(3), 0, 0x40, CT_EV_ALTSTACK);
	ghit(r, RET(3), 0, 0x40, CT_EV_ALTSTACK);
	ghit(r, RET(0), 5, 0x100, 0);
	ct_recon_finish(r, 1000);
	CHECK_EQ_U(exit_of(2)->status, CT_CALL_UNWOUND);
	CHECK_EQ_U(exit_of(2)->depth, 1);
	CHECK_EQ_U(exit_of(1)->status, CT_CALL_RETURNED);
	CHECK_EQ_U(exit_of(1)->depth, 1);
	CHECK_EQ_U(exit_of(3)->status, CT_CALL_RETURNED);
	CHECK_EQ_U(exit_of(3)->depth, 0);
	CHECK_EQ_U(exit_of(3)->goid, 0);
	CHECK_EQ_U(exit_of(0)->status, CT_CALL_RETURNED);
	ct_recon_free(r);
	CT_VEC_FREE(seen);
}


TEST(recon_frames_open_in_a_handler_end_innermost_first)
{
	/* A trace that ends (or a thread that ends) inside a handler: the
	 * handler's frames end before the frames it interrupted, as each
	 * renderer expects of one thread (the filter and the text tree kept
	 * the interrupted call's freed arguments, found by the fuzzer).  So
	 * do a Go thread's (go_signal_stack). */
	for (int run = 0; run < 4; run++) {
		int thread_ends = run & 1, go = run >> 1;
		struct ct_recon *r = go ? start_go() : start();
		hit(r, ENT(0), K, 0);
		hit(r, ENT(1), K + 0x100, 0);
		hit(r, ENT(2), K + 0x40, CT_EV_ALTSTACK);
		hit(r, ENT(3), K + 0x80, CT_EV_ALTSTACK);
		if (thread_ends)
			proc(r, CT_PROC_THREAD_EXIT, 7, 7, 0, ++now);
		ct_recon_finish(r, 1000);
		char order[64];
		exit_order(order, sizeof(order));
		CHECK_STR(order, "3 2 1 0");
		CHECK_EQ_U(exit_of(3)->depth, 3);
		CHECK_EQ_U(exit_of(3)->status, thread_ends ? CT_CALL_EXITED : CT_CALL_UNFINISHED);
		CHECK_EQ_U(exit_of(0)->status, thread_ends ? CT_CALL_EXITED : CT_CALL_UNFINISHED);
		ct_recon_free(r);
	}
	CT_VEC_FREE(seen);
}

TEST(recon_coroutine_stack_inside_a_frame_is_a_context)
{
	/* uftrace's ucontext shape: the coroutine's stack is an array in frame
	 * 0, more than a page above where frame 0 calls from */
	struct ct_recon *r = start();
	hit(r, ENT(0), K, 0);
	hit(r, ENT(1), K + 0x3000, 0);  /* foo: switches away */
	hit(r, ENT(2), K + 0x800, 0);   /* bar, on the coroutine stack */
	hit(r, RET(2), K + 0x800, 0);
	hit(r, RET(1), K + 0x3000, 0);  /* foo resumes and returns */
	hit(r, ENT(3), K + 0x3000, 0);  /* baz */
	hit(r, RET(3), K + 0x3000, 0);
	hit(r, RET(0), K, 0);
	ct_recon_finish(r, 1000);
	CHECK_EQ_U(exit_of(1)->status, CT_CALL_RETURNED);
	CHECK_EQ_U(exit_of(1)->context, 0);
	CHECK_EQ_U(exit_of(2)->status, CT_CALL_RETURNED);
	CHECK_EQ_U(exit_of(2)->context, 1);
	CHECK_EQ_U(exit_of(2)->depth, 0);
	CHECK_EQ_U(exit_of(3)->depth, 1);
	CHECK_EQ_U(exit_of(3)->context, 0);
	CHECK_EQ_U(ct_recon_stats(r)->unwound, 0);
	CHECK_EQ_U(ct_recon_stats(r)->threads, 1);
	ct_recon_free(r);
	CT_VEC_FREE(seen);
}

TEST(recon_coroutines_far_away_resume_in_turn)
{
	struct ct_recon *r = start();
	uint64_t c1 = K + (64ULL << 20), c2 = K + (65ULL << 20); /* stacks 64 MiB away */
	hit(r, ENT(0), K, 0);           /* run */
	hit(r, ENT(1), K + 0x100, 0);   /* resume(1) */
	hit(r, ENT(2), c1, 0);          /* body 1: a new context */
	hit(r, ENT(4), c1 + 0x80, 0);
	hit(r, RET(4), c1 + 0x80, 0);   /* ... switches back */
	hit(r, RET(1), K + 0x100, 0);   /* resume returns: the own stack again */
	hit(r, ENT(1), K + 0x100, 0);   /* resume(2) */
	hit(r, ENT(3), c2, 0);          /* body 2: another context */
	hit(r, RET(1), K + 0x100, 0);
	hit(r, ENT(1), K + 0x100, 0);   /* resume(1) again */
	hit(r, RET(2), c1, 0);          /* body 1 resumes and ends */
	hit(r, RET(1), K + 0x100, 0);
	hit(r, RET(0), K, 0);
	ct_recon_finish(r, 1000);       /* body 2 never resumed */
	CHECK_EQ_U(exit_of(2)->status, CT_CALL_RETURNED);
	CHECK_EQ_U(exit_of(2)->context, 1);
	CHECK_EQ_U(exit_of(3)->status, CT_CALL_UNFINISHED);
	CHECK_EQ_U(exit_of(3)->context, 2);
	CHECK_EQ_U(exit_of(0)->status, CT_CALL_RETURNED);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->unwound, 0);
	CHECK_EQ_U(st->returned, 6);
	CHECK_EQ_U(st->unmatched_exits, 0);
	ct_recon_free(r);
	CT_VEC_FREE(seen);
}

TEST(recon_unwinding_within_a_page_stays_an_unwinding)
{
	/* longjmp to frame 0, which calls again from a slightly different SP */
	struct ct_recon *r = start();
	hit(r, ENT(0), K, 0);
	hit(r, ENT(1), K + 0x100, 0);
	hit(r, ENT(2), K + 0x200, 0);
	hit(r, ENT(3), K + 0xf0, 0);
	hit(r, RET(3), K + 0xf0, 0);
	hit(r, RET(0), K, 0);
	ct_recon_finish(r, 1000);
	CHECK_EQ_U(exit_of(1)->status, CT_CALL_UNWOUND);
	CHECK_EQ_U(exit_of(2)->status, CT_CALL_UNWOUND);
	CHECK_EQ_U(exit_of(3)->depth, 1);
	CHECK_EQ_U(exit_of(3)->context, 0);
	/* a big frame's callee (a 512 KiB buffer) is a call, not a switch */
	ct_recon_free(r);
	r = start();
	hit(r, ENT(0), K, 0);
	hit(r, ENT(1), K + (512ULL << 10), 0);
	hit(r, RET(1), K + (512ULL << 10), 0);
	hit(r, RET(0), K, 0);
	ct_recon_finish(r, 1000);
	CHECK_EQ_U(exit_of(1)->depth, 1);
	CHECK_EQ_U(exit_of(1)->context, 0);
	CHECK_EQ_U(ct_recon_stats(r)->returned, 2);
	ct_recon_free(r);
	CT_VEC_FREE(seen);
}

TEST(recon_many_suspended_coroutines_resume_their_own_stacks)
{
	/* 3000 coroutines (stacks 4 MiB apart) each enter f1 and switch back
	 * to frame 0's stack, then resume in another order and return: each
	 * return finds its own stack among all the suspended ones. */
	enum { N = 3000 };
	struct ct_recon *r = start();
	hit(r, ENT(0), K, 0);
	for (uint64_t i = 0; i < N; i++) {
		hit(r, ENT(1), K - ((i + 1) << 22), 0);
		hit(r, ENT(2), K + 0x100, 0); /* back on frame 0's stack */
		hit(r, RET(2), K + 0x100, 0);
	}
	for (uint64_t j = 0; j < N; j++) {
		uint64_t i = (j * 1237) % N; /* every one once */
		hit(r, RET(1), K - ((i + 1) << 22), 0);
	}
	hit(r, RET(0), K, 0);
	ct_recon_finish(r, now + 1);
	CHECK_EQ_U(ct_recon_stats(r)->returned, 1 + 2 * N);
	CHECK_EQ_U(ct_recon_stats(r)->unwound + ct_recon_stats(r)->unfinished, 0);
	uint32_t ctx_seen = 0;
	for (size_t k = 0; k < seen.n; k++)
		if (seen.v[k].type == 'X' && seen.v[k].func == 1) {
			CHECK_EQ_U(seen.v[k].depth, 0);
			ctx_seen++;
		}
	CHECK_EQ_U(ctx_seen, N);
	ct_recon_free(r);
	CT_VEC_FREE(seen);
}

TEST(recon_context_numbers_stay_unique_past_their_range)
{
	/* Context numbers go round below 2^18-1 (the key's field): the
	 * coroutines still open (1 and 2) keep theirs, the next ones skip them. */
	enum { N = (1 << 18) + 8 };
	struct ct_recon *r = start();
	hit(r, ENT(0), K, 0);
	for (uint64_t i = 0; i < N; i++) {
		uint64_t c = K - ((i < 2 ? i + 1 : i % 64 + 3) << 22);
		hit(r, ENT(1), c, 0);
		if (i >= 2)
			hit(r, RET(1), c, 0);
		hit(r, ENT(2), K + 0x100, 0);
		hit(r, RET(2), K + 0x100, 0);
	}
	hit(r, RET(0), K, 0);
	ct_recon_finish(r, now + 1);
	CHECK_EQ_U(ct_recon_stats(r)->returned, 1 + N + N - 2);
	CHECK_EQ_U(ct_recon_stats(r)->unfinished, 2);
	uint32_t last = 0, open_ctx[2] = {0, 0}, no = 0;
	for (size_t k = 0; k < seen.n; k++) {
		const struct seen *x = &seen.v[k];
		if (x->type != 'X' || x->func != 1)
			continue;
		if (x->status == CT_CALL_UNFINISHED) {
			CHECK(no < 2);
			open_ctx[no++] = x->context;
			continue;
		}
		CHECK(x->context != 0 && x->context < (1u << 18) - 1);
		last = x->context;
	}
	CHECK_EQ_U(open_ctx[0] + open_ctx[1], 3); /* 1 and 2 */
	CHECK_EQ_U(last, N - ((1u << 18) - 2) + 2); /* went round to 3, skipping 1 and 2 */
	ct_recon_free(r);
	CT_VEC_FREE(seen);
}

/* st.threads counts every goroutine and thread, but the reconstruction
 * remembers only those that have not ended: a goroutine at its goexit1, a
 * thread at its end, a process's all at the process's end.  Memory stays
 * flat however many come and go. */
TEST(recon_forgets_ended_goroutines_and_threads)
{
	enum { S_GOEXIT = NS };
	static struct ct_file_site sites[NS + 1];
	memcpy(sites, psites, sizeof(psites));
	sites[S_GOEXIT] = (struct ct_file_site){S_GOEXIT, 0x9000, CT_NOFUNC, CT_SITE_GOEXIT, CT_NOFUNC, 0,
						UINT32_MAX, UINT32_MAX, 0};
	static const struct ct_recon_ops none = {0};
	struct ct_recon *r = ct_recon_new(sites, NS + 1, true, &none, NULL);
	uint64_t ts = 1000;
	for (uint64_t g = 1; g <= 10000; g++) {
		struct ct_rec_event e = {.pid = 7, .tid = 7, .goid = g, .key = 100};
		uint32_t steps[] = {S_W_ENT, S_W_RET, S_W_ENT, S_W_RET, S_GOEXIT}; /* its stack empties, then goes on */
		for (size_t i = 0; i < 5; i++) {
			e.ts = ts++, e.site = steps[i], e.kind = sites[steps[i]].kind;
			ct_recon_event(r, &e);
		}
		if (g % 1000 == 0)
			CHECK_EQ_U(ct_recon_remembered(r), 0);
	}
	CHECK_EQ_U(ct_recon_stats(r)->threads, 10000);
	for (uint32_t t = 1; t <= 1000; t++) {
		call(r, 8, 100 + t, 0, ts++, 200, S_W_ENT, 0);
		call(r, 8, 100 + t, 0, ts++, 200, S_W_RET, 0);
		proc(r, CT_PROC_THREAD_EXIT, 8, 100 + t, 0, ts++);
	}
	CHECK_EQ_U(ct_recon_remembered(r), 0);
	CHECK_EQ_U(ct_recon_stats(r)->threads, 11000);
	/* a thread id seen again after its thread ended is another thread */
	call(r, 8, 101, 0, ts++, 200, S_W_ENT, 0);
	CHECK_EQ_U(ct_recon_stats(r)->threads, 11001);
	/* a process's end: its threads and goroutines, open or not */
	call(r, 9, 9, 0, ts++, 300, S_M_ENT, 0);
	call(r, 9, 9, 5, ts++, 300, S_M_ENT, 0);
	CHECK_EQ_U(ct_recon_remembered(r), 3);
	proc(r, CT_PROC_EXIT, 9, 9, 0, ts++);
	CHECK_EQ_U(ct_recon_remembered(r), 1);
	CHECK_EQ_U(ct_recon_stats(r)->threads, 11003);
	ct_recon_free(r);
}

/* record -p: the probes of a running process go in one after another
 * (CT_PROC_PROBES_IN, begin then all).  A call entered meanwhile whose end
 * no probe saw may have returned before its exit probe was live:
 * unobserved, not unwound; after all were in, the same is unwound. */
TEST(recon_call_entered_while_the_probes_went_in_is_not_unwound)
{
	CT_VEC_FREE(seen);
	struct ct_recon *r = ct_recon_new(psites, NS, false, &ops, NULL);
	proc(r, CT_PROC_PROBES_IN, 20, 0, 0, 50);
	call(r, 20, 20, 0, 100, 5, S_M_ENT, 0);
	call(r, 20, 20, 0, 110, 9, S_W_ENT, 0); /* its RET not live yet */
	call(r, 20, 20, 0, 140, 5, S_M_RET, 0);
	proc(r, CT_PROC_PROBES_IN, 20, 0, 1, 150);
	call(r, 20, 20, 0, 160, 5, S_M_ENT, 0);
	call(r, 20, 20, 0, 170, 9, S_W_ENT, 0); /* a panic, say */
	call(r, 20, 20, 0, 180, 5, S_M_RET, 0);
	/* another process, attached to from the start: as before */
	call(r, 30, 30, 0, 100, 5, S_M_ENT, 0);
	call(r, 30, 30, 0, 110, 9, S_W_ENT, 0);
	call(r, 30, 30, 0, 140, 5, S_M_RET, 0);
	ct_recon_finish(r, 1000);
	uint8_t w[3] = {0}, m[3] = {0};
	size_t nw = 0, nm = 0;
	for (size_t i = 0; i < seen.n; i++) {
		if (seen.v[i].type != 'X')
			continue;
		if (seen.v[i].func == FW && nw < 3)
			w[nw++] = seen.v[i].status;
		if (seen.v[i].func == FM && nm < 3)
			m[nm++] = seen.v[i].status;
	}
	CHECK_EQ_U(nw, 3);
	CHECK_EQ_U(w[0], CT_CALL_UNOBSERVED);
	CHECK_EQ_U(w[1], CT_CALL_UNWOUND);
	CHECK_EQ_U(w[2], CT_CALL_UNWOUND);
	CHECK_EQ_U(nm, 3);
	CHECK(m[0] == CT_CALL_RETURNED && m[1] == CT_CALL_RETURNED && m[2] == CT_CALL_RETURNED);
	ct_recon_free(r);
}
