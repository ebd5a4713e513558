/* How each call ended, at its entry, for renderers that print a call's
 * duration and results at its start (JSON/YAML in entry order), with
 * bounded memory, in one reconstruction pass or two.
 *
 * The pass (ct_exitindex_run) holds each callback back, in order, until the
 * call it enters has ended.  Most calls end within a window of QUEUE held
 * callbacks, in memory.  When the window is full and its oldest callback is
 * the entry of a call still open (main.main, a server loop, a goroutine's
 * outermost calls), the oldest half of the window goes on to an unlinked
 * temp file, compactly encoded, as a queue of its own in front of the
 * window; the calls still open there get a fixed-size slot in their record
 * that their end is written into when it comes.  Once the call at the head
 * of the file's queue has ended, the file is read back and delivered up to
 * the next call still open.  (Without a temp file to be had, the queue
 * stays in memory.)
 *
 * With two passes (ct_exitindex_build), a first reconstruction pass keeps
 * the ends of the calls that outlive half the window, and the second takes
 * such a call's end from there instead of spilling what follows it.  That
 * pass was a third of replay --format=json's CPU, but it is cheaper than
 * the spill when nearly every callback would be spilled: when the calls
 * held back are not the few a filter shows but all (-t decides on a call's
 * duration, so it needs the index before the filter), and when full exits
 * are held for a renderer that takes them (the text tree under -t). */
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
	uint8_t end_bound; /* ct_call.end_bound: ts_exit bounds an UNOBSERVED call's end */
	uint64_t raw_exit; /* ts_exit as measured (no overhead correction) */
	uint64_t off_preempted, off_tracer, off_blocked; /* ct_call's */
};

struct ct_exitindex;

/* A one-pass index of T (reads nothing yet). */
struct ct_exitindex *ct_exitindex_new(struct ct_trace *t);
/* A two-pass index of T: runs the first pass. */
struct ct_exitindex *ct_exitindex_build(struct ct_trace *t);
/* The pass: every event of the trace through a reconstruction into OPS, as
 * ct_recon_run does (the same callbacks in the same order, each a little
 * later), so that ct_exitindex_get knows how the call being entered ends.
 * Once per index. */
struct ct_recon_stats ct_exitindex_run(struct ct_exitindex *x, const struct ct_recon_ops *ops, void *ctx);
/* The same pass with a stage of the caller's before the index (a filter
 * deciding at entry, so that what it hides is never held back): the
 * callbacks (context X) it passes on go to OPS through the index; then
 * ct_exitindex_finish delivers what is still held.  Once per index, and a
 * one-pass index only (a two-pass one finds its first pass's ends by the
 * order of the entries: it must see them all). */
struct ct_recon_ops ct_exitindex_hold(struct ct_exitindex *x, const struct ct_recon_ops *ops, void *ctx);
void ct_exitindex_finish(struct ct_exitindex *x);
/* Exit info of call SEQ, asked in its enter callback of ct_exitindex_run
 * (anything else: all zero, status OPEN).  *RET (if RET) points to the
 * result payload, valid during that callback. */
const struct ct_exit_info *ct_exitindex_get(struct ct_exitindex *x, uint64_t seq, const uint8_t **ret);
/* The exit callbacks of the pass need only say whose they are (seq, and
 * what ct_call_thread_key reads; the times of entry): the rest of them is
 * not held back (a filter whose renderer takes no exits).  Before the pass. */
void ct_exitindex_thin_exits(struct ct_exitindex *x);
void ct_exitindex_free(struct ct_exitindex *x);
/* The temp file's segment size (1 MiB); tests make it small, to exercise
 * records and slots across segment ends.  Set it before an index runs. */
extern size_t ct_exitindex_seg;

#endif
