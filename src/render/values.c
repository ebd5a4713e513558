#include "render/values.h"
#include "format/payload.h"
#include "target/goruntime.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Bytes of one value's own layout we assemble: no capture holds more.
 * Everything decoded lies inside a buffer whose real size is known: the
 * assembled value (a type's size is checked against it before decoding) or a
 * snapshot (bounded by the bytes it holds). */
#define MAX_VALUE CT_MAX_PAYLOAD
/* Text of one value at most (a crafted type table could ask for 64^6 fields). */
#define MAX_VALUE_TEXT (64 * 1024)

/* Nodes of one value's tree at most.  Every node prints at least one
 * character before its kids, so a value whose nodes go past this has
 * reached MAX_VALUE_TEXT before printing them; the limit bounds the tree's
 * memory whatever the type table says. */
#define MAX_NODES (MAX_VALUE_TEXT + 64)

/* ct_values_args_out, ct_values_ret_out: the output of a payload
 * remembered.  A hot function's calls mostly repeat a few argument and
 * result values, and loading, decoding and printing them again was a
 * quarter of replay's instructions; the output is the same for the same
 * site and bytes (the trace's tables do not change during a replay). */
#define MEMO_SLOTS 512
#define MEMO_BYTES 24  /* payloads up to this long */
#define MEMO_TEXT 112  /* outputs up to this long */
/* site | kind << 32 | len << 40 | (no payload) << 48, then the payload's
 * bytes, zeros after LEN; kind 0: an empty slot, else MEMO_ARGS or
 * MEMO_RET, | MEMO_JSON.  Words, made and compared in registers: a key
 * stored byte field by byte field and read back as words stalled each
 * lookup (a store not forwarded to a wider load). */
struct memo_key {
	uint64_t w[1 + MEMO_BYTES / 8];
};
enum { MEMO_ARGS = 1, MEMO_RET = 2, MEMO_JSON = 4 };
struct memo {
	bool loaded;   /* the site captures: TEXT is its output */
	uint8_t n;
	char text[MEMO_TEXT];
};

struct ct_values {
	const struct ct_trace *t;
	const struct ct_site_fetch *f;
	uint32_t site;       /* whose values: its object names runtime types */
	bool go;             /* the site's function is Go code */
	uint8_t payload[CT_MAX_PAYLOAD];
	struct ct_snapshot snaps[CT_MAX_OPS];
	size_t nsnaps;
	/* snaps are found when memory is first read (mem_cap), not at each
	 * load: most values of hot calls are registers (plain_scalar) */
	bool snaps_found;
	bool missing;        /* the site captures, but this event holds no payload */
	uint8_t b[MAX_VALUE], avail[MAX_VALUE]; /* the value being assembled */
	uint8_t ones[MAX_VALUE]; /* "available" for bytes read from snapshots */
	/* the decoded value: nodes[0..nnodes) */
	struct ct_vnode *nodes;
	uint32_t nnodes, cap_nodes;
	/* ct_values_load_args: the SPILL hit's values, used for the values
	 * it reads (by position), or NULL; spill_missing: the call had not
	 * got there. */
	struct ct_values *spill;
	bool use_spill, spill_missing;
	struct ct_map json_heads; /* site << 32 | value index -> struct json_head * */
	struct memo *memo;        /* MEMO_SLOTS (NULL: not used) */
	/* memo[i]'s key, apart from the texts: 16 KiB that stay in L1, where
	 * the keys among the texts (76 KiB) made each lookup a cache miss
	 * (a fifth of memo_slot's time was the compare's load) */
	struct memo_key *memo_keys;
	struct memo_key key;      /* memo_slot's last */
};

/* The start of a value's JSON object, its name and type, the same at every
 * hit of its site: `{"name":"n","type":"int","value":`, escaped once (per
 * call, the two strings' escaping was ~6% of replay --format=json). */
struct json_head {
	const struct ct_val_desc *d; /* made of (a site's table read again: made again) */
	struct ct_buf text;
};

/* One value being printed. */
struct emitter {
	const struct ct_values *v;
	struct ct_buf *out;
	size_t value_start;  /* out->n where the value began */
	bool over;           /* it reached MAX_VALUE_TEXT: the rest is left out */
	bool truncated;      /* a string was cut to the capture limit, or the value */
	const char *marker;  /* the last marker printed (why a value is missing) */
};

struct ct_values *ct_values_new(const struct ct_trace *t)
{
	struct ct_values *v = xcalloc(1, sizeof(*v));
	v->t = t;
	memset(v->ones, 1, sizeof(v->ones));
	return v;
}

void ct_values_free(struct ct_values *v)
{
	if (v) {
		free(v->nodes);
		ct_values_free(v->spill);
		MAP_FOREACH(&v->json_heads, i)
		{
			struct json_head *h = v->json_heads.vals[i];
			buf_free(&h->text);
			free(h);
		}
		map_free(&v->json_heads);
		free(v->memo);
		free(v->memo_keys);
	}
	free(v);
}

void ct_values_memo(struct ct_values *v)
{
	if (!v->memo) {
		v->memo = xcalloc(MEMO_SLOTS, sizeof(*v->memo));
		v->memo_keys = xcalloc(MEMO_SLOTS, sizeof(*v->memo_keys));
	}
}

/* The memo's slot for the output of KIND for SITE's payload P/LEN (its key
 * in v->key), *HIT if it holds it; NULL: not remembered. */
static struct memo *memo_slot(struct ct_values *v, uint8_t kind, uint32_t site, const uint8_t *p, uint32_t len,
			      bool *hit)
{
	*hit = false;
	if (!v->memo || len > MEMO_BYTES)
		return NULL;
	/* The key's words in registers, the payload's loaded whole where it
	 * is one or two words (most are; memcpy of a length not known here
	 * is a call).  Made in an array on the stack, they were read back as
	 * 16-byte loads spanning two 8-byte stores, which the CPU does not
	 * forward: a stall on each lookup, a third of its time. */
	_Static_assert(MEMO_BYTES == 24, "the key's words below");
	uint64_t k0 = site | (uint64_t)kind << 32 | (uint64_t)len << 40 | (uint64_t)!p << 48, k1 = 0, k2 = 0, k3 = 0;
	if (p && len == 8) {
		memcpy(&k1, p, 8);
	} else if (p && len == 16) {
		memcpy(&k1, p, 8);
		memcpy(&k2, p + 8, 8);
	} else if (p) {
		uint64_t w[MEMO_BYTES / 8] = {0};
		memcpy(w, p, len);
		k1 = w[0];
		k2 = w[1];
		k3 = w[2];
	}
	/* a multiply per word: hash64 per word was a tenth of JSON replay */
	uint64_t h = k0 * 0x9e3779b97f4a7c15ULL;
	h = (h ^ k1) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ k2) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ k3) * 0xbf58476d1ce4e5b9ULL;
	size_t slot = (h ^ h >> 31) % MEMO_SLOTS;
	const struct memo_key *mk = &v->memo_keys[slot];
	uint64_t diff = (mk->w[0] ^ k0) | (mk->w[1] ^ k1) | (mk->w[2] ^ k2) | (mk->w[3] ^ k3);
	*hit = !diff;
	if (diff) /* (memo_keep's, after a miss) */
		v->key = (struct memo_key){{k0, k1, k2, k3}};
	return &v->memo[slot];
}

/* What was just written for M's key (v->key): LOADED, and the N bytes at P. */
static void memo_keep(struct ct_values *v, struct memo *m, bool loaded, const uint8_t *p, size_t n)
{
	if (!m || n > MEMO_TEXT)
		return;
	v->memo_keys[m - v->memo] = v->key;
	m->loaded = loaded;
	m->n = (uint8_t)n;
	if (n) /* (P is NULL for none: memcpy's is never) */
		memcpy(m->text, p, n);
}

static bool values_out(struct ct_values *v, struct memo *m, bool loaded, bool json, struct ct_buf *out)
{
	if (!loaded) {
		memo_keep(v, m, false, NULL, 0);
		return false;
	}
	size_t from = out->n;
	if (json)
		ct_values_json(v, out);
	else
		ct_values_text(v, out);
	memo_keep(v, m, true, out->p + from, out->n - from);
	return true;
}

static inline bool memo_out(const struct memo *m, struct ct_buf *out)
{
	if (m->loaded)
		buf_put_short(out, m->text, m->n);
	return m->loaded;
}

bool ct_values_args_out(struct ct_values *v, const struct ct_call *c, bool json, struct ct_buf *out)
{
	bool hit;
	/* (arguments completed by a spill hit depend on its payload too) */
	struct memo *m = c->spill_site == UINT32_MAX ? memo_slot(v, MEMO_ARGS | (json ? MEMO_JSON : 0), c->entry_site,
								  c->args, c->args ? c->args_len : 0, &hit)
						     : NULL;
	if (m && hit)
		return memo_out(m, out);
	return values_out(v, m, ct_values_load_args(v, c), json, out);
}

bool ct_values_ret_out(struct ct_values *v, uint32_t site, const uint8_t *p, uint32_t len, bool json, struct ct_buf *out)
{
	bool hit;
	struct memo *m = memo_slot(v, MEMO_RET | (json ? MEMO_JSON : 0), site, p, p ? len : 0, &hit);
	if (m && hit)
		return memo_out(m, out);
	return values_out(v, m, ct_values_load(v, site, p, len), json, out);
}

bool ct_values_load(struct ct_values *v, uint32_t site, const uint8_t *payload, uint32_t len)
{
	v->f = NULL;
	v->use_spill = false;
	if (!v->t->fetch || site >= v->t->nsites || !v->t->fetch[site])
		return false;
	const struct ct_site_fetch *f = v->t->fetch[site];
	/* A void function's return site may share its probe (and so a fetch
	 * program) with the next call's site at the same address: no values. */
	if (!f->nvals)
		return false;
	/* A site whose values all sit in SSE registers fetches nothing, yet
	 * has values to show (as unavailable); a hit that could not capture
	 * (or whose payload does not fit the plan) shows them as not captured. */
	v->missing = f->prog.size &&
		     (!payload || !len || !ct_fetch_expand(&f->prog, payload, len, v->payload, sizeof(v->payload)));
	v->nsnaps = 0;
	v->snaps_found = v->missing;
	v->f = f;
	v->site = site;
	v->go = v->t->sites && ct_trace_func_is_go(v->t, v->t->sites[site].func);
	return true;
}

bool ct_values_load_args(struct ct_values *v, const struct ct_call *c)
{
	if (!ct_values_load(v, c->entry_site, c->args, c->args_len))
		return false;
	if (c->spill_site == UINT32_MAX)
		return true;
	if (!v->spill)
		v->spill = ct_values_new(v->t);
	v->use_spill = ct_values_load(v->spill, c->spill_site, c->spill, c->spill_len) &&
		       v->spill->f->nvals == v->f->nvals;
	v->spill_missing = !c->spill;
	return true;
}

size_t ct_values_count(const struct ct_values *v)
{
	return v->f ? v->f->nvals : 0;
}

/* ---- decoding: bytes and types to a tree ---- */

static uint32_t new_node(struct ct_values *v, enum ct_vkind kind)
{
	if (v->nnodes == v->cap_nodes) {
		v->cap_nodes = v->cap_nodes ? v->cap_nodes * 2 : 64;
		v->nodes = xrealloc(v->nodes, v->cap_nodes * sizeof(*v->nodes));
	}
	struct ct_vnode *n = &v->nodes[v->nnodes];
	memset(n, 0, sizeof(*n));
	n->kind = (uint8_t)kind;
	n->first = n->next = CT_VNONE;
	return v->nnodes++;
}

static inline struct ct_vnode *node(struct ct_values *v, uint32_t id)
{
	return &v->nodes[id];
}

static bool nodes_full(const struct ct_values *v)
{
	return v->nnodes >= MAX_NODES;
}

/* Kids in order: *LAST is the previous kid of PARENT (CT_VNONE: none yet). */
static void add_kid(struct ct_values *v, uint32_t parent, uint32_t *last, uint32_t kid)
{
	if (*last == CT_VNONE)
		node(v, parent)->first = kid;
	else
		node(v, *last)->next = kid;
	*last = kid;
}

/* Whether PARENT may take another kid; if not, the kid saying the rest is
 * left out is added. */
static bool room_for_kid(struct ct_values *v, uint32_t parent, uint32_t *last)
{
	if (!nodes_full(v))
		return true;
	uint32_t cut = new_node(v, CT_V_MARKER);
	node(v, cut)->s = node(v, cut)->field = "...";
	node(v, cut)->flags = CT_VF_LIMIT;
	add_kid(v, parent, last, cut);
	return false;
}

static uint32_t marker(struct ct_values *v, const char *why)
{
	uint32_t n = new_node(v, CT_V_MARKER);
	node(v, n)->s = why;
	return n;
}

static uint32_t string_node(struct ct_values *v, const uint8_t *s, size_t n, bool cut)
{
	uint32_t id = new_node(v, CT_V_STRING);
	node(v, id)->s = (const char *)s;
	node(v, id)->n = n;
	node(v, id)->flags = cut ? CT_VF_CUT : 0;
	return id;
}

static uint32_t word_node(struct ct_values *v, enum ct_vkind kind, uint64_t u)
{
	uint32_t id = new_node(v, kind);
	node(v, id)->u = u;
	return id;
}

static uint32_t int_node(struct ct_values *v, int64_t i)
{
	uint32_t id = new_node(v, CT_V_INT);
	node(v, id)->i = i;
	return id;
}

/* A pointer: its address, or nil (GO) / NULL. */
static uint32_t ptr_node(struct ct_values *v, uint64_t p, bool go)
{
	if (p)
		return word_node(v, CT_V_ADDR, p);
	uint32_t id = new_node(v, CT_V_NIL);
	node(v, id)->flags = go ? CT_VF_GO : 0;
	return id;
}

/* Memory captured at exactly ADDR: its bytes and how many. */
static const uint8_t *mem_cap(const struct ct_values *v, uint64_t addr, uint32_t *got, uint32_t *cap)
{
	if (!v->snaps_found) {
		struct ct_values *w = (struct ct_values *)v; /* (const to its readers only) */
		w->nsnaps = ct_fetch_snapshots(&v->f->prog, v->payload, w->snaps, CT_MAX_OPS);
		w->snaps_found = true;
	}
	for (size_t i = 0; i < v->nsnaps; i++)
		if (v->snaps[i].addr == addr && v->snaps[i].bytes) {
			*got = v->snaps[i].len;
			*cap = v->snaps[i].cap;
			return v->snaps[i].bytes;
		}
	*got = *cap = 0;
	return NULL;
}

static const uint8_t *mem(const struct ct_values *v, uint64_t addr, uint32_t *got)
{
	uint32_t cap;
	return mem_cap(v, addr, got, &cap);
}

static uint64_t load_uint(const uint8_t *p, uint32_t size)
{
	uint64_t x = 0;
	/* the common sizes as fixed-size loads: a memcpy of a variable size is
	 * rep movsb here, whose start-up cost more than printing the value */
	switch (size > 8 ? 8 : size) {
	case 8:
		memcpy(&x, p, 8);
		break;
	case 4:
		memcpy(&x, p, 4);
		break;
	case 2:
		memcpy(&x, p, 2);
		break;
	case 1:
		x = p[0];
		break;
	default:
		memcpy(&x, p, size);
	}
	return x;
}

static int64_t load_int(const uint8_t *p, uint32_t size)
{
	uint64_t x = load_uint(p, size);
	if (size < 8 && size > 0) {
		uint64_t sign = 1ULL << (size * 8 - 1);
		x = (x ^ sign) - sign;
	}
	return (int64_t)x;
}

static bool all_avail(const uint8_t *avail, uint32_t off, uint32_t size)
{
	for (uint32_t i = 0; i < size; i++)
		if (!avail[off + i])
			return false;
	return true;
}

static const struct ct_type *type_of(const struct ct_values *v, uint32_t id)
{
	return ct_type_get(&v->t->types, id);
}

/* x87 extended precision (C long double on x86-64): 80 bits in the first
 * 10 of its 16 bytes, which this host's long double is. */
static long double load_x87(const uint8_t *p)
{
	long double x = 0;
	memcpy(&x, p, 10);
	return x;
}

/* The fewest significant digits that read back as X (at most 21). */
static int x87_digits(long double x)
{
	char s[64];
	for (int d = 1; d < 21; d++) {
		snprintf(s, sizeof(s), "%.*Lg", d, x);
		if (strtold(s, NULL) == x)
			return d;
	}
	return 21;
}

/* A float with DIGITS significant digits: enough to read the same binary
 * value back (17 for a double, x87_digits for x87's 64-bit mantissa). */
static uint32_t float_node(struct ct_values *v, long double d, int digits)
{
	uint32_t id = new_node(v, CT_V_FLOAT);
	node(v, id)->f[0] = d;
	node(v, id)->digits[0] = (uint8_t)digits;
	return id;
}

static uint32_t decode_value(struct ct_values *v, uint32_t id, const uint8_t *b, const uint8_t *avail,
			     uint32_t depth);

/* A string at P of N bytes, as far as it was captured. */
static uint32_t decode_string_at(struct ct_values *v, uint64_t p, uint64_t n)
{
	uint32_t got;
	const uint8_t *m;
	if (!n)
		return string_node(v, (const uint8_t *)"", 0, false);
	if ((m = mem(v, p, &got)))
		return string_node(v, m, got < n ? got : n, got < n);
	return marker(v, "string not captured");
}

/* An interface's dynamic value, given its runtime type and data word. */
static uint32_t decode_dynamic(struct ct_values *v, uint64_t rtype, uint64_t data, uint32_t depth)
{
	uint32_t tid = ct_trace_rtype(v->t, v->site, rtype);
	const struct ct_type *dt = tid != CT_TYPE_NONE ? type_of(v, tid) : NULL;
	uint32_t dyn = new_node(v, CT_V_DYNAMIC), val;
	node(v, dyn)->s = dt ? dt->name : NULL;
	node(v, dyn)->u = rtype;
	uint32_t got = 0;
	const uint8_t *box = mem(v, data, &got);
	if (!dt) {
		val = ptr_node(v, data, true);
	} else if (dt->kind == CT_K_PTR || dt->kind == CT_K_MAP || dt->kind == CT_K_CHAN || dt->kind == CT_K_FUNC) {
		/* Pointer-shaped: the data word is the value.  Errors made by
		 * errors.New / fmt.Errorf point to a struct that starts with the
		 * message string: show the message. */
		const struct ct_type *pt = dt->kind == CT_K_PTR ? type_of(v, dt->elem) : NULL;
		uint32_t sgot;
		if (pt && pt->kind == CT_K_STRUCT && pt->nfields && pt->fields[0].offset == 0 &&
		    type_of(v, pt->fields[0].type)->kind == CT_K_STRING && box && got >= 16) {
			uint64_t sp = load_uint(box, 8), sl = load_uint(box + 8, 8);
			if (!sl || mem(v, sp, &sgot))
				val = decode_string_at(v, sp, sl);
			else
				val = ptr_node(v, data, true);
		} else {
			val = ptr_node(v, data, true);
		}
	} else if (box && dt->size <= got && (dt->kind == CT_K_STRING || dt->kind == CT_K_INT || dt->kind == CT_K_UINT ||
					       dt->kind == CT_K_BOOL || dt->kind == CT_K_FLOAT || dt->kind == CT_K_COMPLEX)) {
		val = decode_value(v, tid, box, v->ones, depth + 1);
	} else {
		val = marker(v, "not captured");
	}
	node(v, dyn)->first = val;
	return dyn;
}

/* Rust's i128/u128, C's __int128. */
static uint32_t int128_node(struct ct_values *v, const uint8_t *b, bool is_signed)
{
	uint32_t id = new_node(v, CT_V_INT128);
	memcpy(&node(v, id)->w, b, 16);
	node(v, id)->flags = is_signed ? CT_VF_SIGNED : 0;
	return id;
}

/* Rust tuples and tuple structs/variants name their fields __0, __1, ... */
static bool is_tuple(const struct ct_type *t)
{
	for (uint32_t i = 0; i < t->nfields; i++) {
		const char *n = t->fields[i].name;
		if (n[0] != '_' || n[1] != '_' || !n[2] || strspn(n + 2, "0123456789") != strlen(n + 2))
			return false;
	}
	return t->nfields > 0;
}

/* A C bit-field of struct T: its bits, widened (sign-extended for signed
 * types) to its declared type and decoded as that type. */
static uint32_t decode_bit_field(struct ct_values *v, const struct ct_type *t, const struct ct_field *fl,
				 const uint8_t *b, const uint8_t *avail, uint32_t depth)
{
	const struct ct_type *ft = type_of(v, fl->type);
	uint32_t nbytes = (fl->bit_off + fl->bit_size + 7u) / 8u;
	if ((uint64_t)fl->offset + nbytes > t->size || ft->size > 16 || !ft->size)
		return marker(v, "?");
	if (!all_avail(avail, fl->offset, nbytes))
		return marker(v, "unavailable");
	unsigned __int128 x = 0;
	memcpy(&x, b + fl->offset, nbytes); /* at most 9 bytes: 7 + 64 bits */
	x >>= fl->bit_off;
	uint64_t bits = (uint64_t)x;
	if (fl->bit_size < 64) {
		uint64_t top = 1ULL << (fl->bit_size - 1);
		bits &= (top << 1) - 1;
		if (ft->kind == CT_K_INT || (ft->kind == CT_K_ENUM && ft->is_signed))
			bits = (bits ^ top) - top;
	}
	uint8_t word[16];
	memset(word, (int64_t)bits < 0 && (ft->kind == CT_K_INT || ft->is_signed) ? 0xff : 0, sizeof(word));
	memcpy(word, &bits, 8);
	return decode_value(v, fl->type, word, v->ones, depth + 1);
}

/* A struct's fields, named; a Rust tuple's, positional. */
static uint32_t decode_fields(struct ct_values *v, const struct ct_type *t, const uint8_t *b, const uint8_t *avail,
			      uint32_t depth)
{
	uint32_t id = new_node(v, is_tuple(t) ? CT_V_TUPLE : CT_V_STRUCT), last = CT_VNONE;
	for (uint32_t i = 0; i < t->nfields && room_for_kid(v, id, &last); i++) {
		const struct ct_field *fl = &t->fields[i];
		uint32_t kid;
		if (fl->flags & CT_FIELD_BITS)
			kid = decode_bit_field(v, t, fl, b, avail, depth);
		else if ((uint64_t)fl->offset + type_of(v, fl->type)->size <= t->size)
			kid = decode_value(v, fl->type, b + fl->offset, avail + fl->offset, depth + 1);
		else
			kid = marker(v, "?");
		node(v, kid)->field = fl->name;
		add_kid(v, id, &last, kid);
	}
	return id;
}

/* A C/C++/Rust enum value by its enumerator's name, else its number. */
static uint32_t decode_enum(struct ct_values *v, const struct ct_type *t, const uint8_t *b)
{
	uint64_t x = load_uint(b, t->size);
	for (uint32_t i = 0; i < t->nfields; i++)
		if ((uint64_t)t->fields[i].value == x) {
			uint32_t id = new_node(v, CT_V_NAME);
			node(v, id)->s = t->fields[i].name;
			return id;
		}
	if (t->is_signed)
		return int_node(v, load_int(b, t->size));
	return word_node(v, CT_V_UINT, x);
}

/* Items of a list at M (SHOWN of them, each ELEM), as kids of LIST. */
static void decode_items(struct ct_values *v, uint32_t list, uint32_t elem, const uint8_t *m, uint64_t shown,
			 uint32_t depth)
{
	uint32_t size = type_of(v, elem)->size, last = CT_VNONE;
	node(v, list)->n = shown;
	for (uint64_t i = 0; i < shown && room_for_kid(v, list, &last); i++)
		add_kid(v, list, &last, decode_value(v, elem, m + i * size, v->ones, depth + 1)); /* size <= got */
}

/* A list of N items of ELEM at P, as far as they were captured. */
static uint32_t decode_list(struct ct_values *v, uint32_t elem, uint64_t p, uint64_t n, bool has_cap, uint64_t cap,
			    uint32_t depth)
{
	const struct ct_type *e = type_of(v, elem);
	uint32_t got = 0;
	const uint8_t *m = p && n ? mem(v, p, &got) : NULL;
	uint64_t shown = m && e->size ? got / e->size : 0;
	if (shown > n)
		shown = n;
	uint32_t id = new_node(v, CT_V_LIST);
	node(v, id)->len = n;
	node(v, id)->cap = cap;
	node(v, id)->flags = has_cap ? CT_VF_CAP : 0;
	decode_items(v, id, elem, m, shown, depth);
	return id;
}

/* A word-sized part of a SEQ, if it lies in the value and was captured. */
static bool seq_word(const struct ct_type *t, const char *name, const uint8_t *b, const uint8_t *avail,
		     uint64_t *out)
{
	const struct ct_field *f = ct_type_field(t, name);
	if (!f || (uint64_t)f->offset + 8 > t->size || !all_avail(avail, f->offset, 8))
		return false;
	*out = load_uint(b + f->offset, 8);
	return true;
}

/* Rust String/Vec/&str/&[T], C++ std::string/std::vector: text as a
 * string, items as a list (no cap for slices). */
static uint32_t decode_seq(struct ct_values *v, const struct ct_type *t, const uint8_t *b, const uint8_t *avail,
			   uint32_t depth)
{
	const struct ct_type *e = type_of(v, t->elem);
	uint64_t p, n, end, cap = 0;
	bool has_cap = false;
	if (!seq_word(t, "ptr", b, avail, &p))
		return marker(v, "unavailable");
	if (seq_word(t, "len", b, avail, &n)) {
	} else if (seq_word(t, "end", b, avail, &end) && end >= p && e->size) {
		n = (end - p) / e->size;
	} else {
		return marker(v, "unavailable");
	}
	if (seq_word(t, "cap", b, avail, &cap))
		has_cap = true;
	else if (seq_word(t, "cap_end", b, avail, &end) && end >= p && e->size)
		cap = (end - p) / e->size, has_cap = true;
	if (t->is_text) {
		if (n && !p)
			return marker(v, "string not captured");
		return decode_string_at(v, p, n);
	}
	return decode_list(v, t->elem, p, n, has_cap, cap, depth);
}

/* A Rust enum's variant: its name and its value (newtype variants) or
 * fields; a variant without fields is its name. */
static uint32_t decode_variant(struct ct_values *v, const struct ct_type *t, const uint8_t *b, const uint8_t *avail,
			       uint32_t depth)
{
	const struct ct_field *sel = NULL, *dflt = NULL;
	const struct ct_type *dt = type_of(v, t->elem);
	if (t->elem == CT_TYPE_NONE) {
		sel = t->nfields == 1 ? &t->fields[0] : NULL;
	} else if (dt->size && dt->size <= 8 && (uint64_t)t->len + dt->size <= t->size &&
		   all_avail(avail, t->len, dt->size)) {
		uint64_t d = load_uint(b + t->len, dt->size);
		for (uint32_t i = 0; i < t->nfields && !sel; i++) {
			if (t->fields[i].flags & CT_FIELD_DEFAULT)
				dflt = &t->fields[i];
			else if ((uint64_t)t->fields[i].value == d)
				sel = &t->fields[i];
		}
		if (!sel)
			sel = dflt;
	} else {
		return marker(v, "unavailable");
	}
	const struct ct_type *vt = sel ? type_of(v, sel->type) : NULL;
	if (!vt || vt->kind != CT_K_STRUCT || vt->size > t->size)
		return marker(v, "unavailable: unknown variant");
	uint32_t id = new_node(v, vt->nfields ? CT_V_VARIANT : CT_V_NAME);
	node(v, id)->s = sel->name;
	if (!vt->nfields)
		return id;
	const struct ct_field *only = vt->nfields == 1 ? &vt->fields[0] : NULL;
	if (only && is_tuple(vt) && (uint64_t)only->offset + type_of(v, only->type)->size <= vt->size) {
		/* a newtype variant: Some(5) */
		node(v, id)->flags = CT_VF_NEWTYPE;
		uint32_t val = decode_value(v, only->type, b + only->offset, avail + only->offset, depth + 1);
		node(v, id)->first = val;
	} else {
		uint32_t val = decode_fields(v, vt, b, avail, depth);
		node(v, id)->first = val;
	}
	return id;
}

/* A character; a code point that is none: its number. */
static uint32_t decode_char(struct ct_values *v, uint64_t cp)
{
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return word_node(v, CT_V_UINT, cp);
	return word_node(v, CT_V_CHAR, cp);
}

/* A reference: what it points to, when it was captured, else the address. */
static uint32_t decode_ref(struct ct_values *v, const struct ct_type *t, const uint8_t *b, uint32_t depth)
{
	uint64_t p = load_uint(b, 8);
	const struct ct_type *e = type_of(v, t->elem);
	uint32_t got = 0;
	const uint8_t *m = p ? mem(v, p, &got) : NULL;
	if (m && e->size && e->size <= got)
		return decode_value(v, t->elem, m, v->ones, depth + 1);
	return ptr_node(v, p, false);
}

static uint32_t decode_float(struct ct_values *v, const struct ct_type *t, const uint8_t *b)
{
	if (t->size == 4) {
		float f;
		memcpy(&f, b, 4);
		return float_node(v, (double)f, 17);
	}
	if (ct_type_is_x87(t))
		return float_node(v, load_x87(b), x87_digits(load_x87(b)));
	if (t->size > 8)
		return marker(v, "unavailable: 128-bit float");
	double d;
	memcpy(&d, b, 8);
	return float_node(v, d, 17);
}

static uint32_t decode_complex(struct ct_values *v, const struct ct_type *t, const uint8_t *b)
{
	long double re, im;
	uint16_t flags = 0;
	uint8_t digits[2] = {17, 17};
	if (ct_type_is_x87(t)) { /* complex long double: two x87 values */
		re = load_x87(b), im = load_x87(b + t->size / 2); /* 20..32 bytes */
		digits[0] = (uint8_t)x87_digits(re), digits[1] = (uint8_t)x87_digits(im);
		flags = CT_VF_X87;
	} else if (t->size > 16) { /* complex _Float128 */
		return marker(v, "unavailable: 128-bit float");
	} else if (t->size == 8) {
		float fr, fi;
		memcpy(&fr, b, 4);
		memcpy(&fi, b + 4, 4);
		re = (double)fr, im = (double)fi;
	} else {
		double dr, di;
		memcpy(&dr, b, 8);
		memcpy(&di, b + 8, 8);
		re = dr, im = di;
	}
	uint32_t id = new_node(v, CT_V_COMPLEX);
	struct ct_vnode *n = node(v, id);
	n->f[0] = re, n->f[1] = im;
	n->digits[0] = digits[0], n->digits[1] = digits[1];
	n->flags = flags;
	return id;
}

/* A Go interface: nil, or its dynamic type and value. */
static uint32_t decode_iface(struct ct_values *v, const struct ct_type *t, const uint8_t *b, uint32_t depth)
{
	uint64_t w0 = load_uint(b, 8), data = load_uint(b + CT_GO_IFACE_DATA_OFF, 8), rtype = w0;
	uint32_t got;
	if (!w0)
		return ptr_node(v, 0, true);
	if (t->kind == CT_K_IFACE) {
		const uint8_t *m = mem(v, w0 + CT_GO_ITAB_TYPE_OFF, &got);
		rtype = m && got >= 8 ? load_uint(m, 8) : 0;
	}
	if (!rtype)
		return marker(v, "dynamic type not captured");
	return decode_dynamic(v, rtype, data, depth);
}

/* A Go map or channel: its address and, when captured, its count (and a
 * channel's capacity) from the header it points to. */
static uint32_t decode_map_chan(struct ct_values *v, const struct ct_type *t, const uint8_t *b)
{
	uint64_t p = load_uint(b, 8);
	uint32_t got;
	if (!p)
		return ptr_node(v, 0, true);
	const uint8_t *m = mem(v, p, &got); /* CT_GO_MAP_COUNT_OFF, CT_GO_CHAN_QCOUNT_OFF */
	uint32_t id = new_node(v, t->kind == CT_K_MAP ? CT_V_MAP : CT_V_CHAN);
	struct ct_vnode *n = node(v, id);
	n->u = p;
	if (m && got >= 8)
		n->len = load_uint(m, 8), n->flags |= CT_VF_LEN;
	if (t->kind == CT_K_CHAN && m && got >= CT_GO_CHAN_DATAQSIZ_OFF + 8)
		n->cap = load_uint(m + CT_GO_CHAN_DATAQSIZ_OFF, 8), n->flags |= CT_VF_CAP;
	return id;
}

/* Is E a character type an array of which holds text: C's char, signed
 * and unsigned char, int8_t/uint8_t, Go's int8, uint8 and byte? */
static bool is_char_type(const struct ct_type *e)
{
	static const char *const names[] = {"char", "signed char", "unsigned char", "int8_t", "uint8_t",
					    "char8_t", "int8", "uint8", "byte", NULL};
	if (e->size != 1 || (e->kind != CT_K_INT && e->kind != CT_K_UINT) || !e->name)
		return false;
	for (const char *const *n = names; *n; n++)
		if (!strcmp(e->name, *n))
			return true;
	return false;
}

/* An array of characters T (items E) in B that holds text: a string, as C
 * reads it (up to its first NUL, or all of it without one), or CT_VNONE
 * (numbers, then).  Text: every byte of it captured, none a control
 * character but tab and newlines, well-formed UTF-8; at least one, except
 * in a C char array (all NUL: ""). */
static uint32_t char_array_text(struct ct_values *v, const struct ct_type *t, const struct ct_type *e,
				const uint8_t *b, const uint8_t *avail)
{
	if (!is_char_type(e) || !t->len || t->len > t->size)
		return CT_VNONE;
	uint32_t end = 0;
	while (end < t->len && b[end])
		end++;
	if ((!end && strcmp(e->name, "char")) || !all_avail(avail, 0, end < t->len ? end + 1 : end))
		return CT_VNONE;
	for (uint32_t i = 0; i < end;) {
		uint32_t cp;
		size_t n = b[i] < 0x80 ? 1 : utf8_decode(b + i, b + end, &cp);
		if (!n || (b[i] < 0x20 && b[i] != '\t' && b[i] != '\n' && b[i] != '\r') || b[i] == 0x7f)
			return CT_VNONE;
		i += (uint32_t)n;
	}
	return string_node(v, b, end, false);
}

static uint32_t decode_kind(struct ct_values *v, const struct ct_type *t, const uint8_t *b, const uint8_t *avail,
			    uint32_t depth)
{
	uint32_t got, cap;
	const uint8_t *m;
	switch (t->kind) {
	case CT_K_BOOL:
		return word_node(v, CT_V_BOOL, b[0] != 0);
	case CT_K_INT:
	case CT_K_UINT:
		if (!t->size) /* Rust's () is an integer of no size */
			return new_node(v, CT_V_UNIT);
		if (t->size == 16)
			return int128_node(v, b, t->kind == CT_K_INT);
		if (t->kind == CT_K_INT)
			return int_node(v, load_int(b, t->size));
		return word_node(v, CT_V_UINT, load_uint(b, t->size));
	case CT_K_ENUM:
		return decode_enum(v, t, b);
	case CT_K_CHAR:
		return decode_char(v, load_uint(b, t->size));
	case CT_K_REF:
		return decode_ref(v, t, b, depth);
	case CT_K_SEQ:
		return decode_seq(v, t, b, avail, depth);
	case CT_K_VARIANT:
		return decode_variant(v, t, b, avail, depth);
	case CT_K_FLOAT:
		return decode_float(v, t, b);
	case CT_K_COMPLEX:
		return decode_complex(v, t, b);
	case CT_K_PTR:
	case CT_K_FUNC:
		return ptr_node(v, load_uint(b, 8), v->go);
	case CT_K_STRING:
		return decode_string_at(v, load_uint(b, 8), load_uint(b + 8, 8));
	case CT_K_CSTRING: {
		uint64_t p = load_uint(b, 8);
		if (!p)
			return ptr_node(v, 0, false);
		if ((m = mem_cap(v, p, &got, &cap)))
			return string_node(v, m, got, got >= cap); /* filled the limit: cut */
		return marker(v, "unreadable");
	}
	case CT_K_SLICE:
		return decode_list(v, t->elem, load_uint(b, 8), load_uint(b + 8, 8), true, load_uint(b + 16, 8), depth);
	case CT_K_ARRAY: {
		const struct ct_type *e = type_of(v, t->elem);
		uint32_t text = char_array_text(v, t, e, b, avail);
		if (text != CT_VNONE)
			return text;
		uint32_t id = new_node(v, CT_V_ARRAY), last = CT_VNONE;
		for (uint32_t i = 0; i < t->len && e->size && (uint64_t)(i + 1) * e->size <= t->size &&
				     room_for_kid(v, id, &last);
		     i++)
			add_kid(v, id, &last, decode_value(v, t->elem, b + i * e->size, avail + i * e->size, depth + 1));
		return id;
	}
	case CT_K_STRUCT:
		return decode_fields(v, t, b, avail, depth);
	case CT_K_IFACE:
	case CT_K_EFACE:
		return decode_iface(v, t, b, depth);
	case CT_K_MAP:
	case CT_K_CHAN:
		return decode_map_chan(v, t, b);
	case CT_K_VOID:
		return new_node(v, CT_V_VOID);
	default:
		/* Unknown or raw: the bytes as a hex word (none to show for an
		 * undescribed type without a size) */
		if (!t->size)
			return marker(v, "?");
		return word_node(v, CT_V_ADDR, load_uint(b, t->size <= 8 ? t->size : 8));
	}
}

/* Value of type ID in B (AVAIL: which of its bytes were captured), DEPTH
 * levels below the argument. */
static uint32_t decode_value(struct ct_values *v, uint32_t id, const uint8_t *b, const uint8_t *avail,
			     uint32_t depth)
{
	const struct ct_type *t = type_of(v, id);
	if (depth > 6)
		return marker(v, "...");
	uint32_t n;
	if (t->size && t->kind != CT_K_STRUCT && t->kind != CT_K_ARRAY && t->kind != CT_K_SEQ &&
	    t->kind != CT_K_VARIANT && !all_avail(avail, 0, t->size < 16 ? t->size : 16))
		n = marker(v, t->kind == CT_K_FLOAT || t->kind == CT_K_COMPLEX ? "unavailable: float register"
									       : "unavailable");
	else
		n = decode_kind(v, t, b, avail, depth);
	node(v, n)->flags |= CT_VF_CHECKED;
	return n;
}

/* Assembles value I's bytes from its pieces; AVAIL marks bytes we have. */
static uint32_t assemble(struct ct_values *v, const struct ct_val_desc *d, uint8_t *b, uint8_t *avail)
{
	uint32_t size = d->flags & CT_VAL_RAW ? 8 : type_of(v, d->type)->size;
	if (size > MAX_VALUE)
		size = MAX_VALUE; /* the caller does not decode it */
	if (size <= 16) {
		/* (most values: fixed-size stores, not rep stos, whose start-up
		 * was ~half of replay's time in here) */
		__builtin_memset(b, 0, 16);
		__builtin_memset(avail, 0, 16);
	} else {
		memset(b, 0, size);
		memset(avail, 0, size);
	}
	for (uint32_t i = 0; i < d->npieces; i++) {
		const struct ct_val_piece *p = &d->pieces[i];
		if ((uint64_t)p->value_off + p->size > size)
			continue;
		const uint8_t *src = ct_val_piece_bytes(p, v->payload, sizeof(v->payload), p->value_off, p->size);
		if (src) {
			memcpy(b + p->value_off, src, p->size);
			memset(avail + p->value_off, 1, p->size);
		} else if (p->kind == CT_PIECE_CONST && p->size <= 8) {
			for (uint32_t k = 0; k < p->size; k++)
				b[p->value_off + k] = (uint8_t)(p->literal >> (8 * k));
			memset(avail + p->value_off, 1, p->size);
		}
	}
	return size;
}

#define BEYOND_LIMITS "unavailable: beyond the capture limits"

static const char *why_missing(const struct ct_val_desc *d)
{
	if (d->flags & CT_VAL_INCOMPLETE)
		return "unavailable: DWARF omits parameters";
	if (d->flags & CT_VAL_OPTIMIZED)
		return "unavailable: optimized out";
	if (d->flags & CT_VAL_CUT)
		return BEYOND_LIMITS;
	return "unavailable: location unknown";
}

/* Whether any of its bytes come from the payload (not registers BPF cannot
 * read). */
static bool reads_payload(const struct ct_val_desc *d)
{
	for (uint32_t i = 0; i < d->npieces; i++)
		if (ct_piece_in_payload(d->pieces[i].kind))
			return true;
	return false;
}

static bool in_x87(const struct ct_val_desc *d)
{
	for (uint32_t i = 0; i < d->npieces; i++)
		if (d->pieces[i].kind == CT_PIECE_X87)
			return true;
	return false;
}

/* The tree of value D (v->nodes from 0): its root. */
static uint32_t decode_one(struct ct_values *v, const struct ct_val_desc *d)
{
	v->nnodes = 0;
	if (!(d->flags & CT_VAL_RAW) && type_of(v, d->type)->size > MAX_VALUE)
		return marker(v, BEYOND_LIMITS);
	if (in_x87(d))
		return marker(v, "unavailable: x87 register");
	if (v->missing && reads_payload(d) && !(d->flags & CT_VAL_INCOMPLETE))
		return marker(v, "unavailable: not captured"); /* this hit copied nothing */
	if (d->flags & (CT_VAL_NOLOC | CT_VAL_INCOMPLETE)) {
		/* A float piece is XREG: it has pieces but BPF read none. */
		if (!d->npieces || (d->flags & CT_VAL_INCOMPLETE))
			return marker(v, why_missing(d));
		assemble(v, d, v->b, v->avail);
		return decode_value(v, d->type, v->b, v->avail, 0);
	}
	assemble(v, d, v->b, v->avail);
	if (d->flags & CT_VAL_RAW)
		return word_node(v, CT_V_WORD, load_uint(v->b, 8));
	return decode_value(v, d->type, v->b, v->avail, 0);
}

const struct ct_vnode *ct_values_decode(struct ct_values *v, size_t i)
{
	uint32_t root = decode_one(v, &v->f->vals[i]);
	return &v->nodes[root];
}

const struct ct_vnode *ct_vnode_first(const struct ct_values *v, const struct ct_vnode *n)
{
	return n->first == CT_VNONE ? NULL : &v->nodes[n->first];
}

const struct ct_vnode *ct_vnode_next(const struct ct_values *v, const struct ct_vnode *n)
{
	return n->next == CT_VNONE ? NULL : &v->nodes[n->next];
}

/* ---- emitting: the tree as text or JSON ---- */

static inline void puts_(struct emitter *e, const char *s)
{
	buf_cstr(e->out, s);
}

static const struct ct_vnode *kid(const struct emitter *e, uint32_t id)
{
	return id == CT_VNONE ? NULL : &e->v->nodes[id];
}

/* Before a value of its own: whether the output limit leaves it out (then
 * "..." stands for it and the rest). */
static bool left_out(struct emitter *e, const struct ct_vnode *n)
{
	if (n->flags & CT_VF_LIMIT) {
		e->over = e->truncated = true;
		return true;
	}
	if (!(n->flags & CT_VF_CHECKED))
		return false;
	if (e->over)
		return true;
	if (e->out->n - e->value_start > MAX_VALUE_TEXT) {
		e->over = e->truncated = true;
		return true;
	}
	return false;
}

void ct_buf_json_string(struct ct_buf *b, const char *s, size_t n)
{
	buf_put(b, "\"", 1);
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end) {
		unsigned c = *p;
		/* Keep well-formed UTF-8 sequences as they are. */
		uint32_t cp;
		size_t len = utf8_decode(p, end, &cp);
		if (len > 1) {
			buf_put(b, p, len);
			p += len;
			continue;
		}
		char esc[8];
		switch (c) {
		case '"':
			buf_put(b, "\\\"", 2);
			break;
		case '\\':
			buf_put(b, "\\\\", 2);
			break;
		case '\n':
			buf_put(b, "\\n", 2);
			break;
		case '\t':
			buf_put(b, "\\t", 2);
			break;
		case '\r':
			buf_put(b, "\\r", 2);
			break;
		default:
			if (c < 0x20 || c >= 0x7f) {
				snprintf(esc, sizeof(esc), "\\u%04x", c);
				buf_put(b, esc, 6);
			} else {
				buf_put(b, p, 1);
			}
		}
		p++;
	}
	buf_put(b, "\"", 1);
}

/* Rust's i128/u128, C's __int128: all 39 digits. */
static void put_int128(struct ct_buf *out, unsigned __int128 x, bool is_signed)
{
	bool neg = is_signed && (x >> 127);
	if (neg)
		x = -x;
	char d[48];
	size_t n = sizeof(d);
	do {
		d[--n] = (char)('0' + (int)(x % 10));
		x /= 10;
	} while (x);
	if (neg)
		d[--n] = '-';
	buf_put(out, d + n, sizeof(d) - n);
}

/* Booleans and integers: written alike in text and JSON. */
static void put_scalar(struct ct_buf *out, const struct ct_vnode *n)
{
	if (n->kind == CT_V_BOOL)
		buf_cstr(out, n->u ? "true" : "false");
	else if (n->kind == CT_V_INT)
		buf_sdec(out, n->i);
	else if (n->kind == CT_V_UINT)
		buf_dec(out, n->u);
	else
		put_int128(out, n->w, n->flags & CT_VF_SIGNED);
}

/* What both formats print the same way, given their marker MARK: a value
 * left out, a marker, booleans and integers.  False: the format's own. */
static bool emit_alike(struct emitter *e, const struct ct_vnode *n, void (*mark)(struct emitter *, const char *))
{
	if (left_out(e, n)) {
		mark(e, "...");
		return true;
	}
	switch ((enum ct_vkind)n->kind) {
	case CT_V_MARKER:
		mark(e, n->s);
		return true;
	case CT_V_BOOL:
	case CT_V_INT:
	case CT_V_UINT:
	case CT_V_INT128:
		put_scalar(e->out, n);
		return true;
	default:
		return false;
	}
}

static const char *nonfinite(long double d)
{
	return isnan(d) ? "NaN" : d > 0 ? "+Inf" : "-Inf";
}

/* Go-syntax quoted string, as strconv.Quote but for printable runes: a
 * byte that is not part of well-formed UTF-8 is \xNN, so the output stays
 * UTF-8 (Go strings hold any bytes; a cut one ends mid-character). */
static void text_string(struct ct_buf *out, const uint8_t *s, size_t n)
{
	buf_cstr(out, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned c = s[i];
		uint32_t cp;
		size_t len = c < 0x80 ? 1 : utf8_decode(&s[i], s + n, &cp);
		if (len > 1) {
			buf_put(out, &s[i], len);
			i += len - 1;
		} else if (!len)
			buf_printf(out, "\\x%02x", c);
		else if (c == '"' || c == '\\')
			buf_printf(out, "\\%c", c);
		else if (c == '\n')
			buf_cstr(out, "\\n");
		else if (c == '\t')
			buf_cstr(out, "\\t");
		else if (c < 0x20 || c == 0x7f)
			buf_printf(out, "\\x%02x", c);
		else
			buf_put(out, &s[i], 1);
	}
	buf_cstr(out, "\"");
}

static void text_char(struct ct_buf *out, uint64_t cp)
{
	buf_cstr(out, "'");
	if (cp == '\'' || cp == '\\')
		buf_cstr(out, "\\");
	if (cp < 0x20 || cp == 0x7f)
		buf_printf(out, "\\x%02x", (unsigned)cp);
	else
		buf_utf8(out, (uint32_t)cp);
	buf_cstr(out, "'");
}

static void text_marker(struct emitter *e, const char *why)
{
	e->marker = why;
	buf_printf(e->out, "<%s>", why);
}

static void text_value(struct emitter *e, const struct ct_vnode *n);

/* A list's items, separated by SEP: every kid while the output limit
 * allows (text arrays: 16 at most). */
static void text_items(struct emitter *e, const struct ct_vnode *n, const char *sep, bool at_most_16)
{
	uint32_t i = 0;
	for (const struct ct_vnode *k = kid(e, n->first); k && !e->over; k = kid(e, k->next), i++) {
		if (i)
			puts_(e, sep);
		if (at_most_16 && i >= 16) {
			puts_(e, "...");
			break;
		}
		if (n->kind == CT_V_STRUCT) {
			buf_cstr(e->out, k->field);
			buf_put(e->out, ":", 1);
		}
		text_value(e, k);
	}
}

/* Text as replay's tree shows it, Go-like: {x:1 y:2}, [1 2](len=2 cap=2),
 * "s"..., Some(5), <unavailable: why>. */
static void text_value(struct emitter *e, const struct ct_vnode *n)
{
	if (emit_alike(e, n, text_marker))
		return;
	struct ct_buf *out = e->out;
	switch ((enum ct_vkind)n->kind) {
	default: /* emit_alike's */
		break;
	case CT_V_FLOAT:
		if (isnan(n->f[0]) || isinf(n->f[0]))
			puts_(e, nonfinite(n->f[0]));
		else
			buf_printf(out, "%.*Lg", n->digits[0], n->f[0]);
		break;
	case CT_V_COMPLEX:
		if (n->flags & CT_VF_X87)
			buf_printf(out, "(%.*Lg%+.*Lgi)", n->digits[0], n->f[0], n->digits[1], n->f[1]);
		else /* all digits, as a double alone */
			buf_printf(out, "(%.17g%+.17gi)", (double)n->f[0], (double)n->f[1]);
		break;
	case CT_V_STRING:
		e->truncated |= (n->flags & CT_VF_CUT) != 0;
		text_string(out, (const uint8_t *)n->s, n->n);
		if (n->flags & CT_VF_CUT)
			puts_(e, "...");
		break;
	case CT_V_CHAR:
		text_char(out, n->u);
		break;
	case CT_V_NAME:
		buf_cstr(out, n->s);
		break;
	case CT_V_NIL:
		puts_(e, n->flags & CT_VF_GO ? "nil" : "NULL");
		break;
	case CT_V_ADDR:
	case CT_V_WORD:
		buf_printf(out, "0x%" PRIx64, n->u);
		break;
	case CT_V_UNIT:
		puts_(e, "()");
		break;
	case CT_V_VOID:
		puts_(e, "void");
		break;
	case CT_V_STRUCT:
		puts_(e, "{");
		text_items(e, n, " ", false);
		puts_(e, "}");
		break;
	case CT_V_TUPLE:
		puts_(e, "(");
		text_items(e, n, ", ", false);
		puts_(e, ")");
		break;
	case CT_V_ARRAY:
		puts_(e, "[");
		text_items(e, n, " ", true);
		puts_(e, "]");
		break;
	case CT_V_LIST:
		puts_(e, "[");
		text_items(e, n, " ", false);
		if (n->n < n->len)
			puts_(e, n->n ? " ..." : "...");
		buf_printf(out, "](len=%" PRIu64, n->len);
		if (n->flags & CT_VF_CAP)
			buf_printf(out, " cap=%" PRIu64, n->cap);
		puts_(e, ")");
		break;
	case CT_V_MAP:
	case CT_V_CHAN:
		buf_printf(out, "%s(0x%" PRIx64, n->kind == CT_V_MAP ? "map" : "chan", n->u);
		if (n->flags & CT_VF_LEN)
			buf_printf(out, " len=%" PRIu64, n->len);
		if (n->flags & CT_VF_CAP)
			buf_printf(out, " cap=%" PRIu64, n->cap);
		puts_(e, ")");
		break;
	case CT_V_DYNAMIC:
		if (n->s)
			buf_printf(out, "%s(", n->s);
		else
			buf_printf(out, "type@0x%" PRIx64 "(", n->u);
		text_value(e, kid(e, n->first));
		puts_(e, ")");
		break;
	case CT_V_VARIANT:
		buf_cstr(out, n->s);
		if (n->flags & CT_VF_NEWTYPE)
			puts_(e, "(");
		text_value(e, kid(e, n->first));
		if (n->flags & CT_VF_NEWTYPE)
			puts_(e, ")");
		break;
	}
}

static void json_marker(struct emitter *e, const char *why)
{
	e->marker = why;
	puts_(e, "null");
}

/* JSON readers hold numbers as doubles: NaN and infinities are strings, and
 * so is an x87 value out of their range (1e+4000 would read as Infinity,
 * 1e-4000 as 0). */
static void json_float(struct emitter *e, long double d, int digits)
{
	if (isnan(d) || isinf(d)) {
		buf_printf(e->out, "\"%s\"", nonfinite(d));
		return;
	}
	bool quote = d != 0 && (isinf((double)d) || (double)d == 0);
	buf_printf(e->out, quote ? "\"%.*Lg\"" : "%.*Lg", digits, d);
}

static void json_value(struct emitter *e, const struct ct_vnode *n);

static void json_items(struct emitter *e, const struct ct_vnode *n)
{
	uint32_t i = 0;
	for (const struct ct_vnode *k = kid(e, n->first); k && !e->over; k = kid(e, k->next), i++) {
		if (i)
			puts_(e, ",");
		if (n->kind == CT_V_STRUCT) {
			ct_buf_json_string(e->out, k->field, strlen(k->field));
			puts_(e, ":");
		}
		json_value(e, k);
	}
}

/* JSON: objects for structs, arrays for tuples and arrays, {"len","cap",
 * "items"} for lists, Rust enums as serde writes them ("None", {"Some":5}),
 * null for what is missing. */
static void json_value(struct emitter *e, const struct ct_vnode *n)
{
	if (emit_alike(e, n, json_marker))
		return;
	struct ct_buf *out = e->out;
	switch ((enum ct_vkind)n->kind) {
	default: /* emit_alike's */
		break;
	case CT_V_WORD:
		buf_dec(out, n->u);
		break;
	case CT_V_FLOAT:
		json_float(e, n->f[0], n->digits[0]);
		break;
	case CT_V_COMPLEX:
		puts_(e, "[");
		json_float(e, n->f[0], n->digits[0]);
		puts_(e, ",");
		json_float(e, n->f[1], n->digits[1]);
		puts_(e, "]");
		break;
	case CT_V_STRING:
		e->truncated |= (n->flags & CT_VF_CUT) != 0;
		ct_buf_json_string(out, n->s, n->n);
		break;
	case CT_V_CHAR: {
		struct ct_buf u = {0};
		buf_utf8(&u, (uint32_t)n->u);
		ct_buf_json_string(out, (const char *)u.p, u.n);
		buf_free(&u);
		break;
	}
	case CT_V_NAME:
		ct_buf_json_string(out, n->s, strlen(n->s));
		break;
	case CT_V_NIL:
	case CT_V_UNIT: /* Ok(()) is {"Ok":null}, as serde has it */
	case CT_V_VOID:
		puts_(e, "null");
		break;
	case CT_V_ADDR:
		buf_printf(out, "\"0x%" PRIx64 "\"", n->u);
		break;
	case CT_V_STRUCT:
		puts_(e, "{");
		json_items(e, n);
		puts_(e, "}");
		break;
	case CT_V_TUPLE:
	case CT_V_ARRAY:
		puts_(e, "[");
		json_items(e, n);
		puts_(e, "]");
		break;
	case CT_V_LIST:
		buf_printf(out, "{\"len\":%" PRIu64, n->len);
		if (n->flags & CT_VF_CAP)
			buf_printf(out, ",\"cap\":%" PRIu64, n->cap);
		puts_(e, ",\"items\":[");
		json_items(e, n);
		puts_(e, "]}");
		break;
	case CT_V_MAP:
	case CT_V_CHAN:
		buf_printf(out, "{\"ptr\":\"0x%" PRIx64 "\"", n->u);
		if (n->flags & CT_VF_LEN)
			buf_printf(out, ",\"len\":%" PRIu64, n->len);
		if (n->flags & CT_VF_CAP)
			buf_printf(out, ",\"cap\":%" PRIu64, n->cap);
		puts_(e, "}");
		break;
	case CT_V_DYNAMIC: {
		char unknown[40];
		snprintf(unknown, sizeof(unknown), "type@0x%" PRIx64, n->u);
		const char *tname = n->s ? n->s : unknown;
		puts_(e, "{\"type\":");
		ct_buf_json_string(out, tname, strlen(tname));
		puts_(e, ",\"value\":");
		json_value(e, kid(e, n->first));
		puts_(e, "}");
		break;
	}
	case CT_V_VARIANT:
		puts_(e, "{");
		ct_buf_json_string(out, n->s, strlen(n->s));
		puts_(e, ":");
		json_value(e, kid(e, n->first));
		puts_(e, "}");
		break;
	}
}

/* Value I of the loaded site decoded, or of the SPILL hit where it reads
 * it (an argument passed in an SSE register, of the same type): the values
 * whose nodes hold it, and its root in *ROOT. */
static struct ct_values *decode_at(struct ct_values *v, uint32_t i, uint32_t *root)
{
	const struct ct_val_desc *d = &v->f->vals[i];
	if (v->use_spill) {
		struct ct_values *s = v->spill;
		const struct ct_val_desc *sd = &s->f->vals[i];
		if (sd->npieces && !(sd->flags & CT_VAL_NOLOC) && sd->type == d->type) {
			if (v->spill_missing) {
				v->nnodes = 0;
				*root = marker(v, "unavailable: float register, not stored yet");
				return v;
			}
			*root = decode_one(s, sd);
			return s;
		}
	}
	*root = decode_one(v, d);
	return v;
}

/* Value I when it is a plain integer or boolean whole in one general
 * register, as both formats print it, straight from the payload: most
 * values of hot calls are, and building and walking their tree was ~15% of
 * a replay's time.  False (nothing written): the tree is needed. */
static bool plain_scalar(const struct ct_values *v, uint32_t i, struct ct_buf *out)
{
	const struct ct_val_desc *d = &v->f->vals[i];
	if (v->use_spill || v->missing || (d->flags & ~CT_VAL_RESULT) || d->npieces != 1)
		return false;
	const struct ct_val_piece *p = &d->pieces[0];
	const struct ct_type *t = type_of(v, d->type);
	if (p->kind != CT_PIECE_REG || p->value_off || p->size != t->size || !t->size || t->size > 8 ||
	    (t->kind != CT_K_INT && t->kind != CT_K_UINT && t->kind != CT_K_BOOL))
		return false;
	const uint8_t *b = ct_val_piece_bytes(p, v->payload, sizeof(v->payload), 0, p->size);
	if (!b)
		return false;
	if (t->kind == CT_K_BOOL)
		buf_cstr(out, b[0] ? "true" : "false");
	else if (t->kind == CT_K_INT)
		buf_sdec(out, load_int(b, t->size));
	else
		buf_dec(out, load_uint(b, t->size));
	return true;
}

static void text_one(struct ct_values *v, uint32_t i, struct ct_buf *out)
{
	if (plain_scalar(v, i, out))
		return;
	uint32_t root;
	struct ct_values *from = decode_at(v, i, &root); /* before reading nodes, which it may move */
	struct emitter e = {.v = from, .out = out, .value_start = out->n};
	text_value(&e, &from->nodes[root]);
}

void ct_values_text(struct ct_values *v, struct ct_buf *out)
{
	if (!v->f)
		return;
	bool results = v->f->nvals && (v->f->vals[0].flags & CT_VAL_RESULT);
	bool paren = results && v->f->nvals > 1;
	if (paren)
		buf_cstr(out, "(");
	for (uint32_t i = 0; i < v->f->nvals; i++) {
		const struct ct_val_desc *d = &v->f->vals[i];
		if (i)
			buf_cstr(out, ", ");
		/* results: names only for a list of named ones, "(sum=8, ok=true)" */
		if (!results || (paren && d->name[0] && d->name[0] != '~')) {
			buf_cstr(out, d->name[0] ? d->name : "?");
			buf_put(out, "=", 1);
		}
		text_one(v, i, out);
	}
	if (paren)
		buf_cstr(out, ")");
}

static const struct ct_buf *json_head(struct ct_values *v, uint32_t i)
{
	const struct ct_val_desc *d = &v->f->vals[i];
	void **slot = map_slot(&v->json_heads, (uint64_t)v->site << 32 | i, true);
	struct json_head *h = *slot;
	if (h && h->d == d)
		return &h->text;
	if (!h)
		h = *slot = xcalloc(1, sizeof(*h));
	h->d = d;
	h->text.n = 0;
	const char *tname = d->flags & CT_VAL_RAW ? "word" : type_of(v, d->type)->name;
	buf_cstr(&h->text, "{\"name\":");
	ct_buf_json_string(&h->text, d->name, strlen(d->name));
	buf_cstr(&h->text, ",\"type\":");
	ct_buf_json_string(&h->text, tname, strlen(tname));
	buf_cstr(&h->text, ",\"value\":");
	return &h->text;
}

void ct_values_json(struct ct_values *v, struct ct_buf *out)
{
	buf_cstr(out, "[");
	for (uint32_t i = 0; v->f && i < v->f->nvals; i++) {
		if (i)
			buf_cstr(out, ",");
		const struct ct_buf *head = json_head(v, i);
		buf_put(out, head->p, head->n);
		if (plain_scalar(v, i, out)) {
			buf_cstr(out, "}");
			continue;
		}
		uint32_t root;
		struct ct_values *from = decode_at(v, i, &root);
		struct emitter e = {.v = from, .out = out, .value_start = out->n};
		json_value(&e, &from->nodes[root]);
		/* Say why a value is null when the whole value is a marker. */
		if (e.marker && out->n - e.value_start == 4 && !memcmp(out->p + e.value_start, "null", 4)) {
			buf_cstr(out, ",\"unavailable\":");
			const char *why = strncmp(e.marker, "unavailable: ", 13) ? e.marker : e.marker + 13;
			ct_buf_json_string(out, why, strlen(why));
		}
		if (e.truncated)
			buf_cstr(out, ",\"truncated\":true");
		buf_cstr(out, "}");
	}
	buf_cstr(out, "]");
}

/* One value at a time (OTLP attributes: one per argument and result). */
const char *ct_values_name(const struct ct_values *v, size_t i, bool *result)
{
	const struct ct_val_desc *d = &v->f->vals[i];
	*result = (d->flags & CT_VAL_RESULT) != 0;
	return d->name;
}

void ct_values_text_one(struct ct_values *v, size_t i, struct ct_buf *out)
{
	text_one(v, (uint32_t)i, out);
}
