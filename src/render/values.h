/* Turning captured argument/result bytes back into values, as text
 * (`name="ab", n=3`) or JSON ([{"name","type","value"}]).  Two steps: a
 * value is assembled from its pieces (registers, stack) and decoded, with
 * what it points to read from the event's memory snapshots, into a small
 * tree (struct ct_vnode); a text and a JSON emitter then print the tree.
 * What was not captured is a marker node with its reason, shown in every
 * format, never a made-up value. */
#ifndef CT_VALUES_H
#define CT_VALUES_H

#include <stdbool.h>

#include "format/tracefile.h"
#include "reconstruct/reconstruct.h"
#include "util/util.h"

struct ct_values;

struct ct_values *ct_values_new(const struct ct_trace *t);
void ct_values_free(struct ct_values *v);

/* Decodes the payload of SITE.  Returns false when the site captures
 * nothing (then the functions below print nothing).  A site that captures,
 * with no payload (the hit could not copy, or it is of another call),
 * shows its values as unavailable: not captured. */
bool ct_values_load(struct ct_values *v, uint32_t site, const uint8_t *payload, uint32_t len);
/* Call C's arguments: its entry site's, completed by its SPILL hit (the
 * arguments passed in SSE registers, read where its prologue stored them;
 * without that hit they show as not stored yet). */
bool ct_values_load_args(struct ct_values *v, const struct ct_call *c);

/* Text: arguments as "a=1, s=\"x\""; results as "1" or "(1, \"x\")". */
void ct_values_text(struct ct_values *v, struct ct_buf *out);
/* JSON array of {"name","type","value"} objects. */
void ct_values_json(struct ct_values *v, struct ct_buf *out);
/* Call C's arguments, or the results of exit SITE's payload P/LEN, into
 * OUT: as ct_values_text (JSON: ct_values_json) prints them once loaded;
 * false (nothing written) if the site captures nothing.  After
 * ct_values_memo, outputs are remembered by payload, for a replay (whose
 * tables do not change); what these load is then not the loaded site of
 * the functions above. */
bool ct_values_args_out(struct ct_values *v, const struct ct_call *c, bool json, struct ct_buf *out);
bool ct_values_ret_out(struct ct_values *v, uint32_t site, const uint8_t *p, uint32_t len, bool json, struct ct_buf *out);
void ct_values_memo(struct ct_values *v);
/* How many values (arguments or results) the loaded site has. */
size_t ct_values_count(const struct ct_values *v);

/* Value I (< ct_values_count) alone: its name (*RESULT: it is a result) and
 * its text as ct_values_text shows it. */
const char *ct_values_name(const struct ct_values *v, size_t i, bool *result);
void ct_values_text_one(struct ct_values *v, size_t i, struct ct_buf *out);

/* ---- the value tree ---- */

enum ct_vkind {
	CT_V_MARKER,  /* no value: `why` (text <why>, JSON null and, for a whole value, "unavailable") */
	CT_V_BOOL,    /* u: 0 or 1 */
	CT_V_INT,     /* i */
	CT_V_UINT,    /* u */
	CT_V_INT128,  /* w; CT_VF_SIGNED */
	CT_V_FLOAT,   /* f[0], shown with digits[0] significant digits */
	CT_V_COMPLEX, /* f[0] + f[1]i; CT_VF_X87: two x87 values (else doubles) */
	CT_V_STRING,  /* s, n bytes; CT_VF_CUT: the capture holds only these */
	CT_V_CHAR,    /* u: a valid code point */
	CT_V_NAME,    /* s: an enumerator, a variant without fields */
	CT_V_NIL,     /* a null pointer: nil (CT_VF_GO) or NULL */
	CT_V_ADDR,    /* u: an address not followed, or bytes of an unknown type */
	CT_V_WORD,    /* u: a raw word (text hex, JSON number) */
	CT_V_UNIT,    /* Rust's () */
	CT_V_VOID,
	CT_V_STRUCT,  /* kids, each with its field name */
	CT_V_TUPLE,   /* kids, positional (Rust tuples, tuple structs) */
	CT_V_ARRAY,   /* kids: the items */
	CT_V_LIST,    /* slice, Vec, std::vector: len, cap (CT_VF_CAP), shown items as kids */
	CT_V_MAP,     /* u: the address; len (CT_VF_LEN) */
	CT_V_CHAN,    /* u: the address; len (CT_VF_LEN), cap (CT_VF_CAP) */
	CT_V_DYNAMIC, /* an interface's value: s the dynamic type's name (NULL: u its address), one kid */
	CT_V_VARIANT, /* a Rust enum's variant s; one kid: its value (CT_VF_NEWTYPE) or its fields */
};

enum {
	CT_VF_SIGNED = 1,
	CT_VF_X87 = 2,
	CT_VF_CUT = 4,
	CT_VF_GO = 8,
	CT_VF_CAP = 16,
	CT_VF_LEN = 32,
	CT_VF_NEWTYPE = 64,
	CT_VF_CHECKED = 128, /* a value of its own: the output limit is checked before it */
	CT_VF_LIMIT = 256,   /* the decoder's node limit: the value's rest is left out */
};

#define CT_VNONE UINT32_MAX

struct ct_vnode {
	uint8_t kind;        /* enum ct_vkind */
	uint8_t digits[2];   /* CT_V_FLOAT/COMPLEX: significant digits to print */
	uint16_t flags;      /* CT_VF_* */
	uint32_t first, next; /* first kid, next sibling: node indices, or CT_VNONE */
	const char *field;   /* a struct field's name */
	const char *s;       /* string bytes, marker reason, name */
	uint64_t n;          /* string bytes; LIST: items shown */
	uint64_t len, cap;   /* LIST, MAP, CHAN */
	union {
		int64_t i;
		uint64_t u;
		unsigned __int128 w;
		long double f[2];
	};
};

/* Decodes value I of the loaded site (I < ct_values_count) into its tree:
 * the root, valid until the next decode, load or free. */
const struct ct_vnode *ct_values_decode(struct ct_values *v, size_t i);
/* A node's first kid, a kid's next sibling (NULL: none). */
const struct ct_vnode *ct_vnode_first(const struct ct_values *v, const struct ct_vnode *n);
const struct ct_vnode *ct_vnode_next(const struct ct_values *v, const struct ct_vnode *n);

/* Appends S as a JSON string (escaped; invalid UTF-8 bytes as \u00XX). */
void ct_buf_json_string(struct ct_buf *b, const char *s, size_t n);

#endif
