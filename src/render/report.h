/* Per-function statistics of a trace: the one aggregation behind `report`
 * and `report --diff` (see report.c for how self time and percentiles are
 * computed). */
#ifndef CT_REPORT_H
#define CT_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "render/render.h"

#define CT_HIST_SUB_BITS 7
#define CT_HIST_CHUNKS (64 - CT_HIST_SUB_BITS + 1)

struct ct_func_stats {
	uint32_t func;     /* function id (the first one of its name with by_name) */
	uint64_t returned, unwound, unfinished, exited, lost; /* lost: ended among lost events */
	uint64_t unobserved; /* it returns where no probe is: end not observed */
	uint64_t total, self, min, max; /* of the returned calls; min 0 without any */
	/* what the correction took out of them (raw - corrected), in all and
	 * between their children (self's share) */
	uint64_t taken_out, self_taken_out;
	/* how long their threads were off CPU while they ran (in total, and
	 * outside their shown children that returned: self's share) */
	uint64_t off_cpu, self_off_cpu;
	uint64_t p50, p99;
	uint64_t *chunk[CT_HIST_CHUNKS]; /* log-linear duration histogram */
};

struct ct_func_table {
	struct ct_trace *t;
	struct ct_func_stats **v; /* one per function that had a shown call */
	size_t n;
	uint64_t lost;            /* events lost while recording */
};

/* Runs T through FILTER (NULL: everything) and aggregates per function.
 * BY_NAME: functions that share a name (C statics, aliases) are one entry,
 * so that two traces can be matched by name. */
void ct_func_table_build(struct ct_trace *t, const struct ct_filter_opts *filter, bool by_name,
			 struct ct_func_table *out);
void ct_func_table_free(struct ct_func_table *ft);

static inline uint64_t ct_func_calls(const struct ct_func_stats *f)
{
	return f->returned + f->unwound + f->unfinished + f->exited + f->lost + f->unobserved;
}

static inline uint64_t ct_func_avg(const struct ct_func_stats *f)
{
	return f->returned ? f->total / f->returned : 0;
}

/* The report's JSON members of F after "func" (",\"calls\":…,\"max_ns\":…");
 * OFF_RECORDED: its trace recorded time off CPU (ct_trace_off_cpu_recorded):
 * off_cpu_ns and self_off_cpu_ns are there, 0 where there was none (null
 * without a returned call, as total_ns); else they are left out. */
void ct_func_json_fields(struct ct_buf *b, const struct ct_func_stats *f, bool off_recorded);
/* Whether T recorded its threads' time off CPU (META record.off_cpu; a
 * file from before that key has it where it counted some: stat off_cpu). */
bool ct_trace_off_cpu_recorded(const struct ct_trace *t);

/* report --diff: BASE and CUR side by side (O->histogram is not used). */
int ct_render_report_diff(struct ct_trace *base, struct ct_trace *cur, const struct ct_report_opts *o);

#endif
