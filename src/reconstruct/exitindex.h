/* How each call ended, at its entry, for renderers that print a call's
 * duration and results at its start (JSON/YAML in entry order), with
 * bounded memory.
 *
 * The second pass (ct_exitindex_run) holds each callback back, in order,
 * until the call it enters has ended: most calls end within a window of
 * QUEUE callbacks, and their ends need nothing from the first pass.  The
 * first pass (ct_exitindex_build) keeps only the ends of the calls that
 * outlive half that window (main.main, a server loop, a goroutine's
 * outermost calls), for the second to take when such a call is at the head
 * of a full window.  (Writing every call's end to a temp file and reading it
 * back was a fifth of replay --format=json's time.) */
#ifndef CT_EXITINDEX_H
#define CT_EXITINDEX_H

#include <stdint.h>

#include "reconstruct/reconstruct.h"

struct ct_exit_info {
	uint64_t ts_exit;
	uint32_t exit_tid;
	uint8_t status;
	uint8_t leaf;
	uint16_t ret_len;  /* captured results (compacted payload), 0 if none */
	uint32_t exit_site;
	uint64_t raw_exit; /* ts_exit as measured (no overhead correction) */
};

struct ct_exitindex;

/* Runs the first pass over T. */
struct ct_exitindex *ct_exitindex_build(struct ct_trace *t);
/* The second pass: every event of the trace through a reconstruction into
 * OPS, as ct_recon_run does (the same callbacks in the same order, each a
 * little later), so that ct_exitindex_get knows how the call being entered
 * ends.  Once per index. */
struct ct_recon_stats ct_exitindex_run(struct ct_exitindex *x, const struct ct_recon_ops *ops, void *ctx);
/* Exit info of call SEQ, asked in its enter callback of ct_exitindex_run
 * (anything else: all zero, status OPEN).  *RET (if RET) points to the
 * result payload, valid during that callback. */
const struct ct_exit_info *ct_exitindex_get(struct ct_exitindex *x, uint64_t seq, const uint8_t **ret);
void ct_exitindex_free(struct ct_exitindex *x);

#endif
