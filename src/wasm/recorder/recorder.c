/* The recorder: a small wasm module (built from this file for wasm32 at
 * build time, embedded in calltrace) whose exports are the hooks the
 * instrumented module imports (rewrite.h).  wasm-to-wasm calls cost a few
 * ns, far less than a call into JavaScript; the recorder timestamps each
 * hit (the one host call: the clock), appends a `struct ct_wire_event` to
 * its own memory (wire.h), and hands full batches to the runner, which writes them to
 * calltrace's pipe.
 *
 * Record-time limits and sampling (--max-depth, --min-duration, --root,
 * --sample, --sample-goroutines, --max-events) are decided here, before
 * transport, by the same shadow-stack rules as the BPF side
 * (probes/calltrace.bpf.c, which mirrors reconstruct.c); keep them in step.
 *
 * Frame keys: WASI modules have one stack, keyed by depth (deeper = larger);
 * Go modules pass g.stack.hi - SP and the goroutine id, computed inline. */
#include "wasm/wire.h"

#define WASM_EXPORT(name) __attribute__((export_name(#name)))
#define WASM_IMPORT(name) __attribute__((import_module("env"), import_name(#name)))

/* The clock: WASI's clock_time_get(CLOCK_MONOTONIC), served by a node:wasi
 * instance of the runner's bound to this module's memory.  It is the clock
 * process.hrtime.bigint() reads (libuv's uv_hrtime, CLOCK_MONOTONIC in ns, as
 * the BPF side's timestamps), but a call from wasm into node's C++ with no
 * JavaScript and no BigInt between: the same reading at the same resolution,
 * without the warm-up of a JavaScript function (the first few thousand
 * reads through process.hrtime.bigint cost microseconds each).
 *
 * It is most of a hit's cost: ~33 ns a read, of which the vDSO's
 * CLOCK_MONOTONIC takes ~27 on a kvm-clock VM (lfence + rdtsc, ~19).  Nothing
 * cheaper reaches wasm in node 20 (performance.now ~51 ns; the coarse clocks
 * tick every few ms; a thread keeping the time in shared memory would take a
 * core), and one read cannot serve two events: each event is the instant its
 * read says, and the code run between two hooks (the caller's between its
 * calls, the callee's body) belongs to some call's duration. */
#define WASI_CLOCK_MONOTONIC 1
__attribute__((import_module("wasi_snapshot_preview1"), import_name("clock_time_get"))) __u32
wasi_clock_time_get(__u32 id, __u64 precision, __u64 *out);
static __u64 clock_out;

static inline __u64 host_now(void)
{
	wasi_clock_time_get(WASI_CLOCK_MONOTONIC, 1, &clock_out);
	return clock_out;
}
WASM_IMPORT(flush) void host_flush(const void *p, __u32 n);

static struct ct_wire_config cfg;
static __u32 *sites;      /* CT_WIRE_SITE per site id */
static __u32 stopped;     /* calltrace stopped reading: hooks do nothing */
static __u32 depth;       /* WASI: frames open */
static __u64 counters[CT_CNT_MAX];

#define BUF_SIZE (1u << 18)
/* (a send adds at most three escapes and a record of MAX_VALS values) */
#define FLUSH_AT (BUF_SIZE - 4096)
static __u64 buf[BUF_SIZE / 8];
static __u32 pos;

#define MAX_VALS 32
static __u64 vals[MAX_VALS];
static __u32 nvals;

/* ---- memory for the per-goroutine shadow stacks (limits only) ---- */
static __u8 *heap_top, *heap_end;

static void *alloc(__u32 n)
{
	n = (n + 15) & ~15u;
	if (heap_top + n > heap_end) {
		__u32 pages = (n + 65535) / 65536 + 16;
		int old = __builtin_wasm_memory_grow(0, pages);
		if (old < 0)
			return 0;
		heap_top = (__u8 *)((__SIZE_TYPE__)old * 65536);
		heap_end = heap_top + (__SIZE_TYPE__)pages * 65536;
	}
	void *p = heap_top;
	heap_top += n;
	return p;
}

static void zero(void *p, __u32 n)
{
	__u8 *b = p;
	while (n--)
		*b++ = 0;
}

WASM_EXPORT(config) struct ct_wire_config *config(void)
{
	return &cfg;
}

/* Called once cfg.nsites is set: where the runner writes the site table. */
WASM_EXPORT(site_table) __u32 *site_table(void)
{
	sites = alloc(cfg.nsites * 4 + 4);
	return sites;
}

WASM_EXPORT(stop) void stop(void)
{
	stopped = 1;
	pos = 0;
}

/* (out of line, as everything but the common path of a hit: the hooks stay
 * small, and V8 has them optimized early) */
__attribute__((noinline)) static void flush(void)
{
	if (pos && !stopped)
		host_flush(buf, pos);
	pos = 0;
}

__attribute__((noinline)) static void copy_words(__u64 *out, const __u64 *in, __u32 n)
{
	for (__u32 i = 0; i < n; i++)
		out[i] = in[i];
}

static __u64 sent_goid = ~0ull; /* the goroutine of the last record (none yet) */
static __u64 sent_ts;             /* the time of the last record (none yet: 0) */

/* A record that says what the next ones cannot (wire.h): out of line, as
 * each is rare (a goroutine switch, a gap of seconds, a huge key). */
__attribute__((noinline)) static void send_escape(__u32 site, __u32 key, __u64 payload)
{
	struct ct_wire_event *e = (struct ct_wire_event *)((__u8 *)buf + pos);
	e->site = site;
	e->len = 8;
	e->flags = 0;
	e->dts = 0;
	e->key = key;
	*(__u64 *)(e + 1) = payload;
	pos += sizeof(*e) + 8;
}

/* Most records are one event in 16 bytes: its time as the difference from
 * the last record's, its key's low half.  (Inline in the hooks' common
 * path: out of line, a call of seven arguments per event.) */
__attribute__((always_inline)) static inline void put_event(__u32 site, __u64 ts, __u64 goid, __u64 key,
							    __u16 flags, const __u64 *payload, __u32 n)
{
	if (goid != sent_goid) {
		sent_goid = goid;
		send_escape(CT_WIRE_THREAD, cfg.pid, goid);
	}
	__u64 dts = ts - sent_ts;
	if (__builtin_expect((__u64)(__s64)(__s32)dts != dts, 0)) {
		/* the first record, a gap of 2.1 s or more, an entry sent late
		 * (--min-duration) that long ago */
		send_escape(CT_WIRE_TIME, 0, ts);
		dts = 0;
	}
	sent_ts = ts;
	if (__builtin_expect(key >> 32 != 0, 0))
		send_escape(CT_WIRE_KEY, 0, key);
	struct ct_wire_event *e = (struct ct_wire_event *)((__u8 *)buf + pos);
	e->site = site;
	e->len = (__u16)(n * 8);
	e->flags = flags;
	e->dts = (__s32)dts;
	e->key = (__u32)key;
	if (n == 1) /* the common case (one argument, one result) inline */
		*(__u64 *)(e + 1) = payload[0];
	else if (n)
		copy_words((__u64 *)(e + 1), payload, n);
	pos += sizeof(*e) + n * 8;
	if (pos >= FLUSH_AT)
		flush();
}

/* The same for the limits' and the rare hooks' events. */
__attribute__((noinline)) static void send(__u32 site, __u64 ts, __u64 goid, __u64 key, __u16 flags,
					   const __u64 *payload, __u32 n)
{
	put_event(site, ts, goid, key, flags, payload, n);
}

/* ---- limits: the shadow stack, same rules as calltrace.bpf.c ---- */
#define F_ACTIVE 0x01
#define F_RECORD 0x02
#define F_EMITTED 0x04
#define F_RESTART 0x08
#define F_INTREE 0x20

struct lframe {
	__u64 key, ts;
	__u32 site, func;
	__u16 adepth;
	__u8 flags;
};

struct gstate {
	__u64 goid;
	__u32 depth, g_sampled;
	struct gstate *next; /* hash chain, or the free list */
	struct lframe f[CT_LIM_FRAMES];
};

#define GBUCKETS 1024
static struct gstate *gtab[GBUCKETS], *gfree;

struct hit {
	__u32 site, kind, func, root;
	__u64 goid, key, now;
	const __u64 *payload;
	__u32 npayload;
};

static int budget_ok(void)
{
	if (!(cfg.limits & CT_LIM_MAXEV))
		return 1;
	if (counters[CT_CNT_EMITTED] >= cfg.max_events) {
		counters[CT_CNT_CUT]++;
		return 0;
	}
	counters[CT_CNT_EMITTED]++;
	return 1;
}

static void send_this(const struct hit *h)
{
	if (budget_ok())
		send(h->site, h->now, h->goid, h->key, 0, h->payload, h->npayload);
}

static struct lframe *top(struct gstate *st)
{
	return st->depth ? &st->f[st->depth - 1] : 0;
}

static void send_delayed_entries(const struct hit *h, struct gstate *st)
{
	for (__u32 i = 0; i < st->depth; i++) {
		struct lframe *f = &st->f[i];
		if ((f->flags & (F_RECORD | F_EMITTED)) != F_RECORD)
			continue;
		if (!budget_ok())
			return;
		f->flags |= F_EMITTED;
		send(f->site, f->ts, h->goid, f->key, CT_EV_DELAYED, 0, 0);
	}
}

static int frame_sent(const struct hit *h, struct gstate *st, struct lframe *f, __u64 end)
{
	if (!(f->flags & F_RECORD))
		return 0;
	if (f->flags & F_EMITTED)
		return 1;
	if (end - f->ts >= cfg.min_dur_ns) {
		send_delayed_entries(h, st);
		return (f->flags & F_EMITTED) != 0;
	}
	return 0;
}

static int unwind_deeper(struct gstate *st, __u64 key)
{
	int sent = 0;
	struct lframe *f;
	while ((f = top(st)) && f->key > key) {
		sent |= (f->flags & F_EMITTED) != 0;
		st->depth--;
	}
	return sent;
}

static void marker(const struct hit *h)
{
	send(h->site, h->now, h->goid, h->key, CT_EV_MARKER, 0, 0);
}

static void limits_entry(const struct hit *h, struct gstate *st)
{
	int is_go = h->goid != 0;
	int mark = unwind_deeper(st, h->key);
	struct lframe *t = top(st);
	if (t && t->key == h->key) {
		if (t->func == h->func && (t->flags & F_RESTART)) {
			t->flags &= ~F_RESTART;
			return;
		}
		if (!(is_go && t->func != h->func)) {
			mark |= (t->flags & F_EMITTED) != 0;
			st->depth--;
			t = top(st);
		}
	}
	__u8 flags = 0;
	__u16 adepth = 0;
	if (t) {
		adepth = t->adepth + ((t->flags & F_ACTIVE) != 0);
		flags = t->flags & F_INTREE;
	}
	if (!(cfg.limits & CT_LIM_ROOT) || h->root)
		flags |= F_INTREE;
	int tree_root = (flags & F_INTREE) && !(t && (t->flags & F_INTREE));
	int active;
	if (tree_root) {
		active = st->g_sampled;
		if (active && (cfg.limits & CT_LIM_SAMPLE))
			active = (counters[CT_CNT_SAMPLE]++ % cfg.sample_n) == 0;
	} else {
		active = (flags & F_INTREE) && t && (t->flags & F_ACTIVE);
	}
	if (active)
		flags |= F_ACTIVE;
	if (active && (!(cfg.limits & CT_LIM_DEPTH) || adepth < cfg.max_depth))
		flags |= F_RECORD;
	if (st->depth >= CT_LIM_FRAMES) {
		counters[CT_CNT_OVERFLOW]++;
		counters[CT_CNT_CUT]++;
		return;
	}
	struct lframe *n = &st->f[st->depth++];
	n->key = h->key;
	n->ts = h->now;
	n->site = h->site;
	n->func = h->func;
	n->adepth = adepth;
	n->flags = flags;
	if ((flags & F_RECORD) && !(cfg.limits & CT_LIM_MINDUR)) {
		n->flags |= F_EMITTED;
		send_this(h);
	} else {
		counters[CT_CNT_CUT]++;
		if (mark)
			marker(h);
	}
}

static void limits_return(const struct hit *h, struct gstate *st)
{
	int mark = unwind_deeper(st, h->key);
	int sent = 0;
	struct lframe *f;
	while ((f = top(st)) && f->key == h->key) {
		sent |= frame_sent(h, st, f, h->now);
		st->depth--;
	}
	if (sent) {
		send_this(h);
	} else {
		counters[CT_CNT_CUT]++;
		if (mark)
			marker(h);
	}
}

static __u64 fmix(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static struct gstate **gslot(__u64 goid)
{
	struct gstate **pp = &gtab[fmix(goid) % GBUCKETS];
	while (*pp && (*pp)->goid != goid)
		pp = &(*pp)->next;
	return pp;
}

static void limits_hit(const struct hit *h)
{
	struct gstate **pp = gslot(h->goid), *st = *pp;
	if (!st) {
		if (h->kind != CT_SITE_ENTRY)
			return;
		st = gfree;
		if (st)
			gfree = st->next;
		else
			st = alloc(sizeof(*st));
		if (!st)
			return;
		zero(st, sizeof(*st));
		st->goid = h->goid;
		/* the thread identity of a WASI module is its pid, as for C */
		__u64 id = h->goid ? h->goid : cfg.pid;
		st->g_sampled = !(cfg.limits & CT_LIM_SAMPLE_G) || fmix(id) % cfg.sample_g_n == 0;
		*pp = st;
	}
	struct lframe *t;
	switch (h->kind) {
	case CT_SITE_ENTRY:
		limits_entry(h, st);
		break;
	case CT_SITE_RET:
		limits_return(h, st);
		break;
	case CT_SITE_RESTART:
		t = top(st);
		if (t && t->key == h->key && t->func == h->func)
			t->flags |= F_RESTART;
		counters[CT_CNT_CUT]++;
		break;
	case CT_SITE_GOEXIT: {
		int sent = 0;
		while ((t = top(st))) {
			sent |= (t->flags & F_EMITTED) != 0;
			st->depth--;
		}
		if (sent)
			send_this(h);
		break;
	}
	}
	if (st->depth == 0) {
		*pp = st->next;
		st->next = gfree;
		gfree = st;
	}
}

__attribute__((noinline)) static void limited_hit(__u32 site, __u64 goid, __u64 key, __u64 now, __u32 n)
{
	__u32 s = site < cfg.nsites ? sites[site] : 0;
	struct hit h = {site, CT_WIRE_SITE_KIND(s), CT_WIRE_SITE_FUNC(s), CT_WIRE_SITE_ROOT(s),
			goid, key, now, vals, n};
	limits_hit(&h);
}

static inline void hit(__u32 site, __u64 goid, __u64 key)
{
	__u64 now = host_now();
	__u32 n = nvals;
	nvals = 0;
	if (__builtin_expect(cfg.limits != 0, 0))
		limited_hit(site, goid, key, now, n);
	else
		put_event(site, now, goid, key, 0, vals, n);
}

/* ---- the hooks ---- */

WASM_EXPORT(enter) void enter(__u32 site)
{
	depth++;
	if (!stopped)
		hit(site, 0, depth);
}

WASM_EXPORT(exit) void exit_(__u32 site)
{
	if (!stopped)
		hit(site, 0, depth);
	if (depth)
		depth--;
}

WASM_EXPORT(depth) __u32 depth_(void)
{
	return depth;
}

/* A handler in the frame at depth D+1 caught an exception: deeper frames
 * were unwound without their exits. */
WASM_EXPORT(unwind) void unwind(__u32 d)
{
	if (depth <= d + 1)
		return;
	depth = d + 1;
	if (stopped)
		return;
	__u64 now = host_now();
	nvals = 0;
	if (!cfg.limits) {
		send(0, now, 0, depth, CT_EV_MARKER, 0, 0);
		return;
	}
	struct gstate *st = *gslot(0);
	if (st && unwind_deeper(st, depth))
		send(0, now, 0, depth, CT_EV_MARKER, 0, 0);
}

static inline void put_val(__u64 v)
{
	if (nvals < MAX_VALS)
		vals[nvals++] = v;
}

/* An entry or exit with its last values (widened to i64 by the caller as
 * the arg hooks below store them): one import call instead of one per value
 * more (rewrite.h). */
WASM_EXPORT(enter1) void enter1(__u32 site, __u64 a)
{
	put_val(a);
	enter(site);
}

WASM_EXPORT(enter2) void enter2(__u32 site, __u64 a, __u64 b)
{
	put_val(a);
	put_val(b);
	enter(site);
}

WASM_EXPORT(enter3) void enter3(__u32 site, __u64 a, __u64 b, __u64 c)
{
	put_val(a);
	put_val(b);
	put_val(c);
	enter(site);
}

WASM_EXPORT(enter4) void enter4(__u32 site, __u64 a, __u64 b, __u64 c, __u64 d)
{
	put_val(a);
	put_val(b);
	put_val(c);
	put_val(d);
	enter(site);
}

WASM_EXPORT(exit1) void exit1(__u32 site, __u64 r)
{
	put_val(r);
	exit_(site);
}

WASM_EXPORT(arg_i32) void arg_i32(__u32 v)
{
	put_val(v);
}

WASM_EXPORT(arg_i64) void arg_i64(__u64 v)
{
	if (nvals < MAX_VALS)
		vals[nvals++] = v;
}

WASM_EXPORT(arg_f32) void arg_f32(float v)
{
	union {
		float f;
		__u32 u;
	} x = {v};
	if (nvals < MAX_VALS)
		vals[nvals++] = x.u;
}

WASM_EXPORT(arg_f64) void arg_f64(double v)
{
	union {
		double f;
		__u64 u;
	} x = {v};
	if (nvals < MAX_VALS)
		vals[nvals++] = x.u;
}

/* Go: a resumed frame (resume point != 0) is not a call; a return that
 * unwinds the wasm stack for a goroutine switch is not a return. */
WASM_EXPORT(genter) void genter(__u32 site, __u32 resume, __u64 goid, __u64 key)
{
	if (!resume && !stopped)
		hit(site, goid, key);
}

WASM_EXPORT(gexit) void gexit(__u32 site, __u32 unwinding, __u64 goid, __u64 key)
{
	if (!unwinding && !stopped)
		hit(site, goid, key);
}

WASM_EXPORT(grestart) void grestart(__u32 site, __u64 goid, __u64 key)
{
	if (!stopped)
		hit(site, goid, key);
}

/* The program is over (or trapped: UNWOUND says so): everything still
 * open was unwound; then the counters. */
WASM_EXPORT(finish) void finish(__u32 trapped)
{
	if (stopped)
		return;
	if (trapped && depth) {
		send(0, host_now(), 0, 0, CT_EV_MARKER, 0, 0);
		depth = 0;
	}
	/* (room: a send leaves pos below FLUSH_AT, and the marker and the
	 * counters take less than BUF_SIZE - FLUSH_AT with their escapes) */
	send(CT_WIRE_STATS, host_now(), 0, 0, 0, counters, CT_CNT_MAX);
	flush();
}
