/* The payload codec (format/payload.c): a capture built for a signature
 * (plan/fetch.c), run over registers and memory of this process the way the
 * BPF program runs it (fetchsim.h), compacted for the
 * file, expanded back and read as snapshots — the bytes must survive the
 * round trip exactly. */
#include "unit.h"
#include "fetchsim.h"

#include "plan/fetch.h"
#include "util/util.h"

#include <stdlib.h>

/* Go: func f(s string, xs []int, p *int, n int) under the register ABI. */
enum { T_INT = 1, T_STRING, T_SLICE, T_PTR, T_STRINGS, NTYPES };
static struct ct_type types[NTYPES] = {
	[0] = {.kind = CT_K_UNKNOWN, .name = (char *)"?"},
	[T_INT] = {.kind = CT_K_INT, .name = (char *)"int", .size = 8},
	[T_STRING] = {.kind = CT_K_STRING, .name = (char *)"string", .size = 16},
	[T_SLICE] = {.kind = CT_K_SLICE, .name = (char *)"[]int", .size = 24, .elem = T_INT},
	[T_PTR] = {.kind = CT_K_PTR, .name = (char *)"*int", .size = 8, .elem = T_INT},
	[T_STRINGS] = {.kind = CT_K_SLICE, .name = (char *)"[]string", .size = 24, .elem = T_STRING},
};
static const struct ct_typetab typetab = {types, NTYPES};

/* Register pieces of one value, 8 bytes each, in order. */
static struct ct_loc in_regs(int n, const uint8_t *regs)
{
	struct ct_loc l = {xcalloc((size_t)n, sizeof(struct ct_piece)), (uint32_t)n};
	for (int i = 0; i < n; i++)
		l.pieces[i] = (struct ct_piece){.kind = CT_PIECE_REG, .reg = regs[i], .size = 8, .value_off = 8u * i};
	return l;
}

struct capture {
	struct ct_site_fetch f;
	struct ct_sig sig;
	struct ct_loc locs[4];
};

static void build(struct capture *c)
{
	static const uint8_t s_regs[] = {CT_RAX, CT_RBX}, xs_regs[] = {CT_RCX, CT_RDI, CT_RSI},
			     p_regs[] = {CT_R8}, n_regs[] = {CT_R9};
	static struct ct_param params[4] = {
		{.name = (char *)"s", .type = T_STRING},
		{.name = (char *)"xs", .type = T_SLICE},
		{.name = (char *)"p", .type = T_PTR},
		{.name = (char *)"n", .type = T_INT},
	};
	memset(c, 0, sizeof(*c));
	c->sig.params = params;
	c->sig.n = 4;
	c->locs[0] = in_regs(2, s_regs);
	c->locs[1] = in_regs(3, xs_regs);
	c->locs[2] = in_regs(1, p_regs);
	c->locs[3] = in_regs(1, n_regs);
	struct ct_fetch_opts o = {.max_string = 64, .max_items = 8, .max_depth = 3};
	ct_fetch_build(&typetab, &c->sig, c->locs, false, &o, &c->f);
}

/* The capture built and run over PR: RAW is the payload BPF would send. */
static void build_and_run(struct capture *c, const struct sim_proc *pr, uint8_t *raw)
{
	build(c);
	memset(raw, 0, CT_MAX_PAYLOAD);
	sim_run_fetch(pr, &c->f.prog, raw);
}

static void capture_free(struct capture *c)
{
	for (int i = 0; i < 4; i++)
		free(c->locs[i].pieces);
	ct_site_fetch_free(&c->f);
}

TEST(fetch_codec_round_trip)
{
	static const char text[] = "hello, payload";
	static int64_t items[3] = {7, -8, 9};
	static int64_t target = 42;
	struct sim_proc pr = {0};
	sim_map(&pr, (uintptr_t)text, text, sizeof(text));
	sim_map(&pr, (uintptr_t)items, items, sizeof(items));
	sim_map(&pr, (uintptr_t)&target, &target, sizeof(target));
	pr.regs[CT_RAX] = (uintptr_t)text;
	pr.regs[CT_RBX] = sizeof(text) - 1;
	pr.regs[CT_RCX] = (uintptr_t)items;
	pr.regs[CT_RDI] = 3;
	pr.regs[CT_RSI] = 5;
	pr.regs[CT_R8] = (uintptr_t)&target;
	pr.regs[CT_R9] = 12345;

	struct capture c;
	uint8_t raw[CT_MAX_PAYLOAD];
	build_and_run(&c, &pr, raw);
	CHECK_EQ_U(c.f.nvals, 4);
	/* 7 words, the string's bytes, the slice's items (a pointer is shown
	 * as an address, not followed) */
	CHECK_EQ_U(c.f.prog.nops, 7 + 2);
	CHECK(c.f.prog.size <= CT_MAX_PAYLOAD);

	/* compact: the words, then per memory op a u16 count and the bytes */
	uint8_t compact[CT_MAX_PAYLOAD];
	size_t clen = ct_fetch_compact(&c.f.prog, raw, c.f.prog.size, compact, sizeof(compact));
	CHECK_EQ_U(clen, 7 * 8 + (2 + 14) + (2 + 24));

	/* expand gives back the payload BPF wrote, byte for byte */
	uint8_t back[CT_MAX_PAYLOAD];
	CHECK_EQ_U(ct_fetch_expand(&c.f.prog, compact, clen, back, sizeof(back)), c.f.prog.size);
	CHECK(!memcmp(back, raw, c.f.prog.size));

	/* snapshots: what was at which address */
	struct ct_snapshot snaps[CT_MAX_OPS];
	size_t ns = ct_fetch_snapshots(&c.f.prog, back, snaps, CT_MAX_OPS);
	CHECK_EQ_U(ns, 2);
	int seen = 0;
	for (size_t i = 0; i < ns; i++) {
		CHECK(snaps[i].bytes != NULL);
		const void *real = (const void *)(uintptr_t)snaps[i].addr;
		CHECK(!memcmp(snaps[i].bytes, real, snaps[i].len));
		int which = real == text ? 1 : real == items ? 2 : 0;
		static const uint32_t len[] = {[1] = 14, [2] = 24};
		CHECK(which != 0);
		CHECK_EQ_U(snaps[i].len, len[which]);
		seen |= which;
	}
	CHECK_EQ_I(seen, 3);
	capture_free(&c);
}

/* A read that failed (nil pointer, unmapped page) is kept as failed, in two
 * bytes, and reads back as a snapshot without bytes. */
TEST(fetch_codec_failed_read)
{
	struct sim_proc pr = {0};
	pr.regs[CT_RBX] = 3; /* a string of 3 bytes at address 0 */
	pr.regs[CT_RDI] = 2; /* a slice of 2 items at address 0 */
	struct capture c;
	uint8_t raw[CT_MAX_PAYLOAD], compact[CT_MAX_PAYLOAD], back[CT_MAX_PAYLOAD];
	build_and_run(&c, &pr, raw);
	size_t clen = ct_fetch_compact(&c.f.prog, raw, c.f.prog.size, compact, sizeof(compact));
	CHECK_EQ_U(clen, 7 * 8 + 2 * 2);
	CHECK_EQ_U(ct_fetch_expand(&c.f.prog, compact, clen, back, sizeof(back)), c.f.prog.size);
	CHECK(!memcmp(back, raw, c.f.prog.size));
	struct ct_snapshot snaps[CT_MAX_OPS];
	size_t ns = ct_fetch_snapshots(&c.f.prog, back, snaps, CT_MAX_OPS);
	CHECK_EQ_U(ns, 2);
	for (size_t i = 0; i < ns; i++)
		CHECK(snaps[i].bytes == NULL && snaps[i].len == 0);
	capture_free(&c);
}

/* The payload is a scratch the BPF side reuses from hit to hit: a []string
 * of one item after one of three follows no pointer an earlier hit left in
 * the items past its length (a stale or garbage address, a page fault each
 * in the kernel): what the read did not get reads as zero. */
TEST(fetch_items_past_the_length_follow_nothing_stale)
{
	static const char a[] = "alpha", b[] = "bravo!", c3[] = "charlie";
	static uint64_t three[6], one[2];
	three[0] = (uintptr_t)a, three[1] = 5, three[2] = (uintptr_t)b, three[3] = 6;
	three[4] = (uintptr_t)c3, three[5] = 7;
	one[0] = (uintptr_t)c3, one[1] = 7;
	static const uint8_t regs[] = {CT_RAX, CT_RBX, CT_RCX};
	struct ct_param param = {.name = (char *)"ss", .type = T_STRINGS};
	struct ct_sig sig = {.params = &param, .n = 1};
	struct ct_loc loc = in_regs(3, regs);
	struct ct_fetch_opts o = {.max_string = 64, .max_items = 4, .max_depth = 3};
	struct ct_site_fetch f;
	ct_fetch_build(&typetab, &sig, &loc, false, &o, &f);
	struct sim_proc pr = {0};
	sim_map(&pr, (uintptr_t)a, a, 5);
	sim_map(&pr, (uintptr_t)b, b, 6);
	sim_map(&pr, (uintptr_t)c3, c3, 7);
	sim_map(&pr, (uintptr_t)three, three, sizeof(three));
	sim_map(&pr, (uintptr_t)one, one, sizeof(one));
	uint8_t raw[CT_MAX_PAYLOAD];
	memset(raw, 0xa5, sizeof(raw));
	struct ct_snapshot snaps[CT_MAX_OPS];
	for (int hit = 0; hit < 2; hit++) {
		pr.regs[CT_RAX] = hit ? (uintptr_t)one : (uintptr_t)three;
		pr.regs[CT_RBX] = pr.regs[CT_RCX] = hit ? 1 : 3;
		sim_run_fetch(&pr, &f.prog, raw); /* the same scratch both times */
		size_t ns = ct_fetch_snapshots(&f.prog, raw, snaps, CT_MAX_OPS), bytes = 0;
		for (size_t i = 0; i < ns; i++)
			bytes += snaps[i].bytes ? snaps[i].len : 0;
		/* the items, then each string: 48 + 5 + 6 + 7, then 16 + 7 */
		CHECK_EQ_U(bytes, hit ? 16 + 7 : 48 + 18);
	}
	free(loc.pieces);
	ct_site_fetch_free(&f);
}

/* The file's bytes are not trusted: a compact payload cut short, or one
 * whose count exceeds what the op may copy, expands to nothing. */
TEST(fetch_codec_refuses_damaged_payloads)
{
	static const char text[] = "abc";
	struct sim_proc pr = {0};
	sim_map(&pr, (uintptr_t)text, text, sizeof(text));
	pr.regs[CT_RAX] = (uintptr_t)text;
	pr.regs[CT_RBX] = 3;
	struct capture c;
	uint8_t raw[CT_MAX_PAYLOAD], compact[CT_MAX_PAYLOAD], back[CT_MAX_PAYLOAD];
	build_and_run(&c, &pr, raw);
	size_t clen = ct_fetch_compact(&c.f.prog, raw, c.f.prog.size, compact, sizeof(compact));
	CHECK(clen > 8);
	for (size_t cut = 0; cut < clen; cut++)
		CHECK_EQ_U(ct_fetch_expand(&c.f.prog, compact, cut, back, sizeof(back)), 0);
	/* the string's count (right after the 7 words) made larger than its op */
	uint16_t big = 65;
	memcpy(compact + 7 * 8, &big, 2);
	CHECK_EQ_U(ct_fetch_expand(&c.f.prog, compact, clen, back, sizeof(back)), 0);
	/* compacting into too small a buffer stops at a whole op */
	CHECK_EQ_U(ct_fetch_compact(&c.f.prog, raw, c.f.prog.size, compact, 7 * 8 + 1), 7 * 8);
	capture_free(&c);
}
