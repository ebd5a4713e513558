/* Folded stacks, the input format of flamegraph.pl, inferno and speedscope:
 *
 *   main.main;main.fib;main.fib 1234
 *
 * One line per distinct stack of function names, outermost traced frame
 * first, weighted by SELF time in ns and aggregated over all goroutines and
 * threads.  The same aggregation (ct_flame_build) feeds the SVG flame graph.
 *
 * What a call counts: the time it is known to have run.  A returned call
 * spans entry to return, exactly.  An unwound call (panic, Goexit, longjmp)
 * spans entry to the moment the unwinding was seen: the next event of its
 * goroutine/thread at a shallower frame (e.g. the return of the function that
 * recovered).  An unfinished call spans entry to the end of the trace.  Self
 * time is the span minus the spans of its shown children, so every ns of an
 * outermost call is counted exactly once and the lines sum to the summed
 * spans of the outermost calls.  Time in calls a filter hides (-N, -D, -t)
 * stays in their parent's self time, like time in untraced code.
 *
 * Names: ';' and whitespace separate frames and the count, so they become
 * '_'; control characters become '?'.  Stacks with no self time get no line
 * (they add no width).  Lines come depth first, siblings by name, so the
 * output is the same for the same trace.
 *
 * Stacks deeper than CT_FLAME_MAX_DEPTH frames end in one "[deeper frames]"
 * frame that holds the self time of every deeper call, so the output grows
 * with the trace, not with the square of its depth.
 *
 * Memory: one node per distinct stack plus the open frames. */
#include "render/render.h"
#include "util/util.h"

#include <inttypes.h>
#include <string.h>

struct open_frame {
	uint64_t seq;
	uint32_t node;
	uint64_t ts_entry;
	uint64_t kids_ns;     /* summed spans of its shown children so far */
	uint64_t raw_kids_ns; /* ... as measured */
};

struct open_stack {
	CT_VEC(struct open_frame) f;
};

struct flame_build {
	struct ct_trace *t;
	CT_VEC(struct ct_flame_node) nodes;
	struct ct_map index;  /* parent << 32 | canonical func -> node index */
	struct ct_map stacks; /* goroutine/thread -> struct open_stack * */
	uint32_t *canon;      /* func id -> the first func id with the same name */
};

/* Goroutines by (pid, goid), C that one calls through cgo (on its
 * thread's system stack) nesting under its open calls; threads by (pid,
 * tid) and the stack they run on: a coroutine's calls (ct_call.context)
 * are a sequence of their own, not nested in whatever the thread's other
 * stack had open (swapcontext made impossible paths of them).  The rule is
 * the reconstruction's (report nests by it too). */
static uint64_t thread_key(const struct ct_call *c)
{
	return ct_call_nest_key(c);
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* Stacks merge by name: two functions with one name (C statics in different
 * files, duplicated symbols) are one frame in a flame graph. */
static uint32_t *canonical_funcs(const struct ct_trace *t)
{
	uint32_t *canon = xcalloc(t->nfuncs ? t->nfuncs : 1, sizeof(*canon));
	struct ct_map first = {0};
	for (size_t i = 0; i < t->nfuncs; i++) {
		const char *name = ct_func_name(t, (uint32_t)i);
		uint64_t h = name_hash(name);
		uintptr_t f = (uintptr_t)map_get(&first, h);
		if (f && !strcmp(ct_func_name(t, (uint32_t)(f - 1)), name)) {
			canon[i] = (uint32_t)(f - 1);
		} else {
			canon[i] = (uint32_t)i;
			if (!f)
				map_put(&first, h, (void *)(uintptr_t)(i + 1));
		}
	}
	map_free(&first);
	return canon;
}

static void flame_enter(void *ctx, const struct ct_call *c)
{
	struct flame_build *b = ctx;
	void **slot = map_slot(&b->stacks, thread_key(c), true);
	if (!*slot)
		*slot = xcalloc(1, sizeof(struct open_stack));
	struct open_stack *s = *slot;
	uint32_t parent = s->f.n ? s->f.v[s->f.n - 1].node : 0;
	uint32_t func = c->func < b->t->nfuncs ? b->canon[c->func] : c->func;
	if (s->f.n >= CT_FLAME_MAX_DEPTH)
		func = CT_FLAME_DEEPER;
	uint64_t key = (uint64_t)parent << 32 | func;
	/* below the cap, every deeper frame is the one "[deeper frames]" node */
	uint32_t node = b->nodes.v[parent].func == CT_FLAME_DEEPER ? parent
								: (uint32_t)(uintptr_t)map_get(&b->index, key);
	if (!node) {
		struct ct_flame_node n = {0};
		n.parent = parent;
		n.func = func;
		n.depth = b->nodes.v[parent].depth + 1;
		node = (uint32_t)b->nodes.n;
		CT_VEC_PUSH(b->nodes, n);
		map_put(&b->index, key, (void *)(uintptr_t)node);
	}
	struct open_frame f = {c->seq, node, c->ts_entry, 0, 0};
	CT_VEC_PUSH(s->f, f);
}

static void flame_exit(void *ctx, const struct ct_call *c)
{
	struct flame_build *b = ctx;
	uint64_t k = thread_key(c);
	struct open_stack *s = map_get(&b->stacks, k);
	if (!s || !s->f.n)
		return;
	struct open_frame f;
	size_t at;
	CT_VEC_TAKE_SEQ(s->f, c->seq, f, at);
	uint64_t span = c->ts_exit > c->ts_entry ? c->ts_exit - c->ts_entry : 0;
	uint64_t raw = c->raw_exit > c->raw_entry ? c->raw_exit - c->raw_entry : 0;
	struct ct_flame_node *n = &b->nodes.v[f.node];
	n->self_ns += span > f.kids_ns ? span - f.kids_ns : 0;
	n->raw_self_ns += raw > f.raw_kids_ns ? raw - f.raw_kids_ns : 0;
	n->calls++;
	if (s->f.n) {
		s->f.v[s->f.n - 1].kids_ns += span;
		s->f.v[s->f.n - 1].raw_kids_ns += raw;
	} else {
		/* Goroutines come and go by the million: forget idle ones. */
		CT_VEC_FREE(s->f);
		free(s);
		map_del(&b->stacks, k);
	}
}

struct kid_order {
	const struct ct_trace *t;
	const struct ct_flame_node *nodes;
};

static int cmp_kids(const void *a, const void *b, void *arg)
{
	const struct kid_order *o = arg;
	const struct ct_flame_node *x = &o->nodes[*(const uint32_t *)a], *y = &o->nodes[*(const uint32_t *)b];
	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	int c = strcmp(ct_flame_name(o->t, x->func), ct_flame_name(o->t, y->func));
	if (c)
		return c;
	return x->func < y->func ? -1 : x->func > y->func;
}

int ct_flame_build(struct ct_trace *t, const struct ct_filter_opts *filter, struct ct_flame *fl)
{
	struct flame_build b;
	memset(&b, 0, sizeof(b));
	b.t = t;
	b.canon = canonical_funcs(t);
	struct ct_flame_node root = {0};
	root.func = UINT32_MAX;
	CT_VEC_PUSH(b.nodes, root);
	struct ct_recon_ops ops = {flame_enter, flame_exit, NULL, NULL};
	memset(fl, 0, sizeof(*fl));
	fl->st = ct_filter_run(t, filter, &ops, &b);
	/* The reconstruction closes every frame at the end; this is in case a
	 * filter stopped passing exits on. */
	MAP_FOREACH(&b.stacks, i)
	{
		struct open_stack *s = b.stacks.vals[i];
		CT_VEC_FREE(s->f);
		free(s);
	}
	map_free(&b.stacks);
	map_free(&b.index);
	free(b.canon);

	fl->nodes = b.nodes.v;
	fl->n = b.nodes.n;
	struct ct_flame_node *nodes = fl->nodes;
	/* Children by name, as flamegraph.pl lays them out. */
	fl->kids = xmalloc((fl->n ? fl->n : 1) * sizeof(*fl->kids));
	for (size_t i = 1; i < fl->n; i++)
		fl->kids[i - 1] = (uint32_t)i;
	struct kid_order ko = {t, nodes};
	if (fl->n > 1)
		qsort_r(fl->kids, fl->n - 1, sizeof(*fl->kids), cmp_kids, &ko);
	for (size_t i = 0; i + 1 < fl->n; i++) {
		struct ct_flame_node *p = &nodes[nodes[fl->kids[i]].parent];
		if (!p->nkids)
			p->first_kid = (uint32_t)i;
		p->nkids++;
	}
	/* A child always has a higher index than its parent, so one backward
	 * pass sums every subtree. */
	for (size_t i = 0; i < fl->n; i++) {
		nodes[i].total_ns = nodes[i].self_ns;
		nodes[i].raw_total_ns = nodes[i].raw_self_ns;
		if (nodes[i].depth > fl->max_depth)
			fl->max_depth = nodes[i].depth;
	}
	for (size_t i = fl->n; i-- > 1;) {
		nodes[nodes[i].parent].total_ns += nodes[i].total_ns;
		nodes[nodes[i].parent].raw_total_ns += nodes[i].raw_total_ns;
		if (nodes[i].depth == 1)
			nodes[0].calls += nodes[i].calls;
	}
	return 0;
}

const char *ct_flame_name(const struct ct_trace *t, uint32_t func)
{
	return func == CT_FLAME_DEEPER ? "[deeper frames]" : ct_func_name(t, func);
}

void ct_flame_free(struct ct_flame *fl)
{
	free(fl->nodes);
	free(fl->kids);
	memset(fl, 0, sizeof(*fl));
}

static void put_safe_name(struct ct_buf *b, const char *name)
{
	if (!*name) {
		buf_put(b, "?", 1);
		return;
	}
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		char c = (char)*p;
		if (*p == ';' || *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')
			c = '_';
		else if (*p < 0x20 || *p == 0x7f)
			c = '?';
		buf_put(b, &c, 1);
	}
}

struct dfs_frame {
	uint32_t node, next_kid;
	size_t path_len;
};

int ct_render_folded(struct ct_trace *t, const struct ct_render_opts *o)
{
	struct ct_flame fl;
	ct_flame_build(t, o->filter, &fl);
	struct ct_buf path = {0};
	CT_VEC(struct dfs_frame) st = {0};
	struct dfs_frame top = {0, 0, 0};
	CT_VEC_PUSH(st, top);
	while (st.n) {
		struct dfs_frame *d = &st.v[st.n - 1];
		const struct ct_flame_node *n = &fl.nodes[d->node];
		if (d->next_kid == n->nkids) {
			st.n--;
			continue;
		}
		uint32_t kid = fl.kids[n->first_kid + d->next_kid++];
		path.n = d->path_len;
		if (path.n)
			buf_put(&path, ";", 1);
		put_safe_name(&path, ct_flame_name(t, fl.nodes[kid].func));
		if (fl.nodes[kid].self_ns) {
			fwrite(path.p, 1, path.n, o->out);
			fprintf(o->out, " %" PRIu64 "\n", fl.nodes[kid].self_ns);
		}
		struct dfs_frame next = {kid, 0, path.n};
		CT_VEC_PUSH(st, next);
	}
	CT_VEC_FREE(st);
	buf_free(&path);
	if (fl.st.lost)
		ct_warn("%" PRIu64 " events were lost while recording; stacks around the loss may be cut short",
			fl.st.lost);
	ct_flame_free(&fl);
	return 0;
}
