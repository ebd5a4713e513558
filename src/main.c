/* calltrace: function-call tracer for Go and C programs on Linux (eBPF
 * uprobes).  One command per file in cmds/. */
#include <stdio.h>
#include <string.h>

#include "cmds/cmds.h"
#include "util/util.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{"record", cmd_record, "run a program (or attach to -p PID) and record its calls"},
	{"replay", cmd_replay, "show a recorded trace as a call tree (or JSON Lines)"},
	{"report", cmd_report, "per-function statistics: calls, total, self, percentiles"},
	{"dump", cmd_dump, "Chrome/Perfetto JSON, folded stacks, or an SVG flame graph"},
	{"live", cmd_live, "record and print the call tree while the program runs"},
	{"list", cmd_list, "list the traceable functions of a binary and their probe sites"},
	{"info", cmd_info, "show what a record file holds"},
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: calltrace COMMAND [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nexamples:\n"
		   "  calltrace record -- ./server --port 8080     # writes calltrace.data\n"
		   "  calltrace replay                             # call tree with durations\n"
		   "  calltrace replay --format=json               # JSON Lines, one call per line\n"
		   "  calltrace list ./server 'main.*'             # what can be traced\n"
		   "\n'calltrace COMMAND --help' shows the options of a command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("calltrace %s\n", CT_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	ct_print_errorf("unknown command '%s'; run 'calltrace --help' for the list", argv[1]);
	return 2;
}
