/* Reconstruction (src/reconstruct/reconstruct.c) on synthetic event streams:
 * one test per rule of reconstruct.h's header comment, asserting the exact
 * sequence of enter/exit callbacks. */
#include "unit.h"

#include "plan/sites.h"
#include "reconstruct/reconstruct.h"
#include "util/util.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

enum { FA, FB, FC, FD, NFUNCS };

enum {
	S_A_ENT,
	S_A_RET,
	S_B_ENT,
	S_B_RET,
	S_C_ENT,
	S_C_RET,
	S_D_ENT,
	S_D_RET,
	S_A_RESTART,  /* A: CALL morestack */
	S_A_TAIL_B,   /* A: JMP B (traced) */
	S_A_TAIL_OUT, /* A: JMP to something untraced */
	S_GOEXIT,     /* runtime.goexit1 */
	S_B_TAIL_OUT, /* B: JMP to something untraced */
	S_B_TAIL_C,   /* B: JMP C (traced) */
	S_B_RESTART,  /* B: CALL morestack */
	S_A_RETSITE,  /* the return address of a call of A (callee side) */
	S_A_TAIL_PTR, /* A: JMP through a pointer (target not known) */
	S_B_RETSITE,  /* a return address found while recording, where B's untraced tail jump returns */
	S_CATCH,      /* __cxa_begin_catch: a C++ handler begins */
	NSITES
};

static const struct ct_file_site sites[NSITES] = {
	{S_A_ENT, 0x1000, FA, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_A_RET, 0x1010, FA, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_B_ENT, 0x2000, FB, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_B_RET, 0x2010, FB, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_C_ENT, 0x3000, FC, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_C_RET, 0x3010, FC, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_D_ENT, 0x4000, FD, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_D_RET, 0x4010, FD, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_A_RESTART, 0x1020, FA, CT_SITE_RESTART, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_A_TAIL_B, 0x1030, FA, CT_SITE_TAIL, FB, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_A_TAIL_OUT, 0x1040, FA, CT_SITE_TAIL, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_GOEXIT, 0x9000, CT_NOFUNC, CT_SITE_GOEXIT, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_B_TAIL_OUT, 0x2020, FB, CT_SITE_TAIL, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_B_TAIL_C, 0x2030, FB, CT_SITE_TAIL, FC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_B_RESTART, 0x2040, FB, CT_SITE_RESTART, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_A_RETSITE, 0x4008, FA, CT_SITE_RETSITE, CT_NOFUNC, 8, S_A_ENT, UINT32_MAX, 0},
	{S_A_TAIL_PTR, 0x1050, FA, CT_SITE_TAIL, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, CT_SITEF_INDIRECT},
	{S_B_RETSITE, 0x5008, FB, CT_SITE_RETSITE, CT_NOFUNC, 8, S_B_ENT, UINT32_MAX, CT_SITEF_DYNAMIC},
	{S_CATCH, 0x9100, CT_NOFUNC, CT_SITE_CATCH, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
};

#define PID 100

/* ---- callback collector ---- */
struct rec {
	char type; /* 'E' enter, 'X' exit, 'L' lost */
	struct ct_call c;
	uint8_t args[8], ret[8], spill;
	uint64_t lost_ts, lost_n;
	uint64_t origin_goid, origin_parent; /* c.origin's, read in the callback (0: none) */
};
static CT_VEC(struct rec) col;

static void col_reset(void)
{
	CT_VEC_FREE(col);
}

static void push_call(char type, const struct ct_call *c)
{
	struct rec r = {0};
	r.type = type;
	r.c = *c;
	r.c.args = r.c.ret = r.c.spill = NULL; /* not valid after the callback */
	r.c.origin = NULL;
	if (c->args)
		memcpy(r.args, c->args, c->args_len < 8 ? c->args_len : 8);
	if (c->ret)
		memcpy(r.ret, c->ret, c->ret_len < 8 ? c->ret_len : 8);
	if (c->spill && c->spill_len)
		r.spill = c->spill[0];
	if (c->origin) {
		r.origin_goid = c->origin->goid;
		r.origin_parent = c->origin->parent;
	}
	CT_VEC_PUSH(col, r);
}

static void rec_enter(void *ctx, const struct ct_call *c)
{
	(void)ctx;
	push_call('E', c);
}

static void rec_exit(void *ctx, const struct ct_call *c)
{
	(void)ctx;
	push_call('X', c);
}

static void rec_lost(void *ctx, uint64_t ts, uint64_t n)
{
	(void)ctx;
	struct rec r = {0};
	r.type = 'L';
	r.lost_ts = ts;
	r.lost_n = n;
	CT_VEC_PUSH(col, r);
}

static const struct ct_recon_ops ops = {rec_enter, rec_exit, rec_lost, NULL};

static struct ct_recon *new_recon(bool go)
{
	col_reset();
	return ct_recon_new(sites, NSITES, go, &ops, NULL);
}

/* An event of a goroutine when GOID != 0, else of thread TID of PID. */
static struct ct_rec_event an_event(uint32_t pid, uint64_t ts, uint64_t goid, uint32_t tid, uint64_t key,
				    uint32_t site, uint8_t kind)
{
	struct ct_rec_event e = {0};
	e.ts = ts;
	e.goid = goid;
	e.key = key;
	e.pid = pid;
	e.tid = tid;
	e.site = site;
	e.kind = kind;
	return e;
}

/* One event (at a site of the shared table). */
static void evp(struct ct_recon *r, uint32_t pid, uint64_t ts, uint64_t goid, uint32_t tid, uint64_t key,
		uint32_t site, const void *payload, uint32_t plen)
{
	struct ct_rec_event e = an_event(pid, ts, goid, tid, key, site, sites[site].kind);
	e.payload = payload;
	e.payload_len = plen;
	ct_recon_event(r, &e);
}

static void ev(struct ct_recon *r, uint64_t ts, uint64_t goid, uint32_t tid, uint64_t key, uint32_t site)
{
	evp(r, PID, ts, goid, tid, key, site, NULL, 0);
}

static void lost(struct ct_recon *r, uint64_t ts, uint64_t n)
{
	struct ct_rec_event e = {0};
	e.ts = ts;
	e.kind = CT_EV_LOST;
	e.lost = n;
	ct_recon_event(r, &e);
}

#define NREC(cnt) CHECK_EQ_U(col.n, (cnt))

#define EXP_ENTER(i, F, DEPTH, SEQ, TS, TAIL)                                  \
	do {                                                                   \
		CHECK((size_t)(i) < col.n);                                    \
		const struct rec *r_ = &col.v[i];                              \
		CHECK_EQ_U(r_->type, 'E');                                     \
		CHECK_EQ_U(r_->c.func, (F));                                   \
		CHECK_EQ_U(r_->c.depth, (DEPTH));                              \
		CHECK_EQ_U(r_->c.seq, (SEQ));                                  \
		CHECK_EQ_U(r_->c.ts_entry, (TS));                              \
		CHECK_EQ_U(r_->c.tail, (TAIL));                                \
		CHECK_EQ_U(r_->c.status, CT_CALL_OPEN);                        \
	} while (0)

#define EXP_EXIT(i, F, DEPTH, STATUS, SEQ, TSE, TSX, TAIL, LEAF)               \
	do {                                                                   \
		CHECK((size_t)(i) < col.n);                                    \
		const struct rec *r_ = &col.v[i];                              \
		CHECK_EQ_U(r_->type, 'X');                                     \
		CHECK_EQ_U(r_->c.func, (F));                                   \
		CHECK_EQ_U(r_->c.depth, (DEPTH));                              \
		CHECK_EQ_U(r_->c.status, (STATUS));                            \
		CHECK_EQ_U(r_->c.seq, (SEQ));                                  \
		CHECK_EQ_U(r_->c.ts_entry, (TSE));                             \
		CHECK_EQ_U(r_->c.ts_exit, (TSX));                              \
		CHECK_EQ_U(r_->c.tail, (TAIL));                                \
		CHECK_EQ_U(r_->c.leaf, (LEAF));                                \
	} while (0)

#define RET CT_CALL_RETURNED
#define UNW CT_CALL_UNWOUND
#define UNF CT_CALL_UNFINISHED

TEST(recon_status_names)
{
	CHECK_STR(ct_status_name(CT_CALL_OPEN), "open");
	CHECK_STR(ct_status_name(CT_CALL_RETURNED), "returned");
	CHECK_STR(ct_status_name(CT_CALL_UNWOUND), "unwound");
	CHECK_STR(ct_status_name(CT_CALL_UNFINISHED), "unfinished");
}

/* A C++ handler begins (CATCH, __cxa_begin_catch's entry, called by the
 * catching frame): the frames at its key and deeper were unwound then, the
 * catching one goes on.  One deeper than all (__cxa_throw's own call of it
 * for an exception nothing catches, before std::terminate) unwinds none. */
TEST(recon_catch_unwinds_what_the_exception_left)
{
	struct ct_recon *r = new_recon(false);
	/* A (catches) { B { C { D throws } } } on C thread 7 */
	ev(r, 100, 0, 7, 10, S_A_ENT);
	ev(r, 110, 0, 7, 40, S_B_ENT);
	ev(r, 120, 0, 7, 50, S_C_ENT);
	ev(r, 130, 0, 7, 60, S_D_ENT);
	ev(r, 140, 0, 7, 200, S_CATCH); /* uncaught yet: nothing */
	NREC(4);
	ev(r, 150, 0, 7, 40, S_CATCH); /* A's handler, at B's call's SP */
	NREC(7);
	EXP_EXIT(4, FD, 3, UNW, 3, 130, 150, false, true);
	EXP_EXIT(5, FC, 2, UNW, 2, 120, 150, false, false);
	EXP_EXIT(6, FB, 1, UNW, 1, 110, 150, false, false);
	ev(r, 160, 0, 7, 10, S_A_RET);
	NREC(8);
	EXP_EXIT(7, FA, 0, RET, 0, 100, 160, false, false);
	ct_recon_free(r);
}

TEST(recon_nesting_and_durations)
{
	struct ct_recon *r = new_recon(false);
	const uint8_t args[] = {1, 2, 3}, res[] = {9, 8};
	/* A { B { C } ; B } on C thread 7. */
	evp(r, PID, 100, 0, 7, 10, S_A_ENT, args, sizeof(args));
	ev(r, 110, 0, 7, 20, S_B_ENT);
	ev(r, 120, 0, 7, 30, S_C_ENT);
	ev(r, 130, 0, 7, 30, S_C_RET);
	ev(r, 140, 0, 7, 20, S_B_RET);
	ev(r, 150, 0, 7, 20, S_B_ENT);
	ev(r, 160, 0, 7, 20, S_B_RET);
	evp(r, PID, 200, 0, 7, 10, S_A_RET, res, sizeof(res));
	NREC(8);
	EXP_ENTER(0, FA, 0, 0, 100, false);
	CHECK_EQ_U(col.v[0].c.args_len, 3);
	CHECK(!memcmp(col.v[0].args, args, 3));
	CHECK_EQ_U(col.v[0].c.pid, PID);
	CHECK_EQ_U(col.v[0].c.tid, 7);
	CHECK_EQ_U(col.v[0].c.goid, 0);
	CHECK_EQ_U(col.v[0].c.key, 10);
	EXP_ENTER(1, FB, 1, 1, 110, false);
	EXP_ENTER(2, FC, 2, 2, 120, false);
	EXP_EXIT(3, FC, 2, RET, 2, 120, 130, false, true);
	EXP_EXIT(4, FB, 1, RET, 1, 110, 140, false, false);
	EXP_ENTER(5, FB, 1, 3, 150, false);
	EXP_EXIT(6, FB, 1, RET, 3, 150, 160, false, true);
	EXP_EXIT(7, FA, 0, RET, 0, 100, 200, false, false);
	/* The exit still carries the entry's arguments, plus the result. */
	CHECK_EQ_U(col.v[7].c.args_len, 3);
	CHECK(!memcmp(col.v[7].args, args, 3));
	CHECK_EQ_U(col.v[7].c.ret_len, 2);
	CHECK(!memcmp(col.v[7].ret, res, 2));
	CHECK_EQ_U(col.v[7].c.exit_tid, 7);
	CHECK_EQ_U(col.v[3].c.ret_len, 0);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->events, 8);
	CHECK_EQ_U(st->calls, 4);
	CHECK_EQ_U(st->returned, 4);
	CHECK_EQ_U(st->unwound, 0);
	CHECK_EQ_U(st->unfinished, 0);
	CHECK_EQ_U(st->max_depth, 3);
	CHECK_EQ_U(st->unmatched_exits, 0);
	ct_recon_finish(r, 1000);
	NREC(8);
	ct_recon_free(r);
	col_reset();
}

/* ct_recon_finish frees every stack: the cache of the last ones looked up
 * (r->recent) must not keep them, or a later event of the same thread or
 * goroutine lands on freed memory (ASan: heap-use-after-free) and its call
 * is never ended by the next finish. */
TEST(recon_finish_leaves_no_stack_behind)
{
	for (int go = 0; go < 2; go++) {
		struct ct_recon *r = new_recon(go);
		uint64_t goid = go ? 5 : 0;
		ev(r, 100, goid, 7, 10, S_A_ENT);
		ct_recon_finish(r, 200);
		NREC(2);
		EXP_EXIT(1, FA, 0, UNF, 0, 100, 200, false, true);
		/* the same thread (goroutine) again, as a live reader could */
		ev(r, 300, goid, 7, 10, S_A_ENT);
		ct_recon_finish(r, 400);
		NREC(4);
		EXP_ENTER(2, FA, 0, 1, 300, false);
		EXP_EXIT(3, FA, 0, UNF, 1, 300, 400, false, true);
		ct_recon_free(r);
		col_reset();
	}
}

TEST(recon_go_morestack_restart_dropped)
{
	struct ct_recon *r = new_recon(true);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 105, 5, 1, 10, S_A_RESTART); /* CALL morestack */
	ev(r, 110, 5, 2, 10, S_A_ENT);     /* entry re-runs (new stack, same key) */
	ev(r, 115, 5, 2, 20, S_B_ENT);
	ev(r, 118, 5, 2, 20, S_B_RET);
	ev(r, 120, 5, 2, 10, S_A_RET);
	NREC(4);
	EXP_ENTER(0, FA, 0, 0, 100, false);
	EXP_ENTER(1, FB, 1, 1, 115, false);
	EXP_EXIT(2, FB, 1, RET, 1, 115, 118, false, true);
	EXP_EXIT(3, FA, 0, RET, 0, 100, 120, false, false);
	CHECK_EQ_U(col.v[3].c.tid, 1);
	CHECK_EQ_U(col.v[3].c.exit_tid, 2);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->calls, 2);
	CHECK_EQ_U(st->restarts, 1);
	CHECK_EQ_U(st->returned, 2);
	CHECK_EQ_U(st->unwound, 0);
	CHECK_EQ_U(st->tails, 0);
	ct_recon_free(r);

	/* Two restarts in a row (the stack grows twice). */
	r = new_recon(true);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 101, 5, 1, 10, S_A_RESTART);
	ev(r, 102, 5, 1, 10, S_A_ENT);
	ev(r, 103, 5, 1, 10, S_A_RESTART);
	ev(r, 104, 5, 1, 10, S_A_ENT);
	ev(r, 105, 5, 1, 10, S_A_RET);
	NREC(2);
	EXP_ENTER(0, FA, 0, 0, 100, false);
	EXP_EXIT(1, FA, 0, RET, 0, 100, 105, false, true);
	CHECK_EQ_U(ct_recon_stats(r)->restarts, 2);
	ct_recon_free(r);

	/* A restart marker only excuses ONE duplicate entry. */
	r = new_recon(true);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 101, 5, 1, 10, S_A_RESTART);
	ev(r, 102, 5, 1, 10, S_A_ENT); /* dropped */
	ev(r, 103, 5, 1, 10, S_A_ENT); /* a new call: the old one was unwound */
	ev(r, 104, 5, 1, 10, S_A_RET);
	NREC(4);
	EXP_ENTER(0, FA, 0, 0, 100, false);
	EXP_EXIT(1, FA, 0, UNW, 0, 100, 103, false, true);
	EXP_ENTER(2, FA, 0, 1, 103, false);
	EXP_EXIT(3, FA, 0, RET, 1, 103, 104, false, true);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_go_duplicate_entry_without_restart)
{
	struct ct_recon *r = new_recon(true);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 110, 5, 1, 10, S_A_ENT); /* no RESTART before it */
	ev(r, 120, 5, 1, 10, S_A_RET);
	NREC(4);
	EXP_ENTER(0, FA, 0, 0, 100, false);
	EXP_EXIT(1, FA, 0, UNW, 0, 100, 110, false, true);
	EXP_ENTER(2, FA, 0, 1, 110, false);
	EXP_EXIT(3, FA, 0, RET, 1, 110, 120, false, true);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->calls, 2);
	CHECK_EQ_U(st->unwound, 1);
	CHECK_EQ_U(st->returned, 1);
	CHECK_EQ_U(st->restarts, 0);
	CHECK_EQ_U(st->tails, 0);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_go_restart_marker_for_other_frame_ignored)
{
	/* A RESTART of B while A is on top (B's entry was lost) marks nothing:
	 * a later duplicate A entry is a new call. */
	struct ct_recon *r = new_recon(true);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 101, 5, 1, 10, S_B_RESTART);
	ev(r, 102, 5, 1, 10, S_A_ENT);
	NREC(3);
	EXP_EXIT(1, FA, 0, UNW, 0, 100, 102, false, true);
	EXP_ENTER(2, FA, 0, 1, 102, false);
	CHECK_EQ_U(ct_recon_stats(r)->restarts, 0);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_go_tail_call_inferred)
{
	struct ct_recon *r = new_recon(true);
	ev(r, 90, 5, 1, 5, S_D_ENT);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 110, 5, 1, 10, S_B_ENT); /* same key, other function: A jumped to B */
	ev(r, 115, 5, 1, 20, S_C_ENT);
	ev(r, 118, 5, 1, 20, S_C_RET);
	ev(r, 130, 5, 1, 10, S_B_RET); /* B's RET returns for A too */
	ev(r, 140, 5, 1, 5, S_D_RET);
	NREC(8);
	EXP_ENTER(0, FD, 0, 0, 90, false);
	EXP_ENTER(1, FA, 1, 1, 100, false);
	EXP_ENTER(2, FB, 2, 2, 110, true);
	EXP_ENTER(3, FC, 3, 3, 115, false);
	EXP_EXIT(4, FC, 3, RET, 3, 115, 118, false, true);
	EXP_EXIT(5, FB, 2, RET, 2, 110, 130, true, false);
	EXP_EXIT(6, FA, 1, RET, 1, 100, 130, false, false);
	EXP_EXIT(7, FD, 0, RET, 0, 90, 140, false, false);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->tails, 1);
	CHECK_EQ_U(st->calls, 4);
	CHECK_EQ_U(st->returned, 4);
	CHECK_EQ_U(st->max_depth, 4);
	ct_recon_free(r);

	/* A chain A -> B -> C at one key: one RET returns all three. */
	r = new_recon(true);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 110, 5, 1, 10, S_B_ENT);
	ev(r, 120, 5, 1, 10, S_C_ENT);
	ev(r, 130, 5, 1, 10, S_C_RET);
	NREC(6);
	EXP_ENTER(2, FC, 2, 2, 120, true);
	EXP_EXIT(3, FC, 2, RET, 2, 120, 130, true, true);
	EXP_EXIT(4, FB, 1, RET, 1, 110, 130, true, false);
	EXP_EXIT(5, FA, 0, RET, 0, 100, 130, false, false);
	CHECK_EQ_U(ct_recon_stats(r)->tails, 2);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_tail_event_to_traced_target)
{
	for (int go = 0; go < 2; go++) {
		struct ct_recon *r = new_recon(go);
		ev(r, 100, go ? 5 : 0, 1, 10, S_A_ENT);
		ev(r, 105, go ? 5 : 0, 1, 10, S_A_TAIL_B); /* JMP B */
		ev(r, 110, go ? 5 : 0, 1, 10, S_B_ENT);
		ev(r, 120, go ? 5 : 0, 1, 10, S_B_RET);
		NREC(4);
		EXP_ENTER(0, FA, 0, 0, 100, false);
		EXP_ENTER(1, FB, 1, 1, 110, true);
		EXP_EXIT(2, FB, 1, RET, 1, 110, 120, true, true);
		EXP_EXIT(3, FA, 0, RET, 0, 100, 120, false, false);
		const struct ct_recon_stats *st = ct_recon_stats(r);
		CHECK_EQ_U(st->tails, 1);
		CHECK_EQ_U(st->returned, 2);
		CHECK_EQ_U(st->unwound, 0);
		ct_recon_free(r);
	}
	col_reset();
}

/* A tail jump to untraced code whose return address no probe watches
 * (the kernel side said so: CT_EV_UNWATCHED), thread 1. */
static void ev_unwatched(struct ct_recon *r, uint64_t ts, uint64_t key, uint32_t site)
{
	struct ct_rec_event e = {.ts = ts, .key = key, .pid = PID, .tid = 1, .site = site,
				 .kind = CT_SITE_TAIL, .flags = CT_EV_UNWATCHED};
	ct_recon_event(r, &e);
}

TEST(recon_found_return_closes_the_tail_group)
{
	/* A tail-calls B, B jumps to untraced code, which calls C and returns
	 * to a return address found while recording: its RETSITE names B's
	 * entry (the jump's function), and closes A, the call made there,
	 * with B; C, called by the untraced code, is inside them.  Anywhere
	 * else (no frame of B at its key) it closes nothing. */
	struct ct_recon *r = new_recon(false);
	ev(r, 90, 0, 1, 5, S_D_ENT);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 105, 0, 1, 10, S_A_TAIL_B);
	ev(r, 110, 0, 1, 10, S_B_ENT);
	ev(r, 115, 0, 1, 10, S_B_TAIL_OUT);
	ev(r, 120, 0, 1, 20, S_C_ENT);
	ev(r, 125, 0, 1, 20, S_C_RET);
	ev(r, 130, 0, 1, 2, S_B_RETSITE); /* the callee's key: 2 + 8 */
	NREC(7);
	EXP_ENTER(3, FC, 3, 3, 120, false);
	EXP_EXIT(5, FB, 2, RET, 2, 110, 130, true, false);
	EXP_EXIT(6, FA, 1, RET, 1, 100, 130, false, false);
	ev(r, 140, 0, 1, 10, S_A_ENT);
	ev(r, 145, 0, 1, 2, S_B_RETSITE); /* reached another way: A stays open */
	ev(r, 150, 0, 1, 10, S_A_RET);
	ev(r, 200, 0, 1, 5, S_D_RET);
	NREC(10);
	EXP_EXIT(8, FA, 1, RET, 4, 140, 150, false, true);
	EXP_EXIT(9, FD, 0, RET, 0, 90, 200, false, false);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_tail_through_a_pointer)
{
	/* A jumps through a pointer: B entering at A's key next is its target,
	 * a tail call; when the jump went to untraced code, its return site
	 * closes A before D calls C at the same key; where the kernel side found
	 * no probe at the return address, A ended at the jump. */
	struct ct_recon *r = new_recon(false);
	ev(r, 90, 0, 1, 5, S_D_ENT);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 105, 0, 1, 10, S_A_TAIL_PTR);
	ev(r, 110, 0, 1, 10, S_B_ENT);
	ev(r, 120, 0, 1, 10, S_B_RET);
	NREC(5);
	EXP_ENTER(2, FB, 2, 2, 110, true);
	EXP_EXIT(3, FB, 2, RET, 2, 110, 120, true, true);
	EXP_EXIT(4, FA, 1, RET, 1, 100, 120, false, false);
	ev(r, 130, 0, 1, 10, S_A_ENT);
	ev(r, 135, 0, 1, 10, S_A_TAIL_PTR);
	ev(r, 140, 0, 1, 2, S_A_RETSITE); /* the callee's key: 2 + 8 */
	ev(r, 150, 0, 1, 10, S_C_ENT);
	ev(r, 155, 0, 1, 10, S_C_RET);
	NREC(9);
	EXP_EXIT(6, FA, 1, RET, 3, 130, 140, false, true);
	EXP_ENTER(7, FC, 1, 4, 150, false);
	ev(r, 160, 0, 1, 10, S_A_ENT);
	ev_unwatched(r, 165, 10, S_A_TAIL_PTR);
	ev(r, 170, 0, 1, 10, S_C_ENT);
	ev(r, 175, 0, 1, 10, S_C_RET);
	ev(r, 200, 0, 1, 5, S_D_RET);
	NREC(14);
	EXP_EXIT(10, FA, 1, CT_CALL_UNOBSERVED, 5, 160, 165, false, true);
	EXP_ENTER(11, FC, 1, 6, 170, false);
	EXP_EXIT(13, FD, 0, RET, 0, 90, 200, false, false);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->tails, 1);
	CHECK_EQ_U(st->unwound, 0);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_tail_event_to_untraced_target)
{
	struct ct_recon *r = new_recon(false);
	ev(r, 90, 0, 1, 5, S_D_ENT);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 105, 0, 1, 10, S_A_TAIL_OUT); /* no return site follows: */
	ev(r, 120, 0, 1, 10, S_B_ENT);      /* D calls B at the same SP, A ended at the jump */
	ev(r, 125, 0, 1, 10, S_B_RET);
	ev(r, 200, 0, 1, 5, S_D_RET);
	NREC(6);
	EXP_ENTER(0, FD, 0, 0, 90, false);
	EXP_ENTER(1, FA, 1, 1, 100, false);
	EXP_EXIT(2, FA, 1, RET, 1, 100, 105, false, true);
	EXP_ENTER(3, FB, 1, 2, 120, false);
	EXP_EXIT(4, FB, 1, RET, 2, 120, 125, false, true);
	EXP_EXIT(5, FD, 0, RET, 0, 90, 200, false, false);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->returned, 3);
	CHECK_EQ_U(st->unwound, 0);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_unwatched_tail_ends_at_the_jump)
{
	/* A's and B's jumps to untraced code return where no probe is (the
	 * kernel side found none at the return address): their ends are not
	 * seen, and the calls after them are not inside them, deeper as they
	 * may be (D's untraced helper calls C). */
	struct ct_recon *r = new_recon(false);
	ev(r, 90, 0, 1, 5, S_D_ENT);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev_unwatched(r, 105, 10, S_A_TAIL_OUT);
	ev(r, 120, 0, 1, 40, S_C_ENT);
	ev(r, 125, 0, 1, 40, S_C_RET);
	/* a chain: A jumps to B, which jumps out */
	ev(r, 130, 0, 1, 10, S_A_ENT);
	ev(r, 131, 0, 1, 10, S_A_TAIL_B);
	ev(r, 132, 0, 1, 10, S_B_ENT);
	ev_unwatched(r, 133, 10, S_B_TAIL_OUT);
	ev(r, 140, 0, 1, 40, S_C_ENT);
	ev(r, 145, 0, 1, 40, S_C_RET);
	ev(r, 200, 0, 1, 5, S_D_RET);
	NREC(12);
	EXP_EXIT(2, FA, 1, CT_CALL_UNOBSERVED, 1, 100, 105, false, true);
	EXP_ENTER(3, FC, 1, 2, 120, false);
	EXP_EXIT(4, FC, 1, RET, 2, 120, 125, false, true);
	EXP_ENTER(6, FB, 2, 4, 132, true);
	EXP_EXIT(7, FB, 2, CT_CALL_UNOBSERVED, 4, 132, 133, true, true);
	EXP_EXIT(8, FA, 1, CT_CALL_UNOBSERVED, 3, 130, 133, false, false);
	EXP_ENTER(9, FC, 1, 5, 140, false);
	EXP_EXIT(11, FD, 0, RET, 0, 90, 200, false, false);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->unobserved, 3);
	CHECK_EQ_U(st->unwound, 0);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_untraced_tail_ends_at_return_site)
{
	/* A jumps to untraced code (bar: jmp usleep@plt), which calls B back;
	 * A's call ends when that code returns to D, at the return site. */
	struct ct_recon *r = new_recon(false);
	ev(r, 90, 0, 1, 5, S_D_ENT);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 105, 0, 1, 10, S_A_TAIL_OUT);
	ev(r, 110, 0, 1, 30, S_B_ENT);
	ev(r, 120, 0, 1, 30, S_B_RET);
	ev(r, 2000, 0, 1, 2, S_A_RETSITE); /* the callee's key: 2 + 8 */
	ev(r, 2100, 0, 1, 5, S_D_RET);
	NREC(6);
	EXP_ENTER(2, FB, 2, 2, 110, false);
	EXP_EXIT(3, FB, 2, RET, 2, 110, 120, false, true);
	EXP_EXIT(4, FA, 1, RET, 1, 100, 2000, false, false);
	EXP_EXIT(5, FD, 0, RET, 0, 90, 2100, false, false);
	/* the next call of A returns by its RET: its return site closes nothing */
	ev(r, 3000, 0, 1, 10, S_A_ENT);
	ev(r, 3010, 0, 1, 10, S_A_RET);
	ev(r, 3011, 0, 1, 2, S_A_RETSITE);
	NREC(8);
	EXP_EXIT(7, FA, 0, RET, 3, 3000, 3010, false, true);
	CHECK_EQ_U(ct_recon_stats(r)->unwound, 0);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_longjmp_unwinds_a_tail_chain)
{
	/* A -> jmp B -> jmp C, then a longjmp back to D, which calls A again
	 * at the same SP: the whole chain was unwound, not only C. */
	struct ct_recon *r = new_recon(false);
	ev(r, 90, 0, 1, 5, S_D_ENT);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 101, 0, 1, 10, S_A_TAIL_B);
	ev(r, 102, 0, 1, 10, S_B_ENT);
	ev(r, 103, 0, 1, 10, S_B_TAIL_C);
	ev(r, 104, 0, 1, 10, S_C_ENT);
	ev(r, 200, 0, 1, 10, S_A_ENT);
	NREC(8);
	EXP_EXIT(4, FC, 3, UNW, 3, 104, 200, true, true);
	EXP_EXIT(5, FB, 2, UNW, 2, 102, 200, true, false);
	EXP_EXIT(6, FA, 1, UNW, 1, 100, 200, false, false);
	EXP_ENTER(7, FA, 1, 4, 200, false);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_tail_event_target_never_enters)
{
	/* The next event is a return of the caller: A closed at the jump. */
	struct ct_recon *r = new_recon(false);
	ev(r, 90, 0, 1, 5, S_D_ENT);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 105, 0, 1, 10, S_A_TAIL_B); /* B's entry is never seen */
	ev(r, 200, 0, 1, 5, S_D_RET);
	NREC(4);
	EXP_EXIT(2, FA, 1, RET, 1, 100, 105, false, true);
	EXP_EXIT(3, FD, 0, RET, 0, 90, 200, false, false);
	CHECK_EQ_U(ct_recon_stats(r)->unwound, 0);
	ct_recon_free(r);

	/* The next event is another function's entry at the same key. */
	r = new_recon(false);
	ev(r, 90, 0, 1, 5, S_D_ENT);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 105, 0, 1, 10, S_A_TAIL_B);
	ev(r, 120, 0, 1, 10, S_C_ENT);
	ev(r, 130, 0, 1, 10, S_C_RET);
	NREC(5);
	EXP_EXIT(2, FA, 1, RET, 1, 100, 105, false, true);
	EXP_ENTER(3, FC, 1, 2, 120, false);
	EXP_EXIT(4, FC, 1, RET, 2, 120, 130, false, true);
	CHECK_EQ_U(ct_recon_stats(r)->tails, 0);
	ct_recon_free(r);

	/* Anything deeper happens inside the code jumped to (it may be
	 * untraced code calling back): it nests, and the jump is still open. */
	r = new_recon(false);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 105, 0, 1, 10, S_A_TAIL_B);
	ev(r, 120, 0, 1, 30, S_B_ENT);
	NREC(2);
	EXP_ENTER(1, FB, 1, 1, 120, false);
	ev(r, 130, 0, 1, 30, S_B_RET);
	ev(r, 140, 0, 1, 5, S_D_ENT); /* not deeper: A ended at the jump */
	NREC(5);
	EXP_EXIT(2, FB, 1, RET, 1, 120, 130, false, true);
	EXP_EXIT(3, FA, 0, RET, 0, 100, 105, false, false);
	ct_recon_free(r);

	/* The trace ends right after the jump: returned at the jump, not
	 * unfinished. */
	r = new_recon(false);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 105, 0, 1, 10, S_A_TAIL_B);
	ct_recon_finish(r, 1000);
	NREC(2);
	EXP_EXIT(1, FA, 0, RET, 0, 100, 105, false, true);
	CHECK_EQ_U(ct_recon_stats(r)->unfinished, 0);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_tail_target_cut_by_limits_returns_the_jumper)
{
	/* --max-depth 1: A's tail jump goes on in B, whose entry the kernel's
	 * shadow stack cut (a level too deep); B's RET at A's key, sent to
	 * close A, ends A there, not at the jump */
	struct ct_recon *r = new_recon(false);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 105, 0, 1, 10, S_A_TAIL_B);
	ev(r, 150, 0, 1, 10, S_B_RET);
	ev(r, 200, 0, 1, 10, S_C_ENT);
	NREC(3);
	EXP_EXIT(1, FA, 0, RET, 0, 100, 150, false, true);
	CHECK_EQ_U(ct_recon_stats(r)->unmatched_exits, 0);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_tail_chain_ends_together)
{
	/* Go: A tail-calls B (inferred), B jumps to something untraced.  When
	 * B ends, so does A, which it replaced: the next call at that key is
	 * the caller's new call, not another tail call of A. */
	struct ct_recon *r = new_recon(true);
	ev(r, 90, 5, 1, 5, S_D_ENT);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 110, 5, 1, 10, S_B_ENT);
	ev(r, 120, 5, 1, 10, S_B_TAIL_OUT);
	ev(r, 130, 5, 1, 10, S_C_ENT);
	ev(r, 140, 5, 1, 10, S_C_RET);
	ev(r, 200, 5, 1, 5, S_D_RET);
	NREC(8);
	EXP_ENTER(2, FB, 2, 2, 110, true);
	EXP_EXIT(3, FB, 2, RET, 2, 110, 120, true, true);
	EXP_EXIT(4, FA, 1, RET, 1, 100, 120, false, false);
	EXP_ENTER(5, FC, 1, 3, 130, false);
	EXP_EXIT(6, FC, 1, RET, 3, 130, 140, false, true);
	EXP_EXIT(7, FD, 0, RET, 0, 90, 200, false, false);
	ct_recon_free(r);

	/* Same when B's JMP goes to a traced C that never shows up. */
	r = new_recon(true);
	ev(r, 90, 5, 1, 5, S_D_ENT);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 110, 5, 1, 10, S_B_ENT);
	ev(r, 120, 5, 1, 10, S_B_TAIL_C);
	ev(r, 200, 5, 1, 5, S_D_RET);
	NREC(6);
	EXP_EXIT(3, FB, 2, RET, 2, 110, 120, true, true);
	EXP_EXIT(4, FA, 1, RET, 1, 100, 120, false, false);
	EXP_EXIT(5, FD, 0, RET, 0, 90, 200, false, false);
	CHECK_EQ_U(ct_recon_stats(r)->unwound, 0);
	ct_recon_free(r);

	/* ... and when the trace ends after that jump. */
	r = new_recon(true);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 110, 5, 1, 10, S_B_ENT);
	ev(r, 120, 5, 1, 10, S_B_TAIL_C);
	ct_recon_finish(r, 1000);
	NREC(4);
	EXP_EXIT(2, FB, 1, RET, 1, 110, 120, true, true);
	EXP_EXIT(3, FA, 0, RET, 0, 100, 120, false, false);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_panic_unwinding)
{
	struct ct_recon *r = new_recon(true);
	ev(r, 100, 9, 1, 10, S_A_ENT);
	ev(r, 110, 9, 1, 20, S_B_ENT);
	ev(r, 120, 9, 1, 30, S_C_ENT);
	/* panic: a deferred D runs in A's frame, shallower than B and C */
	ev(r, 140, 9, 1, 15, S_D_ENT);
	ev(r, 145, 9, 1, 15, S_D_RET);
	ev(r, 150, 9, 1, 10, S_A_RET); /* recovered: A returns */
	NREC(8);
	EXP_ENTER(2, FC, 2, 2, 120, false);
	EXP_EXIT(3, FC, 2, UNW, 2, 120, 140, false, true);
	EXP_EXIT(4, FB, 1, UNW, 1, 110, 140, false, false);
	EXP_ENTER(5, FD, 1, 3, 140, false);
	EXP_EXIT(6, FD, 1, RET, 3, 140, 145, false, true);
	EXP_EXIT(7, FA, 0, RET, 0, 100, 150, false, false);
	/* A return at a shallower key also unwinds what is deeper. */
	ev(r, 200, 9, 1, 10, S_A_ENT);
	ev(r, 210, 9, 1, 20, S_B_ENT);
	ev(r, 220, 9, 1, 30, S_C_ENT);
	ev(r, 250, 9, 1, 10, S_A_RET);
	NREC(14);
	EXP_ENTER(8, FA, 0, 4, 200, false);
	EXP_EXIT(11, FC, 2, UNW, 6, 220, 250, false, true);
	EXP_EXIT(12, FB, 1, UNW, 5, 210, 250, false, false);
	EXP_EXIT(13, FA, 0, RET, 4, 200, 250, false, false);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->unwound, 4);
	CHECK_EQ_U(st->returned, 3);
	CHECK_EQ_U(st->calls, 7);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_c_longjmp_not_tail)
{
	struct ct_recon *r = new_recon(false);
	ev(r, 100, 0, 7, 10, S_A_ENT);
	ev(r, 110, 0, 7, 20, S_B_ENT);
	ev(r, 115, 0, 7, 30, S_C_ENT);
	/* longjmp back into A; A then calls D at the SP B had */
	ev(r, 130, 0, 7, 20, S_D_ENT);
	ev(r, 140, 0, 7, 20, S_D_RET);
	ev(r, 150, 0, 7, 10, S_A_RET);
	NREC(8);
	EXP_EXIT(3, FC, 2, UNW, 2, 115, 130, false, true);
	EXP_EXIT(4, FB, 1, UNW, 1, 110, 130, false, false);
	EXP_ENTER(5, FD, 1, 3, 130, false);
	EXP_EXIT(6, FD, 1, RET, 3, 130, 140, false, true);
	EXP_EXIT(7, FA, 0, RET, 0, 100, 150, false, false);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->tails, 0);
	CHECK_EQ_U(st->unwound, 2);
	ct_recon_free(r);

	/* Exactly the same key as the top frame, other function: C code has
	 * no inferred tail calls, so B was unwound. */
	r = new_recon(false);
	ev(r, 100, 0, 7, 10, S_A_ENT);
	ev(r, 110, 0, 7, 20, S_B_ENT);
	ev(r, 130, 0, 7, 20, S_D_ENT);
	NREC(4);
	EXP_EXIT(2, FB, 1, UNW, 1, 110, 130, false, true);
	EXP_ENTER(3, FD, 1, 2, 130, false);
	CHECK_EQ_U(ct_recon_stats(r)->tails, 0);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_goroutine_migration)
{
	struct ct_recon *r = new_recon(true);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 110, 5, 2, 20, S_B_ENT);
	ev(r, 120, 5, 3, 20, S_B_RET);
	ev(r, 130, 5, 4, 10, S_A_RET);
	NREC(4);
	EXP_ENTER(1, FB, 1, 1, 110, false);
	EXP_EXIT(2, FB, 1, RET, 1, 110, 120, false, true);
	CHECK_EQ_U(col.v[2].c.tid, 2);
	CHECK_EQ_U(col.v[2].c.exit_tid, 3);
	CHECK_EQ_U(col.v[2].c.goid, 5);
	EXP_EXIT(3, FA, 0, RET, 0, 100, 130, false, false);
	CHECK_EQ_U(col.v[3].c.tid, 1);
	CHECK_EQ_U(col.v[3].c.exit_tid, 4);
	CHECK_EQ_U(ct_recon_stats(r)->threads, 1);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_goroutines_interleaved)
{
	/* Same keys, same thread, different goroutines: separate stacks (no
	 * inferred tail calls across goroutines). */
	struct ct_recon *r = new_recon(true);
	ev(r, 100, 1, 1, 10, S_A_ENT);
	ev(r, 105, 2, 1, 10, S_B_ENT);
	ev(r, 110, 1, 1, 20, S_C_ENT);
	ev(r, 115, 2, 1, 20, S_D_ENT);
	ev(r, 120, 1, 1, 20, S_C_RET);
	ev(r, 125, 2, 1, 20, S_D_RET);
	ev(r, 130, 1, 1, 10, S_A_RET);
	ev(r, 135, 2, 1, 10, S_B_RET);
	NREC(8);
	EXP_ENTER(0, FA, 0, 0, 100, false);
	EXP_ENTER(1, FB, 0, 1, 105, false);
	EXP_ENTER(2, FC, 1, 2, 110, false);
	EXP_ENTER(3, FD, 1, 3, 115, false);
	EXP_EXIT(4, FC, 1, RET, 2, 110, 120, false, true);
	EXP_EXIT(5, FD, 1, RET, 3, 115, 125, false, true);
	EXP_EXIT(6, FA, 0, RET, 0, 100, 130, false, false);
	EXP_EXIT(7, FB, 0, RET, 1, 105, 135, false, false);
	CHECK_EQ_U(col.v[7].c.goid, 2);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->threads, 2);
	CHECK_EQ_U(st->tails, 0);
	CHECK_EQ_U(st->max_depth, 2);
	ct_recon_free(r);

	/* Equal goids in two processes are two goroutines. */
	r = new_recon(true);
	evp(r, 100, 100, 1, 1, 10, S_A_ENT, NULL, 0);
	evp(r, 200, 105, 1, 2, 10, S_B_ENT, NULL, 0);
	evp(r, 100, 110, 1, 1, 10, S_A_RET, NULL, 0);
	evp(r, 200, 115, 1, 2, 10, S_B_RET, NULL, 0);
	NREC(4);
	EXP_ENTER(1, FB, 0, 1, 105, false);
	EXP_EXIT(2, FA, 0, RET, 0, 100, 110, false, true);
	EXP_EXIT(3, FB, 0, RET, 1, 105, 115, false, true);
	CHECK_EQ_U(ct_recon_stats(r)->tails, 0);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_c_threads_keyed_by_tid)
{
	struct ct_recon *r = new_recon(false);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 105, 0, 2, 10, S_B_ENT);
	ev(r, 110, 0, 1, 20, S_C_ENT);
	ev(r, 115, 0, 2, 20, S_D_ENT);
	ev(r, 120, 0, 1, 20, S_C_RET);
	ev(r, 125, 0, 2, 20, S_D_RET);
	ev(r, 130, 0, 1, 10, S_A_RET);
	ev(r, 135, 0, 2, 10, S_B_RET);
	NREC(8);
	EXP_ENTER(1, FB, 0, 1, 105, false);
	EXP_ENTER(2, FC, 1, 2, 110, false);
	EXP_ENTER(3, FD, 1, 3, 115, false);
	EXP_EXIT(6, FA, 0, RET, 0, 100, 130, false, false);
	CHECK_EQ_U(col.v[6].c.tid, 1);
	EXP_EXIT(7, FB, 0, RET, 1, 105, 135, false, false);
	CHECK_EQ_U(col.v[7].c.tid, 2);
	CHECK_EQ_U(col.v[7].c.exit_tid, 2);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->threads, 2);
	CHECK_EQ_U(st->unwound, 0);
	ct_recon_free(r);

	/* Same tid in two processes: two threads. */
	r = new_recon(false);
	evp(r, 100, 100, 0, 1, 10, S_A_ENT, NULL, 0);
	evp(r, 200, 105, 0, 1, 10, S_B_ENT, NULL, 0);
	evp(r, 100, 110, 0, 1, 10, S_A_RET, NULL, 0);
	evp(r, 200, 115, 0, 1, 10, S_B_RET, NULL, 0);
	NREC(4);
	EXP_EXIT(2, FA, 0, RET, 0, 100, 110, false, true);
	CHECK_EQ_U(col.v[2].c.pid, 100);
	EXP_EXIT(3, FB, 0, RET, 1, 105, 115, false, true);
	CHECK_EQ_U(col.v[3].c.pid, 200);
	CHECK_EQ_U(ct_recon_stats(r)->unwound, 0);
	ct_recon_free(r);

	/* Go code on a system stack (goid 0) is a thread, separate from the
	 * goroutine running on the same tid. */
	r = new_recon(true);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 105, 0, 1, 10, S_B_ENT); /* g0, same key, same tid */
	ev(r, 110, 0, 1, 10, S_B_RET);
	ev(r, 115, 5, 1, 10, S_A_RET);
	NREC(4);
	EXP_ENTER(1, FB, 0, 1, 105, false);
	EXP_EXIT(3, FA, 0, RET, 0, 100, 115, false, true);
	CHECK_EQ_U(ct_recon_stats(r)->tails, 0);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_goexit_unwinds_all)
{
	struct ct_recon *r = new_recon(true);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	ev(r, 110, 5, 1, 20, S_B_ENT);
	ev(r, 120, 6, 1, 10, S_C_ENT); /* another goroutine, untouched */
	ev(r, 150, 5, 2, 40, S_GOEXIT);
	NREC(5);
	EXP_EXIT(3, FB, 1, UNW, 1, 110, 150, false, true);
	CHECK_EQ_U(col.v[3].c.exit_tid, 2);
	EXP_EXIT(4, FA, 0, UNW, 0, 100, 150, false, false);
	/* goexit of a goroutine with nothing open: nothing, not unmatched */
	ev(r, 160, 7, 1, 40, S_GOEXIT);
	ev(r, 170, 5, 1, 40, S_GOEXIT);
	NREC(5);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->unwound, 2);
	CHECK_EQ_U(st->unmatched_exits, 0);
	ct_recon_finish(r, 500);
	NREC(6);
	EXP_EXIT(5, FC, 0, UNF, 2, 120, 500, false, true);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_unmatched_exit)
{
	struct ct_recon *r = new_recon(false);
	ev(r, 100, 0, 1, 10, S_A_RET); /* attached mid-call */
	NREC(0);
	CHECK_EQ_U(ct_recon_stats(r)->unmatched_exits, 1);
	ev(r, 110, 0, 1, 10, S_A_ENT);
	ev(r, 120, 0, 1, 30, S_B_RET); /* deeper than anything open */
	NREC(1);
	CHECK_EQ_U(ct_recon_stats(r)->unmatched_exits, 2);
	ev(r, 125, 0, 1, 10, S_A_TAIL_OUT); /* matched TAIL: goes on in untraced code */
	NREC(1);
	ev(r, 130, 0, 1, 10, S_A_TAIL_OUT); /* no return site came: it ended at the
						 jump; this TAIL has nothing open */
	NREC(2);
	EXP_EXIT(1, FA, 0, RET, 0, 110, 125, false, true);
	ev(r, 131, 0, 1, 10, S_A_RESTART);  /* RESTART with nothing open: ignored */
	NREC(2);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->unmatched_exits, 3);
	CHECK_EQ_U(st->calls, 1);
	CHECK_EQ_U(st->returned, 1);
	CHECK_EQ_U(st->events, 6);
	/* A TAIL of a function that is not the top frame is unmatched too. */
	ev(r, 140, 0, 1, 10, S_C_ENT);
	ev(r, 141, 0, 1, 10, S_A_TAIL_OUT);
	NREC(3);
	CHECK_EQ_U(ct_recon_stats(r)->unmatched_exits, 4);
	ev(r, 150, 0, 1, 10, S_C_RET);
	NREC(4);
	EXP_EXIT(3, FC, 0, RET, 1, 140, 150, false, true);
	/* A site id beyond the table is ignored. */
	struct ct_rec_event e = {0};
	e.ts = 160;
	e.pid = PID;
	e.tid = 1;
	e.site = NSITES + 5;
	e.kind = CT_SITE_ENTRY;
	ct_recon_event(r, &e);
	NREC(4);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_lost_events)
{
	struct ct_recon *r = new_recon(true);
	ev(r, 100, 5, 1, 10, S_A_ENT);
	lost(r, 150, 17);
	lost(r, 160, 3);
	ev(r, 170, 5, 1, 10, S_A_RET);
	NREC(4);
	CHECK_EQ_U(col.v[1].type, 'L');
	CHECK_EQ_U(col.v[1].lost_ts, 150);
	CHECK_EQ_U(col.v[1].lost_n, 17);
	CHECK_EQ_U(col.v[2].type, 'L');
	CHECK_EQ_U(col.v[2].lost_ts, 160);
	CHECK_EQ_U(col.v[2].lost_n, 3);
	EXP_EXIT(3, FA, 0, RET, 0, 100, 170, false, true);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->lost, 20);
	CHECK_EQ_U(st->events, 4);
	ct_recon_free(r);

	/* No lost callback: still counted. */
	col_reset();
	struct ct_recon_ops no_lost = {rec_enter, rec_exit, NULL, NULL};
	r = ct_recon_new(sites, NSITES, true, &no_lost, NULL);
	lost(r, 150, 4);
	CHECK_EQ_U(ct_recon_stats(r)->lost, 4);
	NREC(0);
	ct_recon_free(r);
	col_reset();
}

/* After a loss, frames open at the loss that end unseen are LOST, not
 * UNWOUND (their return may be among the lost events), and in Go an entry
 * at the same key over such a frame is not taken for a tail call. */
TEST(recon_loss_cuts_frames_open_at_the_loss)
{
	struct ct_recon *r = new_recon(true);
	ev(r, 100, 1, 1, 10, S_A_ENT);  /* call 0 */
	ev(r, 110, 1, 1, 20, S_B_ENT);  /* call 1 */
	ev(r, 115, 2, 2, 10, S_D_ENT);  /* call 2, goroutine 2 */
	lost(r, 120, 5);                /* B's return (and more) lost */
	ev(r, 130, 1, 1, 20, S_C_ENT);  /* call 3: a sibling of B, not its tail callee */
	ev(r, 135, 1, 1, 30, S_B_ENT);  /* call 4 */
	ev(r, 140, 1, 1, 20, S_C_RET);  /* call 4 unwound (after the loss: a real unwind) */
	ev(r, 150, 2, 2, 10, S_D_RET);  /* open at the loss, but its return was seen */
	ev(r, 160, 1, 1, 10, S_A_RET);
	NREC(11);
	EXP_ENTER(0, FA, 0, 0, 100, false);
	EXP_ENTER(1, FB, 1, 1, 110, false);
	EXP_ENTER(2, FD, 0, 2, 115, false);
	CHECK_EQ_U(col.v[3].type, 'L');
	EXP_EXIT(4, FB, 1, CT_CALL_LOST, 1, 110, 130, false, true);
	EXP_ENTER(5, FC, 1, 3, 130, false);
	EXP_ENTER(6, FB, 2, 4, 135, false);
	EXP_EXIT(7, FB, 2, UNW, 4, 135, 140, false, true);
	EXP_EXIT(8, FC, 1, RET, 3, 130, 140, false, false);
	EXP_EXIT(9, FD, 0, RET, 2, 115, 150, false, true);
	EXP_EXIT(10, FA, 0, RET, 0, 100, 160, false, false);
	CHECK_STR(ct_status_name(CT_CALL_LOST), "lost");
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->cut_by_loss, 1);
	CHECK_EQ_U(st->unwound, 1);
	CHECK_EQ_U(st->tails, 0);
	ct_recon_free(r);
	col_reset();
}

/* Threads by the million with one open call each: a stack starts with room
 * for one frame (16 cost ~2.4 KiB per thread).  Heap in use is measured. */
TEST(recon_many_threads_small_stacks)
{
	enum { N = 200000 };
	struct ct_recon_ops none = {NULL, NULL, NULL, NULL};
	struct mallinfo2 before = mallinfo2();
	struct ct_recon *r = ct_recon_new(sites, NSITES, false, &none, NULL);
	for (uint32_t t = 1; t <= N; t++)
		ev(r, t, 0, t, 10, S_A_ENT);
	struct mallinfo2 after = mallinfo2();
	size_t used = (after.uordblks + after.hblkhd) - (before.uordblks + before.hblkhd);
	printf("# %zu bytes of reconstruction state per thread with one open call\n", used / N);
	CHECK(used / N < 600);
	CHECK_EQ_U(ct_recon_stats(r)->threads, N);
	ct_recon_free(r);
}

TEST(recon_finish_unfinished_stable_order)
{
	struct ct_recon *r = new_recon(true);
	/* 40 goroutines with scattered ids, each two frames deep, started in
	 * an order unrelated to their ids (and so to hash order). */
	enum { N = 40 };
	uint64_t goids[N];
	for (int i = 0; i < N; i++)
		goids[i] = (uint64_t)((i * 7919 + 13) % 1000) + 1;
	for (int i = 0; i < N; i++)
		ev(r, 1000 + i, goids[i], 1 + i % 3, 10, S_A_ENT);
	for (int i = N - 1; i >= 0; i--)
		ev(r, 2000 + i, goids[i], 1 + i % 3, 20, S_B_ENT);
	NREC(2 * N);
	CHECK_EQ_U(ct_recon_stats(r)->threads, N);
	ct_recon_finish(r, 9999);
	NREC(4 * N);
	for (int i = 0; i < N; i++) {
		/* seq of goroutine i's A is i; its B is N + (N-1-i). */
		EXP_EXIT(2 * N + 2 * i, FB, 1, UNF, (uint64_t)(2 * N - 1 - i), 2000 + i, 9999, false, true);
		CHECK_EQ_U(col.v[2 * N + 2 * i].c.goid, goids[i]);
		CHECK_EQ_U(col.v[2 * N + 2 * i].c.exit_tid, 1 + i % 3);
		EXP_EXIT(2 * N + 2 * i + 1, FA, 0, UNF, i, 1000 + i, 9999, false, false);
	}
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->unfinished, 2 * N);
	CHECK_EQ_U(st->calls, 2 * N);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_deep_recursion)
{
	enum { N = 10000 };
	struct ct_recon *r = new_recon(true);
	for (int i = 0; i < N; i++)
		ev(r, 1000 + i, 3, 1, 8 + 64ULL * i, S_A_ENT);
	for (int i = N - 1; i >= 0; i--)
		ev(r, 100000 - i, 3, 1, 8 + 64ULL * i, S_A_RET);
	NREC(2 * N);
	for (int i = 0; i < N; i++) {
		EXP_ENTER(i, FA, i, i, 1000 + i, false);
		int j = N + (N - 1 - i);
		EXP_EXIT(j, FA, i, RET, i, 1000 + i, 100000 - i, false, i == N - 1);
	}
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->max_depth, N);
	CHECK_EQ_U(st->calls, N);
	CHECK_EQ_U(st->returned, N);
	CHECK_EQ_U(st->unwound, 0);
	ct_recon_free(r);

	/* Unwinding all of it at once, and finishing it open. */
	r = new_recon(true);
	for (int i = 0; i < N; i++)
		ev(r, 1000 + i, 3, 1, 8 + 64ULL * i, S_A_ENT);
	ev(r, 50000, 3, 1, 8 + 64ULL * 5000, S_A_RET);
	CHECK_EQ_U(ct_recon_stats(r)->unwound, N - 5001);
	CHECK_EQ_U(ct_recon_stats(r)->returned, 1);
	ct_recon_finish(r, 60000);
	CHECK_EQ_U(ct_recon_stats(r)->unfinished, 5000);
	CHECK_EQ_U(col.v[col.n - 1].c.seq, 0);
	CHECK_EQ_U(col.v[col.n - 1].c.status, UNF);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_stats_threads_counted_once)
{
	/* One thread making two top-level calls is one thread, even though
	 * its stack is empty in between. */
	struct ct_recon *r = new_recon(false);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev(r, 110, 0, 1, 10, S_A_RET);
	ev(r, 120, 0, 1, 10, S_B_ENT);
	ev(r, 130, 0, 1, 10, S_B_RET);
	ev(r, 140, 0, 2, 10, S_B_ENT);
	ev(r, 150, 0, 2, 10, S_B_RET);
	CHECK_EQ_U(ct_recon_stats(r)->calls, 3);
	CHECK_EQ_U(ct_recon_stats(r)->threads, 2);
	ct_recon_free(r);
	col_reset();
}

TEST(recon_stats_mixed)
{
	struct ct_recon *r = new_recon(true);
	ev(r, 100, 1, 1, 10, S_A_ENT);     /* call 0 */
	ev(r, 101, 1, 1, 10, S_A_RESTART);
	ev(r, 102, 1, 1, 10, S_A_ENT);     /* restart: dropped */
	ev(r, 103, 1, 1, 20, S_B_ENT);     /* call 1 */
	ev(r, 104, 1, 1, 20, S_C_ENT);     /* call 2: tail from B */
	ev(r, 105, 1, 1, 30, S_D_ENT);     /* call 3 */
	ev(r, 106, 1, 1, 20, S_C_RET);     /* D unwound; C, B returned */
	ev(r, 107, 2, 2, 10, S_A_ENT);     /* call 4, goroutine 2 */
	ev(r, 108, 2, 2, 10, S_A_TAIL_B);
	ev(r, 109, 2, 2, 10, S_B_ENT);     /* call 5: tail */
	lost(r, 110, 9);
	ev(r, 111, 2, 2, 99, S_GOEXIT);    /* B, A of g2: open at the loss, so lost */
	ev(r, 112, 3, 3, 10, S_D_RET);     /* unmatched */
	ct_recon_finish(r, 200);           /* A of g1 unfinished */
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->events, 13);
	CHECK_EQ_U(st->calls, 6);
	CHECK_EQ_U(st->returned, 2);
	CHECK_EQ_U(st->unwound, 1);
	CHECK_EQ_U(st->cut_by_loss, 2);
	CHECK_EQ_U(st->unfinished, 1);
	CHECK_EQ_U(st->restarts, 1);
	CHECK_EQ_U(st->tails, 2);
	CHECK_EQ_U(st->unmatched_exits, 1);
	CHECK_EQ_U(st->lost, 9);
	CHECK_EQ_U(st->max_depth, 4);
	CHECK_EQ_U(st->threads, 2);
	CHECK_EQ_U(st->returned + st->unwound + st->unfinished + st->cut_by_loss, st->calls);
	ct_recon_free(r);
	col_reset();
}

/* ---- calls observed from the caller (--exit=auto) ----
 * A is traced callee-side (ENTRY, RET); B, C, D from their callers: CALL
 * sites (key_adj 8: the return address the call pushes) and RETSITE probes
 * after them.  Event keys below are the raw keys of the probed instruction;
 * the reconstruction adds each role's key_adj. */
enum {
	C_A_ENT,
	C_A_RET,
	C_B_CALL1,   /* A calls B */
	C_B_EXIT1,   /* ... returns here */
	C_C_CALL_TP, /* B calls C in tail position: C ends with B */
	C_B_CALL2,   /* A calls B again */
	C_B_EXIT2,   /* ... returns to a probe that is also the call of D: */
	C_D_CALL,    /* (companion of C_B_EXIT2) */
	C_D_EXIT,
	C_C_CHECK,   /* C's own entry: a call nobody planned */
	C_RECOVER,   /* runtime.recovery */
	C_DEFERRET,  /* runtime.deferreturn's entry */
	C_B_RESTART, /* B's CALL runtime.morestack */
	C_D_ICHECK,  /* D's own entry, D's address taken: calls from sites found while recording */
	C_D_DCALL,   /* such a site, planned while recording (seen at the CHECK) */
	C_D_DEXIT,   /* ... and its exit */
	C_C_RESTART, /* C's CALL runtime.morestack */
	C_D_RESTART, /* D's CALL runtime.morestack */
	C_C_DCALL,   /* C_D_DCALL's call instruction calling C, found while recording */
	C_C_DEXIT,   /* ... its exit probe, at C_D_DEXIT's address */
	NCSITES
};

#define CS(id, addr, func, kind, adj, call, next, flags) {id, addr, func, kind, CT_NOFUNC, adj, call, next, flags}
static const struct ct_file_site csites[NCSITES] = {
	CS(C_A_ENT, 0x1000, FA, CT_SITE_ENTRY, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(C_A_RET, 0x10f0, FA, CT_SITE_RET, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(C_B_CALL1, 0x1100, FB, CT_SITE_CALL, 8, UINT32_MAX, UINT32_MAX, 0),
	CS(C_B_EXIT1, 0x1108, FB, CT_SITE_RETSITE, 8, C_B_CALL1, UINT32_MAX, 0),
	CS(C_C_CALL_TP, 0x2100, FC, CT_SITE_CALL, 8, UINT32_MAX, UINT32_MAX, CT_SITEF_TAILPOS),
	CS(C_B_CALL2, 0x1180, FB, CT_SITE_CALL, 8, UINT32_MAX, UINT32_MAX, 0),
	CS(C_B_EXIT2, 0x1200, FB, CT_SITE_RETSITE, 8, C_B_CALL2, C_D_CALL, 0),
	CS(C_D_CALL, 0x1200, FD, CT_SITE_CALL, 8, UINT32_MAX, UINT32_MAX, CT_SITEF_COMPANION),
	CS(C_D_EXIT, 0x1205, FD, CT_SITE_RETSITE, 8, C_D_CALL, UINT32_MAX, 0),
	CS(C_C_CHECK, 0x3004, FC, CT_SITE_CHECK, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(C_RECOVER, 0x9100, CT_NOFUNC, CT_SITE_RECOVER, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(C_DEFERRET, 0x9200, CT_NOFUNC, CT_SITE_DEFERRET, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(C_B_RESTART, 0x4060, FB, CT_SITE_RESTART, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(C_D_ICHECK, 0x5004, FD, CT_SITE_CHECK, 0, UINT32_MAX, UINT32_MAX, CT_SITEF_INDIRECT),
	CS(C_D_DCALL, 0x1300, FD, CT_SITE_CALL, 8, UINT32_MAX, UINT32_MAX,
	   CT_SITEF_ATCHECK | CT_SITEF_DYNAMIC | CT_SITEF_INDIRECT),
	CS(C_D_DEXIT, 0x1302, FD, CT_SITE_RETSITE, 8, C_D_DCALL, UINT32_MAX, CT_SITEF_DYNAMIC),
	CS(C_C_RESTART, 0x3060, FC, CT_SITE_RESTART, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(C_D_RESTART, 0x5060, FD, CT_SITE_RESTART, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(C_C_DCALL, 0x1300, FC, CT_SITE_CALL, 8, UINT32_MAX, UINT32_MAX,
	   CT_SITEF_ATCHECK | CT_SITEF_DYNAMIC | CT_SITEF_INDIRECT),
	CS(C_C_DEXIT, 0x1302, FC, CT_SITE_RETSITE, 8, C_C_DCALL, UINT32_MAX, CT_SITEF_DYNAMIC),
};

static struct ct_recon *new_crecon(bool go)
{
	col_reset();
	return ct_recon_new(csites, NCSITES, go, &ops, NULL);
}

static void cevf(struct ct_recon *r, uint64_t ts, uint64_t goid, uint32_t tid, uint64_t key, uint32_t site,
		 uint16_t flags)
{
	struct ct_rec_event e = {0};
	e.ts = ts;
	e.goid = goid;
	e.key = key;
	e.pid = PID;
	e.tid = tid;
	e.site = site;
	e.kind = csites[site].kind;
	e.flags = flags;
	ct_recon_event(r, &e);
}

static void cev(struct ct_recon *r, uint64_t ts, uint64_t key, uint32_t site)
{
	cevf(r, ts, 0, 7, key, site, 0);
}

/* A { B { C (tail position) } }: B's return site closes B and C with it. */
TEST(recon_caller_side_nesting_and_tail_position)
{
	struct ct_recon *r = new_crecon(false);
	cev(r, 100, 100, C_A_ENT);
	cev(r, 110, 112, C_B_CALL1);   /* B's frame: 120 */
	cev(r, 120, 132, C_C_CALL_TP); /* C's frame: 140 */
	cev(r, 130, 112, C_B_EXIT1);   /* B returned; C, in tail position in B, with it */
	cev(r, 200, 100, C_A_RET);
	NREC(6);
	EXP_ENTER(0, FA, 0, 0, 100, false);
	EXP_ENTER(1, FB, 1, 1, 110, false);
	CHECK_EQ_U(col.v[1].c.key, 120);
	EXP_ENTER(2, FC, 2, 2, 120, false);
	CHECK_EQ_U(col.v[2].c.key, 140);
	EXP_EXIT(3, FC, 2, RET, 2, 120, 130, false, true);
	EXP_EXIT(4, FB, 1, RET, 1, 110, 130, false, false);
	CHECK_EQ_U(col.v[4].c.exit_site, C_B_EXIT1);
	EXP_EXIT(5, FA, 0, RET, 0, 100, 200, false, false);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->returned_at_retsite, 1);
	CHECK_EQ_U(st->returned_with_caller, 1);
	CHECK_EQ_U(st->returned_at_ret, 1);
	CHECK_EQ_U(st->unmatched_exits, 0);
	ct_recon_free(r);
	col_reset();
}

/* A { B }, B called from a call site with an exit probe, its interim RET
 * passing (CT_EV_INTERIM_PASS: that probe was to read its results), and A
 * returning before that probe saw B end (a call site found while B ran,
 * in tail position: restic's rateLimitedBackend.Load under its closure):
 * B returned when its RET passed, not unwound with A. */
static const struct ct_file_site passed_sites[] = {
	CS(0, 0x1000, FA, CT_SITE_ENTRY, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(1, 0x10f0, FA, CT_SITE_RET, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(2, 0x1100, FB, CT_SITE_CALL, 8, UINT32_MAX, UINT32_MAX, 0),
	CS(3, 0x1108, FB, CT_SITE_RETSITE, 8, 2, UINT32_MAX, 0),
	CS(4, 0x2010, FB, CT_SITE_RET, 0, UINT32_MAX, UINT32_MAX, 0),
};

/* An event of thread 7 at SITE of TABLE. */
static void table_ev(struct ct_recon *r, const struct ct_file_site *table, uint64_t ts, uint64_t goid, uint64_t key,
		     uint32_t site, uint16_t flags)
{
	struct ct_rec_event e = {0};
	e.pid = PID, e.tid = 7, e.goid = goid, e.flags = flags;
	e.ts = ts, e.key = key, e.site = site, e.kind = table[site].kind;
	ct_recon_event(r, &e);
}

static void passed_ev(struct ct_recon *r, uint64_t ts, uint64_t key, uint32_t site, uint16_t flags)
{
	table_ev(r, passed_sites, ts, 0, key, site, flags);
}

TEST(recon_call_whose_ret_passed_returned_when_its_caller_ends)
{
	col_reset();
	struct ct_recon *r = ct_recon_new(passed_sites, 5, false, &ops, NULL);
	passed_ev(r, 100, 100, 0, 0);
	passed_ev(r, 110, 112, 2, 0);			/* B's frame: 120 */
	passed_ev(r, 150, 120, 4, CT_EV_INTERIM_PASS); /* B's RET */
	passed_ev(r, 200, 100, 1, 0);			/* A returns */
	NREC(4);
	EXP_EXIT(2, FB, 1, CT_CALL_RETURNED, 1, 110, 150, false, true);
	CHECK_EQ_U(col.v[2].c.exit_site, UINT32_MAX); /* (its results unread) */
	EXP_EXIT(3, FA, 0, CT_CALL_RETURNED, 0, 100, 200, false, false);
	ct_recon_free(r);
	col_reset();
}

/* Calls seen ahead (plan/ahead.c): a loop's jcc at 0x1200 is the exit
 * probe of B's call, B's call when it jumps and C's when it does not
 * (CT_EV_NOT_TAKEN): each hit ends the call before and makes the one its
 * way leads to, never both. */
static const struct ct_file_site ahead_sites[] = {
	CS(0, 0x1000, FA, CT_SITE_ENTRY, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(1, 0x10f0, FA, CT_SITE_RET, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(2, 0x1200, FB, CT_SITE_RETSITE, 8, 3, 3, 0),
	CS(3, 0x1200, FB, CT_SITE_CALL, 8, UINT32_MAX, 4, CT_SITEF_COMPANION | CT_SITEF_AHEAD | CT_SITEF_COND),
	CS(4, 0x1200, FC, CT_SITE_CALL, 8, UINT32_MAX, UINT32_MAX,
	   CT_SITEF_COMPANION | CT_SITEF_AHEAD | CT_SITEF_COND | CT_SITEF_FALL),
	CS(5, 0x1300, FC, CT_SITE_RETSITE, 8, 4, UINT32_MAX, 0),
};

TEST(recon_calls_seen_ahead_on_each_way_of_a_jump)
{
	col_reset();
	struct ct_recon *r = ct_recon_new(ahead_sites, 6, false, &ops, NULL);
	table_ev(r, ahead_sites, 100, 0, 100, 0, 0);
	table_ev(r, ahead_sites, 110, 0, 112, 2, 0);		  /* jumps: B */
	table_ev(r, ahead_sites, 130, 0, 112, 2, 0);		  /* B returned; jumps: B again */
	table_ev(r, ahead_sites, 150, 0, 112, 2, CT_EV_NOT_TAKEN); /* B returned; on: C */
	table_ev(r, ahead_sites, 160, 0, 112, 5, 0);		  /* C returned */
	table_ev(r, ahead_sites, 200, 0, 100, 1, 0);
	NREC(8);
	EXP_ENTER(0, FA, 0, 0, 100, false);
	EXP_ENTER(1, FB, 1, 1, 110, false);
	CHECK_EQ_U(col.v[1].c.key, 120);
	EXP_EXIT(2, FB, 1, RET, 1, 110, 130, false, true);
	EXP_ENTER(3, FB, 1, 2, 130, false);
	EXP_EXIT(4, FB, 1, RET, 2, 130, 150, false, true);
	EXP_ENTER(5, FC, 1, 3, 150, false);
	EXP_EXIT(6, FC, 1, RET, 3, 150, 160, false, true);
	EXP_EXIT(7, FA, 0, RET, 0, 100, 200, false, false);
	CHECK_EQ_U(ct_recon_stats(r)->unmatched_exits, 0);
	ct_recon_free(r);
	col_reset();
}

/* A callee-side A (its ENTRY and RET probed) calling C in tail position,
 * and the runtime's recovery markers; an event at one of them */
static const struct ct_file_site callee_tail_sites[] = {
	CS(0, 0x1000, FA, CT_SITE_ENTRY, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(1, 0x10f0, FA, CT_SITE_RET, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(2, 0x1100, FC, CT_SITE_CALL, 8, UINT32_MAX, UINT32_MAX, CT_SITEF_TAILPOS),
	CS(3, 0x9100, CT_NOFUNC, CT_SITE_RECOVER, 0, UINT32_MAX, UINT32_MAX, 0),
	CS(4, 0x9200, CT_NOFUNC, CT_SITE_DEFERRET, 0, UINT32_MAX, UINT32_MAX, 0),
};

static void tail_ev(struct ct_recon *r, uint64_t ts, uint64_t goid, uint64_t key, uint32_t site)
{
	table_ev(r, callee_tail_sites, ts, goid, key, site, 0);
}

/* Attached while B ran (its entry and A's before the trace): C, in tail
 * position in B, ends with B, whose return site shows B ended but not
 * how: C's end is unobserved (not unwound).  A call a panic unwound (its
 * recovery seen) and a call with its caller open stay as they were. */
TEST(recon_tail_position_call_whose_caller_began_before_the_trace)
{
	struct ct_recon *r = new_crecon(false);
	cev(r, 120, 132, C_C_CALL_TP); /* C's frame: 140 */
	cev(r, 130, 112, C_B_EXIT1);   /* B returned, or was unwound */
	cev(r, 140, 112, C_B_CALL1);   /* B again, C in it: B closes C */
	cev(r, 150, 132, C_C_CALL_TP);
	cev(r, 160, 112, C_B_EXIT1);
	NREC(6);
	EXP_EXIT(1, FC, 0, CT_CALL_UNOBSERVED, 0, 120, 130, false, true);
	EXP_EXIT(4, FC, 1, RET, 2, 150, 160, false, true);
	EXP_EXIT(5, FB, 0, RET, 1, 140, 160, false, false);
	CHECK_EQ_U(ct_recon_stats(r)->unobserved, 1);
	CHECK_EQ_U(ct_recon_stats(r)->unwound, 0);
	ct_recon_free(r);
	/* the same with a callee-side caller's RET */
	col_reset();
	r = ct_recon_new(callee_tail_sites, 5, true, &ops, NULL);
	tail_ev(r, 110, 1, 112, 2);
	tail_ev(r, 150, 1, 100, 1);
	/* C panicked, recovered in a frame entered before the trace: unwound */
	tail_ev(r, 160, 1, 112, 2);
	tail_ev(r, 170, 1, 0, 3);
	tail_ev(r, 180, 1, 50, 4);
	NREC(4);
	EXP_EXIT(1, FC, 0, CT_CALL_UNOBSERVED, 0, 110, 150, false, true);
	EXP_EXIT(3, FC, 0, UNW, 1, 160, 180, false, true);
	ct_recon_free(r);
	col_reset();
}

/* The untraced code A jumps to (a PLT stub) returns where a probe watches
 * (the kernel side found one at the return address, CT_EV_WATCHED; or A
 * was entered at a planned call site, whose exit probe is there): B
 * entering at A's key before that probe is where it jumped on to (the
 * library's function the stub leads to), A's tail call, both returned at
 * B's RET.  Without either fact (recon_tail_event_to_untraced_target)
 * A ended at its jump, B its sibling. */
TEST(recon_untraced_tail_that_returns_where_a_probe_watches)
{
	static const struct ct_file_site w[] = {
		CS(0, 0x1000, FA, CT_SITE_ENTRY, 0, UINT32_MAX, UINT32_MAX, 0),
		CS(1, 0x1040, FA, CT_SITE_TAIL, 0, UINT32_MAX, UINT32_MAX, 0),
		CS(2, 0x2000, FB, CT_SITE_ENTRY, 0, UINT32_MAX, UINT32_MAX, 0),
		CS(3, 0x2010, FB, CT_SITE_RET, 0, UINT32_MAX, UINT32_MAX, 0),
		CS(4, 0x4100, FA, CT_SITE_CALL, 8, UINT32_MAX, UINT32_MAX, 0), /* D calls A */
		CS(5, 0x4105, FA, CT_SITE_RETSITE, 8, 4, UINT32_MAX, 0),
		CS(6, 0x1000, FA, CT_SITE_CHECK, 0, UINT32_MAX, 1, 0), /* A's entry, auto: the jump is a role */
	};
	col_reset();
	struct ct_recon *r = ct_recon_new(w, 7, false, &ops, NULL);
	struct ct_rec_event e = {0};
	e.pid = PID, e.tid = 7;
#define W(TS, KEY, SITE, FLAGS) (e.ts = (TS), e.key = (KEY), e.site = (SITE), e.kind = w[SITE].kind, \
				 e.flags = (FLAGS), ct_recon_event(r, &e))
	/* callee side (--exit=ret): the kernel side says the return is watched */
	W(100, 10, 0, 0);
	W(105, 10, 1, CT_EV_WATCHED);
	W(110, 10, 2, 0);
	W(120, 10, 3, 0);
	NREC(4);
	EXP_ENTER(1, FB, 1, 1, 110, true);
	EXP_EXIT(2, FB, 1, RET, 1, 110, 120, true, true);
	EXP_EXIT(3, FA, 0, RET, 0, 100, 120, false, false);
	/* caller side: A's call from D's planned call site returns at its
	 * exit probe (the CALL event a CHECK sends, with its TAIL role) */
	W(200, 2, 4, 0);
	W(205, 10, 1, 0);
	W(210, 10, 2, 0);
	W(220, 10, 3, 0);
	W(230, 2, 5, 0); /* A's exit: both ended already */
	NREC(8);
	EXP_ENTER(5, FB, 1, 3, 210, true);
	EXP_EXIT(6, FB, 1, RET, 3, 210, 220, true, true);
	EXP_EXIT(7, FA, 0, RET, 2, 200, 220, false, false);
	/* ... and a call that returns from the untraced code with nothing
	 * traced on the way ends at its exit probe; B after it is D's */
	W(300, 2, 4, 0);
	W(305, 10, 1, 0);
	W(330, 2, 5, 0);
	W(340, 10, 2, 0);
	W(350, 10, 3, 0);
	NREC(12);
	EXP_EXIT(9, FA, 0, RET, 4, 300, 330, false, true);
	EXP_ENTER(10, FB, 0, 5, 340, false);
	/* entered at a CHECK, from a call site without an exit probe: B is
	 * the caller's next call, A unobserved */
	W(400, 10, 6, 0);
	W(405, 10, 1, 0);
	W(410, 10, 2, 0);
	W(420, 10, 3, 0);
	NREC(16);
	EXP_EXIT(13, FA, 0, CT_CALL_UNOBSERVED, 6, 400, 405, false, true);
	EXP_ENTER(14, FB, 0, 7, 410, false);
#undef W
	CHECK_EQ_U(ct_recon_stats(r)->unwound, 0);
	ct_recon_free(r);
	col_reset();
}

/* A tail-position call whose caller was unwound (a longjmp out of the
 * chain) is unwound too; one whose caller's RET comes returns with it. */
TEST(recon_tail_position_follows_its_caller)
{
	struct ct_recon *r = new_crecon(false);
	cev(r, 100, 100, C_A_ENT);
	cev(r, 110, 112, C_B_CALL1);
	cev(r, 120, 132, C_C_CALL_TP);
	cev(r, 200, 100, C_A_RET); /* B never returned: B and C unwound */
	NREC(6);
	EXP_EXIT(3, FC, 2, UNW, 2, 120, 200, false, true);
	EXP_EXIT(4, FB, 1, UNW, 1, 110, 200, false, false);
	EXP_EXIT(5, FA, 0, RET, 0, 100, 200, false, false);
	ct_recon_free(r);
	/* C in tail position in a callee-side A: A's RET ends it */
	col_reset();
	r = ct_recon_new(callee_tail_sites, 3, false, &ops, NULL);
	tail_ev(r, 100, 0, 100, 0);
	tail_ev(r, 110, 0, 112, 2);
	tail_ev(r, 150, 0, 100, 1);
	NREC(4);
	EXP_EXIT(2, FC, 1, RET, 1, 110, 150, false, true);
	EXP_EXIT(3, FA, 0, RET, 0, 100, 150, false, false);
	ct_recon_free(r);
	col_reset();
}

/* The return site runs without the call (a loop entered in the middle, a
 * jump table): nothing open at the key from that call site, nothing ends. */
TEST(recon_return_site_without_its_call)
{
	struct ct_recon *r = new_crecon(false);
	cev(r, 100, 100, C_A_ENT);
	cev(r, 105, 112, C_B_EXIT1); /* before any call */
	cev(r, 110, 112, C_B_CALL1);
	cev(r, 120, 112, C_B_EXIT1);
	cev(r, 125, 112, C_B_EXIT1); /* again, through the loop's back edge */
	cev(r, 130, 112, C_B_CALL1);
	cev(r, 135, 112, C_B_EXIT2); /* another call site's exit: not B's call */
	cev(r, 140, 112, C_B_EXIT1);
	cev(r, 200, 100, C_A_RET);
	NREC(8);
	EXP_EXIT(2, FB, 1, RET, 1, 110, 120, false, true);
	/* C_B_EXIT2 is not B's call site: it closes nothing, but its companion
	 * (the call of D) finds B's frame open at D's key: unwound */
	EXP_EXIT(4, FB, 1, UNW, 2, 130, 135, false, true);
	EXP_ENTER(5, FD, 1, 3, 135, false);
	EXP_EXIT(6, FD, 1, UNW, 3, 135, 200, false, true);
	EXP_EXIT(7, FA, 0, RET, 0, 100, 200, false, false);
	ct_recon_free(r);
	col_reset();
}

/* One probe, two roles: the exit of one call is the next call. */
TEST(recon_companion_roles_in_order)
{
	struct ct_recon *r = new_crecon(false);
	const uint8_t pay[] = {5, 6, 7};
	cev(r, 100, 100, C_A_ENT);
	cev(r, 110, 112, C_B_CALL2);
	struct ct_rec_event e = {0};
	e.ts = 120, e.key = 112, e.pid = PID, e.tid = 7, e.site = C_B_EXIT2, e.kind = CT_SITE_RETSITE;
	e.payload = pay, e.payload_len = sizeof(pay);
	ct_recon_event(r, &e);
	cev(r, 130, 112, C_D_EXIT);
	cev(r, 200, 100, C_A_RET);
	NREC(6);
	EXP_ENTER(1, FB, 1, 1, 110, false);
	EXP_EXIT(2, FB, 1, RET, 1, 110, 120, false, true);
	/* the payload serves both: B's results, D's arguments */
	CHECK_EQ_U(col.v[2].c.ret_len, 3);
	EXP_ENTER(3, FD, 1, 2, 120, false);
	CHECK_EQ_U(col.v[3].c.args_len, 3);
	CHECK_EQ_U(col.v[3].c.entry_site, C_D_CALL);
	EXP_EXIT(4, FD, 1, RET, 2, 120, 130, false, true);
	EXP_EXIT(5, FA, 0, RET, 0, 100, 200, false, false);
	ct_recon_free(r);
	col_reset();
}

/* A call instruction finds a frame at its callee's key: that call's end was
 * never seen (a longjmp to the caller): unwound, not a tail call. */
TEST(recon_call_over_a_stale_frame)
{
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 112, C_B_CALL1, 0);
	cevf(r, 120, 5, 7, 112, C_B_CALL2, 0);
	cevf(r, 130, 5, 7, 112, C_B_EXIT2, 0);
	NREC(6);
	EXP_EXIT(2, FB, 1, UNW, 1, 110, 120, false, true);
	EXP_ENTER(3, FB, 1, 2, 120, false);
	EXP_EXIT(4, FB, 1, RET, 2, 120, 130, false, true);
	CHECK_EQ_U(col.v[5].type, 'E'); /* D, the companion */
	ct_recon_free(r);
	col_reset();
}

/* A CALL sent by the callee's own entry (CT_SITEF_ATCHECK) comes again when
 * morestack re-runs that entry: after B's RESTART, the same CALL at the same
 * key is the same call; without one, a new call (the old one unwound). */
TEST(recon_call_sent_again_after_a_restart)
{
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 112, C_B_CALL1, 0);  /* B's frame: 120 */
	cevf(r, 111, 5, 7, 120, C_B_RESTART, 0);
	cevf(r, 112, 5, 7, 112, C_B_CALL1, 0);  /* the entry again: dropped */
	cevf(r, 130, 5, 7, 112, C_B_EXIT1, 0);
	cevf(r, 140, 5, 7, 112, C_B_CALL1, 0);  /* the next call */
	cevf(r, 150, 5, 7, 112, C_B_CALL1, 0);  /* no restart before: another call */
	cevf(r, 200, 5, 7, 100, C_A_RET, 0);
	NREC(8);
	EXP_ENTER(1, FB, 1, 1, 110, false);
	EXP_EXIT(2, FB, 1, RET, 1, 110, 130, false, true);
	EXP_ENTER(3, FB, 1, 2, 140, false);
	EXP_EXIT(4, FB, 1, UNW, 2, 140, 150, false, true);
	EXP_ENTER(5, FB, 1, 3, 150, false);
	CHECK_EQ_U(ct_recon_stats(r)->restarts, 1);
	ct_recon_free(r);
	col_reset();
}

/* The same when the CHECK sent the CALL from where an untraced wrapper was
 * called (via): keyed at the wrapper's frame (120), the restart at the
 * callee's own, deeper by the wrapper's frame (0x48).  A call probed at its
 * own call instruction is keyed exactly: a deeper restart of its function
 * is not its. */
TEST(recon_call_sent_via_a_wrapper_again_after_a_restart)
{
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 112, C_D_DCALL, 0);       /* D's frame as sent: 120 */
	cevf(r, 111, 5, 7, 120 + 0x48, C_D_RESTART, 0); /* D's own frame */
	cevf(r, 112, 5, 7, 112, C_D_DCALL, 0);       /* the entry again: dropped */
	cevf(r, 130, 5, 7, 112, C_D_DEXIT, 0);
	cevf(r, 140, 5, 7, 112, C_B_CALL1, 0);
	cevf(r, 141, 5, 7, 120 + 0x48, C_B_RESTART, 0); /* not B's at 120 */
	cevf(r, 142, 5, 7, 112, C_B_CALL1, 0);        /* another call */
	cevf(r, 200, 5, 7, 100, C_A_RET, 0);
	NREC(8);
	EXP_ENTER(1, FD, 1, 1, 110, false);
	EXP_EXIT(2, FD, 1, RET, 1, 110, 130, false, true);
	EXP_ENTER(3, FB, 1, 2, 140, false);
	EXP_EXIT(4, FB, 1, UNW, 2, 140, 142, false, true);
	EXP_ENTER(5, FB, 1, 3, 142, false);
	CHECK_EQ_U(ct_recon_stats(r)->restarts, 1);
	ct_recon_free(r);
	col_reset();
}

/* A call from a call site nobody planned: its own entry says so (CHECK);
 * it ends at the first event of its thread that is not deeper, which is
 * not when it returned: unobserved. */
TEST(recon_unplanned_call)
{
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 120, C_C_CHECK, 0);
	cevf(r, 111, 5, 7, 120, C_C_RESTART, 0);
	cevf(r, 112, 5, 7, 120, C_C_CHECK, 0); /* morestack re-ran its entry: the same call */
	cevf(r, 115, 5, 7, 132, C_B_CALL1, 0); /* a call inside it: deeper */
	cevf(r, 118, 5, 7, 132, C_B_EXIT1, 0);
	cevf(r, 130, 5, 7, 112, C_B_CALL1, 0); /* back at A's level: C has ended */
	cevf(r, 140, 5, 7, 112, C_B_EXIT1, 0);
	cevf(r, 200, 5, 7, 100, C_A_RET, 0);
	NREC(8);
	EXP_ENTER(1, FC, 1, 1, 110, false);
	CHECK(col.v[1].c.unplanned);
	EXP_ENTER(2, FB, 2, 2, 115, false);
	CHECK(!col.v[2].c.unplanned);
	EXP_EXIT(3, FB, 2, RET, 2, 115, 118, false, true);
	EXP_EXIT(4, FC, 1, CT_CALL_UNOBSERVED, 1, 110, 130, false, false);
	CHECK(col.v[4].c.unplanned);
	CHECK(!col.v[4].c.indirect);
	EXP_ENTER(5, FB, 1, 3, 130, false);
	EXP_EXIT(7, FA, 0, RET, 0, 100, 200, false, false);
	CHECK_EQ_U(ct_recon_stats(r)->unplanned, 1);
	CHECK_EQ_U(ct_recon_stats(r)->unobserved, 1);
	CHECK_EQ_U(ct_recon_stats(r)->restarts, 1);
	ct_recon_free(r);
	col_reset();
}

/* An unplanned call has ended (the kernel side saw its return address
 * slot overwritten, CT_EV_UNOBSERVED_DONE) before a deeper event (A's
 * untraced helper called B): B is not inside it. */
TEST(recon_unplanned_call_ended_before_a_deeper_one)
{
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 120, C_C_CHECK, 0);
	cevf(r, 115, 5, 7, 132, C_B_CALL1, 0); /* inside it: deeper, slot untouched */
	cevf(r, 118, 5, 7, 132, C_B_EXIT1, 0);
	cevf(r, 130, 5, 7, 152, C_B_CALL1, CT_EV_UNOBSERVED_DONE);
	cevf(r, 140, 5, 7, 152, C_B_EXIT1, 0);
	cevf(r, 200, 5, 7, 100, C_A_RET, 0);
	NREC(8);
	EXP_ENTER(2, FB, 2, 2, 115, false);
	EXP_EXIT(4, FC, 1, CT_CALL_UNOBSERVED, 1, 110, 130, false, false);
	EXP_ENTER(5, FB, 1, 3, 130, false);
	EXP_EXIT(6, FB, 1, RET, 3, 130, 140, false, true);
	EXP_EXIT(7, FA, 0, RET, 0, 100, 200, false, false);
	ct_recon_free(r);
	col_reset();
}

/* The process ends (or the trace does) with a call from a site without an
 * exit probe innermost: it may have returned long before, unobserved, not
 * exited; one with a call open inside it was running. */
TEST(recon_unplanned_call_open_at_the_end_is_unobserved)
{
	for (int end = 0; end < 2; end++) {
		struct ct_recon *r = new_crecon(true);
		cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
		cevf(r, 110, 5, 7, 120, C_C_CHECK, 0);
		if (end) {
			ct_recon_finish(r, 300);
		} else {
			struct ct_rec_event e = {.kind = CT_EV_PROC_REC, .proc = CT_PROC_EXIT, .pid = PID, .tid = 7, .ts = 300};
			ct_recon_event(r, &e);
		}
		NREC(4);
		EXP_EXIT(2, FC, 1, CT_CALL_UNOBSERVED, 1, 110, 300, false, true);
		CHECK(!col.v[2].c.end_bound); /* no event showed it over: no bound */
		EXP_EXIT(3, FA, 0, end ? UNF : CT_CALL_EXITED, 0, 100, 300, false, false);
		ct_recon_free(r);
	}
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 120, C_C_CHECK, 0);
	cevf(r, 115, 5, 7, 132, C_B_CALL1, 0); /* open inside it at the end */
	ct_recon_finish(r, 300);
	NREC(6);
	EXP_EXIT(3, FB, 2, UNF, 2, 115, 300, false, true);
	EXP_EXIT(4, FC, 1, UNF, 1, 110, 300, false, false);
	ct_recon_free(r);
	col_reset();
}

/* Calls from one call site without an exit probe, back to back (a loop
 * whose call site's probe is not in yet): the same key, no RESTART between
 * them: one call each, each ended by the next, unobserved. */
TEST(recon_unplanned_calls_back_to_back)
{
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 120, C_C_CHECK, 0);
	cevf(r, 120, 5, 7, 120, C_C_CHECK, 0);
	cevf(r, 130, 5, 7, 120, C_C_CHECK, 0);
	cevf(r, 200, 5, 7, 100, C_A_RET, 0);
	NREC(8);
	EXP_ENTER(1, FC, 1, 1, 110, false);
	EXP_EXIT(2, FC, 1, CT_CALL_UNOBSERVED, 1, 110, 120, false, true);
	EXP_ENTER(3, FC, 1, 2, 120, false);
	EXP_EXIT(4, FC, 1, CT_CALL_UNOBSERVED, 2, 120, 130, false, true);
	EXP_ENTER(5, FC, 1, 3, 130, false);
	EXP_EXIT(6, FC, 1, CT_CALL_UNOBSERVED, 3, 130, 200, false, true);
	CHECK_EQ_U(ct_recon_stats(r)->unobserved, 3);
	CHECK_EQ_U(ct_recon_stats(r)->restarts, 0);
	ct_recon_free(r);
	col_reset();
}

/* A call without an exit probe made a call in tail position (which ends
 * with it): an event back at its caller's level ends both, unobserved;
 * neither was unwound. */
TEST(recon_unplanned_call_with_a_tail_position_call_open)
{
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 120, C_C_CHECK, 0);
	cevf(r, 115, 5, 7, 132, C_C_CALL_TP, 0); /* C calls C in tail position */
	cevf(r, 130, 5, 7, 112, C_B_CALL1, 0);   /* back at A's level */
	cevf(r, 140, 5, 7, 112, C_B_EXIT1, 0);
	cevf(r, 200, 5, 7, 100, C_A_RET, 0);
	NREC(8);
	EXP_EXIT(3, FC, 2, CT_CALL_UNOBSERVED, 2, 115, 130, false, true);
	EXP_EXIT(4, FC, 1, CT_CALL_UNOBSERVED, 1, 110, 130, false, false);
	EXP_EXIT(6, FB, 1, RET, 3, 130, 140, false, true);
	EXP_EXIT(7, FA, 0, RET, 0, 100, 200, false, false);
	CHECK_EQ_U(ct_recon_stats(r)->unobserved, 2);
	CHECK_EQ_U(ct_recon_stats(r)->unwound, 0);
	ct_recon_free(r);
	col_reset();
}

/* An address-taken function called from a site found while recording:
 * the first call, before that site's exit probe was in, ends unobserved
 * (at its exit probe, which is not its call's: the next event not deeper);
 * the calls after it are that site's and return there. */
TEST(recon_indirect_call_site_found_while_recording)
{
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 120, C_D_ICHECK, 0);
	cevf(r, 120, 5, 7, 112, C_D_DEXIT, 0); /* the caller's SP: key_adj 8 */
	cevf(r, 130, 5, 7, 112, C_D_DCALL, 0);
	cevf(r, 140, 5, 7, 112, C_D_DEXIT, 0);
	cevf(r, 200, 5, 7, 100, C_A_RET, 0);
	NREC(6);
	EXP_EXIT(2, FD, 1, CT_CALL_UNOBSERVED, 1, 110, 120, false, true);
	CHECK(col.v[2].c.indirect && !col.v[2].c.unplanned);
	EXP_EXIT(4, FD, 1, RET, 2, 130, 140, false, true);
	CHECK(col.v[4].c.indirect && !col.v[4].c.unplanned);
	EXP_EXIT(5, FA, 0, RET, 0, 100, 200, false, false);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->indirect, 2);
	CHECK_EQ_U(st->unplanned, 0);
	CHECK_EQ_U(st->unobserved, 1);
	CHECK_EQ_U(st->returned_at_dynamic, 1);
	ct_recon_free(r);
	col_reset();
}

/* D's first call from a site found while recording grew its stack: the
 * entry ran again after the site's exit probe went in, so the CHECK sent it
 * as that site's CALL.  One call (restarted), which returns at the new
 * probe; it was shown as two, the first unobserved (runtime/debug's tests:
 * a test function on a new goroutine's small stack). */
TEST(recon_restart_after_the_call_site_got_its_exit)
{
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 120, C_D_ICHECK, 0);
	cevf(r, 111, 5, 7, 120, C_D_RESTART, 0);
	cevf(r, 112, 5, 7, 112, C_D_DCALL, 0);
	cevf(r, 140, 5, 7, 112, C_D_DEXIT, 0);
	cevf(r, 200, 5, 7, 100, C_A_RET, 0);
	NREC(4);
	EXP_EXIT(2, FD, 1, RET, 1, 110, 140, false, true);
	CHECK(col.v[2].c.indirect && !col.v[2].c.unplanned);
	const struct ct_recon_stats *st = ct_recon_stats(r);
	CHECK_EQ_U(st->restarts, 1);
	CHECK_EQ_U(st->unobserved, 0);
	CHECK_EQ_U(st->returned_at_dynamic, 1);
	ct_recon_free(r);
	col_reset();
}

/* One call instruction found calling D and C while recording: each has its
 * exit probe at the return address, and both fire when D returns, C's
 * first.  C's is not D's end and no sign of an unwinding: D returns at its
 * own, with its results, and the call in tail position in D with it (it
 * was unwound: encoding/json's scanner steps, called through s.step). */
TEST(recon_two_exit_probes_at_one_return_address)
{
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 112, C_D_DCALL, 0);
	cevf(r, 120, 5, 7, 132, C_C_CALL_TP, 0); /* D calls C in tail position */
	cevf(r, 130, 5, 7, 112, C_C_DEXIT, 0);
	cevf(r, 130, 5, 7, 112, C_D_DEXIT, 0);
	cevf(r, 200, 5, 7, 100, C_A_RET, 0);
	NREC(6);
	EXP_EXIT(3, FC, 2, RET, 2, 120, 130, false, true);
	EXP_EXIT(4, FD, 1, RET, 1, 110, 130, false, false);
	CHECK_EQ_U(col.v[4].c.exit_site, C_D_DEXIT); /* its results, not C's */
	CHECK_EQ_U(ct_recon_stats(r)->unwound, 0);
	ct_recon_free(r);
	col_reset();
}

/* The same, but D's exit has no probe of its own: it rides on C's (a
 * companion no probe's chain names), whose hit closes D's calls too, with
 * D's exit site (its results, as C's probe read them); C's own calls from
 * that instruction return there as before. */
TEST(recon_found_exit_riding_on_another_probe)
{
	struct ct_file_site t[NCSITES];
	memcpy(t, csites, sizeof(t));
	t[C_D_DEXIT].flags |= CT_SITEF_COMPANION;
	col_reset();
	struct ct_recon *r = ct_recon_new(t, NCSITES, true, &ops, NULL);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 112, C_D_DCALL, 0);
	cevf(r, 120, 5, 7, 132, C_C_CALL_TP, 0); /* D calls C in tail position */
	cevf(r, 130, 5, 7, 112, C_C_DEXIT, 0);   /* the one probe there */
	cevf(r, 140, 5, 7, 112, C_C_DCALL, 0);   /* C through the same instruction */
	cevf(r, 150, 5, 7, 112, C_C_DEXIT, 0);
	cevf(r, 200, 5, 7, 100, C_A_RET, 0);
	NREC(8);
	EXP_EXIT(3, FC, 2, RET, 2, 120, 130, false, true);
	EXP_EXIT(4, FD, 1, RET, 1, 110, 130, false, false);
	CHECK_EQ_U(col.v[4].c.exit_site, C_D_DEXIT);
	EXP_EXIT(6, FC, 1, RET, 3, 140, 150, false, true);
	CHECK_EQ_U(col.v[6].c.exit_site, C_C_DEXIT);
	CHECK_EQ_U(ct_recon_stats(r)->unwound, 0);
	ct_recon_free(r);
	col_reset();
}

/* A recovered panic (runtime.recovery, on the system stack) resumes A at a
 * return site of its call of B: B and what B called were unwound. */
TEST(recon_recovered_panic_resumes_at_a_return_site)
{
	for (int via = 0; via < 2; via++) {
		struct ct_recon *r = new_crecon(true);
		cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
		cevf(r, 110, 5, 7, 112, C_B_CALL1, 0);
		cevf(r, 120, 5, 7, 132, C_C_CALL_TP, 0);
		cevf(r, 130, 5, 8, 900, C_RECOVER, CT_EV_SYSSTACK); /* on g0, another thread */
		if (via == 0)
			cevf(r, 140, 5, 8, 112, C_B_EXIT1, 0); /* resumes at the return site */
		else
			cevf(r, 140, 5, 8, 120, C_DEFERRET, 0); /* or calls deferreturn first */
		cevf(r, 150, 5, 8, 112, C_B_EXIT1, 0);
		cevf(r, 200, 5, 8, 100, C_A_RET, 0);
		NREC(6);
		EXP_EXIT(3, FC, 2, UNW, 2, 120, 140, false, true);
		EXP_EXIT(4, FB, 1, UNW, 1, 110, 140, false, false);
		EXP_EXIT(5, FA, 0, RET, 0, 100, 200, false, false);
		ct_recon_free(r);
		col_reset();
	}
	/* deferreturn without a recovered panic: nothing happens */
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 112, C_B_CALL1, 0);
	cevf(r, 115, 5, 7, 120, C_DEFERRET, 0);
	cevf(r, 120, 5, 7, 112, C_B_EXIT1, 0);
	NREC(3);
	EXP_EXIT(2, FB, 1, RET, 1, 110, 120, false, true);
	ct_recon_free(r);
	col_reset();
}

/* The exit callback of call SEQ among those collected (NULL: none). */
static const struct ct_call *exit_of_seq(uint64_t seq)
{
	for (size_t i = 0; i < col.n; i++)
		if (col.v[i].type == 'X' && col.v[i].c.seq == seq)
			return &col.v[i].c;
	return NULL;
}

/* An unobserved call that a later event showed over is bounded by that
 * event: end_bound, ts_exit its time -- the first event not deeper (with
 * the call in tail position in it, which ends with it), a deeper one
 * whose hit found the return address slot overwritten (with the call that
 * was open inside it), a shallower call's exit for a call in tail position
 * whose caller began before the trace.  Not one that went on past its
 * tail jump into untraced code (its end came after the jump), nor any
 * other call (one still open at its thread's or the trace's end:
 * recon_unplanned_call_open_at_the_end_is_unobserved). */
TEST(recon_unobserved_end_bound)
{
	struct ct_recon *r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 120, C_C_CHECK, 0);
	cevf(r, 115, 5, 7, 132, C_C_CALL_TP, 0);
	cevf(r, 130, 5, 7, 112, C_B_CALL1, 0); /* back at A's level */
	cevf(r, 140, 5, 7, 112, C_B_EXIT1, 0);
	cevf(r, 200, 5, 7, 100, C_A_RET, 0);
	NREC(8);
	for (uint64_t seq = 1; seq <= 2; seq++) {
		const struct ct_call *c = exit_of_seq(seq);
		CHECK(c && c->status == CT_CALL_UNOBSERVED && c->end_bound);
		CHECK_EQ_U(c->ts_exit, 130);
	}
	CHECK(!exit_of_seq(0)->end_bound && !exit_of_seq(3)->end_bound);
	ct_recon_free(r);

	r = new_crecon(true);
	cevf(r, 100, 5, 7, 100, C_A_ENT, 0);
	cevf(r, 110, 5, 7, 120, C_C_CHECK, 0);
	cevf(r, 115, 5, 7, 132, C_B_CALL1, 0); /* inside it, its end not seen */
	cevf(r, 130, 5, 7, 152, C_B_CALL1, CT_EV_UNOBSERVED_DONE);
	cevf(r, 140, 5, 7, 152, C_B_EXIT1, 0);
	ct_recon_finish(r, 300);
	const struct ct_call *c = exit_of_seq(1), *in = exit_of_seq(2);
	CHECK(c && c->status == CT_CALL_UNOBSERVED && c->end_bound && c->ts_exit == 130);
	CHECK(in && in->status == CT_CALL_UNOBSERVED && in->end_bound && in->ts_exit == 130);
	CHECK(!exit_of_seq(3)->end_bound && exit_of_seq(3)->status == RET);
	CHECK(!exit_of_seq(0)->end_bound && exit_of_seq(0)->status == UNF);
	ct_recon_free(r);

	/* C in tail position in B, entered before the trace: B's exit */
	r = new_crecon(false);
	cev(r, 120, 132, C_C_CALL_TP);
	cev(r, 130, 112, C_B_EXIT1);
	c = exit_of_seq(0);
	CHECK(c && c->status == CT_CALL_UNOBSERVED && c->end_bound && c->ts_exit == 130);
	ct_recon_free(r);

	col_reset();
	/* (open at the process's end, or the trace's: no bound, in
	 * recon_unplanned_call_open_at_the_end_is_unobserved) */

	/* A's jump to untraced code returns where no probe is: it ended after
	 * the jump, not before it */
	r = new_recon(false);
	ev(r, 90, 0, 1, 5, S_D_ENT);
	ev(r, 100, 0, 1, 10, S_A_ENT);
	ev_unwatched(r, 105, 10, S_A_TAIL_OUT);
	ev(r, 120, 0, 1, 40, S_C_ENT);
	c = exit_of_seq(1);
	CHECK(c && c->status == CT_CALL_UNOBSERVED && !c->end_bound);
	ct_recon_free(r);
	col_reset();
}

/* ---- what a call holds while it is open elsewhere ----
 *
 * Sites beyond the shared table: a goroutine's creation, and a function E
 * whose arguments come in SSE registers (its SPILL hit follows its entry,
 * its SP 16 lower). */
enum { FE = NFUNCS };
enum { S_GOCREATE = NSITES, S_E_ENT, S_E_RET, S_E_SPILL, NSITES_MORE };

static struct ct_file_site more_sites[NSITES_MORE];

static struct ct_recon *new_recon_more(void)
{
	memcpy(more_sites, sites, sizeof(sites));
	more_sites[S_GOCREATE] = (struct ct_file_site){S_GOCREATE, 0x9100, CT_NOFUNC, CT_SITE_GOCREATE, CT_NOFUNC,
						       0, UINT32_MAX, UINT32_MAX, 0};
	more_sites[S_E_ENT] = (struct ct_file_site){S_E_ENT, 0x6000, FE, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX,
						    UINT32_MAX, 0};
	more_sites[S_E_RET] = (struct ct_file_site){S_E_RET, 0x6010, FE, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX,
						    UINT32_MAX, 0};
	more_sites[S_E_SPILL] = (struct ct_file_site){S_E_SPILL, 0x6008, FE, CT_SITE_SPILL, CT_NOFUNC, -16,
						      UINT32_MAX, UINT32_MAX, 0};
	col_reset();
	return ct_recon_new(more_sites, NSITES_MORE, true, &ops, NULL);
}

/* An event of goroutine GOID (0: of the thread) on thread TID. */
static void gev(struct ct_recon *r, uint64_t ts, uint64_t goid, uint32_t tid, uint64_t key, uint32_t site,
		uint16_t flags, uint8_t byte)
{
	struct ct_rec_event e = an_event(PID, ts, goid, tid, key, site, more_sites[site].kind);
	e.flags = flags;
	e.payload = byte ? &byte : NULL;
	e.payload_len = byte ? 1 : 0;
	ct_recon_event(r, &e);
}

/* Goroutine PARENT, on thread TID, makes goroutine GOID. */
static void made(struct ct_recon *r, uint64_t ts, uint64_t parent, uint32_t tid, uint64_t goid)
{
	uint64_t pc = 0x401234;
	struct ct_rec_event e = an_event(PID, ts, parent, tid, goid, S_GOCREATE, CT_SITE_GOCREATE);
	e.payload = (const uint8_t *)&pc;
	e.payload_len = sizeof(pc);
	ct_recon_event(r, &e);
}

/* The first callback of type TYPE for function F (NULL: none). */
static const struct rec *rec_of(char type, uint32_t f)
{
	for (size_t i = 0; i < col.n; i++)
		if (col.v[i].type == type && col.v[i].c.func == f)
			return &col.v[i];
	return NULL;
}

/* Goroutine 1 makes 5, which calls A on thread 1, where a Go signal
 * handler then runs for it (B: its calls show 5's origin); 5 goes on on
 * thread 2 and ends there, while thread 1 sends nothing: the handler's
 * end was not seen. */
static struct ct_recon *handler_open_past_its_goroutine(void)
{
	struct ct_recon *r = new_recon_more();
	made(r, 90, 1, 1, 5);
	gev(r, 100, 5, 1, 10, S_A_ENT, 0, 0);
	gev(r, 110, 5, 1, 0x40, S_B_ENT, CT_EV_ALTSTACK, 0);
	gev(r, 120, 5, 2, 40, S_GOEXIT, 0, 0);
	return r;
}

TEST(recon_origin_shown_by_a_call_open_after_its_goroutine_ended)
{
	/* B ends at thread 1's next hit off the signal stack, still showing
	 * where 5 came from (it pointed at the origin freed at 5's end) */
	struct ct_recon *r = handler_open_past_its_goroutine();
	gev(r, 130, 6, 1, 10, S_C_ENT, 0, 0);
	ct_recon_finish(r, 500);
	const struct rec *a = rec_of('X', FA), *b_in = rec_of('E', FB), *b = rec_of('X', FB), *c = rec_of('X', FC);
	CHECK(a && b_in && b && c);
	CHECK_EQ_U(a->c.status, UNW);
	CHECK_EQ_U(a->origin_goid, 5);
	CHECK_EQ_U(b_in->origin_goid, 5);
	CHECK_EQ_U(b->c.status, UNW);
	CHECK_EQ_U(b->origin_goid, 5);
	CHECK_EQ_U(b->origin_parent, 1);
	CHECK_EQ_U(c->origin_goid, 0); /* 6: made before the trace */
	ct_recon_free(r);

	/* the same at the end of the trace (the handler open then) */
	r = handler_open_past_its_goroutine();
	ct_recon_finish(r, 500);
	b = rec_of('X', FB);
	CHECK(b);
	CHECK_EQ_U(b->c.status, UNF);
	CHECK_EQ_U(b->origin_goid, 5);
	ct_recon_free(r);
	col_reset();
}

/* Goroutine 5 enters E on thread 1: E waits for its SPILL hit. */
static struct ct_recon *waiting_on_thread_1(void)
{
	struct ct_recon *r = new_recon_more();
	gev(r, 100, 5, 1, 10, S_E_ENT, 0, 0);
	return r;
}

TEST(recon_waiting_call_of_a_goroutine_that_moved)
{
	/* 5 goes on on thread 2 (preempted in E's prologue, moved) and calls
	 * B: E is reported first, B inside it (B came first, E later, after
	 * B's end) */
	struct ct_recon *r = waiting_on_thread_1();
	NREC(0);
	gev(r, 110, 5, 2, 40, S_B_ENT, 0, 0);
	NREC(2);
	EXP_ENTER(0, FE, 0, 0, 100, false);
	EXP_ENTER(1, FB, 1, 1, 110, false);
	gev(r, 120, 5, 2, 40, S_B_RET, 0, 0);
	gev(r, 130, 5, 2, 10, S_E_RET, 0, 0);
	gev(r, 140, 6, 1, 10, S_A_ENT, 0, 0);
	ct_recon_finish(r, 500);
	NREC(6);
	EXP_EXIT(3, FE, 0, RET, 0, 100, 130, false, false);
	ct_recon_free(r);

	/* E returns on thread 2 before any other event of it: reported, then
	 * ended (its end came first, and the stack it waited on was freed
	 * while the list of waiting calls still held it) */
	r = waiting_on_thread_1();
	gev(r, 130, 5, 2, 10, S_E_RET, 0, 0);
	NREC(2);
	EXP_ENTER(0, FE, 0, 0, 100, false);
	EXP_EXIT(1, FE, 0, RET, 0, 100, 130, false, true);
	gev(r, 140, 6, 1, 10, S_A_ENT, 0, 0);
	gev(r, 150, 7, 1, 10, S_A_ENT, 0, 0);
	ct_recon_finish(r, 500);
	NREC(6);
	ct_recon_free(r);

	/* ... and its SPILL hit there is its own (same goroutine, function,
	 * frame) */
	r = waiting_on_thread_1();
	gev(r, 105, 5, 2, 26, S_E_SPILL, 0, 42);
	NREC(1);
	EXP_ENTER(0, FE, 0, 0, 100, false);
	CHECK_EQ_U(col.v[0].spill, 42);
	ct_recon_finish(r, 500);
	NREC(2);
	CHECK_EQ_U(col.v[1].spill, 42);
	ct_recon_free(r);
	col_reset();
}
