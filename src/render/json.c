/* JSON Lines: one object per call in entry order:
 *   {"ts":12345,"dur":678,"pid":1,"tid":1,"goid":1,"depth":0,
 *    "func":"main.add","status":"returned",
 *    "args":[{"name":"a","type":"int","value":40},...],
 *    "ret":[{"name":"~r0","type":"int","value":42}]}
 * ts is ns since the trace started; dur is null unless the call returned.
 * Losses appear as {"ts":…,"lost":N}.  Durations and results come from a
 * first pass (exitindex), so memory stays bounded for any trace length. */
#include "reconstruct/exitindex.h"
#include "render/render.h"
#include "render/values.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

struct json {
	struct ct_trace *t;
	FILE *out;
	struct ct_exitindex *x;
	struct ct_values *vals;
	struct ct_buf line;
};

static void jput(struct json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jput(struct json *j, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		buf_put(&j->line, tmp, (size_t)n);
}

static void on_call_enter(void *ctx, const struct ct_call *c)
{
	struct json *j = ctx;
	const uint8_t *ret;
	const struct ct_exit_info *e = ct_exitindex_get(j->x, c->seq, &ret);
	const char *name = ct_func_name(j->t, c->func);
	j->line.n = 0;
	jput(j, "{\"ts\":%" PRIu64 ",\"dur\":", ct_rel_ts(j->t, c->ts_entry));
	if (e->status == CT_CALL_RETURNED)
		jput(j, "%" PRIu64, e->ts_exit - c->ts_entry);
	else
		jput(j, "null");
	jput(j, ",\"pid\":%u,\"tid\":%u,\"goid\":", c->pid, c->tid);
	if (c->goid)
		jput(j, "%" PRIu64, c->goid);
	else
		jput(j, "null");
	jput(j, ",\"depth\":%u,\"func\":", c->depth);
	ct_buf_json_string(&j->line, name, strlen(name));
	jput(j, ",\"status\":\"%s\"", ct_status_name(e->status ? e->status : CT_CALL_UNFINISHED));
	if (c->tail)
		jput(j, ",\"tail\":true");
	if (ct_values_load(j->vals, c->entry_site, c->args, c->args_len)) {
		jput(j, ",\"args\":");
		ct_values_json(j->vals, &j->line);
	}
	if (ret && ct_values_load(j->vals, e->exit_site, ret, e->ret_len)) {
		jput(j, ",\"ret\":");
		ct_values_json(j->vals, &j->line);
	}
	jput(j, "}\n");
	fwrite(j->line.p, 1, j->line.n, j->out);
}

static void on_lost(void *ctx, uint64_t ts, uint64_t n)
{
	struct json *j = ctx;
	fprintf(j->out, "{\"ts\":%" PRIu64 ",\"lost\":%" PRIu64 "}\n", ct_rel_ts(j->t, ts), n);
}

int ct_render_json(struct ct_trace *t, const struct ct_render_opts *o)
{
	struct json j = {t, o->out, ct_exitindex_build(t), ct_values_new(t), {0}};
	if (!j.x) {
		ct_values_free(j.vals);
		return -1;
	}
	struct ct_recon_ops ops = {on_call_enter, NULL, on_lost};
	ct_filter_run(t, o->filter, &ops, &j);
	ct_exitindex_free(j.x);
	ct_values_free(j.vals);
	buf_free(&j.line);
	return 0;
}
