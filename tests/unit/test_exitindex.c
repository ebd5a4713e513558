/* The exit index (src/reconstruct/exitindex.c) against a direct
 * reconstruction pass, on a real trace file with many more calls than the
 * index holds back in memory (2^12 callbacks), including calls that
 * outlive that window by far (in one pass, what comes after them goes
 * through its temp file, megabytes of it; in two, their ends come from the
 * first pass). */
#include "unit.h"

#include "plan/sites.h"
#include "probes/event.h"
#include "reconstruct/exitindex.h"
#include "reconstruct/reconstruct.h"
#include "format/tracefile.h"
#include "util/util.h"

#include <stdlib.h>
#include <unistd.h>

enum { F_MAIN, F_WORK, F_LEAF, F_TAILEE, NF };
enum { S_MAIN_ENT, S_MAIN_RET, S_WORK_ENT, S_WORK_RET, S_LEAF_ENT, S_LEAF_RET, S_TAILEE_ENT, S_TAILEE_RET,
       S_GOEXIT, S_LEAF_CHECK, NS };

static struct ct_file_func xfuncs[NF] = {
	{0, "main.main", 0x401000, 0x100, 1},
	{1, "main.work", 0x401100, 0x100, 1},
	{2, "main.leaf", 0x401200, 0x100, 1},
	{3, "main.tailee", 0x401300, 0x100, 1},
};
static const struct ct_file_site xsites[NS] = {
	{0, 0x401004, F_MAIN, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},   {1, 0x4010f0, F_MAIN, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{2, 0x401104, F_WORK, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},   {3, 0x4011f0, F_WORK, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{4, 0x401204, F_LEAF, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},   {5, 0x4012f0, F_LEAF, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{6, 0x401304, F_TAILEE, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0}, {7, 0x4013f0, F_TAILEE, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{8, 0x402000, CT_NOFUNC, CT_SITE_GOEXIT, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	/* a leaf's entry from a call site without an exit probe: unobserved */
	{9, 0x401208, F_LEAF, CT_SITE_CHECK, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
};

static struct ct_writer *W;
static uint64_t T;

static void put(uint32_t tid, uint64_t goid, uint64_t key, uint32_t site)
{
	struct ct_event e = {0};
	T += 250;
	e.ts = T;
	e.pid = 500;
	e.tid = tid;
	e.goid = goid;
	e.key = key;
	e.site = site;
	ct_writer_event(W, &e, NULL);
}

struct direct {
	struct ct_exit_info *v;
	struct ct_call *calls; /* as entered (pointers cleared) */
	uint64_t n;
	uint64_t dup;
	CT_VEC(uint64_t) order; /* each callback: seq << 2 | 0 enter, 1 exit, 2 lost, 3 spawn */
};

static void direct_enter(void *ctx, const struct ct_call *c)
{
	struct direct *d = ctx;
	CT_VEC_PUSH(d->order, c->seq << 2);
	if (c->seq < d->n) {
		d->calls[c->seq] = *c;
		d->calls[c->seq].args = d->calls[c->seq].ret = d->calls[c->seq].spill = NULL;
		d->calls[c->seq].origin = c->origin ? (const void *)(uintptr_t)(c->origin->goid + 1) : NULL;
	}
}

/* Whether C is the call as entered in the direct pass. */
static bool same_entry(const struct ct_call *w, const struct ct_call *c)
{
	return w->func == c->func && w->ts_entry == c->ts_entry && w->raw_entry == c->raw_entry &&
	       w->ts_exit == c->ts_exit && w->raw_exit == c->raw_exit && w->pid == c->pid && w->tid == c->tid &&
	       w->exit_tid == c->exit_tid && w->goid == c->goid && w->image == c->image && w->key == c->key &&
	       w->depth == c->depth && w->status == c->status && w->tail == c->tail && w->sysstack == c->sysstack &&
	       w->context == c->context && w->leaf == c->leaf && w->unplanned == c->unplanned &&
	       w->indirect == c->indirect && w->entry_site == c->entry_site && w->exit_site == c->exit_site &&
	       w->spill_site == c->spill_site && w->end_bound == c->end_bound &&
	       w->off_preempted == c->off_preempted && w->off_tracer == c->off_tracer &&
	       w->off_blocked == c->off_blocked &&
	       (uintptr_t)w->origin == (c->origin ? (uintptr_t)c->origin->goid + 1 : 0);
}

static void direct_exit(void *ctx, const struct ct_call *c)
{
	struct direct *d = ctx;
	CT_VEC_PUSH(d->order, c->seq << 2 | 1);
	if (c->seq >= d->n) {
		d->dup++; /* out of range: counted as an error below */
		return;
	}
	struct ct_exit_info *e = &d->v[c->seq];
	if (e->status)
		d->dup++;
	e->ts_exit = c->ts_exit;
	e->exit_tid = c->exit_tid;
	e->status = c->status;
	e->leaf = c->leaf;
	e->exit_site = c->exit_site;
	e->raw_exit = c->raw_exit;
	e->end_bound = c->end_bound;
	e->off_preempted = c->off_preempted;
	e->off_tracer = c->off_tracer;
	e->off_blocked = c->off_blocked;
}

static void direct_spawn(void *ctx, const struct ct_goroutine_origin *o)
{
	struct direct *d = ctx;
	CT_VEC_PUSH(d->order, o->goid << 2 | 3);
}

/* The second pass, checked against the direct one as it goes. */
struct indexed {
	struct ct_exitindex *x;
	const struct direct *d;
	uint64_t at;  /* callbacks so far */
	uint64_t bad; /* the first call whose end differs (UINT64_MAX: none) */
	uint64_t misordered;
};

static void next_callback(struct indexed *ix, uint64_t what)
{
	if (ix->at >= ix->d->order.n || ix->d->order.v[ix->at] != what)
		ix->misordered++;
	ix->at++;
}

static void indexed_enter(void *ctx, const struct ct_call *c)
{
	struct indexed *ix = ctx;
	next_callback(ix, c->seq << 2);
	const struct ct_exit_info *e = ct_exitindex_get(ix->x, c->seq, NULL);
	const struct ct_exit_info *w = c->seq < ix->d->n ? &ix->d->v[c->seq] : NULL;
	if (ix->bad == UINT64_MAX && (!w || e->ts_exit != w->ts_exit || e->exit_tid != w->exit_tid ||
				      e->status != w->status || e->leaf != w->leaf || e->exit_site != w->exit_site ||
				      e->raw_exit != w->raw_exit || e->end_bound != w->end_bound ||
				      e->off_preempted != w->off_preempted || e->off_tracer != w->off_tracer ||
				      e->off_blocked != w->off_blocked ||
				      !same_entry(&ix->d->calls[c->seq], c)))
		ix->bad = c->seq;
	/* asked for another call, or outside its enter: nothing */
	if (ct_exitindex_get(ix->x, c->seq + 1, NULL)->status != CT_CALL_OPEN)
		ix->misordered++;
}

static void indexed_exit(void *ctx, const struct ct_call *c)
{
	struct indexed *ix = ctx;
	next_callback(ix, c->seq << 2 | 1);
	if (ct_exitindex_get(ix->x, c->seq, NULL)->status != CT_CALL_OPEN)
		ix->misordered++;
	/* an exit held back (spilled, under -t) says the same of its bound */
	if (ix->bad == UINT64_MAX && c->seq < ix->d->n &&
	    (c->end_bound != ix->d->v[c->seq].end_bound || c->off_preempted != ix->d->v[c->seq].off_preempted ||
	     c->off_tracer != ix->d->v[c->seq].off_tracer || c->off_blocked != ix->d->v[c->seq].off_blocked))
		ix->bad = c->seq;
}

static void indexed_spawn(void *ctx, const struct ct_goroutine_origin *o)
{
	next_callback(ctx, o->goid << 2 | 3);
}

/* A Go trace's start at PATH (W, T); end_trace finishes it. */
static int begin_go_trace(const char *path)
{
	W = ct_writer_create(path);
	if (!W)
		return -1;
	T = 1000000;
	ct_writer_meta(W, "target.lang", "go");
	ct_writer_meta(W, "clock.start_ns", "%llu", (unsigned long long)T);
	return ct_writer_begin(W, xfuncs, NF, xsites, NS);
}

static int end_trace(void)
{
	ct_writer_stat(W, "clock.end_ns", "%llu", (unsigned long long)(T + 1000));
	return ct_writer_close(W);
}

/* Writes a Go trace: main.main on goroutine 1 open from the first event to
 * the last; goroutine 2 enters work and never returns; goroutine 1 calls
 * work NWORK times with leaves, inferred tail calls, unwound frames and
 * migrations; short goroutines that goexit; a C thread. */
static int write_big(const char *path, int nwork)
{
	if (begin_go_trace(path))
		return -1;
	put(1, 1, 100, S_MAIN_ENT);  /* seq 0: open across the whole trace */
	put(2, 2, 100, S_WORK_ENT);  /* seq 1: never returns -> unfinished */
	put(2, 2, 200, S_LEAF_CHECK); /* seq 2: open at the end, unobserved: no bound */
	uint32_t tid = 1;
	for (int i = 0; i < nwork; i++) {
		if (i % 1000 == 999)
			tid = tid == 1 ? 3 : 1; /* goroutine 1 migrates */
		put(tid, 1, 200, S_WORK_ENT);
		switch (i % 8) {
		case 0:
		case 1:
			put(tid, 1, 300, S_LEAF_ENT);
			/* off CPU in the leaf now and then: its time goes with
			 * the calls open (main.main's too, open throughout) */
			if (i % 16 == 1)
				ct_writer_offcpu(W, T += 100, 500, tid, 1, 40 + (uint64_t)i, i % 32 == 1 ? CT_OFFCPU_PREEMPTED : 0);
			put(tid, 1, 300, S_LEAF_RET);
			put(tid, 1, 200, S_WORK_RET);
			break;
		case 2: /* work tail-calls tailee (same key, other function) */
			put(tid, 1, 200, S_TAILEE_ENT);
			put(tid, 1, 200, S_TAILEE_RET);
			break;
		case 3: /* the RET is lost: the next entry at 200 unwinds it */
			break;
		case 4: /* a leaf that panics past work: unwound by work's caller */
			put(tid, 1, 300, S_LEAF_ENT);
			put(tid, 1, 340, S_LEAF_ENT);
			put(tid, 1, 200, S_WORK_RET);
			break;
		case 5: /* a short goroutine that ends with goexit */
			put(5, 1000 + (uint64_t)i, 50, S_LEAF_ENT);
			put(5, 1000 + (uint64_t)i, 60, S_GOEXIT);
			put(tid, 1, 200, S_WORK_RET);
			break;
		case 6: /* a C thread */
			put(7, 0, CT_C_KEY_BASE - 0x7ffd000, S_LEAF_ENT);
			put(7, 0, CT_C_KEY_BASE - 0x7ffd000, S_LEAF_RET);
			put(tid, 1, 200, S_WORK_RET);
			break;
		case 7: /* a leaf without an exit probe: unobserved, work's RET its bound */
			put(tid, 1, 300, S_LEAF_CHECK);
			put(tid, 1, 200, S_WORK_RET);
			break;
		default:
			put(tid, 1, 200, S_WORK_RET);
		}
	}
	put(tid, 1, 100, S_MAIN_RET);
	return end_trace();
}

/* A Go trace where most calls are long: NG goroutines each enter work and
 * call a leaf, then each returns, in the same order -- every work call
 * outlives the second pass's window, and there are more of them than the
 * first pass keeps in memory at once (runs on its temp file). */
static int write_long(const char *path, int ng)
{
	if (begin_go_trace(path))
		return -1;
	for (int g = 1; g <= ng; g++) {
		put(1, (uint64_t)g, 100, S_WORK_ENT);
		put(1, (uint64_t)g, 200, S_LEAF_ENT);
		put(1, (uint64_t)g, 200, S_LEAF_RET);
	}
	for (int g = 1; g <= ng; g++)
		put(2, (uint64_t)g, 100, S_WORK_RET);
	return end_trace();
}

/* STATUS1: how call 1 ends (write_big's never returns). */
static void check_index(const char *path, uint64_t min_calls, uint8_t status1)
{
	struct ct_trace t;
	CHECK_EQ_I(ct_trace_open(&t, path), 0);
	/* Direct pass. */
	struct ct_recon_ops count_ops = {NULL, NULL, NULL, NULL};
	struct ct_recon_stats st = ct_recon_run(&t, &count_ops, NULL);
	printf("# exitindex: %" PRIu64 " calls (%" PRIu64 " returned, %" PRIu64 " unwound, %" PRIu64
	       " unfinished, %" PRIu64 " unobserved, %" PRIu64 " tails)\n",
	       st.calls, st.returned, st.unwound, st.unfinished, st.unobserved, st.tails);
	CHECK(st.calls >= min_calls);
	CHECK_EQ_U(st.calls, st.returned + st.unwound + st.unfinished + st.unobserved);
	struct direct d = {xcalloc(st.calls, sizeof(struct ct_exit_info)), xcalloc(st.calls, sizeof(struct ct_call)),
			   st.calls, 0, {0}};
	struct ct_recon_ops ops = {direct_enter, direct_exit, NULL, direct_spawn};
	ct_recon_run(&t, &ops, &d);
	CHECK_EQ_U(d.dup, 0);

	/* one pass (spilling) and two */
	struct ct_exitindex *(*make_index[])(struct ct_trace *) = {ct_exitindex_new, ct_exitindex_build};
	for (size_t i = 0; i < sizeof(make_index) / sizeof(*make_index); i++) {
		struct ct_exitindex *x = make_index[i](&t);
		CHECK(x != NULL);
		/* the same callbacks in the same order, each entry knowing its end */
		struct indexed ix = {x, &d, 0, UINT64_MAX, 0};
		struct ct_recon_ops iops = {indexed_enter, indexed_exit, NULL, indexed_spawn};
		ct_exitindex_run(x, &iops, &ix);
		CHECK_EQ_U(ix.at, d.order.n);
		CHECK_EQ_U(ix.misordered, 0);
		if (ix.bad != UINT64_MAX) {
			unit_fail(__FILE__, __LINE__,
				  "index %zu, seq %" PRIu64 ": its end differs from the direct pass's {ts %" PRIu64
				  " tid %u status %u leaf %u}",
				  i, ix.bad, d.v[ix.bad].ts_exit, d.v[ix.bad].exit_tid, d.v[ix.bad].status,
				  d.v[ix.bad].leaf);
		}
		ct_exitindex_free(x);
	}
	/* The ones that outlived the window. */
	CHECK_EQ_U(d.v[0].status, CT_CALL_RETURNED);
	CHECK_EQ_U(d.v[1].status, status1);
	if (status1 == CT_CALL_UNFINISHED) {
		/* write_big's: unobserved calls with a bound and one without
		 * went through the index (its spill file) as they ended */
		CHECK(d.v[2].status == CT_CALL_UNOBSERVED && !d.v[2].end_bound);
		uint64_t bounded = 0;
		for (uint64_t k = 0; k < d.n; k++)
			bounded += d.v[k].end_bound;
		CHECK(bounded > 0 && bounded == st.unobserved - 1);
	}
	CT_VEC_FREE(d.order);
	free(d.v);
	free(d.calls);
	ct_trace_close(&t);
}

/* A stage before the index, as a filter is: it passes on only the calls
 * whose seq is a multiple of SPARSE_EVERY: main.main (seq 0), held open in
 * the window throughout, and calls that take its slot in the index. */
#define SPARSE_EVERY 8192
struct sparse {
	const struct ct_recon_ops *down;
	void *ctx;
};

static bool sparse_passes(const struct ct_call *c)
{
	return c->seq % SPARSE_EVERY == 0;
}

static void sparse_enter(void *ctx, const struct ct_call *c)
{
	struct sparse *s = ctx;
	if (sparse_passes(c))
		s->down->enter(s->ctx, c);
}

static void sparse_exit(void *ctx, const struct ct_call *c)
{
	struct sparse *s = ctx;
	if (sparse_passes(c))
		s->down->exit(s->ctx, c);
}

static void sparse_spawn(void *ctx, const struct ct_goroutine_origin *o)
{
	struct sparse *s = ctx;
	s->down->spawn(s->ctx, o);
}

/* The one-pass index behind the sparse stage (ct_exitindex_hold) against a
 * direct pass through it. */
static void check_sparse(const char *path)
{
	struct ct_trace t;
	CHECK_EQ_I(ct_trace_open(&t, path), 0);
	struct ct_recon_ops count_ops = {NULL, NULL, NULL, NULL};
	uint64_t calls = ct_recon_run(&t, &count_ops, NULL).calls;
	struct direct d = {xcalloc(calls, sizeof(struct ct_exit_info)), xcalloc(calls, sizeof(struct ct_call)), calls,
			   0, {0}};
	struct ct_recon_ops sparse_ops = {sparse_enter, sparse_exit, NULL, sparse_spawn};
	struct ct_recon_ops ops = {direct_enter, direct_exit, NULL, direct_spawn};
	struct sparse s = {&ops, &d};
	ct_recon_run(&t, &sparse_ops, &s);
	CHECK_EQ_U(d.dup, 0);
	struct ct_exitindex *x = ct_exitindex_new(&t);
	struct indexed ix = {x, &d, 0, UINT64_MAX, 0};
	struct ct_recon_ops iops = {indexed_enter, indexed_exit, NULL, indexed_spawn};
	struct ct_recon_ops held = ct_exitindex_hold(x, &iops, &ix);
	s = (struct sparse){&held, x};
	ct_recon_run(&t, &sparse_ops, &s);
	ct_exitindex_finish(x);
	CHECK_EQ_U(ix.at, d.order.n);
	CHECK_EQ_U(ix.misordered, 0);
	CHECK_EQ_U(ix.bad, UINT64_MAX);
	CHECK_EQ_U(d.v[0].status, CT_CALL_RETURNED); /* main.main, sharing its slot */
	ct_exitindex_free(x);
	CT_VEC_FREE(d.order);
	free(d.v);
	free(d.calls);
	ct_trace_close(&t);
}

static char *tmp_dir(void)
{
	const char *base = getenv("TMPDIR");
	char *dir = xasprintf("%s/ct-exitindex-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		free(dir);
		return NULL;
	}
	return dir;
}

/* WRITE(path, N)'s trace in a temp directory, its index checked. */
static void check_written(int (*write)(const char *, int), int n, uint64_t min_calls, uint8_t status1)
{
	char *dir = tmp_dir();
	CHECK(dir != NULL);
	char *path = xasprintf("%s/x.data", dir);
	CHECK_EQ_I(write(path, n), 0);
	check_index(path, min_calls, status1);
	unlink(path);
	rmdir(dir);
	free(path);
	free(dir);
}

TEST(exitindex_matches_direct_pass)
{
	/* ~1.3 calls per work iteration: > 300,000 calls in all. */
	check_written(write_big, 240000, 300001, CT_CALL_UNFINISHED);
}

/* fib(N) as calls of work (leaves: leaf), on goroutine G, at KEY. */
static void fib_calls(uint64_t g, uint64_t key, int n)
{
	put(1, g, key, n < 2 ? S_LEAF_ENT : S_WORK_ENT);
	if (n >= 2) {
		fib_calls(g, key + 32, n - 1);
		fib_calls(g, key + 32, n - 2);
	}
	put(1, g, key, n < 2 ? S_LEAF_RET : S_WORK_RET);
}

/* main.main open throughout, around REPEAT recursions of fib(18): calls of
 * every length, many of them still open when what follows main.main's
 * entry goes to the temp file, ending soon after. */
static int write_fib(const char *path, int repeat)
{
	if (begin_go_trace(path))
		return -1;
	put(1, 1, 100, S_MAIN_ENT);
	for (int i = 0; i < repeat; i++)
		fib_calls(1, 200, 18);
	put(1, 1, 100, S_MAIN_RET);
	return end_trace();
}

/* The same with a temp file of 4 KiB segments: records, the slots that
 * calls still open get, and the reads back cross segment ends all the time. */
TEST(exitindex_small_segments)
{
	size_t seg = ct_exitindex_seg;
	ct_exitindex_seg = 4096;
	check_written(write_big, 60000, 75001, CT_CALL_UNFINISHED);
	check_written(write_long, 20000, 40000, CT_CALL_RETURNED);
	check_written(write_fib, 8, 60000, CT_CALL_RETURNED);
	ct_exitindex_seg = seg;
}

TEST(exitindex_behind_a_stage_that_passes_on_few_calls)
{
	char *dir = tmp_dir();
	CHECK(dir != NULL);
	char *path = xasprintf("%s/x.data", dir);
	CHECK_EQ_I(write_big(path, 60000), 0);
	check_sparse(path);
	unlink(path);
	rmdir(dir);
	free(path);
	free(dir);
}

TEST(exitindex_small_trace)
{
	check_written(write_big, 50, 60, CT_CALL_UNFINISHED);
}

TEST(exitindex_most_calls_long)
{
	check_written(write_long, 40000, 80000, CT_CALL_RETURNED);
}
