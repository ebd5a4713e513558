#include "target/target.h"
#include "target/dwarf.h"
#include "target/gccgo.h"
#include "target/goruntime.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* By address; names of one address (C aliases such as free / __libc_free)
 * with the public-looking one first: no leading '_', then shortest. */
static int cmp_func(const void *a, const void *b)
{
	const struct ct_func *x = a, *y = b;
	if (x->entry != y->entry)
		return x->entry < y->entry ? -1 : 1;
	int ux = x->name[0] == '_', uy = y->name[0] == '_';
	if (ux != uy)
		return ux - uy;
	size_t lx = strlen(x->name), ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

struct sym_collect {
	CT_VEC(struct ct_func) v;
	CT_VEC(struct ct_func) parts; /* (name: the whole symbol's) */
};

/* GCC's hot/cold splitting puts a function's unlikely paths in a separate
 * symbol "F.cold" (or "F.cold.N"), entered by a jump, never by a call; so
 * does BOLT with "F.warm" (Rust's toolchain: 3,542 of them in
 * librustc_driver, whose entries inside F's call nested F in itself). */
static bool is_part(const char *name, const char *sfx)
{
	const char *c = strstr(name, sfx);
	return c && (!c[5] || c[5] == '.');
}

static bool is_cold_part(const char *name)
{
	return is_part(name, ".cold") || is_part(name, ".warm");
}

static void collect_sym(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct sym_collect *c = ctx;
	struct ct_func f = {.name = xstrdup(name), .entry = sym->st_value, .end = sym->st_value + sym->st_size,
			    .args = -1};
	if (is_cold_part(name))
		CT_VEC_PUSH(c->parts, f);
	else
		CT_VEC_PUSH(c->v, f);
}

/* Symbols sorted by address, used to give pclntab entries their full names
 * (pclntab shortens generic instances to "F[...]"). */
static struct sym_collect read_symbols(const struct ct_target *t)
{
	struct sym_collect c = {0};
	ct_elf_each_func(&t->elf, collect_sym, &c);
	if (c.v.n) /* a stripped binary has none */
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

static void free_parts(struct sym_collect *c)
{
	for (size_t i = 0; i < c->parts.n; i++)
		free(c->parts.v[i].name);
	CT_VEC_FREE(c->parts);
}

static void free_symbols(struct sym_collect *c)
{
	for (size_t i = 0; i < c->v.n; i++)
		free(c->v.v[i].name);
	CT_VEC_FREE(c->v);
	free_parts(c);
}

static int cmp_part(const void *a, const void *b)
{
	const struct ct_part *x = a, *y = b;
	return x->of != y->of ? (x->of > y->of) - (x->of < y->of) : (x->entry > y->entry) - (x->entry < y->entry);
}

/* T's split parts (C->parts) by the function each is of: the one named as
 * the part up to its ".cold"/".warm" (T->funcs sorted, names as read). */
static void find_parts(struct ct_target *t, struct sym_collect *c)
{
	if (!c->parts.n)
		return;
	struct ct_map by_name = {0};
	for (size_t i = 0; i < t->nfuncs; i++) /* (a name two functions have: neither's) */
		map_put(&by_name, hash_str(t->funcs[i].name),
			(void *)(map_get(&by_name, hash_str(t->funcs[i].name)) ? UINTPTR_MAX : (uintptr_t)(i + 1)));
	t->parts = xcalloc(c->parts.n, sizeof(*t->parts));
	for (size_t i = 0; i < c->parts.n; i++) {
		struct ct_func *p = &c->parts.v[i];
		const char *cut = strstr(p->name, ".cold");
		const char *warm = strstr(p->name, ".warm");
		if (!cut || (warm && warm < cut))
			cut = warm;
		size_t n = (size_t)(cut - p->name), j1 = (size_t)(uintptr_t)map_get(&by_name, hash_strn(p->name, n));
		if (j1 && j1 != UINTPTR_MAX && !strncmp(t->funcs[j1 - 1].name, p->name, n) && !t->funcs[j1 - 1].name[n] &&
		    p->end > p->entry)
			t->parts[t->nparts++] = (struct ct_part){t->funcs[j1 - 1].entry, p->entry, p->end};
	}
	map_free(&by_name);
	qsort(t->parts, t->nparts, sizeof(*t->parts), cmp_part);
}

const struct ct_part *ct_target_parts_of(const struct ct_target *t, uint64_t entry, size_t *n)
{
	size_t lo = 0, hi = t->nparts;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->parts[mid].of < entry)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t k = lo;
	while (k < t->nparts && t->parts[k].of == entry)
		k++;
	*n = k - lo;
	return *n ? &t->parts[lo] : NULL;
}

static void go_offsets_by_version(struct ct_target *t)
{
	ct_go_offsets_by_version(t->go_minor, &t->gcfg);
	t->gcfg_source = "table";
}


static bool in_exec_segment(const struct ct_elf *e, uint64_t addr)
{
	for (size_t i = 0; i < e->nsegs; i++)
		if ((e->segs[i].flags & PF_X) && addr >= e->segs[i].vaddr &&
		    addr < e->segs[i].vaddr + e->segs[i].filesz)
			return true;
	return false;
}

/* cgo binaries also hold C code (the cgo preamble and .c files of the
 * packages, runtime/cgo's C part, the C runtime start files), which has no
 * pclntab entry: take it from the symbol table as C functions (SysV ABI,
 * CT_FN_GO unset).  C called through cgo runs on the thread's g0 stack; the
 * probes find the goroutine it runs for through g0.m.curg.  Takes the
 * symbols it keeps out of SYMS.  Returns how many it added. */
static size_t add_c_functions(struct ct_target *t, const struct ct_pclntab *pcln,
			      struct sym_collect *syms)
{
	size_t added = 0, cap = t->nfuncs;
	uint64_t last = UINT64_MAX;
	for (size_t i = 0; i < syms->v.n; i++) {
		struct ct_func *s = &syms->v.v[i];
		if (s->entry == last || ct_pclntab_func_at(pcln, s->entry) || !in_exec_segment(&t->elf, s->entry))
			continue;
		last = s->entry;
		if (t->nfuncs == cap) {
			cap = cap ? 2 * cap : 16;
			t->funcs = xrealloc(t->funcs, cap * sizeof(*t->funcs));
		}
		struct ct_func *f = &t->funcs[t->nfuncs++];
		*f = *s;
		f->flags = 0;
		if (ct_go_must_not_probe(s->name))
			f->flags |= CT_FN_NOPROBE;
		s->name = xstrdup(s->name); /* the copy in syms is freed there */
		added++;
	}
	return added;
}

/* Under the register ABI, R14 already holds g on entry; only Go code
 * compiled for ABI0 (cgo's //go:cgo_unsafe_args stubs, main._Cfunc_*)
 * starts by loading it from TLS: "mov %fs:DISP,%r14" (64 4c 8b 34 25), or in
 * a PIE "mov $DISP,%r14; mov %fs:(%r14),%r14" (49 c7 c6 .. 64 4d 8b 36).
 * Tells such bodies apart when .symtab (and its ".abi0" names) is gone. */
static bool loads_g_from_tls(const struct ct_target *t, uint64_t entry)
{
	static const uint8_t direct[] = {0x64, 0x4c, 0x8b, 0x34, 0x25};
	static const uint8_t pie1[] = {0x49, 0xc7, 0xc6}, pie2[] = {0x64, 0x4d, 0x8b, 0x36};
	const uint8_t *p = ct_elf_bytes_at(&t->elf, entry, 11);
	return p && (!memcmp(p, direct, sizeof(direct)) ||
		     (!memcmp(p, pie1, sizeof(pie1)) && !memcmp(p + 7, pie2, sizeof(pie2))));
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
		t->module_from_path = bi.module_from_path;
	}
	ct_buildinfo_free(&bi);
	if (!t->go_version[0] && dg.go_version[0]) {
		snprintf(t->go_version, sizeof(t->go_version), "%s", dg.go_version);
		if (sscanf(dg.go_version, "go1.%d", &t->go_minor) != 1)
			t->go_minor = 0;
	}
	/* The register ABI arrived in 1.17 on amd64; DWARF says so per CU. */
	/* (A producer saying "regabi" is proof; one that does not is no
	 * proof of the contrary, so the version decides then.) */
	t->regabi = (dg.go_producer && dg.regabi) || t->go_minor >= 17;

	go_offsets_by_version(t);
	if (dg.goid_off >= 0 && dg.stack_hi_off >= 0) {
		t->gcfg.goid_off = dg.goid_off;
		t->gcfg.stack_hi_off = dg.stack_hi_off;
		if (dg.m_off >= 0)
			t->gcfg.m_off = dg.m_off;
		if (dg.curg_off >= 0)
			t->gcfg.curg_off = dg.curg_off;
		if (dg.gopc_off >= 0)
			t->gcfg.gopc_off = dg.gopc_off;
		t->gcfg_source = "DWARF";
	} else if (!t->go_minor) {
		ct_warn("%s: unknown Go version (no build info) and no DWARF: runtime.g offsets of Go 1.%d-1.%d assumed, goroutine ids may be wrong",
			t->elf.path, CT_GO_TABLE_MIN, CT_GO_TABLE_MAX);
	} else if (t->go_minor < CT_GO_TABLE_MIN || t->go_minor > CT_GO_TABLE_MAX) {
		ct_warn("Go version %s is outside the table of runtime.g layouts (1.%d-1.%d) and the binary has no DWARF: goroutine ids may be wrong",
			t->go_version, CT_GO_TABLE_MIN, CT_GO_TABLE_MAX);
	}
	/* Where g lives in TLS (ABI0 code, and C code on g0): -8 when Go
	 * links (Tlsoffset); with an external linker, runtime.tlsg's offset
	 * from the end of the (aligned) TLS block, which C __thread data
	 * before it moves.  Without .symtab, the code's own %fs loads. */
	t->gcfg.tls_g_off = CT_GO_TLS_G_OFF;
	t->tls_source = "default";
	GElf_Sym tlsg;
	int64_t code_off;
	if (ct_elf_symbol(&t->elf, "runtime.tlsg", &tlsg) && GELF_ST_TYPE(tlsg.st_info) == STT_TLS) {
		size_t nph = 0;
		elf_getphdrnum(t->elf.elf, &nph);
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(t->elf.elf, i, &ph) && ph.p_type == PT_TLS) {
				uint64_t al = ph.p_align ? ph.p_align : 1;
				uint64_t sz = (ph.p_memsz + al - 1) / al * al;
				t->gcfg.tls_g_off = (int64_t)tlsg.st_value - (int64_t)sz;
				t->tls_source = "runtime.tlsg";
			}
		}
	} else if (pcln->nfuncs &&
		   ct_go_tls_g_from_code(&t->elf, pcln->funcs[0].entry, pcln->funcs[pcln->nfuncs - 1].end,
					 &code_off)) {
		t->gcfg.tls_g_off = code_off;
		t->tls_source = "code";
	}

	t->go_text_start = pcln->text_start;
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
		if ((g->flag & CT_GO_FLAG_ASM) || !t->regabi || (sname && strstr(sname, ".abi0")) ||
		    (!sname && loads_g_from_tls(t, g->entry)))
			f->flags |= CT_FN_ABI0;
		if (g->wrapper)
			f->flags |= CT_FN_WRAPPER;
		if (ct_go_pclntab_must_not_probe(f->name) || (g->flag & CT_GO_FLAG_TOPFRAME))
			f->flags |= CT_FN_NOPROBE;
	}
	t->ncfuncs = add_c_functions(t, pcln, &syms);
	t->funcs_source = syms.v.n ? "pclntab+symtab" : "pclntab";
	free_symbols(&syms);
	return 0;
}

static int load_c(struct ct_target *t)
{
	struct ct_dwarf_go dg;
	ct_dwarf_go_facts(t->elf.path, &dg);
	t->has_dwarf = dg.have_dwarf;
	t->gccgo = ct_gccgo_detect(&t->elf, dg.gccgo_producer);
	bool symtab = ct_elf_has_symtab(&t->elf);
	if (t->gccgo) {
		snprintf(t->go_version, sizeof(t->go_version), "%s", dg.gccgo_version);
		if (!symtab)
			return ct_fail("%s is a gccgo binary without a symbol table (stripped): its Go functions cannot be found; build it without -s and do not strip it",
				       t->elf.path);
		t->main_module = ct_gccgo_main_module(t->elf.path);
	}
	struct sym_collect syms = read_symbols(t);
	t->funcs_source = t->gccgo	       ? "gccgo symtab, names demangled"
			  : t->elf.debug_elf ? "symtab of its separate debug file"
			  : symtab	       ? "symtab"
					       : "dynsym";
	/* Aliases (one address, several names) all stay, so -F free finds
	 * what is also called __libc_free; the planner probes an address once. */
	t->funcs = xcalloc(syms.v.n ? syms.v.n : 1, sizeof(*t->funcs));
	for (size_t i = 0; i < syms.v.n; i++) {
		struct ct_func *s = &syms.v.v[i];
		if (t->nfuncs && t->funcs[t->nfuncs - 1].entry == s->entry &&
		    !strcmp(t->funcs[t->nfuncs - 1].name, s->name)) {
			free(s->name); /* the same symbol twice */
			continue;
		}
		bool generated;
		char *go_name = t->gccgo ? ct_gccgo_demangle(s->name, &generated) : NULL;
		if (go_name) {
			free(s->name);
			s->name = go_name;
			if (generated)
				s->flags |= CT_FN_WRAPPER;
		} else if (t->gccgo && !strncmp(s->name, "__morestack", 11)) {
			/* -fsplit-stack: switches to a new stack segment and
			 * calls the rest of its caller there. */
			s->flags |= CT_FN_NOPROBE;
		}
		t->funcs[t->nfuncs++] = *s;
	}
	CT_VEC_FREE(syms.v);
	if (!t->gccgo)
		find_parts(t, &syms);
	free_parts(&syms);
	return 0;
}

/* Signs of a gc-built Go binary: its build id note, a .gopclntab section,
 * or build info (gccgo binaries have none of these, but are told apart
 * first anyway). */
static bool looks_like_gc_go(const struct ct_target *t)
{
	struct ct_buildinfo bi;
	GElf_Shdr sh;
	if (ct_gccgo_detect(&t->elf, false))
		return false;
	if (ct_elf_section(&t->elf, ".note.go.buildid", &sh, NULL) ||
	    ct_elf_section(&t->elf, ".gopclntab", &sh, NULL))
		return true;
	if (ct_buildinfo_read(&t->elf, &bi) == 0) {
		ct_buildinfo_free(&bi);
		return true;
	}
	return false;
}

/* Functions whose code is in a writable segment (self-modifying code, a
 * linker script's RWX section): uprobes go only where a mapping is not
 * writable (the kernel's valid_vma), so their probes would never fire. */
static void mark_writable(struct ct_target *t)
{
	for (size_t i = 0; i < t->nfuncs; i++)
		for (size_t k = 0; k < t->elf.nsegs; k++) {
			const struct ct_segment *g = &t->elf.segs[k];
			if ((g->flags & PF_W) && t->funcs[i].entry >= g->vaddr && t->funcs[i].entry < g->vaddr + g->memsz)
				t->funcs[i].flags |= CT_FN_WRITABLE;
		}
}

int ct_target_open(struct ct_target *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	if (ct_elf_open(&t->elf, path))
		return -1;
	int rc;
	if (ct_pclntab_read(&t->elf, &t->pcln) == 0) {
		t->lang = CT_LANG_GO;
		rc = load_go(t, &t->pcln); /* the table stays: source positions */
	} else if (looks_like_gc_go(t)) {
		/* Tracing it as C would miss every goroutine: say why not. */
		const char *why = ct_error();
		size_t pl = strlen(path);
		const char *w = !strncmp(why, path, pl) ? why + pl : why;
		w += strspn(w, ": ");
		rc = ct_fail("%s is a gc Go binary whose function table (pclntab) is missing or unreadable, so its functions cannot be found (%s)",
			     path, w);
	} else {
		t->lang = CT_LANG_C;
		rc = load_c(t);
	}
	if (rc) {
		ct_target_close(t);
		return -1;
	}
	qsort(t->funcs, t->nfuncs, sizeof(*t->funcs), cmp_func);
	for (size_t i = 0; i < t->nfuncs; i++)
		ct_names_init(&t->funcs[i].dm, t->funcs[i].name, ct_func_symbol_len(t->funcs[i].name, t->funcs[i].flags));
	mark_writable(t);
	if (t->lang == CT_LANG_C && !t->gccgo)
		ct_rust_read(path, t->funcs, t->nfuncs, &t->rust);
	return 0;
}

void ct_target_add_funcs(struct ct_target *t, struct ct_func *add, size_t n)
{
	if (!n)
		return;
	t->funcs = xrealloc(t->funcs, (t->nfuncs + n) * sizeof(*t->funcs));
	for (size_t i = 0; i < n; i++) {
		t->funcs[t->nfuncs] = add[i];
		ct_names_init(&t->funcs[t->nfuncs].dm, add[i].name, ct_func_symbol_len(add[i].name, add[i].flags));
		t->nfuncs++;
	}
	qsort(t->funcs, t->nfuncs, sizeof(*t->funcs), cmp_func);
}

const char *ct_target_kind(const struct ct_target *t)
{
	if (t->lang == CT_LANG_GO)
		return "Go";
	if (t->gccgo)
		return "gccgo (SysV ABI, traced per thread)";
	if (t->rust.is_rust)
		return "Rust";
	for (size_t i = 0; i < t->nfuncs; i++)
		if (t->funcs[i].dm.simple)
			return "C++/SysV";
	return "C/SysV";
}

void ct_target_close(struct ct_target *t)
{
	for (size_t i = 0; i < t->nfuncs; i++) {
		free(t->funcs[i].name);
		ct_names_free(&t->funcs[i].dm);
	}
	free(t->funcs);
	free(t->parts);
	free(t->main_module);
	ct_rust_free(&t->rust);
	ct_pclntab_free(&t->pcln);
	ct_elf_close(&t->elf);
	memset(t, 0, sizeof(*t));
}

size_t ct_target_funcs_upto(const struct ct_target *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nfuncs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->funcs[mid].entry <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct ct_func *ct_target_func_at(const struct ct_target *t, uint64_t addr)
{
	size_t lo = ct_target_funcs_upto(t, addr);
	if (!lo)
		return NULL;
	const struct ct_func *f = &t->funcs[lo - 1];
	return addr < f->end ? f : NULL;
}
