/* Replay-time filters (render/filter.c) over a record file written with the
 * real writer: which calls each option shows, and at which depth. */
#include "unit.h"

#include "render/filter.h"
#include "render/render.h"
#include "target/target.h"
#include "util/util.h"

#include <stdlib.h>
#include <unistd.h>

static struct ct_file_func ffuncs[] = {
	{0, "main", 0x1000, 0x100, 0},
	{1, "work", 0x1100, 0x100, 0},
	{2, "helper", 0x1200, 0x100, 0},
	{3, "noise", 0x1300, 0x100, 0},
	/* a goroutine's call of C through cgo, which calls back into Go */
	{4, "callC", 0x1400, 0x100, CT_FN_GO},
	{5, "c_outer", 0x1500, 0x100, 0},
	{6, "cb", 0x1600, 0x100, CT_FN_GO},
};
#define FNF (sizeof(ffuncs) / sizeof(ffuncs[0]))

/* An entry (site 2f) and a RET (site 2f+1) per function. */
static struct ct_file_site fsites[2 * FNF];

struct hit {
	uint64_t ts;
	uint32_t tid, func;
	uint64_t key;
	bool ret;
	uint64_t goid;
	uint16_t flags;
};

/* Thread 10:  main [0,1000] > work [100,600] > helper [200,250], helper [300,500];
 *             main > noise [700,900].   Thread 11: work [1100,1400]. */
static const struct hit stream[] = {
	{0, 10, 0, 100, false, 0, 0},    {100, 10, 1, 200, false, 0, 0}, {200, 10, 2, 300, false, 0, 0},
	{250, 10, 2, 300, true, 0, 0},   {300, 10, 2, 300, false, 0, 0}, {500, 10, 2, 300, true, 0, 0},
	{600, 10, 1, 200, true, 0, 0},   {700, 10, 3, 200, false, 0, 0}, {900, 10, 3, 200, true, 0, 0},
	{1000, 10, 0, 100, true, 0, 0},  {1100, 11, 1, 100, false, 0, 0}, {1400, 11, 1, 100, true, 0, 0},
};

/* Goroutine 1 on thread 12: callC [0,1000] > (system stack) c_outer
 * [100,900] > (goroutine's stack again) cb [200,300]. */
static const struct hit cgo_stream[] = {
	{0, 12, 4, 100, false, 1, 0},
	{100, 12, 5, 100, false, 1, CT_EV_SYSSTACK},
	{200, 12, 6, 300, false, 1, 0},
	{300, 12, 6, 300, true, 1, 0},
	{900, 12, 5, 100, true, 1, CT_EV_SYSSTACK},
	{1000, 12, 4, 100, true, 1, 0},
};

static char *write_stream(const struct hit *hits, size_t n)
{
	for (uint32_t f = 0; f < FNF; f++) {
		fsites[2 * f] = (struct ct_file_site){2 * f, ffuncs[f].entry, f, CT_SITE_ENTRY, CT_NOFUNC, 0,
						      UINT32_MAX, UINT32_MAX, 0};
		fsites[2 * f + 1] = (struct ct_file_site){2 * f + 1, ffuncs[f].entry + 0xff, f, CT_SITE_RET,
							  CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0};
	}
	const char *base = getenv("TMPDIR");
	char *path = xasprintf("%s/ct-filter-XXXXXX", base && *base ? base : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	close(fd);
	unlink(path); /* (a name no other has; the writer would keep it as PATH.old) */
	struct ct_writer *w = ct_writer_create(path);
	if (!w)
		return NULL;
	ct_writer_meta(w, "clock.start_ns", "%d", 0);
	ct_writer_meta(w, "target.lang", "%s", "c");
	if (ct_writer_begin(w, ffuncs, FNF, fsites, 2 * FNF))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		struct ct_event e = {.ts = hits[i].ts, .key = hits[i].key, .pid = 10, .tid = hits[i].tid,
				     .site = 2 * hits[i].func + hits[i].ret, .goid = hits[i].goid,
				     .flags = hits[i].flags};
		ct_writer_event(w, &e, NULL);
	}
	ct_writer_stat(w, "clock.end_ns", "%d", 2000);
	return ct_writer_close(w) ? NULL : path;
}

static char *write_trace(void)
{
	return write_stream(stream, sizeof(stream) / sizeof(stream[0]));
}

static void on_enter(void *ctx, const struct ct_call *c)
{
	struct ct_buf *b = ctx;
	buf_printf(b, "%s%s@%u", b->n ? " " : "", ffuncs[c->func].name, c->depth);
}

/* The calls the filter shows, in entry order: "name@depth ...". */
static char *shown(const char *path, const struct ct_filter_opts *o)
{
	struct ct_trace t;
	if (ct_trace_open(&t, path))
		return xstrdup(ct_error());
	struct ct_buf b = {0};
	struct ct_recon_ops ops = {on_enter, NULL, NULL, NULL};
	ct_filter_run(&t, o, &ops, &b);
	ct_trace_close(&t);
	buf_u8(&b, 0);
	return (char *)b.p;
}

/* One option parsed the way replay's getopt hands it over. */
static struct ct_filter_opts opt(int letter, const char *val)
{
	struct ct_filter_opts o = {0};
	if (ct_filter_parse(&o, letter, val))
		abort();
	return o;
}

#define CHECK_SHOWN(path, o, want)                                             \
	do {                                                                   \
		struct ct_filter_opts o_ = (o);                                \
		char *got_ = shown(path, &o_);                                 \
		ct_filter_free(&o_);                                           \
		int ok_ = !strcmp(got_, want);                                 \
		if (!ok_)                                                      \
			unit_fail(__FILE__, __LINE__, "%s: \"%s\" != \"%s\"", #o, got_, want); \
		free(got_);                                                    \
		if (!ok_)                                                      \
			return;                                                \
	} while (0)

TEST(filters_select_calls)
{
	char *path = write_trace();
	CHECK(path != NULL);
	struct ct_filter_opts none = {0};
	CHECK_SHOWN(path, none, "main@0 work@1 helper@2 helper@2 noise@1 work@0");
	/* -F: subtrees rooted at matches, depth counted from the match */
	CHECK_SHOWN(path, opt('F', "work"), "work@0 helper@1 helper@1 work@0");
	CHECK_SHOWN(path, opt('F', "h*"), "helper@0 helper@0");
	/* -N: whole subtrees hidden */
	CHECK_SHOWN(path, opt('N', "work"), "main@0 noise@1");
	CHECK_SHOWN(path, opt('D', "2"), "main@0 work@1 noise@1 work@0");
	/* -t: calls shorter than the time go (helper took 50 ns) */
	CHECK_SHOWN(path, opt('t', "100ns"), "main@0 work@1 helper@2 noise@1 work@0");
	CHECK_SHOWN(path, opt(0x1002, "11"), "work@0");
	CHECK_SHOWN(path, opt(0x1003, "700ns"), "noise@0 work@0");
	CHECK_SHOWN(path, opt(0x1004, "250ns"), "main@0 work@1 helper@2");
	CHECK_SHOWN(path, opt(0x1005, "2"), "main@0 work@1");
	/* options combine: every one must let a call through */
	struct ct_filter_opts both = opt('F', "work");
	CHECK_EQ_I(ct_filter_parse(&both, 'D', "1"), 0);
	CHECK_SHOWN(path, both, "work@0 work@0");
	unlink(path);
	free(path);
}

/* C a goroutine called through cgo runs on its thread's system stack, its
 * depth counted there (0), yet inside the Go call that made it, and the Go
 * it calls back inside it: -F and -N follow them down (-F callC showed no
 * C, -N c_outer kept its callback); -D counts on each stack. */
TEST(filters_follow_a_goroutine_into_its_c_and_back)
{
	char *path = write_stream(cgo_stream, sizeof(cgo_stream) / sizeof(cgo_stream[0]));
	CHECK(path != NULL);
	struct ct_filter_opts none = {0};
	CHECK_SHOWN(path, none, "callC@0 c_outer@0 cb@1");
	CHECK_SHOWN(path, opt('F', "callC"), "callC@0 c_outer@0 cb@1");
	CHECK_SHOWN(path, opt('F', "c_outer"), "c_outer@0 cb@0");
	CHECK_SHOWN(path, opt('N', "c_outer"), "callC@0");
	CHECK_SHOWN(path, opt('D', "1"), "callC@0 c_outer@0");
	unlink(path);
	free(path);
}

/* replay --format=json|yaml under a filter: -t decides on a call's
 * duration, from the exit index the JSON needs for durations and results:
 * the events are read once for the index's first pass and once for the
 * output.  -D decides at entry, before the index, which then holds back
 * only the calls shown, in one pass. */
TEST(json_filters_read_the_trace_once_or_twice)
{
	static const struct {
		char opt;
		const char *val;
		unsigned passes;
		const char *shown_json, *shown_yaml, *hidden_json, *hidden_yaml; /* a shown call's, a hidden one's */
	} cases[] = {
		/* the helper that took 200 ns is shown, the one of 50 ns is not */
		{'t', "100ns", 2, "\"dur\":200,", "dur: 200\n", "\"dur\":50,", "dur: 50\n"},
		/* work, at depth 1, is shown with its end (500 ns); helper, at 2, is not */
		{'D', "2", 1, "\"dur\":500,", "dur: 500\n", "helper", "helper"},
	};
	int (*render[])(struct ct_trace *, const struct ct_render_opts *) = {ct_render_json, ct_render_yaml};
	char *path = write_trace();
	CHECK(path != NULL);
	for (size_t k = 0; k < sizeof(cases) / sizeof(*cases); k++)
		for (size_t i = 0; i < 2; i++) {
			struct ct_filter_opts o = opt(cases[k].opt, cases[k].val);
			struct ct_trace t;
			CHECK_EQ_I(ct_trace_open(&t, path), 0);
			char *text = NULL;
			size_t len = 0;
			FILE *out = open_memstream(&text, &len);
			struct ct_render_opts ro = {out, false, false, &o};
			CHECK_EQ_I(render[i](&t, &ro), 0);
			fclose(out);
			CHECK_EQ_U(t.event_passes, cases[k].passes);
			CHECK(strstr(text, i ? cases[k].shown_yaml : cases[k].shown_json));
			CHECK(!strstr(text, i ? cases[k].hidden_yaml : cases[k].hidden_json));
			ct_trace_close(&t);
			ct_filter_free(&o);
			free(text);
		}
	unlink(path);
	free(path);
}

TEST(filter_options_refuse_bad_values)
{
	struct ct_filter_opts o = {0};
	/* each prints one line; stderr is the test log's */
	CHECK_EQ_I(ct_filter_parse(&o, 'D', "0"), -1);
	CHECK_EQ_I(ct_filter_parse(&o, 't', "soon"), -1);
	CHECK_EQ_I(ct_filter_parse(&o, 0x1002, "4294967296"), -1);
	CHECK_EQ_I(ct_filter_parse(&o, 0x1005, "0"), -1);
	CHECK_EQ_I(ct_filter_parse(&o, 'x', "1"), 1);
	CHECK(!ct_filter_active(&o));
	ct_filter_free(&o);
}
