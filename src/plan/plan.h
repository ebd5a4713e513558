/* The plan: which functions of a target get probed, at which sites, with
 * which cookie.  Second stage: target -> plan -> probes. */
#ifndef CT_PLAN_H
#define CT_PLAN_H

#include "plan/fetch.h"
#include "plan/sites.h"
#include "record/tracefile.h"
#include "target/target.h"

struct ct_plan_func {
	const struct ct_func *fn; /* in the target */
	uint64_t entry_site;
	bool entry_emulated;
	uint32_t nexits;
};

struct ct_plan_site {
	uint64_t addr;   /* link-time vaddr */
	uint64_t offset; /* file offset, for the uprobe */
	uint32_t func;   /* plan function index, CT_NOFUNC for goexit */
	uint8_t kind;    /* enum ct_site_kind */
	uint64_t target_addr; /* TAIL/RESTART: jump or call target */
	uint32_t target_func; /* TAIL: traced function at target_addr */
	uint8_t gsrc;    /* enum ct_gsrc */
};

struct ct_plan_skip {
	const struct ct_func *fn;
	char *why;
};

struct ct_selection {
	const char **trace;   /* -F globs; none = the default set */
	size_t ntrace;
	const char **exclude; /* -N globs */
	size_t nexclude;
	bool lenient;         /* exact names may be missing (--follow: other binaries) */
};

/* What to capture besides the calls themselves. */
struct ct_args_opts {
	bool enabled;           /* --no-args turns it off */
	const char **args;      /* -A 'GLOB[@name,name]': arguments of these */
	size_t nargs;
	const char **rets;      /* -R GLOB: results of these */
	size_t nrets;           /* no -A and no -R: everything */
	struct ct_fetch_opts fetch;
};

struct ct_plan {
	const struct ct_target *t;
	CT_VEC(struct ct_plan_func) funcs;
	CT_VEC(struct ct_plan_site) sites;
	size_t cheap_entries, slow_entries;
	/* Selected functions that cannot be probed (undecodable, or the kernel
	 * refuses an instruction a probe would go on), with the reason. */
	CT_VEC(struct ct_plan_skip) skipped;
	/* Argument capture (plan/args.c): per site id, NULL if none. */
	struct ct_site_fetch **fetch;
	struct ct_types *types;
	const char *args_note; /* why arguments are not captured, if so */
	size_t args_funcs, args_incomplete;
};

/* Selects functions and finds their sites.  Fails with one line when nothing
 * matches or a selected function cannot be decoded. */
int ct_plan_build(struct ct_plan *p, const struct ct_target *t, const struct ct_selection *sel);
void ct_plan_free(struct ct_plan *p);

/* Plans argument/result capture for every planned function (needs DWARF;
 * without it, raw words).  Never fails: what cannot be captured is marked. */
void ct_plan_args(struct ct_plan *p, const struct ct_args_opts *o);

/* Is F part of the default selection (main program's own code)? */
bool ct_plan_default_selected(const struct ct_target *t, const struct ct_func *f);

/* "a, b, c (and N more)": the skipped functions' names, for one line. */
char *ct_plan_skipped_names(const struct ct_plan *p, size_t max);

/* The tables as they go into the record file. */
void ct_plan_file_tables(const struct ct_plan *p, struct ct_file_func **funcs, struct ct_file_site **sites);

#endif
