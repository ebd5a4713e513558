#include "target/target.h"
#include "target/dwarf.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runtime code that switches stacks, runs without a valid g, or never
 * returns normally.  Probing it would report nonsense (and the issue list of
 * every Go tracer shows people tried); these are never probed. */
static const char *const go_noprobe[] = {
	"runtime.morestack", "runtime.morestack_noctxt", "runtime.systemstack",
	"runtime.systemstack_switch", "runtime.mcall", "runtime.gogo",
	"runtime.asmcgocall", "runtime.asmcgocall_no_g", "runtime.cgocallback",
	"runtime.rt0_go", "runtime.sigtramp", "runtime.cgoSigtramp",
	"runtime.sigreturn", "runtime.sigreturn__sigaction", "runtime.asyncPreempt",
	"runtime.goexit", "runtime.mstart", "runtime.mstart0",
	"runtime.gosave_systemstack_switch", "runtime.abort", "runtime.settls",
	"runtime.debugCallV2", "runtime.debugCallV1", "runtime.gcWriteBarrier",
	"runtime.setg", "runtime.setg_gcc", "runtime.gosave", "runtime.rt0_go.abi0",
	NULL,
};

static bool go_must_not_probe(const char *name)
{
	char base[256];
	snprintf(base, sizeof(base), "%s", name);
	size_t n = strlen(base);
	if (n > 5 && !strcmp(base + n - 5, ".abi0"))
		base[n - 5] = 0;
	for (const char *const *p = go_noprobe; *p; p++)
		if (!strcmp(base, *p))
			return true;
	return !strncmp(base, "_rt0_", 5) || !strncmp(base, "runtime.debugCall", 17) ||
	       !strncmp(base, "runtime.morestack", 17) || !strncmp(base, "runtime.sigreturn", 17);
}

static int cmp_func(const void *a, const void *b)
{
	const struct ct_func *x = a, *y = b;
	return x->entry < y->entry ? -1 : x->entry > y->entry;
}

struct sym_collect {
	CT_VEC(struct ct_func) v;
};

static void collect_sym(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct sym_collect *c = ctx;
	struct ct_func f = {xstrdup(name), sym->st_value, sym->st_value + sym->st_size, -1, 0};
	CT_VEC_PUSH(c->v, f);
}

/* Symbols sorted by address, used to give pclntab entries their full names
 * (pclntab shortens generic instances to "F[...]"). */
static struct sym_collect read_symbols(const struct ct_target *t)
{
	struct sym_collect c = {0};
	ct_elf_each_func(&t->elf, collect_sym, &c);
	qsort(c.v.v, c.v.n, sizeof(*c.v.v), cmp_func);
	return c;
}

static const char *sym_name_at(const struct sym_collect *c, uint64_t entry)
{
	size_t lo = 0, hi = c->v.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->v.v[mid].entry < entry)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->v.n && c->v.v[lo].entry == entry ? c->v.v[lo].name : NULL;
}

static void free_symbols(struct sym_collect *c)
{
	for (size_t i = 0; i < c->v.n; i++)
		free(c->v.v[i].name);
	CT_VEC_FREE(c->v);
}

/* runtime.g layout by Go version, for binaries without DWARF.  goid moved
 * to 160 in 1.23 (g.syscallbp) and back to 152 in 1.25 (gobuf.ret gone). */
static void go_offsets_by_version(struct ct_target *t)
{
	int minor = t->go_minor;
	t->gcfg.stack_hi_off = 8;
	t->gcfg.m_off = 48;
	t->gcfg.goid_off = (minor == 23 || minor == 24) ? 160 : 152;
	t->gcfg.curg_off = 192;
	t->gcfg_source = "table";
	if (minor && (minor < 9 || minor > 26))
		ct_warn("Go version %s is outside the table of runtime.g layouts (1.9-1.26) and the binary has no DWARF: goroutine ids may be wrong",
			t->go_version);
}

static int load_go(struct ct_target *t, struct ct_pclntab *pcln)
{
	struct ct_buildinfo bi = {0};
	struct ct_dwarf_go dg;
	ct_dwarf_go_facts(t->elf.path, &dg);
	t->has_dwarf = dg.have_dwarf;
	if (ct_buildinfo_read(&t->elf, &bi) == 0) {
		snprintf(t->go_version, sizeof(t->go_version), "%s", bi.go_version);
		t->go_minor = bi.major == 1 ? bi.minor : 0;
		t->main_module = bi.main_module ? xstrdup(bi.main_module) : NULL;
	}
	ct_buildinfo_free(&bi);
	if (!t->go_version[0] && dg.go_version[0]) {
		snprintf(t->go_version, sizeof(t->go_version), "%s", dg.go_version);
		if (sscanf(dg.go_version, "go1.%d", &t->go_minor) != 1)
			t->go_minor = 0;
	}
	/* The register ABI arrived in 1.17 on amd64; DWARF says so per CU. */
	t->regabi = dg.go_producer ? dg.regabi : t->go_minor >= 17;

	go_offsets_by_version(t);
	if (dg.goid_off >= 0 && dg.stack_hi_off >= 0) {
		t->gcfg.goid_off = dg.goid_off;
		t->gcfg.stack_hi_off = dg.stack_hi_off;
		if (dg.m_off >= 0)
			t->gcfg.m_off = dg.m_off;
		if (dg.curg_off >= 0)
			t->gcfg.curg_off = dg.curg_off;
		t->gcfg_source = "DWARF";
	}
	t->gcfg.tls_g_off = -8;
	GElf_Sym tlsg;
	if (ct_elf_symbol(&t->elf, "runtime.tlsg", &tlsg)) {
		/* External linking: g sits at tlsg's offset from the end of the
		 * (aligned) TLS block. */
		size_t nph = 0;
		elf_getphdrnum(t->elf.elf, &nph);
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(t->elf.elf, i, &ph) && ph.p_type == PT_TLS) {
				uint64_t al = ph.p_align ? ph.p_align : 1;
				uint64_t sz = (ph.p_memsz + al - 1) / al * al;
				t->gcfg.tls_g_off = (int64_t)tlsg.st_value - (int64_t)sz;
			}
		}
	}

	struct sym_collect syms = read_symbols(t);
	t->funcs = xcalloc(pcln->nfuncs, sizeof(*t->funcs));
	for (size_t i = 0; i < pcln->nfuncs; i++) {
		const struct ct_go_func *g = &pcln->funcs[i];
		const char *sname = sym_name_at(&syms, g->entry);
		struct ct_func *f = &t->funcs[t->nfuncs++];
		/* The linker names assembly bodies "X.abi0" only when an ABI
		 * wrapper takes the plain name; wrappers are never probed, so
		 * show the name people know.  Otherwise .symtab wins: pclntab
		 * shortens generic instances to "F[...]". */
		size_t gl = strlen(g->name);
		if (sname && (strncmp(sname, g->name, gl) || strcmp(sname + gl, ".abi0")))
			f->name = xstrdup(sname);
		else
			f->name = xstrdup(g->name);
		f->entry = g->entry;
		f->end = g->end;
		f->args = g->args;
		f->flags = CT_FN_GO;
		if (g->flag & CT_GO_FLAG_ASM)
			f->flags |= CT_FN_ASM;
		if ((g->flag & CT_GO_FLAG_ASM) || !t->regabi || (sname && strstr(sname, ".abi0")))
			f->flags |= CT_FN_ABI0;
		if (g->wrapper)
			f->flags |= CT_FN_WRAPPER;
		if (go_must_not_probe(f->name) || (g->flag & CT_GO_FLAG_TOPFRAME))
			f->flags |= CT_FN_NOPROBE;
	}
	t->funcs_source = syms.v.n ? "pclntab+symtab" : "pclntab";
	free_symbols(&syms);
	return 0;
}

static int load_c(struct ct_target *t)
{
	struct sym_collect syms = read_symbols(t);
	GElf_Shdr sh;
	t->funcs_source = ct_elf_section(&t->elf, ".symtab", &sh, NULL) ? "symtab" : "dynsym";
	/* Drop aliases (same entry twice): keep the first name. */
	t->funcs = xcalloc(syms.v.n ? syms.v.n : 1, sizeof(*t->funcs));
	for (size_t i = 0; i < syms.v.n; i++) {
		if (t->nfuncs && t->funcs[t->nfuncs - 1].entry == syms.v.v[i].entry) {
			free(syms.v.v[i].name);
			continue;
		}
		t->funcs[t->nfuncs++] = syms.v.v[i];
	}
	CT_VEC_FREE(syms.v);
	struct ct_dwarf_go dg;
	ct_dwarf_go_facts(t->elf.path, &dg);
	t->has_dwarf = dg.have_dwarf;
	return 0;
}

int ct_target_open(struct ct_target *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	if (ct_elf_open(&t->elf, path))
		return -1;
	struct ct_pclntab pcln = {0};
	int rc;
	if (ct_pclntab_read(&t->elf, &pcln) == 0) {
		t->lang = CT_LANG_GO;
		rc = load_go(t, &pcln);
		ct_pclntab_free(&pcln);
	} else {
		t->lang = CT_LANG_C;
		rc = load_c(t);
	}
	if (rc == 0 && !t->nfuncs)
		rc = ct_fail("%s has no function symbols (stripped C binary without .symtab/.dynsym functions); rebuild without -s",
			     path);
	if (rc) {
		ct_target_close(t);
		return -1;
	}
	qsort(t->funcs, t->nfuncs, sizeof(*t->funcs), cmp_func);
	return 0;
}

void ct_target_close(struct ct_target *t)
{
	for (size_t i = 0; i < t->nfuncs; i++)
		free(t->funcs[i].name);
	free(t->funcs);
	free(t->main_module);
	ct_elf_close(&t->elf);
	memset(t, 0, sizeof(*t));
}

const struct ct_func *ct_target_func_at(const struct ct_target *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nfuncs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->funcs[mid].entry <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct ct_func *f = &t->funcs[lo - 1];
	return addr < f->end ? f : NULL;
}
