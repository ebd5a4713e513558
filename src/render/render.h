/* Renderers: each reads a trace through the reconstruction module and
 * writes one output format. */
#ifndef CT_RENDER_H
#define CT_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "reconstruct/reconstruct.h"
#include "format/tracefile.h"
#include "render/filter.h"

struct ct_render_opts {
	FILE *out;
	bool color;
	bool merge; /* tree: time order instead of grouped by goroutine/thread */
	const struct ct_filter_opts *filter; /* NULL: everything */
};

/* uftrace-style text tree, merged by time (one line per call event). */
int ct_render_tree(struct ct_trace *t, const struct ct_render_opts *o);
/* JSON Lines: one object per call, in entry order. */
int ct_render_json(struct ct_trace *t, const struct ct_render_opts *o);
/* YAML 1.2: a list of the same mappings as the JSON Lines objects. */
int ct_render_yaml(struct ct_trace *t, const struct ct_render_opts *o);

/* The text tree fed event by event (live view; time order only). */
struct ct_tree_live;
struct ct_tree_live *ct_tree_live_new(struct ct_trace *t, const struct ct_render_opts *o);
void ct_tree_live_event(struct ct_tree_live *l, const struct ct_rec_event *ev);
void ct_tree_live_finish(struct ct_tree_live *l, uint64_t end_ts);

/* Shared formatting helpers. */
void ct_fmt_duration(char *buf, size_t n, uint64_t ns);  /* "  1.234 us" */
void ct_buf_duration(struct ct_buf *b, uint64_t ns);      /* the same, appended */
/* A corrected duration DUR of a call that measured RAW: 0 if it can be told
 * from no time at all, else what it is below, in ns with two significant
 * digits: the text's "< N" (ct_buf_duration_below), JSON/YAML's dur_below,
 * Chrome's and OTLP's too, by this one rule. */
uint64_t ct_dur_below(uint64_t dur, uint64_t raw);
/* What an unobserved call whose end a later event bounds (ct_call.end_bound)
 * lasted at most: BOUND, the corrected time from its entry to that event
 * (RAW measured), or where that is too short to tell from none, what it is
 * below (ct_dur_below).  JSON/YAML's dur_max, the text's "<=N", Chrome's
 * and OTLP's dur_max_ns: the same number. */
uint64_t ct_dur_max(uint64_t bound, uint64_t raw);
void ct_buf_duration_below(struct ct_buf *b, uint64_t ns); /* "< 0.590 us", as wide */
/* "<=12.346 us": what an UNOBSERVED call with end_bound lasted at most,
 * one character wider, over the blank before the duration column */
void ct_buf_duration_at_most(struct ct_buf *b, uint64_t ns);
const char *ct_func_name(const struct ct_trace *t, uint32_t func);
/* How long call C's thread was off CPU while it ran, if at all (at its
 * exit): "off CPU 201.344 us, preempted" (one kind), "off CPU 10.215 ms:
 * blocked 10.101 ms, preempted 114.000 us" (both), "by calltrace" where
 * calltrace's own thread took the CPU.  Whether it wrote anything. */
bool ct_buf_off_cpu(struct ct_buf *b, const struct ct_call *c);
/* Goroutine lineage: is O worth showing (a creator is known), and its text,
 * "created by main.main at main.go:42 in goroutine 1" (the file's base
 * name; "created in goroutine 1" without a position). */
bool ct_origin_shown(const struct ct_goroutine_origin *o);
void ct_buf_origin(struct ct_buf *b, const struct ct_trace *t, const struct ct_goroutine_origin *o);
/* The text outputs' note on the overhead correction (nothing without one). */
void ct_costs_note(FILE *out, struct ct_trace *t);
/* After the tree: what its "< N" (BELOW) and "<=N" (AT_MOST) durations
 * mean, for those it showed. */
void ct_bounds_note(FILE *out, bool below, bool at_most);
/* ns since the trace started (0 for anything earlier). */
uint64_t ct_rel_ts(const struct ct_trace *t, uint64_t ts);

/* dump --chrome: Chrome trace-event JSON for Perfetto UI and speedscope.
 * WITH_VALUES: put captured arguments and results in each event's "args". */
int ct_render_chrome(struct ct_trace *t, const struct ct_render_opts *o, bool with_values);
/* dump --folded: flamegraph.pl folded stacks weighted by self time in ns. */
int ct_render_folded(struct ct_trace *t, const struct ct_render_opts *o);
/* dump --events: the raw events in file order, one line each (render/events.c). */
int ct_render_events(struct ct_trace *t, const struct ct_render_opts *o);
/* dump --svg: a self-contained interactive flame graph. */
int ct_render_svg(struct ct_trace *t, const struct ct_render_opts *o);
/* "server --port 80": the recorded command line without the program's
 * directory (or the target's name); malloc'd. */
char *ct_command_name(const struct ct_trace *t);

/* The flame-graph aggregation behind --folded and --svg: one node per
 * distinct stack of function names (goroutines and threads merged), with the
 * self time and the number of calls at exactly that stack.  Memory grows with
 * the number of distinct stacks, not with the trace. */
struct ct_flame_node {
	uint32_t parent;     /* node index; the root (node 0, "all") has none */
	uint32_t func;       /* function id; UINT32_MAX for the root */
	uint32_t depth;      /* root 0, outermost traced frames 1 */
	uint32_t first_kid;  /* children: kids[first_kid .. first_kid + nkids), by name */
	uint32_t nkids;
	uint64_t self_ns;    /* summed self time of the calls at this stack */
	uint64_t total_ns;   /* self_ns summed over this node and every stack that
				extends it: the frame's width */
	uint64_t raw_self_ns, raw_total_ns; /* the same as measured (the
				correction's taken out: raw minus these) */
	uint64_t calls;
};

struct ct_flame {
	struct ct_flame_node *nodes; /* parents come before their children */
	size_t n;
	uint32_t *kids;
	uint32_t max_depth;
	struct ct_recon_stats st;
};

int ct_flame_build(struct ct_trace *t, const struct ct_filter_opts *filter, struct ct_flame *fl);
/* Stacks deeper than this end in one frame that stands for every deeper one
 * (a 100,000-deep recursion made 35 GB of folded stacks). */
#define CT_FLAME_MAX_DEPTH 512
#define CT_FLAME_DEEPER (UINT32_MAX - 1) /* its func */
_Static_assert(CT_FLAME_DEEPER != CT_FUNC_SCHED, "two pseudo-functions, one id");
/* graph: the calls merged by their path (uftrace's graph), as text or
 * JSON, from the flame graph's aggregation (render/graph.c). */
int ct_render_graph(struct ct_trace *t, const struct ct_render_opts *o, bool json);
/* A flame node's function name ("[deeper frames]" for CT_FLAME_DEEPER). */
const char *ct_flame_name(const struct ct_trace *t, uint32_t func);
void ct_flame_free(struct ct_flame *fl);

/* The JSON object of one call (a JSON Lines line without its newline), shared
 * by the JSON Lines and YAML renderers so both show the same keys and values.
 * Durations and results come from an exit index that ct_json_calls_run
 * makes for its filter; calls must be passed in entry order. */
struct ct_json_calls;
struct ct_json_calls *ct_json_calls_new(struct ct_trace *t);
void ct_json_calls_free(struct ct_json_calls *jc);
/* Runs JC's trace through FILTER into OPS, the filter reading durations
 * from JC's exit index: the trace is read once (twice under -t: see
 * ct_filter_exitindex). */
void ct_json_calls_run(struct ct_json_calls *jc, const struct ct_filter_opts *filter, const struct ct_recon_ops *ops,
		       void *ctx);
void ct_json_call_object(struct ct_json_calls *jc, const struct ct_call *c, struct ct_buf *out);
/* {"ts":…,"lost":N} */
void ct_json_lost_object(const struct ct_trace *t, uint64_t ts, uint64_t n, struct ct_buf *out);

/* Appends the JSON object OBJ/N (as built above) as one item of a YAML block
 * sequence: "- key: value" lines, values as JSON-compatible flow scalars
 * made safe for any YAML 1.2 (and 1.1) parser. */
void ct_yaml_item_from_json(const char *obj, size_t n, struct ct_buf *out);

/* report: per-function call counts and durations. */
enum ct_report_sort {
	CT_SORT_TOTAL, CT_SORT_SELF, CT_SORT_CALLS, CT_SORT_AVG, CT_SORT_MIN,
	CT_SORT_MAX, CT_SORT_P50, CT_SORT_P99, CT_SORT_FUNC,
	CT_SORT_OFF, CT_SORT_SELF_OFF, /* time off CPU, in total and self's share */
};
struct ct_report_opts {
	FILE *out;
	const struct ct_filter_opts *filter; /* NULL: everything */
	enum ct_report_sort sort;
	bool json;
	const char **histogram; /* globs: functions that get a latency histogram */
	size_t nhistogram;
};
/* Parses a -s key ("total", "p99", ...); false if unknown. */
bool ct_report_sort_parse(const char *s, enum ct_report_sort *out);
int ct_render_report(struct ct_trace *t, const struct ct_report_opts *o);

#endif
