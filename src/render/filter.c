#include "render/filter.h"
#include "reconstruct/exitindex.h"
#include "util/util.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

const char ct_filter_help[] =
	"  -F, --filter GLOB      show only the subtrees rooted at matching functions\n"
	"  -N, --notrace GLOB     hide the subtrees of matching functions\n"
	"  -D, --depth N          show only N levels (depth < N)\n"
	"  -t, --time-filter T    hide calls shorter than T (e.g. 100us)\n"
	"      --goroutine N      only goroutine N\n"
	"      --with-children    with --goroutine: also the goroutines it created, and\n"
	"                         theirs (as far as the trace saw them being created)\n"
	"      --tid N            only calls that started on thread N\n"
	"      --since T, --until T  only calls that started in this window (time\n"
	"                         since the trace began, e.g. 1.5s)\n"
	"      --max-calls N      stop after N calls\n"
	"      --raw              durations as measured: the tracer's own time per probe\n"
	"                         hit is not taken out\n"
	"      --sched            each time a thread was off CPU inside traced calls, as a\n"
	"                         call of its own (linux:schedule) under the call it\n"
	"                         interrupted: where it happened, how long, why\n"
	"      --demangle MODE    C++/Rust names: simple (default: no parameters, no Rust\n"
	"                         hash), full, or no (the mangled symbol); -F/-N match any\n";

bool ct_filter_active(const struct ct_filter_opts *o)
{
	return o->nonly || o->nhide || o->max_depth || o->min_dur || o->has_goid || o->has_tid ||
	       o->has_since || o->has_until || o->max_calls;
}

static int bad(const char *what, const char *val)
{
	ct_print_errorf("%s, not '%s'", what, val);
	return -1;
}

int ct_filter_parse(struct ct_filter_opts *o, int opt, const char *val)
{
	uint64_t v;
	switch (opt) {
	case 'F':
		o->only = xrealloc(o->only, (o->nonly + 1) * sizeof(*o->only));
		o->only[o->nonly++] = val;
		return 0;
	case 'N':
		o->hide = xrealloc(o->hide, (o->nhide + 1) * sizeof(*o->hide));
		o->hide[o->nhide++] = val;
		return 0;
	case 'D':
		if (parse_u64(val, &v) || !v || v > 100000)
			return bad("-D needs a depth of 1 or more", val);
		o->max_depth = (uint32_t)v;
		return 0;
	case 't':
		if (parse_duration(val, &o->min_dur))
			return bad("-t needs a time like 100us or 2ms", val);
		return 0;
	case 0x1001:
		if (parse_u64(val, &o->goid))
			return bad("--goroutine needs a goroutine id", val);
		o->has_goid = true;
		return 0;
	case 0x1002:
		if (parse_u64(val, &v) || v > UINT32_MAX)
			return bad("--tid needs a thread id", val);
		o->tid = (uint32_t)v;
		o->has_tid = true;
		return 0;
	case 0x1003:
		if (parse_duration(val, &o->since))
			return bad("--since needs a time since the trace began, like 1.5s", val);
		o->has_since = true;
		return 0;
	case 0x1004:
		if (parse_duration(val, &o->until))
			return bad("--until needs a time since the trace began, like 1.5s", val);
		o->has_until = true;
		return 0;
	case 0x1005:
		if (parse_u64(val, &o->max_calls) || !o->max_calls)
			return bad("--max-calls needs a number of calls", val);
		return 0;
	case 0x1006:
		if (ct_demangle_parse(val, &ct_demangle_mode))
			return bad("--demangle takes simple, full or no", val);
		return 0;
	case 0x1007:
		o->with_children = true;
		return 0;
	case 0x1008:
		ct_raw_durations = true;
		return 0;
	case 0x1009:
		ct_sched_calls = true;
		return 0;
	default:
		return 1;
	}
}

int ct_filter_check(const struct ct_filter_opts *o)
{
	if (o->has_since && o->has_until && o->until < o->since) {
		ct_say("--until comes before --since: no call starts in that window");
		return -1;
	}
	if (o->with_children && !o->has_goid) {
		ct_say("--with-children goes with --goroutine N (whose children to show)");
		return -1;
	}
	return 0;
}

void ct_filter_free(struct ct_filter_opts *o)
{
	free(o->only);
	free(o->hide);
	o->only = o->hide = NULL;
	o->nonly = o->nhide = 0;
}

/* Per open frame of a goroutine/thread: what the filter decided. */
struct fframe {
	uint64_t seq;
	bool shown;
	bool in_only; /* self or an ancestor matches -F */
	bool hidden;  /* self or an ancestor matches -N */
	bool sys;     /* on its goroutine's system stack (ct_call.sysstack) */
};

/* The open frames of a goroutine or thread, C it called through cgo among
 * them (ct_call_nest_key): -F and -N go down into the C a Go call made
 * and into the Go that C called back, as they nest.  A call's depth (and
 * -D) still counts on its own stack, as the unfiltered output has it. */
struct fstack {
	CT_VEC(struct fframe) f;
	uint32_t shown[2]; /* shown frames open, by sys */
};

struct filt {
	struct ct_trace *t;
	const struct ct_filter_opts *o;
	const struct ct_recon_ops *down;
	void *ctx;
	struct ct_exitindex *x;
	struct ct_map stacks;
	uint64_t shown_calls;
	bool done;
	struct ct_map family; /* --with-children: (pid, goid) keys of the goroutines shown */
};

/* --goroutine N (--with-children: or one N made, transitively; creations
 * come before the created goroutine's first call). */
static bool goroutine_shown(struct filt *F, uint32_t pid, uint64_t goid)
{
	if (goid == F->o->goid)
		return true;
	return F->o->with_children && map_get(&F->family, (uint64_t)pid << 42 ^ goid);
}

static bool any_match(const char **globs, size_t n, const struct ct_trace *t, uint32_t func)
{
	for (size_t i = 0; i < n; i++)
		if (ct_names_match(&t->func_names[func], t->funcs[func].name, globs[i]))
			return true;
	return false;
}

static bool sched_match(const char **globs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!fnmatch(globs[i], "linux:schedule", 0))
			return true;
	return false;
}

static void f_enter(void *ctx, const struct ct_call *c)
{
	struct filt *F = ctx;
	const struct ct_filter_opts *o = F->o;
	void **slot = map_slot(&F->stacks, ct_call_nest_key(c), true);
	if (!*slot)
		*slot = xcalloc(1, sizeof(struct fstack));
	struct fstack *s = *slot;
	const struct fframe *parent = s->f.n ? &s->f.v[s->f.n - 1] : NULL;
	struct fframe fr = {c->seq, false, parent && parent->in_only, parent && parent->hidden, c->sysstack};
	if (c->func < F->t->nfuncs) {
		fr.in_only |= any_match(o->only, o->nonly, F->t, c->func);
		fr.hidden |= any_match(o->hide, o->nhide, F->t, c->func);
	} else if (c->func == CT_FUNC_SCHED) { /* (--sched: by its name, not a LIB:GLOB) */
		fr.in_only |= sched_match(o->only, o->nonly);
		fr.hidden |= sched_match(o->hide, o->nhide);
	}
	bool show = !F->done && !fr.hidden && (!o->nonly || fr.in_only);
	uint64_t rel = c->ts_entry > F->t->first_ts ? c->ts_entry - F->t->first_ts : 0;
	if (show && o->has_goid && !goroutine_shown(F, c->pid, c->goid))
		show = false;
	if (show && o->has_tid && c->tid != o->tid)
		show = false;
	if (show && ((o->has_since && rel < o->since) || (o->has_until && rel > o->until)))
		show = false;
	if (show && o->max_depth && s->shown[fr.sys] >= o->max_depth)
		show = false;
	if (show && o->min_dur && F->x) {
		const struct ct_exit_info *e = ct_exitindex_get(F->x, c->seq, NULL);
		if (e->status == CT_CALL_RETURNED && e->ts_exit - c->ts_entry < o->min_dur)
			show = false;
	}
	fr.shown = show;
	CT_VEC_PUSH(s->f, fr);
	if (!show)
		return;
	struct ct_call d = *c;
	d.depth = s->shown[fr.sys]++;
	if (F->down->enter)
		F->down->enter(F->ctx, &d);
	/* (--sched's times off CPU are no calls of the program: they do not
	 * change which calls --max-calls shows) */
	if (o->max_calls && c->func != CT_FUNC_SCHED && ++F->shown_calls >= o->max_calls)
		F->done = true;
}

static void f_exit(void *ctx, const struct ct_call *c)
{
	struct filt *F = ctx;
	uint64_t k = ct_call_nest_key(c);
	struct fstack *s = map_get(&F->stacks, k);
	if (!s || !s->f.n)
		return;
	struct fframe fr;
	size_t at;
	CT_VEC_TAKE_SEQ(s->f, c->seq, fr, at);
	if (fr.shown) {
		struct ct_call d = *c;
		d.depth = --s->shown[fr.sys];
		if (F->down->exit)
			F->down->exit(F->ctx, &d);
	}
	if (!s->f.n) {
		CT_VEC_FREE(s->f);
		free(s);
		map_del(&F->stacks, k);
	}
}

static void f_spawn(void *ctx, const struct ct_goroutine_origin *g)
{
	struct filt *F = ctx;
	const struct ct_filter_opts *o = F->o;
	if (o->has_goid) {
		if (!goroutine_shown(F, g->pid, g->parent))
			return;
		if (o->with_children)
			map_put(&F->family, (uint64_t)g->pid << 42 ^ g->goid, (void *)1);
	}
	uint64_t rel = g->ts > F->t->first_ts ? g->ts - F->t->first_ts : 0;
	if ((o->has_since && rel < o->since) || (o->has_until && rel > o->until) || F->done)
		return;
	if (F->down->spawn)
		F->down->spawn(F->ctx, g);
}

static struct ct_recon_stats filter_run(struct ct_trace *t, const struct ct_filter_opts *o, struct ct_exitindex *x,
					const struct ct_recon_ops *down, void *ctx);

static void f_lost(void *ctx, uint64_t ts, uint64_t n)
{
	struct filt *F = ctx;
	if (F->down->lost)
		F->down->lost(F->ctx, ts, n);
}

struct ct_recon_stats ct_filter_run(struct ct_trace *t, const struct ct_filter_opts *o,
				    const struct ct_recon_ops *down, void *ctx)
{
	return ct_filter_run_indexed(t, o, NULL, down, ctx);
}

void ct_note_never_ran(const char *bin, const char *nfuncs, bool stripped)
{
	const char *plural = strcmp(nfuncs, "1") ? "s" : "";
	if (stripped)
		ct_say(
			"no calls recorded: the %s function%s traced in %s never ran (it is stripped: only "
			"its exported functions are known; record -F 'libc.so.6:*' traces a library's functions, "
			"`calltrace list %s` shows what can be traced)",
			nfuncs, plural, bin, bin);
	else
		ct_say(
			"no calls recorded: the %s function%s traced in %s never ran (`calltrace list %s` "
			"shows what can be traced; record -F GLOB chooses)",
			nfuncs, plural, bin, bin);
}

bool ct_note_forked(const char *bin, const char *nfuncs, unsigned long long forks)
{
	if (!forks)
		return false;
	ct_say(
		"no calls recorded: the %s function%s traced in %s never ran in the traced process; it forked "
		"%llu process%s, not traced without --follow (record --follow traces %s too)",
		nfuncs, strcmp(nfuncs, "1") ? "s" : "", bin, forks, forks == 1 ? "" : "es", forks == 1 ? "it" : "them");
	return true;
}

/* A finished recording with no call at all: say why there is nothing to
 * show and what to do, once, on stderr (the output stays what it is: empty).
 * Not when events were lost: then calls did happen.  When record-time
 * limits cut them all (--min-duration longer than any call, a
 * --sample-goroutines that kept none of the threads that made calls),
 * calls happened too, and the empty output said nothing of why. */
static void note_no_calls(const struct ct_trace *t, const struct ct_recon_stats *st)
{
	const char *cut = ct_trace_stat(t, "cut"), *lost = ct_trace_stat(t, "lost");
	if (st->calls || t->truncated || !t->stats.n || (lost && strcmp(lost, "0")))
		return;
	if (cut && strcmp(cut, "0")) {
		const char *limits = ct_trace_meta(t, "limits");
		int n = limits ? (int)strlen(limits) : 0;
		while (n && limits[n - 1] == ' ')
			n--;
		ct_say("no calls recorded: the record-time limits (%.*s) cut all %s events (`calltrace info` counts them)",
			n ? n : 4, n ? limits : "some", cut);
		return;
	}
	const char *bin = ct_trace_meta(t, "target.path"), *nf = ct_trace_meta(t, "plan.functions");
	const char *src = ct_trace_meta(t, "target.funcs_source");
	if (!bin || !nf)
		return;
	const char *forks = ct_trace_stat(t, "forks");
	if (forks && ct_note_forked(bin, nf, strtoull(forks, NULL, 10)))
		return;
	bool libs = false;
	for (size_t i = 0; i < t->meta.n && !libs; i++)
		libs = !strcmp(t->meta.v[i].key, "library");
	ct_note_never_ran(bin, nf, src && !strcmp(src, "dynsym") && !libs);
}

struct ct_exitindex *ct_filter_exitindex(struct ct_trace *t, const struct ct_filter_opts *o)
{
	return o && ct_filter_active(o) && o->min_dur ? ct_exitindex_build(t) : ct_exitindex_new(t);
}

struct ct_recon_stats ct_filter_run_indexed(struct ct_trace *t, const struct ct_filter_opts *o,
					    struct ct_exitindex *x, const struct ct_recon_ops *down, void *ctx)
{
	struct ct_recon_stats st = filter_run(t, o, x, down, ctx);
	note_no_calls(t, &st);
	return st;
}

/* T's events into OPS, through X if there is one (X knows a call's end at
 * its entry then). */
static struct ct_recon_stats run_indexed(struct ct_trace *t, struct ct_exitindex *x, const struct ct_recon_ops *ops,
					 void *ctx)
{
	return x ? ct_exitindex_run(x, ops, ctx) : ct_recon_run(t, ops, ctx);
}

static struct ct_recon_stats filter_run(struct ct_trace *t, const struct ct_filter_opts *o, struct ct_exitindex *x,
					const struct ct_recon_ops *down, void *ctx)
{
	if (!o || !ct_filter_active(o))
		return run_indexed(t, x, down, ctx);
	struct filt F = {t, o, down, ctx, x, {0}, 0, false, {0}};
	struct ct_recon_ops ops = {f_enter, f_exit, f_lost, f_spawn}, held;
	struct ct_recon_stats st;
	if (x && !o->min_dur) {
		/* every decision made at entry: the filter goes before the index,
		 * which holds back only the calls shown */
		held = ct_exitindex_hold(x, down, ctx);
		F.down = &held;
		F.ctx = x;
		F.x = NULL;
		st = ct_recon_run(t, &ops, &F);
		ct_exitindex_finish(x);
	} else {
		if (o->min_dur && !x)
			F.x = ct_exitindex_build(t);
		/* (f_exit needs only which goroutine's or thread's an exit is,
		 * unless the renderer takes exits) */
		if (F.x && !down->exit)
			ct_exitindex_thin_exits(F.x);
		st = run_indexed(t, F.x, &ops, &F);
	}
	MAP_FOREACH(&F.stacks, i)
	{
		struct fstack *s = F.stacks.vals[i];
		CT_VEC_FREE(s->f);
		free(s);
	}
	map_free(&F.stacks);
	map_free(&F.family);
	if (F.x && F.x != x)
		ct_exitindex_free(F.x);
	return st;
}
