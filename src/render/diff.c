/* report --diff: the per-function statistics of two traces side by side.
 *
 * Both traces go through the same aggregation as `report` (report.c, with
 * the same replay-time filters), functions matched by name.  A function
 * present in one trace only counts as zero calls and zero time in the
 * other: its change of calls, total and self time is its whole value, the
 * change of avg/min/p50/p99/max is unknown (null), and so is a percentage
 * whose base is 0 or unknown.  Rows are sorted by the size of the change of
 * the sort key (total time unless -s says otherwise), largest first.
 *
 * Time off CPU (in total and self's share, report's off_cpu/self_off_cpu)
 * is known in a trace that recorded it (META record.off_cpu), 0 where there
 * was none; in one that did not (--no-sched, a WebAssembly module, an older
 * calltrace) it is unknown, and so is its change: not a change from 0. */
#include "render/report.h"
#include "render/values.h"
#include "util/util.h"

#include <inttypes.h>
#include <string.h>

struct diff_row {
	const char *name;
	const struct ct_func_stats *base, *cur; /* NULL: absent from that trace */
	bool off_unknown; /* a trace without off-CPU records: the changes of M_OFF* unknown */
};

/* One of the two traces: its aggregation, and whether it recorded off-CPU time. */
struct diff_side {
	const struct ct_trace *t;
	struct ct_func_table ft;
	bool off_recorded;
};

/* The metrics, in the order the JSON shows them. */
enum metric {
	M_CALLS, M_RETURNED, M_UNWOUND, M_UNFINISHED, M_EXITED, M_LOST, M_UNOBSERVED, M_TOTAL, M_SELF,
	M_AVG, M_MIN, M_P50, M_P99, M_MAX, M_OFF, M_SELF_OFF, NMETRICS
};

static const char *const metric_key[NMETRICS] = {
	"calls", "returned", "unwound", "unfinished", "exited", "lost", "unobserved", "total_ns", "self_ns",
	"avg_ns", "min_ns", "p50_ns", "p99_ns", "max_ns", "off_cpu_ns", "self_off_cpu_ns",
};

static bool is_duration(enum metric m)
{
	return m >= M_TOTAL;
}

/* A figure of one call (unknown without a returned call), not a sum. */
static bool of_one_call(enum metric m)
{
	return m >= M_AVG && m <= M_MAX;
}

/* Value of M in F; false when unknown (no call returned: no duration). */
static bool metric(const struct ct_func_stats *f, enum metric m, uint64_t *v)
{
	*v = 0;
	if (!f || (is_duration(m) && !f->returned))
		return !of_one_call(m); /* absent, none returned: no calls, no time */
	switch (m) {
	case M_CALLS: *v = ct_func_calls(f); break;
	case M_RETURNED: *v = f->returned; break;
	case M_UNWOUND: *v = f->unwound; break;
	case M_UNFINISHED: *v = f->unfinished; break;
	case M_EXITED: *v = f->exited; break;
	case M_LOST: *v = f->lost; break;
	case M_UNOBSERVED: *v = f->unobserved; break;
	case M_TOTAL: *v = f->total; break;
	case M_SELF: *v = f->self; break;
	case M_AVG: *v = ct_func_avg(f); break;
	case M_MIN: *v = f->min; break;
	case M_P50: *v = f->p50; break;
	case M_P99: *v = f->p99; break;
	case M_MAX: *v = f->max; break;
	case M_OFF: *v = f->off_cpu; break;
	case M_SELF_OFF: *v = f->self_off_cpu; break;
	default: break;
	}
	return true;
}

/* new - base, false when either is unknown. */
static bool change(const struct diff_row *r, enum metric m, int64_t *d)
{
	uint64_t a, b;
	if ((m >= M_OFF && r->off_unknown) || !metric(r->base, m, &a) || !metric(r->cur, m, &b))
		return false;
	*d = (int64_t)(b - a);
	return true;
}

/* Change in % of the base, false when the base is 0 or unknown. */
static bool change_pct(const struct diff_row *r, enum metric m, double *pct)
{
	uint64_t a;
	int64_t d;
	if (!r->base || !metric(r->base, m, &a) || !a || !change(r, m, &d))
		return false;
	*pct = 100.0 * (double)d / (double)a;
	return true;
}

static enum metric metric_of_sort(enum ct_report_sort s)
{
	switch (s) {
	case CT_SORT_SELF: return M_SELF;
	case CT_SORT_CALLS: return M_CALLS;
	case CT_SORT_AVG: return M_AVG;
	case CT_SORT_MIN: return M_MIN;
	case CT_SORT_MAX: return M_MAX;
	case CT_SORT_P50: return M_P50;
	case CT_SORT_P99: return M_P99;
	default: return M_TOTAL;
	}
}

static enum metric sort_metric; /* qsort has no context argument */
static bool sort_by_name;

static int cmp_rows(const void *pa, const void *pb)
{
	const struct diff_row *a = pa, *b = pb;
	if (!sort_by_name) {
		int64_t da, db;
		bool ka = change(a, sort_metric, &da), kb = change(b, sort_metric, &db);
		if (ka != kb)
			return ka ? -1 : 1; /* unknown changes last */
		uint64_t ma = ka ? (uint64_t)(da < 0 ? -da : da) : 0, mb = kb ? (uint64_t)(db < 0 ? -db : db) : 0;
		if (ma != mb)
			return ma > mb ? -1 : 1;
		if (ka && da != db)
			return da > db ? -1 : 1; /* growth before an equal shrink */
	}
	return strcmp(a->name, b->name);
}

/* Rows of both tables, matched by name (names are unique in each table:
 * it was built by name). */
static size_t join(const struct ct_func_table *base, const struct ct_func_table *cur, struct diff_row **out)
{
	struct diff_row *rows = xcalloc(base->n + cur->n + 1, sizeof(*rows));
	struct ct_map at = {0}; /* name hash (+ probing) -> row index + 1 */
	size_t n = 0;
	for (int side = 0; side < 2; side++) {
		const struct ct_func_table *ft = side ? cur : base;
		for (size_t i = 0; i < ft->n; i++) {
			const char *nm = ct_func_name(ft->t, ft->v[i]->func);
			for (uint64_t h = hash_str(nm);; h++) {
				void **slot = map_slot(&at, h, true);
				if (!*slot) {
					rows[n].name = nm;
					*slot = (void *)(uintptr_t)++n;
				}
				struct diff_row *r = &rows[(uintptr_t)*slot - 1];
				if (strcmp(r->name, nm))
					continue;
				if (side)
					r->cur = ft->v[i];
				else
					r->base = ft->v[i];
				break;
			}
		}
	}
	map_free(&at);
	*out = rows;
	return n;
}

/* ---- JSON ---- */

static void json_side(struct ct_buf *b, const char *key, const struct ct_func_stats *f, bool off_recorded)
{
	buf_printf(b, ",\"%s\":", key);
	if (!f) {
		buf_cstr(b, "null");
		return;
	}
	/* the report's object without "func", which is the row's */
	struct ct_buf tmp = {0};
	ct_func_json_fields(&tmp, f, off_recorded);
	/* (here they are always there: null where the trace did not record them) */
	if (!off_recorded && !f->off_cpu)
		buf_cstr(&tmp, ",\"off_cpu_ns\":null,\"self_off_cpu_ns\":null");
	buf_put(b, "{", 1);
	buf_put(b, tmp.p + 1, tmp.n - 1);
	buf_put(b, "}", 1);
	buf_free(&tmp);
}

static void write_json(FILE *out, const struct diff_side *sides, struct diff_row *rows, size_t n)
{
	struct ct_buf b = {0};
	buf_put(&b, "[", 1);
	for (size_t i = 0; i < n; i++) {
		const struct diff_row *r = &rows[i];
		buf_cstr(&b, i ? ",\n{\"func\":" : "\n{\"func\":");
		ct_buf_json_string(&b, r->name, strlen(r->name));
		if (!r->base || !r->cur)
			buf_printf(&b, ",\"only\":\"%s\"", r->base ? "base" : "new");
		json_side(&b, "base", r->base, sides[0].off_recorded);
		json_side(&b, "new", r->cur, sides[1].off_recorded);
		buf_cstr(&b, ",\"diff\":{");
		for (int m = 0; m < NMETRICS; m++) {
			int64_t d;
			if (change(r, (enum metric)m, &d))
				buf_printf(&b, "%s\"%s\":%" PRId64, m ? "," : "", metric_key[m], d);
			else
				buf_printf(&b, "%s\"%s\":null", m ? "," : "", metric_key[m]);
		}
		buf_cstr(&b, ",\"pct\":{");
		for (int m = 0; m < NMETRICS; m++) {
			double p;
			if (change_pct(r, (enum metric)m, &p))
				buf_printf(&b, "%s\"%s\":%.2f", m ? "," : "", metric_key[m], p);
			else
				buf_printf(&b, "%s\"%s\":null", m ? "," : "", metric_key[m]);
		}
		buf_cstr(&b, "}}}");
		if (b.n > 1 << 16) {
			fwrite(b.p, 1, b.n, out);
			b.n = 0;
		}
	}
	buf_cstr(&b, n ? "\n]\n" : "]\n");
	fwrite(b.p, 1, b.n, out);
	buf_free(&b);
}

/* ---- text ---- */

static const char *const metric_title[NMETRICS] = {
	"Calls", "Returned", "Unwound", "Unfinished", "Exited", "Lost", "Unobserved", "Total", "Self", "Avg", "Min", "P50", "P99", "Max",
	"Off CPU", "Self off",
};

static void value_cell(struct ct_buf *b, const struct diff_row *r, const struct ct_func_stats *f, enum metric m)
{
	uint64_t v;
	if (!f || !metric(f, m, &v) || (is_duration(m) && !f->returned))
		buf_printf(b, "  %10s", "-");
	else if (is_duration(m))
		buf_cstr(b, "  "), ct_buf_duration(b, v);
	else
		buf_printf(b, "  %10" PRIu64, v);
}

/* The change of M, W wide (11: the sort key's "Change"). */
static void change_cell(struct ct_buf *b, const struct diff_row *r, enum metric m, int w)
{
	int64_t d;
	if (!change(r, m, &d)) {
		buf_printf(b, "  %*s", w, "-");
	} else if (is_duration(m)) {
		/* "+  1.234 us" -> " +1.234 us": the sign against the number */
		struct ct_buf t = {0};
		ct_buf_duration(&t, (uint64_t)(d < 0 ? -d : d));
		size_t lead = 0;
		while (lead < t.n && t.p[lead] == ' ')
			lead++;
		buf_printf(b, "  %*s%c%.*s", (int)lead + w - 11, "", d < 0 ? '-' : d > 0 ? '+' : ' ', (int)(t.n - lead),
			   (char *)t.p + lead);
		buf_free(&t);
	} else {
		buf_printf(b, "  %+*" PRId64, w, d);
	}
}

static void pct_cell(struct ct_buf *b, const struct diff_row *r, enum metric m)
{
	double p;
	if (!r->base)
		buf_printf(b, "  %8s", "new");
	else if (!r->cur)
		buf_printf(b, "  %8s", "gone");
	else if (change_pct(r, m, &p))
		buf_printf(b, "  %+7.1f%%", p);
	else
		buf_printf(b, "  %8s", "-");
}

/* Whether any function of FT was off CPU. */
static bool any_off_cpu(const struct ct_func_table *ft)
{
	for (size_t i = 0; i < ft->n; i++)
		if (ft->v[i]->off_cpu)
			return true;
	return false;
}

static void write_text(FILE *out, const struct diff_side *sides, struct diff_row *rows, size_t n, enum metric primary)
{
	/* The sort key in full (base, new, change, %); the change in % of the
	 * other main figures; the change of the time off CPU, in total and
	 * self's share, where either trace has some; calls in both. */
	static const enum metric others_all[] = {M_TOTAL, M_SELF, M_AVG, M_P99};
	static const enum metric offs[] = {M_OFF, M_SELF_OFF};
	enum metric others[4];
	size_t nothers = 0;
	for (size_t i = 0; i < 4; i++)
		if (others_all[i] != primary)
			others[nothers++] = others_all[i];
	size_t noffs = any_off_cpu(&sides[0].ft) || any_off_cpu(&sides[1].ft) ? 2 : 0;
	bool calls_primary = primary == M_CALLS;
	struct ct_buf b = {0};
	buf_printf(&b, "# base: %s\n# new:  %s\n", sides[0].t->path, sides[1].t->path);
	const char *t = metric_title[primary];
	buf_printf(&b, "  %5s base  %6s new  %11s  %8s", t, t, "Change", "Change %");
	for (size_t i = 0; i < nothers; i++)
		buf_printf(&b, "  %6s %%", metric_title[others[i]]);
	for (size_t i = 0; i < noffs; i++)
		buf_printf(&b, "  %8s chg", metric_title[offs[i]]);
	if (!calls_primary)
		buf_printf(&b, "  Calls base   Calls new");
	buf_cstr(&b, "  Function\n");
	buf_cstr(&b, "  ==========  ==========  ===========  ========");
	for (size_t i = 0; i < nothers; i++)
		buf_cstr(&b, "  ========");
	for (size_t i = 0; i < noffs; i++)
		buf_cstr(&b, "  ============");
	if (!calls_primary)
		buf_cstr(&b, "  ==========  ==========");
	buf_cstr(&b, "  ====================\n");
	for (size_t i = 0; i < n; i++) {
		const struct diff_row *r = &rows[i];
		value_cell(&b, r, r->base, primary);
		value_cell(&b, r, r->cur, primary);
		change_cell(&b, r, primary, 11);
		pct_cell(&b, r, primary);
		for (size_t k = 0; k < nothers; k++)
			pct_cell(&b, r, others[k]);
		for (size_t k = 0; k < noffs; k++)
			change_cell(&b, r, offs[k], 12);
		if (!calls_primary) {
			value_cell(&b, r, r->base, M_CALLS);
			value_cell(&b, r, r->cur, M_CALLS);
		}
		buf_printf(&b, "  %s%s\n", r->name, !r->base ? "  (only in new)" : !r->cur ? "  (only in base)" : "");
		if (b.n > 1 << 16) {
			fwrite(b.p, 1, b.n, out);
			b.n = 0;
		}
	}
	const char *sep = "\n";
	if (noffs) {
		buf_printf(&b, "%s# Off CPU chg, Self off chg: the change of the time off CPU (preempted, or blocked in the "
			       "kernel), in the total and in the self time\n", sep);
		sep = "";
	}
	for (int k = 0; noffs && k < 2; k++)
		if (!sides[k].off_recorded)
			buf_printf(&b, "# %s has no off-CPU records (recorded with --no-sched, of a WebAssembly module or by an "
				       "older calltrace): those changes are unknown (-)\n", k ? "new" : "base");
	if (sides[0].ft.lost || sides[1].ft.lost)
		buf_printf(&b, "%s# LOST %" PRIu64 " events in base and %" PRIu64
			       " in new while recording: counts may be incomplete\n",
			   sep, sides[0].ft.lost, sides[1].ft.lost);
	fwrite(b.p, 1, b.n, out);
	buf_free(&b);
}

int ct_render_report_diff(struct ct_trace *base, struct ct_trace *cur, const struct ct_report_opts *o)
{
	struct diff_side sides[2] = {{.t = base}, {.t = cur}};
	for (int k = 0; k < 2; k++) {
		ct_func_table_build(k ? cur : base, o->filter, true, &sides[k].ft);
		sides[k].off_recorded = ct_trace_off_cpu_recorded(sides[k].t);
	}
	struct diff_row *rows;
	size_t n = join(&sides[0].ft, &sides[1].ft, &rows);
	for (size_t i = 0; i < n; i++)
		rows[i].off_unknown = !sides[0].off_recorded || !sides[1].off_recorded;
	if (ct_sched_calls && sides[0].off_recorded != sides[1].off_recorded)
		ct_warn("--sched: %s has no off-CPU records: its self times hold the time off CPU that the other's "
			"linux:schedule rows hold; compare without --sched",
			sides[0].off_recorded ? "new" : "base");
	sort_metric = metric_of_sort(o->sort);
	sort_by_name = o->sort == CT_SORT_FUNC;
	qsort(rows, n, sizeof(*rows), cmp_rows);
	if (o->json) {
		write_json(o->out, sides, rows, n);
		if (sides[0].ft.lost || sides[1].ft.lost)
			ct_warn("events were lost while recording (%" PRIu64 " in %s, %" PRIu64 " in %s); counts may be incomplete",
				sides[0].ft.lost, base->path, sides[1].ft.lost, cur->path);
	} else {
		write_text(o->out, sides, rows, n, sort_metric);
	}
	free(rows);
	for (int k = 0; k < 2; k++)
		ct_func_table_free(&sides[k].ft);
	return 0;
}
