/* Entries seen ahead of their call (--exit=auto, Go).  A call observed
 * from its caller costs two hits: the `call` instruction (the entry) and
 * the first emulated instruction after it (the exit).  In a loop that
 * calls a function, the exit probe of one call is the loop's jcc, and the
 * next call is a few instructions on from where that jumps: one probe sees
 * both, if nothing else of the function leads in between and the callee's
 * arguments (and SP, and the g register) are already what they will be at
 * the call.  The probe reads the flags and tells which way the jump goes
 * (event.h ct_jcc_taken: its CALL role counts only on its way), so the
 * call's own probe goes: one hit a call instead of two.
 *
 * The contract stays the issue's: a CALL role is the call, made at most a
 * few instructions later on a way nothing else enters; the tree is the one
 * the call instruction's probe gave, its start a few instructions sooner.
 * Go only: GCC and clang enter a loop's body by falling into it, so the
 * body has two ways in and no one probe sees both; and C code has landing
 * pads and setjmp returns that enter where the code does not show. */
#include "plan/plan.h"
#include "util/util.h"

/* Roles at one address of the plan, as the planner left them. */
struct at_addr {
	uint32_t n;      /* sites planned there (probes' roles) */
	uint32_t first;  /* one of them */
	bool only_exits; /* all RETSITEs of planned direct calls, fixed for the run */
};

/* Can the exit probe of call site S also be the probe of a later call? */
static bool fixed_exit(const struct ct_plan_site *s)
{
	const struct ct_callsite *cs = s->cs;
	return s->kind == CT_SITE_RETSITE && cs && !s->elsewhere && !s->interim &&
	       !(s->flags & (CT_SITEF_DYNAMIC | CT_SITEF_ATCHECK | CT_SITEF_COMPANION)) && s->rides == CT_NOSITE &&
	       !cs->icall && !cs->shared && !cs->via_place && cs->caller;
}

/* Is site S a call's probe of its own that may move ahead? */
static bool movable_call(const struct ct_plan *p, const struct ct_plan_site *s)
{
	const struct ct_callsite *cs = s->cs;
	if (s->kind != CT_SITE_CALL || !cs || cs->at != s->addr || s->elsewhere || s->cond ||
	    (s->flags & (CT_SITEF_ATCHECK | CT_SITEF_DYNAMIC | CT_SITEF_TAILPOS | CT_SITEF_INDIRECT)) ||
	    cs->tail_less_prev || cs->tail_results || cs->shared || cs->icall || cs->via_place ||
	    s->func >= p->funcs.n)
		return false;
	const struct ct_plan_func *pf = &p->funcs.v[s->func];
	/* (a CHECK at the callee's entry looks planned calls up: left alone) */
	return pf->in_caller && !pf->indirect && !pf->slot_called && pf->check_site == CT_NOSITE;
}

/* The call the way from TO leads to (0: none): the straight line from
 * there, past nops, to an emulated `call rel32`, SP and RBP and R14 (g) as
 * they were and nothing on it that may fault; W: the walk. */
static uint64_t way_call(const uint8_t *code, const struct ct_func *g, uint64_t to, struct ct_exit_walk *w)
{
	if (to < g->entry || to >= g->end)
		return 0;
	ct_walk_past_nops(code + (to - g->entry), g->end - to, to, w);
	/* (nothing on the way may fault: the panic would come before the call
	 * its probe saw made -- a call in the tree that never ran) */
	if (w->how != CT_EXIT_EMULATED || w->sp_delta || w->site < to || w->site >= g->end || w->may_fault ||
	    (w->written & (1u << CT_RBP | 1u << CT_R14)))
		return 0;
	return ct_insn_role_at(code + (w->site - g->entry), g->end - w->site, w->site) == CT_INSN_CALL ? w->site : 0;
}

bool ct_plan_ahead_fetch(struct ct_plan *p, const struct ct_site_fetch *at_call, uint32_t site,
			 struct ct_site_fetch *out)
{
	const struct ct_exit_walk *w = map_get(&p->ahead_walks, (uint64_t)site + 1);
	return w && ct_fetch_ahead(at_call, w, out) == 0;
}

/* Can the call's arguments be read at the probe the walk W starts after? */
static bool args_ahead(struct ct_plan *p, const struct ct_selection *sel, const struct ct_func *callee,
		       const struct ct_exit_walk *w)
{
	struct ct_site_fetch *args = sel->args ? ct_plan_args_fetch(p, sel->args, callee) : NULL, at_call, ahead;
	if (!args)
		return true;
	bool ok = ct_fetch_relocate(args, -8, NULL, &at_call) == 0;
	if (ok) {
		ok = ct_fetch_ahead(&at_call, w, &ahead) == 0;
		if (ok)
			ct_site_fetch_free(&ahead);
		ct_site_fetch_free(&at_call);
	}
	ct_site_fetch_free(args);
	free(args);
	return ok;
}

/* The first of the N sorted addresses V at or after ADDR (0: none). */
static uint64_t first_at_or_after(const uint64_t *v, size_t n, uint64_t addr)
{
	size_t i = ct_lower_bound_u64(v, n, addr);
	return i < n ? v[i] : 0;
}

static int cmp_site_addr(const void *x, const void *y, void *ctx)
{
	const struct ct_plan_site *v = ctx;
	uint64_t a = v[*(const uint32_t *)x].addr, b = v[*(const uint32_t *)y].addr;
	return (a > b) - (a < b);
}

void ct_plan_ahead_entries(struct ct_plan *p, const struct ct_selection *sel)
{
	if (p->exits != CT_EXITS_AUTO || sel->limits || p->t->lang != CT_LANG_GO || !p->sites.n)
		return;
	size_t n = p->sites.n;
	uint32_t *order = xmalloc(n * sizeof(*order));
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, n, sizeof(*order), cmp_site_addr, p->sites.v);
	/* per address: the calls alone at theirs, the exit probes of nothing else */
	struct ct_map calls = {0};
	CT_VEC(struct at_addr) exits = {0};
	CT_VEC(uint64_t) call_addrs = {0};
	for (size_t i = 0; i < n;) {
		size_t e = i + 1;
		uint64_t addr = p->sites.v[order[i]].addr;
		while (e < n && p->sites.v[order[e]].addr == addr)
			e++;
		struct at_addr a = {(uint32_t)(e - i), order[i], true};
		for (size_t k = i; k < e; k++)
			a.only_exits &= fixed_exit(&p->sites.v[order[k]]);
		if (a.n == 1 && movable_call(p, &p->sites.v[order[i]])) {
			map_put(&calls, addr, (void *)(uintptr_t)(order[i] + 1));
			CT_VEC_PUSH(call_addrs, addr); /* (in address order) */
		}
		else if (a.only_exits)
			CT_VEC_PUSH(exits, a);
		i = e;
	}
	free(order);
	/* (the captures are kept as first planned: with the types, as
	 * ct_plan_args will open them) */
	if (calls.n && sel->args && sel->args->enabled && p->t->has_dwarf && !p->types)
		p->types = ct_types_open(p->t->elf.path, true);
	struct ct_exit_walk *w = xmalloc(sizeof(*w));
	size_t nways_all = 0, to_calls = 0, alone = 0, readable = 0;
	for (size_t i = 0; i < exits.n && calls.n; i++) {
		struct ct_plan_site *ps = &p->sites.v[exits.v[i].first];
		const struct ct_func *g = ps->cs->caller;
		if (!(g->flags & CT_FN_GO) || g->end <= g->entry)
			continue;
		const uint8_t *code = ct_elf_bytes_at(&p->t->elf, g->entry, g->end - g->entry);
		struct ct_way ways[2];
		/* (a way to one of those calls first: the whole function is
		 * decoded for the ways nothing else enters, and most exit probes
		 * lead to none -- esbuild -F '*': the plan took 3.8 s, 87 % of
		 * it here, for 30,000 exit probes) */
		size_t nways = code ? ct_probe_ways_any(code, g->end - g->entry, g->entry, ps->addr, ways) : 0;
		bool to_one = false;
		for (size_t k = 0; k < nways && !to_one; k++) {
			/* (and a walk only where such a call is further on in the function) */
			uint64_t later = first_at_or_after(call_addrs.v, call_addrs.n, ways[k].to);
			if (!later || later >= g->end)
				continue;
			uint64_t call = way_call(code, g, ways[k].to, w);
			to_one = call && map_get(&calls, call);
		}
		if (!to_one)
			continue;
		nways = ct_probe_ways(code, g->end - g->entry, g->entry, ps->addr, ways);
		nways_all += nways;
		for (size_t k = 0; k < nways; k++) {
			uint64_t call = way_call(code, g, ways[k].to, w);
			uintptr_t j = call ? (uintptr_t)map_get(&calls, call) : 0;
			to_calls += j != 0;
			/* nothing else of the function may land on the way */
			if (!j || (call > ways[k].to && ct_branch_lands(code, g->end - g->entry, g->entry, ways[k].to + 1, call)))
				continue;
			alone++;
			struct ct_plan_site *cs = &p->sites.v[j - 1];
			if (!args_ahead(p, sel, p->funcs.v[cs->func].fn, w))
				continue;
			readable++;
			map_del(&calls, call);
			map_put(&p->ahead_walks, j, w); /* (site + 1) */
			w = xmalloc(sizeof(*w));
			cs->addr = ps->addr;
			cs->offset = ps->offset;
			cs->flags = (uint16_t)((cs->flags & ~(CT_SITEF_CALLINSN | CT_SITEF_RETINSN | CT_SITEF_STEPPED)) |
					       (ps->flags & (CT_SITEF_CALLINSN | CT_SITEF_RETINSN | CT_SITEF_STEPPED)) |
					       CT_SITEF_AHEAD | (ways[k].cond ? CT_SITEF_COND : 0) |
					       (ways[k].fall ? CT_SITEF_FALL : 0));
			cs->cond = ways[k].cond;
			p->ahead_entries++;
		}
	}
	free(w);
	ct_debug("calls seen ahead: %zu exit probes of nothing else, %zu calls alone at theirs; %zu ways on of those with one to such a call, %zu to "
		 "those calls, %zu that nothing else enters, %zu with the arguments readable: %zu moved",
		 exits.n, calls.n + p->ahead_entries, nways_all, to_calls, alone, readable, p->ahead_entries);
	CT_VEC_FREE(exits);
	CT_VEC_FREE(call_addrs);
	map_free(&calls);
}
