/* calltrace dump: a record file in the formats other tools read — Chrome
 * trace-event JSON (Perfetto UI, chrome://tracing, speedscope), folded stacks
 * (flamegraph.pl, inferno, speedscope), a self-contained SVG flame graph and
 * OpenTelemetry spans (OTLP/JSON). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmds/cmds.h"
#include "export/otlp_http.h"
#include "render/otlp.h"
#include "render/render.h"
#include "util/files.h"
#include "util/util.h"

enum dump_format { DUMP_NONE, DUMP_CHROME, DUMP_FOLDED, DUMP_SVG, DUMP_OTLP, DUMP_EVENTS };

static const char *const format_names[] = {"", "chrome", "folded", "svg", "otlp", "events"};

static void usage(FILE *f)
{
	fprintf(f, "Usage: calltrace dump [--chrome|--folded|--svg|--otlp|--events] [-o FILE] [filters] [RECORD]\n"
		   "\n"
		   "  RECORD                record file (default: calltrace.data)\n"
		   "      --chrome          Chrome trace-event JSON (default): open in ui.perfetto.dev,\n"
		   "                        speedscope or chrome://tracing; one track per goroutine/thread\n"
		   "      --folded          folded stacks 'main;f;g <self ns>' for flamegraph.pl, inferno\n"
		   "                        or speedscope\n"
		   "      --svg             an interactive flame graph (click to zoom), one SVG file\n"
		   "      --otlp            OpenTelemetry spans, OTLP/JSON: JSON Lines, each line one\n"
		   "                        ExportTraceServiceRequest of up to 512 spans (the OTLP file\n"
		   "                        format; POST a line to a collector's /v1/traces).  One span per\n"
		   "                        call, one trace per root call, Unix-time timestamps, status\n"
		   "                        ERROR for unwound calls; arguments and results as attributes\n"
		   "      --events          the raw events in file order, one line each (ts, pid, tid,\n"
		   "                        goid, probe site and its kind and function, frame key, flags):\n"
		   "                        what the probes saw, before the calls are rebuilt; filters\n"
		   "                        do not apply\n"
		   "      --service NAME    otlp: service.name (default: the traced binary's name)\n"
		   "      --otlp-endpoint URL  send the spans to an OTLP/HTTP collector instead, e.g.\n"
		   "                        http://localhost:4318 (plain HTTP, no TLS; path /v1/traces\n"
		   "                        unless given); exits 1 if some could not be sent\n"
		   "      --otlp-protocol P  http/protobuf (default) or http/json\n"
		   "  -f, --format FMT      the same as a word: chrome, folded, svg, otlp or events\n"
		   "  -o, --output FILE     write to FILE instead of standard output (Chrome or OTLP with\n"
		   "                        argument values is created mode 0600, like the record;\n"
		   "                        a symlink or non-regular file there is refused)\n"
		   "      --no-args         chrome, otlp: leave argument and result values out (smaller;\n"
		   "                        speedscope then shows one frame per function instead of per\n"
		   "                        argument set)\n"
		   "\nfilters:\n%s", ct_filter_help);
}

static int set_format(enum dump_format *fmt, enum dump_format want)
{
	if (*fmt != DUMP_NONE && *fmt != want) {
		ct_print_errorf("dump: --%s and --%s exclude each other; choose one format",
			format_names[*fmt], format_names[want]);
		return -1;
	}
	*fmt = want;
	return 0;
}

static int write_request(void *ctx, const uint8_t *body, size_t n, uint64_t nspans)
{
	if (fwrite(body, 1, n, ctx) != n)
		return ct_fail("cannot write the OTLP output: %s", strerror(errno));
	return 0;
}

static int submit_request(void *ctx, const uint8_t *body, size_t n, uint64_t nspans)
{
	ct_otlp_http_submit(ctx, body, n, nspans); /* waits for room; a drop is counted */
	return 0;
}

/* --otlp to OUT, or to the collector at URL. */
static int dump_otlp(struct ct_trace *t, const struct ct_render_opts *ro, const char *service, bool with_values,
		     const char *url, bool json)
{
	struct ct_otlp_opts oo = {.service = service, .with_values = with_values, .request = write_request,
				  .ctx = ro->out};
	struct ct_otlp_http *h = NULL;
	if (url) {
		struct ct_otlp_http_opts ho = {.url = url, .json = json, .block = true};
		if (!(h = ct_otlp_http_start(&ho)))
			return -1;
		oo.proto = !json;
		oo.request = submit_request;
		oo.ctx = h;
	}
	uint64_t lost = 0;
	int r = ct_render_otlp(t, ro, &oo, NULL, &lost);
	if (!r && lost)
		ct_warn("%" PRIu64 " events were lost while recording; spans may be missing",
			lost);
	if (h) {
		ct_otlp_http_finish(h, 30000000000ULL, NULL);
		struct ct_otlp_http_stats st;
		ct_otlp_http_get_stats(h, &st);
		if (!r && st.dropped_spans)
			r = ct_fail("otlp: %" PRIu64 " of %" PRIu64 " spans not sent to %s: %s", st.dropped_spans,
				    st.dropped_spans + st.sent_spans, ct_otlp_http_url(h), st.last_error);
		else if (!r)
			ct_otlp_http_report(h);
		ct_otlp_http_free(h);
	}
	return r;
}

/* Creates the output (util/files.h: never through a planted link), refusing
 * to replace the record being read. */
static FILE *open_output(struct ct_output *o, const char *path, const char *record, bool private)
{
	struct stat in, out;
	if (stat(record, &in) == 0 && stat(path, &out) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
		ct_fail("-o %s is the record file being dumped; choose another output file", path);
		return NULL;
	}
	/* nor another record file (a trace, kept nowhere else) */
	char head[sizeof(CT_FILE_MAGIC)] = "";
	struct stat cur;
	FILE *old = lstat(path, &cur) == 0 && S_ISREG(cur.st_mode) ? fopen(path, "rb") : NULL;
	size_t n = old ? fread(head, 1, sizeof(head), old) : 0;
	if (old)
		fclose(old);
	if (n == sizeof(head) && !memcmp(head, CT_FILE_MAGIC, sizeof(head))) {
		ct_fail("-o %s is a record file; dump does not replace one: choose another output file", path);
		return NULL;
	}
	if (ct_output_create(o, path, private ? CT_OUT_PRIVATE : 0))
		return NULL;
	FILE *f = ct_output_stream(o);
	if (!f)
		ct_output_discard(o);
	return f;
}

int cmd_dump(int argc, char **argv)
{
	enum { OPT_CHROME = 0x2001, OPT_FOLDED, OPT_SVG, OPT_NO_ARGS, OPT_OTLP, OPT_SERVICE, OPT_ENDPOINT, OPT_PROTOCOL, OPT_EVENTS };
	static const struct option opts[] = {
		{"chrome", no_argument, NULL, OPT_CHROME},
		{"folded", no_argument, NULL, OPT_FOLDED},
		{"svg", no_argument, NULL, OPT_SVG},
		{"otlp", no_argument, NULL, OPT_OTLP},
		{"events", no_argument, NULL, OPT_EVENTS},
		{"service", required_argument, NULL, OPT_SERVICE},
		{"otlp-endpoint", required_argument, NULL, OPT_ENDPOINT},
		{"otlp-protocol", required_argument, NULL, OPT_PROTOCOL},
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"no-args", no_argument, NULL, OPT_NO_ARGS},
		CT_FILTER_LONGOPTS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	enum dump_format fmt = DUMP_NONE;
	const char *out_path = NULL, *service = NULL, *endpoint = NULL;
	bool with_values = true, otlp_json = false, protocol_given = false;
	struct ct_filter_opts fo = {0};
	int c, rc = 2;
	optind = 1;
	opterr = 0; /* our own one-line messages below */
	while ((c = getopt_long(argc, argv, ":f:o:h" CT_FILTER_SHORTOPTS, opts, NULL)) != -1) {
		int fr = ct_filter_parse(&fo, c, optarg);
		if (fr < 0)
			goto out;
		if (fr == 0)
			continue;
		switch (c) {
		case OPT_CHROME:
		case OPT_FOLDED:
		case OPT_SVG:
		case OPT_OTLP:
		case OPT_EVENTS:
			if (set_format(&fmt, c == OPT_CHROME ? DUMP_CHROME : c == OPT_FOLDED ? DUMP_FOLDED
					   : c == OPT_SVG  ? DUMP_SVG : c == OPT_OTLP ? DUMP_OTLP : DUMP_EVENTS))
				goto out;
			break;
		case OPT_SERVICE:
			service = optarg;
			break;
		case OPT_ENDPOINT:
			if (!ct_otlp_http_url_ok(optarg)) {
				ct_print_error();
				goto out;
			}
			endpoint = optarg;
			if (set_format(&fmt, DUMP_OTLP))
				goto out;
			break;
		case OPT_PROTOCOL:
			if (ct_otlp_protocol_parse(optarg, &otlp_json)) {
				ct_print_error();
				goto out;
			}
			protocol_given = true;
			break;
		case 'f': {
			enum dump_format want = DUMP_NONE;
			for (int i = DUMP_CHROME; i <= DUMP_EVENTS; i++)
				if (!strcmp(optarg, format_names[i]))
					want = (enum dump_format)i;
			if (want == DUMP_NONE) {
				ct_print_errorf("dump: unknown format '%s' (use chrome, folded, svg, otlp or events)",
					optarg);
				goto out;
			}
			if (set_format(&fmt, want))
				goto out;
			break;
		}
		case 'o':
			out_path = optarg;
			break;
		case OPT_NO_ARGS:
			with_values = false;
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out;
		default:
			ct_bad_option("dump", c, argv, opts);
			goto out;
		}
	}
	if (ct_filter_check(&fo))
		return 2;
	if (argc - optind > 1) {
		ct_print_errorf("dump: one record file at most, not '%s' and '%s'", argv[optind],
			argv[optind + 1]);
		goto out;
	}
	if (fmt == DUMP_NONE)
		fmt = DUMP_CHROME;
	if (service && fmt != DUMP_OTLP) {
		ct_print_errorf("dump: --service is for --otlp");
		goto out;
	}
	if (protocol_given && !endpoint) {
		ct_print_errorf("dump: --otlp-protocol goes with --otlp-endpoint");
		goto out;
	}
	if (endpoint && out_path) {
		ct_print_errorf("dump: --otlp-endpoint sends the spans; it writes no -o file");
		goto out;
	}
	const char *path = optind < argc ? argv[optind] : "calltrace.data";

	struct ct_trace t;
	rc = 1;
	if (ct_trace_open(&t, path)) {
		ct_print_error();
		goto out;
	}
	FILE *out = stdout;
	struct ct_output output;
	if (out_path && !(out = open_output(&output, out_path, path, (fmt == DUMP_CHROME || fmt == DUMP_OTLP) && with_values))) {
		ct_print_error();
		ct_trace_close(&t);
		goto out;
	}
	struct ct_render_opts ro = {.out = out, .filter = &fo};
	int r = fmt == DUMP_CHROME ? ct_render_chrome(&t, &ro, with_values)
	      : fmt == DUMP_FOLDED ? ct_render_folded(&t, &ro)
	      : fmt == DUMP_OTLP   ? dump_otlp(&t, &ro, service, with_values, endpoint, otlp_json)
	      : fmt == DUMP_EVENTS ? ct_render_events(&t, &ro)
				   : ct_render_svg(&t, &ro);
	if (r)
		ct_print_error();
	if (t.truncated)
		ct_warn("%s ends with an incomplete chunk (" CT_TRUNCATED_WHY "); dumped what was whole",
			path);
	ct_trace_close(&t);
	if (out_path) {
		/* no half-written file that looks complete */
		if (r)
			ct_output_discard(&output);
		else if (ct_output_commit(&output)) {
			ct_print_error();
			r = -1;
		}
	} else if (!r && (ferror(out) || fflush(out)))
		r = -1; /* said by main */
	rc = r ? 1 : 0;
out:
	ct_filter_free(&fo);
	return rc;
}
