/* calltrace info: what a record file holds. */
#include <stdio.h>
#include <string.h>

#include "cmds/cmds.h"
#include "record/tracefile.h"
#include "util/util.h"

int cmd_info(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: calltrace info [FILE]\n");
		return 0;
	}
	const char *path = argc > 1 ? argv[1] : "calltrace.data";
	struct ct_trace t;
	if (ct_trace_open(&t, path)) {
		fprintf(stderr, "calltrace: %s\n", ct_error());
		return 1;
	}
	printf("# file: %s (%lld bytes)%s\n", path, t.file_size, t.truncated ? " -- ends early (tracer killed?)" : "");
	for (size_t i = 0; i < t.meta.n; i++)
		printf("%-22s %s\n", t.meta.v[i].key, t.meta.v[i].val);
	if (!t.stats.n)
		printf("%-22s %s\n", "stats", "(none: the tracer did not finish)");
	for (size_t i = 0; i < t.stats.n; i++)
		printf("%-22s %s\n", t.stats.v[i].key, t.stats.v[i].val);
	printf("%-22s %zu\n", "functions", t.nfuncs);
	printf("%-22s %zu\n", "sites", t.nsites);
	ct_trace_close(&t);
	return 0;
}
