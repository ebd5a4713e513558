/* Renderers: each reads a trace through the reconstruction module and
 * writes one output format. */
#ifndef CT_RENDER_H
#define CT_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "reconstruct/reconstruct.h"
#include "record/tracefile.h"
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

/* Shared formatting helpers. */
void ct_fmt_duration(char *buf, size_t n, uint64_t ns);  /* "  1.234 us" */
void ct_json_string(FILE *f, const char *s);             /* quoted, escaped */
const char *ct_func_name(const struct ct_trace *t, uint32_t func);
/* ns since the trace started (0 for anything earlier). */
uint64_t ct_rel_ts(const struct ct_trace *t, uint64_t ts);

#endif
