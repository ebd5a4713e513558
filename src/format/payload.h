/* The payload codec and the value descriptions, as the record file keeps
 * them: which bytes of an event's payload hold which value, the compact form
 * the file stores (only the bytes actually copied), and the memory snapshots
 * a reader decodes from.  Written by the planner (plan/fetch.c builds the
 * capture) and the session, read by every renderer.
 *
 * A value is assembled from pieces (registers, stack slots) into its memory
 * layout.  Memory it points to (string bytes, slice elements, the data of an
 * interface, a C string) is captured as snapshots: (address, bytes) pairs
 * that replay reads like memory.  So decoding never guesses which op captured
 * what: it asks "what were the bytes at this address?". */
#ifndef CT_PAYLOAD_H
#define CT_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/event.h"

/* ct_val_desc.flags */
#define CT_VAL_RESULT 0x01     /* a result (at RET), not an argument */
#define CT_VAL_NOLOC 0x02      /* location unknown: value unavailable */
#define CT_VAL_RAW 0x04        /* no DWARF: a raw 8-byte word, no type */
#define CT_VAL_INCOMPLETE 0x08 /* the signature misses params (blank `_`): unavailable */
#define CT_VAL_OPTIMIZED 0x10  /* with NOLOC: optimized code keeps it nowhere we know of
				  (and the calling convention need not hold) */
#define CT_VAL_CUT 0x20        /* (with NOLOC) it did not fit the capture limits */

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
	struct ct_val_desc *vals;
	uint32_t nvals;
	bool truncated; /* the op or payload budget ran out: some memory not captured */
	/* Planning only (not in the file): bit i set if op i copies bytes that
	 * never change while the value lives (a Go string's). */
	uint64_t immutable_ops;
	/* Last: a copy on the heap (ct_site_fetch_keep) ends after its
	 * program's ops, as a site uses a few of CT_MAX_OPS (the full
	 * struct ct_fetch, ~800 bytes, per site was most of the plan's heap).
	 * Such a copy is replaced, never assigned to as a whole; its program is
	 * read by ct_fetch_copy. */
	struct ct_fetch prog;
};

/* Frees F's values; its program reads as empty. */
void ct_site_fetch_free(struct ct_site_fetch *f);
/* A heap copy of F (taking its values) as long as its program's ops. */
struct ct_site_fetch *ct_site_fetch_keep(const struct ct_site_fetch *f);
/* *SLOT (NULL: a fetch without values) with its program replaced by PROG. */
void ct_site_fetch_set_prog(struct ct_site_fetch **slot, const struct ct_fetch *prog);
/* SRC's header and ops into DST (SRC may end after its ops). */
void ct_fetch_copy(struct ct_fetch *dst, const struct ct_fetch *src);

/* Where a value's bytes are in the payload, for the planner (which lays
 * out what a captured word points to) and every reader alike.  A register
 * piece is one 8-byte word at `slot`, readable only from the value byte it
 * starts; a memory piece (STACK, REGMEM) a copy at `slot` + CT_MEM_HDR, the
 * header telling how many bytes the read got; nothing else is in the
 * payload (a constant, a register BPF cannot read). */

/* Whether a piece of this kind (enum ct_piece_kind) is copied into the
 * payload: a general register (REG) or memory (STACK, REGMEM); the others
 * (a constant, SSE or x87 registers) never are. */
bool ct_piece_in_payload(int kind);
/* The piece of D that holds bytes [OFF, OFF+SIZE) of its value whole, or
 * NULL. */
const struct ct_val_piece *ct_val_piece_of(const struct ct_val_desc *d, uint32_t off, uint32_t size);
/* The payload offset of byte OFF of the value (inside P), or -1. */
int ct_val_piece_slot(const struct ct_val_piece *p, uint32_t off);
/* Bytes [OFF, OFF+SIZE) of the value (inside P) in a PAYLOAD of LEN bytes
 * (raw or expanded: the fixed layout), or NULL when not there or when P's
 * memory read failed. */
const uint8_t *ct_val_piece_bytes(const struct ct_val_piece *p, const uint8_t *payload, size_t len, uint32_t off,
				  uint32_t size);

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
