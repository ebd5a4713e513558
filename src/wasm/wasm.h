/* The WebAssembly backend, as the commands and the session see it.
 *
 *   module.c    reads the binary (sections, functions, names, code)
 *   gowasm.c    Go js/wasm facts: exact Go names from the pclntab, g layout
 *   dwarf.c     parameter names from the module's DWARF (through libdw)
 *   rewrite.c   instruments the selected functions (inline enter/exit hooks)
 *   recorder/   the hooks' implementation, a wasm module built from C
 *   runner.cjs  runs the module on node (node:wasi, or Go's wasm_exec.js)
 *   wasm.c      target + plan: which functions, site and function tables,
 *               captured values; `list`
 *   run.c       record: private directory, pipe, node, events into the
 *               session loop
 *
 * Events reach the record file through the normal session loop
 * (record/session.c), so replay, report, dump and live need nothing new. */
#ifndef CT_WASM_H
#define CT_WASM_H

#include <stdbool.h>
#include <stdio.h>

#include "plan/plan.h"
#include "probes/event.h"
#include "format/tracefile.h"
#include "wasm/gowasm.h"
#include "wasm/module.h"
#include "wasm/rewrite.h"

/* A file starting with the wasm magic "\0asm". */
bool ct_wasm_is_module(const char *path);

struct ct_wasm_target {
	char *path;
	uint8_t *bytes;
	size_t size;
	struct ct_wasm_module m;
	bool go;               /* Go GOOS=js module */
	struct ct_gowasm gw;
	bool *traceable;       /* per function index */
};
int ct_wasm_target_open(struct ct_wasm_target *t, const char *path);
void ct_wasm_target_close(struct ct_wasm_target *t);
/* The name shown for function F (Go: the exact Go name). */
const char *ct_wasm_name(const struct ct_wasm_target *t, uint32_t f);

struct ct_wasm_plan {
	CT_VEC(struct ct_wasm_instr) fns;  /* sorted by function index */
	struct ct_file_func *funcs;        /* the record file's tables */
	size_t nfuncs;
	struct ct_file_site *sites;
	size_t nsites;
	struct ct_site_fetch **fetch;      /* per site, NULL without values */
	struct ct_typetab types;           /* i32, i64, f32, f64 */
	const char *args_note;
};
/* Applies -F/-N (default: every defined function of a WASI module; package
 * main and the main module of a Go one), and plans values (-A/-R/--no-args). */
int ct_wasm_plan_build(struct ct_wasm_plan *p, const struct ct_wasm_target *t, const struct ct_selection *sel,
		       const struct ct_args_opts *ao);
void ct_wasm_plan_free(struct ct_wasm_plan *p);

/* Names the captured parameters from the module's DWARF, if it has some
 * (dwarf.c; DIR: where a temporary ELF copy of the sections may go). */
void ct_wasm_dwarf_names(struct ct_wasm_plan *p, const struct ct_wasm_target *t, const char *dir);

/* `calltrace list MODULE [GLOB...]` */
int ct_wasm_list(const char *path, const char **globs, size_t nglobs, const char **excl, size_t nexcl);

/* ---- recording (run.c) ---- */
struct ct_wasm_run;
struct ct_wasm_limits {
	uint32_t flags; /* CT_LIM_* */
	uint32_t max_depth, sample_n, sample_g_n;
	uint64_t min_dur_ns, max_events;
	const char **roots;
	size_t nroots;
};
/* Plans, instruments and stages the module in a private 0700 directory,
 * with the runner and the recorder, and opens the event pipe. */
struct ct_wasm_run *ct_wasm_run_prepare(const char *path, const struct ct_selection *sel,
					const struct ct_args_opts *ao, const struct ct_wasm_limits *lim);
const struct ct_wasm_plan *ct_wasm_run_plan(const struct ct_wasm_run *r);
void ct_wasm_run_meta(const struct ct_wasm_run *r, struct ct_writer *w);
/* What to exec instead of the module: node with the runner.  PROG is the
 * user's command line (module and its arguments). */
int ct_wasm_run_exec(struct ct_wasm_run *r, char **prog, const char **exec_path, char ***exec_argv);
/* In the tracer after the fork: the pipe's write end belongs to the child. */
void ct_wasm_run_started(struct ct_wasm_run *r);
/* Reads what arrived (waiting up to TIMEOUT_MS), handing each event to FN.
 * Returns the number of events, 0 at the end of the stream too, -1 on error. */
int ct_wasm_run_poll(struct ct_wasm_run *r, int timeout_ms,
		     int (*fn)(void *ctx, const struct ct_event *e, const void *payload), void *ctx);
bool ct_wasm_run_eof(const struct ct_wasm_run *r);
/* The recorder's stream (wire.h) as it is decoded: what its records said
 * for the ones after them. */
struct ct_wire_reader {
	uint32_t pid; /* the runner's, and the goroutine of the records read */
	uint64_t goid;
	uint64_t ts;       /* the last record's time */
	uint64_t next_key; /* a CT_WIRE_KEY's, for the next record */
	bool have_key;
	uint64_t counters[CT_CNT_MAX]; /* the CT_WIRE_STATS record's */
};
/* Hands the events of the whole records in P..P+N to FN (their number
 * added to *EVENTS); returns the bytes they took: the rest is the start of
 * a record still coming. */
size_t ct_wasm_wire_decode(struct ct_wire_reader *rd, const uint8_t *p, size_t n,
			   int (*fn)(void *ctx, const struct ct_event *e, const void *payload), void *ctx,
			   int *events);
/* Stops reading: the runner notices and lets the program run untraced. */
void ct_wasm_run_stop(struct ct_wasm_run *r);
/* The recorder's counters (enum ct_counter), known once the stream ended. */
uint64_t ct_wasm_run_counter(const struct ct_wasm_run *r, int which);
void ct_wasm_run_free(struct ct_wasm_run *r);

#endif
