/* Roles of probes: a call's exit at the next call's instruction, sent by
 * that call's CHECK (plan.c ct_plan_merge_exits_into_checks). */
#include "unit.h"
#include "plan/plan.h"
#include "util/util.h"

#include <stdlib.h>

/* fib's shape: the CHECK of fib (site 0); its first call at 0x10 (site 1,
 * seen at the CHECK), whose exit (site 2) is the second call at 0x20
 * (site 3, seen at the CHECK too); both calls planned for the CHECK. */
static void fib_plan(struct ct_plan *p)
{
	memset(p, 0, sizeof(*p));
	struct ct_plan_site s[4] = {
		{.addr = 0x100, .kind = CT_SITE_CHECK, .rides = CT_NOSITE},
		{.addr = 0x10, .kind = CT_SITE_CALL, .key_adj = 8, .flags = CT_SITEF_ATCHECK, .rides = CT_NOSITE},
		{.addr = 0x20, .kind = CT_SITE_RETSITE, .key_adj = 8, .call_site = 1, .rides = CT_NOSITE},
		{.addr = 0x20, .kind = CT_SITE_CALL, .key_adj = 8, .flags = CT_SITEF_ATCHECK, .rides = CT_NOSITE},
	};
	for (size_t i = 0; i < 4; i++)
		CT_VEC_PUSH(p->sites, s[i]);
	ct_plan_link_roles(p);
	struct ct_plan_planned a = {CT_PLANNED_KEY(0, 0x15 - 0x100), {.site = 1, .key_delta = -8}};
	struct ct_plan_planned b = {CT_PLANNED_KEY(0, 0x25 - 0x100), {.site = 3, .key_delta = -8}};
	CT_VEC_PUSH(p->planned, a);
	CT_VEC_PUSH(p->planned, b);
}

/* Site I's capture (made empty, with the plan's table if need be). */
static struct ct_site_fetch *fetch_of(struct ct_plan *p, size_t i)
{
	if (!p->fetch)
		p->fetch = xcalloc(p->sites.n, sizeof(*p->fetch));
	if (!p->fetch[i])
		p->fetch[i] = xcalloc(1, sizeof(struct ct_site_fetch));
	return p->fetch[i];
}

/* fib_plan, the first call's exit reading its result where the caller
 * stored it (SP + 8 at the second call). */
static struct ct_site_fetch *fib_plan_with_result(struct ct_plan *p)
{
	fib_plan(p);
	struct ct_site_fetch *r = fetch_of(p, 2);
	r->prog.nops = 1;
	r->prog.size = 8;
	r->prog.ops[0] = (struct ct_fetch_op){.code = CT_OP_STACKWORD, .off = 8};
	return r;
}

static void free_plan(struct ct_plan *p)
{
	for (size_t i = 0; p->fetch && i < p->sites.n; i++)
		if (p->fetch[i]) {
			ct_site_fetch_free(p->fetch[i]);
			free(p->fetch[i]);
		}
	free(p->fetch);
	CT_VEC_FREE(p->sites);
	CT_VEC_FREE(p->planned);
}

TEST(exit_at_the_next_checked_call_is_sent_by_its_check)
{
	struct ct_plan p;
	fib_plan(&p);
	CHECK(ct_site_is_probe(&p.sites.v[2]));
	ct_plan_merge_exits_into_checks(&p);
	CHECK_EQ_U(p.exits_at_checks, 1);
	/* not probed: the CHECK's hit for the call at 0x20 stands for it,
	 * closing the first call, then opening the second */
	CHECK(!ct_site_is_probe(&p.sites.v[2]));
	CHECK(p.sites.v[2].flags & CT_SITEF_ATCHECK);
	CHECK_EQ_U(p.planned.v[1].val.site, 2);
	CHECK_EQ_U(p.sites.v[2].next, 3);
	CHECK(p.sites.v[3].flags & CT_SITEF_COMPANION);
	CHECK_EQ_U(p.sites.v[3].next, CT_NOSITE);
	/* the key: the CALL's (-8 from the CHECK's), as the probe's would be */
	CHECK(p.planned.v[1].val.key_delta == -8);
	CHECK(!(p.sites.v[2].flags & CT_SITEF_STEPPED));
	/* the first call's entry is untouched: no exit at its instruction */
	CHECK_EQ_U(p.planned.v[0].val.site, 1);
	CHECK(!(p.sites.v[1].flags & CT_SITEF_COMPANION));
	free_plan(&p);
}

TEST(exit_reading_what_the_check_cannot_or_under_limits_keeps_its_probe)
{
	struct ct_plan p;
	/* it reads a word the caller keeps below what it added (REGDIFF):
	 * not moved to the callee's entry */
	fib_plan(&p);
	struct ct_site_fetch *r = fetch_of(&p, 2);
	r->nvals = 1;
	r->vals = xcalloc(1, sizeof(*r->vals));
	r->vals[0].name = xstrdup("r");
	r->prog.nops = 1;
	r->prog.size = 8;
	r->prog.ops[0] = (struct ct_fetch_op){.code = CT_OP_REGDIFF, .reg = 0, .off = 8};
	ct_plan_merge_exits_into_checks(&p);
	CHECK_EQ_U(p.exits_at_checks, 0);
	CHECK(ct_site_is_probe(&p.sites.v[2]));
	CHECK_EQ_U(p.planned.v[1].val.site, 3);
	free_plan(&p);
	/* record-time limits: the kernel's stacks take a CHECK's hit for a
	 * call only */
	fib_plan(&p);
	p.no_spills = true;
	ct_plan_merge_exits_into_checks(&p);
	CHECK_EQ_U(p.exits_at_checks, 0);
	CHECK(ct_site_is_probe(&p.sites.v[2]));
	free_plan(&p);
	/* a single-stepped exit there is something else (never a call) */
	fib_plan(&p);
	p.sites.v[2].flags |= CT_SITEF_STEPPED;
	ct_plan_merge_exits_into_checks(&p);
	CHECK_EQ_U(p.exits_at_checks, 0);
	free_plan(&p);
}

TEST(exit_results_read_by_the_checks_hit_for_that_call)
{
	/* fib with values: the first call's result, stored to the caller's
	 * frame (SP + 8 at the second call), and the second call's argument
	 * in RAX; at the CHECK SP is 8 lower */
	struct ct_plan p;
	struct ct_site_fetch *r = fib_plan_with_result(&p);
	r->nvals = 1;
	r->vals = xcalloc(1, sizeof(*r->vals));
	r->vals[0].name = xstrdup("~r0");
	struct ct_site_fetch *a = fetch_of(&p, 0); /* the CHECK's: n */
	a->prog.nops = 1;
	a->prog.size = 8;
	a->prog.ops[0] = (struct ct_fetch_op){.code = CT_OP_REG, .reg = 10};
	ct_plan_merge_exits_into_checks(&p);
	CHECK_EQ_U(p.exits_at_checks, 1);
	CHECK_EQ_U(p.planned.v[1].val.site, 2);
	CHECK_EQ_U(p.planned.v[1].val.fetch, 3); /* site 2's program, + 1 */
	CHECK(ct_plan_site_runs_fetch(&p, 2));
	const struct ct_fetch *m = &p.fetch[2]->prog;
	CHECK_EQ_U(m->nops, 2);
	CHECK(m->ops[0].code == CT_OP_STACKWORD && m->ops[0].off == 16);
	CHECK(m->ops[1].code == CT_OP_REG && m->ops[1].reg == 10 && m->ops[1].dst == 8);
	/* the call's arguments are read after the result, in that program */
	CHECK(p.fetch[3] && p.fetch[3]->prog.nops == 2 && p.fetch[3]->prog.ops[1].dst == 8);
	/* the first call keeps the CHECK's own program */
	CHECK_EQ_U(p.planned.v[0].val.fetch, 0);
	free_plan(&p);
	/* another function's exit at that call instruction rides on this
	 * one's probe, reading the payload by its program: not changed */
	fib_plan_with_result(&p);
	struct ct_plan_site rider = p.sites.v[2];
	rider.rides = 2;
	rider.flags |= CT_SITEF_COMPANION;
	CT_VEC_PUSH(p.sites, rider);
	p.fetch = xrealloc(p.fetch, p.sites.n * sizeof(*p.fetch));
	p.fetch[4] = NULL;
	ct_plan_merge_exits_into_checks(&p);
	CHECK_EQ_U(p.exits_at_checks, 0);
	CHECK(ct_site_is_probe(&p.sites.v[2]));
	free_plan(&p);
	/* after a prologue (the CHECK's SP further down, registers moved):
	 * not there */
	fib_plan_with_result(&p);
	p.sites.v[0].sp_drop = 8;
	ct_plan_merge_exits_into_checks(&p);
	CHECK_EQ_U(p.exits_at_checks, 0);
	free_plan(&p);
}

TEST(exit_sent_by_a_single_stepped_check_is_priced_so)
{
	/* an address-taken function's CHECK at its single-stepped entry
	 * sends its calls, and now the exit before one: that hit's price */
	struct ct_plan p;
	fib_plan(&p);
	p.sites.v[0].flags |= CT_SITEF_STEPPED;
	p.sites.v[1].flags |= CT_SITEF_STEPPED;
	p.sites.v[3].flags |= CT_SITEF_STEPPED;
	ct_plan_merge_exits_into_checks(&p);
	CHECK_EQ_U(p.exits_at_checks, 1);
	CHECK(p.sites.v[2].flags & CT_SITEF_STEPPED);
	free_plan(&p);
}

TEST(exit_merged_with_the_calls_arguments_program)
{
	/* with arguments: the hit's payload is the CHECK's program, which
	 * every role shares (the session expands it by the event's site) */
	struct ct_plan p;
	fib_plan(&p);
	fetch_of(&p, 3)->prog.nops = 1;
	p.fetch[3]->prog.size = 8;
	ct_plan_merge_exits_into_checks(&p);
	CHECK_EQ_U(p.exits_at_checks, 1);
	CHECK(p.fetch[2] != NULL);
	CHECK_EQ_U(p.fetch[2]->prog.nops, 1);
	CHECK_EQ_U(p.fetch[2]->nvals, 0);
	free_plan(&p);
}

/* The "cannot be probed" line: each name once, with how many functions
 * have it (Rust's instances of one generic repeated it: "drop_arc_raw,
 * drop_arc_raw, ..."), then how many names did not fit. */
TEST(skipped_names_are_listed_once_with_their_count)
{
	struct ct_func f[5];
	memset(f, 0, sizeof(f));
	const char *names[5] = {"drop_arc_raw", "vex_bits", "drop_arc_raw", "drop_arc_raw", "other"};
	struct ct_plan p;
	memset(&p, 0, sizeof(p));
	for (size_t i = 0; i < 5; i++) {
		f[i].name = (char *)names[i];
		struct ct_plan_skip s = {&f[i], NULL};
		CT_VEC_PUSH(p.skipped, s);
	}
	char *all = ct_plan_skipped_names(&p, 8), *two = ct_plan_skipped_names(&p, 2);
	CHECK_STR(all, "drop_arc_raw (x3), vex_bits, other");
	CHECK_STR(two, "drop_arc_raw (x3), vex_bits (and 1 more)");
	free(all);
	free(two);
	CT_VEC_FREE(p.skipped);
}
