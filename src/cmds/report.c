/* calltrace report: per-function statistics (calls, total/self time,
 * avg/min/percentiles/max, latency histograms) of a record file. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmds/cmds.h"
#include "render/report.h"
#include "util/util.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: calltrace report [options] [FILE]\n"
		   "   or: calltrace report --diff BASE [options] [FILE]\n"
		   "\n"
		   "Per function: calls, total (inclusive) and self time, average, min, median (p50),\n"
		   "99th percentile and max duration.\n"
		   "\n"
		   "  FILE                  record file (default: calltrace.data)\n"
		   "      --diff BASE       compare FILE (new) with the record file BASE, function by\n"
		   "                        function (matched by name; filters apply to both): the sort\n"
		   "                        key in both, its change and change in %% of BASE, the change\n"
		   "                        in %% of total, self, avg and p99, calls in both; rows by the\n"
		   "                        largest change of the sort key (-s; func: by name); functions\n"
		   "                        in one trace only are marked.  json: an array of {func, base,\n"
		   "                        new, diff} (base/new: the report's fields, null if absent;\n"
		   "                        diff: new minus base of each field and \"pct\": each change in\n"
		   "                        %% of base, null when unknown; \"only\": \"base\"|\"new\")\n"
		   "  -s, --sort KEY        total (default), self, calls, avg, min, max, p50, p99,\n"
		   "                        off, self_off (time off CPU, in total and in the self\n"
		   "                        time; not with --diff): largest first; func: by name\n"
		   "  -f, --format FMT      text (default): a table; json: one JSON array of objects\n"
		   "                        {func, calls, returned, unwound, unfinished, exited, lost,\n"
		   "                        total_ns, self_ns, avg_ns, min_ns, p50_ns, p99_ns, max_ns}\n"
		   "                        (durations null when no call returned), in the sort order\n"
		   "      --histogram GLOB  log2 latency histogram of matching functions (repeatable;\n"
		   "                        json: \"histogram\": [{lo_ns, hi_ns, count}])\n"
		   "\n"
		   "Durations are of the calls that returned: unwound calls (panic, Goexit,\n"
		   "longjmp), calls still running at the end of the trace, calls whose thread or\n"
		   "process ended inside them (exited) and calls whose end was among lost events\n"
		   "(lost) are counted in calls and in their own columns, never as a duration.\n"
		   "Self time is the duration minus that of the shown traced children that\n"
		   "returned; a tail-called function counts as a child of the caller that jumped\n"
		   "to it.  Total time sums every call, so recursive calls are counted once per\n"
		   "level.  avg is total/returned,\n"
		   "rounded down.  min and max are exact; p50 and p99 are nearest-rank percentiles\n"
		   "from a log-linear histogram (128 buckets per power of two), within 0.4%%.\n"
		   "\nfilters:\n%s",
		ct_filter_help);
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{"sort", required_argument, NULL, 's'},
		{"format", required_argument, NULL, 'f'},
		{"histogram", required_argument, NULL, 0x2001},
		{"diff", required_argument, NULL, 0x2002},
		CT_FILTER_LONGOPTS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct ct_filter_opts fo = {0};
	struct ct_report_opts ro = {stdout, &fo, CT_SORT_TOTAL, false, NULL, 0};
	const char *diff_base = NULL;
	int c, rc = 2;
	optind = 1;
	opterr = 0; /* our own one-line messages below */
	while ((c = getopt_long(argc, argv, ":s:f:h" CT_FILTER_SHORTOPTS, opts, NULL)) != -1) {
		int fr = ct_filter_parse(&fo, c, optarg);
		if (fr < 0)
			goto out;
		if (fr == 0)
			continue;
		switch (c) {
		case 's':
			if (!ct_report_sort_parse(optarg, &ro.sort)) {
				ct_print_errorf("unknown sort key '%s' (use total, self, calls, avg, min, max, p50, p99, off, "
						"self_off or func)",
						optarg);
				goto out;
			}
			break;
		case 'f':
			if (!strcmp(optarg, "json") || !strcmp(optarg, "text")) {
				ro.json = !strcmp(optarg, "json");
			} else {
				ct_print_errorf("unknown report format '%s' (use text or json)", optarg);
				goto out;
			}
			break;
		case 0x2001:
			if (!*optarg) { /* (an unset shell variable) */
				ct_print_errorf("--histogram needs a function glob, not an empty one");
				goto out;
			}
			ro.histogram = xrealloc(ro.histogram, (ro.nhistogram + 1) * sizeof(*ro.histogram));
			ro.histogram[ro.nhistogram++] = optarg;
			break;
		case 0x2002:
			diff_base = optarg;
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out;
		default:
			ct_bad_option("report", c, argv, opts);
			goto out;
		}
	}
	if (ct_filter_check(&fo))
		return 2;
	if (argc - optind > 1) {
		ct_print_errorf("report takes one record file, not %d arguments (see calltrace report --help)",
			argc - optind);
		goto out;
	}
	if (diff_base && (ro.sort == CT_SORT_OFF || ro.sort == CT_SORT_SELF_OFF)) {
		ct_print_errorf("report --diff sorts by total, self, calls, avg, min, max, p50, p99 or func (its Off CPU "
				"chg and Self off chg columns show how time off CPU changed)");
		goto out;
	}
	if (diff_base && ro.nhistogram) {
		ct_print_errorf("report --diff has no --histogram; run report on each file for histograms");
		goto out;
	}
	const char *path = optind < argc ? argv[optind] : "calltrace.data";
	struct ct_trace t, base;
	rc = 1;
	if (ct_trace_open(&t, path)) {
		ct_print_error();
		goto out;
	}
	if (diff_base && ct_trace_open(&base, diff_base)) {
		ct_print_error();
		ct_trace_close(&t);
		goto out;
	}
	rc = (diff_base ? ct_render_report_diff(&base, &t, &ro) : ct_render_report(&t, &ro)) ? 1 : 0;
	if (rc)
		ct_print_error();
	for (int k = 0; k < (diff_base ? 2 : 1); k++) {
		struct ct_trace *tr = k ? &base : &t;
		if (tr->truncated)
			ct_warn("%s ends with an incomplete chunk (" CT_TRUNCATED_WHY "); reported what was whole",
				tr->path);
		ct_trace_close(tr);
	}
	if (fflush(stdout) != 0)
		rc = 1;
out:
	ct_filter_free(&fo);
	free(ro.histogram);
	return rc;
}
