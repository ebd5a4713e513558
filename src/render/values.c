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

struct ct_values {
	const struct ct_trace *t;
	const struct ct_site_fetch *f;
	bool go;             /* the site's function is Go code */
	uint8_t payload[CT_MAX_PAYLOAD];
	struct ct_snapshot snaps[CT_MAX_OPS];
	size_t nsnaps;
	bool json;
	struct ct_buf *out;
	const char *marker;  /* the last marker emitted (why a value is missing) */
	bool truncated;      /* a string was cut to the capture limit */
	bool missing;        /* the site captures, but this event holds no payload */
	size_t value_start;  /* out->n where the current value began */
	bool over;           /* it reached MAX_VALUE_TEXT: the rest is left out */
	uint8_t b[MAX_VALUE], avail[MAX_VALUE]; /* the value being assembled */
	uint8_t ones[MAX_VALUE]; /* "available" for bytes read from snapshots */
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
	free(v);
}

bool ct_values_load(struct ct_values *v, uint32_t site, const uint8_t *payload, uint32_t len)
{
	v->f = NULL;
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
	v->nsnaps = v->missing ? 0 : ct_fetch_snapshots(&f->prog, v->payload, v->snaps, CT_MAX_OPS);
	v->f = f;
	v->go = v->t->sites && ct_trace_func_is_go(v->t, v->t->sites[site].func);
	return true;
}

size_t ct_values_count(const struct ct_values *v)
{
	return v->f ? v->f->nvals : 0;
}


static inline void puts_(struct ct_values *v, const char *s)
{
	buf_cstr(v->out, s);
}

void ct_buf_json_string(struct ct_buf *b, const char *s, size_t n)
{
	buf_put(b, "\"", 1);
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end) {
		unsigned c = *p;
		/* Keep well-formed UTF-8 sequences as they are. */
		size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		bool ok = len > 1 && p + len <= end;
		for (size_t k = 1; ok && k < len; k++)
			ok = (p[k] & 0xc0) == 0x80;
		if (ok) { /* RFC 3629: no overlongs, surrogates or code points past U+10FFFF */
			uint32_t cp = c & (0x7f >> len);
			for (size_t k = 1; k < len; k++)
				cp = cp << 6 | (p[k] & 0x3f);
			static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
			ok = cp >= min_cp[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
		}
		if (ok) {
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

/* Go-syntax quoted string for text output. */
static void text_string(struct ct_values *v, const uint8_t *s, size_t n)
{
	puts_(v, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned c = s[i];
		if (c == '"' || c == '\\')
			buf_printf(v->out, "\\%c", c);
		else if (c == '\n')
			puts_(v, "\\n");
		else if (c == '\t')
			puts_(v, "\\t");
		else if (c < 0x20 || c == 0x7f)
			buf_printf(v->out, "\\x%02x", c);
		else
			buf_put(v->out, &s[i], 1);
	}
	puts_(v, "\"");
}

static void emit_string(struct ct_values *v, const uint8_t *s, size_t n, bool truncated)
{
	v->truncated |= truncated;
	if (v->json) {
		ct_buf_json_string(v->out, (const char *)s, n);
		return;
	}
	text_string(v, s, n);
	if (truncated)
		puts_(v, "...");
}

static void emit_marker(struct ct_values *v, const char *what)
{
	v->marker = what;
	if (v->json)
		puts_(v, "null");
	else
		buf_printf(v->out, "<%s>", what);
}

/* Memory captured at exactly ADDR: its bytes and how many. */
static const uint8_t *mem_cap(struct ct_values *v, uint64_t addr, uint32_t *got, uint32_t *cap)
{
	for (size_t i = 0; i < v->nsnaps; i++)
		if (v->snaps[i].addr == addr && v->snaps[i].bytes) {
			*got = v->snaps[i].len;
			*cap = v->snaps[i].cap;
			return v->snaps[i].bytes;
		}
	*got = *cap = 0;
	return NULL;
}

static const uint8_t *mem(struct ct_values *v, uint64_t addr, uint32_t *got)
{
	uint32_t cap;
	return mem_cap(v, addr, got, &cap);
}

static uint64_t load_uint(const uint8_t *p, uint32_t size)
{
	uint64_t x = 0;
	memcpy(&x, p, size > 8 ? 8 : size);
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

/* DIGITS significant digits: enough to read the same binary value back
 * (17 for a double, 21 for x87's 64-bit mantissa). */
static void emit_float_digits(struct ct_values *v, long double d, int digits)
{
	if (isnan(d) || isinf(d)) {
		if (v->json)
			buf_printf(v->out, "\"%s\"", isnan(d) ? "NaN" : d > 0 ? "+Inf" : "-Inf");
		else
			puts_(v, isnan(d) ? "NaN" : d > 0 ? "+Inf" : "-Inf");
		return;
	}
	/* JSON readers hold numbers as doubles: an x87 value out of their
	 * range (1e+4000 would read as Infinity, 1e-4000 as 0) is a string */
	bool quote = v->json && d != 0 && (isinf((double)d) || (double)d == 0);
	buf_printf(v->out, quote ? "\"%.*Lg\"" : "%.*Lg", digits, d);
}

static void emit_float(struct ct_values *v, double d)
{
	emit_float_digits(v, d, 17);
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

static void emit_value(struct ct_values *v, uint32_t id, const uint8_t *b, const uint8_t *avail, uint32_t depth);

static void emit_ptr(struct ct_values *v, uint64_t p, bool go)
{
	if (!p)
		puts_(v, v->json ? "null" : go ? "nil" : "NULL");
	else if (v->json)
		buf_printf(v->out, "\"0x%" PRIx64 "\"", p);
	else
		buf_printf(v->out, "0x%" PRIx64, p);
}

/* An interface's dynamic value, given its runtime type and data word. */
static void emit_dynamic(struct ct_values *v, uint64_t rtype, uint64_t data, uint32_t depth)
{
	uintptr_t tid = (uintptr_t)map_get((struct ct_map *)&v->t->rtypes, rtype);
	const struct ct_type *dt = tid ? type_of(v, (uint32_t)(tid - 1)) : NULL;
	char unknown[40];
	snprintf(unknown, sizeof(unknown), "type@0x%" PRIx64, rtype);
	const char *tname = dt ? dt->name : unknown;
	if (v->json) {
		puts_(v, "{\"type\":");
		ct_buf_json_string(v->out, tname, strlen(tname));
		puts_(v, ",\"value\":");
	} else {
		buf_printf(v->out, "%s(", tname);
	}
	uint32_t got = 0;
	const uint8_t *box = mem(v, data, &got);
	if (!dt) {
		emit_ptr(v, data, true);
	} else if (dt->kind == CT_K_PTR || dt->kind == CT_K_MAP || dt->kind == CT_K_CHAN || dt->kind == CT_K_FUNC) {
		/* Pointer-shaped: the data word is the value.  Errors made by
		 * errors.New / fmt.Errorf point to a struct that starts with the
		 * message string: show the message. */
		const struct ct_type *pt = dt->kind == CT_K_PTR ? type_of(v, dt->elem) : NULL;
		uint32_t sgot;
		const uint8_t *s;
		if (pt && pt->kind == CT_K_STRUCT && pt->nfields && pt->fields[0].offset == 0 &&
		    type_of(v, pt->fields[0].type)->kind == CT_K_STRING && box && got >= 16) {
			uint64_t sp = load_uint(box, 8), sl = load_uint(box + 8, 8);
			if (!sl)
				emit_string(v, (const uint8_t *)"", 0, false);
			else if ((s = mem(v, sp, &sgot)))
				emit_string(v, s, sgot < sl ? sgot : sl, sgot < sl);
			else
				emit_ptr(v, data, true);
		} else {
			emit_ptr(v, data, true);
		}
	} else if (box && dt->size <= got && (dt->kind == CT_K_STRING || dt->kind == CT_K_INT || dt->kind == CT_K_UINT ||
					       dt->kind == CT_K_BOOL || dt->kind == CT_K_FLOAT || dt->kind == CT_K_COMPLEX)) {
		emit_value(v, (uint32_t)(tid - 1), box, v->ones, depth + 1);
	} else {
		emit_marker(v, "not captured");
	}
	puts_(v, v->json ? "}" : ")");
}

/* Rust's i128/u128, C's __int128: all 39 digits. */
static void emit_int128(struct ct_values *v, const uint8_t *b, bool is_signed)
{
	unsigned __int128 x;
	memcpy(&x, b, 16);
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
	buf_put(v->out, d + n, sizeof(d) - n);
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

/* A struct's fields: {x:1 y:2} / {"x":1,"y":2}; a Rust tuple's (1, 2) / [1,2]. */
/* A C bit-field of struct T: its bits, widened (sign-extended for signed
 * types) to its declared type and shown as that type. */
static void emit_bit_field(struct ct_values *v, const struct ct_type *t, const struct ct_field *fl,
			   const uint8_t *b, const uint8_t *avail, uint32_t depth)
{
	const struct ct_type *ft = type_of(v, fl->type);
	uint32_t nbytes = (fl->bit_off + fl->bit_size + 7u) / 8u;
	if ((uint64_t)fl->offset + nbytes > t->size || ft->size > 16 || !ft->size) {
		emit_marker(v, "?");
		return;
	}
	if (!all_avail(avail, fl->offset, nbytes)) {
		emit_marker(v, "unavailable");
		return;
	}
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
	emit_value(v, fl->type, word, v->ones, depth + 1);
}

static void emit_fields(struct ct_values *v, const struct ct_type *t, const uint8_t *b, const uint8_t *avail,
			uint32_t depth)
{
	bool tuple = is_tuple(t);
	puts_(v, tuple ? (v->json ? "[" : "(") : "{");
	for (uint32_t i = 0; i < t->nfields && !v->over; i++) {
		const struct ct_field *fl = &t->fields[i];
		if (i)
			puts_(v, v->json ? "," : tuple ? ", " : " ");
		if (tuple)
			; /* positional */
		else if (v->json) {
			ct_buf_json_string(v->out, fl->name, strlen(fl->name));
			puts_(v, ":");
		} else {
			buf_cstr(v->out, fl->name);
			buf_put(v->out, ":", 1);
		}
		if (fl->flags & CT_FIELD_BITS)
			emit_bit_field(v, t, fl, b, avail, depth);
		else if ((uint64_t)fl->offset + type_of(v, fl->type)->size <= t->size)
			emit_value(v, fl->type, b + fl->offset, avail + fl->offset, depth + 1);
		else
			emit_marker(v, "?");
	}
	puts_(v, tuple ? (v->json ? "]" : ")") : "}");
}

/* A C/C++/Rust enum value by its enumerator's name; false if none has it. */
static bool emit_enumerator(struct ct_values *v, const struct ct_type *t, const uint8_t *b)
{
	uint64_t x = load_uint(b, t->size);
	for (uint32_t i = 0; i < t->nfields; i++)
		if ((uint64_t)t->fields[i].value == x) {
			if (v->json)
				ct_buf_json_string(v->out, t->fields[i].name, strlen(t->fields[i].name));
			else
				buf_cstr(v->out, t->fields[i].name);
			return true;
		}
	return false;
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
 * string, items as a slice ({"len","cap","items"}; no cap for slices). */
static void emit_seq(struct ct_values *v, const struct ct_type *t, const uint8_t *b, const uint8_t *avail,
		     uint32_t depth)
{
	const struct ct_type *e = type_of(v, t->elem);
	uint64_t p, n, end, cap = 0;
	bool has_cap = false;
	if (!seq_word(t, "ptr", b, avail, &p)) {
		emit_marker(v, "unavailable");
		return;
	}
	if (seq_word(t, "len", b, avail, &n)) {
	} else if (seq_word(t, "end", b, avail, &end) && end >= p && e->size) {
		n = (end - p) / e->size;
	} else {
		emit_marker(v, "unavailable");
		return;
	}
	if (seq_word(t, "cap", b, avail, &cap))
		has_cap = true;
	else if (seq_word(t, "cap_end", b, avail, &end) && end >= p && e->size)
		cap = (end - p) / e->size, has_cap = true;
	uint32_t got = 0;
	const uint8_t *m = p && n ? mem(v, p, &got) : NULL;
	if (t->is_text) {
		if (!n)
			emit_string(v, (const uint8_t *)"", 0, false);
		else if (m)
			emit_string(v, m, got < n ? got : n, got < n);
		else
			emit_marker(v, "string not captured");
		return;
	}
	uint64_t shown = m && e->size ? got / e->size : 0;
	if (shown > n)
		shown = n;
	if (v->json) {
		buf_printf(v->out, "{\"len\":%" PRIu64, n);
		if (has_cap)
			buf_printf(v->out, ",\"cap\":%" PRIu64, cap);
		puts_(v, ",\"items\":[");
	} else {
		puts_(v, "[");
	}
	for (uint64_t i = 0; i < shown && !v->over; i++) {
		if (i)
			puts_(v, v->json ? "," : " ");
		emit_value(v, t->elem, m + i * e->size, v->ones, depth + 1); /* e->size <= got */
	}
	if (v->json) {
		puts_(v, "]}");
		return;
	}
	if (shown < n)
		puts_(v, shown ? " ..." : "...");
	buf_printf(v->out, "](len=%" PRIu64, n);
	if (has_cap)
		buf_printf(v->out, " cap=%" PRIu64, cap);
	puts_(v, ")");
}

/* A Rust enum as its Debug shows it: None, Some(5), Rect{w:2 h:3}; in JSON
 * as serde writes it: "None", {"Some":5}, {"Rect":{"w":2,"h":3}}. */
static void emit_variant(struct ct_values *v, const struct ct_type *t, const uint8_t *b, const uint8_t *avail,
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
		emit_marker(v, "unavailable");
		return;
	}
	const struct ct_type *vt = sel ? type_of(v, sel->type) : NULL;
	if (!vt || vt->kind != CT_K_STRUCT || vt->size > t->size) {
		emit_marker(v, "unavailable: unknown variant");
		return;
	}
	if (!vt->nfields) {
		if (v->json)
			ct_buf_json_string(v->out, sel->name, strlen(sel->name));
		else
			buf_cstr(v->out, sel->name);
		return;
	}
	if (v->json) {
		puts_(v, "{");
		ct_buf_json_string(v->out, sel->name, strlen(sel->name));
		puts_(v, ":");
	} else {
		buf_cstr(v->out, sel->name);
	}
	const struct ct_field *only = vt->nfields == 1 ? &vt->fields[0] : NULL;
	if (only && is_tuple(vt) && (uint64_t)only->offset + type_of(v, only->type)->size <= vt->size) {
		/* a newtype variant: Some(5), {"Some":5} */
		if (!v->json)
			puts_(v, "(");
		emit_value(v, only->type, b + only->offset, avail + only->offset, depth + 1);
		if (!v->json)
			puts_(v, ")");
	} else {
		emit_fields(v, vt, b, avail, depth);
	}
	if (v->json)
		puts_(v, "}");
}

/* A character: 'z' / "z" (a code point that is none: its number). */
static void emit_char(struct ct_values *v, uint64_t cp)
{
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
		buf_dec(v->out, cp);
		return;
	}
	if (v->json) {
		struct ct_buf u = {0};
		buf_utf8(&u, (uint32_t)cp);
		ct_buf_json_string(v->out, (const char *)u.p, u.n);
		buf_free(&u);
		return;
	}
	puts_(v, "'");
	if (cp == '\'' || cp == '\\')
		puts_(v, "\\");
	if (cp < 0x20 || cp == 0x7f)
		buf_printf(v->out, "\\x%02x", (unsigned)cp);
	else
		buf_utf8(v->out, (uint32_t)cp);
	puts_(v, "'");
}

/* The kinds C++ and Rust add: characters, references (shown as what they
 * point to, when it was captured), counted sequences, Rust enums. */
static void emit_rust_cxx(struct ct_values *v, const struct ct_type *t, const uint8_t *b, const uint8_t *avail,
			  uint32_t depth)
{
	switch (t->kind) {
	case CT_K_CHAR:
		emit_char(v, load_uint(b, t->size));
		return;
	case CT_K_SEQ:
		emit_seq(v, t, b, avail, depth);
		return;
	case CT_K_VARIANT:
		emit_variant(v, t, b, avail, depth);
		return;
	case CT_K_REF: {
		uint64_t p = load_uint(b, 8);
		const struct ct_type *e = type_of(v, t->elem);
		uint32_t got = 0;
		const uint8_t *m = p ? mem(v, p, &got) : NULL;
		if (m && e->size && e->size <= got) {
			emit_value(v, t->elem, m, v->ones, depth + 1);
		} else {
			emit_ptr(v, p, false);
		}
		return;
	}
	default:
		return;
	}
}

static void emit_value(struct ct_values *v, uint32_t id, const uint8_t *b, const uint8_t *avail, uint32_t depth)
{
	const struct ct_type *t = type_of(v, id);
	if (depth > 6 || v->over) {
		emit_marker(v, "...");
		return;
	}
	if (v->out->n - v->value_start > MAX_VALUE_TEXT) {
		v->over = v->truncated = true;
		emit_marker(v, "...");
		return;
	}
	if (t->size && t->kind != CT_K_STRUCT && t->kind != CT_K_ARRAY && t->kind != CT_K_SEQ &&
	    t->kind != CT_K_VARIANT && !all_avail(avail, 0, t->size < 16 ? t->size : 16)) {
		emit_marker(v, t->kind == CT_K_FLOAT || t->kind == CT_K_COMPLEX ? "unavailable: float register" : "unavailable");
		return;
	}
	uint32_t got;
	const uint8_t *m;
	switch (t->kind) {
	case CT_K_BOOL:
		puts_(v, b[0] ? "true" : "false");
		break;
	case CT_K_INT:
	case CT_K_UINT:
		if (!t->size) /* Rust's () is an integer of no size: Ok(()), {"Ok":null} as serde has it */
			puts_(v, v->json ? "null" : "()");
		else if (t->size == 16)
			emit_int128(v, b, t->kind == CT_K_INT);
		else if (t->kind == CT_K_INT)
			buf_sdec(v->out, load_int(b, t->size));
		else
			buf_dec(v->out, load_uint(b, t->size));
		break;
	case CT_K_ENUM:
		if (emit_enumerator(v, t, b))
			;
		else if (t->is_signed)
			buf_sdec(v->out, load_int(b, t->size));
		else
			buf_dec(v->out, load_uint(b, t->size));
		break;
	case CT_K_CHAR:
	case CT_K_REF:
	case CT_K_SEQ:
	case CT_K_VARIANT:
		emit_rust_cxx(v, t, b, avail, depth);
		break;
	case CT_K_FLOAT:
		if (t->size == 4) {
			float f;
			memcpy(&f, b, 4);
			emit_float(v, f);
		} else if (ct_type_is_x87(t)) {
			emit_float_digits(v, load_x87(b), x87_digits(load_x87(b)));
		} else if (t->size > 8) {
			emit_marker(v, "unavailable: 128-bit float");
		} else {
			double d;
			memcpy(&d, b, 8);
			emit_float(v, d);
		}
		break;
	case CT_K_COMPLEX: {
		double re, im;
		if (ct_type_is_x87(t)) { /* complex long double: two x87 values */
			long double xr = load_x87(b), xi = load_x87(b + t->size / 2); /* 20..32 bytes */
			if (v->json) {
				puts_(v, "[");
				emit_float_digits(v, xr, x87_digits(xr));
				puts_(v, ",");
				emit_float_digits(v, xi, x87_digits(xi));
				puts_(v, "]");
			} else {
				buf_printf(v->out, "(%.*Lg%+.*Lgi)", x87_digits(xr), xr, x87_digits(xi), xi);
			}
			break;
		}
		if (t->size > 16) { /* complex _Float128 */
			emit_marker(v, "unavailable: 128-bit float");
			break;
		}
		if (t->size == 8) {
			float fr, fi;
			memcpy(&fr, b, 4);
			memcpy(&fi, b + 4, 4);
			re = fr, im = fi;
		} else {
			memcpy(&re, b, 8);
			memcpy(&im, b + 8, 8);
		}
		if (v->json) {
			puts_(v, "[");
			emit_float(v, re);
			puts_(v, ",");
			emit_float(v, im);
			puts_(v, "]");
		} else {
			buf_printf(v->out, "(%.17g%+.17gi)", re, im); /* all digits, as a double alone */
		}
		break;
	}
	case CT_K_PTR:
	case CT_K_FUNC:
		emit_ptr(v, load_uint(b, 8), v->go);
		break;
	case CT_K_STRING: {
		uint64_t p = load_uint(b, 8), n = load_uint(b + 8, 8);
		if (!n) {
			emit_string(v, (const uint8_t *)"", 0, false);
		} else if ((m = mem(v, p, &got))) {
			emit_string(v, m, got < n ? got : n, got < n);
		} else {
			emit_marker(v, "string not captured");
		}
		break;
	}
	case CT_K_CSTRING: {
		uint64_t p = load_uint(b, 8);
		uint32_t cap;
		if (!p)
			puts_(v, v->json ? "null" : "NULL");
		else if ((m = mem_cap(v, p, &got, &cap)))
			emit_string(v, m, got, got >= cap); /* filled the limit: cut */
		else
			emit_marker(v, "unreadable");
		break;
	}
	case CT_K_SLICE: {
		uint64_t p = load_uint(b, 8), n = load_uint(b + 8, 8), cap = load_uint(b + 16, 8);
		const struct ct_type *e = type_of(v, t->elem);
		m = p && n ? mem(v, p, &got) : NULL;
		uint64_t shown = m && e->size ? got / e->size : 0;
		if (shown > n)
			shown = n;
		if (v->json)
			buf_printf(v->out, "{\"len\":%" PRIu64 ",\"cap\":%" PRIu64 ",\"items\":[", n, cap);
		else
			puts_(v, "[");
		for (uint64_t i = 0; i < shown && !v->over; i++) {
			if (i)
				puts_(v, v->json ? "," : " ");
			emit_value(v, t->elem, m + i * e->size, v->ones, depth + 1); /* e->size <= got */
		}
		if (v->json) {
			puts_(v, "]}");
		} else {
			if (shown < n)
				puts_(v, shown ? " ..." : "...");
			buf_printf(v->out, "](len=%" PRIu64 " cap=%" PRIu64 ")", n, cap);
		}
		break;
	}
	case CT_K_ARRAY: {
		const struct ct_type *e = type_of(v, t->elem);
		puts_(v, "[");
		for (uint32_t i = 0; i < t->len && e->size && (uint64_t)(i + 1) * e->size <= t->size && !v->over; i++) {
			if (i)
				puts_(v, v->json ? "," : " ");
			if (i >= 16 && !v->json) {
				puts_(v, "...");
				break;
			}
			emit_value(v, t->elem, b + i * e->size, avail + i * e->size, depth + 1);
		}
		puts_(v, "]");
		break;
	}
	case CT_K_STRUCT:
		emit_fields(v, t, b, avail, depth);
		break;
	case CT_K_IFACE:
	case CT_K_EFACE: {
		uint64_t w0 = load_uint(b, 8), data = load_uint(b + CT_GO_IFACE_DATA_OFF, 8), rtype = w0;
		if (!w0) {
			puts_(v, v->json ? "null" : "nil");
			break;
		}
		if (t->kind == CT_K_IFACE) {
			m = mem(v, w0 + CT_GO_ITAB_TYPE_OFF, &got);
			rtype = m && got >= 8 ? load_uint(m, 8) : 0;
		}
		if (!rtype)
			emit_marker(v, "dynamic type not captured");
		else
			emit_dynamic(v, rtype, data, depth);
		break;
	}
	case CT_K_MAP:
	case CT_K_CHAN: {
		uint64_t p = load_uint(b, 8);
		if (!p) {
			puts_(v, v->json ? "null" : "nil");
			break;
		}
		m = mem(v, p, &got); /* CT_GO_MAP_COUNT_OFF, CT_GO_CHAN_QCOUNT_OFF */
		if (v->json)
			buf_printf(v->out, "{\"ptr\":\"0x%" PRIx64 "\"", p);
		else
			buf_printf(v->out, "%s(0x%" PRIx64, t->kind == CT_K_MAP ? "map" : "chan", p);
		if (m && got >= 8)
			buf_printf(v->out, v->json ? ",\"len\":%" PRIu64 : " len=%" PRIu64, load_uint(m, 8));
		if (t->kind == CT_K_CHAN && m && got >= CT_GO_CHAN_DATAQSIZ_OFF + 8)
			buf_printf(v->out, v->json ? ",\"cap\":%" PRIu64 : " cap=%" PRIu64,
				   load_uint(m + CT_GO_CHAN_DATAQSIZ_OFF, 8));
		puts_(v, v->json ? "}" : ")");
		break;
	}
	case CT_K_VOID:
		puts_(v, v->json ? "null" : "void");
		break;
	default: {
		/* Unknown or raw: the bytes as a hex word (none to show for an
		 * undescribed type without a size) */
		if (!t->size) {
			emit_marker(v, "?");
			break;
		}
		uint32_t n = t->size <= 8 ? t->size : 8;
		if (v->json)
			buf_printf(v->out, "\"0x%" PRIx64 "\"", load_uint(b, n));
		else
			buf_printf(v->out, "0x%" PRIx64, load_uint(b, n));
	}
	}
}

/* Assembles value I's bytes from its pieces; AVAIL marks bytes we have. */
static uint32_t assemble(struct ct_values *v, const struct ct_val_desc *d, uint8_t *b, uint8_t *avail)
{
	uint32_t size = d->flags & CT_VAL_RAW ? 8 : type_of(v, d->type)->size;
	if (size > MAX_VALUE)
		size = MAX_VALUE; /* the caller does not decode it */
	memset(b, 0, size);
	memset(avail, 0, size);
	for (uint32_t i = 0; i < d->npieces; i++) {
		const struct ct_val_piece *p = &d->pieces[i];
		if ((uint64_t)p->value_off + p->size > size)
			continue;
		if (p->kind == CT_PIECE_REG) {
			if (p->slot + 8u <= sizeof(v->payload) && p->size <= 8) {
				memcpy(b + p->value_off, v->payload + p->slot, p->size);
				memset(avail + p->value_off, 1, p->size);
			}
		} else if (p->kind == CT_PIECE_CONST) {
			if (p->size <= 8) {
				for (uint32_t k = 0; k < p->size; k++)
					b[p->value_off + k] = (uint8_t)(p->literal >> (8 * k));
				memset(avail + p->value_off, 1, p->size);
			}
		} else if (p->kind == CT_PIECE_STACK || p->kind == CT_PIECE_REGMEM) {
			uint16_t hdr;
			if (p->slot + CT_MEM_HDR + (uint32_t)p->size > sizeof(v->payload))
				continue;
			memcpy(&hdr, v->payload + p->slot, 2);
			if (hdr == p->size) {
				memcpy(b + p->value_off, v->payload + p->slot + CT_MEM_HDR, p->size);
				memset(avail + p->value_off, 1, p->size);
			}
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
		if (d->pieces[i].kind == CT_PIECE_REG || d->pieces[i].kind == CT_PIECE_STACK ||
		    d->pieces[i].kind == CT_PIECE_REGMEM)
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

static void one_value(struct ct_values *v, const struct ct_val_desc *d)
{
	uint8_t *b = v->b, *avail = v->avail;
	v->value_start = v->out->n;
	v->over = false;
	if (!(d->flags & CT_VAL_RAW) && type_of(v, d->type)->size > MAX_VALUE) {
		emit_marker(v, BEYOND_LIMITS);
		return;
	}
	if (in_x87(d)) {
		emit_marker(v, "unavailable: x87 register");
		return;
	}
	if (v->missing && reads_payload(d) && !(d->flags & CT_VAL_INCOMPLETE)) {
		emit_marker(v, "unavailable: not captured"); /* this hit copied nothing */
		return;
	}
	if (d->flags & (CT_VAL_NOLOC | CT_VAL_INCOMPLETE)) {
		/* A float piece is XREG: it has pieces but BPF read none. */
		if (d->npieces && !(d->flags & CT_VAL_INCOMPLETE)) {
			assemble(v, d, b, avail);
			emit_value(v, d->type, b, avail, 0);
		} else {
			emit_marker(v, why_missing(d));
		}
		return;
	}
	assemble(v, d, b, avail);
	if (d->flags & CT_VAL_RAW) {
		uint64_t w = load_uint(b, 8);
		buf_printf(v->out, v->json ? "%" PRIu64 : "0x%" PRIx64, w);
		return;
	}
	emit_value(v, d->type, b, avail, 0);
}

void ct_values_text(struct ct_values *v, struct ct_buf *out)
{
	if (!v->f)
		return;
	v->json = false;
	v->out = out;
	bool results = v->f->nvals && (v->f->vals[0].flags & CT_VAL_RESULT);
	bool paren = results && v->f->nvals > 1;
	if (paren)
		puts_(v, "(");
	for (uint32_t i = 0; i < v->f->nvals; i++) {
		const struct ct_val_desc *d = &v->f->vals[i];
		if (i)
			puts_(v, ", ");
		/* results: names only for a list of named ones, "(sum=8, ok=true)" */
		if (!results || (paren && d->name[0] && d->name[0] != '~')) {
			buf_cstr(v->out, d->name[0] ? d->name : "?");
			buf_put(v->out, "=", 1);
		}
		one_value(v, d);
	}
	if (paren)
		puts_(v, ")");
}

void ct_values_json(struct ct_values *v, struct ct_buf *out)
{
	v->json = true;
	v->out = out;
	puts_(v, "[");
	for (uint32_t i = 0; v->f && i < v->f->nvals; i++) {
		const struct ct_val_desc *d = &v->f->vals[i];
		const char *tname = d->flags & CT_VAL_RAW ? "word" : type_of(v, d->type)->name;
		if (i)
			puts_(v, ",");
		puts_(v, "{\"name\":");
		ct_buf_json_string(out, d->name, strlen(d->name));
		puts_(v, ",\"type\":");
		ct_buf_json_string(out, tname, strlen(tname));
		puts_(v, ",\"value\":");
		size_t before = out->n;
		v->marker = NULL;
		v->truncated = false;
		one_value(v, d);
		/* Say why a value is null when the whole value is a marker. */
		if (v->marker && out->n - before == 4 && !memcmp(out->p + before, "null", 4)) {
			puts_(v, ",\"unavailable\":");
			const char *why = strncmp(v->marker, "unavailable: ", 13) ? v->marker : v->marker + 13;
			ct_buf_json_string(out, why, strlen(why));
		}
		if (v->truncated)
			puts_(v, ",\"truncated\":true");
		puts_(v, "}");
	}
	puts_(v, "]");
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
	v->json = false;
	v->out = out;
	one_value(v, &v->f->vals[i]);
}
