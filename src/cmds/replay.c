/* calltrace replay: show a record file as a call tree or JSON Lines. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmds/cmds.h"
#include "render/render.h"
#include "util/util.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: calltrace replay [options] [FILE]\n"
		   "\n"
		   "  FILE                  record file (default: calltrace.data)\n"
		   "  -f, --format FMT      text (default): uftrace-style call tree; json: JSON Lines,\n"
		   "                        one object per call in entry order; yaml: a YAML list of\n"
		   "                        the same mappings\n"
		   "      --merge           text: interleave goroutines/threads in time order (default:\n"
		   "                        each goroutine/thread's calls together, by first appearance)\n"
		   "      --color WHEN      auto (default: on a terminal), always, never\n"
		   "\nfilters:\n%s", ct_filter_help);
}

int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{"format", required_argument, NULL, 'f'},
		{"color", required_argument, NULL, 'c'},
		{"merge", no_argument, NULL, 'm'},
		CT_FILTER_LONGOPTS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *format = "text", *color = "auto";
	bool merge = false;
	struct ct_filter_opts fo = {0};
	int c;
	optind = 1;
	opterr = 0; /* one line of our own: ct_bad_option */
	while ((c = getopt_long(argc, argv, ":f:h" CT_FILTER_SHORTOPTS, opts, NULL)) != -1) {
		int fr = ct_filter_parse(&fo, c, optarg);
		if (fr < 0)
			return 2;
		if (fr == 0)
			continue;
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'c':
			color = optarg;
			break;
		case 'm':
			merge = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return ct_bad_option("replay", c, argv, opts);
		}
	}
	if (ct_filter_check(&fo))
		return 2;
	if (argc - optind > 1) {
		ct_print_errorf("replay: one record file at most, not '%s' and '%s' (see calltrace replay --help)",
				argv[optind], argv[optind + 1]);
		return 2;
	}
	const char *path = optind < argc ? argv[optind] : "calltrace.data";
	struct ct_render_opts ro = {stdout, false, merge, &fo};
	if (!strcmp(color, "always"))
		ro.color = true;
	else if (!strcmp(color, "auto"))
		ro.color = isatty(1);
	else if (strcmp(color, "never")) {
		ct_print_errorf("--color takes auto, always or never, not '%s'", color);
		return 2;
	}
	int (*render)(struct ct_trace *, const struct ct_render_opts *);
	if (!strcmp(format, "text"))
		render = ct_render_tree;
	else if (!strcmp(format, "json"))
		render = ct_render_json;
	else if (!strcmp(format, "yaml"))
		render = ct_render_yaml;
	else {
		ct_print_errorf("unknown format '%s' (use text, json or yaml)", format);
		return 2;
	}
	static char outbuf[1 << 20];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf)); /* big writes: the output is large */
	struct ct_trace t;
	if (ct_trace_open(&t, path)) {
		ct_print_error();
		return 1;
	}
	int rc = render(&t, &ro);
	if (rc)
		ct_print_error();
	bool truncated = t.truncated;
	ct_trace_close(&t);
	if (truncated)
		ct_warn("%s ends with an incomplete chunk (" CT_TRUNCATED_WHY "); replayed what was whole",
			path);
	ct_filter_free(&fo);
	if (fflush(stdout) != 0)
		return 1;
	return rc ? 1 : 0;
}
