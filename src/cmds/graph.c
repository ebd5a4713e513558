/* calltrace graph: the calls of a record file merged by their path
 * (render/graph.c), uftrace's `graph`. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmds/cmds.h"
#include "render/render.h"
#include "util/util.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: calltrace graph [options] [FILE]\n"
		   "\n"
		   "The calls merged by their path: each distinct chain of traced calls, from an\n"
		   "outermost one down (goroutines and threads together), once, with its total\n"
		   "time, self time and how many calls took it; children by total time, largest\n"
		   "first.  The flame graph's numbers as a tree (dump --svg, --folded).  -F FUNC\n"
		   "makes FUNC's calls the outermost: its graph, wherever it was called from.\n"
		   "\n"
		   "  FILE                  record file (default: calltrace.data)\n"
		   "  -f, --format FMT      text (default): one line a path, indented under its\n"
		   "                        caller's; json: an array of the outermost paths, each\n"
		   "                        {func, calls, total_ns, self_ns, children: [...]}\n"
		   "\nfilters:\n%s",
		ct_filter_help);
}

int cmd_graph(int argc, char **argv)
{
	static const struct option opts[] = {
		{"format", required_argument, NULL, 'f'},
		CT_FILTER_LONGOPTS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *format = "text";
	struct ct_filter_opts fo = {0};
	int c, rc = 2;
	optind = 1;
	opterr = 0; /* one line of our own: ct_bad_option */
	while ((c = getopt_long(argc, argv, ":f:h" CT_FILTER_SHORTOPTS, opts, NULL)) != -1) {
		int fr = ct_filter_parse(&fo, c, optarg);
		if (fr < 0)
			goto out;
		if (fr == 0)
			continue;
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out;
		default:
			ct_bad_option("graph", c, argv, opts);
			goto out;
		}
	}
	if (ct_filter_check(&fo))
		goto out;
	if (strcmp(format, "text") && strcmp(format, "json")) {
		ct_print_errorf("unknown graph format '%s' (use text or json)", format);
		goto out;
	}
	if (argc - optind > 1) {
		ct_print_errorf("graph: one record file at most, not '%s' and '%s' (see calltrace graph --help)",
				argv[optind], argv[optind + 1]);
		goto out;
	}
	const char *path = optind < argc ? argv[optind] : "calltrace.data";
	struct ct_render_opts ro = {stdout, false, false, &fo};
	struct ct_trace t;
	rc = 1;
	if (ct_trace_open(&t, path)) {
		ct_print_error();
		goto out;
	}
	rc = ct_render_graph(&t, &ro, !strcmp(format, "json")) ? 1 : 0;
	if (rc)
		ct_print_error();
	if (t.truncated)
		ct_warn("%s ends with an incomplete chunk (" CT_TRUNCATED_WHY "); merged what was whole", path);
	ct_trace_close(&t);
	if (fflush(stdout) != 0)
		rc = 1;
out:
	ct_filter_free(&fo);
	return rc;
}
