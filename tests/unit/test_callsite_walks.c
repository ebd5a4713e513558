/* A planned call keeps a brief of the walk from its return address (struct
 * ct_exit_brief), the whole walk only where its callee's results are read
 * (struct ct_callsite.full); elsewhere ct_callsite_walk walks again from the
 * code.  Either way the whole walk must be the one the brief was made from,
 * and a walk made again must not depend on what the buffer held before (it
 * is on the stack of whoever asks). */
#include "unit.h"

#include "plan/plan.h"
#include "plan/sites.h"
#include "target/target.h"

#include <stdlib.h>
#include <string.h>

static bool brief_is_of(const struct ct_exit_brief *b, const struct ct_exit_walk *w)
{
	return b->site == w->site && b->first_site == w->first_site && b->icall_at == w->icall_at &&
	       b->sp_delta == w->sp_delta && b->how == (uint8_t)w->how && b->first_emulated == w->first_emulated &&
	       b->at_ret == w->at_ret && b->icall_len == w->icall_len;
}

TEST(callsite_walks_kept_or_walked_again_agree)
{
	static const char *fixtures[] = {"go_args", "c_args", "cgraph/gcc-O2/cg_floats"};
	struct ct_exit_walk *dirty = malloc(sizeof(*dirty)), *clean = malloc(sizeof(*clean));
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(*fixtures); i++) {
		struct ct_target t;
		if (!unit_open_target(fixtures[i], &t))
			continue;
		struct ct_args_opts ao = {.enabled = true, .fetch = {64, 8, 3}};
		struct ct_selection sel = {.args = &ao};
		struct ct_plan p;
		CHECK(ct_plan_build(&p, &t, &sel) == 0);
		ct_plan_args(&p, &ao);
		size_t with_results = 0, kept = 0, again = 0;
		for (size_t j = 0; j < p.funcs.n; j++) {
			const struct ct_plan_func *pf = &p.funcs.v[j];
			for (size_t k = 0; pf->in_caller && k < pf->ncalls; k++) {
				const struct ct_callsite *cs = &pf->calls[k];
				memset(dirty, 0xa5, sizeof(*dirty));
				memset(clean, 0, sizeof(*clean));
				const struct ct_exit_walk *a = ct_callsite_walk(&p, cs, dirty);
				const struct ct_exit_walk *b = ct_callsite_walk(&p, cs, clean);
				if (!brief_is_of(&cs->walk, a) || memcmp(a, b, sizeof(*a)))
					unit_fail(__FILE__, __LINE__, "%s: the walk of the call at 0x%llx (of %s) differs",
						  fixtures[i], (unsigned long long)cs->at, pf->fn->name);
				with_results += pf->results;
				kept += pf->results && cs->full;
				again += !cs->full;
			}
		}
		/* (the callers' several passes and args.c read those: no walk again) */
		if (kept != with_results)
			unit_fail(__FILE__, __LINE__, "%s: %zu of %zu calls whose results are read keep their walk",
				  fixtures[i], kept, with_results);
		CHECK(with_results > 0 && again > 0);
		ct_plan_free(&p);
		ct_target_close(&t);
	}
	free(dirty);
	free(clean);
}
