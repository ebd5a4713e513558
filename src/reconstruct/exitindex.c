#include "reconstruct/exitindex.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Callbacks held in memory at most (the window). */
#define QUEUE (1u << 12)
/* A held call's payloads (arguments, spilled arguments, results) up to
 * this size are kept in its slot. */
#define INLINE_BYTES 64
/* The spill file is written in segments of SEG bytes, each to one the
 * reader is done with if there is one (new pages of a file cost ~35 times
 * what writing pages again does here), and read back in blocks of
 * READ_BLOCK bytes. */
size_t ct_exitindex_seg = 1u << 20;
#define SEG ct_exitindex_seg
#define READ_BLOCK (SEG / 4)
/* Two passes (ct_exitindex_build): a call is long, its end kept by the
 * first pass, when LONG_SPAN callbacks or more came between its enter and
 * its exit: only such a call can be at the head of a full window (QUEUE - 1
 * came after it there). */
#define LONG_SPAN (QUEUE / 2)
/* Ends of long calls kept in memory; each time this many are, they go to
 * the temp file as a run sorted by entry order. */
#define LONG_BATCH (1u << 14)

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

enum held_kind { HELD_ENTER, HELD_EXIT, HELD_LOST, HELD_SPAWN }; /* (2 bits: REC_KIND) */

/* One callback held back. */
struct held {
	uint8_t kind;
	bool ended;        /* HELD_ENTER: e is known */
	bool has_origin;   /* c.origin was set: it is in origin */
	uint32_t nbytes;   /* payload copies: args, then spill, then results */
	uint64_t order;    /* HELD_ENTER: its place among the entries (two passes) */
	struct ct_call c;  /* HELD_ENTER, HELD_EXIT (payloads: set when delivered) */
	struct ct_goroutine_origin origin; /* c.origin's, or HELD_SPAWN's */
	struct ct_exit_info e;             /* HELD_ENTER: how it ended */
	uint64_t ts, lost;                 /* HELD_LOST */
	uint8_t inline_bytes[INLINE_BYTES];
	uint8_t *heap;     /* the copies when they do not fit inline_bytes */
	size_t heap_cap;
};

/* The spill file's records, in callback order: a uvar length, then that
 * many bytes: a kind byte (enum held_kind, REC_OPEN for an entry whose end
 * was not known when it was written, REC_SKIP for results written there
 * later), for REC_OPEN a struct late_slot, then the callback's fields
 * (put_held). */
enum { REC_OPEN = 0x10, REC_SKIP = 0x20 };
/* A record's fields take at most this many bytes, and its payloads. */
#define MAX_FIELDS 512

/* The end of a call that was open when its entry was written: filled in
 * (in place) when it ends.  Its results are at RET_AT in the file, a
 * REC_SKIP record's bytes. */
struct late_slot {
	struct ct_exit_info e;
	uint64_t ret_at;
	uint64_t seq; /* the call's */
	uint8_t done;
};

/* The delta coder's state: the fields that are mostly the same as the
 * previous record's.  The writer and the reader keep one each, in step. */
#define CODER_ORIGINS 16
#define CODER_SHAPES 4
/* What calls of one function mostly share: a record says it has one of
 * the coder's recent ones instead of writing them (REC_SHAPE). */
struct shape {
	uint32_t func, status, context, entry_site, exit_site, spill_site, args_len, spill_len, ret_len;
	/* an entry's end: status | end_bound << 9, ... (status: the
	 * callback's, | end_bound << 8 for an exit's; the end's leaf is
	 * REC_END_LEAF: in fib every other call is a leaf, and a shape that
	 * said which was written again for three records in four) */
	uint32_t end_status, end_ret_len, end_exit_site;
};
/* Field by field: SH is made on the stack by 4-byte stores, which the CPU
 * does not forward to memcmp's 8- and 16-byte loads of them (a stall a
 * record). */
static inline bool same_shape(const struct shape *a, const struct shape *b)
{
	return a->func == b->func && a->status == b->status && a->context == b->context &&
	       a->entry_site == b->entry_site && a->exit_site == b->exit_site && a->spill_site == b->spill_site &&
	       a->args_len == b->args_len && a->spill_len == b->spill_len && a->ret_len == b->ret_len &&
	       a->end_status == b->end_status && a->end_ret_len == b->end_ret_len &&
	       a->end_exit_site == b->end_exit_site;
}

/* A goroutine's (or thread's) ids as last written. */
struct coder_ids {
	uint64_t goid;
	uint32_t pid, tid, image;
	/* the last frame key written of these goroutines: a record's key is
	 * this one's distance (C's 2^47 - SP is 6 bytes, its distance one or
	 * two); and the last raw - corrected time */
	uint64_t key, shift;
};
struct coder {
	uint64_t seq, ts, goid;
	uint32_t pid, tid, image;
	/* the last ids written of goroutines goid % CODER_ORIGINS: records
	 * come interleaved (fibpar: another goroutine's nearly every one), so
	 * the previous record's ids were seldom a record's, and 4 numbers of
	 * ~30 bytes a record were its ids */
	struct coder_ids ids[CODER_ORIGINS];
	/* entries' and exits' recent shapes, and which each replaces next
	 * (round robin): a record names one (REC_SHAPE) by its number, a
	 * byte.  With one kept, fib's was written again for every other
	 * record: its calls come from two call sites, and each has its own
	 * CHECK and return sites */
	struct shape shapes[2][CODER_SHAPES];
	uint8_t next_shape[2];
	/* the last origin written of goroutines goid % CODER_ORIGINS (all
	 * zero: none; an origin's goid is never 0) */
	struct ct_goroutine_origin origin[CODER_ORIGINS];
};

struct ct_exitindex {
	struct ct_trace *t;
	/* two passes: the first pass's ends of the long calls, taken instead
	 * of spilling */
	bool long_ends_known;
	uint64_t callbacks, entered; /* the first pass's; entered_held: the second's */
	struct open_call *ring;  /* by seq % QUEUE */
	struct ct_map evicted;   /* seq -> struct open_call *: pushed out of the ring while open */
	CT_VEC(struct long_exit) batch;
	struct ct_buf batch_rets;
	size_t batch_next;       /* second pass: the batch's next unread end */
	FILE *f;                 /* runs that did not stay in memory (NULL: none) */
	CT_VEC(struct run) runs;
	uint64_t entered_held;
	struct ct_recon_ops down;
	void *ctx;
	/* the window: callbacks [head, tail), at position % QUEUE; all after
	 * the spill file's when that has any */
	struct held *q;
	uint64_t head, tail;
	uint64_t *where;        /* seq % (2 * QUEUE) -> position of its HELD_ENTER */
	/* seq -> position + 1 of a HELD_ENTER still open whose slot in where
	 * another took: a stage before the index (a filter) passes on calls
	 * whose seqs are far apart, so one held long in the window may share
	 * its slot with a later one */
	struct ct_map where_taken;
	const struct held *cur; /* the enter being delivered */
	const uint8_t *cur_ret;
	/* the spill queue: bytes [rpos, wbuf_at + wbuf.n) of a stream whose
	 * part before wbuf_at is in file fd (no file: all in wbuf) */
	int fd;                 /* -1: none yet */
	bool no_file;           /* none to be had, or a write failed: the rest stays in wbuf */
	struct ct_buf wbuf;
	uint64_t wbuf_at, rpos;
	/* the file's segments: of the stream's bytes from seg0 * SEG to
	 * wbuf_at, segs.v[segs_head...]; those free; how many in all */
	CT_VEC(uint32_t) segs;
	size_t segs_head;
	uint64_t seg0;
	CT_VEC(uint32_t) free_segs;
	uint32_t nsegs;
	struct ct_buf rbuf;     /* a copy of the stream's bytes from rbuf_at */
	uint64_t rbuf_at;
	struct ct_map late;     /* seq -> stream offset of its struct late_slot, + 1 */
	uint64_t blocker;       /* the seq of the open call at rpos (the queue not empty) */
	struct coder wr, rd;
	bool thin_exits;        /* ct_exitindex_thin_exits */
	struct held scratch;    /* a record read back */
	struct ct_buf tmp;
};

static struct ct_exit_info exit_of(const struct ct_call *c)
{
	struct ct_exit_info e = {c->ts_exit,   c->exit_tid,     c->status,		c->leaf,
				 0,	       c->exit_site,    c->end_bound,	c->raw_exit,
				 c->off_preempted, c->off_tracer, c->off_blocked};
	if (c->ret && c->ret_len <= UINT16_MAX)
		e.ret_len = (uint16_t)c->ret_len;
	return e;
}

struct ct_exitindex *ct_exitindex_new(struct ct_trace *t)
{
	struct ct_exitindex *x = xcalloc(1, sizeof(*x));
	x->t = t;
	x->fd = -1;
	return x;
}

/* ---- two passes: the first ---- */

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

struct ct_exitindex *ct_exitindex_build(struct ct_trace *t)
{
	struct ct_exitindex *x = ct_exitindex_new(t);
	x->long_ends_known = true;
	x->ring = xcalloc(QUEUE, sizeof(*x->ring));
	struct ct_recon_ops ops = {first_enter, first_exit, first_lost, first_spawn};
	ct_recon_run(t, &ops, x);
	MAP_FOREACH(&x->evicted, i) free(x->evicted.vals[i]);
	map_free(&x->evicted);
	free(x->ring);
	x->ring = NULL;
	if (x->batch.n)
		qsort(x->batch.v, x->batch.n, sizeof(*x->batch.v), cmp_order);
	for (size_t i = 0; i < x->runs.n; i++)
		run_read(x, &x->runs.v[i]);
	return x;
}

/* ---- held callbacks ---- */

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
static inline void held_put(struct held *h, const void *p, size_t n)
{
	if (!n)
		return;
	uint8_t *b = held_room(h, h->nbytes, h->nbytes + n);
	copy_short(b + h->nbytes, p, n);
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

/* ---- the spill stream ---- */

static uint64_t stream_end(const struct ct_exitindex *x)
{
	return x->wbuf_at + x->wbuf.n;
}

/* The file's segment that holds the stream's bytes from OFF, and where
 * in the file they are; *N: how many of N are there. */
static off_t seg_at(const struct ct_exitindex *x, uint64_t off, size_t *n)
{
	uint64_t i = off / SEG - x->seg0, in = off % SEG;
	if (*n > SEG - in)
		*n = (size_t)(SEG - in);
	return (off_t)((uint64_t)x->segs.v[x->segs_head + i] * SEG + in);
}

/* PREAD or PWRITE of N bytes at stream offset OFF (before wbuf_at), by
 * segment. */
static bool seg_io(struct ct_exitindex *x, bool write, uint64_t off, void *p, size_t n)
{
	uint8_t *b = p;
	while (n) {
		size_t k = n;
		off_t at = seg_at(x, off, &k);
		if ((write ? pwrite(x->fd, b, k, at) : pread(x->fd, b, k, at)) != (ssize_t)k)
			return false;
		b += k;
		off += k;
		n -= k;
	}
	return true;
}

/* The write buffer's whole segments out to the file, each to a segment of
 * it the reader has left if there is one (it stays in memory if there is
 * no temp file to be had, or from a failed write on). */
static void stream_flush(struct ct_exitindex *x)
{
	if (x->wbuf.n < SEG || x->no_file)
		return;
	if (x->fd < 0) {
		FILE *f = tmpfile();
		x->fd = f ? dup(fileno(f)) : -1;
		if (f)
			fclose(f);
		if (x->fd < 0) {
			x->no_file = true;
			return;
		}
	}
	size_t done = 0;
	while (x->wbuf.n - done >= SEG) {
		uint32_t slot = x->free_segs.n ? x->free_segs.v[--x->free_segs.n] : x->nsegs++;
		if (pwrite(x->fd, x->wbuf.p + done, SEG, (off_t)((uint64_t)slot * SEG)) != (ssize_t)SEG) {
			x->no_file = true; /* (a full disk) */
			CT_VEC_PUSH(x->free_segs, slot);
			break;
		}
		if (!x->segs.n)
			x->seg0 = x->wbuf_at / SEG;
		CT_VEC_PUSH(x->segs, slot);
		x->wbuf_at += SEG;
		done += SEG;
	}
	memmove(x->wbuf.p, x->wbuf.p + done, x->wbuf.n - done);
	x->wbuf.n -= done;
}

/* The segments the reader has left behind, for the writer again. */
static void stream_free(struct ct_exitindex *x)
{
	while (x->segs_head < x->segs.n && (x->seg0 + 1) * SEG <= x->rpos) {
		CT_VEC_PUSH(x->free_segs, x->segs.v[x->segs_head++]);
		x->seg0++;
	}
	if (x->segs_head > 64 && x->segs_head * 2 > x->segs.n) {
		memmove(x->segs.v, x->segs.v + x->segs_head, (x->segs.n - x->segs_head) * sizeof(*x->segs.v));
		x->segs.n -= x->segs_head;
		x->segs_head = 0;
	}
}

/* N bytes of the stream at OFF into P (false: a read failed). */
static bool stream_read(struct ct_exitindex *x, uint64_t off, void *p, size_t n)
{
	uint8_t *o = p;
	if (off < x->wbuf_at) {
		size_t k = x->wbuf_at - off < n ? (size_t)(x->wbuf_at - off) : n;
		if (!seg_io(x, false, off, o, k))
			return false;
		o += k;
		off += k;
		n -= k;
	}
	if (n)
		memcpy(o, x->wbuf.p + (off - x->wbuf_at), n);
	return true;
}

/* Overwrites N bytes of the stream at OFF with P, in every copy (a failed
 * write leaves the call open there: it is delivered without its end). */
static void stream_patch(struct ct_exitindex *x, uint64_t off, const void *p, size_t n)
{
	/* (they may straddle the end of the file's part) */
	size_t k = off < x->wbuf_at ? (x->wbuf_at - off < n ? (size_t)(x->wbuf_at - off) : n) : 0;
	if (k && !seg_io(x, true, off, (void *)p, k))
		return;
	if (n > k)
		memcpy(x->wbuf.p + (off + k - x->wbuf_at), (const uint8_t *)p + k, n - k);
	/* (the part of them that rbuf has, if any) */
	uint64_t from = off > x->rbuf_at ? off : x->rbuf_at, to = off + n;
	if (to > x->rbuf_at + x->rbuf.n)
		to = x->rbuf_at + x->rbuf.n;
	if (from < to)
		memcpy(x->rbuf.p + (from - x->rbuf_at), (const uint8_t *)p + (from - off), (size_t)(to - from));
}

/* N bytes of the stream at OFF, read into rbuf if they are not there
 * (NULL: a read failed). */
static const uint8_t *stream_at(struct ct_exitindex *x, uint64_t off, size_t n)
{
	if (off >= x->rbuf_at && off + n <= x->rbuf_at + x->rbuf.n)
		return x->rbuf.p + (off - x->rbuf_at);
	uint64_t end = stream_end(x);
	size_t m = n > READ_BLOCK ? n : READ_BLOCK;
	if (m > end - off)
		m = (size_t)(end - off);
	x->rbuf.n = 0;
	/* (the slack get_uv reads into, zeros) */
	buf_reserve(&x->rbuf, m + MAX_FIELDS);
	if (m < n || !stream_read(x, off, x->rbuf.p, m))
		return NULL;
	memset(x->rbuf.p + m, 0, MAX_FIELDS);
	x->rbuf_at = off;
	x->rbuf.n = m;
	return x->rbuf.p;
}

/* ---- a held callback's fields, delta coded ---- */

enum {
	F_SAME_IDS = 1,    /* pid, tid, goid and image are the coder's */
	F_ORIGIN = 2,      /* c.origin is set ... */
	F_SAME_ORIGIN = 4, /* ... to the coder's for its goroutine */
	F_LEAF = 8, F_TAIL = 16, F_SYSSTACK = 32, F_UNPLANNED = 64, F_INDIRECT = 128,
};
/* In the kind byte: the enum held_kind (REC_KIND); the call's own end
 * (ct_call.ts_exit, raw_exit, exit_tid) is all zero and not written
 * (REC_BARE: an entry's, nearly always; three numbers a record); an
 * entry's end, a leaf (REC_END_LEAF), follows its fields; the fields of
 * struct shape are those of the coder's recent shape whose number (a
 * byte) is in their place (REC_SHAPE). */
/* In struct shape's status: the call's time off CPU follows (ct_call's
 * off_preempted, off_tracer, off_blocked), after the origin; in its
 * end_status: the entry's end's, after its other fields. */
#define SH_OFF_CPU (1u << 9)
#define SH_END_OFF_CPU (1u << 10)
#define REC_KIND 0x03
#define REC_BARE 0x04
#define REC_END_LEAF 0x08
#define REC_ENDED 0x40
#define REC_SHAPE 0x80

/* The writer's varints go straight to a reserved buffer (buf_uvar per
 * field, with its bounds check, was a third of the spill's cost). */
static inline uint8_t *put_uv(uint8_t *o, uint64_t v)
{
	while (v >= 0x80) {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*o++ = (uint8_t)v;
	return o;
}

static inline uint8_t *put_sv(uint8_t *o, int64_t v)
{
	return put_uv(o, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* The reader's, unchecked: a record is read from rbuf, which has
 * MAX_FIELDS readable bytes past any record's end (stream_at), more than
 * all of a record's numbers can take however damaged it is; get_held
 * looks where they ended before it reads a length of bytes.  The check
 * per number (and the loop for the one-byte ones, most of them) was a
 * quarter of reading the spill back. */
static inline uint64_t get_uv(struct ct_rd *r)
{
	const uint8_t *p = r->p;
	uint64_t v = *p++;
	if (v >= 0x80) {
		v &= 0x7f;
		for (int shift = 7; shift < 70; shift += 7) {
			uint8_t c = *p++;
			v |= (uint64_t)(c & 0x7f) << shift;
			if (!(c & 0x80))
				break;
		}
	}
	r->p = p;
	return v;
}

static inline int64_t get_sv(struct ct_rd *r)
{
	uint64_t u = get_uv(r);
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static uint8_t *put_origin(uint8_t *o, const struct ct_goroutine_origin *g)
{
	o = put_uv(o, g->goid);
	o = put_uv(o, g->parent);
	o = put_uv(o, g->ts);
	o = put_uv(o, g->pid);
	o = put_uv(o, g->tid);
	o = put_uv(o, g->image);
	o = put_uv(o, g->pc);
	return put_uv(o, g->site);
}

static void get_origin(struct ct_rd *r, struct ct_goroutine_origin *g)
{
	g->goid = get_uv(r);
	g->parent = get_uv(r);
	g->ts = get_uv(r);
	g->pid = (uint32_t)get_uv(r);
	g->tid = (uint32_t)get_uv(r);
	g->image = (uint32_t)get_uv(r);
	g->pc = get_uv(r);
	g->site = (uint32_t)get_uv(r);
}

static bool same_origin(const struct ct_goroutine_origin *a, const struct ct_goroutine_origin *b)
{
	return a->goid == b->goid && a->parent == b->parent && a->ts == b->ts && a->pid == b->pid &&
	       a->tid == b->tid && a->image == b->image && a->pc == b->pc && a->site == b->site;
}

/* A site id, UINT32_MAX (none) as 0. */
static inline uint8_t *put_site(uint8_t *o, uint32_t site)
{
	return put_uv(o, (uint32_t)(site + 1));
}

static inline uint32_t get_site(struct ct_rd *r)
{
	return (uint32_t)get_uv(r) - 1;
}

/* A time that is 0 (not known yet) or near BASE. */
static inline uint8_t *put_time(uint8_t *o, uint64_t t, uint64_t base)
{
	int64_t d = (int64_t)(t - base);
	return put_uv(o, t ? (((uint64_t)d << 1) ^ (uint64_t)(d >> 63)) + 1 : 0);
}

static inline uint64_t get_time(struct ct_rd *r, uint64_t base)
{
	uint64_t u = get_uv(r);
	if (!u--)
		return 0;
	return base + (uint64_t)((int64_t)(u >> 1) ^ -(int64_t)(u & 1));
}

/* A thread id that is TID, 0 or another. */
static inline uint8_t *put_tid(uint8_t *o, uint32_t v, uint32_t tid)
{
	return put_uv(o, v == tid ? 0 : v ? (uint64_t)v + 1 : 1);
}

static inline uint32_t get_tid(struct ct_rd *r, uint32_t tid)
{
	uint64_t u = get_uv(r);
	return u == 0 ? tid : (uint32_t)(u - 1);
}

/* H's fields and payloads at O (room: MAX_FIELDS + its payloads); returns
 * their end. */
static uint8_t *put_held(struct coder *k, uint8_t *kind, uint8_t *o, struct held *h)
{
	if (h->kind == HELD_LOST) {
		o = put_uv(o, h->ts);
		return put_uv(o, h->lost);
	}
	if (h->kind == HELD_SPAWN)
		return put_origin(o, &h->origin);
	const struct ct_call *c = &h->c;
	bool ids = c->pid == k->pid && c->tid == k->tid && c->goid == k->goid && c->image == k->image;
	struct ct_goroutine_origin *ko = &k->origin[c->goid % CODER_ORIGINS];
	bool origin = h->has_origin && same_origin(&h->origin, ko);
	*o++ = (uint8_t)((ids ? F_SAME_IDS : 0) | (h->has_origin ? F_ORIGIN : 0) | (origin ? F_SAME_ORIGIN : 0) |
			 (c->leaf ? F_LEAF : 0) | (c->tail ? F_TAIL : 0) | (c->sysstack ? F_SYSSTACK : 0) |
			 (c->unplanned ? F_UNPLANNED : 0) | (c->indirect ? F_INDIRECT : 0));
	o = put_sv(o, (int64_t)(c->seq - k->seq - 1));
	k->seq = c->seq;
	o = put_sv(o, (int64_t)(c->ts_entry - k->ts));
	k->ts = c->ts_entry;
	if (!ids) {
		/* the goid, then 0 for its slot's pid, tid and image, else
		 * pid + 1, tid, image */
		struct coder_ids *ki = &k->ids[c->goid % CODER_ORIGINS];
		o = put_uv(o, c->goid);
		if (ki->goid == c->goid && ki->pid == c->pid && ki->tid == c->tid && ki->image == c->image) {
			*o++ = 0;
		} else {
			o = put_uv(o, (uint64_t)c->pid + 1);
			o = put_uv(o, c->tid);
			o = put_uv(o, c->image);
			*ki = (struct coder_ids){c->goid, c->pid, c->tid, c->image, ki->key, ki->shift};
		}
		k->pid = c->pid;
		k->tid = c->tid;
		k->goid = c->goid;
		k->image = c->image;
	}
	/* measured minus corrected time: the probe cost so far, which grows
	 * slowly on a stack (its goroutine's: the record before's is
	 * mostly another's) */
	uint64_t *kshift = &k->ids[c->goid % CODER_ORIGINS].shift;
	o = put_sv(o, (int64_t)(c->raw_entry - c->ts_entry - *kshift));
	*kshift = c->raw_entry - c->ts_entry;
	bool bare = !c->ts_exit && !c->raw_exit && !c->exit_tid;
	if (bare) {
		*kind |= REC_BARE;
	} else {
		o = put_time(o, c->ts_exit, c->ts_entry);
		o = put_time(o, c->raw_exit, c->raw_entry);
	}
	bool ended = h->kind == HELD_ENTER && h->ended;
	const struct ct_exit_info *e = &h->e;
	/* (a call's time off CPU, seldom any: a bit of the status says it
	 * follows, SH_OFF_CPU; of an entry's end: SH_END_OFF_CPU) */
	bool off = c->off_preempted || c->off_blocked, end_off = ended && (e->off_preempted || e->off_blocked);
	struct shape sh = {c->func, c->status | (uint32_t)c->end_bound << 8 | (off ? SH_OFF_CPU : 0), c->context,
			   c->entry_site, c->exit_site, c->spill_site, c->args_len, c->spill_len, c->ret_len,
			   ended ? e->status | (uint32_t)e->end_bound << 9 | (end_off ? SH_END_OFF_CPU : 0) : 0,
			   ended ? e->ret_len : 0,
			   ended ? e->exit_site : 0};
	if (!bare)
		o = put_tid(o, c->exit_tid, c->tid);
	uint64_t *kkey = &k->ids[c->goid % CODER_ORIGINS].key;
	o = put_sv(o, (int64_t)(c->key - *kkey));
	*kkey = c->key;
	o = put_uv(o, c->depth);
	struct shape *ks = k->shapes[h->kind == HELD_EXIT];
	if (ended && e->leaf)
		*kind |= REC_END_LEAF;
	unsigned known = 0;
	while (known < CODER_SHAPES && !same_shape(&sh, &ks[known]))
		known++;
	if (known < CODER_SHAPES) {
		*kind |= REC_SHAPE;
		*o++ = (uint8_t)known;
	} else {
		o = put_uv(o, sh.func);
		o = put_uv(o, sh.status);
		o = put_uv(o, sh.context);
		o = put_site(o, sh.entry_site);
		o = put_site(o, sh.exit_site);
		o = put_site(o, sh.spill_site);
		o = put_uv(o, sh.args_len);
		o = put_uv(o, sh.spill_len);
		o = put_uv(o, sh.ret_len);
		o = put_uv(o, sh.end_status);
		o = put_uv(o, sh.end_ret_len);
		o = put_site(o, sh.end_exit_site);
		uint8_t *next = &k->next_shape[h->kind == HELD_EXIT];
		ks[*next] = sh;
		*next = (uint8_t)((*next + 1) % CODER_SHAPES);
	}
	if (h->has_origin && !origin) {
		o = put_origin(o, &h->origin);
		*ko = h->origin;
	}
	if (off) {
		o = put_uv(o, c->off_preempted);
		o = put_uv(o, c->off_tracer);
		o = put_uv(o, c->off_blocked);
	}
	if (ended) {
		o = put_time(o, e->ts_exit, c->ts_entry);
		o = put_time(o, e->raw_exit, c->raw_entry + (e->ts_exit - c->ts_entry));
		o = put_tid(o, e->exit_tid, c->tid);
		if (end_off) {
			o = put_uv(o, e->off_preempted);
			o = put_uv(o, e->off_tracer);
			o = put_uv(o, e->off_blocked);
		}
	}
	o = put_uv(o, h->nbytes);
	copy_short(o, held_bytes(h), h->nbytes);
	return o + h->nbytes;
}

/* The callback put_held wrote, of kind byte REC, into H. */
static void get_held(struct coder *k, struct ct_rd *r, uint8_t rec, struct held *h)
{
	uint8_t kind = rec & REC_KIND;
	bool ended = rec & REC_ENDED, known_shape = rec & REC_SHAPE;
	h->kind = kind;
	h->ended = false;
	h->nbytes = 0;
	if (kind == HELD_LOST) {
		h->ts = get_uv(r);
		h->lost = get_uv(r);
		return;
	}
	if (kind == HELD_SPAWN) {
		get_origin(r, &h->origin);
		h->has_origin = false;
		return;
	}
	struct ct_call *c = &h->c;
	zero16n(c, sizeof(*c) / 16 * 16);
	memset((char *)c + sizeof(*c) / 16 * 16, 0, sizeof(*c) % 16);
	uint8_t f = rd_u8(r);
	c->leaf = f & F_LEAF;
	c->tail = f & F_TAIL;
	c->sysstack = f & F_SYSSTACK;
	c->unplanned = f & F_UNPLANNED;
	c->indirect = f & F_INDIRECT;
	h->has_origin = f & F_ORIGIN;
	c->seq = k->seq += (uint64_t)get_sv(r) + 1;
	c->ts_entry = k->ts += (uint64_t)get_sv(r);
	if (!(f & F_SAME_IDS)) {
		k->goid = get_uv(r);
		struct coder_ids *ki = &k->ids[k->goid % CODER_ORIGINS];
		uint64_t pid = get_uv(r);
		if (pid) {
			*ki = (struct coder_ids){k->goid, (uint32_t)(pid - 1), 0, 0, ki->key, ki->shift};
			ki->tid = (uint32_t)get_uv(r);
			ki->image = (uint32_t)get_uv(r);
		}
		/* (a damaged record's slot may be another goroutine's: its ids
		 * are then wrong, as any of its numbers may be) */
		k->pid = ki->pid;
		k->tid = ki->tid;
		k->image = ki->image;
	}
	c->pid = k->pid;
	c->tid = k->tid;
	c->goid = k->goid;
	c->image = k->image;
	uint64_t *kshift = &k->ids[c->goid % CODER_ORIGINS].shift;
	*kshift += (uint64_t)get_sv(r);
	c->raw_entry = c->ts_entry + *kshift;
	if (!(rec & REC_BARE)) {
		c->ts_exit = get_time(r, c->ts_entry);
		c->raw_exit = get_time(r, c->raw_entry);
		c->exit_tid = get_tid(r, c->tid);
	}
	uint64_t *kkey = &k->ids[c->goid % CODER_ORIGINS].key;
	c->key = *kkey += (uint64_t)get_sv(r);
	c->depth = (uint32_t)get_uv(r);
	struct shape *ks = k->shapes[kind == HELD_EXIT], *sh;
	if (known_shape) {
		sh = &ks[get_uv(r) % CODER_SHAPES];
	} else {
		uint8_t *next = &k->next_shape[kind == HELD_EXIT];
		sh = &ks[*next];
		*next = (uint8_t)((*next + 1) % CODER_SHAPES);
		sh->func = (uint32_t)get_uv(r);
		sh->status = (uint32_t)get_uv(r);
		sh->context = (uint32_t)get_uv(r);
		sh->entry_site = get_site(r);
		sh->exit_site = get_site(r);
		sh->spill_site = get_site(r);
		sh->args_len = (uint32_t)get_uv(r);
		sh->spill_len = (uint32_t)get_uv(r);
		sh->ret_len = (uint32_t)get_uv(r);
		sh->end_status = (uint32_t)get_uv(r);
		sh->end_ret_len = (uint32_t)get_uv(r);
		sh->end_exit_site = get_site(r);
	}
	c->func = sh->func;
	c->status = (uint8_t)sh->status;
	c->end_bound = (sh->status >> 8) & 1;
	c->context = sh->context;
	c->entry_site = sh->entry_site;
	c->exit_site = sh->exit_site;
	c->spill_site = sh->spill_site;
	c->args_len = sh->args_len;
	c->spill_len = sh->spill_len;
	c->ret_len = sh->ret_len;
	if (h->has_origin) {
		struct ct_goroutine_origin *ko = &k->origin[c->goid % CODER_ORIGINS];
		if (!(f & F_SAME_ORIGIN))
			get_origin(r, ko);
		h->origin = *ko;
	}
	if (sh->status & SH_OFF_CPU) {
		c->off_preempted = get_uv(r);
		c->off_tracer = get_uv(r);
		c->off_blocked = get_uv(r);
	}
	if (ended) {
		struct ct_exit_info *e = &h->e;
		memset(e, 0, sizeof(*e));
		e->ts_exit = get_time(r, c->ts_entry);
		e->raw_exit = get_time(r, c->raw_entry + (e->ts_exit - c->ts_entry));
		e->exit_tid = get_tid(r, c->tid);
		e->status = (uint8_t)sh->end_status;
		e->leaf = (rec & REC_END_LEAF) != 0;
		e->end_bound = (uint8_t)((sh->end_status >> 9) & 1);
		e->ret_len = (uint16_t)sh->end_ret_len;
		e->exit_site = sh->end_exit_site;
		if (sh->end_status & SH_END_OFF_CPU) {
			e->off_preempted = get_uv(r);
			e->off_tracer = get_uv(r);
			e->off_blocked = get_uv(r);
		}
		h->ended = true;
	}
	size_t n = get_uv(r);
	if (r->p > r->end) /* (damaged: its numbers ran past its end) */
		r->bad = true;
	const uint8_t *p = rd_bytes(r, n);
	if (p)
		held_put(h, p, n);
}

/* ---- the spill queue ---- */

/* H to the end of the spill stream. */
static void spill_held(struct ct_exitindex *x, struct held *h)
{
	bool open = h->kind == HELD_ENTER && !h->ended;
	/* the record straight into wbuf, after room for a one-byte length
	 * (moved on when the length takes more) */
	buf_reserve(&x->wbuf, 10 + 1 + sizeof(struct late_slot) + MAX_FIELDS + h->nbytes);
	uint8_t *body = x->wbuf.p + x->wbuf.n + 1, *o = body;
	*o++ = (uint8_t)(h->kind | (open ? REC_OPEN : 0) | (h->kind == HELD_ENTER && h->ended ? REC_ENDED : 0));
	if (open) {
		struct late_slot z;
		memset(&z, 0, sizeof(z));
		z.seq = h->c.seq;
		memcpy(o, &z, sizeof(z));
		o += sizeof(z);
	}
	o = put_held(&x->wr, body, o, h);
	size_t len = (size_t)(o - body);
	uint8_t prefix[10];
	size_t np = (size_t)(put_uv(prefix, len) - prefix);
	if (np > 1)
		memmove(body + np - 1, body, len);
	if (np == 1) /* (most records: no memcpy call) */
		x->wbuf.p[x->wbuf.n] = prefix[0];
	else
		memcpy(x->wbuf.p + x->wbuf.n, prefix, np);
	if (open)
		map_put(&x->late, h->c.seq, (void *)(uintptr_t)(stream_end(x) + np + 1 + 1));
	x->wbuf.n += np + len;
	stream_flush(x);
}

/* The window is full and its head is the entry of a call still open (or
 * the spill stream has callbacks: they come first): its oldest half to the
 * stream. */
static void spill(struct ct_exitindex *x)
{
	if (x->rpos == stream_end(x))
		x->blocker = x->q[x->head % QUEUE].c.seq;
	for (unsigned i = 0; i < QUEUE / 2; i++)
		spill_held(x, &x->q[x->head++ % QUEUE]);
}

static void stream_drain(struct ct_exitindex *x, bool all);

/* H, the entry of a call still open at the head of a full window (ALL:
 * or at the end of the trace), ended as the first pass saw it end (status
 * OPEN if it did not). */
static void end_from_first_pass(struct ct_exitindex *x, struct held *h)
{
	const uint8_t *ret = NULL;
	if (!find_long(x, h->order, &h->e, &ret))
		memset(&h->e, 0, sizeof(h->e)); /* (the first pass keeps every call that can get here) */
	held_put(h, ret, h->e.ret_len);
	h->ended = true;
}

/* Delivers what can go: every callback up to the first enter of a call
 * still open -- or, with ALL (the end of the trace), every one, those not
 * ended as such (status OPEN).  Behind a call still open in a full window,
 * two passes take its end from the first; one pass spills. */
static void drain(struct ct_exitindex *x, bool all)
{
	if (x->rpos < stream_end(x)) {
		if (all)
			stream_drain(x, true);
		else if (x->tail - x->head >= QUEUE)
			spill(x);
		return;
	}
	while (x->head < x->tail) {
		struct held *h = &x->q[x->head % QUEUE];
		if (h->kind == HELD_ENTER && !h->ended) {
			if (!all && x->tail - x->head < QUEUE)
				return;
			if (x->long_ends_known) {
				end_from_first_pass(x, h);
			} else if (!all) {
				spill(x);
				return;
			} else {
				memset(&h->e, 0, sizeof(h->e));
				h->ended = true;
			}
		}
		x->head++;
		deliver(x, h);
	}
}

/* Delivers the spill stream's callbacks up to the next entry of a call
 * still open (ALL: every one), then, if it is empty, the window's. */
static void stream_drain(struct ct_exitindex *x, bool all)
{
	struct held *h = &x->scratch;
	while (x->rpos < stream_end(x)) {
		uint64_t left = stream_end(x) - x->rpos;
		const uint8_t *p = stream_at(x, x->rpos, left < 10 ? (size_t)left : 10);
		if (!p)
			break;
		struct ct_rd r = ct_rd_of(p, left < 10 ? (size_t)left : 10);
		uint64_t len = rd_uvar(&r);
		uint64_t body_at = x->rpos + (uint64_t)(r.p - p);
		if (r.bad || !len || len > stream_end(x) - body_at || !(p = stream_at(x, body_at, len)))
			break;
		r = ct_rd_of(p, len);
		uint8_t kind = rd_u8(&r);
		if (kind == REC_SKIP) {
			x->rpos = body_at + len;
			continue;
		}
		struct late_slot s;
		memset(&s, 0, sizeof(s));
		const uint8_t *slot = kind & REC_OPEN ? rd_bytes(&r, sizeof(s)) : NULL;
		if (slot)
			memcpy(&s, slot, sizeof(s));
		if (slot && !s.done && !all) {
			x->blocker = s.seq;
			return;
		}
		get_held(&x->rd, &r, kind, h);
		if (kind & REC_OPEN) {
			h->e = s.e;
			if (!s.done) {
				memset(&h->e, 0, sizeof(h->e));
				map_del(&x->late, h->c.seq);
			} else if (s.e.ret_len) {
				buf_reserve(&x->tmp, s.e.ret_len);
				if (!stream_read(x, s.ret_at, x->tmp.p, s.e.ret_len))
					memset(x->tmp.p, 0, s.e.ret_len);
				held_put(h, x->tmp.p, s.e.ret_len);
			}
			h->ended = true;
		}
		x->rpos = body_at + len;
		stream_free(x);
		deliver(x, h);
	}
	/* empty (or unreadable: what is left is dropped): from the start again */
	for (size_t i = x->segs_head; i < x->segs.n; i++)
		CT_VEC_PUSH(x->free_segs, x->segs.v[i]);
	x->segs.n = x->segs_head = 0;
	x->seg0 = 0;
	x->rpos = x->wbuf_at = 0;
	x->wbuf.n = x->rbuf.n = 0;
	x->rbuf_at = 0;
	map_free(&x->late);
	memset(&x->late, 0, sizeof(x->late));
	drain(x, all);
}

/* Call C, whose entry is in the spill stream, ended. */
static void late_end(struct ct_exitindex *x, const struct ct_call *c)
{
	void **v = map_slot(&x->late, c->seq, false);
	if (!v)
		return;
	uint64_t at = (uint64_t)(uintptr_t)*v - 1;
	map_del(&x->late, c->seq);
	struct late_slot s;
	memset(&s, 0, sizeof(s));
	s.e = exit_of(c);
	s.seq = c->seq;
	s.done = 1;
	if (s.e.ret_len) {
		buf_uvar(&x->wbuf, 1 + (uint64_t)s.e.ret_len);
		buf_u8(&x->wbuf, REC_SKIP);
		s.ret_at = stream_end(x);
		buf_put(&x->wbuf, c->ret, s.e.ret_len);
	}
	stream_patch(x, at, &s, sizeof(s));
	stream_flush(x);
	if (c->seq == x->blocker)
		stream_drain(x, false);
}

/* ---- the pass ---- */

static void held_enter(void *ctx, const struct ct_call *c)
{
	struct ct_exitindex *x = ctx;
	uint64_t *slot = &x->where[c->seq % (2 * QUEUE)];
	if (*slot >= x->head && *slot < x->tail) {
		const struct held *o = &x->q[*slot % QUEUE];
		if (o->kind == HELD_ENTER && !o->ended && o->c.seq != c->seq)
			map_put(&x->where_taken, o->c.seq, (void *)(uintptr_t)(*slot + 1));
	}
	*slot = x->tail;
	hold(x, HELD_ENTER, c)->order = x->entered_held++;
	drain(x, false);
}

static void held_exit(void *ctx, const struct ct_call *c)
{
	struct ct_exitindex *x = ctx;
	uint64_t at = x->where[c->seq % (2 * QUEUE)];
	struct held *e = &x->q[at % QUEUE];
	void **taken;
	if ((at < x->head || at >= x->tail || e->kind != HELD_ENTER || e->c.seq != c->seq) && x->where_taken.n &&
	    (taken = map_slot(&x->where_taken, c->seq, false))) {
		at = (uint64_t)(uintptr_t)*taken - 1;
		e = &x->q[at % QUEUE];
		map_del(&x->where_taken, c->seq);
	}
	if (at >= x->head && at < x->tail && e->kind == HELD_ENTER && e->c.seq == c->seq && !e->ended) {
		e->e = exit_of(c);
		held_put(e, c->ret, e->e.ret_len);
		e->ended = true;
	} else if (x->late.n) {
		late_end(x, c);
	}
	if (x->down.exit && x->thin_exits) {
		/* only what names its goroutine or thread */
		struct ct_call t;
		zero16n(&t, sizeof(t) / 16 * 16);
		memset((char *)&t + sizeof(t) / 16 * 16, 0, sizeof(t) % 16);
		t.seq = c->seq;
		t.ts_entry = c->ts_entry;
		t.raw_entry = c->raw_entry;
		t.pid = c->pid;
		t.tid = c->tid;
		t.goid = c->goid;
		t.image = c->image;
		t.sysstack = c->sysstack;
		t.context = c->context;
		hold(x, HELD_EXIT, &t);
	} else if (x->down.exit) {
		/* (held only for a renderer that takes them) */
		struct held *h = hold(x, HELD_EXIT, c);
		h->c.ret_len = c->ret ? c->ret_len : 0;
		held_put(h, c->ret, h->c.ret_len);
	}
	drain(x, false);
}

static void held_lost(void *ctx, uint64_t ts, uint64_t n)
{
	struct ct_exitindex *x = ctx;
	struct held *h = hold(x, HELD_LOST, NULL);
	h->ts = ts;
	h->lost = n;
	drain(x, false);
}

static void held_spawn(void *ctx, const struct ct_goroutine_origin *o)
{
	struct ct_exitindex *x = ctx;
	struct held *h = hold(x, HELD_SPAWN, NULL);
	h->origin = *o;
	h->has_origin = false;
	drain(x, false);
}

struct ct_recon_ops ct_exitindex_hold(struct ct_exitindex *x, const struct ct_recon_ops *ops, void *ctx)
{
	x->down = *ops;
	x->ctx = ctx;
	x->q = xcalloc(QUEUE, sizeof(*x->q));
	x->where = xcalloc(2 * QUEUE, sizeof(*x->where));
	return (struct ct_recon_ops){held_enter, held_exit, held_lost, held_spawn};
}

void ct_exitindex_finish(struct ct_exitindex *x)
{
	drain(x, true);
}

struct ct_recon_stats ct_exitindex_run(struct ct_exitindex *x, const struct ct_recon_ops *ops, void *ctx)
{
	struct ct_recon_ops held_ops = ct_exitindex_hold(x, ops, ctx);
	struct ct_recon_stats st = ct_recon_run(x->t, &held_ops, x);
	ct_exitindex_finish(x);
	return st;
}

void ct_exitindex_thin_exits(struct ct_exitindex *x)
{
	x->thin_exits = true;
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
	map_free(&x->where_taken);
	free(x->scratch.heap);
	buf_free(&x->wbuf);
	buf_free(&x->rbuf);
	buf_free(&x->tmp);
	map_free(&x->late);
	CT_VEC_FREE(x->segs);
	CT_VEC_FREE(x->free_segs);
	if (x->fd >= 0)
		close(x->fd);
	for (size_t i = 0; i < x->runs.n; i++)
		buf_free(&x->runs.v[i].ret);
	CT_VEC_FREE(x->runs);
	CT_VEC_FREE(x->batch);
	buf_free(&x->batch_rets);
	if (x->f)
		fclose(x->f);
	free(x);
}
