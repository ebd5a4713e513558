/* record --otlp-endpoint: spans sent while recording.  A thread of its own
 * reads the record file as the session writes it (as `live` does: the same
 * reader, reconstruction and span builder as `dump --otlp`, so what arrives
 * is what a later dump of the file would send), hands requests to the
 * OTLP/HTTP client, and flushes a partial request at least every second.
 * The session is not touched: the file stays complete whatever the
 * endpoint does, and the traced program never waits for the network. */
#ifndef CT_OTLP_EXPORT_H
#define CT_OTLP_EXPORT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct ct_otlp_export_opts {
	const char *url;
	const char *service; /* NULL: the binary's name */
	bool json;           /* OTLP/JSON bodies instead of protobuf */
	bool with_values;
};

struct ct_otlp_export;

/* FD: a reader of the record being written (taken over), whose tables are
 * already written; NAME names it in messages.  NULL with ct_error() set. */
struct ct_otlp_export *ct_otlp_export_start(int fd, const char *name, const struct ct_otlp_export_opts *o);
/* The record is complete and closed, ending at END_TS (CLOCK_MONOTONIC):
 * reads the rest, sends it (waiting at most 10 s, not at all for an
 * endpoint that is down, nor once *SIGNALS, a count of signals that mean
 * "stop waiting", is not 0), prints the summary line.  Returns the number
 * of spans dropped. */
uint64_t ct_otlp_export_finish(struct ct_otlp_export *x, uint64_t end_ts, const volatile sig_atomic_t *signals);

#endif
