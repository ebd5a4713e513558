/* PLT stubs and the direct calls of them (plt.h). */
#include "plan/plt.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "plan/sites.h"
#include "target/fde.h"
#include "util/util.h"

static int cmp_stub(const void *x, const void *y)
{
	const struct ct_plt_stub *a = x, *b = y;
	return (a->addr > b->addr) - (a->addr < b->addr);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

struct stub_scan {
	struct ct_map slots; /* GOT slot -> symbol name */
	CT_VEC(struct ct_plt_stub) out;
	const uint8_t *base; /* the section's bytes, at ADDR */
	uint64_t addr;
};

static void stub_ref(void *ctx, const struct ct_code_ref *r)
{
	struct stub_scan *ss = ctx;
	if (r->kind != CT_REF_ADDR)
		return;
	const char *name = map_get(&ss->slots, r->target);
	if (!name)
		return;
	/* `jmp *slot(%rip)` starts the stub, or follows its endbr64 (.plt.sec,
	 * .plt.got with IBT) */
	static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	uint64_t at = r->at;
	if (at >= ss->addr + 4 && !memcmp(ss->base + (at - 4 - ss->addr), endbr64, 4))
		at -= 4;
	struct ct_plt_stub s = {at, name, r->at + r->len};
	CT_VEC_PUSH(ss->out, s);
}

size_t ct_plt_stubs(const struct ct_elf *e, struct ct_plt_stub **out)
{
	struct stub_scan ss = {0};
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	*out = NULL;
	if (elf_getshdrstrndx(e->elf, &shstrndx))
		return 0;
	/* the GOT slots the dynamic relocations fill with a symbol's address */
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !(sh.sh_flags & SHF_ALLOC))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		Elf_Scn *symscn = elf_getscn(e->elf, sh.sh_link);
		Elf_Data *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
		GElf_Shdr ssh;
		if (!syms || !gelf_getshdr(symscn, &ssh))
			continue;
		size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; data && i < n; i++) {
			GElf_Rela rel;
			GElf_Sym sym;
			uint32_t type, si;
			if (!gelf_getrela(data, (int)i, &rel))
				continue;
			type = GELF_R_TYPE(rel.r_info);
			si = GELF_R_SYM(rel.r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !si ||
			    !gelf_getsym(syms, (int)si, &sym))
				continue;
			const char *name = elf_strptr(e->elf, ssh.sh_link, sym.st_name);
			if (name && *name)
				map_put(&ss.slots, rel.r_offset, (void *)name);
		}
	}
	/* the stubs that jump through them */
	scn = NULL;
	while (ss.slots.n && (scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    !sh.sh_size || sh.sh_offset + sh.sh_size > e->size)
			continue;
		const char *name = elf_strptr(e->elf, shstrndx, sh.sh_name);
		if (!name || strncmp(name, ".plt", 4))
			continue;
		ss.base = e->data + sh.sh_offset;
		ss.addr = sh.sh_addr;
		ct_scan_refs(ss.base, sh.sh_size, sh.sh_addr, stub_ref, &ss);
	}
	map_free(&ss.slots);
	if (ss.out.n)
		qsort(ss.out.v, ss.out.n, sizeof(*ss.out.v), cmp_stub);
	*out = ss.out.v;
	return ss.out.n;
}

size_t ct_fde_starts(const struct ct_elf *e, uint64_t **out)
{
	GElf_Shdr sh;
	const uint8_t *b;
	*out = NULL;
	if (!ct_elf_section(e, ".eh_frame_hdr", &sh, &b) || !b || sh.sh_size < 12 || b[0] != 1)
		return 0;
	const uint8_t *p = b + 4, *end = b + sh.sh_size;
	uint8_t ptr_enc = b[1], count_enc = b[2], table_enc = b[3];
	uint64_t ignored, count;
#define HDR_PTR(enc, out) ct_eh_pointer(&p, end, enc, sh.sh_addr + (uint64_t)(p - b), sh.sh_addr, true, out)
	if (table_enc == 0xff || !HDR_PTR(ptr_enc, &ignored) || !HDR_PTR(count_enc, &count) ||
	    count > (uint64_t)(end - p) / 8)
		return 0;
	uint64_t *v = xcalloc(count ? count : 1, sizeof(*v));
	size_t n = 0;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t start, fde;
		if (!HDR_PTR(table_enc, &start) || !HDR_PTR(table_enc, &fde))
			break;
		v[n++] = start;
	}
#undef HDR_PTR
	qsort(v, n, sizeof(*v), cmp_u64);
	*out = v;
	return n;
}

static bool in_sorted(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = ct_lower_bound_u64(v, n, x);
	return lo < n && v[lo] == x;
}

/* The greatest of the NS sorted STARTS at or below AT, or FLOOR. */
static uint64_t start_below(const uint64_t *starts, size_t ns, uint64_t at, uint64_t floor)
{
	size_t lo = at == UINT64_MAX ? ns : ct_lower_bound_u64(starts, ns, at + 1); /* (past those at or below) */
	return lo && starts[lo - 1] > floor ? starts[lo - 1] : floor;
}

/* How far back from a call its confirmation decodes at most: a start
 * further away is not a function's (what lies between is not known). */
#define CALLS_TO_REACH (1u << 20)

size_t ct_calls_to(const struct ct_elf *e, const uint64_t *starts, size_t ns, const uint64_t *targets, size_t nt,
		   struct ct_call_to **out)
{
	CT_VEC(struct ct_call_to) v = {0};
	Elf_Scn *scn = NULL;
	*out = NULL;
	while (nt && (scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    sh.sh_size < 5 || sh.sh_offset + sh.sh_size > e->size)
			continue;
		const uint8_t *b = e->data + sh.sh_offset;
		for (uint64_t off = 0; off + 5 <= sh.sh_size; off++) {
			const uint8_t *hit = memchr(b + off, 0xe8, sh.sh_size - 4 - off);
			if (!hit)
				break;
			off = (uint64_t)(hit - b);
			int32_t rel;
			memcpy(&rel, hit + 1, 4);
			uint64_t at = sh.sh_addr + off, target = at + 5 + (uint64_t)(int64_t)rel;
			if (!in_sorted(targets, nt, target))
				continue;
			uint64_t from = start_below(starts, ns, at, sh.sh_addr);
			if (at - from > CALLS_TO_REACH)
				continue;
			if (ct_call_before(b + (from - sh.sh_addr), at + 5 - from, from, at + 5) != at)
				continue; /* the bytes are inside another instruction */
			struct ct_call_to c = {at, target};
			CT_VEC_PUSH(v, c);
		}
	}
	*out = v.v;
	return v.n;
}

size_t ct_plt_add_funcs(struct ct_target *t, const struct ct_selection *sel)
{
	if (t->lang != CT_LANG_C || t->gccgo)
		return 0;
	/* Only where they will be picked: stubs in the table change what
	 * the plan knows of every call of them (a known, untraced function) */
	bool asked = false;
	for (size_t i = 0; i < sel->ntrace && !asked; i++)
		asked = strstr(sel->trace[i], CT_PLT_SUFFIX) != NULL;
	if (!asked && (sel->ntrace || strcmp(t->funcs_source, "dynsym")))
		return 0;
	struct ct_plt_stub *v;
	size_t n = ct_plt_stubs(&t->elf, &v);
	struct ct_func *add = xcalloc(n ? n : 1, sizeof(*add));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && v[i].addr == v[i - 1].addr)
			continue;
		/* the stub is its jump through the GOT slot: a lazy binding
		 * stub's `push $index; jmp .plt` after it runs only until the
		 * dynamic linker jumps to the function, from that stack */
		add[k++] = (struct ct_func){.name = xasprintf("%s" CT_PLT_SUFFIX, v[i].name), .entry = v[i].addr, .end = v[i].jmp_end,
					    .args = -1, .flags = CT_FN_PLT};
	}
	ct_target_add_funcs(t, add, k);
	free(add);
	free(v);
	return k;
}
