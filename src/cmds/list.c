/* calltrace list: which functions of a binary can be traced, and where the
 * probes would go (entry site, cheap or single-stepped, and exit sites). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmds/cmds.h"
#include "plan/plan.h"
#include "util/util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: calltrace list [options] BINARY [GLOB...]\n"
		   "\n"
		   "  GLOB              functions to show (default: what record traces by default)\n"
		   "  -N, --exclude G   leave out functions matching G\n"
		   "  -v, --verbose     also show every exit site with its instruction\n");
}

static const char *kind_name(uint8_t k)
{
	switch (k) {
	case CT_SITE_RET:
		return "ret";
	case CT_SITE_TAIL:
		return "tail";
	case CT_SITE_RESTART:
		return "restart";
	case CT_SITE_GOEXIT:
		return "goexit";
	default:
		return "entry";
	}
}

int cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{"exclude", required_argument, NULL, 'N'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	CT_VEC(const char *) exclude = {0};
	int c, verbose = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "N:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'N':
			CT_VEC_PUSH(exclude, optarg);
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	struct ct_target t;
	if (ct_target_open(&t, argv[optind])) {
		fprintf(stderr, "calltrace: %s\n", ct_error());
		return 1;
	}
	struct ct_selection sel = {.trace = (const char **)argv + optind + 1,
				   .ntrace = (size_t)(argc - optind - 1),
				   .exclude = exclude.v,
				   .nexclude = exclude.n};
	struct ct_plan p;
	if (ct_plan_build(&p, &t, &sel)) {
		fprintf(stderr, "calltrace: %s\n", ct_error());
		ct_target_close(&t);
		CT_VEC_FREE(exclude);
		return 1;
	}
	printf("# %s: %s", t.elf.path, t.lang == CT_LANG_GO ? "Go" : "C/SysV");
	if (t.lang == CT_LANG_GO)
		printf(" %s, %s ABI, module %s, runtime.g offsets from %s", t.go_version[0] ? t.go_version : "(version unknown)",
		       t.regabi ? "register" : "stack", t.main_module ? t.main_module : "-", t.gcfg_source);
	printf(", %s, functions from %s%s\n", t.elf.pie ? "PIE" : "non-PIE", t.funcs_source,
	       t.has_dwarf ? ", DWARF" : ", no DWARF");
	printf("# %zu functions, %zu probe sites (%zu cheap entries, %zu single-stepped)\n", p.funcs.n, p.sites.n,
	       p.cheap_entries, p.slow_entries);
	printf("# %-18s %-12s %-6s %s\n", "ENTRY", "SITE", "EXITS", "FUNCTION");
	size_t si = 0;
	for (size_t i = 0; i < p.funcs.n; i++) {
		const struct ct_plan_func *f = &p.funcs.v[i];
		printf("  0x%-16llx +%-3llu %-7s %-6u %s\n", (unsigned long long)f->fn->entry,
		       (unsigned long long)(f->entry_site - f->fn->entry), f->entry_emulated ? "cheap" : "step",
		       f->nexits, f->fn->name);
		if (!verbose)
			continue;
		for (; si < p.sites.n && (p.sites.v[si].func < i || p.sites.v[si].func == CT_NOFUNC); si++)
			;
		for (; si < p.sites.n && p.sites.v[si].func == i; si++) {
			const struct ct_plan_site *s = &p.sites.v[si];
			char text[128];
			const uint8_t *code = ct_elf_bytes_at(&t.elf, s->addr, 1);
			size_t avail = f->fn->end > s->addr ? f->fn->end - s->addr : 1;
			if (avail > 15)
				avail = 15;
			if (code && ct_elf_bytes_at(&t.elf, s->addr, avail))
				ct_disasm_one(code, avail, s->addr, text, sizeof(text));
			else
				snprintf(text, sizeof(text), "?");
			printf("      %-7s +%-5llu %s\n", kind_name(s->kind), (unsigned long long)(s->addr - f->fn->entry),
			       text);
		}
	}
	ct_plan_free(&p);
	ct_target_close(&t);
	CT_VEC_FREE(exclude);
	return 0;
}
