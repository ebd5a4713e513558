/* PLT stubs and the direct calls of them (plan/plt.c), on the foundret
 * fixture's program (gcc and clang): main calls libfr.so's fr_compute and
 * fr_usage through its PLT, once each. */
#include <stdlib.h>

#include "plan/plt.h"
#include "plan/sites.h"
#include "target/fde.h"
#include "target/target.h"
#include "unit.h"
#include "util/util.h"

static const char *const programs[] = {"foundret/gcc/fr_main", "foundret/clang/fr_main"};

static uint64_t stub_of(const struct ct_plt_stub *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return v[i].addr;
	return 0;
}

/* Opens PROG (a fixture) with its PLT stubs in *V (N), and where those of
 * fr_compute and fr_usage are in TARGETS; false if it cannot (a failed CHECK). */
static bool open_with_stubs(const char *prog, struct ct_target *t, struct ct_plt_stub **v, size_t *n,
			    uint64_t targets[2])
{
	if (!unit_open_target(prog, t))
		return false;
	*n = ct_plt_stubs(&t->elf, v);
	targets[0] = stub_of(*v, *n, "fr_compute");
	targets[1] = stub_of(*v, *n, "fr_usage");
	return true;
}

TEST(plt_stubs_name_the_symbols_they_jump_to)
{
	for (size_t p = 0; p < sizeof(programs) / sizeof(*programs); p++) {
		struct ct_target t;
		struct ct_plt_stub *v;
		size_t n;
		uint64_t targets[2];
		if (!open_with_stubs(programs[p], &t, &v, &n, targets))
			return;
		uint64_t compute = targets[0], usage = targets[1];
		bool sorted = true, jumps = true;
		for (size_t i = 0; i < n; i++) {
			sorted &= i == 0 || v[i - 1].addr < v[i].addr;
			/* a stub starts with its jump through the slot, or endbr64 */
			const uint8_t *b = ct_elf_bytes_at(&t.elf, v[i].addr, 4);
			jumps &= b && ((b[0] == 0xff && b[1] == 0x25) || (b[0] == 0xf2 && b[1] == 0xff) ||
				       !memcmp(b, "\xf3\x0f\x1e\xfa", 4));
		}
		/* a function of the program is not in its PLT */
		uint64_t main_stub = stub_of(v, n, "main");
		free(v);
		ct_target_close(&t);
		CHECK(compute && usage && compute != usage);
		CHECK(sorted && jumps);
		CHECK(!main_stub);
	}
}

TEST(plt_direct_calls_found_and_confirmed)
{
	for (size_t p = 0; p < sizeof(programs) / sizeof(*programs); p++) {
		struct ct_target t;
		struct ct_plt_stub *v;
		size_t n;
		uint64_t targets[2];
		if (!open_with_stubs(programs[p], &t, &v, &n, targets))
			return;
		free(v);
		uint64_t *starts;
		size_t ns = ct_fde_starts(&t.elf, &starts);
		const struct ct_func *m = NULL;
		for (size_t i = 0; i < t.nfuncs; i++)
			if (!strcmp(t.funcs[i].name, "main"))
				m = &t.funcs[i];
		bool main_has_fde = false;
		for (size_t i = 0; m && i < ns; i++)
			main_has_fde |= starts[i] == m->entry;
		struct ct_call_to *c;
		size_t nc = ct_calls_to(&t.elf, starts, ns, targets, 2, &c);
		/* each is a call instruction there, of that stub, in main */
		bool calls = true;
		for (size_t i = 0; i < nc; i++) {
			const uint8_t *b = ct_elf_bytes_at(&t.elf, c[i].at, 5);
			int32_t rel;
			memcpy(&rel, b + 1, 4);
			calls &= b[0] == 0xe8 && c[i].at + 5 + (uint64_t)(int64_t)rel == c[i].target && m &&
				 c[i].at >= m->entry && c[i].at < m->end;
			calls &= ct_call_before(ct_elf_bytes_at(&t.elf, m->entry, m->end - m->entry), m->end - m->entry,
						 m->entry, c[i].at + 5) == c[i].at;
		}
		bool one_each = nc == 2 && c[0].target != c[1].target;
		/* with no start known but the section's, the same calls */
		struct ct_call_to *c2;
		size_t nc2 = ct_calls_to(&t.elf, NULL, 0, targets, 2, &c2);
		bool same = nc2 == nc && (!nc || !memcmp(c, c2, nc * sizeof(*c)));
		/* no target, no call */
		struct ct_call_to *c3;
		size_t nc3 = ct_calls_to(&t.elf, starts, ns, targets, 0, &c3);
		free(c);
		free(c2);
		free(c3);
		free(starts);
		ct_target_close(&t);
		CHECK(ns > 0 && main_has_fde);
		CHECK(calls && one_each && same);
		CHECK(nc3 == 0);
	}
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

TEST(plt_bytes_inside_an_instruction_are_no_call)
{
	/* c_values_O0 has e8 bytes inside instructions (immediates,
	 * displacements): every e8 byte of its functions taken for a call of
	 * where its displacement would go, only those that start an
	 * instruction (each function decoded from its entry here) are found */
	struct ct_target t;
	if (!unit_open_target("c_values_O0", &t))
		return;
	CT_VEC(uint64_t) targets = {0};
	struct ct_map starts_insn = {0}, is_e8 = {0};
	size_t inside = 0;
	for (size_t i = 0; i < t.nfuncs; i++) {
		const struct ct_func *f = &t.funcs[i];
		const uint8_t *b = f->end > f->entry ? ct_elf_bytes_at(&t.elf, f->entry, f->end - f->entry) : NULL;
		if (!b || (i && t.funcs[i - 1].entry == f->entry))
			continue;
		for (uint64_t off = 0; off < f->end - f->entry;) {
			char text[128];
			int len = ct_disasm_one(b + off, f->end - f->entry - off, f->entry + off, text, sizeof(text));
			map_put(&starts_insn, f->entry + off, (void *)1);
			off += len > 0 ? (uint64_t)len : 1;
		}
		for (uint64_t off = 0; off + 5 <= f->end - f->entry; off++)
			if (b[off] == 0xe8) {
				int32_t rel;
				memcpy(&rel, b + off + 1, 4);
				CT_VEC_PUSH(targets, f->entry + off + 5 + (uint64_t)(int64_t)rel);
				map_put(&is_e8, f->entry + off, (void *)1);
			}
	}
	MAP_FOREACH(&is_e8, k)
		inside += !map_get(&starts_insn, is_e8.keys[k]);
	qsort(targets.v, targets.n, sizeof(*targets.v), cmp_u64);
	size_t nt = 0;
	for (size_t i = 0; i < targets.n; i++)
		if (!nt || targets.v[nt - 1] != targets.v[i])
			targets.v[nt++] = targets.v[i];
	uint64_t *fdes;
	size_t ns = ct_fde_starts(&t.elf, &fdes);
	struct ct_call_to *c;
	size_t nc = ct_calls_to(&t.elf, fdes, ns, targets.v, nt, &c);
	size_t wrong = 0, calls = 0;
	for (size_t i = 0; i < nc; i++) {
		wrong += !map_get(&starts_insn, c[i].at) && ct_target_func_at(&t, c[i].at);
		calls += map_get(&is_e8, c[i].at) != NULL;
	}
	size_t want = 0;
	MAP_FOREACH(&is_e8, k)
		want += map_get(&starts_insn, is_e8.keys[k]) != NULL;
	free(c);
	free(fdes);
	CT_VEC_FREE(targets);
	map_free(&starts_insn);
	map_free(&is_e8);
	ct_target_close(&t);
	CHECK(inside > 0); /* what the test is about */
	CHECK(wrong == 0);
	CHECK(calls == want);
}

/* .eh_frame's FDEs (target/fde.c) give the compiled functions' bounds: in
 * the gcc and clang programs, every function the compiler made (main) and
 * the ones .eh_frame_hdr's table lists, the same starts; cxx_exc's
 * functions with a catch name an LSDA, one that only throws does not. */
TEST(fdes_give_function_bounds_and_landing_pads)
{
	for (size_t p = 0; p < sizeof(programs) / sizeof(*programs); p++) {
		struct ct_target t;
		if (!unit_open_target(programs[p], &t))
			return;
		struct ct_fde *f;
		uint64_t *starts;
		size_t n = ct_fdes(&t.elf, &f), ns = ct_fde_starts(&t.elf, &starts);
		bool same = n == ns, sorted = true, main_exact = false;
		for (size_t i = 0; i < n; i++) {
			same &= i < ns && starts[i] == f[i].start;
			sorted &= f[i].start < f[i].end && (i == 0 || f[i - 1].start <= f[i].start);
		}
		for (size_t i = 0; i < t.nfuncs; i++)
			for (size_t k = 0; k < n && !strcmp(t.funcs[i].name, "main"); k++)
				main_exact |= f[k].start == t.funcs[i].entry && f[k].end == t.funcs[i].end;
		free(f);
		free(starts);
		ct_target_close(&t);
		CHECK(n > 0 && same && sorted);
		CHECK(main_exact);
	}
	struct ct_target t;
	if (!unit_open_target("cxx_exc", &t))
		return;
	struct ct_fde *f;
	size_t n = ct_fdes(&t.elf, &f);
	int catch_lsda = -1, thrower_lsda = -1;
	for (size_t i = 0; i < t.nfuncs; i++)
		for (size_t k = 0; k < n; k++) {
			if (f[k].start != t.funcs[i].entry)
				continue;
			if (!strcmp(t.funcs[i].name, "cx_catch"))
				catch_lsda = f[k].lsda != 0;
			if (!strcmp(t.funcs[i].name, "cx_thrower"))
				thrower_lsda = f[k].lsda != 0;
		}
	free(f);
	ct_target_close(&t);
	CHECK(catch_lsda == 1);
	CHECK(thrower_lsda == 0);
}

static const struct ct_func *func_named(const struct ct_target *t, const char *name)
{
	for (size_t i = 0; i < t->nfuncs; i++)
		if (!strcmp(t->funcs[i].name, name))
			return &t->funcs[i];
	return NULL;
}

/* The return address of FROM's first `call rel32` of TO, or 0. */
static uint64_t call_ret(const struct ct_target *t, const struct ct_func *from, const struct ct_func *to)
{
	const uint8_t *code = ct_elf_bytes_at(&t->elf, from->entry, from->end - from->entry);
	for (uint64_t a = from->entry; code && a + 5 <= from->end; a++) {
		const uint8_t *p = code + (a - from->entry);
		int32_t rel;
		memcpy(&rel, p + 1, 4);
		if (p[0] == 0xe8 && a + 5 + (uint64_t)(int64_t)rel == to->entry &&
		    ct_call_before(code, from->end - from->entry, from->entry, a + 5) == a)
			return a + 5;
	}
	return 0;
}

struct pad_ctx {
	const struct ct_target *t;
	uint64_t unwind_resume; /* _Unwind_Resume@plt */
};

static const uint8_t *pad_code(void *ctx, uint64_t addr, size_t *avail)
{
	const struct pad_ctx *c = ctx;
	for (size_t n = 16; n; n--)
		if (ct_elf_bytes_at(&c->t->elf, addr, n)) {
			*avail = n;
			return ct_elf_bytes_at(&c->t->elf, addr, n);
		}
	return NULL;
}

static bool pad_noreturn(void *ctx, uint64_t callee)
{
	const struct pad_ctx *c = ctx;
	return callee == c->unwind_resume;
}

/* The LSDA's record of a call (its landing pad, or none), and where the
 * code from a pad goes: pd_joined's catch reaches the call's exit;
 * pd_guarded's pad runs the destructor and resumes unwinding; pd_middle's
 * call has no pad (tests/fixtures/c/cxx/pads.cc, gcc). */
TEST(lsda_landing_pads_and_where_they_go)
{
	struct ct_target t;
	if (!unit_open_target("cxx_pads", &t))
		return;
	struct ct_fde *f;
	size_t n = ct_fdes(&t.elf, &f);
	struct ct_plt_stub *stubs;
	size_t ns = ct_plt_stubs(&t.elf, &stubs);
	struct pad_ctx c = {&t, stub_of(stubs, ns, "_Unwind_Resume")};
	CHECK(c.unwind_resume != 0);
	const char *callers[] = {"pd_joined", "pd_guarded", "pd_middle"};
	const char *callees[] = {"pd_t_joined", "pd_t_guarded", "pd_guarded"};
	for (int i = 0; i < 3; i++) {
		const struct ct_func *from = func_named(&t, callers[i]), *to = func_named(&t, callees[i]);
		CHECK(from && to);
		if (!from || !to)
			continue;
		uint64_t ret = call_ret(&t, from, to), pad = 1;
		CHECK(ret != 0);
		const struct ct_fde *d = NULL;
		for (size_t k = 0; k < n; k++)
			if (f[k].start <= ret - 1 && ret - 1 < f[k].end)
				d = &f[k];
		CHECK(d != NULL);
		if (!d || !ret)
			continue;
		if (i == 2) {
			/* pd_middle handles nothing: no LSDA, or no pad for the call */
			CHECK(!d->lsda || (ct_lsda_landing_pad(&t.elf, d->lsda, d->start, ret, &pad) && pad == 0));
			continue;
		}
		CHECK(d->lsda != 0);
		CHECK(ct_lsda_landing_pad(&t.elf, d->lsda, d->start, ret, &pad));
		CHECK(pad != 0 && pad != UINT64_MAX);
		struct ct_map seen = {0};
		enum ct_pad_end how = ct_pad_walk(pad, 0, pad_code, pad_noreturn, &c, 4096, &seen);
		if (i == 0) {
			/* the catch joins the path after the call: at the call's
			 * exit probe (the call of pd_next), on to the ret */
			struct ct_exit_walk w;
			const uint8_t *code = ct_elf_bytes_at(&t.elf, ret, from->end - ret);
			CHECK(code != NULL);
			if (code)
				ct_exit_walk(code, from->end - ret, ret, &w);
			CHECK(code && w.how == CT_EXIT_EMULATED && map_get(&seen, w.site + 1) != NULL);
			CHECK(how == CT_PAD_LEAVES);
		} else {
			CHECK(how == CT_PAD_RESUMES); /* ~Guard, _Unwind_Resume */
			CHECK(map_get(&seen, ret + 1) == NULL);
		}
		map_free(&seen);
	}
	free(stubs);
	free(f);
	ct_target_close(&t);
}
