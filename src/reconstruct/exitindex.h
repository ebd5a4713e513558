/* How each call ended, indexed by its entry sequence number, for renderers
 * that print a call's duration at its start (JSON/YAML in entry order).
 * Built in a first pass over the trace, kept in an unlinked temp file so
 * memory stays bounded: a window of recent calls is buffered and written in
 * blocks; only calls that outlive the window cost a pwrite of their own. */
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
	uint64_t ret_off;  /* where they are in the side file */
	uint32_t exit_site;
	uint32_t pad;
	uint64_t raw_exit; /* ts_exit as measured (no overhead correction) */
};

struct ct_exitindex;

/* Runs the first pass over T. */
struct ct_exitindex *ct_exitindex_build(struct ct_trace *t);
/* Exit info of call SEQ; calls must be asked for in increasing order.
 * *RET (if RET) points to the result payload, valid until the next call. */
const struct ct_exit_info *ct_exitindex_get(struct ct_exitindex *x, uint64_t seq, const uint8_t **ret);
void ct_exitindex_free(struct ct_exitindex *x);

#endif
