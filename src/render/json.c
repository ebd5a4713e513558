/* JSON Lines: one object per call in entry order:
 *   {"ts":12345,"dur":678,"pid":1,"tid":1,"goid":1,"depth":0,
 *    "func":"main.main","status":"returned"}
 * ts is ns since the trace started; dur is null unless the call returned.
 * Losses appear as {"ts":…,"lost":N}.  Durations come from a first pass
 * (exitindex), so memory stays bounded for any trace length. */
#include "reconstruct/exitindex.h"
#include "render/render.h"

#include <inttypes.h>

struct json {
	struct ct_trace *t;
	FILE *out;
	struct ct_exitindex *x;
};

static void on_call_enter(void *ctx, const struct ct_call *c)
{
	struct json *j = ctx;
	const struct ct_exit_info *e = ct_exitindex_get(j->x, c->seq);
	FILE *f = j->out;
	fprintf(f, "{\"ts\":%" PRIu64 ",\"dur\":", c->ts_entry - j->t->first_ts);
	if (e->status == CT_CALL_RETURNED)
		fprintf(f, "%" PRIu64, e->ts_exit - c->ts_entry);
	else
		fputs("null", f);
	fprintf(f, ",\"pid\":%u,\"tid\":%u,\"goid\":", c->pid, c->tid);
	if (c->goid)
		fprintf(f, "%" PRIu64, c->goid);
	else
		fputs("null", f);
	fprintf(f, ",\"depth\":%u,\"func\":", c->depth);
	ct_json_string(f, ct_func_name(j->t, c->func));
	fprintf(f, ",\"status\":\"%s\"", ct_status_name(e->status ? e->status : CT_CALL_UNFINISHED));
	if (c->tail)
		fputs(",\"tail\":true", f);
	fputs("}\n", f);
}

static void on_lost(void *ctx, uint64_t ts, uint64_t n)
{
	struct json *j = ctx;
	fprintf(j->out, "{\"ts\":%" PRIu64 ",\"lost\":%" PRIu64 "}\n", ts - j->t->first_ts, n);
}

int ct_render_json(struct ct_trace *t, const struct ct_render_opts *o)
{
	struct json j = {t, o->out, ct_exitindex_build(t)};
	if (!j.x)
		return -1;
	struct ct_recon_ops ops = {on_call_enter, NULL, on_lost};
	ct_recon_run(t, &ops, &j);
	ct_exitindex_free(j.x);
	return 0;
}
