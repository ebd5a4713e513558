/* JSON Lines: one object per call in entry order:
 *   {"ts":12345,"dur":678,"dur_raw":7012,"pid":1,"tid":1,"goid":1,"depth":0,
 *    "func":"main.add","status":"returned",
 *    "args":[{"name":"a","type":"int","value":40},...],
 *    "ret":[{"name":"~r0","type":"int","value":42}]}
 * A goroutine's outermost calls (depth 0) carry "created_by":{"goid",
 * "func","file","line"} when its creation was seen.
 * ts is ns since the trace started; dur is null unless the call returned,
 * and has the estimated cost of the probe hits inside the call taken out
 * (dur_raw: as measured).  A returned call whose dur is below a tenth of
 * what was taken out of it (too short to tell from none: the text shows
 * "< N") also has "dur_below":N, ns, that tenth rounded up to two
 * significant digits (ct_dur_below); dur is kept as computed, so sums
 * still add up.  An "unobserved" call (its end not seen) that a later
 * event of its goroutine/thread showed over has "dur_max":N, ns, corrected
 * as dur is: it lasted at most that (ct_call.end_bound); dur stays null.
 * A call whose thread was off CPU while it ran has "off_cpu":{"preempted":N,
 * "blocked":N} (ns, both in dur; "by_calltrace":N of the preempted time
 * when calltrace's own thread took the CPU).
 * Losses appear as {"ts":…,"lost":N}.  Durations and results come from the
 * exit index (exitindex.h: calls held back until they end, in memory or,
 * behind a long one, in a temp file or with its end from a first pass), so
 * memory stays bounded for any trace length.
 * The object builder is shared with the YAML renderer (yaml.c), which
 * re-lays out these same objects, so the two formats cannot drift apart. */
#include "reconstruct/exitindex.h"
#include "render/render.h"
#include "render/values.h"
#include "util/files.h"

#include <inttypes.h>
#include <string.h>

/* `,"status":"NAME"` of a status, made once (a strlen and three appends
 * a call otherwise). */
struct status_text {
	uint8_t n;
	char text[32];
};
#define STATUSES 256 /* (any uint8_t ct_call.status) */

struct ct_json_calls {
	struct ct_trace *t;
	struct ct_exitindex *x;
	struct ct_values *vals;
	struct ct_buf *names; /* per function id: its quoted name */
	size_t nnames;
	struct ct_buf sched_name; /* CT_FUNC_SCHED's (--sched) */
	/* `,"pid":P,"tid":T,"goid":G,"depth":` of recent ids, made once:
	 * calls come in entry order, goroutines interleaved (a different one
	 * nearly every call), and the three numbers were a tenth of replay
	 * --format=json.  Direct-mapped by the ids' hash. */
	struct ids_text *ids;
	struct status_text status[STATUSES];
};

#define IDS_SLOTS 64
/* (the longest: 7 + 10 + 7 + 10 + 8 + 20 + 9 bytes) */
#define IDS_TEXT 72
struct ids_text {
	uint32_t pid, tid;
	uint64_t goid;
	uint8_t n; /* 0: an empty slot */
	char text[IDS_TEXT];
};

struct ct_json_calls *ct_json_calls_new(struct ct_trace *t)
{
	struct ct_json_calls *jc = xcalloc(1, sizeof(*jc));
	jc->t = t;
	jc->vals = ct_values_new(t);
	ct_values_memo(jc->vals);
	return jc;
}

/* Each function's name as a JSON string, escaped once, not per call. */
static const struct ct_buf *quoted_name(struct ct_json_calls *jc, uint32_t func)
{
	if (func == CT_FUNC_SCHED) { /* (--sched: not a function of the table) */
		if (!jc->sched_name.n)
			ct_buf_json_string(&jc->sched_name, "linux:schedule", strlen("linux:schedule"));
		return &jc->sched_name;
	}
	if (func >= jc->nnames) {
		size_t n = jc->t->nfuncs > func ? jc->t->nfuncs : func + 1;
		jc->names = xrealloc(jc->names, n * sizeof(*jc->names));
		memset(jc->names + jc->nnames, 0, (n - jc->nnames) * sizeof(*jc->names));
		jc->nnames = n;
	}
	struct ct_buf *b = &jc->names[func];
	if (!b->n) {
		const char *name = ct_func_name(jc->t, func);
		ct_buf_json_string(b, name, strlen(name));
	}
	return b;
}

void ct_json_calls_run(struct ct_json_calls *jc, const struct ct_filter_opts *filter, const struct ct_recon_ops *ops,
		       void *ctx)
{
	jc->x = ct_filter_exitindex(jc->t, filter);
	ct_filter_run_indexed(jc->t, filter, jc->x, ops, ctx);
}

void ct_json_calls_free(struct ct_json_calls *jc)
{
	if (!jc)
		return;
	ct_exitindex_free(jc->x);
	ct_values_free(jc->vals);
	for (size_t i = 0; i < jc->nnames; i++)
		buf_free(&jc->names[i]);
	free(jc->names);
	buf_free(&jc->sched_name);
	free(jc->ids);
	free(jc);
}

static const struct status_text *status_text(struct ct_json_calls *jc, uint8_t status)
{
	struct status_text *st = &jc->status[status];
	if (!st->n) {
		const char *name = ct_status_name(status);
		st->n = (uint8_t)snprintf(st->text, sizeof(st->text), ",\"status\":\"%s\"", name);
	}
	return st;
}

/* `,"pid":P,"tid":T,"goid":G,"depth":` of C's ids (goid null for a thread's
 * call), from the cache, made there when it does not hold them. */
static const struct ids_text *ids_text(struct ct_json_calls *jc, const struct ct_call *c)
{
	if (!jc->ids)
		jc->ids = xcalloc(IDS_SLOTS, sizeof(*jc->ids));
	uint64_t h = ((uint64_t)c->pid << 32 ^ c->tid ^ c->goid * 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
	struct ids_text *e = &jc->ids[h >> 58];
	if (!e->n || e->pid != c->pid || e->tid != c->tid || e->goid != c->goid) {
		/* (at most IDS_TEXT: the numbers' widths are bounded) */
		struct ct_buf b = {0};
		buf_cstr(&b, ",\"pid\":");
		buf_dec(&b, c->pid);
		buf_cstr(&b, ",\"tid\":");
		buf_dec(&b, c->tid);
		buf_cstr(&b, ",\"goid\":");
		if (c->goid)
			buf_dec(&b, c->goid);
		else
			buf_cstr(&b, "null");
		buf_cstr(&b, ",\"depth\":");
		e->pid = c->pid;
		e->tid = c->tid;
		e->goid = c->goid;
		e->n = (uint8_t)b.n;
		memcpy(e->text, b.p, b.n);
		buf_free(&b);
	}
	return e;
}

/* A line's head is written at a cursor, its room reserved once: an append
 * at a time checked the room and stored the buffer's length again for
 * each of its ~15 pieces. */
#define PUT_LIT(o, s) (memcpy((o), (s), sizeof(s) - 1), (o) + sizeof(s) - 1)
static inline __attribute__((always_inline)) char *put_dec(char *o, uint64_t v)
{
	unsigned n = dec_len(v);
	dec_digits(v, n, o); /* (8 bytes of room past it: HEAD_ROOM's slack) */
	return o + n;
}
static inline char *put_short(char *o, const void *p, size_t n)
{
	copy_short(o, p, n);
	return o + n;
}
/* The head's longest, its name aside: `{"ts":` 20 digits, `,"dur":`,
 * `,"dur_raw":` and `,"dur_below":` 20 each (or the nulls and `,"dur_max":`),
 * the ids (IDS_TEXT) and a depth of 10, `,"func":`, the status, the four
 * flags (62), and 8 bytes of slack for put_dec's word stores. */
#define HEAD_ROOM (6 + 20 + 7 + 20 + 11 + 20 + 13 + 20 + IDS_TEXT + 10 + 8 + 32 + 62 + 8)

void ct_json_call_object(struct ct_json_calls *jc, const struct ct_call *c, struct ct_buf *out)
{
	const uint8_t *ret;
	const struct ct_exit_info *e = ct_exitindex_get(jc->x, c->seq, &ret);
	const struct ct_buf *qname = quoted_name(jc, c->func);
	const struct ids_text *ids = ids_text(jc, c);
	const struct status_text *st = status_text(jc, e->status ? e->status : CT_CALL_UNFINISHED);
	buf_reserve(out, HEAD_ROOM + qname->n);
	char *w = (char *)out->p + out->n;
	w = PUT_LIT(w, "{\"ts\":");
	w = put_dec(w, ct_rel_ts(jc->t, c->ts_entry)); /* the corrected clock, as Chrome/OTLP */
	/* dur without the tracer's own time (struct ct_costs), dur_raw as
	 * measured; dur_below only where dur is too small to tell from none
	 * (the text's "< N", the same N) */
	if (e->status == CT_CALL_RETURNED) {
		uint64_t dur = e->ts_exit - c->ts_entry, raw = e->raw_exit - c->raw_entry;
		uint64_t below = ct_dur_below(dur, raw);
		w = PUT_LIT(w, ",\"dur\":");
		w = put_dec(w, dur);
		w = PUT_LIT(w, ",\"dur_raw\":");
		w = put_dec(w, raw);
		if (below) {
			w = PUT_LIT(w, ",\"dur_below\":");
			w = put_dec(w, below);
		}
	} else {
		w = PUT_LIT(w, ",\"dur\":null,\"dur_raw\":null");
		/* an unobserved call that a later event showed over: it lasted
		 * at most this (corrected as dur is; dur stays null: a bound is
		 * no duration) */
		if (e->status == CT_CALL_UNOBSERVED && e->end_bound) {
			w = PUT_LIT(w, ",\"dur_max\":");
			w = put_dec(w, ct_dur_max(e->ts_exit - c->ts_entry, e->raw_exit - c->raw_entry));
		}
	}
	w = put_short(w, ids->text, ids->n);
	w = put_dec(w, c->depth);
	w = PUT_LIT(w, ",\"func\":");
	w = put_short(w, qname->p, qname->n);
	w = put_short(w, st->text, st->n);
	if (c->tail)
		w = PUT_LIT(w, ",\"tail\":true");
	/* entered from a call site the plan did not know (--exit=auto), of a
	 * function taken for only called directly (unplanned) or of one whose
	 * address is taken (indirect); without an exit probe there yet, its
	 * status is "unobserved" */
	if (c->unplanned)
		w = PUT_LIT(w, ",\"unplanned\":true");
	if (c->indirect)
		w = PUT_LIT(w, ",\"indirect\":true");
	/* C called through cgo runs on the thread's system stack for goroutine
	 * goid: its depth counts on that stack, apart from the goroutine's */
	if (c->sysstack)
		w = PUT_LIT(w, ",\"stack\":\"system\"");
	out->n = (size_t)(w - (char *)out->p);
	/* how long its thread was off CPU while it ran (ns, in dur) */
	if (e->off_preempted || e->off_blocked) {
		buf_printf(out, ",\"off_cpu\":{\"preempted\":%" PRIu64 ",\"blocked\":%" PRIu64, e->off_preempted,
			   e->off_blocked);
		if (e->off_tracer)
			buf_printf(out, ",\"by_calltrace\":%" PRIu64, e->off_tracer);
		buf_cstr(out, "}");
	}
	/* the goroutine's outermost calls say who made it, and where */
	if (c->depth == 0 && ct_origin_shown(c->origin)) {
		const struct ct_goroutine_origin *o = c->origin;
		const struct ct_pcpos *pos = o->pc ? ct_trace_pcpos(jc->t, o->site, o->pid, o->pc) : NULL;
		buf_printf(out, ",\"created_by\":{\"goid\":%" PRIu64, o->parent);
		if (pos) {
			buf_cstr(out, ",\"func\":");
			ct_buf_json_string(out, pos->func, strlen(pos->func));
			buf_cstr(out, ",\"file\":");
			ct_buf_json_string(out, pos->file, strlen(pos->file));
			buf_printf(out, ",\"line\":%u", pos->line);
		}
		buf_cstr(out, "}");
	}
	/* another stack the thread switched to (a coroutine): its own sequence */
	if (c->context) {
		buf_cstr(out, ",\"context\":");
		buf_dec(out, c->context);
	}
	size_t at = out->n;
	buf_cstr(out, ",\"args\":");
	if (!ct_values_args_out(jc->vals, c, true, out))
		out->n = at;
	/* results: shown whenever the exit site captures them, as values or as
	 * unavailable with the reason (never left out) */
	if (e->status == CT_CALL_RETURNED) {
		at = out->n;
		buf_cstr(out, ",\"ret\":");
		if (!ct_values_ret_out(jc->vals, e->exit_site, ret, ret ? e->ret_len : 0, true, out))
			out->n = at;
	}
	buf_cstr(out, "}");
}

void ct_json_lost_object(const struct ct_trace *t, uint64_t ts, uint64_t n, struct ct_buf *out)
{
	buf_printf(out, "{\"ts\":%" PRIu64 ",\"lost\":%" PRIu64 "}", ct_rel_ts(t, ts), n);
}

struct json {
	struct ct_trace *t;
	FILE *out;
	struct ct_json_calls *calls;
	struct ct_buf block; /* whole lines not written yet */
};

/* Lines go out in blocks of about this many bytes: an fwrite per line was
 * 5% of replay --format=json. */
#define JSON_BLOCK (64 << 10)

static void line_done(struct json *j)
{
	buf_put(&j->block, "\n", 1);
	if (j->block.n >= JSON_BLOCK) {
		ct_fwrite_direct(j->out, j->block.p, j->block.n);
		j->block.n = 0;
	}
}

static void on_call_enter(void *ctx, const struct ct_call *c)
{
	struct json *j = ctx;
	ct_json_call_object(j->calls, c, &j->block);
	line_done(j);
}

static void on_lost(void *ctx, uint64_t ts, uint64_t n)
{
	struct json *j = ctx;
	ct_json_lost_object(j->t, ts, n, &j->block);
	line_done(j);
}

int ct_render_json(struct ct_trace *t, const struct ct_render_opts *o)
{
	struct json j = {t, o->out, ct_json_calls_new(t), {0}};
	struct ct_recon_ops ops = {on_call_enter, NULL, on_lost, NULL};
	ct_json_calls_run(j.calls, o->filter, &ops, &j);
	if (j.block.n)
		ct_fwrite_direct(j.out, j.block.p, j.block.n);
	ct_json_calls_free(j.calls);
	buf_free(&j.block);
	return 0;
}
