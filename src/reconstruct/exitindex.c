#include "reconstruct/exitindex.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Callbacks the second pass holds back at most.  A call is long, its end
 * kept by the first pass, when LONG_SPAN callbacks or more came between its
 * enter and its exit: only such a call can be at the head of a full queue
 * (QUEUE - 1 came after it there). */
#define QUEUE (1u << 12)
#define LONG_SPAN (QUEUE / 2)
/* Ends of long calls kept in memory; each time this many are, they go to
 * the temp file as a run sorted by entry order. */
#define LONG_BATCH (1u << 14)
/* A held call's payloads (arguments, spilled arguments, results) up to
 * this size are kept in its slot. */
#define INLINE_BYTES 64

/* The end of a long call, the ORDER-th call entered (callback order, the
 * same in both passes).  In a run on file, its ret_len result bytes follow
 * it; in memory they are at RET_AT in the batch's bytes. */
struct long_exit {
	uint64_t order;
	struct ct_exit_info e;
	uint64_t ret_at;
};

/* First pass: a call open, entered ORDER-th, after AT callbacks. */
struct open_call {
	uint64_t seq, order, at;
	bool open;
};

/* A run of long calls' ends on file, read in order. */
struct run {
	uint64_t at, end;   /* file offsets: the next record, the run's end */
	bool have;          /* rec (and ret) hold the record before AT */
	struct long_exit rec;
	struct ct_buf ret;
};

enum held_kind { HELD_ENTER, HELD_EXIT, HELD_LOST, HELD_SPAWN };

/* Second pass: one callback held back. */
struct held {
	uint8_t kind;
	bool ended;        /* HELD_ENTER: e is known */
	bool has_origin;   /* c.origin was set: it is in origin */
	uint32_t nbytes;   /* payload copies: args, then spill, then results */
	uint64_t order;    /* HELD_ENTER: its place among the entries */
	struct ct_call c;  /* HELD_ENTER, HELD_EXIT (payloads: set when delivered) */
	struct ct_goroutine_origin origin; /* c.origin's, or HELD_SPAWN's */
	struct ct_exit_info e;             /* HELD_ENTER: how it ended */
	uint64_t ts, lost;                 /* HELD_LOST */
	uint8_t inline_bytes[INLINE_BYTES];
	uint8_t *heap;     /* the copies when they do not fit inline_bytes */
	size_t heap_cap;
};

struct ct_exitindex {
	struct ct_trace *t;
	/* first pass */
	uint64_t callbacks, entered;
	struct open_call *ring; /* by seq % QUEUE */
	struct ct_map evicted;  /* seq -> struct open_call *: pushed out of the ring while open */
	CT_VEC(struct long_exit) batch;
	struct ct_buf batch_rets;
	size_t batch_next;      /* second pass: the batch's next unread end */
	FILE *f;                /* runs that did not stay in memory (NULL: none) */
	CT_VEC(struct run) runs;
	/* second pass */
	struct ct_recon_ops down;
	void *ctx;
	struct held *q;         /* callbacks [head, tail), at position % QUEUE */
	uint64_t head, tail;
	uint64_t *where;        /* seq % (2 * QUEUE) -> position of its HELD_ENTER */
	uint64_t entered2;
	const struct held *cur; /* the enter being delivered */
	const uint8_t *cur_ret;
};

static struct ct_exit_info exit_of(const struct ct_call *c)
{
	struct ct_exit_info e = {c->ts_exit, c->exit_tid, c->status, c->leaf, 0, c->exit_site, c->raw_exit};
	if (c->ret && c->ret_len <= UINT16_MAX)
		e.ret_len = (uint16_t)c->ret_len;
	return e;
}

/* ---- first pass ---- */

static int cmp_order(const void *a, const void *b)
{
	const struct long_exit *x = a, *y = b;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The batch, sorted, out to the temp file as one more run (it stays in
 * memory if there is no temp file to be had). */
static void write_run(struct ct_exitindex *x)
{
	if (!x->f && !(x->f = tmpfile()))
		return;
	qsort(x->batch.v, x->batch.n, sizeof(*x->batch.v), cmp_order);
	struct ct_buf out = {0};
	for (size_t i = 0; i < x->batch.n; i++) {
		buf_put(&out, &x->batch.v[i], sizeof(x->batch.v[i]));
		buf_put(&out, x->batch_rets.p + x->batch.v[i].ret_at, x->batch.v[i].e.ret_len);
	}
	off_t at = ftello(x->f);
	if (at < 0 || fwrite(out.p, 1, out.n, x->f) != out.n || fflush(x->f)) {
		buf_free(&out);
		return; /* (kept in memory) */
	}
	struct run r = {(uint64_t)at, (uint64_t)at + out.n, false, {0}, {0}};
	CT_VEC_PUSH(x->runs, r);
	buf_free(&out);
	x->batch.n = 0;
	x->batch_rets.n = 0;
}

static void keep_long(struct ct_exitindex *x, uint64_t order, const struct ct_call *c)
{
	struct long_exit l = {order, exit_of(c), x->batch_rets.n};
	buf_put(&x->batch_rets, c->ret, l.e.ret_len);
	CT_VEC_PUSH(x->batch, l);
	if (x->batch.n >= LONG_BATCH)
		write_run(x);
}

static void first_enter(void *ctx, const struct ct_call *c)
{
	struct ct_exitindex *x = ctx;
	x->callbacks++;
	struct open_call *slot = &x->ring[c->seq % QUEUE];
	if (slot->open && slot->seq != c->seq) {
		/* (a damaged file may enter one seq twice: one kept copy) */
		struct open_call *o = map_get(&x->evicted, slot->seq);
		if (!o)
			o = xmalloc(sizeof(*o));
		*o = *slot;
		map_put(&x->evicted, o->seq, o);
	}
	*slot = (struct open_call){c->seq, x->entered++, x->callbacks, true};
}

static void first_exit(void *ctx, const struct ct_call *c)
{
	struct ct_exitindex *x = ctx;
	x->callbacks++;
	struct open_call *slot = &x->ring[c->seq % QUEUE], oc;
	if (slot->open && slot->seq == c->seq) {
		oc = *slot;
		slot->open = false;
	} else {
		struct open_call *o = map_get(&x->evicted, c->seq);
		if (!o)
			return; /* (never entered) */
		oc = *o;
		free(o);
		map_del(&x->evicted, c->seq);
	}
	if (x->callbacks - oc.at >= LONG_SPAN)
		keep_long(x, oc.order, c);
}

static void first_lost(void *ctx, uint64_t ts, uint64_t n)
{
	((struct ct_exitindex *)ctx)->callbacks++;
}

static void first_spawn(void *ctx, const struct ct_goroutine_origin *o)
{
	((struct ct_exitindex *)ctx)->callbacks++;
}

struct ct_exitindex *ct_exitindex_build(struct ct_trace *t)
{
	struct ct_exitindex *x = xcalloc(1, sizeof(*x));
	x->t = t;
	x->ring = xcalloc(QUEUE, sizeof(*x->ring));
	struct ct_recon_ops ops = {first_enter, first_exit, first_lost, first_spawn};
	ct_recon_run(t, &ops, x);
	MAP_FOREACH(&x->evicted, i) free(x->evicted.vals[i]);
	map_free(&x->evicted);
	free(x->ring);
	x->ring = NULL;
	if (x->batch.n)
		qsort(x->batch.v, x->batch.n, sizeof(*x->batch.v), cmp_order);
	return x;
}

/* ---- second pass ---- */

/* Run R's next record, if any. */
static void run_read(struct ct_exitindex *x, struct run *r)
{
	r->have = false;
	if (r->at + sizeof(r->rec) > r->end ||
	    pread(fileno(x->f), &r->rec, sizeof(r->rec), (off_t)r->at) != (ssize_t)sizeof(r->rec))
		return;
	r->ret.n = 0;
	buf_reserve(&r->ret, r->rec.e.ret_len);
	if (r->rec.e.ret_len &&
	    pread(fileno(x->f), r->ret.p, r->rec.e.ret_len, (off_t)(r->at + sizeof(r->rec))) != r->rec.e.ret_len)
		return;
	r->at += sizeof(r->rec) + r->rec.e.ret_len;
	r->have = true;
}

/* The end of long call ORDER (asked in increasing order) and its results,
 * valid until the next call; false if the first pass did not keep it. */
static bool find_long(struct ct_exitindex *x, uint64_t order, struct ct_exit_info *e, const uint8_t **ret)
{
	while (x->batch_next < x->batch.n && x->batch.v[x->batch_next].order < order)
		x->batch_next++;
	if (x->batch_next < x->batch.n && x->batch.v[x->batch_next].order == order) {
		*e = x->batch.v[x->batch_next].e;
		*ret = x->batch_rets.p + x->batch.v[x->batch_next].ret_at;
		return true;
	}
	for (size_t i = 0; i < x->runs.n; i++) {
		struct run *r = &x->runs.v[i];
		while (r->have && r->rec.order < order)
			run_read(x, r);
		if (r->have && r->rec.order == order) {
			*e = r->rec.e;
			*ret = r->ret.p;
			return true;
		}
	}
	return false;
}

/* Room for N payload bytes in H, the first USED kept (moved to the heap
 * when they outgrow the slot). */
static uint8_t *held_room(struct held *h, size_t used, size_t n)
{
	if (n <= INLINE_BYTES)
		return h->inline_bytes;
	if (n > h->heap_cap) {
		h->heap = xrealloc(h->heap, n);
		h->heap_cap = n;
	}
	if (used && used <= INLINE_BYTES)
		memcpy(h->heap, h->inline_bytes, used);
	return h->heap;
}

static uint8_t *held_bytes(struct held *h)
{
	return h->nbytes > INLINE_BYTES ? h->heap : h->inline_bytes;
}

/* Appends N bytes at P to H's copies. */
static void held_put(struct held *h, const void *p, size_t n)
{
	if (!n)
		return;
	uint8_t *b = held_room(h, h->nbytes, h->nbytes + n);
	memcpy(b + h->nbytes, p, n);
	h->nbytes += (uint32_t)n;
}

/* The next slot, holding C's copy (NULL: a lost or spawn record). */
static struct held *hold(struct ct_exitindex *x, uint8_t kind, const struct ct_call *c)
{
	struct held *h = &x->q[x->tail++ % QUEUE];
	h->kind = kind;
	h->ended = false;
	h->nbytes = 0;
	if (c) {
		h->c = *c;
		h->has_origin = c->origin != NULL;
		if (c->origin)
			h->origin = *c->origin;
		held_put(h, c->args, c->args ? c->args_len : 0);
		held_put(h, c->spill, c->spill ? c->spill_len : 0);
		if (!c->args)
			h->c.args_len = 0;
		if (!c->spill)
			h->c.spill_len = 0;
	}
	return h;
}

static void deliver(struct ct_exitindex *x, struct held *h)
{
	uint8_t *b = held_bytes(h);
	uint32_t ret_at = h->c.args_len + h->c.spill_len;
	if (h->kind == HELD_ENTER || h->kind == HELD_EXIT) {
		h->c.args = h->c.args_len ? b : NULL;
		h->c.spill = h->c.spill_len ? b + h->c.args_len : NULL;
		h->c.origin = h->has_origin ? &h->origin : NULL;
	}
	switch (h->kind) {
	case HELD_ENTER:
		x->cur = h;
		x->cur_ret = h->e.ret_len ? b + ret_at : NULL;
		if (x->down.enter)
			x->down.enter(x->ctx, &h->c);
		x->cur = NULL;
		break;
	case HELD_EXIT:
		h->c.ret = h->c.ret_len ? b + ret_at : NULL;
		if (x->down.exit)
			x->down.exit(x->ctx, &h->c);
		break;
	case HELD_LOST:
		if (x->down.lost)
			x->down.lost(x->ctx, h->ts, h->lost);
		break;
	default:
		if (x->down.spawn)
			x->down.spawn(x->ctx, &h->origin);
	}
}

/* Delivers what can go: every callback up to the first enter of a call
 * still open -- or, with ALL, that one too, from the first pass's ends
 * (a full queue, or the end of the trace). */
static void drain(struct ct_exitindex *x, bool all)
{
	while (x->head < x->tail) {
		struct held *h = &x->q[x->head % QUEUE];
		if (h->kind == HELD_ENTER && !h->ended) {
			if (!all && x->tail - x->head < QUEUE)
				return;
			const uint8_t *ret = NULL;
			if (!find_long(x, h->order, &h->e, &ret))
				memset(&h->e, 0, sizeof(h->e)); /* (the first pass keeps every call that can get here) */
			held_put(h, ret, h->e.ret_len);
			h->ended = true;
		}
		x->head++;
		deliver(x, h);
	}
}

static void second_enter(void *ctx, const struct ct_call *c)
{
	struct ct_exitindex *x = ctx;
	x->where[c->seq % (2 * QUEUE)] = x->tail;
	struct held *h = hold(x, HELD_ENTER, c);
	h->order = x->entered2++;
	drain(x, false);
}

static void second_exit(void *ctx, const struct ct_call *c)
{
	struct ct_exitindex *x = ctx;
	uint64_t at = x->where[c->seq % (2 * QUEUE)];
	struct held *e = &x->q[at % QUEUE];
	if (at >= x->head && at < x->tail && e->kind == HELD_ENTER && e->c.seq == c->seq && !e->ended) {
		e->e = exit_of(c);
		held_put(e, c->ret, e->e.ret_len);
		e->ended = true;
	}
	struct held *h = hold(x, HELD_EXIT, c);
	h->c.ret_len = c->ret ? c->ret_len : 0;
	held_put(h, c->ret, h->c.ret_len);
	drain(x, false);
}

static void second_lost(void *ctx, uint64_t ts, uint64_t n)
{
	struct ct_exitindex *x = ctx;
	struct held *h = hold(x, HELD_LOST, NULL);
	h->ts = ts;
	h->lost = n;
	drain(x, false);
}

static void second_spawn(void *ctx, const struct ct_goroutine_origin *o)
{
	struct ct_exitindex *x = ctx;
	struct held *h = hold(x, HELD_SPAWN, NULL);
	h->origin = *o;
	h->has_origin = false;
	drain(x, false);
}

struct ct_recon_stats ct_exitindex_run(struct ct_exitindex *x, const struct ct_recon_ops *ops, void *ctx)
{
	x->down = *ops;
	x->ctx = ctx;
	x->q = xcalloc(QUEUE, sizeof(*x->q));
	x->where = xcalloc(2 * QUEUE, sizeof(*x->where));
	for (size_t i = 0; i < x->runs.n; i++)
		run_read(x, &x->runs.v[i]);
	struct ct_recon_ops held_ops = {second_enter, second_exit, second_lost, second_spawn};
	struct ct_recon_stats st = ct_recon_run(x->t, &held_ops, x);
	drain(x, true);
	return st;
}

const struct ct_exit_info *ct_exitindex_get(struct ct_exitindex *x, uint64_t seq, const uint8_t **ret)
{
	static const struct ct_exit_info none;
	bool known = x->cur && x->cur->c.seq == seq;
	if (ret)
		*ret = known ? x->cur_ret : NULL;
	return known ? &x->cur->e : &none;
}

void ct_exitindex_free(struct ct_exitindex *x)
{
	if (!x)
		return;
	if (x->q)
		for (size_t i = 0; i < QUEUE; i++)
			free(x->q[i].heap);
	free(x->q);
	free(x->where);
	for (size_t i = 0; i < x->runs.n; i++)
		buf_free(&x->runs.v[i].ret);
	CT_VEC_FREE(x->runs);
	CT_VEC_FREE(x->batch);
	buf_free(&x->batch_rets);
	if (x->f)
		fclose(x->f);
	free(x);
}
