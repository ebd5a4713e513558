/* Arguments passed in SSE registers (issue 17): where the straight line from
 * a function's entry stores them (ct_spill_walk in src/plan/sites.c), the
 * SPILL sites the planner gives the cg_floats fixtures (gcc and clang, -O0
 * and -O2: real code and DWARF), and how reconstruction merges a SPILL hit
 * into the call it completes, and only that one. */
#include "unit.h"

#include "plan/plan.h"
#include "plan/sites.h"
#include "reconstruct/reconstruct.h"
#include "target/target.h"
#include "util/util.h"

#include <stdlib.h>

static bool walk(const uint8_t *code, size_t len, uint64_t limit, struct ct_spill_need *needs, size_t n,
		 struct ct_spill_site *s)
{
	memset(s, 0, sizeof(*s));
	return ct_spill_walk(code, len, 0x1000, limit ? limit : 0x1000 + len, needs, n, NULL, NULL, s);
}

/* gcc -O0: push %rbp; mov %rsp,%rbp; movsd %xmm0,-8(%rbp); movss
 * %xmm1,-12(%rbp); mov %edi,-16(%rbp); pxor %xmm0,%xmm0; ret */
static const uint8_t o0_scale[] = {0x55, 0x48, 0x89, 0xe5, 0xf2, 0x0f, 0x11, 0x45, 0xf8, 0xf3, 0x0f, 0x11,
				   0x4d, 0xf4, 0x89, 0x7d, 0xf0, 0x66, 0x0f, 0xef, 0xc0, 0xc3};

TEST(spill_walk_o0_prologue)
{
	struct ct_spill_need needs[2] = {{0, 8, 0}, {1, 4, 0}};
	struct ct_spill_site s;
	CHECK(walk(o0_scale, sizeof(o0_scale), 0, needs, 2, &s));
	CHECK_EQ_U(s.addr, 0x1000 + 14); /* after both stores: mov %edi (single-stepped) */
	CHECK(!s.emulated);
	CHECK_EQ_I(s.sp_drop, 8);
	CHECK_EQ_I(needs[0].sp_off, -8);  /* RBP - 8 = SP - 8 */
	CHECK_EQ_I(needs[1].sp_off, -12);
	/* not if a branch target lies before that point (code there may run again) */
	CHECK(!walk(o0_scale, sizeof(o0_scale), 0x1000 + 9, needs, 2, &s));
	/* more than was stored (16 bytes of xmm1) is not met */
	struct ct_spill_need wide[1] = {{1, 16, 0}};
	CHECK(!walk(o0_scale, sizeof(o0_scale), 0, wide, 1, &s));
}

TEST(spill_walk_not_the_entry_value)
{
	/* pxor %xmm0,%xmm0; movsd %xmm0,-8(%rsp); ret: what is stored is not the argument */
	static const uint8_t clobbered[] = {0x66, 0x0f, 0xef, 0xc0, 0xf2, 0x0f, 0x11, 0x44, 0x24, 0xf8, 0xc3};
	struct ct_spill_need needs[1] = {{0, 8, 0}};
	struct ct_spill_site s;
	CHECK(!walk(clobbered, sizeof(clobbered), 0, needs, 1, &s));
	/* jmp +0 first: not on the straight line */
	static const uint8_t branch[] = {0xeb, 0x00, 0xf2, 0x0f, 0x11, 0x44, 0x24, 0xf8, 0xc3};
	CHECK(!walk(branch, sizeof(branch), 0, needs, 1, &s));
	/* lea -8(%rsp),%rax before the store: the slot could be written through RAX */
	static const uint8_t escapes[] = {0x48, 0x8d, 0x44, 0x24, 0xf8, 0xf2, 0x0f, 0x11, 0x44, 0x24, 0xf8, 0xc3};
	CHECK(!walk(escapes, sizeof(escapes), 0, needs, 1, &s));
}

TEST(spill_walk_through_a_register_to_an_emulated_site)
{
	/* movq %xmm0,%rax; mov %rax,-8(%rsp); movq $0,-16(%rsp); call +0; ret:
	 * the value goes through RAX; the call is emulated and close */
	static const uint8_t code[] = {0x66, 0x48, 0x0f, 0x7e, 0xc0, 0x48, 0x89, 0x44, 0x24, 0xf8, 0x48, 0xc7, 0x44,
				       0x24, 0xf0, 0x00, 0x00, 0x00, 0x00, 0xe8, 0x00, 0x00, 0x00, 0x00, 0xc3};
	struct ct_spill_need needs[1] = {{0, 8, 0}};
	struct ct_spill_site s;
	CHECK(walk(code, sizeof(code), 0, needs, 1, &s));
	CHECK_EQ_U(s.addr, 0x1000 + 19);
	CHECK(s.emulated);
	CHECK_EQ_I(needs[0].sp_off, -8);
	/* overwritten before the call: the probe goes before the overwrite */
	static const uint8_t over[] = {0xf2, 0x0f, 0x11, 0x44, 0x24, 0xf8, 0x48, 0xc7, 0x44, 0x24,
				       0xf8, 0x00, 0x00, 0x00, 0x00, 0xe8, 0x00, 0x00, 0x00, 0x00, 0xc3};
	CHECK(walk(over, sizeof(over), 0, needs, 1, &s));
	CHECK_EQ_U(s.addr, 0x1000 + 6);
	CHECK(!s.emulated);
}

/* ---- the planner on real binaries ---- */

static const struct ct_plan_site *spill_of(const struct ct_plan *p, const char *name, const struct ct_func **fn)
{
	for (size_t j = 0; j < p->funcs.n; j++)
		if (!strcmp(p->funcs.v[j].fn->name, name)) {
			*fn = p->funcs.v[j].fn;
			return p->funcs.v[j].spill_site == CT_NOSITE ? NULL : &p->sites.v[p->funcs.v[j].spill_site];
		}
	*fn = NULL;
	return NULL;
}

/* SP offset value I of a capture reads (its one piece), or 9999. */
static int32_t read_at(const struct ct_site_fetch *f, uint32_t i)
{
	if (i >= f->nvals || f->vals[i].npieces != 1)
		return 9999;
	for (uint32_t k = 0; k < f->prog.nops; k++)
		if (f->prog.ops[k].dst == f->vals[i].pieces[0].slot && f->prog.ops[k].code == CT_OP_STACK)
			return f->prog.ops[k].off;
	return 9999;
}

TEST(spill_sites_of_the_float_fixtures)
{
	static const char *variants[] = {"gcc-O0", "clang-O0", "gcc-O2", "clang-O2"};
	static const char *floats[] = {"scale", "mix", "norm", "fpair", "keep", "cmag"};
	for (int v = 0; v < 4; v++) {
		char name[64];
		snprintf(name, sizeof(name), "cgraph/%s/cg_floats", variants[v]);
		char *path = ct_fixture(name);
		CHECK(path);
		struct ct_target t;
		int rc = ct_target_open(&t, path);
		free(path);
		CHECK(rc == 0);
		struct ct_args_opts ao = {.enabled = true, .fetch = {64, 8, 3}};
		struct ct_selection sel = {.args = &ao};
		struct ct_plan p;
		CHECK(ct_plan_build(&p, &t, &sel) == 0);
		ct_plan_args(&p, &ao);
		bool o0 = v < 2;
		for (int k = 0; k < 6; k++) {
			const struct ct_func *fn;
			const struct ct_plan_site *s = spill_of(&p, floats[k], &fn);
			CHECK(fn);
			/* -O0 stores every argument; -O2 only keep's x, across its call */
			if ((s != NULL) != (o0 || !strcmp(floats[k], "keep")))
				unit_fail(__FILE__, __LINE__, "%s %s: spill site %s", variants[v], floats[k], s ? "planned" : "missing");
			CHECK(!s || (s->kind == CT_SITE_SPILL && s->addr > fn->entry && s->addr < fn->end));
		}
		const struct ct_func *fn;
		const struct ct_plan_site *s = spill_of(&p, o0 ? "scale" : "keep", &fn);
		CHECK(s);
		const struct ct_site_fetch *f = p.fetch[s - p.sites.v];
		CHECK(f && f->nvals == (o0 ? 3u : 2u));
		if (o0) {
			/* push %rbp; mov %rsp,%rbp; movsd %xmm0,-8(%rbp); movss %xmm1,-12(%rbp):
			 * x at CFA-24, y at CFA-28, where DWARF puts them (fbreg -24, -28) */
			CHECK_EQ_U(s->addr - fn->entry, 14);
			CHECK(s->flags & CT_SITEF_STEPPED);
			CHECK_EQ_I(s->key_adj, -8);
			CHECK_EQ_I(read_at(f, 0), -8);
			CHECK_EQ_I(read_at(f, 1), -12);
			CHECK(f->vals[2].flags & CT_VAL_NOLOC); /* k: read at the entry */
		} else {
			/* push %rbx; sub $16,%rsp; movsd %xmm0,8(%rsp); ... call printf */
			CHECK_EQ_U(s->addr - fn->entry, 24);
			CHECK(!(s->flags & CT_SITEF_STEPPED));
			CHECK_EQ_I(s->key_adj, -24);
			CHECK_EQ_I(read_at(f, 0), 8);
			CHECK(f->vals[1].flags & CT_VAL_NOLOC);
		}
		ct_plan_free(&p);
		ct_target_close(&t);
	}
}

/* ---- reconstruction ---- */

enum { FA, FB };
enum { S_A_ENT, S_A_RET, S_A_SPILL, S_B_ENT, S_B_RET, NSITES };
static const struct ct_file_site sites[NSITES] = {
	{S_A_ENT, 0x1000, FA, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_A_RET, 0x1010, FA, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_A_SPILL, 0x1008, FA, CT_SITE_SPILL, CT_NOFUNC, -16, UINT32_MAX, UINT32_MAX, 0},
	{S_B_ENT, 0x2000, FB, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_B_RET, 0x2010, FB, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
};

struct seen {
	char type;
	uint32_t func;
	uint8_t spill; /* first payload byte of the SPILL hit, 0 if none */
	uint32_t spill_site;
};
static CT_VEC(struct seen) got;

static void on_call(char type, const struct ct_call *c)
{
	struct seen s = {type, c->func, c->spill ? c->spill[0] : 0, c->spill_site};
	CT_VEC_PUSH(got, s);
}
static void seen_enter(void *ctx, const struct ct_call *c)
{
	(void)ctx;
	on_call('E', c);
}
static void seen_exit(void *ctx, const struct ct_call *c)
{
	(void)ctx;
	on_call('X', c);
}
static const struct ct_recon_ops ops = {seen_enter, seen_exit, NULL, NULL};

static void hit(struct ct_recon *r, uint64_t ts, uint32_t tid, uint64_t key, uint32_t site, uint8_t byte)
{
	struct ct_rec_event e = {0};
	e.ts = ts;
	e.key = key;
	e.pid = 100;
	e.tid = tid;
	e.site = site;
	e.kind = sites[site].kind;
	e.payload = byte ? &byte : NULL;
	e.payload_len = byte ? 1 : 0;
	ct_recon_event(r, &e);
}

TEST(spill_completes_the_call_it_belongs_to)
{
	/* A enters at key 10; its SPILL hit (SP 16 lower: key 26) follows: merged */
	CT_VEC_FREE(got);
	struct ct_recon *r = ct_recon_new(sites, NSITES, false, &ops, NULL);
	hit(r, 100, 7, 10, S_A_ENT, 0);
	CHECK_EQ_U(got.n, 0); /* reported with its SPILL hit */
	hit(r, 101, 8, 50, S_B_ENT, 0); /* another thread meanwhile: does not settle it */
	CHECK_EQ_U(got.n, 1);
	hit(r, 102, 7, 26, S_A_SPILL, 42);
	hit(r, 110, 7, 10, S_A_RET, 0);
	ct_recon_finish(r, 200);
	CHECK_EQ_U(got.n, 4);
	CHECK(got.v[1].type == 'E' && got.v[1].func == FA && got.v[1].spill == 42 && got.v[1].spill_site == S_A_SPILL);
	CHECK(got.v[2].type == 'X' && got.v[2].spill == 42);
	ct_recon_free(r);

	/* B entered before A's SPILL hit (a signal handler): A is reported
	 * first, without it, and the late hit is for no waiting call */
	CT_VEC_FREE(got);
	r = ct_recon_new(sites, NSITES, false, &ops, NULL);
	hit(r, 100, 7, 10, S_A_ENT, 0);
	hit(r, 101, 7, 60, S_B_ENT, 0);
	hit(r, 102, 7, 60, S_B_RET, 0);
	hit(r, 103, 7, 26, S_A_SPILL, 42);
	hit(r, 110, 7, 10, S_A_RET, 0);
	CHECK_EQ_U(got.n, 4);
	CHECK(got.v[0].type == 'E' && got.v[0].func == FA && got.v[0].spill == 0);
	CHECK(got.v[1].type == 'E' && got.v[1].func == FB);
	CHECK(got.v[3].type == 'X' && got.v[3].func == FA && got.v[3].spill == 0 && got.v[3].spill_site == S_A_SPILL);
	ct_recon_free(r);

	/* a SPILL hit at another frame's key (a deeper recursion of A) is not
	 * this call's; a call still waiting at the end is reported */
	CT_VEC_FREE(got);
	r = ct_recon_new(sites, NSITES, false, &ops, NULL);
	hit(r, 100, 7, 10, S_A_ENT, 0);
	hit(r, 101, 7, 90, S_A_SPILL, 42);
	CHECK_EQ_U(got.n, 1);
	CHECK(got.v[0].spill == 0);
	hit(r, 102, 7, 10, S_A_ENT, 0); /* a longjmp, then A again */
	ct_recon_finish(r, 200);
	CHECK_EQ_U(got.n, 4);
	CHECK(got.v[1].type == 'X' && got.v[2].type == 'E' && got.v[3].type == 'X');
	ct_recon_free(r);
	CT_VEC_FREE(got);
}
