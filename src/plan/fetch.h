/* Argument capture plans: for one site (a function's entry, or a RET), the
 * BPF fetch program that copies what the values need into the event payload,
 * and the descriptions that let replay turn those bytes back into values
 * (their layout and the payload codec: format/payload.h). */
#ifndef CT_FETCH_H
#define CT_FETCH_H

#include "format/payload.h"
#include "plan/abi.h"
#include "probes/event.h"
#include "target/types.h"

struct ct_fetch_opts {
	uint32_t max_string; /* bytes of a string captured (default 64) */
	uint32_t max_items;  /* slice/array elements captured (default 8) */
	uint32_t max_depth;  /* nesting of structs/slices followed (default 3) */
};

/* Builds the capture for SIG's arguments (RESULTS false, at entry) or its
 * results (RESULTS true, at RET).  LOCS[i] is the location of sig->params[i]
 * at that site (n == 0: unknown).  Values of the other kind are skipped. */
void ct_fetch_build(const struct ct_typetab *tt, const struct ct_sig *sig, const struct ct_loc *locs,
		    bool results, const struct ct_fetch_opts *o, struct ct_site_fetch *out);
/* Raw words when there is no DWARF: N integer registers in ABI order. */
void ct_fetch_build_raw(enum ct_callconv cc, uint32_t nwords, struct ct_site_fetch *out);
/* ... only word WORD (its low SIZE bytes), as value NAME. */
void ct_fetch_build_raw_one(enum ct_callconv cc, uint32_t word, uint16_t size, const char *name,
			    struct ct_site_fetch *out);

/* The same capture at another site of the call (--exit=auto): stack pieces
 * STACK_SHIFT bytes further from SP (the call instruction: -8; an exit site:
 * -8 - its SP delta), and with WALK (an exit site after the return) each
 * register's value read where the walk says it went.  Fails (ct_fail) when a
 * value may have changed before that site.  OUT owns copies. */
struct ct_exit_walk;
int ct_fetch_relocate(const struct ct_site_fetch *in, int32_t stack_shift, const struct ct_exit_walk *walk,
		      struct ct_site_fetch *out);
/* The same capture a few instructions before the call it is planned at
 * (a CALL site, SP as at the call: plan/ahead.c): WALK goes from there to
 * the call, and each register the capture reads is read where the walk
 * says its value was then (a register, a word of the stack or of memory a
 * register points to).  Fails (ct_fail) when a value is not known, or when
 * memory the capture reads may be written on the way (what the walk wrote
 * of the stack only: each hit checks what arguments point to against it,
 * as at exits). */
int ct_fetch_ahead(const struct ct_site_fetch *in, const struct ct_exit_walk *walk, struct ct_site_fetch *out);
/* Two captures at one probe (a call's exit that is the next call): one
 * program running A's ops then B's; OUT_A and OUT_B both carry it, each with
 * its own values.  Fails when the two do not fit one program. */
int ct_fetch_merge(const struct ct_site_fetch *a, const struct ct_site_fetch *b, struct ct_site_fetch *out_a,
		   struct ct_site_fetch *out_b);

#endif
