/* calltrace info: what a record file holds — a summary first (command,
 * binary, Go version, start, duration, events, lost, cut, size), then every
 * metadata and stats key as stored. */
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmds/cmds.h"
#include "reconstruct/reconstruct.h"
#include "format/tracefile.h"
#include "render/render.h"
#include "util/util.h"

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

/* "LABEL VALUE": VALUE comes from the traced program (its arguments, its
 * path), so its control characters are shown as \xNN, not sent to the
 * terminal (an escape sequence in an argument set the window's title). */
static void print_escaped(const char *label, const char *value)
{
	char *shown = ct_shown(value);
	printf("%-12s %s\n", label, shown);
	free(shown);
}

struct stepped_site {
	uint32_t site;
	uint64_t hits;
};

static int cmp_stepped(const void *x, const void *y)
{
	const struct stepped_site *a = x, *b = y;
	if (a->hits != b->hits)
		return a->hits < b->hits ? 1 : -1;
	return (a->site > b->site) - (a->site < b->site);
}

/* The probes the kernel single-steps (~20x an emulated hit's cost: where a
 * trace's overhead goes), by how often they were hit, the TOP most; `list
 * -v` says why each is where it is. */
static void print_steps(struct ct_trace *t, size_t top)
{
	uint64_t *hits = xcalloc(t->nsites ? t->nsites : 1, sizeof(*hits));
	uint64_t events = 0, stepped = 0;
	struct ct_event_iter it;
	struct ct_rec_event ev;
	ct_iter_init(&it, t);
	while (ct_iter_next(&it, &ev)) {
		if (ev.kind >= CT_SITE_NKINDS || ev.site >= t->nsites)
			continue;
		events++;
		if (t->sites[ev.site].flags & CT_SITEF_STEPPED) {
			hits[ev.site]++;
			stepped++;
		}
	}
	ct_iter_free(&it);
	struct stepped_site *v = xcalloc(t->nsites ? t->nsites : 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < t->nsites; i++)
		if (hits[i])
			v[n++] = (struct stepped_site){(uint32_t)i, hits[i]};
	qsort(v, n, sizeof(*v), cmp_stepped);
	printf("%-12s %llu of %llu probe hits (%.1f%%)%s\n", "stepped:", (unsigned long long)stepped,
	       (unsigned long long)events, events ? 100.0 * (double)stepped / (double)events : 0.0,
	       n ? ", by probe (calltrace list -v BINARY FUNCTION says why each is single-stepped):" : "");
	for (size_t k = 0; k < n && k < top; k++) {
		const struct ct_file_site *s = &t->sites[v[k].site];
		const char *fn = s->func < t->nfuncs ? ct_names_show(&t->func_names[s->func], t->funcs[s->func].name) : "-";
		/* a CALL site's event is sent by the callee's entry probe (its
		 * CHECK), hit for a call from there; a return site's closes a call
		 * from its CALL site */
		bool at_check = s->kind == CT_SITE_CALL && (s->flags & CT_SITEF_ATCHECK);
		uint64_t from = at_check ? s->addr
			      : s->kind == CT_SITE_RETSITE && s->call_site < t->nsites ? t->sites[s->call_site].addr : 0;
		char where[40] = "";
		if (!at_check)
			snprintf(where, sizeof(where), "0x%llx", (unsigned long long)s->addr);
		char call[48] = "";
		if (from)
			snprintf(call, sizeof(call), " (its call at 0x%llx)", (unsigned long long)from);
		printf("  %10llu  %-7s %-10s %s%s\n", (unsigned long long)v[k].hits,
		       at_check || s->kind == CT_SITE_ENTRY || s->kind == CT_SITE_CHECK ? "entry"
		       : s->kind == CT_SITE_RETSITE ? "return"
							      : s->kind == CT_SITE_RET ? "ret" : "other",
		       where, fn, call);
	}
	free(v);
	free(hits);
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{"calls", no_argument, NULL, 'c'},
		{"steps", no_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool calls = false, steps = false;
	int c;
	optind = 1;
	opterr = 0; /* one line of our own: ct_bad_option */
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			calls = true;
			break;
		case 's':
			steps = true;
			break;
		case 'h':
			printf("Usage: calltrace info [--calls] [--steps] [FILE]\n"
			       "\n"
			       "  FILE                  record file (default: calltrace.data)\n"
			       "  --calls               also rebuild the calls and count how each ended:\n"
			       "                        returned (seen at a RET, at the probe after the call, or\n"
			       "                        with the call it is in tail position in), unwound,\n"
			       "                        unfinished; and calls from call sites the plan did not\n"
			       "                        know (--exit=auto)\n"
			       "  --steps               also count the hits of the probes the kernel\n"
			       "                        single-steps (each costs ~20x an emulated one), the 20\n"
			       "                        most hit: the entry, return (the probe after a call)\n"
			       "                        or ret of the function named (list -v says why)\n");
			return 0;
		default:
			return ct_bad_option("info", c, argv, opts);
		}
	}
	if (argc - optind > 1) {
		ct_print_errorf("info: one record file at most, not '%s' and '%s' (see calltrace info --help)",
				argv[optind], argv[optind + 1]);
		return 2;
	}
	const char *path = optind < argc ? argv[optind] : "calltrace.data";
	struct ct_trace t;
	if (ct_trace_open(&t, path)) {
		ct_print_error();
		return 1;
	}
	const char *rt = ct_trace_meta(&t, "clock.realtime_ns");
	const char *end = ct_trace_stat(&t, "clock.end_ns");
	char when[64] = "-", dur[32] = "-";
	if (rt) {
		time_t secs = (time_t)(strtoull(rt, NULL, 10) / 1000000000ULL);
		struct tm tm;
		localtime_r(&secs, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %z", &tm);
	}
	if (end && t.first_ts) {
		ct_fmt_duration(dur, sizeof(dur), strtoull(end, NULL, 10) - t.first_ts);
		char *p = dur;
		while (*p == ' ')
			p++;
		memmove(dur, p, strlen(p) + 1);
	}
	const char *lang = ct_trace_meta(&t, "target.lang");
	printf("# %s\n", path);
	print_escaped("command:", or_dash(ct_trace_meta(&t, "record.cmdline")));
	print_escaped("binary:", or_dash(ct_trace_meta(&t, "target.path")));
	const char *format = ct_trace_meta(&t, "target.format");
	bool wasm = format && !strcmp(format, "wasm");
	if (wasm) {
		const char *runtime = or_dash(ct_trace_meta(&t, "wasm.runtime"));
		bool go = lang && !strcmp(lang, "go");
		printf("%-12s WebAssembly, %s, run by %s\n", "program:",
		       go && strstr(runtime, "wasm_exec") ? "Go js/wasm" : go ? "Go WASI" : "WASI", runtime);
	}
	if (lang && !strcmp(lang, "go"))
		printf("%-12s Go %s, %s ABI, module %s\n", "program:", or_dash(ct_trace_meta(&t, "go.version")),
		       or_dash(ct_trace_meta(&t, "go.abi")), or_dash(ct_trace_meta(&t, "go.module")));
	else if (!wasm) { /* (files without target.kind, older ones: C/SysV for C, C++ and Rust) */
		const char *kind = ct_trace_meta(&t, "target.kind");
		printf("%-12s %s\n", "program:", kind ? kind : "C/SysV");
	}
	printf("%-12s %s\n", "started:", when);
	printf("%-12s %s%s\n", "duration:", dur, t.stats.n ? "" : " (the tracer did not finish)");
	printf("%-12s %s (%s functions, %s probe sites)\n", "events:", or_dash(ct_trace_stat(&t, "events")),
	       or_dash(ct_trace_meta(&t, "plan.functions")), or_dash(ct_trace_meta(&t, "plan.sites")));
	printf("%-12s %s\n", "lost:", or_dash(ct_trace_stat(&t, "lost")));
	printf("%-12s %s (limits: %s)\n", "cut:", or_dash(ct_trace_stat(&t, "cut")), or_dash(ct_trace_meta(&t, "limits")));
	printf("%-12s %s\n", "exit:", or_dash(ct_trace_stat(&t, "exit")));
	printf("%-12s %lld bytes%s\n", "file size:", t.file_size,
	       t.truncated ? " -- ends early (" CT_TRUNCATED_WHY "); replay shows what was whole" : "");
	if (calls) {
		struct ct_recon_ops none = {0};
		struct ct_recon_stats st = ct_recon_run(&t, &none, NULL);
		printf("%-12s %llu: returned %llu (at a RET %llu, after the call %llu (%llu single-stepped, %llu at exit probes added while recording), with their caller %llu), unwound %llu, unfinished %llu, unobserved %llu; %llu from unplanned call sites, %llu indirect from call sites found while recording\n",
		       "calls:", (unsigned long long)st.calls, (unsigned long long)st.returned,
		       (unsigned long long)st.returned_at_ret, (unsigned long long)st.returned_at_retsite,
		       (unsigned long long)st.returned_at_stepped, (unsigned long long)st.returned_at_dynamic,
		       (unsigned long long)st.returned_with_caller, (unsigned long long)st.unwound,
		       (unsigned long long)st.unfinished, (unsigned long long)st.unobserved, (unsigned long long)st.unplanned,
		       (unsigned long long)st.indirect);
	}
	if (steps)
		print_steps(&t, 20);
	printf("\n# metadata\n");
	for (size_t i = 0; i < t.meta.n; i++)
		printf("%-22s %s\n", t.meta.v[i].key, t.meta.v[i].val);
	printf("\n# stats\n");
	if (!t.stats.n)
		printf("%-22s %s\n", "stats", "(none: the tracer did not finish)");
	for (size_t i = 0; i < t.stats.n; i++)
		printf("%-22s %s\n", t.stats.v[i].key, t.stats.v[i].val);
	ct_trace_close(&t);
	return 0;
}
