/* graph: the calls merged by their path, uftrace's `graph`.  Each distinct
 * chain of traced calls, from an outermost traced call down (goroutines
 * and threads together, as flame graphs merge them), is one line: how many
 * calls took that path, their total time and their self time; children by
 * total time, largest first -- where the time went, read top-down in a
 * terminal:
 *
 *   #  TOTAL TIME   SELF TIME      CALLS  FUNCTION
 *      20.120 ms    4.321 us           1  outer
 *      20.115 ms   17.005 us           1  +- blocks
 *      20.098 ms   20.098 ms           1  |  +- linux:schedule
 *       0.110 us    0.110 us           1  +- quick
 *
 * It is the flame graph's aggregation (ct_flame_build), so the three views
 * agree: a line's total is the width of its frame in dump --svg, its self
 * time the folded stack's count (dump --folded); what a call counts there
 * (a returned call entry to return, an unwound one until the unwinding was
 * seen, ...) it counts here.  Stacks deeper than CT_FLAME_MAX_DEPTH end in
 * one "[deeper frames]" line.
 *
 * A figure below a tenth of what the correction took out of it shows as
 * "< N", as in replay and report.  JSON (--format=json): an array of the
 * outermost paths, each {"func","calls","total_ns","self_ns",
 * "taken_out_ns","self_taken_out_ns","children":[...]}, the same way down,
 * children in the same order. */
#include "render/render.h"
#include "render/values.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct by_total {
	const struct ct_trace *t;
	const struct ct_flame_node *nodes;
};

/* Larger total first; equal ones by name (as the flame graph: the same
 * output for the same trace). */
static int cmp_total(const void *a, const void *b, void *arg)
{
	const struct by_total *o = arg;
	const struct ct_flame_node *x = &o->nodes[*(const uint32_t *)a], *y = &o->nodes[*(const uint32_t *)b];
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	int c = strcmp(ct_flame_name(o->t, x->func), ct_flame_name(o->t, y->func));
	return c ? c : (x->func > y->func) - (x->func < y->func);
}

/* NS, or "< N" where it is below a tenth of what the correction took out
 * of RAW (as replay and report say it); whether it was. */
static bool dur_text(struct ct_buf *b, uint64_t ns, uint64_t raw)
{
	uint64_t below = ct_dur_below(ns, raw);
	if (below)
		ct_buf_duration_below(b, below);
	else
		ct_buf_duration(b, ns);
	return below != 0;
}

struct walk_frame {
	uint32_t node, next_kid;
	size_t prefix_len; /* of the text prefix its children's lines continue */
};

int ct_render_graph(struct ct_trace *t, const struct ct_render_opts *o, bool json)
{
	struct ct_flame fl;
	ct_flame_build(t, o->filter, &fl);
	struct by_total bt = {t, fl.nodes};
	for (size_t i = 0; i < fl.n; i++)
		if (fl.nodes[i].nkids > 1)
			qsort_r(fl.kids + fl.nodes[i].first_kid, fl.nodes[i].nkids, sizeof(*fl.kids), cmp_total, &bt);
	struct ct_buf line = {0}, prefix = {0};
	bool any_below = false;
	if (json) {
		buf_put(&line, "[", 1);
	} else if (fl.n > 1) {
		ct_costs_note(o->out, t);
		fprintf(o->out, "#  TOTAL TIME   SELF TIME      CALLS  FUNCTION\n");
	}
	CT_VEC(struct walk_frame) st = {0};
	struct walk_frame top = {0, 0, 0};
	CT_VEC_PUSH(st, top);
	while (st.n) {
		struct walk_frame *w = &st.v[st.n - 1];
		const struct ct_flame_node *n = &fl.nodes[w->node];
		if (w->next_kid == n->nkids) {
			if (json)
				buf_cstr(&line, w->node ? "]}" : "]\n");
			st.n--;
			continue;
		}
		bool first = w->next_kid == 0, last = w->next_kid + 1 == n->nkids;
		uint32_t kid = fl.kids[n->first_kid + w->next_kid++];
		const struct ct_flame_node *k = &fl.nodes[kid];
		const char *name = ct_flame_name(t, k->func);
		size_t cont = w->prefix_len;
		if (json) {
			if (!first)
				buf_put(&line, ",", 1);
			buf_cstr(&line, "{\"func\":");
			ct_buf_json_string(&line, name, strlen(name));
			buf_printf(&line,
				   ",\"calls\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"self_ns\":%" PRIu64
				   ",\"taken_out_ns\":%" PRIu64 ",\"self_taken_out_ns\":%" PRIu64 ",\"children\":[",
				   k->calls, k->total_ns, k->self_ns, k->raw_total_ns - k->total_ns,
				   k->raw_self_ns > k->self_ns ? k->raw_self_ns - k->self_ns : 0);
		} else {
			buf_put(&line, " ", 1);
			any_below |= dur_text(&line, k->total_ns, k->raw_total_ns);
			buf_put(&line, "  ", 2);
			any_below |= dur_text(&line, k->self_ns, k->raw_self_ns);
			buf_printf(&line, "  %10" PRIu64 "  ", k->calls);
			prefix.n = cont;
			/* an outermost path has no branch; a child's line branches
			 * off its parent's, and its own children's lines go on
			 * down that branch while siblings of it follow */
			if (w->node) {
				buf_put(&line, prefix.p, prefix.n);
				buf_put(&line, "+- ", 3);
				buf_put(&prefix, last ? "   " : "|  ", 3);
			}
			buf_cstr(&line, name);
			buf_put(&line, "\n", 1);
			cont = prefix.n;
		}
		struct walk_frame next = {kid, 0, cont};
		CT_VEC_PUSH(st, next);
		if (line.n >= 1 << 16) {
			fwrite(line.p, 1, line.n, o->out);
			line.n = 0;
		}
	}
	fwrite(line.p, 1, line.n, o->out);
	if (any_below)
		fprintf(o->out, "# \"< N\": below a tenth of what the correction took out of it, too short to tell from "
				"none\n");
	CT_VEC_FREE(st);
	buf_free(&line);
	buf_free(&prefix);
	if (fl.st.lost)
		ct_warn("%" PRIu64 " events were lost while recording; paths around the loss may be cut short",
			fl.st.lost);
	ct_flame_free(&fl);
	return 0;
}
