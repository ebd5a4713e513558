/* Replay-time filters shared by replay, report and dump.  A filter sits
 * between the reconstruction and a renderer: it passes on only the calls to
 * show, with `depth` renumbered to count shown ancestors only (so a -F root
 * is at depth 0). */
#ifndef CT_FILTER_H
#define CT_FILTER_H

#include "reconstruct/reconstruct.h"

struct ct_exitindex;

struct ct_filter_opts {
	const char **only;  /* -F: subtrees rooted at matching functions */
	size_t nonly;
	const char **hide;  /* -N: hide matching subtrees */
	size_t nhide;
	uint32_t max_depth; /* -D: shown depth < max_depth (0: no limit) */
	uint64_t min_dur;   /* -t: hide calls shorter than this (ns); calls that
			       did not return count as long */
	bool has_goid;      /* --goroutine */
	uint64_t goid;
	bool with_children; /* --with-children: and the goroutines it made, transitively */
	bool has_tid;       /* --tid: thread at entry */
	uint32_t tid;
	bool has_since, has_until; /* --since/--until: entry time, ns from the start */
	uint64_t since, until;
	uint64_t max_calls; /* --max-calls: stop after this many calls (0: all) */
};

/* Does any option need filtering at all? */
bool ct_filter_active(const struct ct_filter_opts *o);

/* Runs T through reconstruction and the filter into DOWN.  Returns the
 * reconstruction stats. */
struct ct_recon_stats ct_filter_run(struct ct_trace *t, const struct ct_filter_opts *o,
				    const struct ct_recon_ops *down, void *ctx);
/* The same for a renderer that needs T's exit index X (JSON, YAML), made
 * by ct_filter_exitindex: the run is X's (ct_exitindex_run), so that each
 * call's end is known at its entry, to the renderer and to -t, which would
 * otherwise build an index of its own and read the trace once more.  X
 * stays the caller's. */
/* The exit index to pass to ct_filter_run_indexed under O: one pass, the
 * filter before it (only the calls shown held back), unless O has -t, whose
 * decision needs the index first: then two passes (spilling nearly every
 * callback behind each goroutine's outermost call costs more than a first
 * pass). */
struct ct_exitindex *ct_filter_exitindex(struct ct_trace *t, const struct ct_filter_opts *o);
struct ct_recon_stats ct_filter_run_indexed(struct ct_trace *t, const struct ct_filter_opts *o,
					    struct ct_exitindex *x, const struct ct_recon_ops *down, void *ctx);

/* The one stderr line of a finished recording without a call (none cut,
 * none lost): the NFUNCS functions traced in BIN never ran (STRIPPED: BIN
 * is stripped and no library is traced: say how to trace one).  replay,
 * report and dump say it of such a file, record and live at its end. */
void ct_note_never_ran(const char *bin, const char *nfuncs, bool stripped);
/* The same for a recording whose traced processes forked FORKS others
 * (not traced, no --follow): where the calls may well have been.  False
 * (nothing said) if FORKS is 0. */
bool ct_note_forked(const char *bin, const char *nfuncs, unsigned long long forks);

/* Parses one filter option of replay/report/dump, or --demangle (how
 * names are shown; -F/-N match every form), given the getopt value VAL for
 * the long option NAME or short letter.  Returns 0, 1 if NAME is not a filter
 * option, or -1 with a message printed for a bad value. */
int ct_filter_parse(struct ct_filter_opts *o, int opt, const char *val);
/* After parsing: options that need one another.  -1 with a message printed. */
int ct_filter_check(const struct ct_filter_opts *o);
void ct_filter_free(struct ct_filter_opts *o);
/* getopt_long entries and help text for the filter options. */
extern const char ct_filter_help[];
#define CT_FILTER_SHORTOPTS "F:N:D:t:"
#define CT_FILTER_LONGOPTS                                         \
	{"filter", required_argument, NULL, 'F'},                  \
	{"notrace", required_argument, NULL, 'N'},                 \
	{"depth", required_argument, NULL, 'D'},                   \
	{"time-filter", required_argument, NULL, 't'},             \
	{"goroutine", required_argument, NULL, 0x1001},            \
	{"tid", required_argument, NULL, 0x1002},                  \
	{"since", required_argument, NULL, 0x1003},                \
	{"until", required_argument, NULL, 0x1004},                \
	{"max-calls", required_argument, NULL, 0x1005},            \
	{"demangle", required_argument, NULL, 0x1006},             \
	{"with-children", no_argument, NULL, 0x1007},             \
	{"raw", no_argument, NULL, 0x1008},                        \
	{"sched", no_argument, NULL, 0x1009}

#endif
