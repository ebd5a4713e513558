/* OpenTelemetry spans from calls: the reconstruction (through the replay
 * filters) in, OTLP ExportTraceServiceRequest messages out, as OTLP/JSON or
 * binary protobuf.  Used by `dump --otlp` (JSON Lines to a file) and by the
 * OTLP/HTTP exporter of `dump`/`record --otlp-endpoint` (src/export/).
 *
 * One span per call, named after the function; the parent is the caller
 * shown (filters renumber the tree, so a hidden caller's callee hangs from
 * the nearest shown ancestor); one trace per root call (depth 0 of its
 * goroutine/thread after filtering).  Ids are derived, not random, so the
 * same record gives the same ids every time (record --otlp-endpoint and a
 * later dump --otlp agree):
 *
 *   run      = FNV-1a 64 of META "host.name\nclock.realtime_ns\nclock.start_ns"
 *   span id  = fmix64(run ^ fmix64(seq + 1)), 8 bytes big-endian (1 if 0)
 *   trace id = fmix64(run ^ fmix64(~root_seq)), then the root's span id
 *
 * where seq is the call's number in entry order over the whole trace (the
 * reconstruction's, unchanged by filters) and fmix64 murmur3's finalizer.
 * Times are Unix ns: META clock.realtime_ns + (ts - clock.start_ns). */
#ifndef CT_OTLP_H
#define CT_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "render/render.h"

struct ct_otlp_opts {
	const char *service; /* service.name; NULL: the traced binary's name */
	bool proto;          /* binary protobuf instead of OTLP/JSON */
	bool with_values;    /* arguments and results as span attributes */
	size_t max_spans;    /* spans per request (0: 512) */
	size_t max_bytes;    /* a request closes once its body reaches this (0: 1 MiB) */
	/* Each complete request: BODY/N holding NSPANS spans (JSON: one line,
	 * with its newline).  Returns 0, or -1 to stop (ct_fail set). */
	int (*request)(void *ctx, const uint8_t *body, size_t n, uint64_t nspans);
	void *ctx;
};

struct ct_otlp;

/* Fails (ct_fail) when T has no wall-clock time to give spans. */
struct ct_otlp *ct_otlp_new(struct ct_trace *t, const struct ct_otlp_opts *o);
/* Reconstruction callbacks: pass ct_otlp_ops and the ct_otlp as context. */
extern const struct ct_recon_ops ct_otlp_ops;
/* Hands on the request being built, if it holds any span. */
int ct_otlp_flush(struct ct_otlp *x);
uint64_t ct_otlp_spans(const struct ct_otlp *x);   /* spans built so far */
uint64_t ct_otlp_lost(const struct ct_otlp *x);    /* events lost while recording */
void ct_otlp_free(struct ct_otlp *x);

/* The whole trace through O's filter: ct_otlp_new, the replay, the last
 * flush.  Returns 0 or -1 (ct_fail). */
int ct_render_otlp(struct ct_trace *t, const struct ct_render_opts *ro, const struct ct_otlp_opts *o,
		   uint64_t *nspans, uint64_t *lost);

#endif
