/* Argument capture plans: for one site (a function's entry, or a RET), the
 * BPF fetch program that copies what the values need into the event payload,
 * and the descriptions that let replay turn those bytes back into values.
 *
 * A value is assembled from pieces (registers, stack slots) into its memory
 * layout.  Memory it points to (string bytes, slice elements, the data of an
 * interface, a C string) is captured as snapshots: (address, bytes) pairs
 * that replay reads like memory.  So decoding never guesses which op captured
 * what: it asks "what were the bytes at this address?". */
#ifndef CT_FETCH_H
#define CT_FETCH_H

#include "plan/abi.h"
#include "probes/event.h"
#include "target/types.h"

/* ct_val_desc.flags */
#define CT_VAL_RESULT 0x01     /* a result (at RET), not an argument */
#define CT_VAL_NOLOC 0x02      /* location unknown: value unavailable */
#define CT_VAL_RAW 0x04        /* no DWARF: a raw 8-byte word, no type */
#define CT_VAL_INCOMPLETE 0x08 /* the signature misses params (blank `_`): unavailable */
#define CT_VAL_OPTIMIZED 0x10  /* with NOLOC: optimized code keeps it nowhere we know of
				  (and the calling convention need not hold) */

struct ct_val_piece {
	uint8_t kind;       /* enum ct_piece_kind */
	uint8_t reg;
	uint16_t size;
	uint32_t value_off;
	uint16_t slot;      /* payload offset: REG = the 8-byte word, STACK/REGMEM = the mem slot */
	uint64_t literal;   /* CONST: the bytes themselves (nothing is fetched) */
};

struct ct_val_desc {
	char *name;
	uint32_t type;
	uint8_t flags;
	uint32_t npieces;
	struct ct_val_piece *pieces;
};

struct ct_site_fetch {
	struct ct_fetch prog;
	struct ct_val_desc *vals;
	uint32_t nvals;
	bool truncated; /* the op or payload budget ran out: some memory not captured */
};

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
void ct_site_fetch_free(struct ct_site_fetch *f);

/* The same capture at another site of the call (--exit=auto): stack pieces
 * STACK_SHIFT bytes further from SP (the call instruction: -8; an exit site:
 * -8 - its SP delta), and with WALK (an exit site after the return) each
 * register's value read where the walk says it went.  Fails (ct_fail) when a
 * value may have changed before that site.  OUT owns copies. */
struct ct_exit_walk;
int ct_fetch_relocate(const struct ct_site_fetch *in, int32_t stack_shift, const struct ct_exit_walk *walk,
		      struct ct_site_fetch *out);
/* Two captures at one probe (a call's exit that is the next call): one
 * program running A's ops then B's; OUT_A and OUT_B both carry it, each with
 * its own values.  Fails when the two do not fit one program. */
int ct_fetch_merge(const struct ct_site_fetch *a, const struct ct_site_fetch *b, struct ct_site_fetch *out_a,
		   struct ct_site_fetch *out_b);

/* A memory op (an 8-byte header, then the bytes copied), or a word (8
 * bytes, like a register)? */
bool ct_fetch_op_is_mem(uint8_t code);

/* The payload as it crosses the ring buffer is the fixed layout; the file
 * keeps only the bytes actually copied.  Both return the bytes written. */
size_t ct_fetch_compact(const struct ct_fetch *f, const uint8_t *raw, size_t rawlen, uint8_t *out,
			size_t outcap);
size_t ct_fetch_expand(const struct ct_fetch *f, const uint8_t *compact, size_t len, uint8_t *out,
		       size_t outcap);

/* Decoding side: the memory snapshots of an expanded payload. */
struct ct_snapshot {
	uint64_t addr;
	const uint8_t *bytes; /* NULL if the read failed */
	uint32_t len;
	uint32_t cap;         /* the most the op could copy */
};
size_t ct_fetch_snapshots(const struct ct_fetch *f, const uint8_t *payload, struct ct_snapshot *out,
			  size_t max);

#endif
