/* The uftrace-style call tree:
 *
 *   # DURATION     TID     GID   FUNCTION
 *               [  4242]      1 | main.main() {
 *      1.234 us [  4242]      1 |   main.add();
 *      5.678 us [  4242]      1 | } // main.main
 *
 * Default: grouped, each goroutine/thread's calls together (in order of
 * first appearance), which reads like a program listing.  --merge: every
 * line in time order, goroutines interleaved.
 *
 * A call whose next event is its own return prints as one line ("f();").
 * To know that, each goroutine's newest entry is held back until that
 * goroutine's next event; merged, a "{" line may so come a little after
 * lines of other goroutines that happened later (its duration is blank).
 *
 * Grouping keeps bounded memory: each group buffers a few KiB of text and
 * spills it to an unlinked temp file; the groups are copied out at the end. */
#include "render/render.h"
#include "render/values.h"
#include "util/files.h"
#include "util/util.h"

#include <string.h>
#include <unistd.h>

#define C_RESET "\033[0m"
#define C_YELLOW "\033[33m"
#define C_RED "\033[31m"
#define C_MAGENTA "\033[35m"
#define GROUP_SPILL 4096
/* Indentation stops at this many levels (a 100,000-deep recursion printed
 * 20 GB of spaces); deeper lines say their depth: "[depth 1234] f() {". */
#define MAX_INDENT 128

/* A spilled block in the temp file: this header, then LEN bytes of one
 * group's text.  A group's blocks are chained through NEXT in the file
 * itself, so memory holds two offsets per group however long the trace
 * (a vector of segments grew by 16 bytes per 4 KiB of text). */
struct block_hdr {
	uint64_t next; /* offset of the group's next block, or NO_BLOCK */
	uint64_t len;
};
#define NO_BLOCK UINT64_MAX

/* A group's buffered and spilled lines: a kind byte (LINE_TEXT or
 * LINE_PACKED, and the LINE_* flags), the text's length (a varint), then
 * for LINE_PACKED the prefix's numbers (varints: tid and goid if
 * LINE_IDS, depth, the duration if LINE_DUR, the function whose name
 * begins the text if LINE_FUNC or ends it if LINE_NAME_END), then the
 * text (for LINE_TEXT the whole line); no newline.  The prefix is ~60% of
 * a line's bytes (blank durations, indentation): packed, a 5.8 M-event
 * replay wrote 537 MB to its temp file and read them back, 193 MB packed;
 * with a varint length and the ids only where they change from the
 * group's previous packed line (a goroutine mostly stays on one thread),
 * 144 MB; with the function's number for its name, 114 MB; for the name
 * that ends a closing line too, 86 MB. */
enum {
	LINE_TEXT = 1, LINE_PACKED = 2, LINE_DUR = 4, LINE_IDS = 8, LINE_FUNC = 16, LINE_BELOW = 32, LINE_AT_MOST = 64,
	/* the line ends with the comment that names its function: a closing
	 * line's, made from the function's number (in LINE_FUNC's place), not
	 * kept as text (14 bytes of the 29 of a fib's closing line) */
	LINE_NAME_END = 128,
};
#define LINE_NOTATION (LINE_BELOW | LINE_AT_MOST)

/* The numbers of a LINE_PACKED line's prefix. */
struct packed_prefix {
	uint32_t tid;
	uint64_t goid;
	uint32_t depth;
	bool with_dur;
	uint64_t dur;
	bool with_func;
	uint32_t func;
	bool name_end; /* func's name ends the line (LINE_NAME_END) */
	/* how dur is shown: 0 a duration; LINE_BELOW what one is below
	 * ("< N"); LINE_AT_MOST what an unobserved call lasted at most ("<=N") */
	uint8_t notation;
};

/* A function's name as shown, and its length. */
struct func_name {
	const char *s;
	size_t n;
};

struct group {
	uint64_t order;  /* first appearance */
	struct ct_call pend;
	struct ct_buf pend_bytes; /* its arguments' copy, then its spilled ones' */
	bool pend_valid;
	struct ct_buf text;
	uint64_t first, last; /* its spilled blocks (NO_BLOCK: none yet) */
	uint32_t open;   /* frames currently open */
	/* the ids of its last LINE_PACKED line (ids_set: there was one) */
	uint32_t ids_tid;
	uint64_t ids_goid;
	bool ids_set;
};

struct tree {
	struct ct_trace *t;
	const struct ct_render_opts *o;
	bool go;
	struct ct_map groups; /* thread key -> struct group * */
	uint64_t ngroups;
	struct ct_recent recent; /* the groups of the last lines: consecutive
				    lines are mostly of one or two threads */
	uint32_t ids_tid;     /* the " [  tid]   goid | " text of ... */
	uint64_t ids_goid;
	struct ct_buf ids;    /* ... these (empty: none yet) */
	FILE *spill;
	uint64_t spill_pos; /* end of the spill file */
	/* its last bytes, from offset PENDING_AT on, not written yet: blocks
	 * go out together (a write, and a link patch, per 4 KiB block were
	 * 387k system calls for a 5.8 M-event trace) */
	struct ct_buf pending;
	uint64_t pending_at;
	bool spill_error;   /* a write failed (disk full?): the output lacks text */
	struct ct_buf line;
	bool packed;       /* the line's prefix is not in it, but these numbers: */
	struct packed_prefix pp;
	struct ct_values *vals;
	struct ct_map announced; /* merged: goroutines whose origin was shown */
	/* lines going out, written in blocks of OUT_WRITE (a stdio call per
	 * line was ~3% of replay) */
	struct ct_buf out;
	/* the functions' names by number, found once (NULL: not yet); not
	 * live, where the tables grow */
	struct func_name *names;
	size_t nnames;
	/* a "< N" or a "<=N" duration was shown: a note at the end says what
	 * it means (the header is out before any call is known) */
	bool shown_below, shown_at_most;
};

#define OUT_WRITE (64 * 1024)

static void out_flush(struct tree *tr)
{
	if (tr->out.n)
		ct_fwrite_direct(tr->o->out, tr->out.p, tr->out.n);
	tr->out.n = 0;
}

/* Appends function FUNC's name to B. */
static void put_func_name(struct tree *tr, struct ct_buf *b, uint32_t func)
{
	if (!tr->names || func >= tr->nnames) {
		buf_cstr(b, ct_func_name(tr->t, func));
		return;
	}
	struct func_name *fn = &tr->names[func];
	if (!fn->s) {
		fn->s = ct_func_name(tr->t, func);
		fn->n = strlen(fn->s);
	}
	buf_put(b, fn->s, fn->n);
}


#define SPILL_WRITE (1 << 20)

/* The spill file's pending bytes, written. */
static void spill_flush(struct tree *tr)
{
	if (tr->pending.n &&
	    pwrite(fileno(tr->spill), tr->pending.p, tr->pending.n, (off_t)tr->pending_at) != (ssize_t)tr->pending.n)
		tr->spill_error = true;
	tr->pending_at += tr->pending.n;
	tr->pending.n = 0;
}

static void spill(struct tree *tr, struct group *g)
{
	if (!g->text.n)
		return;
	/* pwrite, not stdio: the previous block's link is patched in place
	 * (in the pending bytes, or in the file) */
	struct block_hdr h = {NO_BLOCK, g->text.n};
	uint64_t at = tr->spill_pos;
	buf_put(&tr->pending, &h, sizeof(h));
	buf_put(&tr->pending, g->text.p, g->text.n);
	if (g->last != NO_BLOCK && g->last >= tr->pending_at)
		memcpy(tr->pending.p + (g->last - tr->pending_at), &at, sizeof(at));
	else if (g->last != NO_BLOCK && pwrite(fileno(tr->spill), &at, sizeof(at), (off_t)g->last) != sizeof(at))
		tr->spill_error = true;
	tr->spill_pos += sizeof(h) + g->text.n;
	if (tr->pending.n >= SPILL_WRITE)
		spill_flush(tr);
	if (g->last == NO_BLOCK)
		g->first = at;
	g->last = at;
	g->text.n = 0;
}

/* Ends the line being built and sends it to G's text (or straight out: the
 * first goroutine/thread is printed first anyway, so it needs no buffer). */
static void emit(struct tree *tr, struct group *g)
{
	if (!g || g->order == 0) {
		buf_put(&tr->out, tr->line.p, tr->line.n);
		buf_put(&tr->out, "\n", 1);
		if (tr->out.n >= OUT_WRITE)
			out_flush(tr);
	} else {
		struct ct_buf *b = &g->text;
		if (tr->packed) {
			const struct packed_prefix *pp = &tr->pp;
			bool ids = !g->ids_set || g->ids_tid != pp->tid || g->ids_goid != pp->goid;
			buf_u8(b, LINE_PACKED | (pp->with_dur ? LINE_DUR : 0) | (ids ? LINE_IDS : 0) |
				      (pp->with_func ? LINE_FUNC : 0) | (pp->name_end ? LINE_NAME_END : 0) | pp->notation);
			buf_uvar(b, tr->line.n);
			if (ids) {
				buf_uvar(b, pp->tid);
				buf_uvar(b, pp->goid);
				g->ids_tid = pp->tid;
				g->ids_goid = pp->goid;
				g->ids_set = true;
			}
			buf_uvar(b, pp->depth);
			if (pp->with_dur)
				buf_uvar(b, pp->dur);
			if (pp->with_func || pp->name_end)
				buf_uvar(b, pp->func);
		} else {
			buf_u8(b, LINE_TEXT);
			buf_uvar(b, tr->line.n);
		}
		buf_put(b, tr->line.p, tr->line.n);
		if (b->n >= GROUP_SPILL)
			spill(tr, g);
	}
	tr->line.n = 0;
	tr->packed = false;
}

static const char *dur_color(const struct tree *tr, uint64_t ns)
{
	if (!tr->o->color)
		return "";
	return ns >= 1000000000ULL ? C_RED : ns >= 1000000ULL ? C_YELLOW : "";
}

/* A line's " 1.234 us [  tid]   goid |     " part, into B (NOTATION
 * LINE_BELOW: "< 1.234 us", a duration DUR is below; LINE_AT_MOST:
 * "<=1.234 us", at most DUR, not colored: no duration was measured). */
static void prefix_text(struct tree *tr, struct ct_buf *b, uint32_t tid, uint64_t goid, uint32_t depth, bool with_dur,
			uint64_t dur, uint8_t notation)
{
	if (with_dur && notation == LINE_AT_MOST) {
		ct_buf_duration_at_most(b, dur);
		tr->shown_at_most = true;
	} else if (with_dur) {
		const char *col = dur_color(tr, dur);
		buf_put(b, " ", 1);
		if (*col)
			buf_cstr(b, col);
		if (notation == LINE_BELOW) {
			ct_buf_duration_below(b, dur);
			tr->shown_below = true;
		} else
			ct_buf_duration(b, dur);
		if (*col)
			buf_cstr(b, C_RESET);
	} else {
		buf_spaces(b, 11);
	}
	if (!tr->ids.n || tr->ids_tid != tid || tr->ids_goid != goid) {
		struct ct_buf *t = &tr->ids;
		t->n = 0;
		buf_put(t, " [", 2);
		buf_dec_pad(t, tid, 6);
		buf_put(t, "]", 1);
		if (tr->go) {
			if (goid) {
				buf_put(t, " ", 1);
				buf_dec_pad(t, goid, 6);
			} else {
				buf_put(t, "      -", 7);
			}
		}
		buf_put(t, " | ", 3);
		tr->ids_tid = tid;
		tr->ids_goid = goid;
	}
	buf_put(b, tr->ids.p, tr->ids.n);
	if (depth <= MAX_INDENT) {
		buf_spaces(b, 2 * (size_t)depth);
	} else {
		buf_spaces(b, 2 * MAX_INDENT);
		buf_put(b, "[depth ", 7);
		buf_dec(b, depth);
		buf_put(b, "] ", 2);
	}
}

/* The start of a line of C's: as text if it goes out now (OUT NULL, or the
 * first group), else as the numbers its text is made of (LINE_PACKED),
 * made text when the group is copied out. */
static void prefix(struct tree *tr, struct group *out, const struct ct_call *c, uint32_t tid, bool with_dur,
		   uint64_t dur, uint8_t notation)
{
	if (!out || out->order == 0) {
		prefix_text(tr, &tr->line, tid, c->goid, c->depth, with_dur, dur, notation);
		return;
	}
	tr->packed = true;
	tr->pp = (struct packed_prefix){tid, c->goid, c->depth, with_dur, dur, false, 0, false, notation};
}

/* A group's buffered lines (emit's encoding: P, N bytes of whole lines)
 * as text, into OUT.  *IDS: the ids of the group's packed line before
 * them, updated (zero before its first). */
static void unpack_lines(struct tree *tr, const uint8_t *p, size_t n, struct packed_prefix *ids, struct ct_buf *out)
{
	struct ct_rd r = ct_rd_of(p, n);
	while (r.p < r.end) {
		uint8_t kind = rd_u8(&r);
		uint64_t len = rd_uvar(&r);
		uint32_t func = 0;
		if (kind & LINE_PACKED) {
			if (kind & LINE_IDS) {
				ids->tid = (uint32_t)rd_uvar(&r);
				ids->goid = rd_uvar(&r);
			}
			uint32_t depth = (uint32_t)rd_uvar(&r);
			uint64_t dur = kind & LINE_DUR ? rd_uvar(&r) : 0;
			func = kind & (LINE_FUNC | LINE_NAME_END) ? (uint32_t)rd_uvar(&r) : 0;
			if (r.bad)
				return;
			prefix_text(tr, out, ids->tid, ids->goid, depth, kind & LINE_DUR, dur, kind & LINE_NOTATION);
			if (kind & LINE_FUNC)
				put_func_name(tr, out, func);
		}
		if (r.bad || (uint64_t)(r.end - r.p) < len)
			return; /* (not written by emit: a failed spill read) */
		buf_put(out, r.p, (size_t)len);
		if ((kind & LINE_PACKED) && (kind & LINE_NAME_END)) {
			buf_put(out, " /* ", 4);
			put_func_name(tr, out, func);
			buf_put(out, " */", 3);
		}
		buf_put(out, "\n", 1);
		r.p += len;
	}
}

static const char *status_note(const struct ct_call *c)
{
	switch (c->status) {
	case CT_CALL_UNWOUND:
		return "unwound";
	case CT_CALL_UNFINISHED:
		return "unfinished";
	case CT_CALL_LOST:
		return "end lost: events were lost";
	case CT_CALL_EXITED:
		return "exited";
	case CT_CALL_UNOBSERVED:
		return "end not observed: it returns where no probe is";
	default:
		return NULL;
	}
}

/* "name(a=1, b=\"x\")" */
static void call_text(struct tree *tr, const struct ct_call *c)
{
	if (tr->packed && !tr->line.n) {
		/* its number in the line's prefix: the name when it goes out */
		tr->pp.with_func = true;
		tr->pp.func = c->func;
	} else {
		put_func_name(tr, &tr->line, c->func);
	}
	buf_put(&tr->line, "(", 1);
	ct_values_args_out(tr->vals, c, false, &tr->line);
	buf_put(&tr->line, ")", 1);
}

/* " = 42" (nothing for a call whose results are not captured); whether it
 * printed */
static bool ret_text(struct tree *tr, const struct ct_call *c)
{
	if (c->status != CT_CALL_RETURNED)
		return false;
	size_t at = tr->line.n;
	buf_put(&tr->line, " = ", 3);
	if (ct_values_ret_out(tr->vals, c->exit_site, c->ret, c->ret_len, false, &tr->line))
		return true;
	tr->line.n = at;
	return false;
}

static void print_open(struct tree *tr, struct group *out, const struct ct_call *c)
{
	prefix(tr, out, c, c->tid, false, 0, 0);
	call_text(tr, c);
	buf_cstr(&tr->line, c->tail ? " { /* tail call */" : " {");
	emit(tr, out);
}

static void print_close(struct tree *tr, struct group *out, const struct ct_call *c, bool leaf)
{
	const char *note = status_note(c);
	bool returned = c->status == CT_CALL_RETURNED;
	uint64_t dur = c->ts_exit - c->ts_entry, below = returned ? ct_dur_below(dur, c->raw_exit - c->raw_entry) : 0;
	/* an unobserved call that a later event showed over: at most until
	 * that event (its note still says the end was not observed) */
	bool at_most = c->status == CT_CALL_UNOBSERVED && c->end_bound;
	if (at_most)
		dur = ct_dur_max(dur, c->raw_exit - c->raw_entry);
	prefix(tr, out, c, c->exit_tid, returned || at_most, below ? below : dur,
	       at_most ? LINE_AT_MOST : below ? LINE_BELOW : 0);
	const char *on = note && tr->o->color ? C_MAGENTA : "", *off = note && tr->o->color ? C_RESET : "";
	bool off_cpu = c->off_preempted || c->off_blocked;
	if (leaf) {
		call_text(tr, c);
		ret_text(tr, c);
		buf_put(&tr->line, ";", 1);
		if (note || c->tail || off_cpu) {
			buf_printf(&tr->line, " %s/* %s%s%s", on, c->tail ? "tail call" : "", c->tail && note ? ", " : "",
				   note ? note : "");
			if (off_cpu && (note || c->tail))
				buf_put(&tr->line, "; ", 2);
			ct_buf_off_cpu(&tr->line, c);
			buf_printf(&tr->line, " */%s", off);
		}
	} else {
		buf_put(&tr->line, "}", 1);
		if (ret_text(tr, c))
			buf_put(&tr->line, ";", 1);
		if (tr->packed && !note && !*on && !off_cpu) {
			/* its name's comment made when it goes out */
			tr->pp.name_end = true;
			tr->pp.func = c->func;
			emit(tr, out);
			return;
		}
		buf_put(&tr->line, " ", 1);
		if (*on)
			buf_cstr(&tr->line, on);
		buf_put(&tr->line, "/* ", 3);
		put_func_name(tr, &tr->line, c->func);
		if (note) {
			buf_put(&tr->line, ": ", 2);
			buf_cstr(&tr->line, note);
		}
		if (off_cpu) {
			buf_put(&tr->line, "; ", 2);
			ct_buf_off_cpu(&tr->line, c);
		}
		buf_put(&tr->line, " */", 3);
		if (*off) /* (a strlen call a line, for none mostly) */
			buf_cstr(&tr->line, off);
	}
	emit(tr, out);
}

/* A goroutine's first line: "# goroutine 19, created by main.main at
 * main.go:42 in goroutine 1" -- grouped, at the top of its block; merged, at
 * its first call, once, when its creator is known.  A C thread's other
 * stack (a coroutine) is introduced as such. */
static void announce(struct tree *tr, struct group *g, const struct ct_call *c)
{
	if (c->context && !c->goid) {
		/* a block of its own: another stack a C thread switched to */
		if (!tr->o->merge && g->order) {
			buf_printf(&tr->line, "/* thread %u, context %u: another stack it switched to (a coroutine) */",
				   c->tid, c->context);
			emit(tr, g);
		}
		return;
	}
	if (!tr->go || !c->goid || c->sysstack)
		return;
	bool shown = ct_origin_shown(c->origin);
	if (tr->o->merge) {
		if (!shown || map_get(&tr->announced, ct_call_thread_key(c)))
			return;
		map_put(&tr->announced, ct_call_thread_key(c), (void *)1);
	}
	buf_printf(&tr->line, "# goroutine %llu", (unsigned long long)c->goid);
	if (shown) {
		buf_put(&tr->line, ", ", 2);
		ct_buf_origin(&tr->line, tr->t, c->origin);
	}
	emit(tr, tr->o->merge ? NULL : g);
}

/* Whose pending entry applies to C, and where its lines go (NULL: straight
 * out, in merged time order). */
static struct group *group_of(struct tree *tr, const struct ct_call *c, struct group **out)
{
	uint64_t k = ct_call_thread_key(c);
	struct group *g = recent_get(&tr->recent, k);
	if (g) {
		*out = tr->o->merge ? NULL : g;
		return g;
	}
	void **slot = map_slot(&tr->groups, k, true);
	if (!*slot) {
		g = xcalloc(1, sizeof(*g));
		g->order = tr->ngroups++;
		g->first = g->last = NO_BLOCK;
		*slot = g;
		announce(tr, g, c);
	}
	*out = tr->o->merge ? NULL : *slot;
	recent_put(&tr->recent, k, *slot);
	return *slot;
}

static void free_group(struct group *g)
{
	buf_free(&g->text);
	buf_free(&g->pend_bytes);
	free(g);
}

static void flush_pending(struct tree *tr, struct group *g, struct group *out)
{
	if (g->pend_valid) {
		g->pend_valid = false;
		print_open(tr, out, &g->pend);
	}
}

static void on_call_enter(void *ctx, const struct ct_call *c)
{
	struct tree *tr = ctx;
	struct group *out, *g = group_of(tr, c, &out);
	flush_pending(tr, g, out);
	/* its values are read when its line is made: kept (a callback's call
	 * is valid only during it) */
	g->pend = *c;
	g->pend.ret = NULL;
	g->pend.origin = NULL;
	g->pend_bytes.n = 0;
	buf_put(&g->pend_bytes, c->args, c->args ? c->args_len : 0);
	buf_put(&g->pend_bytes, c->spill, c->spill ? c->spill_len : 0);
	g->pend.args = c->args ? g->pend_bytes.p : NULL;
	g->pend.spill = c->spill ? g->pend_bytes.p + (c->args ? c->args_len : 0) : NULL;
	g->pend_valid = true;
	g->open++;
}

static void on_call_exit(void *ctx, const struct ct_call *c)
{
	struct tree *tr = ctx;
	struct group *out, *g = group_of(tr, c, &out);
	if (g->pend_valid && g->pend.seq == c->seq) {
		g->pend_valid = false;
		print_close(tr, out, c, true);
	} else {
		flush_pending(tr, g, out);
		print_close(tr, out, c, false);
	}
	if (--g->open == 0) {
		if (out) {
			/* A finished tree: its text need not stay in memory. */
			spill(tr, g);
			buf_free(&g->text);
		} else {
			/* merged: nothing of this goroutine is pending */
			recent_forget(&tr->recent, g);
			free_group(g);
			map_del(&tr->groups, ct_call_thread_key(c));
		}
	}
}

static void on_lost(void *ctx, uint64_t ts, uint64_t n)
{
	struct tree *tr = ctx;
	const char *on = tr->o->color ? C_RED : "", *off = tr->o->color ? C_RESET : "";
	if (tr->o->merge) {
		MAP_FOREACH(&tr->groups, i) flush_pending(tr, tr->groups.vals[i], NULL);
		buf_printf(&tr->line, "%s/* LOST %llu events */%s", on, (unsigned long long)n, off);
		emit(tr, NULL);
		return;
	}
	/* Mark the place in every goroutine that had calls open: those are
	 * the trees the loss may have cut. */
	MAP_FOREACH(&tr->groups, i)
	{
		struct group *g = tr->groups.vals[i];
		if (!g->open)
			continue;
		flush_pending(tr, g, g);
		buf_printf(&tr->line, "%s/* LOST %llu events (all goroutines) */%s", on, (unsigned long long)n, off);
		emit(tr, g);
	}
}

/* A group's buffered lines (P, N bytes: none if P is NULL) out as text,
 * made in the output's blocks (through a buffer of their own and then
 * fwrite, the text was copied twice: 3% of replay's instructions). */
static void write_lines(struct tree *tr, const uint8_t *p, size_t n, struct packed_prefix *ids)
{
	if (p)
		unpack_lines(tr, p, n, ids, &tr->out);
	if (tr->out.n >= OUT_WRITE)
		out_flush(tr);
}

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = *(struct group *const *)a, *y = *(struct group *const *)b;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void write_groups(struct tree *tr)
{
	CT_VEC(struct group *) all = {0};
	MAP_FOREACH(&tr->groups, i) CT_VEC_PUSH(all, (struct group *)tr->groups.vals[i]);
	if (all.n)
		qsort(all.v, all.n, sizeof(*all.v), cmp_group);
	struct ct_buf buf = {0};
	if (tr->spill)
		spill_flush(tr);
	out_flush(tr);
	for (size_t i = 0; i < all.n; i++) {
		struct group *g = all.v[i];
		struct packed_prefix ids = {0};
		if (g->order)
			buf_put(&tr->out, "\n", 1); /* group 0 went out while reading */
		for (uint64_t at = g->first; at != NO_BLOCK;) {
			/* a block and its header in one read, mostly (a block is
			 * GROUP_SPILL bytes and the end of a line) */
			struct block_hdr h;
			buf.n = 0;
			buf_reserve(&buf, sizeof(h) + GROUP_SPILL + 1024);
			ssize_t got = pread(fileno(tr->spill), buf.p, sizeof(h) + GROUP_SPILL + 1024, (off_t)at);
			if (got < (ssize_t)sizeof(h))
				break;
			memcpy(&h, buf.p, sizeof(h));
			if ((uint64_t)got < sizeof(h) + h.len) {
				buf_reserve(&buf, sizeof(h) + h.len);
				if (pread(fileno(tr->spill), buf.p + got, sizeof(h) + h.len - (size_t)got, (off_t)at + got) !=
				    (ssize_t)(sizeof(h) + h.len - (size_t)got))
					break;
			}
			write_lines(tr, buf.p + sizeof(h), h.len, &ids);
			at = h.next;
		}
		write_lines(tr, g->text.p, g->text.n, &ids);
		free_group(g);
	}
	buf_free(&buf);
	CT_VEC_FREE(all);
}

int ct_render_tree(struct ct_trace *t, const struct ct_render_opts *o)
{
	struct tree tr;
	memset(&tr, 0, sizeof(tr));
	tr.t = t;
	tr.o = o;
	tr.vals = ct_values_new(t);
	ct_values_memo(tr.vals); /* (not live: its tables grow) */
	tr.go = ct_trace_has_go(t);
	tr.nnames = t->nfuncs;
	tr.names = xcalloc(tr.nnames + 1, sizeof(*tr.names));
	if (!o->merge && !(tr.spill = tmpfile()))
		return ct_fail("cannot create a temporary file (set TMPDIR to a writable directory)");
	fprintf(o->out, "# DURATION     TID%s   FUNCTION\n", tr.go ? "      GID" : "");
	ct_costs_note(o->out, t);
	struct ct_recon_ops ops = {on_call_enter, on_call_exit, on_lost, NULL};
	struct ct_recon_stats st = ct_filter_run(t, o->filter, &ops, &tr);
	if (o->merge) {
		MAP_FOREACH(&tr.groups, i) free_group(tr.groups.vals[i]);
	} else {
		write_groups(&tr);
	}
	out_flush(&tr);
	ct_bounds_note(o->out, tr.shown_below, tr.shown_at_most);
	buf_free(&tr.out);
	free(tr.names);
	map_free(&tr.groups);
	map_free(&tr.announced);
	buf_free(&tr.line);
	buf_free(&tr.ids);
	buf_free(&tr.pending);
	ct_values_free(tr.vals);
	if (tr.spill)
		fclose(tr.spill);
	if (t->truncated)
		fprintf(o->out, "/* the record file ends early (" CT_TRUNCATED_WHY "): %llu events replayed */\n",
			(unsigned long long)st.events);
	if (tr.spill_error)
		return ct_fail("writing a temporary file failed: the tree is incomplete (set TMPDIR to a disk with room)");
	return 0;
}

/* ---- live view: the same tree, fed event by event while recording ---- */

struct ct_tree_live {
	struct tree tr;
	struct ct_recon *r;
};

struct ct_tree_live *ct_tree_live_new(struct ct_trace *t, const struct ct_render_opts *o)
{
	struct ct_tree_live *l = xcalloc(1, sizeof(*l));
	l->tr.t = t;
	l->tr.o = o; /* o->merge must be set: lines go out as they happen */
	l->tr.vals = ct_values_new(t);
	l->tr.go = ct_trace_has_go(t); /* the tables written so far: the first program's */
	fprintf(o->out, "# DURATION     TID%s   FUNCTION\n", l->tr.go ? "      GID" : "");
	ct_costs_note(o->out, t);
	static const struct ct_recon_ops ops = {on_call_enter, on_call_exit, on_lost, NULL};
	l->r = ct_recon_for_trace(t, &ops, &l->tr);
	return l;
}

void ct_tree_live_event(struct ct_tree_live *l, const struct ct_rec_event *ev)
{
	ct_recon_set_sites(l->r, l->tr.t->sites, l->tr.t->nsites); /* may have grown (--follow) */
	ct_recon_set_funcs(l->r, l->tr.t->funcs, l->tr.t->nfuncs);
	ct_recon_event(l->r, ev);
	out_flush(&l->tr); /* live: each line as it happens */
}

void ct_tree_live_finish(struct ct_tree_live *l, uint64_t end_ts)
{
	/* (tables read after the last event moved them: the calls still
	 * open are reported with them) */
	ct_recon_set_sites(l->r, l->tr.t->sites, l->tr.t->nsites);
	ct_recon_set_funcs(l->r, l->tr.t->funcs, l->tr.t->nfuncs);
	ct_recon_finish(l->r, end_ts);
	out_flush(&l->tr);
	ct_bounds_note(l->tr.o->out, l->tr.shown_below, l->tr.shown_at_most);
	buf_free(&l->tr.out);
	MAP_FOREACH(&l->tr.groups, i) free_group(l->tr.groups.vals[i]);
	map_free(&l->tr.groups);
	map_free(&l->tr.announced);
	fflush(l->tr.o->out);
	ct_recon_free(l->r);
	buf_free(&l->tr.line);
	buf_free(&l->tr.ids);
	ct_values_free(l->tr.vals);
	free(l);
}
