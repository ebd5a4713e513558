/* calltrace: function-call tracer for Go and C programs on Linux (eBPF
 * uprobes).  One command per file in cmds/. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmds/cmds.h"
#include "util/util.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
	bool own_output; /* says itself what it could not write (live: it stops tracing) */
} commands[] = {
	{"record", cmd_record, "run a program (or attach to -p PID) and record its calls", true},
	{"replay", cmd_replay, "show a recorded trace as a call tree (or JSON Lines)", false},
	{"report", cmd_report, "per-function statistics: calls, total, self, percentiles", false},
	{"graph", cmd_graph, "the calls merged by their path: a call graph with times", false},
	{"dump", cmd_dump, "Chrome/Perfetto JSON, folded stacks, or an SVG flame graph", false},
	{"live", cmd_live, "record and print the call tree while the program runs", true},
	{"list", cmd_list, "list the traceable functions of a binary and their probe sites", false},
	{"info", cmd_info, "show what a record file holds", false},
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

/* Output that could not be written (a full disk, a pipe closed early when
 * SIGPIPE is ignored, a closed stdout) is an error, said once: the output
 * is not all there.  stdio keeps only that a write failed: the commands
 * write to fd 1 through out_write, which keeps why. */
static int out_errno;

static ssize_t out_write(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(1, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!out_errno)
				out_errno = w < 0 ? errno : EIO;
			return 0; /* stdio's error */
		}
		done += (size_t)w;
	}
	return (ssize_t)done;
}

/* RC: the command's exit status. */
static int output_written(int rc)
{
	if (!fflush(stdout) && !ferror(stdout))
		return rc;
	ct_print_errorf("cannot write the output: %s", strerror(out_errno ? out_errno : EIO));
	return rc ? rc : 1;
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
		if (!strcmp(argv[1], commands[i].name)) {
			FILE *out = commands[i].own_output ? NULL
				    : fopencookie(NULL, "w", (cookie_io_functions_t){.write = out_write});
			if (out)
				stdout = out;
			int rc = commands[i].fn(argc - 1, argv + 1);
			return commands[i].own_output ? rc : output_written(rc);
		}
	ct_print_errorf("unknown command '%s'; run 'calltrace --help' for the list", argv[1]);
	return 2;
}
