/* The exit index (src/reconstruct/exitindex.c) against a direct
 * reconstruction pass, on a real trace file with more calls than the
 * in-memory window (2^18), including calls that outlive the window. */
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
       S_GOEXIT, NS };

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
	uint64_t n;
	uint64_t dup;
};

static void direct_exit(void *ctx, const struct ct_call *c)
{
	struct direct *d = ctx;
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
}

/* Writes a Go trace: main.main on goroutine 1 open from the first event to
 * the last; goroutine 2 enters work and never returns; goroutine 1 calls
 * work NWORK times with leaves, inferred tail calls, unwound frames and
 * migrations; short goroutines that goexit; a C thread. */
static int write_big(const char *path, int nwork)
{
	W = ct_writer_create(path);
	if (!W)
		return -1;
	T = 1000000;
	ct_writer_meta(W, "target.lang", "go");
	ct_writer_meta(W, "clock.start_ns", "%llu", (unsigned long long)T);
	if (ct_writer_begin(W, xfuncs, NF, xsites, NS))
		return -1;
	put(1, 1, 100, S_MAIN_ENT);  /* seq 0: open across the whole trace */
	put(2, 2, 100, S_WORK_ENT);  /* seq 1: never returns -> unfinished */
	uint32_t tid = 1;
	for (int i = 0; i < nwork; i++) {
		if (i % 1000 == 999)
			tid = tid == 1 ? 3 : 1; /* goroutine 1 migrates */
		put(tid, 1, 200, S_WORK_ENT);
		switch (i % 8) {
		case 0:
		case 1:
			put(tid, 1, 300, S_LEAF_ENT);
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
		default:
			put(tid, 1, 200, S_WORK_RET);
		}
	}
	put(tid, 1, 100, S_MAIN_RET);
	ct_writer_stat(W, "clock.end_ns", "%llu", (unsigned long long)(T + 1000));
	return ct_writer_close(W);
}

static void check_index(const char *path, uint64_t min_calls)
{
	struct ct_trace t;
	CHECK_EQ_I(ct_trace_open(&t, path), 0);
	/* Direct pass. */
	struct ct_recon_ops count_ops = {NULL, NULL, NULL, NULL};
	struct ct_recon_stats st = ct_recon_run(&t, &count_ops, NULL);
	printf("# exitindex: %" PRIu64 " calls (%" PRIu64 " returned, %" PRIu64 " unwound, %" PRIu64
	       " unfinished, %" PRIu64 " tails)\n",
	       st.calls, st.returned, st.unwound, st.unfinished, st.tails);
	CHECK(st.calls >= min_calls);
	CHECK_EQ_U(st.calls, st.returned + st.unwound + st.unfinished);
	struct direct d = {xcalloc(st.calls, sizeof(struct ct_exit_info)), st.calls, 0};
	struct ct_recon_ops ops = {NULL, direct_exit, NULL, NULL};
	ct_recon_run(&t, &ops, &d);
	CHECK_EQ_U(d.dup, 0);

	struct ct_exitindex *x = ct_exitindex_build(&t);
	CHECK(x != NULL);
	uint64_t bad = UINT64_MAX;
	for (uint64_t s = 0; s < st.calls; s++) {
		const struct ct_exit_info *e = ct_exitindex_get(x, s, NULL);
		const struct ct_exit_info *w = &d.v[s];
		if (e->ts_exit != w->ts_exit || e->exit_tid != w->exit_tid || e->status != w->status ||
		    e->leaf != w->leaf) {
			bad = s;
			break;
		}
	}
	if (bad != UINT64_MAX) {
		const struct ct_exit_info *e = ct_exitindex_get(x, bad, NULL);
		unit_fail(__FILE__, __LINE__,
			  "seq %" PRIu64 ": index {ts %" PRIu64 " tid %u status %u leaf %u}, direct {ts %" PRIu64
			  " tid %u status %u leaf %u}",
			  bad, e->ts_exit, e->exit_tid, e->status, e->leaf, d.v[bad].ts_exit, d.v[bad].exit_tid,
			  d.v[bad].status, d.v[bad].leaf);
	} else {
		/* The ones that outlived the window. */
		CHECK_EQ_U(d.v[0].status, CT_CALL_RETURNED);
		CHECK_EQ_U(d.v[1].status, CT_CALL_UNFINISHED);
	}
	/* asked again out of order: a call reported after later ones of other
	 * threads (reconstruct.c waits for its SPILL hit) */
	static const uint64_t again[] = {5, 2, 3, 7, 0, 1};
	for (size_t k = 0; k < sizeof(again) / sizeof(*again) && again[k] < st.calls; k++) {
		const struct ct_exit_info *e = ct_exitindex_get(x, again[k], NULL);
		CHECK_EQ_U(e->ts_exit, d.v[again[k]].ts_exit);
		CHECK_EQ_U(e->status, d.v[again[k]].status);
	}
	ct_exitindex_free(x);
	free(d.v);
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

TEST(exitindex_matches_direct_pass)
{
	char *dir = tmp_dir();
	CHECK(dir != NULL);
	char *path = xasprintf("%s/x.data", dir);
	/* ~1.3 calls per work iteration: > 300,000 calls in all. */
	CHECK_EQ_I(write_big(path, 240000), 0);
	check_index(path, 300001);
	unlink(path);
	rmdir(dir);
	free(path);
	free(dir);
}

TEST(exitindex_small_trace)
{
	char *dir = tmp_dir();
	CHECK(dir != NULL);
	char *path = xasprintf("%s/x.data", dir);
	CHECK_EQ_I(write_big(path, 50), 0);
	check_index(path, 60);
	unlink(path);
	rmdir(dir);
	free(path);
	free(dir);
}
