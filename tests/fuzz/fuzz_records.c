/* A structure-aware fuzzer of the record format (docs/FORMAT.md), built
 * with AddressSanitizer and UndefinedBehaviorSanitizer.
 *
 * A record file is parsed into chunks and each chunk into tokens following
 * the format's schema (varints, strings, payloads, each tagged with what it
 * is: a count, a type id, a size, an offset...).  Mutations change token
 * values to the ones that break arithmetic (0, 2^32-1, 0xfffffff8, 10^6,
 * 2^64-1, off-by-one of the current value), point type references at other
 * types (their own included), grow structs with fields (bit-fields among
 * them, their bit positions sane or not), rewrite event heads and payload
 * headers, duplicate, drop and reorder events and chunks, flag events as on
 * the alternate signal stack, move the SP to other stacks (coroutines) and
 * back, and splice chunks between seeds; then every CRC is recomputed, so the file
 * gets past the checksums and the readers must cope with lying tables.
 *
 * Every crafted file goes through every reader: replay text (grouped,
 * merged, filtered), JSON, YAML, report (text, JSON, --diff), dump chrome,
 * folded, svg, otlp, info and live.  A reader must not crash, trip a
 * sanitizer, run longer than a few seconds (exponential rendering), print
 * more than a bound proportional to the file (quadratic output), or print
 * malformed JSON.
 *
 *   fuzz_records [--seed N] [--files N] [--seconds S] [--save DIR] SEED_FILE...
 *       deterministic: the same seed and seed files give the same files
 *   fuzz_records --regress PATH...
 *       every file given, or in a directory given, through every reader as it
 *       is (no mutation): the crashes found before (tests/fuzz/regress)
 *   fuzz_records --targets BINARY...
 *       reads binaries as record/list do (ELF, symbols, pclntab, DWARF), under
 *       the same sanitizers
 *   built with -DCT_LIBFUZZER: libFuzzer entry points (make fuzz), the same
 *       mutator as LLVMFuzzerCustomMutator */
#include "cmds/cmds.h"
#include "format/tracefile.h"
#include "target/target.h"
#include "render/otlp.h"
#include "render/render.h"
#include "render/report.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

/* ---------------------------------------------------------------- random */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static bool chance(unsigned percent)
{
	return below(100) < percent;
}

/* ------------------------------------------------------------- the model */

enum tok_kind { T_U8, T_UVAR, T_SVAR, T_U64, T_STR, T_BYTES, T_RAW };
enum tok_role {
	R_OTHER, R_COUNT, R_ID, R_TYPEREF, R_SIZE, R_OFFSET, R_KIND, R_FUNCREF, R_SITEREF, R_HEAD,
	R_PLEN, R_PAYLOAD, R_TS, R_KEY, R_FLAGS, R_OPCODE, R_SLOT, R_TYPE_START,
};

struct tok {
	uint8_t kind, role;
	uint64_t v;         /* numbers (SVAR: the signed value as bits) */
	struct ct_buf s;    /* STR, BYTES, RAW */
};

struct chunk {
	uint32_t type, count;
	bool bad_crc;
	CT_VEC(struct tok) t;
};

struct model {
	uint8_t hdr[32];
	CT_VEC(struct chunk) c;
};

static void tok_push(struct chunk *c, uint8_t kind, uint8_t role, uint64_t v, const void *p, size_t n)
{
	struct tok t = {kind, role, v, {0}};
	if (p || n)
		buf_put(&t.s, p, n);
	CT_VEC_PUSH(c->t, t);
}

static void chunk_free(struct chunk *c)
{
	for (size_t i = 0; i < c->t.n; i++)
		buf_free(&c->t.v[i].s);
	CT_VEC_FREE(c->t);
}

static void model_free(struct model *m)
{
	for (size_t i = 0; i < m->c.n; i++)
		chunk_free(&m->c.v[i]);
	CT_VEC_FREE(m->c);
}

static struct chunk chunk_copy(const struct chunk *c)
{
	struct chunk d = {c->type, c->count, c->bad_crc, {0}};
	for (size_t i = 0; i < c->t.n; i++)
		tok_push(&d, c->t.v[i].kind, c->t.v[i].role, c->t.v[i].v, c->t.v[i].s.p, c->t.v[i].s.n);
	return d;
}

/* Decoding a payload by the schema: each reader appends tokens; a payload
 * that does not parse keeps its undecoded rest as one RAW token. */
struct dec {
	struct ct_rd r;
	struct chunk *c;
	uint32_t version; /* of the file: what SITES entries hold */
};

static uint64_t d_uvar(struct dec *d, uint8_t role)
{
	uint64_t v = rd_uvar(&d->r);
	if (!d->r.bad)
		tok_push(d->c, T_UVAR, role, v, NULL, 0);
	return v;
}

static void d_svar(struct dec *d, uint8_t role)
{
	int64_t v = rd_svar(&d->r);
	if (!d->r.bad)
		tok_push(d->c, T_SVAR, role, (uint64_t)v, NULL, 0);
}

static uint8_t d_u8(struct dec *d, uint8_t role)
{
	uint8_t v = rd_u8(&d->r);
	if (!d->r.bad)
		tok_push(d->c, T_U8, role, v, NULL, 0);
	return v;
}

static void d_u64(struct dec *d, uint8_t role)
{
	uint64_t v = rd_u64(&d->r);
	if (!d->r.bad)
		tok_push(d->c, T_U64, role, v, NULL, 0);
}

static void d_str(struct dec *d)
{
	uint64_t n = rd_uvar(&d->r);
	const uint8_t *p = rd_bytes(&d->r, n);
	if (!d->r.bad)
		tok_push(d->c, T_STR, R_OTHER, 0, p, n);
}

static void d_bytes(struct dec *d, uint64_t n)
{
	const uint8_t *p = rd_bytes(&d->r, n);
	if (!d->r.bad)
		tok_push(d->c, T_BYTES, R_PAYLOAD, 0, p, n);
}

static void decode_events(struct dec *d, uint32_t count)
{
	d_u64(d, R_TS);
	for (uint32_t i = 0; i < count && !d->r.bad; i++) {
		uint8_t head = d_u8(d, R_HEAD);
		if (head & 0x10) { /* process record (before the loss bit, as the reader) */
			d_uvar(d, R_KIND);
			d_svar(d, R_TS);
			d_uvar(d, R_OTHER);
			d_uvar(d, R_OTHER);
			d_uvar(d, R_OTHER);
			continue;
		}
		if (head & 0x04) {
			d_uvar(d, R_COUNT);
			d_svar(d, R_TS);
			continue;
		}
		d_uvar(d, R_SITEREF);
		d_svar(d, R_TS);
		if (head & 0x01) {
			d_uvar(d, R_OTHER);
			d_uvar(d, R_OTHER);
			d_uvar(d, R_OTHER);
		}
		d_svar(d, R_KEY);
		if (head & 0x02)
			d_bytes(d, d_uvar(d, R_PLEN));
		if (head & 0x08)
			d_uvar(d, R_FLAGS);
	}
}

static void decode_payload(struct chunk *c, const uint8_t *p, size_t n, uint32_t version)
{
	struct dec d = {{p, p + n, false}, c, version};
	switch (c->type) {
	case CT_CHUNK_META:
	case CT_CHUNK_STATS:
		while (d.r.p < d.r.end && !d.r.bad)
			d_str(&d);
		break;
	case CT_CHUNK_FUNCS:
		for (uint64_t i = 0, k = d_uvar(&d, R_COUNT); i < k && !d.r.bad; i++) {
			d_uvar(&d, R_ID);
			d_str(&d);
			d_uvar(&d, R_OTHER);
			d_uvar(&d, R_SIZE);
			d_uvar(&d, R_FLAGS);
		}
		break;
	case CT_CHUNK_SITES:
		for (uint64_t i = 0, k = d_uvar(&d, R_COUNT); i < k && !d.r.bad; i++) {
			d_uvar(&d, R_ID);
			d_uvar(&d, R_OTHER);
			d_uvar(&d, R_FUNCREF);
			d_u8(&d, R_KIND);
			d_uvar(&d, R_FUNCREF);
			if (d.version >= 4) { /* caller-side fields */
				d_svar(&d, R_KEY);
				d_uvar(&d, R_SITEREF);
				d_uvar(&d, R_SITEREF);
				d_u8(&d, R_FLAGS);
			}
		}
		break;
	case CT_CHUNK_TYPES: {
		d_uvar(&d, R_ID);
		for (uint64_t i = 0, k = d_uvar(&d, R_COUNT); i < k && !d.r.bad; i++) {
			d_u8(&d, R_TYPE_START);
			d_str(&d);
			d_uvar(&d, R_SIZE);
			d_uvar(&d, R_TYPEREF);
			d_uvar(&d, R_TYPEREF);
			d_uvar(&d, R_COUNT); /* len */
			uint8_t fl = d_u8(&d, R_FLAGS);
			d_uvar(&d, R_OTHER);
			for (uint64_t f = 0, nf = d_uvar(&d, R_COUNT); f < nf && !d.r.bad; f++) {
				if (fl & 16) { /* fields carry values (enumerators, variants) */
					d_svar(&d, R_OTHER);
					d_u8(&d, R_FLAGS);
				}
				d_str(&d);
				d_uvar(&d, R_OFFSET);
				d_uvar(&d, R_TYPEREF);
			}
		}
		break;
	}
	case CT_CHUNK_FETCH:
		for (uint64_t i = 0, k = d_uvar(&d, R_COUNT); i < k && !d.r.bad; i++) {
			d_uvar(&d, R_SITEREF);
			d_uvar(&d, R_SIZE);
			d_u8(&d, R_FLAGS);
			for (uint64_t o = 0, nops = d_uvar(&d, R_COUNT); o < nops && !d.r.bad; o++) {
				d_u8(&d, R_OPCODE);
				d_u8(&d, R_OTHER);
				d_uvar(&d, R_SLOT);
				d_uvar(&d, R_SIZE);
				d_uvar(&d, R_SLOT);
				d_uvar(&d, R_SLOT);
				d_uvar(&d, R_SIZE);
				d_svar(&d, R_OFFSET);
			}
			for (uint64_t v = 0, nv = d_uvar(&d, R_COUNT); v < nv && !d.r.bad; v++) {
				d_str(&d);
				d_uvar(&d, R_TYPEREF);
				d_u8(&d, R_FLAGS);
				for (uint64_t q = 0, np = d_uvar(&d, R_COUNT); q < np && !d.r.bad; q++) {
					uint8_t kind = d_u8(&d, R_KIND);
					d_u8(&d, R_OTHER);
					d_uvar(&d, R_SIZE);
					d_uvar(&d, R_OFFSET);
					d_uvar(&d, R_SLOT);
					if (kind == CT_PIECE_CONST && d.version >= 5)
						d_uvar(&d, R_OTHER); /* the constant */
				}
			}
		}
		break;
	case CT_CHUNK_RTYPES:
		if (d.version >= 8) { /* the object: its site range */
			d_uvar(&d, R_SITEREF);
			d_uvar(&d, R_SIZE);
		}
		for (uint64_t i = 0, k = d_uvar(&d, R_COUNT); i < k && !d.r.bad; i++) {
			d_uvar(&d, R_OTHER);
			d_uvar(&d, R_TYPEREF);
		}
		break;
	case CT_CHUNK_PCPOS:
		if (d.version >= 8) {
			d_uvar(&d, R_SITEREF);
			d_uvar(&d, R_SIZE);
		}
		for (uint64_t i = 0, k = d_uvar(&d, R_COUNT); i < k && !d.r.bad; i++) {
			d_uvar(&d, R_OTHER); /* pid */
			d_uvar(&d, R_OTHER); /* pc */
			d_str(&d);
			d_str(&d);
			d_uvar(&d, R_OTHER); /* line */
		}
		break;
	case CT_CHUNK_EVENTS:
		decode_events(&d, c->count);
		break;
	default:
		break;
	}
	/* whatever did not decode stays as it was */
	if (d.r.bad) {
		/* the failed read consumed nothing useful: keep every byte after
		 * the last whole token */
		size_t used = 0;
		for (size_t i = 0; i < c->t.n; i++) {
			const struct tok *t = &c->t.v[i];
			struct ct_buf tmp = {0};
			switch (t->kind) {
			case T_U8: used += 1; break;
			case T_U64: used += 8; break;
			case T_UVAR: buf_uvar(&tmp, t->v); used += tmp.n; break;
			case T_SVAR: buf_svar(&tmp, (int64_t)t->v); used += tmp.n; break;
			case T_STR: buf_uvar(&tmp, t->s.n); used += tmp.n + t->s.n; break;
			default: used += t->s.n;
			}
			buf_free(&tmp);
		}
		/* a BYTES token's length is its own UVAR token: counted above */
		if (used < n)
			tok_push(c, T_RAW, R_OTHER, 0, p + used, n - used);
	} else if (d.r.p < d.r.end) {
		tok_push(c, T_RAW, R_OTHER, 0, d.r.p, (size_t)(d.r.end - d.r.p));
	}
}

static bool model_parse(struct model *m, const uint8_t *p, size_t n)
{
	memset(m, 0, sizeof(*m));
	if (n < 32 || memcmp(p, "CALLTRC", 7))
		return false;
	memcpy(m->hdr, p, 32);
	uint32_t version;
	memcpy(&version, p + 8, 4);
	size_t at = 32;
	while (at + 16 <= n) {
		uint32_t h[4];
		memcpy(h, p + at, 16);
		if (h[1] > n - at - 16)
			break;
		struct chunk c = {h[0], h[3], false, {0}};
		decode_payload(&c, p + at + 16, h[1], version);
		CT_VEC_PUSH(m->c, c);
		at += 16 + (size_t)h[1];
	}
	return m->c.n > 0;
}

static void encode_chunk(const struct chunk *c, struct ct_buf *out)
{
	struct ct_buf b = {0};
	for (size_t i = 0; i < c->t.n; i++) {
		const struct tok *t = &c->t.v[i];
		switch (t->kind) {
		case T_U8: buf_u8(&b, (uint8_t)t->v); break;
		case T_UVAR: buf_uvar(&b, t->v); break;
		case T_SVAR: buf_svar(&b, (int64_t)t->v); break;
		case T_U64: buf_u64(&b, t->v); break;
		case T_STR: buf_uvar(&b, t->s.n); buf_put(&b, t->s.p, t->s.n); break;
		default: buf_put(&b, t->s.p, t->s.n);
		}
	}
	uint32_t hc[3] = {c->type, (uint32_t)b.n, c->count};
	uint32_t crc = (uint32_t)crc32(crc32(0, (const Bytef *)hc, sizeof(hc)), b.p ? b.p : (const Bytef *)"", (uInt)b.n);
	if (c->bad_crc)
		crc ^= 1;
	buf_u32(out, c->type);
	buf_u32(out, (uint32_t)b.n);
	buf_u32(out, crc);
	buf_u32(out, c->count);
	buf_put(out, b.p, b.n);
	buf_free(&b);
}

static void model_encode(const struct model *m, struct ct_buf *out)
{
	out->n = 0;
	buf_put(out, m->hdr, 32);
	for (size_t i = 0; i < m->c.n; i++)
		encode_chunk(&m->c.v[i], out);
}

/* ------------------------------------------------------------- mutations */

static uint64_t interesting(uint64_t cur)
{
	static const uint64_t v[] = {
		0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 63, 64, 65, 127, 128, 255, 256, 511, 512,
		1023, 1024, 1025, 2040, 2047, 2048, 2049, 4095, 4096, 0x7fff, 0x8000, 0xfffe, 0xffff, 0x10000,
		1000000, 0x7fffffff, 0x80000000, 0xfffffff8, 0xfffffffe, 0xffffffff, 0x100000000ULL,
		0x100000007ULL, 0x7fffffffffffffffULL, 0x8000000000000000ULL, 0xfffffffffffffff8ULL,
		0xffffffffffffffffULL,
	};
	switch (below(5)) {
	case 0:
		return cur + 1 + below(8);
	case 1:
		return cur - 1 - below(8);
	case 2:
		return cur ^ (1ULL << below(64));
	default:
		return v[below(sizeof(v) / sizeof(v[0]))];
	}
}

static struct chunk *pick_chunk(struct model *m, int type)
{
	size_t cand[256], n = 0;
	for (size_t i = 0; i < m->c.n && n < 256; i++)
		if (type < 0 || m->c.v[i].type == (uint32_t)type)
			if (m->c.v[i].t.n)
				cand[n++] = i;
	return n ? &m->c.v[cand[below(n)]] : NULL;
}

static struct tok *pick_tok(struct chunk *c, int role, bool numeric)
{
	if (!c || !c->t.n)
		return NULL;
	for (int tries = 0; tries < 64; tries++) {
		struct tok *t = &c->t.v[below(c->t.n)];
		if (role >= 0 && t->role != role)
			continue;
		if (numeric && t->kind >= T_STR)
			continue;
		return t;
	}
	return NULL;
}

static void set_num(struct tok *t, uint64_t v)
{
	t->v = t->kind == T_U8 ? (uint8_t)v : v;
}

static void mutate_number(struct model *m)
{
	static const int table_types[] = {CT_CHUNK_FUNCS, CT_CHUNK_SITES, CT_CHUNK_TYPES, CT_CHUNK_FETCH,
					  CT_CHUNK_RTYPES, CT_CHUNK_PCPOS, CT_CHUNK_EVENTS};
	struct chunk *c = pick_chunk(m, table_types[below(sizeof(table_types) / sizeof(*table_types))]);
	struct tok *t = pick_tok(c, -1, true);
	if (t)
		set_num(t, interesting(t->v));
}

/* Type references to other types, to the referring type, to nonsense. */
static void mutate_typeref(struct model *m)
{
	struct chunk *c = pick_chunk(m, chance(70) ? CT_CHUNK_TYPES : CT_CHUNK_FETCH);
	struct tok *t = pick_tok(c, R_TYPEREF, true);
	if (t)
		t->v = chance(80) ? below(64) : interesting(t->v);
}

/* A type entry becomes another kind, size, length. */
static void mutate_type(struct model *m)
{
	struct chunk *c = pick_chunk(m, CT_CHUNK_TYPES);
	struct tok *t = pick_tok(c, R_TYPE_START, true);
	if (!t)
		return;
	size_t i = (size_t)(t - c->t.v);
	t->v = chance(80) ? below(CT_K_CHAR + 2) : below(256);
	if (i + 2 < c->t.n && c->t.v[i + 2].role == R_SIZE && chance(60))
		c->t.v[i + 2].v = chance(50) ? below(40) : interesting(c->t.v[i + 2].v);
	if (i + 5 < c->t.n && c->t.v[i + 5].role == R_COUNT && chance(40))
		c->t.v[i + 5].v = interesting(c->t.v[i + 5].v);
}

/* A struct gains fields (of its own type, or any): wide and deep types. */
static void grow_struct(struct model *m)
{
	struct chunk *c = pick_chunk(m, CT_CHUNK_TYPES);
	struct tok *t = pick_tok(c, R_TYPE_START, true);
	if (!t)
		return;
	size_t i = (size_t)(t - c->t.v);
	if (i + 8 >= c->t.n || c->t.v[i + 8].role != R_COUNT)
		return;
	uint64_t id_guess = below(64), nadd = 1 + below(chance(30) ? 64 : 4);
	bool valued = c->t.v[i + 6].v & 16; /* fields with values (enums, Rust enums, C bit-fields) */
	if (chance(70))
		c->t.v[i].v = valued ? (chance(33) ? CT_K_VARIANT : chance(50) ? CT_K_ENUM : CT_K_STRUCT) : CT_K_STRUCT;
	c->t.v[i + 8].v += nadd;
	for (uint64_t k = 0; k < nadd; k++) {
		/* a bit-field (flag 2): value = bit size + 256 x its first bit, sane or not */
		bool bits = chance(30);
		uint64_t value = !bits ? below(4) : chance(80) ? (1 + below(64)) | below(8) << 8 : interesting(0);
		struct tok f[5] = {{T_SVAR, R_OTHER, value, {0}}, {T_U8, R_FLAGS, bits ? 2 | chance(10) : chance(20), {0}},
				   {T_STR, R_OTHER, 0, {0}}, {T_UVAR, R_OFFSET, chance(70) ? below(32) : interesting(0), {0}},
				   {T_UVAR, R_TYPEREF, id_guess, {0}}};
		static const char *const names[] = {"f", "ptr", "len", "end", "cap", "cap_end", "__0"};
		buf_cstr(&f[2].s, names[below(7)]);
		size_t nt = valued ? 5 : 3;
		struct tok *src = valued ? f : f + 2;
		CT_VEC_GROW(c->t, c->t.n + nt);
		memmove(&c->t.v[i + 9 + nt], &c->t.v[i + 9], (c->t.n - i - 9) * sizeof(struct tok));
		memcpy(&c->t.v[i + 9], src, nt * sizeof(struct tok));
		c->t.n += nt;
	}
}

static void mutate_string(struct model *m)
{
	struct chunk *c = pick_chunk(m, -1);
	if (!c)
		return;
	struct tok *t = NULL;
	for (int tries = 0; tries < 32 && !t; tries++) {
		struct tok *x = &c->t.v[below(c->t.n)];
		if (x->kind == T_STR)
			t = x;
	}
	if (!t)
		return;
	static const char *const odd[] = {"", "%s%s%n", "\x1b[2J", "a;b c\td", "\xff\xfe\xc0\x80", "\"\\<&>'",
					  "main.main", "\x7f\x01\n", "{\"json\":1}"};
	t->s.n = 0;
	if (chance(60)) {
		buf_cstr(&t->s, odd[below(sizeof(odd) / sizeof(odd[0]))]);
	} else {
		size_t n = chance(90) ? below(40) : 4096 + below(8192);
		for (size_t k = 0; k < n; k++)
			buf_u8(&t->s, (uint8_t)rnd());
	}
}

/* The start-up calibration (META calib): what a probe hit costs, read by
 * every reader's corrected clock; numbers that wrap sums and differences. */
static void mutate_calib(struct model *m)
{
	struct chunk *c = pick_chunk(m, CT_CHUNK_META);
	if (!c)
		return;
	struct tok *val = NULL;
	for (size_t i = 0; i + 1 < c->t.n && !val; i += 2)
		if (c->t.v[i].kind == T_STR && c->t.v[i].s.n == 5 && !memcmp(c->t.v[i].s.p, "calib", 5))
			val = &c->t.v[i + 1];
	if (!val) {
		tok_push(c, T_STR, R_OTHER, 0, "calib", 5);
		tok_push(c, T_STR, R_OTHER, 0, "", 0);
		val = &c->t.v[c->t.n - 1];
	}
	if (val->kind != T_STR)
		return;
	uint64_t v[5];
	for (int k = 0; k < 5; k++)
		v[k] = chance(50) ? interesting(below(20000)) : below(20000);
	static const char *const ms[] = {"9.5", "nan", "-inf", "1e308", "-0"};
	char *s = xasprintf("emulated=%" PRIu64 " stepped=%" PRIu64 " emulated+stepped=%" PRIu64 " args=%" PRIu64
			    " calls=%" PRIu64 " ms=%s",
			    v[0], v[1], v[2], v[3], v[4], ms[below(5)]);
	val->s.n = 0;
	buf_cstr(&val->s, s);
	free(s);
}

/* Event payloads: bytes flipped, a memory op's u16 count rewritten, the
 * length changed (with or without the declared length following). */
static void mutate_payload(struct model *m)
{
	struct chunk *c = pick_chunk(m, CT_CHUNK_EVENTS);
	struct tok *t = pick_tok(c, R_PAYLOAD, false);
	if (!t)
		return;
	size_t i = (size_t)(t - c->t.v);
	switch (below(4)) {
	case 0:
		for (int k = below(4); k >= 0 && t->s.n; k--)
			t->s.p[below(t->s.n)] = (uint8_t)rnd();
		break;
	case 1:
		if (t->s.n >= 2) {
			uint16_t v = (uint16_t)interesting(0);
			memcpy(t->s.p + below(t->s.n - 1), &v, 2);
		}
		break;
	case 2: {
		size_t want = chance(50) ? below(t->s.n + 1) : t->s.n + below(64);
		buf_reserve(&t->s, want > t->s.n ? want - t->s.n : 0);
		for (size_t k = t->s.n; k < want; k++)
			t->s.p[k] = (uint8_t)rnd();
		t->s.n = want;
		if (i && c->t.v[i - 1].role == R_PLEN && chance(90))
			c->t.v[i - 1].v = want;
		break;
	}
	default:
		if (i && c->t.v[i - 1].role == R_PLEN)
			c->t.v[i - 1].v = interesting(c->t.v[i - 1].v);
	}
}

/* The token span of event number K of an EVENTS chunk: [from, to). */
static bool event_span(const struct chunk *c, size_t k, size_t *from, size_t *to)
{
	size_t seen = 0;
	for (size_t i = 0; i < c->t.n; i++) {
		if (c->t.v[i].role != R_HEAD)
			continue;
		if (seen++ == k) {
			size_t j = i + 1;
			while (j < c->t.n && c->t.v[j].role != R_HEAD)
				j++;
			*from = i;
			*to = j;
			return true;
		}
	}
	return false;
}

static void mutate_events(struct model *m)
{
	struct chunk *c = pick_chunk(m, CT_CHUNK_EVENTS);
	if (!c || !c->count)
		return;
	size_t from, to, idx = below(c->count);
	if (!event_span(c, idx, &from, &to))
		return;
	switch (below(9)) {
	case 8: { /* it swaps places with the next event (a SPILL hit after another event of its
		     thread, or before the entry it completes) */
		size_t nfrom, nto;
		if (!event_span(c, idx + 1, &nfrom, &nto) || nfrom != to)
			break;
		size_t a = to - from, b = nto - to;
		struct tok *tmp = xmalloc((a + b) * sizeof(*tmp));
		memcpy(tmp, &c->t.v[to], b * sizeof(*tmp));
		memcpy(tmp + b, &c->t.v[from], a * sizeof(*tmp));
		memcpy(&c->t.v[from], tmp, (a + b) * sizeof(*tmp));
		free(tmp);
		break;
	}
	case 6: /* on the alternate signal stack (a handler): it and the next few */
		for (size_t k = 1 + below(4); k > 0 && from < c->t.n; k--) {
			if (c->t.v[from].v & 0x14)
				break; /* a loss or process record */
			c->t.v[from].v |= 0x08;
			size_t fl = from + 1;
			while (fl < to && c->t.v[fl].role != R_FLAGS)
				fl++;
			if (fl < to) {
				c->t.v[fl].v |= 0x40;
			} else { /* the flags come last */
				struct tok f = {T_UVAR, R_FLAGS, 0x40, {0}};
				CT_VEC_GROW(c->t, c->t.n + 1);
				memmove(&c->t.v[to + 1], &c->t.v[to], (c->t.n - to) * sizeof(struct tok));
				c->t.v[to++] = f;
				c->t.n++;
			}
			for (from = to++; to < c->t.n && c->t.v[to].role != R_HEAD;)
				to++;
		}
		break;
	case 7: { /* the SP moves to another stack here (a coroutine), and maybe back later */
		static const int64_t jumps[] = {4097, 8192, 65536, 65537, (1 << 20) + 1, 1 << 24};
		int64_t d = jumps[below(6)] * (chance(50) ? 1 : -1);
		size_t bfrom, bto;
		for (size_t k = from; k < to; k++)
			if (c->t.v[k].role == R_KEY) {
				c->t.v[k].v += (uint64_t)d;
				break;
			}
		if (chance(60) && event_span(c, below(c->count), &bfrom, &bto) && bfrom > from)
			for (size_t k = bfrom; k < bto; k++)
				if (c->t.v[k].role == R_KEY) {
					c->t.v[k].v -= (uint64_t)d;
					break;
				}
		break;
	}
	case 5: { /* a process record before it: a fork, exec or exit of its thread or another */
		uint64_t pid = 0, tid = 0;
		for (size_t k = from; k < to; k++)
			if (c->t.v[k].role == R_OTHER && c->t.v[k].kind == T_UVAR) {
				pid = tid;
				tid = c->t.v[k].v;
			}
		struct tok pr[6] = {{T_U8, R_HEAD, 0x10, {0}}, {T_UVAR, R_KIND, 1 + below(chance(90) ? 4 : 9), {0}},
				    {T_SVAR, R_TS, below(1000), {0}}, {T_UVAR, R_OTHER, chance(70) ? pid : below(10), {0}},
				    {T_UVAR, R_OTHER, chance(70) ? tid : below(10), {0}},
				    {T_UVAR, R_OTHER, chance(50) ? tid + 1 : below(10), {0}}};
		CT_VEC_GROW(c->t, c->t.n + 6);
		memmove(&c->t.v[from + 6], &c->t.v[from], (c->t.n - from) * sizeof(struct tok));
		memcpy(&c->t.v[from], pr, sizeof(pr));
		c->t.n += 6;
		c->count++;
		break;
	}
	case 0: { /* duplicate it (the same frame entered twice, a RET twice) */
		size_t n = to - from;
		CT_VEC_GROW(c->t, c->t.n + n);
		memmove(&c->t.v[to + n], &c->t.v[to], (c->t.n - to) * sizeof(struct tok));
		for (size_t k = 0; k < n; k++) {
			struct tok x = c->t.v[from + k];
			struct tok d = {x.kind, x.role, x.v, {0}};
			buf_put(&d.s, x.s.p, x.s.n);
			c->t.v[to + k] = d;
		}
		c->t.n += n;
		c->count++;
		break;
	}
	case 1: /* drop it */
		for (size_t k = from; k < to; k++)
			buf_free(&c->t.v[k].s);
		memmove(&c->t.v[from], &c->t.v[to], (c->t.n - to) * sizeof(struct tok));
		c->t.n -= to - from;
		c->count--;
		break;
	case 2: /* a loss record before it */
	{
		struct tok l[3] = {{T_U8, R_HEAD, 0x04, {0}}, {T_UVAR, R_COUNT, 1 + below(1000), {0}},
				   {T_SVAR, R_TS, below(1000), {0}}};
		CT_VEC_GROW(c->t, c->t.n + 3);
		memmove(&c->t.v[from + 3], &c->t.v[from], (c->t.n - from) * sizeof(struct tok));
		memcpy(&c->t.v[from], l, sizeof(l));
		c->t.n += 3;
		c->count++;
		break;
	}
	case 3: /* its head: other bits (the fields that follow no longer match) */
		c->t.v[from].v ^= 1u << below(8);
		break;
	default: /* its frame key: deeper, shallower, equal to a neighbour's */
		for (size_t k = from; k < to; k++)
			if (c->t.v[k].role == R_KEY)
				c->t.v[k].v = chance(50) ? (uint64_t)((int64_t)below(65) - 32) : interesting(c->t.v[k].v);
	}
}

static void mutate_chunks(struct model *m, const struct model *donor)
{
	if (!m->c.n)
		return;
	size_t i = below(m->c.n), j = below(m->c.n);
	switch (below(6)) {
	case 0: { /* duplicate */
		struct chunk d = chunk_copy(&m->c.v[i]);
		CT_VEC_PUSH(m->c, d);
		memmove(&m->c.v[j + 1], &m->c.v[j], (m->c.n - 1 - j) * sizeof(struct chunk));
		m->c.v[j] = d;
		break;
	}
	case 1: /* drop */
		chunk_free(&m->c.v[i]);
		memmove(&m->c.v[i], &m->c.v[i + 1], (m->c.n - i - 1) * sizeof(struct chunk));
		m->c.n--;
		break;
	case 2: { /* swap */
		struct chunk x = m->c.v[i];
		m->c.v[i] = m->c.v[j];
		m->c.v[j] = x;
		break;
	}
	case 3: /* the header's count */
		m->c.v[i].count = (uint32_t)interesting(m->c.v[i].count);
		break;
	case 4: /* a chunk of another seed */
		if (donor && donor->c.n) {
			struct chunk d = chunk_copy(&donor->c.v[below(donor->c.n)]);
			CT_VEC_PUSH(m->c, d);
			memmove(&m->c.v[j + 1], &m->c.v[j], (m->c.n - 1 - j) * sizeof(struct chunk));
			m->c.v[j] = d;
		}
		break;
	default: /* now and then, a checksum that does not match */
		m->c.v[i].bad_crc = chance(30);
	}
}

static void mutate(struct model *m, const struct model *donor)
{
	for (int k = 1 + (int)below(4); k > 0; k--) {
		switch (below(20)) {
		case 0: case 1: case 2: case 3: mutate_number(m); break;
		case 4: case 5: mutate_typeref(m); break;
		case 6: case 7: mutate_type(m); break;
		case 8: grow_struct(m); break;
		case 9:
			if (chance(50))
				mutate_string(m);
			else
				mutate_calib(m);
			break;
		case 10: case 11: case 12: mutate_payload(m); break;
		case 13: case 14: case 15: mutate_events(m); break;
		case 16: mutate_chunks(m, donor); break;
		case 17: { /* a site of another kind (a SPILL site where an entry was, ...) */
			struct tok *t = pick_tok(pick_chunk(m, CT_CHUNK_SITES), R_KIND, true);
			if (t)
				set_num(t, chance(50) ? CT_SITE_SPILL : below(CT_SITE_NKINDS + 1));
			break;
		}
		default: { /* a number anywhere, tables and events alike */
			struct chunk *c = pick_chunk(m, -1);
			struct tok *t = pick_tok(c, -1, true);
			if (t)
				set_num(t, interesting(t->v));
		}
		}
	}
}

/* ---------------------------------------------------------------- checks */

static const char *current_reader = "-";
static const char *save_dir;
static uint64_t file_no;

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_records: FINDING in %s (file %llu): %s\n", current_reader, (unsigned long long)file_no,
		what);
	abort();
}

/* A minimal JSON syntax check (RFC 8259), enough to catch broken escaping
 * or structure in what the JSON writers produce. */
struct jp {
	const char *p, *end;
	int depth;
};

static void ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r'))
		j->p++;
}

static bool jvalue(struct jp *j);

static bool jstring(struct jp *j)
{
	if (j->p >= j->end || *j->p != '"')
		return false;
	for (j->p++; j->p < j->end; j->p++) {
		unsigned char c = (unsigned char)*j->p;
		if (c == '"') {
			j->p++;
			return true;
		}
		if (c < 0x20)
			return false;
		if (c == '\\') {
			if (++j->p >= j->end)
				return false;
			if (*j->p == 'u') {
				for (int k = 0; k < 4; k++)
					if (++j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p))
						return false;
			} else if (!strchr("\"\\/bfnrt", *j->p)) {
				return false;
			}
		}
	}
	return false;
}

static bool jvalue(struct jp *j)
{
	if (++j->depth > 200)
		return false;
	ws(j);
	if (j->p >= j->end)
		return false;
	bool ok = true;
	char c = *j->p;
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		j->p++;
		ws(j);
		if (j->p < j->end && *j->p == close) {
			j->p++;
		} else {
			for (;;) {
				if (c == '{') {
					ws(j);
					if (!jstring(j))
						return false;
					ws(j);
					if (j->p >= j->end || *j->p++ != ':')
						return false;
				}
				if (!jvalue(j))
					return false;
				ws(j);
				if (j->p >= j->end)
					return false;
				if (*j->p == ',') {
					j->p++;
					continue;
				}
				if (*j->p++ != close)
					return false;
				break;
			}
		}
	} else if (c == '"') {
		ok = jstring(j);
	} else if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "null", 4)) {
		j->p += 4;
	} else if (!strncmp(j->p, "false", 5)) {
		j->p += 5;
	} else {
		const char *s = j->p;
		if (j->p < j->end && *j->p == '-')
			j->p++;
		while (j->p < j->end && strchr("0123456789.eE+-", *j->p))
			j->p++;
		ok = j->p > s && (j->p - s > 1 || s[0] != '-');
	}
	j->depth--;
	return ok;
}

static void check_json(const char *p, size_t n, bool lines)
{
	struct jp j = {p, p + n, 0};
	while (ws(&j), j.p < j.end) {
		if (!jvalue(&j))
			fail("malformed JSON");
		if (!lines)
			break;
	}
	ws(&j);
	if (j.p != j.end)
		fail("trailing bytes after the JSON value");
}

/* -------------------------------------------------------------- readers */

struct sink {
	struct ct_buf b;
	size_t limit;
	bool keep;
};

static ssize_t sink_write(void *cookie, const char *p, size_t n)
{
	struct sink *s = cookie;
	if (s->b.n + n > s->limit)
		fail("output out of proportion to the file");
	if (s->keep)
		buf_put(&s->b, p, n);
	else
		s->b.n += n;
	return (ssize_t)n;
}

static FILE *sink_open(struct sink *s, size_t limit, bool keep)
{
	memset(s, 0, sizeof(*s));
	s->limit = limit;
	s->keep = keep;
	cookie_io_functions_t io = {NULL, sink_write, NULL, NULL};
	return fopencookie(s, "w", io);
}

static int otlp_request(void *ctx, const uint8_t *body, size_t n, uint64_t nspans)
{
	(void)nspans;
	struct sink *s = ctx;
	sink_write(s, (const char *)body, n);
	check_json((const char *)body, n, true);
	return 0;
}

enum reader {
	RD_TEXT, RD_MERGED, RD_FILTERED, RD_JSON, RD_YAML, RD_REPORT, RD_REPORT_JSON, RD_DIFF, RD_CHROME, RD_FOLDED,
	RD_SVG, RD_OTLP, RD_INFO, RD_LIVE, NREADERS
};
static const char *const reader_names[NREADERS] = {
	"replay", "replay --merge", "replay -D 3 -t 1 --since 1", "replay --format=json", "replay --format=yaml",
	"report --histogram '*'", "report --format=json", "report --diff", "dump --chrome", "dump --folded",
	"dump --svg", "dump --otlp", "info", "live",
};
static uint64_t reader_files[NREADERS], reader_opened[NREADERS], reader_cpu_ns[NREADERS];

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void run_live(struct ct_trace *t, FILE *out)
{
	struct ct_render_opts ro = {out, false, true, NULL};
	struct ct_event_iter it;
	ct_iter_init(&it, t);
	it.follow = true;
	struct ct_tree_live *l = ct_tree_live_new(t, &ro);
	struct ct_rec_event ev;
	uint64_t last = 0;
	for (int rounds = 0; rounds < 2; rounds++) /* at the end, a live view polls again */
		while (ct_iter_next(&it, &ev)) {
			ct_tree_live_event(l, &ev);
			if (ev.ts > last)
				last = ev.ts;
		}
	ct_tree_live_finish(l, last);
	ct_iter_free(&it);
}

static void run_reader(enum reader r, const char *path, size_t file_size)
{
	current_reader = reader_names[r];
	struct ct_trace t;
	if (ct_trace_open(&t, path))
		return; /* refused with a message: fine */
	reader_opened[r]++;
	/* a generous bound that still catches quadratic output */
	size_t limit = (16u << 20) + 400 * file_size;
	bool keep = r == RD_JSON || r == RD_CHROME || r == RD_REPORT_JSON;
	struct sink s;
	FILE *out = sink_open(&s, limit, keep);
	struct ct_render_opts ro = {out, true, false, NULL};
	struct ct_filter_opts fo = {0};
	const char *all[] = {"*"};
	switch (r) {
	case RD_TEXT:
		ct_render_tree(&t, &ro);
		break;
	case RD_MERGED:
		ro.merge = true;
		ct_render_tree(&t, &ro);
		break;
	case RD_FILTERED:
		fo.max_depth = 3;
		fo.min_dur = 1;
		fo.has_since = true;
		fo.since = 1;
		ro.filter = &fo;
		ct_render_tree(&t, &ro);
		break;
	case RD_JSON:
		ct_render_json(&t, &ro);
		break;
	case RD_YAML:
		ct_render_yaml(&t, &ro);
		break;
	case RD_REPORT:
	case RD_REPORT_JSON: {
		struct ct_report_opts o = {out, NULL, CT_SORT_TOTAL, r == RD_REPORT_JSON, all, 1};
		ct_render_report(&t, &o);
		break;
	}
	case RD_DIFF: {
		struct ct_trace t2;
		if (!ct_trace_open(&t2, path)) {
			struct ct_report_opts o = {out, NULL, CT_SORT_SELF, false, NULL, 0};
			ct_render_report_diff(&t, &t2, &o);
			o.json = true;
			ct_render_report_diff(&t, &t2, &o);
			ct_trace_close(&t2);
		}
		break;
	}
	case RD_CHROME:
		ct_render_chrome(&t, &ro, true);
		break;
	case RD_FOLDED:
		ct_render_folded(&t, &ro);
		break;
	case RD_SVG:
		ct_render_svg(&t, &ro);
		break;
	case RD_OTLP: {
		struct sink os = {{0}, limit, false};
		struct ct_otlp_opts oo = {NULL, false, true, 0, 0, otlp_request, &os};
		uint64_t nspans = 0, lost = 0;
		ct_render_otlp(&t, &ro, &oo, &nspans, &lost);
		break;
	}
	case RD_LIVE:
		run_live(&t, out);
		break;
	default:
		break;
	}
	fflush(out);
	if (keep && s.b.n)
		check_json((const char *)s.b.p, s.b.n, r != RD_REPORT_JSON);
	fclose(out);
	buf_free(&s.b);
	ct_trace_close(&t);
}

static void run_info(const char *path)
{
	current_reader = reader_names[RD_INFO];
	struct ct_trace t;
	if (!ct_trace_open(&t, path)) {
		reader_opened[RD_INFO]++;
		ct_trace_close(&t);
	}
	char *argv[] = {(char *)"info", (char *)path, NULL};
	cmd_info(2, argv); /* its stdout goes to /dev/null */
	fflush(stdout);
}

/* Every reader on one file (held in a memfd, read by path). */
static void run_all(const uint8_t *data, size_t n)
{
	int fd = memfd_create("record", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, n) != (ssize_t)n) {
		perror("memfd");
		exit(2);
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (int r = 0; r < NREADERS; r++) {
		uint64_t c0 = cpu_ns();
		if (r == RD_INFO)
			run_info(path);
		else
			run_reader((enum reader)r, path, n);
		reader_files[r]++;
		reader_cpu_ns[r] += cpu_ns() - c0;
	}
	current_reader = "-";
	close(fd);
}

/* ------------------------------------------------------------- drivers */

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct ct_buf b = {0};
	uint8_t tmp[65536];
	size_t k;
	while ((k = fread(tmp, 1, sizeof(tmp), f)) > 0)
		buf_put(&b, tmp, k);
	fclose(f);
	*n = b.n;
	return b.p;
}

static void quiet_stdout(void)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 1);
		close(null);
	}
}

#ifdef CT_LIBFUZZER
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	quiet_stdout();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	file_no++;
	run_all(data, size);
	return 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed)
{
	rng_state = seed;
	struct model m;
	if (!model_parse(&m, data, size) || chance(5)) {
		model_free(&m);
		return LLVMFuzzerMutate(data, size, max);
	}
	mutate(&m, NULL);
	struct ct_buf out = {0};
	model_encode(&m, &out);
	model_free(&m);
	size_t n = out.n <= max ? out.n : max;
	memcpy(data, out.p, n);
	buf_free(&out);
	return n;
}
#else
static void on_alarm(int sig)
{
	(void)sig;
	fail("took too long (exponential work?)");
}

/* The file a finding came from: the crafted one kept on disk, or a regression file. */
static const char *current_file = "build/fuzz-current.data";

static void on_abort(int sig)
{
	(void)sig;
	static const char msg[] = "fuzz_records: the file that did it is ";
	if (write(2, msg, sizeof(msg) - 1) < 0 || write(2, current_file, strlen(current_file)) < 0 ||
	    write(2, "\n", 1) < 0) {
	}
	signal(SIGABRT, SIG_DFL);
}

/* A sanitizer's report ends the run with abort(), not _exit(1), so that
 * on_abort names the file (UBSan and ASan _exit by default: a CI run once
 * failed on an overflow with no file named, and no "FINDING" line). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:abort_on_error=1:print_stacktrace=1";
}
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "abort_on_error=1";
}

/* Leaks are looked for every LEAK_EVERY files, not only at exit, so that
 * one names its file: the files since the last look are kept and run
 * again one by one (a reconstruction that dropped a stack with open
 * frames leaked them).  A look takes ~50 ms here: not after every file. */
#define LEAK_EVERY 64
static CT_VEC(struct ct_buf) since_look;

static bool leaked(void)
{
#ifdef __SANITIZE_ADDRESS__
	return __lsan_do_recoverable_leak_check() != 0;
#else
	return false;
#endif
}

/* Look now at the files kept since the last look. */
static void leak_look(void)
{
#ifdef __SANITIZE_ADDRESS__
	if (!since_look.n)
		return;
	if (leaked()) {
		fprintf(stderr, "fuzz_records: a reader leaked memory in the last %zu files; running them one by one\n",
			since_look.n);
		for (size_t i = 0; i < since_look.n; i++) {
			run_all(since_look.v[i].p, since_look.v[i].n);
			if (!leaked())
				continue;
			FILE *f = fopen("build/fuzz-leak.data", "wb");
			if (f) {
				fwrite(since_look.v[i].p, 1, since_look.v[i].n, f);
				fclose(f);
			}
			fprintf(stderr, "fuzz_records: the file that leaked is build/fuzz-leak.data (a copy of %s)\n",
				since_look.n == 1 ? current_file : "one crafted file");
			exit(1);
		}
		fprintf(stderr, "fuzz_records: a leak, but no one file of the last %zu leaks alone\n", since_look.n);
		exit(1);
	}
	for (size_t i = 0; i < since_look.n; i++)
		buf_free(&since_look.v[i]);
	since_look.n = 0;
#endif
}

/* A file went through every reader: keep it, and look every LEAK_EVERY. */
static void leak_check(const uint8_t *p, size_t n)
{
#ifdef __SANITIZE_ADDRESS__
	struct ct_buf b = {0};
	buf_put(&b, p, n);
	CT_VEC_PUSH(since_look, b);
	if (since_look.n >= LEAK_EVERY)
		leak_look();
#else
	(void)p;
	(void)n;
#endif
}

static int regress_file(const char *path)
{
	size_t n;
	uint8_t *p = slurp(path, &n);
	if (!p) {
		fprintf(stderr, "fuzz_records: %s: %s\n", path, strerror(errno));
		return -1;
	}
	static char shown[4096];
	snprintf(shown, sizeof(shown), "%s", path);
	current_file = shown;
	alarm(20);
	run_all(p, n);
	alarm(0);
	leak_check(p, n);
	leak_look(); /* (few files: each is named) */
	free(p);
	file_no++;
	return 0;
}

/* Files that once crashed a reader, each through every reader as it is. */
static int regress(int argc, char **argv)
{
	quiet_stdout();
	signal(SIGALRM, on_alarm);
	signal(SIGABRT, on_abort);
	for (int i = 0; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) || !S_ISDIR(st.st_mode)) {
			if (regress_file(argv[i]))
				return 2;
			continue;
		}
		struct dirent **names;
		int k = scandir(argv[i], &names, NULL, alphasort);
		if (k < 0) {
			fprintf(stderr, "fuzz_records: %s: %s\n", argv[i], strerror(errno));
			return 2;
		}
		int bad = 0;
		for (int j = 0; j < k; j++) {
			if (!bad && names[j]->d_name[0] != '.') {
				char *path = xasprintf("%s/%s", argv[i], names[j]->d_name);
				bad = regress_file(path);
				free(path);
			}
			free(names[j]);
		}
		free(names);
		if (bad)
			return 2;
	}
	fprintf(stderr, "fuzz_records: %llu regression files, each through %d readers; no findings\n",
		(unsigned long long)file_no, NREADERS);
	return 0;
}

/* What `calltrace list BINARY` reads, under the sanitizers: the target,
 * then the whole plan of `list -v` (call sites, exits, landing pads,
 * argument locations), its output thrown away. */
static int read_targets(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		struct ct_target t;
		if (ct_target_open(&t, argv[i])) {
			fprintf(stderr, "fuzz_records: %s: %s\n", argv[i], ct_error());
			continue;
		}
		size_t n = t.nfuncs;
		ct_target_close(&t);
		fflush(stdout);
		int saved = dup(1), null = open("/dev/null", O_WRONLY);
		if (saved < 0 || null < 0 || dup2(null, 1) < 0) {
			fprintf(stderr, "fuzz_records: cannot send list's output to /dev/null\n");
			return 1;
		}
		char *list_argv[] = {"list", "-v", argv[i], NULL};
		optind = 0;
		int rc = cmd_list(3, list_argv);
		fflush(stdout);
		dup2(saved, 1);
		close(saved);
		close(null);
		fprintf(stderr, "fuzz_records: %s: %zu functions%s\n", argv[i], n, rc ? " (list failed)" : "");
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--targets"))
		return read_targets(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--regress"))
		return regress(argc - 2, argv + 2);
	uint64_t seed = 1, files = 2000;
	double seconds = 0;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--files") && i + 1 < argc)
			files = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = strtod(argv[++i], NULL);
		else if (!strcmp(argv[i], "--save") && i + 1 < argc)
			save_dir = argv[++i];
		else {
			fprintf(stderr, "usage: fuzz_records [--seed N] [--files N] [--seconds S] [--save DIR] SEED_FILE...\n");
			return 2;
		}
	}
	CT_VEC(struct model) seeds = {0};
	for (; i < argc; i++) {
		size_t n;
		uint8_t *p = slurp(argv[i], &n);
		struct model m;
		if (!p || !model_parse(&m, p, n)) {
			fprintf(stderr, "fuzz_records: %s is not a record file\n", argv[i]);
			return 2;
		}
		free(p);
		CT_VEC_PUSH(seeds, m);
	}
	if (!seeds.n) {
		fprintf(stderr, "fuzz_records: give seed record files\n");
		return 2;
	}
	quiet_stdout();
	signal(SIGALRM, on_alarm);
	signal(SIGABRT, on_abort);
	rng_state = seed;
	uint64_t t0 = now_mono_ns();
	struct ct_buf bytes = {0};
	for (file_no = 0; file_no < files; file_no++) {
		if (seconds > 0 && (now_mono_ns() - t0) / 1e9 > seconds)
			break;
		struct model m = {0};
		const struct model *base = &seeds.v[below(seeds.n)];
		memcpy(m.hdr, base->hdr, 32);
		for (size_t k = 0; k < base->c.n; k++) {
			struct chunk c = chunk_copy(&base->c.v[k]);
			CT_VEC_PUSH(m.c, c);
		}
		mutate(&m, &seeds.v[below(seeds.n)]);
		model_encode(&m, &bytes);
		model_free(&m);
		/* the input of a crash stays on disk */
		FILE *cur = fopen("build/fuzz-current.data", "wb");
		if (cur) {
			fwrite(bytes.p, 1, bytes.n, cur);
			fclose(cur);
		}
		alarm(20);
		run_all(bytes.p, bytes.n);
		alarm(0);
		leak_check(bytes.p, bytes.n);
		if (save_dir && file_no < 50) {
			char *p = xasprintf("%s/crafted-%03llu.data", save_dir, (unsigned long long)file_no);
			FILE *f = fopen(p, "wb");
			if (f) {
				fwrite(bytes.p, 1, bytes.n, f);
				fclose(f);
			}
			free(p);
		}
	}
	buf_free(&bytes);
	leak_look();
	double secs = (now_mono_ns() - t0) / 1e9;
	fprintf(stderr, "fuzz_records: seed %llu, %llu crafted files in %.1f s, each through %d readers; no findings\n",
		(unsigned long long)seed, (unsigned long long)file_no, secs, NREADERS);
	for (int r = 0; r < NREADERS; r++)
		fprintf(stderr, "fuzz_records:   %-28s %llu files, %llu opened (the rest refused as damaged), %.1f s CPU\n",
			reader_names[r], (unsigned long long)reader_files[r], (unsigned long long)reader_opened[r],
			reader_cpu_ns[r] / 1e9);
	for (size_t k = 0; k < seeds.n; k++)
		model_free(&seeds.v[k]);
	CT_VEC_FREE(seeds);
	return 0;
}
#endif
