/* Small shared helpers: error reporting, allocation, growable arrays,
 * varints, a hash map keyed by 64-bit integers, duration/size parsing. */
#ifndef CT_UTIL_H
#define CT_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Errors: a failing function records one line with ct_fail() and returns
 * -1 (or NULL); a caller may wrap it (ct_fail("...: %s", ct_error())).  The
 * command prints it once with ct_print_error() as "calltrace: <line>";
 * every command error goes out through that one function. */
int ct_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* -1, for a failure whose one line is already on stderr (a warning printed
 * at the moment it happened): ct_print_error() then prints nothing. */
int ct_fail_said(void);
const char *ct_error(void);
/* PATH itself, or for a process's /proc/PID/exe the file it runs (as
 * readlink gives it, into BUF of N bytes): what messages name. */
const char *ct_program_path(const char *path, char *buf, size_t n);
/* Where X goes in the N ascending values V: the first index whose value is
 * not below X (N if none). */
size_t ct_lower_bound_u64(const uint64_t *v, size_t n, uint64_t x);
void ct_print_error(void);                  /* ct_error() as one line on stderr */
void ct_print_errorf(const char *fmt, ...)  /* ct_fail(FMT...), then ct_print_error() */
	__attribute__((format(printf, 1, 2)));
/* One line "calltrace: ..." (ct_warn: "calltrace: warning: ...") on stderr,
 * its control characters shown as \xNN (ct_fail's line too): messages name
 * files and processes, whose names are anyone's to choose. */
void ct_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* S as those lines show it (malloc'd): a file's name, a program's argument. */
char *ct_shown(const char *s);
void ct_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern int ct_verbose;
void ct_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
/* The heap grows in transparent huge pages from now on (see util.c). */
void ct_heap_in_huge_pages(void);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Growable array: struct { T *v; size_t n, cap; } with CT_VEC_PUSH. */
#define CT_VEC(T) struct { T *v; size_t n, cap; }
#define CT_VEC_GROW(vec, want)                                                 \
	do {                                                                   \
		if ((want) > (vec).cap) {                                      \
			size_t c_ = (vec).cap ? (vec).cap * 2 : 16;            \
			while (c_ < (want))                                    \
				c_ *= 2;                                       \
			(vec).v = xrealloc((vec).v, c_ * sizeof(*(vec).v));    \
			(vec).cap = c_;                                        \
		}                                                              \
	} while (0)
#define CT_VEC_PUSH(vec, x)                                                    \
	do {                                                                   \
		CT_VEC_GROW(vec, (vec).n + 1);                                 \
		(vec).v[(vec).n++] = (x);                                      \
	} while (0)
#define CT_VEC_FREE(vec) (free((vec).v), (vec).v = NULL, (vec).n = (vec).cap = 0)
/* Takes the last element whose .seq is SEQ out of a non-empty VEC (the
 * last element if none is) into OUT; AT is set to where it was (the
 * elements after it move down one).  Open frames in entry order, a call's
 * found innermost first (ct_call_nest_key: a call of the goroutine's other
 * stack may still be open inside it).  Needs <string.h>. */
#define CT_VEC_TAKE_SEQ(vec, seq_, out, at)                                    \
	do {                                                                   \
		size_t i_ = (vec).n;                                           \
		while (i_ && (vec).v[i_ - 1].seq != (seq_))                    \
			i_--;                                                  \
		(at) = i_ ? i_ - 1 : (vec).n - 1;                              \
		(out) = (vec).v[(at)];                                         \
		if ((at) + 1 < (vec).n)                                        \
			memmove((vec).v + (at), (vec).v + (at) + 1, ((vec).n - (at) - 1) * sizeof(*(vec).v)); \
		(vec).n--;                                                     \
	} while (0)

/* Byte buffer used by the file format encoders. */
struct ct_buf {
	uint8_t *p;
	size_t n, cap;
};
void buf_grow(struct ct_buf *b, size_t extra);
/* Inline: renderers append a few bytes at a time, millions of times. */
static inline void buf_reserve(struct ct_buf *b, size_t extra)
{
	if (b->n + extra > b->cap)
		buf_grow(b, extra);
}
static inline void buf_put(struct ct_buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n)
		__builtin_memcpy(b->p + b->n, p, n);
	b->n += n;
}
/* N bytes at P zeroed by 16-byte stores (N a multiple of 16, known when it
 * is compiled): memset of a few hundred bytes is `rep stos`, whose start-up
 * was more than half of replay's time where it made a frame or a value. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static inline void zero16n(void *p, size_t n)
{
	typedef long long v16 __attribute__((vector_size(16), aligned(1)));
	for (size_t i = 0; i < n; i += 16)
		*(v16 *)((char *)p + i) = (v16){0, 0};
}
/* N bytes from S to D (not overlapping), N short (a few dozen bytes at
 * most; any N works) and known only when it runs: by two loads and stores
 * that may overlap, or 16-byte blocks, none past either end.  memcpy of
 * such a length is a call to libc's or, where the compiler knows a bound
 * (a uint8_t length), `rep movsq`, whose start-up was most of such a
 * copy's time: ~5% of replay --format=json in its cached texts and
 * payload copies. */
static inline void copy_short(void *d, const void *s, size_t n)
{
	typedef long long v16 __attribute__((vector_size(16), aligned(1), may_alias));
	uint8_t *o = d;
	const uint8_t *i = s;
	if (n >= 16) {
		for (size_t k = 0; k + 16 < n; k += 16) {
			*(v16 *)(o + k) = *(const v16 *)(i + k);
			__asm__("" : "+r"(k)); /* (a loop, not turned into memcpy) */
		}
		*(v16 *)(o + n - 16) = *(const v16 *)(i + n - 16);
	} else if (n >= 8) {
		uint64_t a, b;
		__builtin_memcpy(&a, i, 8);
		__builtin_memcpy(&b, i + n - 8, 8);
		__builtin_memcpy(o, &a, 8);
		__builtin_memcpy(o + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;
		__builtin_memcpy(&a, i, 4);
		__builtin_memcpy(&b, i + n - 4, 4);
		__builtin_memcpy(o, &a, 4);
		__builtin_memcpy(o + n - 4, &b, 4);
	} else if (n) {
		o[0] = i[0];
		o[n / 2] = i[n / 2];
		o[n - 1] = i[n - 1];
	}
}
/* buf_put of a short text of a length known only when it runs (copy_short). */
static inline void buf_put_short(struct ct_buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	copy_short(b->p + b->n, p, n);
	b->n += n;
}
static inline void buf_u8(struct ct_buf *b, uint8_t v)
{
	buf_put(b, &v, 1);
}
void buf_u32(struct ct_buf *b, uint32_t v);
void buf_u64(struct ct_buf *b, uint64_t v);
void buf_uvar_long(struct ct_buf *b, uint64_t v); /* buf_uvar's general case */
/* Inline for one byte: the tree packs a few small numbers a line. */
static inline void buf_uvar(struct ct_buf *b, uint64_t v)
{
	if (v < 0x80 && b->n < b->cap)
		b->p[b->n++] = (uint8_t)v;
	else
		buf_uvar_long(b, v);
}
void buf_svar(struct ct_buf *b, int64_t v);
void buf_str(struct ct_buf *b, const char *s); /* uvar length + bytes */
void buf_utf8(struct ct_buf *b, uint32_t c);   /* code point C (<= 0x10ffff) as UTF-8 */
/* Length of the well-formed UTF-8 sequence at P (RFC 3629), 0 if ill-formed; *CP its code point. */
size_t utf8_decode(const unsigned char *p, const unsigned char *end, uint32_t *cp);
void buf_free(struct ct_buf *b);
/* Fast appends for renderers' hot paths (printf dominates otherwise). */
static inline void buf_cstr(struct ct_buf *b, const char *s)
{
	buf_put(b, s, __builtin_strlen(s));
}

/* Decimal numbers, inline: JSON writes three or four big ones a call, and
 * in a profile of replay --format=json the call to buf_dec (its registers
 * saved, the room checked, the buffer reloaded) was ~40% of buf_dec's
 * samples (json.c's put_dec writes them at a cursor). */
extern const char ct_dec_pairs[]; /* "00" .. "99" */
extern const uint64_t ct_dec_pow10[20];

/* The 8 decimal digits of V (< 10^8), leading zeros too, as the bytes of
 * a little-endian word, the first digit lowest: all digits at once, the
 * word split in lanes (4 + 4 digits in 32-bit lanes, 2 + 2 in 16-bit
 * ones, 1 + 1 in bytes), each lane's quotient by a multiply and shift
 * that is exact in its range (n * 10486 >> 20 == n / 100 for n < 10^4,
 * n * 103 >> 10 == n / 10 for n < 100) and no lane's product reaching
 * the next.  Two digits a step from a table of pairs took ~80
 * instructions a number, 13% of replay --format=json's. */
static inline __attribute__((always_inline)) uint64_t dec8(uint32_t v)
{
	uint64_t hi = v / 10000, y = hi | (uint64_t)(v - hi * 10000) << 32;
	uint64_t q = (y * 10486) >> 20 & 0x0000007f0000007fULL;
	y = q | (y - q * 100) << 16;
	q = (y * 103) >> 10 & 0x000f000f000f000fULL;
	y = q | (y - q * 10) << 8;
	return y + 0x3030303030303030ULL;
}

/* V's N decimal digits (N: dec_len) at O, with room for N + 8 bytes there
 * (a word is stored at a time; the bytes past the digits are not). */
static inline __attribute__((always_inline)) void dec_digits(uint64_t v, unsigned n, char *o)
{
	/* (ids and depths: one or two digits, cheaper from a table) */
	if (n <= 2) {
		__builtin_memcpy(o, ct_dec_pairs + v * 2 + (2 - n), 2);
		return;
	}
	uint64_t w;
	if (n > 16) {
		uint64_t hi = v / 10000000000000000ULL; /* (at most 4 digits) */
		v -= hi * 10000000000000000ULL;
		w = dec8((uint32_t)hi) >> 8 * (24 - n);
		__builtin_memcpy(o, &w, 8);
		o += n - 16;
		n = 16;
	}
	if (n > 8) {
		uint64_t hi = v / 100000000;
		v -= hi * 100000000;
		w = dec8((uint32_t)hi) >> 8 * (16 - n);
		__builtin_memcpy(o, &w, 8);
		o += n - 8;
		n = 8;
	}
	w = dec8((uint32_t)v) >> 8 * (8 - n);
	__builtin_memcpy(o, &w, 8);
}

/* How many decimal digits V has: from its bit length (log10(2) ~ 1233 /
 * 4096), without a division. */
static inline unsigned dec_len(uint64_t v)
{
	v |= 1;
	unsigned t = (unsigned)(64 - __builtin_clzll(v)) * 1233 >> 12;
	return t + (v >= ct_dec_pow10[t]);
}

/* "1234" */
static inline void buf_dec(struct ct_buf *b, uint64_t v)
{
	/* (not buf_dec_pad's width 0: without the padding's stores and
	 * registers, a JSON object's seven numbers cost a third less) */
	unsigned n = dec_len(v);
	buf_reserve(b, n + 8);
	dec_digits(v, n, (char *)b->p + b->n);
	b->n += n;
}
void buf_sdec(struct ct_buf *b, int64_t v);                   /* "-12" */
void buf_dec_pad(struct ct_buf *b, uint64_t v, unsigned width); /* right-aligned */
void buf_spaces(struct ct_buf *b, size_t n);
/* printf into the buffer (any length). */
void buf_printf(struct ct_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Bounded reader over a byte range; any overrun sets bad and yields zeros. */
struct ct_rd {
	const uint8_t *p, *end;
	bool bad;
};
/* A reader of the N bytes at P (P may be NULL when N is 0: an empty chunk). */
static inline struct ct_rd ct_rd_of(const uint8_t *p, size_t n)
{
	return (struct ct_rd){p, p ? p + n : p, false};
}
uint32_t rd_u32(struct ct_rd *r);
uint64_t rd_u64(struct ct_rd *r);
uint64_t rd_uvar_long(struct ct_rd *r); /* rd_uvar's general case */
/* Inline for the one-byte case, most of a trace's numbers: decoding was
 * ~15% of report's instructions, much of it the calls. */
static inline uint8_t rd_u8(struct ct_rd *r)
{
	if (!r->bad && r->p < r->end)
		return *r->p++;
	r->bad = true;
	return 0;
}
static inline uint64_t rd_uvar(struct ct_rd *r)
{
	const uint8_t *p = r->p;
	if (p < r->end && !(p[0] & 0x80)) {
		r->p = p + 1;
		return p[0];
	}
	/* two bytes, the next most (durations, thread ids, names' numbers) */
	if (r->end - p >= 2 && !(p[1] & 0x80)) {
		r->p = p + 2;
		return (p[0] & 0x7fu) | (uint64_t)p[1] << 7;
	}
	/* three: an event's pid and tid, at each switch of goroutine (most
	 * events when goroutines interleave) */
	if (r->end - p >= 3 && !(p[2] & 0x80)) {
		r->p = p + 3;
		return (p[0] & 0x7fu) | (uint64_t)(p[1] & 0x7fu) << 7 | (uint64_t)p[2] << 14;
	}
	return rd_uvar_long(r);
}
static inline int64_t rd_svar(struct ct_rd *r)
{
	uint64_t u = rd_uvar(r);
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}
char *rd_str(struct ct_rd *r); /* malloc'd, NUL-terminated */
const uint8_t *rd_bytes(struct ct_rd *r, size_t n);

/* Open-addressing hash map from a nonzero-or-zero uint64 key to a pointer. */
struct ct_map {
	uint64_t *keys;
	void **vals;
	uint8_t *used;
	size_t n, cap;
};
void **map_slot(struct ct_map *m, uint64_t key, bool create); /* NULL if absent */
void *map_get(struct ct_map *m, uint64_t key);
void map_put(struct ct_map *m, uint64_t key, void *val);
bool map_del(struct ct_map *m, uint64_t key);
void map_free(struct ct_map *m);
#define MAP_FOREACH(m, i) for (size_t i = 0; i < (m)->cap; i++) if ((m)->used[i])

/* The two values of a map looked up last, by key, in front of it: a trace's
 * events mostly come from one or two goroutines in turn (two threads'
 * events interleave), and a one-entry cache missed at every switch.  Its
 * owner forgets a value (recent_forget) when it leaves the map. */
struct ct_recent {
	uint64_t key[2];
	void *val[2]; /* [0] the last one; NULL: none */
};
static inline void *recent_get(struct ct_recent *c, uint64_t key)
{
	if (c->val[0] && c->key[0] == key)
		return c->val[0];
	if (!c->val[1] || c->key[1] != key)
		return NULL;
	void *v = c->val[1];
	c->key[1] = c->key[0];
	c->val[1] = c->val[0];
	c->key[0] = key;
	c->val[0] = v;
	return v;
}
static inline void recent_put(struct ct_recent *c, uint64_t key, void *val)
{
	if (c->val[0] == val && c->key[0] == key)
		return;
	c->key[1] = c->key[0];
	c->val[1] = c->val[0];
	c->key[0] = key;
	c->val[0] = val;
}
static inline void recent_forget(struct ct_recent *c, const void *val)
{
	for (int i = 0; i < 2; i++)
		if (c->val[i] == val)
			c->val[i] = NULL;
}

uint64_t hash64(uint64_t x); /* murmur3's fmix64 finalizer */
uint64_t hash_str(const char *s); /* FNV-1a 64 */
uint64_t hash_strn(const char *s, size_t n); /* of its first N bytes */

/* "10us", "1.5ms", "2s", "500" (ns) -> ns; "256M", "1G", "4096" -> bytes. */
int parse_duration(const char *s, uint64_t *ns);
int parse_size(const char *s, uint64_t *bytes);
int parse_u64(const char *s, uint64_t *v);

/* Shell-style glob; '*' matches '/' and '.' too (Go names contain both). */
bool glob_match(const char *pat, const char *s);

uint64_t now_mono_ns(void);
uint64_t now_real_ns(void);

#endif
