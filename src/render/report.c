/* report: per-function statistics of a trace, in one streaming pass.
 *
 * Only calls that returned have a duration.  Calls that were unwound (panic,
 * Goexit, longjmp), still running at the end, or ended with their thread or
 * process (exit, a fatal signal, exec) are counted on their own and
 * left out of every duration figure, never counted as 0.
 *
 * Self time is a call's duration minus the durations of its shown children
 * that returned (hidden, filtered-out, untraced and unwound children count
 * as the caller's own time) -- wherever they ran: C that a goroutine calls
 * through cgo runs on its thread's system stack, a stack of its own, yet
 * inside the goroutine's innermost open call (ct_call_nest_key), as graph
 * and the flame graphs nest it.  A tail-called function is nested in the
 * caller that jumped to it and both end at the same return, so the caller's
 * self time is the time before the jump and its total includes the callee,
 * exactly as for an ordinary call: self times add up to the roots' totals.
 * Total time sums each call's duration, so a recursive function's nested
 * calls count once per level (as in uftrace).
 *
 * Percentiles come from a log-linear histogram per function (HDR-style): 128
 * sub-buckets per power of two, exact below 128 ns.  A percentile is the
 * nearest-rank value (the smallest duration with at least p% of the calls at
 * or below it), reported as the middle of its bucket and clamped to the exact
 * min/max: at most 1/256 (0.4%) from the exact value.  Memory is one
 * histogram chunk of 1 KiB per power of two a function's durations span, so
 * it grows with the number of functions, not the trace length.
 *
 * The hot path is the exit callback: no allocation, no strings; child time
 * is kept in one array of open frames per goroutine/thread (its system
 * stack's calls among its own), pushed at entry. */
#include "render/report.h"
#include "render/values.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#define SUB_BITS CT_HIST_SUB_BITS
#define SUBS (1u << SUB_BITS)          /* sub-buckets per power of two */
#define CHUNKS CT_HIST_CHUNKS          /* chunk 0: [0,128); chunk c: [2^(c+6), 2^(c+7)) */


/* What the shown children that returned so far of an open frame took, what
 * the correction took out of them, and their time off CPU. */
struct kids {
	uint64_t dur, taken, off;
};

/* An open frame: its call, and its children's time so far. */
struct oframe {
	uint64_t seq;
	struct kids kids;
};

/* The open frames of one goroutine/thread (ct_call_nest_key), in entry
 * order. */
struct tstack {
	CT_VEC(struct oframe) f;
};

struct report {
	struct ct_trace *t;
	struct ct_func_stats **by_func; /* nfuncs + 1 (the last: unknown ids) */
	size_t nfuncs;
	uint32_t *alias;        /* by_name: function id -> first id of its name */
	struct ct_map threads;  /* thread key -> struct tstack */
	size_t sweep_at;        /* drop idle stacks when this many exist */
	uint64_t last_key;      /* one-entry cache: consecutive calls mostly */
	struct tstack *last;    /* come from the same goroutine */
	uint64_t lost;
};

static void hist_add(struct ct_func_stats *f, uint64_t v)
{
	unsigned c, sub;
	if (v < SUBS) {
		c = 0;
		sub = (unsigned)v;
	} else {
		unsigned bit = 63u - (unsigned)__builtin_clzll(v); /* >= SUB_BITS */
		c = bit - SUB_BITS + 1;
		sub = (unsigned)(v >> (bit - SUB_BITS)) & (SUBS - 1);
	}
	if (!f->chunk[c])
		f->chunk[c] = xcalloc(SUBS, sizeof(uint64_t));
	f->chunk[c][sub]++;
}

/* The range [lo, lo + width) of bucket SUB of chunk C. */
static uint64_t bucket_lo(unsigned c, unsigned sub, uint64_t *width)
{
	if (c == 0) {
		*width = 1;
		return sub;
	}
	unsigned shift = c - 1;
	*width = 1ULL << shift;
	return (uint64_t)(SUBS + sub) << shift;
}

/* Nearest-rank percentile P (0 < P <= 100) of F's returned calls. */
static uint64_t percentile(const struct ct_func_stats *f, unsigned p)
{
	/* rank = ceil(p/100 * n), at least 1 */
	uint64_t rank = (f->returned / 100) * p + ((f->returned % 100) * p + 99) / 100;
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned c = 0; c < CHUNKS; c++) {
		if (!f->chunk[c])
			continue;
		for (unsigned s = 0; s < SUBS; s++) {
			seen += f->chunk[c][s];
			if (seen >= rank) {
				uint64_t width, lo = bucket_lo(c, s, &width);
				uint64_t v = lo + (width - 1) / 2;
				return v < f->min ? f->min : v > f->max ? f->max : v;
			}
		}
	}
	return f->max;
}

static struct tstack *thread_of(struct report *R, const struct ct_call *c)
{
	uint64_t k = ct_call_nest_key(c);
	if (R->last && R->last_key == k)
		return R->last;
	void **slot = map_slot(&R->threads, k, false);
	if (!slot) {
		/* Goroutines come and go: before growing, forget the stacks of
		 * goroutines/threads with nothing open (they restart at 0). */
		if (R->threads.n >= R->sweep_at) {
			CT_VEC(uint64_t) idle = {0};
			MAP_FOREACH(&R->threads, i)
			if (!((struct tstack *)R->threads.vals[i])->f.n)
				CT_VEC_PUSH(idle, R->threads.keys[i]);
			for (size_t i = 0; i < idle.n; i++) {
				struct tstack *s = map_get(&R->threads, idle.v[i]);
				CT_VEC_FREE(s->f);
				free(s);
				map_del(&R->threads, idle.v[i]);
			}
			CT_VEC_FREE(idle);
			R->sweep_at = R->threads.n * 2 > 1024 ? R->threads.n * 2 : 1024;
		}
		slot = map_slot(&R->threads, k, true);
		*slot = xcalloc(1, sizeof(struct tstack));
	}
	R->last_key = k;
	R->last = *slot;
	return R->last;
}

/* The duration every figure of report and report --diff is made of: the
 * one place where overhead-corrected durations (issue 13) are to come in. */
static uint64_t call_duration(const struct ct_call *c)
{
	return c->ts_exit > c->ts_entry ? c->ts_exit - c->ts_entry : 0;
}

static void on_call_enter(void *ctx, const struct ct_call *c)
{
	struct report *R = ctx;
	struct tstack *s = thread_of(R, c);
	struct oframe fr = {c->seq, {0, 0, 0}};
	CT_VEC_PUSH(s->f, fr);
}

static void on_call_exit(void *ctx, const struct ct_call *c)
{
	struct report *R = ctx;
	size_t fi = c->func < R->nfuncs ? (R->alias ? R->alias[c->func] : c->func) : R->nfuncs;
	struct ct_func_stats *f = R->by_func[fi];
	if (!f) {
		f = R->by_func[fi] = xcalloc(1, sizeof(*f));
		f->func = (uint32_t)fi == R->nfuncs ? c->func : (uint32_t)fi;
		f->min = UINT64_MAX;
	}
	struct tstack *s = thread_of(R, c);
	struct kids kids = {0, 0, 0};
	struct kids *parent = NULL;
	if (s->f.n) {
		struct oframe fr;
		size_t at;
		CT_VEC_TAKE_SEQ(s->f, c->seq, fr, at);
		kids = fr.kids;
		parent = at ? &s->f.v[at - 1].kids : NULL;
	}
	if (c->status != CT_CALL_RETURNED) {
		if (c->status == CT_CALL_UNWOUND)
			f->unwound++;
		else if (c->status == CT_CALL_LOST)
			f->lost++;
		else if (c->status == CT_CALL_EXITED)
			f->exited++;
		else if (c->status == CT_CALL_UNOBSERVED)
			f->unobserved++;
		else
			f->unfinished++;
		return;
	}
	uint64_t dur = call_duration(c);
	uint64_t raw = c->raw_exit > c->raw_entry ? c->raw_exit - c->raw_entry : 0;
	uint64_t taken = raw > dur ? raw - dur : 0;
	uint64_t off = c->off_preempted + c->off_blocked;
	if (parent) {
		parent->dur += dur;
		parent->taken += taken;
		parent->off += off;
	}
	f->returned++;
	f->total += dur;
	f->self += dur > kids.dur ? dur - kids.dur : 0;
	f->taken_out += taken;
	/* (what was taken out between its children: their own hits and
	 * those inside them are theirs) */
	f->self_taken_out += taken > kids.taken ? taken - kids.taken : 0;
	f->off_cpu += off;
	f->self_off_cpu += off > kids.off ? off - kids.off : 0;
	if (dur < f->min)
		f->min = dur;
	if (dur > f->max)
		f->max = dur;
	hist_add(f, dur);
}

static void on_lost(void *ctx, uint64_t ts, uint64_t n)
{
	struct report *R = ctx;
	R->lost += n;
}

/* ---- sorting ---- */

static const struct {
	const char *name;
	enum ct_report_sort key;
} sort_keys[] = {
	{"total", CT_SORT_TOTAL}, {"self", CT_SORT_SELF}, {"calls", CT_SORT_CALLS},
	{"avg", CT_SORT_AVG},     {"min", CT_SORT_MIN},   {"max", CT_SORT_MAX},
	{"p50", CT_SORT_P50},     {"p99", CT_SORT_P99},   {"func", CT_SORT_FUNC},
	{"off", CT_SORT_OFF},     {"self_off", CT_SORT_SELF_OFF},
};

bool ct_report_sort_parse(const char *s, enum ct_report_sort *out)
{
	for (size_t i = 0; i < sizeof(sort_keys) / sizeof(*sort_keys); i++)
		if (!strcmp(s, sort_keys[i].name)) {
			*out = sort_keys[i].key;
			return true;
		}
	return false;
}

static const struct ct_trace *sort_trace; /* qsort has no context argument */
static enum ct_report_sort sort_key;

/* Larger first; functions without a returned call (no durations) last. */
static int cmp_desc(const struct ct_func_stats *a, const struct ct_func_stats *b, uint64_t va, uint64_t vb, bool need_dur)
{
	if (need_dur && (!a->returned) != (!b->returned))
		return a->returned ? -1 : 1;
	return va > vb ? -1 : va < vb ? 1 : 0;
}

static int cmp_fstat(const void *pa, const void *pb)
{
	const struct ct_func_stats *a = *(const struct ct_func_stats *const *)pa, *b = *(const struct ct_func_stats *const *)pb;
	int r = 0;
	switch (sort_key) {
	case CT_SORT_TOTAL: r = cmp_desc(a, b, a->total, b->total, true); break;
	case CT_SORT_SELF: r = cmp_desc(a, b, a->self, b->self, true); break;
	case CT_SORT_CALLS: r = cmp_desc(a, b, ct_func_calls(a), ct_func_calls(b), false); break;
	case CT_SORT_AVG: r = cmp_desc(a, b, ct_func_avg(a), ct_func_avg(b), true); break;
	case CT_SORT_MIN: r = cmp_desc(a, b, a->min, b->min, true); break;
	case CT_SORT_MAX: r = cmp_desc(a, b, a->max, b->max, true); break;
	case CT_SORT_P50: r = cmp_desc(a, b, a->p50, b->p50, true); break;
	case CT_SORT_P99: r = cmp_desc(a, b, a->p99, b->p99, true); break;
	case CT_SORT_OFF: r = cmp_desc(a, b, a->off_cpu, b->off_cpu, true); break;
	case CT_SORT_SELF_OFF: r = cmp_desc(a, b, a->self_off_cpu, b->self_off_cpu, true); break;
	case CT_SORT_FUNC: break;
	}
	if (r)
		return r;
	r = strcmp(ct_func_name(sort_trace, a->func), ct_func_name(sort_trace, b->func));
	if (r)
		return r;
	return a->func < b->func ? -1 : a->func > b->func;
}

/* ---- output ---- */

/* Log2 buckets of the latency histogram: [0,1), [1,2), [2,4), ... */
#define LOG2_BUCKETS 65

/* Counts per log2 bucket; *FIRST..*LAST: the non-empty range (empty when
 * *FIRST > *LAST). */
static void log2_hist(const struct ct_func_stats *f, uint64_t counts[LOG2_BUCKETS], unsigned *first, unsigned *last)
{
	memset(counts, 0, LOG2_BUCKETS * sizeof(uint64_t));
	*first = 1;
	*last = 0;
	for (unsigned c = 0; c < CHUNKS; c++) {
		if (!f->chunk[c])
			continue;
		for (unsigned s = 0; s < SUBS; s++) {
			if (!f->chunk[c][s])
				continue;
			/* every fine bucket lies inside one power of two */
			uint64_t width, lo = bucket_lo(c, s, &width);
			unsigned b = lo ? 64u - (unsigned)__builtin_clzll(lo) : 0;
			if (*first > *last)
				*first = b;
			*last = b;
			counts[b] += f->chunk[c][s];
		}
	}
}

static uint64_t log2_lo(unsigned b)
{
	return b ? 1ULL << (b - 1) : 0;
}

static uint64_t log2_hi(unsigned b)
{
	return b < 64 ? 1ULL << b : UINT64_MAX;
}

static bool wants_histogram(const struct report *R, const struct ct_report_opts *o, const struct ct_func_stats *f)
{
	if (f->func >= R->t->nfuncs)
		return false;
	for (size_t i = 0; i < o->nhistogram; i++)
		if (ct_names_match(&R->t->func_names[f->func], R->t->funcs[f->func].name, o->histogram[i]))
			return true;
	return false;
}


static void json_u64_or_null(struct ct_buf *b, const char *key, bool known, uint64_t v)
{
	if (known)
		buf_printf(b, ",\"%s\":%" PRIu64, key, v);
	else
		buf_printf(b, ",\"%s\":null", key);
}

bool ct_trace_off_cpu_recorded(const struct ct_trace *t)
{
	const char *v = ct_trace_meta(t, "record.off_cpu");
	return v ? !strcmp(v, "yes") : ct_trace_stat(t, "off_cpu") != NULL;
}

void ct_func_json_fields(struct ct_buf *b, const struct ct_func_stats *f, bool off_recorded)
{
	bool dur = f->returned != 0;
	buf_printf(b, ",\"calls\":%" PRIu64 ",\"returned\":%" PRIu64 ",\"unwound\":%" PRIu64 ",\"unfinished\":%" PRIu64
		      ",\"exited\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"unobserved\":%" PRIu64,
		   ct_func_calls(f), f->returned, f->unwound, f->unfinished, f->exited, f->lost, f->unobserved);
	json_u64_or_null(b, "total_ns", dur, f->total);
	json_u64_or_null(b, "self_ns", dur, f->self);
	json_u64_or_null(b, "avg_ns", dur, ct_func_avg(f));
	json_u64_or_null(b, "min_ns", dur, f->min);
	json_u64_or_null(b, "p50_ns", dur, f->p50);
	json_u64_or_null(b, "p99_ns", dur, f->p99);
	json_u64_or_null(b, "max_ns", dur, f->max);
	/* what the correction took out of them, in all and between their
	 * children: a figure below a tenth of what was taken out of it cannot
	 * be told from none (the text shows it "< N") */
	if (dur && !ct_raw_durations)
		buf_printf(b, ",\"taken_out_ns\":%" PRIu64 ",\"self_taken_out_ns\":%" PRIu64, f->taken_out,
			   f->self_taken_out);
	/* their threads' time off CPU while they ran (in the durations), where
	 * the trace recorded it: 0 is none, a missing key not known */
	if (off_recorded || f->off_cpu) {
		json_u64_or_null(b, "off_cpu_ns", dur, f->off_cpu);
		json_u64_or_null(b, "self_off_cpu_ns", dur, f->self_off_cpu);
	}
}

static void write_json(struct report *R, const struct ct_report_opts *o, struct ct_func_stats **fs, size_t n)
{
	struct ct_buf b = {0};
	bool off_recorded = ct_trace_off_cpu_recorded(R->t);
	buf_put(&b, "[", 1);
	for (size_t i = 0; i < n; i++) {
		const struct ct_func_stats *f = fs[i];
		const char *name = ct_func_name(R->t, f->func);
		const char *open = i ? ",\n{\"func\":" : "\n{\"func\":";
		buf_put(&b, open, strlen(open));
		ct_buf_json_string(&b, name, strlen(name));
		ct_func_json_fields(&b, f, off_recorded);
		if (wants_histogram(R, o, f)) {
			uint64_t counts[LOG2_BUCKETS];
			unsigned first, last;
			log2_hist(f, counts, &first, &last);
			buf_put(&b, ",\"histogram\":[", 14);
			for (unsigned k = first; k <= last; k++)
				buf_printf(&b, "%s{\"lo_ns\":%" PRIu64 ",\"hi_ns\":%" PRIu64 ",\"count\":%" PRIu64 "}",
				     k == first ? "" : ",", log2_lo(k), log2_hi(k), counts[k]);
			buf_put(&b, "]", 1);
		}
		buf_put(&b, "}", 1);
		if (b.n > 1 << 16) {
			fwrite(b.p, 1, b.n, o->out);
			b.n = 0;
		}
	}
	buf_put(&b, n ? "\n]\n" : "]\n", n ? 3 : 2);
	fwrite(b.p, 1, b.n, o->out);
	buf_free(&b);
}

/* A duration cell: NS, "< BELOW" where it is too small to tell from none
 * (ct_dur_below; BELOW 0: it is not), "-" where there is none. */
static bool dur_cell(FILE *out, bool known, uint64_t ns, uint64_t below)
{
	char d[32];
	if (known && below) {
		struct ct_buf b = {0};
		ct_buf_duration_below(&b, below);
		snprintf(d, sizeof(d), "%.*s", (int)b.n, b.p);
		buf_free(&b);
	} else if (known) {
		ct_fmt_duration(d, sizeof(d), ns);
	} else {
		snprintf(d, sizeof(d), "%10s", "-");
	}
	fprintf(out, "  %10s", d);
	return known && below;
}

/* The bound of a figure NS that had TAKEN taken out of it (ct_dur_below).
 * A figure of one call (the average, min, max, percentiles) is judged by
 * what was taken out of the function's calls on average, so that the JSON's
 * fields give every cell: the tree judges each call by its own. */
static uint64_t below(uint64_t ns, uint64_t taken)
{
	return ct_dur_below(ns, ns + taken);
}

static void write_histogram(FILE *out, const struct report *R, const struct ct_func_stats *f)
{
	uint64_t counts[LOG2_BUCKETS], top = 0;
	unsigned first, last;
	log2_hist(f, counts, &first, &last);
	for (unsigned k = first; k <= last; k++)
		if (counts[k] > top)
			top = counts[k];
	fprintf(out, "\n# latency of %s: %" PRIu64 " returned calls\n", ct_func_name(R->t, f->func),
		f->returned);
	for (unsigned k = first; k <= last; k++) {
		char lo[32], hi[32], bar[41];
		ct_fmt_duration(lo, sizeof(lo), log2_lo(k));
		ct_fmt_duration(hi, sizeof(hi), log2_hi(k));
		size_t w = counts[k] ? (size_t)((counts[k] * 40 + top - 1) / top) : 0;
		memset(bar, '#', w);
		bar[w] = 0;
		fprintf(out, "  [%s, %s) | %-40s %" PRIu64 "\n", lo, hi, bar, counts[k]);
	}
}

static void write_text(struct report *R, const struct ct_report_opts *o, struct ct_func_stats **fs, size_t n)
{
	FILE *out = o->out;
	uint64_t unwound = 0, unfinished = 0, exited = 0, lost = 0, unobserved = 0, off_cpu = 0;
	bool any_below = false;
	for (size_t i = 0; i < n; i++) {
		off_cpu += fs[i]->off_cpu;
		unobserved += fs[i]->unobserved;
		unwound += fs[i]->unwound;
		unfinished += fs[i]->unfinished;
		exited += fs[i]->exited;
		lost += fs[i]->lost;
	}
	bool status_cols = unwound || unfinished || exited || lost;
	static const char rule[] = "  ==========";
	fprintf(out, "  Total time   Self time       Calls    Avg time    Min time    P50 time    P99 time    Max time%s%s%s%s%s  Function\n",
		status_cols ? "     Unwound  Unfinished" : "", exited ? "      Exited" : "", lost ? "        Lost" : "",
		unobserved ? "  Unobserved" : "", off_cpu ? "    Self off" : "");
	for (int i = 0; i < (status_cols ? 10 : 8) + (exited != 0) + (lost != 0) + (unobserved != 0) + (off_cpu != 0); i++)
		fputs(rule, out);
	fputs("  ====================\n", out);
	for (size_t i = 0; i < n; i++) {
		const struct ct_func_stats *f = fs[i];
		bool dur = f->returned != 0;
		uint64_t per_call = dur ? f->taken_out / f->returned : 0;
		any_below |= dur_cell(out, dur, f->total, below(f->total, f->taken_out));
		any_below |= dur_cell(out, dur, f->self, below(f->self, f->self_taken_out));
		fprintf(out, "  %10" PRIu64, ct_func_calls(f));
		any_below |= dur_cell(out, dur, ct_func_avg(f), below(ct_func_avg(f), per_call));
		any_below |= dur_cell(out, dur, f->min, below(f->min, per_call));
		any_below |= dur_cell(out, dur, f->p50, below(f->p50, per_call));
		any_below |= dur_cell(out, dur, f->p99, below(f->p99, per_call));
		any_below |= dur_cell(out, dur, f->max, below(f->max, per_call));
		if (status_cols)
			fprintf(out, "  %10" PRIu64 "  %10" PRIu64, f->unwound, f->unfinished);
		if (exited)
			fprintf(out, "  %10" PRIu64, f->exited);
		if (lost)
			fprintf(out, "  %10" PRIu64, f->lost);
		if (unobserved)
			fprintf(out, "  %10" PRIu64, f->unobserved);
		if (off_cpu)
			dur_cell(out, dur, f->self_off_cpu, 0);
		fprintf(out, "  %s\n", ct_func_name(R->t, f->func));
	}
	if (status_cols)
		fprintf(out, "\n# %" PRIu64 " unwound and %" PRIu64
			     " unfinished calls have no duration: times are of the returned calls only\n",
			unwound, unfinished);
	if (exited)
		fprintf(out, "# %" PRIu64 " exited calls (their thread or process ended inside them) have no duration either\n",
			exited);
	if (lost)
		fprintf(out, "# %" PRIu64 " lost calls (their end was among the lost events) have no duration either\n",
			lost);
	if (unobserved)
		fprintf(out, "# %" PRIu64 " unobserved calls (from a call site without an exit probe yet) have no duration either\n",
			unobserved);
	if (off_cpu)
		fprintf(out, "%s# Self off: of the self time, how long the thread was off CPU (preempted, or blocked in the kernel)\n",
			status_cols || exited || lost || unobserved ? "" : "\n");
	if (any_below)
		fprintf(out, "%s# \"< N\": below a tenth of what the correction took out of it (a call's figure: of the "
			     "function's calls on average), too short to tell from none\n",
			status_cols || exited || lost || unobserved || off_cpu ? "" : "\n");
	if (R->lost)
		fprintf(out, "%s# LOST %" PRIu64 " events while recording: counts may be incomplete\n",
			status_cols || exited || lost || unobserved || off_cpu || any_below ? "" : "\n", R->lost);
	for (size_t i = 0; i < n; i++)
		if (fs[i]->returned && wants_histogram(R, o, fs[i]))
			write_histogram(out, R, fs[i]);
}

void ct_func_table_build(struct ct_trace *t, const struct ct_filter_opts *filter, bool by_name,
			 struct ct_func_table *out)
{
	struct report R = {.t = t, .nfuncs = t->nfuncs, .sweep_at = 1024};
	R.by_func = xcalloc(t->nfuncs + 1, sizeof(*R.by_func));
	if (by_name) {
		/* names hashed to the first id that has them (FNV-1a, collisions
		 * resolved by comparing the names) */
		struct ct_map first = {0};
		R.alias = xmalloc((t->nfuncs + 1) * sizeof(*R.alias));
		for (size_t i = 0; i < t->nfuncs; i++) {
			const char *nm = ct_func_name(t, (uint32_t)i);
			for (uint64_t h = hash_str(nm);; h++) {
				void **slot = map_slot(&first, h, true);
				if (!*slot)
					*slot = (void *)(uintptr_t)(i + 1);
				uint32_t id = (uint32_t)((uintptr_t)*slot - 1);
				if (!strcmp(ct_func_name(t, id), nm)) {
					R.alias[i] = id;
					break;
				}
			}
		}
		map_free(&first);
	}
	struct ct_recon_ops ops = {on_call_enter, on_call_exit, on_lost, NULL};
	ct_filter_run(t, filter, &ops, &R);

	MAP_FOREACH(&R.threads, i)
	{
		struct tstack *s = R.threads.vals[i];
		CT_VEC_FREE(s->f);
		free(s);
	}
	map_free(&R.threads);

	memset(out, 0, sizeof(*out));
	out->t = t;
	out->lost = R.lost;
	out->v = xmalloc((t->nfuncs + 1) * sizeof(*out->v));
	for (size_t i = 0; i <= t->nfuncs; i++) {
		struct ct_func_stats *f = R.by_func[i];
		if (!f)
			continue;
		if (f->returned) {
			f->p50 = percentile(f, 50);
			f->p99 = percentile(f, 99);
		} else {
			f->min = 0;
		}
		out->v[out->n++] = f;
	}
	free(R.by_func);
	free(R.alias);
}

void ct_func_table_free(struct ct_func_table *ft)
{
	for (size_t i = 0; i < ft->n; i++) {
		for (unsigned c = 0; c < CHUNKS; c++)
			free(ft->v[i]->chunk[c]);
		free(ft->v[i]);
	}
	free(ft->v);
	memset(ft, 0, sizeof(*ft));
}

int ct_render_report(struct ct_trace *t, const struct ct_report_opts *o)
{
	struct ct_func_table ft;
	ct_func_table_build(t, o->filter, false, &ft);
	struct report R = {.t = t, .lost = ft.lost};
	sort_trace = t;
	sort_key = o->sort;
	qsort(ft.v, ft.n, sizeof(*ft.v), cmp_fstat);

	if (o->json) {
		write_json(&R, o, ft.v, ft.n);
		if (R.lost)
			ct_warn("%" PRIu64 " events were lost while recording; counts may be incomplete",
				R.lost);
	} else {
		write_text(&R, o, ft.v, ft.n);
	}
	ct_func_table_free(&ft);
	return 0;
}
