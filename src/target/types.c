/* Types and function signatures from DWARF (libdw), for Go (gc) and C.
 *
 * Everything is lazy: ct_types_open() only opens the file.  The first
 * ct_types_sig() indexes every subprogram with a code address (entry ->
 * DIE offset) in one pass over the top-level DIEs of all CUs; types are
 * converted on demand into a flat table, memoized by DIE offset.
 *
 * Go specifics (Go 1.17+ gc DWARF; see docs/reference go-abi-and-runtime §2):
 *  - a function inlined elsewhere has an abstract DIE (names, no code) and a
 *    concrete DIE (DW_AT_abstract_origin, low_pc, params pointing at the
 *    abstract ones), so names and types go through dwarf_attr_integrate;
 *  - results are params with DW_AT_variable_parameter = 1;
 *  - strings, slices, interfaces, maps, chans, funcs are recognized by
 *    DW_AT_go_kind (falling back on names and member layouts);
 *  - a named type is a typedef to a DIE of the same name: the typedef
 *    resolves to that DIE's table entry;
 *  - DW_AT_go_runtime_type is an offset from the runtime.types symbol
 *    (except uintptr's, which the linker writes as an absolute address).
 */
#include "target/types.h"
#include "target/dwarf.h"
#include "util/util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <pthread.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DW_AT_go_kind 0x2900
#define DW_AT_go_key 0x2901
#define DW_AT_go_elem 0x2902
#define DW_AT_go_embedded_field 0x2903
#define DW_AT_go_runtime_type 0x2904
#define DW_AT_go_dict_index 0x2906

/* runtime/typekind.go */
enum {
	GO_KIND_ARRAY = 17,
	GO_KIND_CHAN = 18,
	GO_KIND_FUNC = 19,
	GO_KIND_INTERFACE = 20,
	GO_KIND_MAP = 21,
	GO_KIND_PTR = 22,
	GO_KIND_SLICE = 23,
	GO_KIND_STRING = 24,
	GO_KIND_STRUCT = 25,
	GO_KIND_UNSAFE_POINTER = 26,
};

#define MAX_DEPTH 64 /* type nesting beyond this is left unknown */

struct fixup {
	uint32_t dst, src; /* dst becomes a copy of src (a C typedef), keeping its name */
	bool done;
};

struct ct_types {
	char *path;
	int fd;
	Dwarf *dw;
	bool go;

	bool indexed;
	struct ct_map funcs; /* entry -> subprogram DIE offset + 1 */

	struct ct_typetab tab;
	size_t tab_cap;
	struct ct_map memo; /* type DIE offset -> id + 1 */
	CT_VEC(struct fixup) fixups;
	int depth;

	bool rt_syms_done;
	uint64_t types_lo, types_hi; /* [runtime.types, runtime.etypes) */
	GElf_Sym wait_reasons;       /* runtime.waitReasonStrings (st_value 0: none) */
	bool rtmap_done;
	struct ct_map rtmap; /* go_rtype -> type DIE offset + 1 */
	/* entry -> struct ct_sig found before: the plan asks for a
	 * function's several times, and each walked its DWARF again */
	struct ct_map sigs;
	/* building rtmap on a thread of its own (ct_types_index_rtypes_start):
	 * it alone uses dw until joined, which every other entry point does
	 * first (join_indexer) */
	pthread_t indexer;
	bool indexing;
};

/* ---- small DIE helpers ---------------------------------------------- */

static bool die_ref(Dwarf_Die *d, unsigned at, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	return dwarf_attr(d, at, &a) && dwarf_formref_die(&a, out);
}

/* DW_AT_type, also through DW_AT_abstract_origin / DW_AT_specification. */
static bool die_type(Dwarf_Die *d, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(d, DW_AT_type, &a) && dwarf_formref_die(&a, out);
}

static bool die_udata(Dwarf_Die *d, unsigned at, uint64_t *v)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	if (!dwarf_attr(d, at, &a) || dwarf_formudata(&a, &w) != 0)
		return false;
	*v = w;
	return true;
}

static bool die_has(Dwarf_Die *d, unsigned at)
{
	Dwarf_Attribute a;
	return dwarf_attr(d, at, &a) != NULL;
}

static const char *die_name(Dwarf_Die *d)
{
	Dwarf_Attribute a;
	const char *s = dwarf_formstring(dwarf_attr_integrate(d, DW_AT_name, &a));
	return s;
}

static int go_kind(Dwarf_Die *d)
{
	uint64_t v;
	return die_udata(d, DW_AT_go_kind, &v) ? (int)v : -1;
}

/* Go as gc compiles it.  gccgo's units say DW_LANG_Go too, but gccgo
 * follows C conventions (results as the subprogram's type, SysV ABI). */
static bool die_is_go(struct ct_types *ts, Dwarf_Die *d)
{
	Dwarf_Die cu;
	if (dwarf_diecu(d, &cu, NULL, NULL)) {
		int lang = dwarf_srclang(&cu);
		if (lang > 0 && lang != DW_LANG_Go)
			return false;
		Dwarf_Attribute a;
		const char *prod = dwarf_attr(&cu, DW_AT_producer, &a) ? dwarf_formstring(&a) : NULL;
		if (prod && strstr(prod, "GNU Go"))
			return false;
		if (lang == DW_LANG_Go)
			return true;
	}
	return ts->go;
}

static uint64_t die_size(Dwarf_Die *d)
{
	uint64_t v;
	return die_udata(d, DW_AT_byte_size, &v) ? v : 0;
}

/* ---- the table ------------------------------------------------------ */

static uint32_t tab_push(struct ct_types *ts, const struct ct_type *t)
{
	if (ts->tab.n == ts->tab_cap) {
		ts->tab_cap = ts->tab_cap ? ts->tab_cap * 2 : 64;
		ts->tab.v = xrealloc(ts->tab.v, ts->tab_cap * sizeof(*ts->tab.v));
	}
	ts->tab.v[ts->tab.n] = *t;
	return (uint32_t)ts->tab.n++;
}

static void tab_init(struct ct_types *ts)
{
	if (ts->tab.n)
		return;
	struct ct_type unk = {.kind = CT_K_UNKNOWN, .name = xstrdup("?")};
	tab_push(ts, &unk);
}

static uint32_t reserve(struct ct_types *ts, Dwarf_Off off, const char *name)
{
	struct ct_type t = {.kind = CT_K_UNKNOWN, .name = xstrdup(name ? name : "?")};
	uint32_t id = tab_push(ts, &t);
	map_put(&ts->memo, off, (void *)(uintptr_t)(id + 1));
	return id;
}

/* Replaces v[id] (a placeholder) by T, taking ownership of T's strings. */
static void settle(struct ct_types *ts, uint32_t id, struct ct_type *t)
{
	free(ts->tab.v[id].name);
	ts->tab.v[id] = *t;
}

static void copy_type(struct ct_types *ts, uint32_t dst, uint32_t src)
{
	struct ct_type t = ts->tab.v[src];
	t.name = ts->tab.v[dst].name; /* keep the typedef's name */
	if (ts->tab.v[dst].go_rtype)
		t.go_rtype = ts->tab.v[dst].go_rtype;
	if (t.nfields) {
		t.fields = xcalloc(t.nfields, sizeof(*t.fields));
		for (uint32_t i = 0; i < t.nfields; i++) {
			t.fields[i] = ts->tab.v[src].fields[i];
			t.fields[i].name = xstrdup(ts->tab.v[src].fields[i].name);
		}
	} else {
		t.fields = NULL;
	}
	ts->tab.v[dst] = t;
}

static void apply_fixups(struct ct_types *ts)
{
	bool progress = true;
	while (progress) {
		progress = false;
		for (size_t i = 0; i < ts->fixups.n; i++) {
			struct fixup *f = &ts->fixups.v[i];
			if (f->done)
				continue;
			bool src_pending = false;
			for (size_t j = 0; j < ts->fixups.n; j++)
				if (!ts->fixups.v[j].done && ts->fixups.v[j].dst == f->src)
					src_pending = true;
			if (src_pending)
				continue;
			copy_type(ts, f->dst, f->src);
			f->done = true;
			progress = true;
		}
	}
	ts->fixups.n = 0;
}

/* ---- Go runtime types ------------------------------------------------ */

static void find_rt_syms(struct ct_types *ts)
{
	if (ts->rt_syms_done)
		return;
	ts->rt_syms_done = true;
	Elf *elf = dwarf_getelf(ts->dw);
	Elf_Scn *scn = NULL;
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(data, (int)i, &sym) || !sym.st_name)
				continue;
			const char *nm = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!nm || nm[0] != 'r' || strncmp(nm, "runtime.", 8))
				continue;
			if (!strcmp(nm + 8, "types"))
				ts->types_lo = sym.st_value;
			else if (!strcmp(nm + 8, "etypes"))
				ts->types_hi = sym.st_value;
			else if (!strcmp(nm + 8, "waitReasonStrings"))
				ts->wait_reasons = sym; /* (go_wait_reasons) */
		}
		break;
	}
	if (ts->types_hi <= ts->types_lo)
		ts->types_lo = ts->types_hi = 0;
}

/* LEN bytes of the ELF's file at link-time address VADDR (not NOBITS). */
static bool elf_read_vaddr(Elf *elf, uint64_t vaddr, void *out, size_t len)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC) ||
		    vaddr < sh.sh_addr || vaddr - sh.sh_addr > sh.sh_size || len > sh.sh_size - (vaddr - sh.sh_addr))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || data->d_size < sh.sh_size)
			return false;
		memcpy(out, (const uint8_t *)data->d_buf + (vaddr - sh.sh_addr), len);
		return true;
	}
	return false;
}

/* Go's runtime.waitReason (why a goroutine parks: runtime.gopark's
 * `reason`) is a uint8 whose names only the runtime's table
 * runtime.waitReasonStrings ([...]string, in the symbol table) has:
 * shown by those names ("chan receive", "select", "sleep"), as Go's own
 * goroutine dumps do, where the table can be read (a stripped binary has
 * no symbol; a PIE's pointers may be left to relocations: then numbers). */
static void go_wait_reasons(struct ct_types *ts, struct ct_type *t)
{
	find_rt_syms(ts);
	Elf *elf = dwarf_getelf(ts->dw);
	GElf_Sym tab = ts->wait_reasons;
	size_t n = tab.st_size / 16;
	if (!tab.st_value || !n || n > 256)
		return;
	struct ct_field *fs = xcalloc(n, sizeof(*fs));
	uint32_t k = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t s[2];
		char name[64];
		if (!elf_read_vaddr(elf, tab.st_value + 16 * i, s, sizeof(s)))
			break;
		if (!s[0] || !s[1] || s[1] >= sizeof(name) || !elf_read_vaddr(elf, s[0], name, s[1]))
			continue; /* (waitReasonZero's "") */
		name[s[1]] = 0;
		fs[k++] = (struct ct_field){.name = xstrdup(name), .value = (int64_t)i};
	}
	if (!k) {
		free(fs);
		return;
	}
	t->kind = CT_K_ENUM;
	t->is_signed = false;
	t->fields = fs;
	t->nfields = k;
}

/* The link-time address of the runtime._type that DIE D describes, or 0. */
static uint64_t die_rtype(struct ct_types *ts, Dwarf_Die *d)
{
	Dwarf_Attribute a;
	Dwarf_Addr v = 0;
	if (!dwarf_attr(d, DW_AT_go_runtime_type, &a))
		return 0;
	if (dwarf_formaddr(&a, &v) != 0) {
		Dwarf_Word w;
		if (dwarf_formudata(&a, &w) != 0)
			return 0;
		v = w;
	}
	if (!v)
		return 0;
	find_rt_syms(ts);
	if (!ts->types_lo)
		return 0;
	/* cmd/link writes uintptr's as an absolute address (DW_CLS_ADDRESS),
	 * every other one as an offset from runtime.types. */
	if (v >= ts->types_lo && v < ts->types_hi)
		return v;
	if (v < ts->types_hi - ts->types_lo)
		return ts->types_lo + v;
	return 0;
}

/* ---- C type names ---------------------------------------------------- */

static char *c_name(Dwarf_Die *d, int depth);

static char *c_func_name(Dwarf_Die *fn, const char *inner, int depth)
{
	Dwarf_Die rt, c;
	char *ret = die_type(fn, &rt) ? c_name(&rt, depth + 1) : xstrdup("void");
	size_t cap = 64, n = 0;
	char *args = xmalloc(cap);
	args[0] = 0;
	bool any = false;
	if (dwarf_child(fn, &c) == 0) {
		do {
			const char *piece = NULL;
			char *owned = NULL;
			if (dwarf_tag(&c) == DW_TAG_formal_parameter) {
				Dwarf_Die pt;
				owned = die_type(&c, &pt) ? c_name(&pt, depth + 1) : xstrdup("?");
				piece = owned;
			} else if (dwarf_tag(&c) == DW_TAG_unspecified_parameters) {
				piece = "...";
			} else {
				continue;
			}
			size_t need = n + strlen(piece) + 3;
			if (need > cap) {
				while (cap < need)
					cap *= 2;
				args = xrealloc(args, cap);
			}
			n += (size_t)sprintf(args + n, "%s%s", any ? ", " : "", piece);
			any = true;
			free(owned);
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	bool proto = die_has(fn, DW_AT_prototyped);
	char *s = xasprintf("%s (%s)(%s)", ret, inner, any ? args : proto ? "void" : "");
	free(ret);
	free(args);
	return s;
}

static char *c_name(Dwarf_Die *d, int depth)
{
	const char *nm = die_name(d);
	Dwarf_Die t;
	bool has_t = die_type(d, &t);
	if (depth > 16)
		return xstrdup("?");
	switch (dwarf_tag(d)) {
	case DW_TAG_base_type:
	case DW_TAG_typedef:
		return xstrdup(nm ? nm : "?");
	case DW_TAG_structure_type:
		return nm ? xasprintf("struct %s", nm) : xstrdup("struct {...}");
	case DW_TAG_union_type:
		return nm ? xasprintf("union %s", nm) : xstrdup("union {...}");
	case DW_TAG_enumeration_type:
		return nm ? xasprintf("enum %s", nm) : xstrdup("enum {...}");
	case DW_TAG_class_type:
		return xstrdup(nm ? nm : "class {...}");
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type: {
		const char *star = dwarf_tag(d) == DW_TAG_pointer_type ? "*" : "&";
		if (!has_t)
			return xasprintf("void %s", star);
		if (dwarf_tag(&t) == DW_TAG_subroutine_type)
			return c_func_name(&t, star, depth);
		char *in = c_name(&t, depth + 1);
		size_t l = strlen(in);
		char *s = xasprintf("%s%s%s", in, l && (in[l - 1] == '*' || in[l - 1] == '&') ? "" : " ", star);
		free(in);
		return s;
	}
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
	case DW_TAG_atomic_type: {
		const char *q = dwarf_tag(d) == DW_TAG_const_type      ? "const"
				: dwarf_tag(d) == DW_TAG_volatile_type ? "volatile"
				: dwarf_tag(d) == DW_TAG_restrict_type ? "restrict"
								       : "_Atomic";
		char *in = has_t ? c_name(&t, depth + 1) : xstrdup("void");
		size_t l = strlen(in);
		char *s = l && in[l - 1] == '*' ? xasprintf("%s %s", in, q) : xasprintf("%s %s", q, in);
		free(in);
		return s;
	}
	case DW_TAG_array_type: {
		char *in = has_t ? c_name(&t, depth + 1) : xstrdup("?");
		size_t cap = strlen(in) + 2, n = 0;
		char *s = xmalloc(cap);
		n = (size_t)sprintf(s, "%s ", in);
		free(in);
		Dwarf_Die sr;
		if (dwarf_child(d, &sr) == 0) {
			do {
				if (dwarf_tag(&sr) != DW_TAG_subrange_type)
					continue;
				uint64_t c = 0, ub;
				char buf[32];
				if (die_udata(&sr, DW_AT_count, &c))
					snprintf(buf, sizeof(buf), "[%llu]", (unsigned long long)c);
				else if (die_udata(&sr, DW_AT_upper_bound, &ub))
					snprintf(buf, sizeof(buf), "[%llu]", (unsigned long long)ub + 1);
				else
					snprintf(buf, sizeof(buf), "[]");
				s = xrealloc(s, cap += strlen(buf));
				n += (size_t)sprintf(s + n, "%s", buf);
			} while (dwarf_siblingof(&sr, &sr) == 0);
		}
		return s;
	}
	case DW_TAG_subroutine_type:
		return c_func_name(d, "", depth);
	case DW_TAG_unspecified_type:
		return xstrdup(nm ? nm : "?");
	default:
		return xstrdup(nm ? nm : "?");
	}
}

/* ---- conversion ------------------------------------------------------ */

static uint32_t conv(struct ct_types *ts, Dwarf_Die *d);
static void gccgo_builtin(struct ct_types *ts, struct ct_type *t);
static bool rust_variants(struct ct_types *ts, Dwarf_Die *d, struct ct_type *t);
static void rust_seq(struct ct_types *ts, Dwarf_Die *d, struct ct_type *t);
static bool cxx_by_ref(struct ct_types *ts, Dwarf_Die *d, const struct ct_type *t);
static void cxx_seq(struct ct_types *ts, Dwarf_Die *d, struct ct_type *t);
static void enumerators(Dwarf_Die *d, struct ct_type *t);

static int die_lang(Dwarf_Die *d)
{
	Dwarf_Die cu;
	return dwarf_diecu(d, &cu, NULL, NULL) ? dwarf_srclang(&cu) : -1;
}

static bool lang_is_cxx(int lang)
{
	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
	       lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

/* Rust pointers that always point to a value: references and Box<T> (raw
 * pointers are "*const T" / "*mut T"). */
static bool rust_is_ref(const char *name)
{
	return name && (name[0] == '&' || !strncmp(name, "alloc::boxed::Box<", 18));
}

static uint32_t conv_ref(struct ct_types *ts, Dwarf_Die *d, unsigned at)
{
	Dwarf_Die t;
	return die_ref(d, at, &t) ? conv(ts, &t) : CT_TYPE_NONE;
}

static uint32_t conv_type_of(struct ct_types *ts, Dwarf_Die *d)
{
	Dwarf_Die t;
	return die_type(d, &t) ? conv(ts, &t) : CT_TYPE_NONE;
}

static int cmp_field(const void *a, const void *b)
{
	const struct ct_field *x = a, *y = b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static bool member_offset(Dwarf_Die *m, uint64_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	if (!dwarf_attr(m, DW_AT_data_member_location, &a)) {
		/* Unions, and DWARF 4+ bit fields (handled by the caller). */
		*off = 0;
		return !die_has(m, DW_AT_data_bit_offset);
	}
	if (dwarf_formudata(&a, &w) == 0) {
		*off = w;
		return true;
	}
	Dwarf_Op *ops;
	size_t nops;
	if (dwarf_getlocation(&a, &ops, &nops) == 0 && nops == 1 &&
	    ops[0].atom == DW_OP_plus_uconst) {
		*off = ops[0].number;
		return true;
	}
	return false;
}

/* Where a bit-field's bits are (x86-64 is little-endian): DWARF 4+ gives
 * the bit offset from the start of the struct, DWARF 2/3 the offset of its
 * storage unit plus a bit offset counted from that unit's most significant
 * bit. */
static bool bit_field(Dwarf_Die *m, struct ct_field *f)
{
	uint64_t size = 0, pos = 0, loc = 0, unit = 0, from_msb = 0;
	if (!die_udata(m, DW_AT_bit_size, &size) || size == 0 || size > 64)
		return false;
	if (die_udata(m, DW_AT_data_bit_offset, &pos)) {
	} else if (die_udata(m, DW_AT_bit_offset, &from_msb) && die_udata(m, DW_AT_byte_size, &unit) &&
		   member_offset(m, &loc) && unit * 8 >= from_msb + size) {
		pos = loc * 8 + unit * 8 - from_msb - size;
	} else {
		return false;
	}
	if (pos / 8 > UINT32_MAX)
		return false;
	f->offset = (uint32_t)(pos / 8);
	f->bit_off = (uint8_t)(pos % 8);
	f->bit_size = (uint8_t)size;
	f->flags |= CT_FIELD_BITS;
	return true;
}

static void conv_struct_fields(struct ct_types *ts, Dwarf_Die *d, struct ct_type *t)
{
	Dwarf_Die m;
	CT_VEC(struct ct_field) fs = {0};
	if (dwarf_child(d, &m) == 0) {
		do {
			int mt = dwarf_tag(&m);
			if (mt != DW_TAG_member && mt != DW_TAG_inheritance)
				continue;
			if (die_has(&m, DW_AT_external) || die_has(&m, DW_AT_declaration))
				continue; /* C++ static members */
			uint64_t off = 0;
			/* a C++ base class: a field named after it */
			Dwarf_Die bt;
			const char *nm = mt == DW_TAG_member ? die_name(&m) : die_type(&m, &bt) ? die_name(&bt) : NULL;
			if (mt == DW_TAG_inheritance && die_has(&m, DW_AT_virtuality))
				continue; /* a virtual base is not at a fixed offset */
			struct ct_field f = {.name = xstrdup(nm ? nm : "")};
			bool bits = die_has(&m, DW_AT_bit_size) || die_has(&m, DW_AT_data_bit_offset);
			if (!member_offset(&m, &off)) {
				uint64_t bo = 0;
				die_udata(&m, DW_AT_data_bit_offset, &bo);
				off = bo / 8;
			}
			f.offset = (uint32_t)off;
			f.type = conv_type_of(ts, &m);
			if (bits && !bit_field(&m, &f))
				f.type = CT_TYPE_NONE; /* where its bits are is unclear: undescribed, not misread */
			CT_VEC_PUSH(fs, f);
		} while (dwarf_siblingof(&m, &m) == 0);
	}
	for (size_t i = 1; i < fs.n; i++)
		if (fs.v[i].offset < fs.v[i - 1].offset) {
			qsort(fs.v, fs.n, sizeof(*fs.v), cmp_field);
			break;
		}
	t->fields = fs.v;
	t->nfields = (uint32_t)fs.n;
}

static bool die_member(Dwarf_Die *st, const char *name, Dwarf_Die *out, uint64_t *off)
{
	if (dwarf_child(st, out) != 0)
		return false;
	do {
		if (dwarf_tag(out) != DW_TAG_member)
			continue;
		const char *n = dwarf_diename(out);
		if (n && !strcmp(n, name))
			return member_offset(out, off);
	} while (dwarf_siblingof(out, out) == 0);
	return false;
}

/* Go "string": {str *uint8 @0, len int @8}. */
static bool go_string_layout(Dwarf_Die *d)
{
	Dwarf_Die m;
	uint64_t o1, o2;
	return die_size(d) == 16 && die_member(d, "str", &m, &o1) && o1 == 0 &&
	       die_member(d, "len", &m, &o2) && o2 == 8;
}

/* Go slice: {array *T @0, len @8, cap @16}; the element type from
 * DW_AT_go_elem or the array member's pointee. */
static bool go_slice_layout(struct ct_types *ts, Dwarf_Die *d, uint32_t *elem, bool convert)
{
	Dwarf_Die m, pt;
	uint64_t o;
	if (die_size(d) != 24 || !die_member(d, "array", &m, &o) || o != 0)
		return false;
	Dwarf_Die lm;
	if (!die_member(d, "len", &lm, &o) || o != 8 || !die_member(d, "cap", &lm, &o) || o != 16)
		return false;
	if (!convert)
		return true;
	Dwarf_Die e;
	if (die_ref(d, DW_AT_go_elem, &e))
		*elem = conv(ts, &e);
	else if (die_type(&m, &pt) && die_type(&pt, &e))
		*elem = conv(ts, &e);
	else
		*elem = CT_TYPE_NONE;
	return true;
}

/* Does the typedef chain under an interface typedef end at runtime.eface? */
static bool go_iface_is_empty(Dwarf_Die *d)
{
	Dwarf_Die t = *d;
	for (int i = 0; i < 8; i++) {
		const char *n = dwarf_diename(&t);
		if (n && !strcmp(n, "runtime.eface"))
			return true;
		if (n && !strcmp(n, "runtime.iface"))
			return false;
		if (!die_type(&t, &t))
			break;
	}
	const char *n = dwarf_diename(d);
	return n && (!strcmp(n, "interface {}") || !strcmp(n, "any"));
}

static enum ct_kind base_kind(Dwarf_Die *d, bool *is_signed)
{
	uint64_t enc = 0;
	die_udata(d, DW_AT_encoding, &enc);
	if (is_signed)
		*is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
	switch (enc) {
	case DW_ATE_boolean:
		return CT_K_BOOL;
	case DW_ATE_signed:
	case DW_ATE_signed_char:
		return CT_K_INT;
	case DW_ATE_unsigned:
	case DW_ATE_unsigned_char:
	case DW_ATE_UTF:
	case DW_ATE_address:
		return CT_K_UINT;
	case DW_ATE_float:
		return CT_K_FLOAT;
	case DW_ATE_complex_float:
		return CT_K_COMPLEX;
	default:
		return CT_K_UNKNOWN;
	}
}

/* C: is D (qualifiers stripped) a char-sized character type? */
static bool c_is_char(Dwarf_Die *d)
{
	Dwarf_Die t = *d;
	for (int i = 0; i < 8; i++) {
		int tag = dwarf_tag(&t);
		if (tag == DW_TAG_const_type || tag == DW_TAG_volatile_type ||
		    tag == DW_TAG_restrict_type || tag == DW_TAG_atomic_type) {
			if (!die_type(&t, &t))
				return false;
			continue;
		}
		if (tag != DW_TAG_base_type || die_size(&t) != 1)
			return false;
		uint64_t enc = 0;
		die_udata(&t, DW_AT_encoding, &enc);
		return enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char ||
		       enc == DW_ATE_UTF;
	}
	return false;
}

static bool enum_signed(Dwarf_Die *d)
{
	Dwarf_Die t, e;
	if (die_type(d, &t)) {
		while (dwarf_tag(&t) == DW_TAG_typedef || dwarf_tag(&t) == DW_TAG_const_type)
			if (!die_type(&t, &t))
				break;
		bool s = false;
		if (dwarf_tag(&t) == DW_TAG_base_type) {
			base_kind(&t, &s);
			return s;
		}
	}
	/* No underlying type: signed if some enumerator is negative. */
	if (dwarf_child(d, &e) == 0) {
		do {
			Dwarf_Attribute a;
			Dwarf_Sword v;
			if (dwarf_tag(&e) == DW_TAG_enumerator &&
			    dwarf_attr(&e, DW_AT_const_value, &a) &&
			    (dwarf_whatform(&a) == DW_FORM_sdata || dwarf_whatform(&a) == DW_FORM_implicit_const ||
			     dwarf_whatform(&a) == DW_FORM_data1 || dwarf_whatform(&a) == DW_FORM_data2 ||
			     dwarf_whatform(&a) == DW_FORM_data4) &&
			    dwarf_formsdata(&a, &v) == 0 && v < 0)
				return true;
		} while (dwarf_siblingof(&e, &e) == 0);
	}
	return false;
}

/* Arrays: one subrange per dimension; C's T[a][b] becomes [a][b]T. */
static uint32_t conv_array(struct ct_types *ts, Dwarf_Die *d, uint32_t id, bool go)
{
	uint64_t dims[8];
	int nd = 0;
	Dwarf_Die sr;
	if (dwarf_child(d, &sr) == 0) {
		do {
			if (dwarf_tag(&sr) != DW_TAG_subrange_type && dwarf_tag(&sr) != DW_TAG_enumeration_type)
				continue;
			uint64_t c = 0, ub, lb = 0;
			if (!die_udata(&sr, DW_AT_count, &c)) {
				die_udata(&sr, DW_AT_lower_bound, &lb);
				c = die_udata(&sr, DW_AT_upper_bound, &ub) && ub + 1 >= lb ? ub + 1 - lb : 0;
			}
			if (nd < 8)
				dims[nd++] = c;
		} while (dwarf_siblingof(&sr, &sr) == 0);
	}
	if (nd == 0)
		dims[nd++] = 0;
	uint32_t elem = conv_type_of(ts, d);
	/* Innermost dimensions first, as anonymous arrays named by C. */
	char *ename = xstrdup(ts->tab.v[elem].name);
	for (int i = nd - 1; i >= 1; i--) {
		uint32_t esz = ts->tab.v[elem].size;
		char *nm = xasprintf("%s [%llu]", ename, (unsigned long long)dims[i]);
		struct ct_type t = {.kind = CT_K_ARRAY, .name = nm, .elem = elem,
				    .len = (uint32_t)dims[i], .size = (uint32_t)(esz * dims[i])};
		elem = tab_push(ts, &t);
		free(ename);
		ename = xstrdup(nm);
	}
	free(ename);
	const char *nm = die_name(d);
	struct ct_type t = {.kind = CT_K_ARRAY, .elem = elem, .len = (uint32_t)dims[0]};
	uint64_t sz;
	t.size = die_udata(d, DW_AT_byte_size, &sz) ? (uint32_t)sz : (uint32_t)(ts->tab.v[elem].size * dims[0]);
	t.name = nm ? xstrdup(nm) : (go ? xstrdup("?") : c_name(d, 0));
	if (go)
		t.go_rtype = die_rtype(ts, d);
	settle(ts, id, &t);
	return id;
}

static uint32_t conv_go(struct ct_types *ts, Dwarf_Die *d, Dwarf_Off off)
{
	int tag = dwarf_tag(d);
	int gk = go_kind(d);
	const char *nm = die_name(d);
	uint32_t id;
	struct ct_type t = {0};

	if (tag == DW_TAG_typedef && gk < 0) {
		Dwarf_Die tg;
		if (!die_type(d, &tg))
			return CT_TYPE_NONE;
		const char *tn = dwarf_diename(&tg);
		/* Generic shape param typedef (".param0"), or a named type's
		 * typedef to the DIE of the same name. */
		if (die_has(d, DW_AT_go_dict_index) || !nm || (tn && !strcmp(tn, nm)) ||
		    (dwarf_tag(&tg) == DW_TAG_typedef && go_kind(&tg) >= 0)) {
			id = conv(ts, &tg);
			map_put(&ts->memo, off, (void *)(uintptr_t)(id + 1));
			return id;
		}
		/* Some other alias: a copy under this name. */
		id = reserve(ts, off, nm);
		uint32_t src = conv(ts, &tg);
		struct fixup f = {id, src, false};
		CT_VEC_PUSH(ts->fixups, f);
		return id;
	}

	id = reserve(ts, off, nm);
	t.name = xstrdup(nm ? nm : "?");
	t.size = (uint32_t)die_size(d);
	t.go_rtype = die_rtype(ts, d);

	if (gk == GO_KIND_INTERFACE) {
		t.kind = go_iface_is_empty(d) ? CT_K_EFACE : CT_K_IFACE;
		t.is_error = nm && !strcmp(nm, "error");
		t.size = 16;
	} else if (gk == GO_KIND_MAP) {
		t.kind = CT_K_MAP;
		t.size = 8;
		t.key = conv_ref(ts, d, DW_AT_go_key);
		t.elem = conv_ref(ts, d, DW_AT_go_elem);
	} else if (gk == GO_KIND_CHAN) {
		t.kind = CT_K_CHAN;
		t.size = 8;
		t.elem = conv_ref(ts, d, DW_AT_go_elem);
	} else if (gk == GO_KIND_FUNC) {
		t.kind = CT_K_FUNC;
		t.size = 8;
	} else if (gk == GO_KIND_STRING || (tag == DW_TAG_structure_type && gk < 0 && nm &&
					    !strcmp(nm, "string") && go_string_layout(d))) {
		t.kind = CT_K_STRING;
		t.size = 16;
	} else if (tag == DW_TAG_structure_type &&
		   (gk == GO_KIND_SLICE || (gk < 0 && nm && !strncmp(nm, "[]", 2))) &&
		   go_slice_layout(ts, d, &t.elem, false)) {
		go_slice_layout(ts, d, &t.elem, true);
		t.kind = CT_K_SLICE;
		t.size = 24;
	} else if (gk == GO_KIND_UNSAFE_POINTER) {
		t.kind = CT_K_PTR;
		t.size = 8;
	} else {
		switch (tag) {
		case DW_TAG_base_type:
			t.kind = base_kind(d, NULL);
			if (t.kind == CT_K_UINT && !strcmp(t.name, "runtime.waitReason"))
				go_wait_reasons(ts, &t);
			break;
		case DW_TAG_pointer_type:
			t.kind = CT_K_PTR;
			t.size = 8;
			t.elem = conv_type_of(ts, d); /* none: unsafe.Pointer */
			break;
		case DW_TAG_structure_type:
			t.kind = CT_K_STRUCT;
			conv_struct_fields(ts, d, &t);
			break;
		case DW_TAG_array_type:
			free(t.name);
			return conv_array(ts, d, id, true);
		case DW_TAG_subroutine_type:
			t.kind = CT_K_FUNC;
			t.size = 8;
			break;
		case DW_TAG_typedef: {
			/* A Go kind we do not model on a typedef: a copy of the
			 * target under this name, made once the target is complete. */
			Dwarf_Die tg;
			if (die_type(d, &tg)) {
				settle(ts, id, &t);
				uint32_t src = conv(ts, &tg);
				struct fixup f = {id, src, false};
				CT_VEC_PUSH(ts->fixups, f);
				return id;
			}
			break;
		}
		default:
			t.kind = CT_K_UNKNOWN;
			break;
		}
	}
	settle(ts, id, &t);
	return id;
}

static uint32_t conv_c(struct ct_types *ts, Dwarf_Die *d, Dwarf_Off off)
{
	int tag = dwarf_tag(d);
	uint32_t id;
	Dwarf_Die tg;

	switch (tag) {
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
	case DW_TAG_atomic_type:
		/* Qualifiers are stripped: the same entry as the target. */
		if (!die_type(d, &tg)) {
			struct ct_type v = {.kind = CT_K_VOID, .name = xstrdup("void")};
			id = tab_push(ts, &v);
		} else {
			id = conv(ts, &tg);
		}
		map_put(&ts->memo, off, (void *)(uintptr_t)(id + 1));
		return id;
	case DW_TAG_typedef: {
		const char *nm = die_name(d);
		id = reserve(ts, off, nm);
		if (!die_type(d, &tg)) {
			struct ct_type v = {.kind = CT_K_VOID, .name = xstrdup(nm ? nm : "void")};
			settle(ts, id, &v);
			return id;
		}
		uint32_t src = conv(ts, &tg);
		struct fixup f = {id, src, false};
		CT_VEC_PUSH(ts->fixups, f);
		return id;
	}
	default:
		break;
	}

	int lang = die_lang(d);
	bool rust = lang == DW_LANG_Rust, cxx = lang_is_cxx(lang);
	/* Rust names every type as Rust writes it ("&str", "Option<u32>") */
	const char *rname = rust ? die_name(d) : NULL;
	char *nm = rname ? xstrdup(rname) : c_name(d, 0);
	id = reserve(ts, off, nm);
	struct ct_type t = {.name = nm, .size = (uint32_t)die_size(d)};
	switch (tag) {
	case DW_TAG_base_type: {
		uint64_t enc = 0;
		die_udata(d, DW_AT_encoding, &enc);
		t.kind = enc == DW_ATE_UTF ? CT_K_CHAR : base_kind(d, NULL);
		break;
	}
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		t.size = 8;
		if (!die_type(d, &tg)) {
			t.kind = CT_K_PTR;
		} else if (dwarf_tag(&tg) == DW_TAG_subroutine_type) {
			t.kind = CT_K_FUNC;
		} else {
			t.kind = tag != DW_TAG_pointer_type || rust_is_ref(rname) ? CT_K_REF
				 : c_is_char(&tg)				   ? CT_K_CSTRING
										   : CT_K_PTR;
			t.elem = conv(ts, &tg);
		}
		break;
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
		if (die_has(d, DW_AT_declaration)) {
			t.kind = CT_K_UNKNOWN; /* incomplete type */
			break;
		}
		t.kind = CT_K_STRUCT;
		if (rust && rust_variants(ts, d, &t))
			break;
		conv_struct_fields(ts, d, &t);
		gccgo_builtin(ts, &t);
		if (rust)
			rust_seq(ts, d, &t);
		if (cxx) {
			t.by_ref = cxx_by_ref(ts, d, &t);
			cxx_seq(ts, d, &t);
		}
		break;
	case DW_TAG_union_type:
		t.kind = die_has(d, DW_AT_declaration) ? CT_K_UNKNOWN : CT_K_UNION;
		break;
	case DW_TAG_enumeration_type:
		t.kind = CT_K_ENUM;
		t.is_signed = enum_signed(d);
		if (!t.size)
			t.size = 4;
		enumerators(d, &t);
		break;
	case DW_TAG_array_type:
		free(nm);
		return conv_array(ts, d, id, false);
	case DW_TAG_subroutine_type:
		t.kind = CT_K_FUNC; /* a function type itself: shown like a pointer */
		t.size = 8;
		break;
	case DW_TAG_unspecified_type: /* C++ nullptr_t */
		t.kind = CT_K_PTR;
		t.size = 8;
		break;
	default:
		t.kind = CT_K_UNKNOWN;
		break;
	}
	settle(ts, id, &t);
	return id;
}

/* gccgo describes Go strings and slices as plain structs: {__data,
 * __length} and {__values, __count, __capacity}.  Same layout as gc's. */
static void gccgo_builtin(struct ct_types *ts, struct ct_type *t)
{
	const struct ct_field *f = t->fields;
	if (t->nfields == 2 && !strcmp(f[0].name, "__data") && !strcmp(f[1].name, "__length") && t->size == 16) {
		t->kind = CT_K_STRING;
	} else if (t->nfields == 3 && !strcmp(f[0].name, "__values") && !strcmp(f[1].name, "__count") &&
		   !strcmp(f[2].name, "__capacity") && t->size == 24) {
		t->kind = CT_K_SLICE;
		t->elem = ts->tab.v[f[0].type].elem;
	} else {
		return;
	}
	for (uint32_t i = 0; i < t->nfields; i++)
		free(t->fields[i].name);
	free(t->fields);
	t->fields = NULL;
	t->nfields = 0;
}

/* ---- C++ and Rust ---------------------------------------------------- */

static uint64_t mask_of(uint32_t size)
{
	return size >= 8 ? ~0ULL : (1ULL << (size * 8)) - 1;
}

/* C, C++ and Rust enumerations: the enumerators, each as a field with its
 * value (the bits of the enum's size), for showing values by name. */
static void enumerators(Dwarf_Die *d, struct ct_type *t)
{
	CT_VEC(struct ct_field) fs = {0};
	Dwarf_Die e;
	if (dwarf_child(d, &e) == 0) {
		do {
			Dwarf_Attribute a;
			Dwarf_Word u;
			const char *nm = die_name(&e);
			if (dwarf_tag(&e) != DW_TAG_enumerator || !nm || !dwarf_attr(&e, DW_AT_const_value, &a) ||
			    dwarf_formudata(&a, &u) != 0)
				continue;
			struct ct_field f = {.name = xstrdup(nm), .value = (int64_t)(u & mask_of(t->size))};
			CT_VEC_PUSH(fs, f);
		} while (fs.n < 1024 && dwarf_siblingof(&e, &e) == 0);
	}
	t->fields = fs.v;
	t->nfields = (uint32_t)fs.n;
}

/* Type ID, or what it will be a copy of once the typedefs being converted
 * are settled (apply_fixups). */
static const struct ct_type *resolved(const struct ct_types *ts, uint32_t id)
{
	for (int hops = 0; hops < 16; hops++) {
		size_t i = 0;
		while (i < ts->fixups.n && (ts->fixups.v[i].done || ts->fixups.v[i].dst != id))
			i++;
		if (i == ts->fixups.n)
			break;
		id = ts->fixups.v[i].src;
	}
	return ct_type_get(&ts->tab, id);
}

/* The scalar reached through a field named NAME (searched depth first in
 * nested structs and base classes), then through single-field wrappers
 * (Rust's Unique<T> { pointer: NonNull<T> { pointer: *const T } }). */
static bool find_leaf(const struct ct_types *ts, const struct ct_type *t, const char *name, uint32_t *off,
		      const struct ct_type **type, int depth)
{
	if (depth > 8 || t->kind != CT_K_STRUCT)
		return false;
	const struct ct_field *f = ct_type_field(t, name);
	if (f) {
		uint32_t o = f->offset;
		const struct ct_type *ty = resolved(ts, f->type);
		for (int i = 0; i < 8 && ty->kind == CT_K_STRUCT; i++) {
			const struct ct_type *w = ty;
			const struct ct_field *only = NULL;
			for (uint32_t k = 0; k < w->nfields; k++) {
				if (!resolved(ts, w->fields[k].type)->size)
					continue; /* PhantomData, allocators */
				if (only)
					return false;
				only = &w->fields[k];
			}
			if (!only)
				return false;
			o += only->offset;
			ty = resolved(ts, only->type);
		}
		*off = o;
		*type = ty;
		return true;
	}
	for (uint32_t i = 0; i < t->nfields; i++)
		if (find_leaf(ts, resolved(ts, t->fields[i].type), name, off, type, depth + 1)) {
			*off += t->fields[i].offset;
			return true;
		}
	return false;
}

/* Makes T (a struct whose fields are converted) a SEQ of ELEM whose parts
 * AS[i] ("ptr", "len", "end", "cap", "cap_end") are the scalars reached
 * through the fields named FIND[i]; the first NEED must be there. */
static bool make_seq(struct ct_types *ts, struct ct_type *t, uint32_t elem, bool text, const char *const *find,
		     const char *const *as, size_t n, size_t need)
{
	struct ct_field parts[4];
	size_t np = 0;
	for (size_t i = 0; i < n && i < 4; i++) {
		uint32_t off;
		const struct ct_type *type;
		if (find_leaf(ts, t, find[i], &off, &type, 0) && type->size == 8)
			parts[np++] = (struct ct_field){.name = xstrdup(as[i]), .offset = off,
							.type = (uint32_t)(type - ts->tab.v)};
		else if (i < need)
			break;
	}
	bool ok = np >= need && elem != CT_TYPE_NONE;
	for (size_t i = 0; i < np && !ok; i++)
		free(parts[i].name);
	if (!ok)
		return false;
	for (uint32_t i = 0; i < t->nfields; i++)
		free(t->fields[i].name);
	free(t->fields);
	t->fields = xcalloc(np, sizeof(*t->fields));
	memcpy(t->fields, parts, np * sizeof(*parts));
	t->nfields = (uint32_t)np;
	t->kind = CT_K_SEQ;
	t->elem = elem;
	t->is_text = text;
	return true;
}

/* The type a (converted) pointer field points to. */
static uint32_t pointee(struct ct_types *ts, const struct ct_type *t, const char *field)
{
	uint32_t off;
	const struct ct_type *p;
	if (!find_leaf(ts, t, field, &off, &p, 0))
		return CT_TYPE_NONE;
	return p->kind == CT_K_PTR || p->kind == CT_K_CSTRING || p->kind == CT_K_REF ? p->elem : CT_TYPE_NONE;
}

/* A template type parameter of a DWARF type ("T" of Vec<T>). */
static uint32_t template_param(struct ct_types *ts, Dwarf_Die *d, const char *name)
{
	Dwarf_Die c;
	if (dwarf_child(d, &c) != 0)
		return CT_TYPE_NONE;
	do {
		const char *n = die_name(&c);
		if (dwarf_tag(&c) == DW_TAG_template_type_parameter && n && !strcmp(n, name))
			return conv_type_of(ts, &c);
	} while (dwarf_siblingof(&c, &c) == 0);
	return CT_TYPE_NONE;
}

/* Rust's counted sequences: &str and &[T] ({data_ptr, length}), Vec<T>
 * ({buf: RawVec {ptr, cap}, len}, nested deeper in later versions) and
 * String ({vec: Vec<u8>}). */
static void rust_seq(struct ct_types *ts, Dwarf_Die *d, struct ct_type *t)
{
	static const char *const fat[] = {"data_ptr", "length"}, *const fat_as[] = {"ptr", "len"};
	static const char *const vec[] = {"ptr", "len", "cap"};
	const char *n = t->name;
	if (!strcmp(n, "&str") || !strcmp(n, "&mut str") || !strncmp(n, "&[", 2) || !strncmp(n, "&mut [", 6)) {
		make_seq(ts, t, pointee(ts, t, "data_ptr"), n[strlen(n) - 1] == 'r', fat, fat_as, 2, 2);
	} else if (!strncmp(n, "Vec<", 4)) {
		uint32_t elem = template_param(ts, d, "T");
		make_seq(ts, t, elem ? elem : pointee(ts, t, "ptr"), false, vec, vec, 3, 2);
	} else if (!strcmp(n, "String") && t->nfields == 1 && !strcmp(t->fields[0].name, "vec")) {
		const struct ct_type *v = ct_type_get(&ts->tab, t->fields[0].type);
		if (v->kind != CT_K_SEQ)
			return;
		/* the Vec's parts, at the String's offsets */
		struct ct_field *parts = xcalloc(v->nfields, sizeof(*parts));
		for (uint32_t i = 0; i < v->nfields; i++) {
			parts[i] = v->fields[i];
			parts[i].name = xstrdup(v->fields[i].name);
			parts[i].offset += t->fields[0].offset;
		}
		uint32_t elem = v->elem;
		free(t->fields[0].name);
		free(t->fields);
		t->fields = parts;
		t->nfields = v->nfields;
		t->kind = CT_K_SEQ;
		t->elem = elem;
		t->is_text = true;
	}
}

/* libstdc++'s std::string (basic_string<char>: {_M_dataplus {_M_p},
 * _M_string_length, the short-string buffer}; _M_p points into that buffer
 * or to the heap, so following it is right either way) and std::vector<T>
 * (its base's _M_impl {_M_start, _M_finish, _M_end_of_storage}). */
static void cxx_seq(struct ct_types *ts, Dwarf_Die *d, struct ct_type *t)
{
	static const char *const str[] = {"_M_p", "_M_string_length"}, *const str_as[] = {"ptr", "len"};
	static const char *const vec[] = {"_M_start", "_M_finish", "_M_end_of_storage"},
				 *const vec_as[] = {"ptr", "end", "cap_end"};
	const char *n = die_name(d);
	if (!n)
		return;
	if (!strncmp(n, "basic_string<char,", 18))
		make_seq(ts, t, pointee(ts, t, "_M_p"), true, str, str_as, 2, 2);
	else if (!strncmp(n, "vector<", 7))
		make_seq(ts, t, pointee(ts, t, "_M_start"), false, vec, vec_as, 3, 2);
}

static bool defaulted_in_class(Dwarf_Die *d)
{
	uint64_t v;
	return die_udata(d, DW_AT_defaulted, &v) && v == DW_DEFAULTED_in_class;
}

/* A constructor whose (first explicit) parameter is a reference to the
 * class: copy or move. */
static bool copy_or_move_ctor(Dwarf_Die *fn, Dwarf_Die *cls)
{
	Dwarf_Die p, rt;
	int n = 0;
	if (dwarf_child(fn, &p) != 0)
		return false;
	do {
		if (dwarf_tag(&p) != DW_TAG_formal_parameter || n++ == 0) /* this */
			continue;
		if (!die_type(&p, &rt) ||
		    (dwarf_tag(&rt) != DW_TAG_reference_type && dwarf_tag(&rt) != DW_TAG_rvalue_reference_type) ||
		    !die_type(&rt, &rt))
			return false;
		while (dwarf_tag(&rt) == DW_TAG_const_type || dwarf_tag(&rt) == DW_TAG_volatile_type)
			if (!die_type(&rt, &rt))
				return false;
		return dwarf_dieoffset(&rt) == dwarf_dieoffset(cls);
	} while (dwarf_siblingof(&p, &p) == 0);
	return false;
}

/* C++: is the class non-trivial for the purposes of calls (Itanium C++ ABI
 * 3.1.2.3: a non-trivial copy or move constructor or destructor, which
 * virtual functions or bases make so too)?  Then it is passed and returned
 * through a hidden reference.  DWARF declares the members the user wrote;
 * an implicit one is non-trivial when a base's or a member's is (T's
 * fields are converted, so their types already know). */
static bool cxx_by_ref(struct ct_types *ts, Dwarf_Die *d, const struct ct_type *t)
{
	/* clang says so itself */
	uint64_t cc;
	if (die_udata(d, DW_AT_calling_convention, &cc) && (cc == DW_CC_pass_by_reference || cc == DW_CC_pass_by_value))
		return cc == DW_CC_pass_by_reference;
	for (uint32_t i = 0; i < t->nfields; i++) {
		const struct ct_type *f = resolved(ts, t->fields[i].type);
		for (int k = 0; k < 8 && f->kind == CT_K_ARRAY; k++)
			f = resolved(ts, f->elem);
		if (f->by_ref)
			return true;
	}
	const char *cls = die_name(d);
	size_t cl = cls ? strcspn(cls, "<") : 0;
	Dwarf_Die c;
	if (dwarf_child(d, &c) != 0)
		return false;
	do {
		int tag = dwarf_tag(&c);
		if ((tag == DW_TAG_subprogram || tag == DW_TAG_inheritance) && die_has(&c, DW_AT_virtuality))
			return true;
		if (tag != DW_TAG_subprogram || die_has(&c, DW_AT_artificial) || defaulted_in_class(&c))
			continue;
		const char *n = die_name(&c);
		if (n && (n[0] == '~' || (cl && !strncmp(n, cls, cl) && !n[cl] && copy_or_move_ctor(&c, d))))
			return true;
	} while (dwarf_siblingof(&c, &c) == 0);
	return false;
}

/* Rust enums: a DW_TAG_variant_part names the discriminant member
 * (DW_AT_discr, absent with one variant) and has a DW_TAG_variant per
 * variant, selected by DW_AT_discr_value (none: every other value, e.g.
 * the variant whose field holds a niche), with one member naming the
 * variant, typed by a struct of its fields at the enum's offsets. */
static bool rust_variants(struct ct_types *ts, Dwarf_Die *d, struct ct_type *t)
{
	Dwarf_Die vp, v, m, discr;
	bool found = false;
	if (dwarf_child(d, &vp) != 0)
		return false;
	do
		found = dwarf_tag(&vp) == DW_TAG_variant_part;
	while (!found && dwarf_siblingof(&vp, &vp) == 0);
	if (!found || dwarf_child(&vp, &v) != 0)
		return false;
	uint64_t doff = 0;
	uint32_t dtype = CT_TYPE_NONE;
	if (die_ref(&vp, DW_AT_discr, &discr)) {
		dtype = conv_type_of(ts, &discr);
		uint32_t dsize = ct_type_get(&ts->tab, dtype)->size;
		if (!member_offset(&discr, &doff) || !dsize || dsize > 8 || doff + dsize > t->size)
			return false;
	}
	CT_VEC(struct ct_field) fs = {0};
	do {
		if (dwarf_tag(&v) != DW_TAG_variant)
			continue;
		Dwarf_Attribute a;
		Dwarf_Word u = 0;
		bool dflt = !dwarf_attr(&v, DW_AT_discr_value, &a);
		if (die_has(&v, DW_AT_discr_list) || (!dflt && dwarf_formudata(&a, &u) != 0) ||
		    dwarf_child(&v, &m) != 0)
			goto fail;
		while (dwarf_tag(&m) != DW_TAG_member)
			if (dwarf_siblingof(&m, &m) != 0)
				goto fail;
		const char *nm = die_name(&m);
		struct ct_field f = {.name = xstrdup(nm ? nm : "?"), .type = conv_type_of(ts, &m),
				     .value = (int64_t)(u & mask_of(ct_type_get(&ts->tab, dtype)->size)),
				     .flags = dflt ? CT_FIELD_DEFAULT : 0};
		CT_VEC_PUSH(fs, f);
	} while (dwarf_siblingof(&v, &v) == 0);
	t->kind = CT_K_VARIANT;
	t->elem = dtype;
	t->len = (uint32_t)doff;
	t->fields = fs.v;
	t->nfields = (uint32_t)fs.n;
	return true;
fail:
	for (size_t i = 0; i < fs.n; i++)
		free(fs.v[i].name);
	CT_VEC_FREE(fs);
	return false;
}

static uint32_t conv(struct ct_types *ts, Dwarf_Die *d)
{
	Dwarf_Off off = dwarf_dieoffset(d);
	void *m = map_get(&ts->memo, off);
	if (m)
		return (uint32_t)((uintptr_t)m - 1);
	if (ts->depth >= MAX_DEPTH)
		return CT_TYPE_NONE;
	ts->depth++;
	uint32_t id = die_is_go(ts, d) ? conv_go(ts, d, off) : conv_c(ts, d, off);
	ts->depth--;
	if (ts->depth == 0 && ts->fixups.n)
		apply_fixups(ts);
	return id;
}

/* ---- locations ------------------------------------------------------- */

static int dwarf_reg_to_ct(unsigned r, bool *xmm)
{
	static const int8_t gp[16] = {
		CT_RAX, CT_RDX, CT_RCX, CT_RBX, CT_RSI, CT_RDI, CT_RBP, -1 /* rsp */,
		CT_R8, CT_R9, CT_R10, CT_R11, CT_R12, CT_R13, CT_R14, CT_R15,
	};
	*xmm = false;
	if (r < 16)
		return gp[r];
	if (r >= 17 && r <= 32) {
		*xmm = true;
		return CT_XMM0 + (int)(r - 17);
	}
	return -1;
}

/* How the frame base relates to the CFA at entry. */
struct fbase {
	bool ok;      /* expressible */
	int32_t cfa_off; /* frame base = CFA + cfa_off */
};

/* Parts of a value that a location leaves out (DW_OP_piece alone):
 * padding, or optimized-out bytes. */
struct gaps {
	uint32_t off[8], size[8];
	size_t n;
};

/* Evaluates EXPR into pieces; false if it uses anything we cannot express
 * (implicit values, entry values, derefs...).  Empty pieces go to GAPS. */
static bool eval_loc(const Dwarf_Op *ops, size_t n, const struct fbase *fb, uint32_t size,
		     struct ct_loc *out, struct gaps *gaps)
{
	enum { NONE, REG, XREG, MEM, REGMEM } st = NONE;
	int reg = 0;
	int64_t off = 0;
	CT_VEC(struct ct_piece) ps = {0};
	uint32_t voff = 0;
	bool xmm;

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		uint8_t a = ops[i].atom;
		if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
			if (st != NONE)
				goto fail;
			reg = dwarf_reg_to_ct(a - DW_OP_reg0, &xmm);
			if (reg < 0)
				goto fail;
			st = xmm ? XREG : REG;
		} else if (a == DW_OP_regx) {
			if (st != NONE)
				goto fail;
			reg = dwarf_reg_to_ct((unsigned)ops[i].number, &xmm);
			if (reg < 0)
				goto fail;
			st = xmm ? XREG : REG;
		} else if (a == DW_OP_fbreg) {
			if (st != NONE || !fb->ok)
				goto fail;
			st = MEM;
			off = fb->cfa_off + (int64_t)ops[i].number;
		} else if (a == DW_OP_call_frame_cfa) {
			if (st != NONE)
				goto fail;
			st = MEM;
			off = 0;
		} else if ((a >= DW_OP_breg0 && a <= DW_OP_breg31) || a == DW_OP_bregx) {
			unsigned r = a == DW_OP_bregx ? (unsigned)ops[i].number : (unsigned)(a - DW_OP_breg0);
			int64_t o = a == DW_OP_bregx ? (int64_t)ops[i].number2 : (int64_t)ops[i].number;
			if (st != NONE)
				goto fail;
			if (r == 7) { /* rsp: CFA = rsp + 8 at entry */
				st = MEM;
				off = o - 8;
			} else {
				reg = dwarf_reg_to_ct(r, &xmm);
				if (reg < 0 || xmm)
					goto fail;
				st = REGMEM;
				off = o;
			}
		} else if (a == DW_OP_plus_uconst) {
			if (st != MEM && st != REGMEM)
				goto fail;
			off += (int64_t)ops[i].number;
		} else if ((a == DW_OP_consts || a == DW_OP_constu || (a >= DW_OP_lit0 && a <= DW_OP_lit31)) &&
			   i + 1 < n && (ops[i + 1].atom == DW_OP_plus || ops[i + 1].atom == DW_OP_minus)) {
			if (st != MEM && st != REGMEM)
				goto fail;
			int64_t c = a == DW_OP_consts	 ? (int64_t)ops[i].number
				    : a == DW_OP_constu ? (int64_t)ops[i].number
							: (int64_t)(a - DW_OP_lit0);
			off += ops[i + 1].atom == DW_OP_plus ? c : -c;
			i++;
		} else if (a == DW_OP_piece) {
			if (st == NONE) {
				if (gaps->n == 8)
					goto fail;
				gaps->off[gaps->n] = voff;
				gaps->size[gaps->n++] = (uint32_t)ops[i].number;
				voff += (uint32_t)ops[i].number;
				continue;
			}
			struct ct_piece p = {.size = (uint16_t)ops[i].number, .value_off = voff};
			p.kind = st == REG ? CT_PIECE_REG : st == XREG ? CT_PIECE_XREG
				: st == MEM ? CT_PIECE_STACK : CT_PIECE_REGMEM;
			if (st == REG || st == XREG || st == REGMEM)
				p.reg = (uint8_t)reg;
			if (st == MEM || st == REGMEM) {
				if (off < INT32_MIN || off > INT32_MAX)
					goto fail;
				p.stack_off = (int32_t)off;
			}
			if ((st == REG && p.size > 8) || (st == XREG && p.size > 16))
				goto fail;
			CT_VEC_PUSH(ps, p);
			voff += (uint32_t)ops[i].number;
			st = NONE;
		} else {
			goto fail;
		}
	}
	if (st != NONE) {
		if (ps.n)
			goto fail; /* a trailing location without a size */
		struct ct_piece p = {.size = (uint16_t)size, .value_off = 0};
		p.kind = st == REG ? CT_PIECE_REG : st == XREG ? CT_PIECE_XREG
			: st == MEM ? CT_PIECE_STACK : CT_PIECE_REGMEM;
		if (st == REG || st == XREG || st == REGMEM)
			p.reg = (uint8_t)reg;
		if (st == MEM || st == REGMEM) {
			if (off < INT32_MIN || off > INT32_MAX)
				goto fail;
			p.stack_off = (int32_t)off;
		}
		if (size == 0 || (st == REG && size > 8) || (st == XREG && size > 16))
			goto fail;
		CT_VEC_PUSH(ps, p);
	}
	/* At the first instruction the callee's frame does not exist yet:
	 * memory below the CFA (the return address, then the caller's red
	 * zone) cannot hold a parameter.  -N -l results are such frame slots. */
	for (size_t i = 0; i < ps.n; i++)
		if (ps.v[i].kind == CT_PIECE_STACK && ps.v[i].stack_off < 0)
			goto fail;
	out->pieces = ps.v;
	out->n = (uint32_t)ps.n;
	return true;
fail:
	CT_VEC_FREE(ps);
	return false;
}

static bool read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned sh = 0; *p < end && sh < 64; sh += 7) {
		uint8_t b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

static bool read_sleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	int64_t r = 0;
	unsigned sh = 0;
	while (*p < end && sh < 64) {
		uint8_t b = *(*p)++;
		r |= (int64_t)((uint64_t)(b & 0x7f) << sh);
		sh += 7;
		if (!(b & 0x80)) {
			if (sh < 64 && (b & 0x40))
				r |= (int64_t)(~(uint64_t)0 << sh);
			*v = (uint64_t)r;
			return true;
		}
	}
	return false;
}

/* Decodes a location expression held in a DW_FORM_block* attribute, which
 * libdw 0.188 refuses in DWARF 4 units ("not a location list value") and
 * which gc emits for every single-expression location (DW_FORM_block1).
 * Only the operations eval_loc() understands are decoded; anything else
 * makes the whole expression unknown.  Returns the number of ops, -1. */
static int decode_block(Dwarf_Attribute *a, Dwarf_Op *ops, size_t max)
{
	Dwarf_Block b;
	if (dwarf_formblock(a, &b) != 0)
		return -1;
	const uint8_t *p = b.data, *end = b.data + b.length;
	size_t n = 0;
	while (p < end) {
		if (n == max)
			return -1;
		Dwarf_Op *o = &ops[n++];
		memset(o, 0, sizeof(*o));
		o->offset = (Dwarf_Word)(p - b.data);
		uint8_t op = *p++;
		o->atom = op;
		bool ok = true;
		if ((op >= DW_OP_reg0 && op <= DW_OP_reg31) || (op >= DW_OP_lit0 && op <= DW_OP_lit31) ||
		    op == DW_OP_call_frame_cfa || op == DW_OP_plus || op == DW_OP_minus || op == DW_OP_stack_value)
			;
		else if (op >= DW_OP_breg0 && op <= DW_OP_breg31)
			ok = read_sleb(&p, end, &o->number);
		else if (op == DW_OP_fbreg || op == DW_OP_consts)
			ok = read_sleb(&p, end, &o->number);
		else if (op == DW_OP_regx || op == DW_OP_piece || op == DW_OP_plus_uconst || op == DW_OP_constu)
			ok = read_uleb(&p, end, &o->number);
		else if (op == DW_OP_bregx)
			ok = read_uleb(&p, end, &o->number) && read_sleb(&p, end, &o->number2);
		else
			return -1;
		if (!ok)
			return -1;
	}
	return (int)n;
}

#define MAX_OPS 64

/* The location expression of attribute A valid at PC: a plain expression,
 * or the location list entry whose range contains PC.  false if none. */
static bool loc_at(Dwarf_Attribute *a, Dwarf_Addr pc, Dwarf_Op *buf, Dwarf_Op **ops, size_t *n)
{
	int r = dwarf_getlocation_addr(a, pc, ops, n, 1);
	if (r == 1)
		return true;
	if (r == 0)
		return false;
	int k = decode_block(a, buf, MAX_OPS);
	if (k < 0)
		return false;
	*ops = buf;
	*n = (size_t)k;
	return true;
}

static struct fbase frame_base(Dwarf_Die *fn, Dwarf_Addr pc)
{
	struct fbase fb = {false, 0};
	Dwarf_Attribute a;
	Dwarf_Op buf[MAX_OPS], *ops;
	size_t n;
	if (!dwarf_attr(fn, DW_AT_frame_base, &a) || !loc_at(&a, pc, buf, &ops, &n))
		return fb;
	if (n == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		fb.ok = true;
	} else if (n == 1 && ops[0].atom == DW_OP_breg7) {
		fb.ok = true; /* rsp + N at entry = CFA - 8 + N */
		fb.cfa_off = (int32_t)((int64_t)ops[0].number - 8);
	}
	return fb;
}

/* An expression only optimized code writes: a value known rather than
 * stored (a constant, an implicit value or pointer), or parts left out (an
 * empty piece).  A value computed from a register (`breg8 0; and 1;
 * stack_value`: a bool in R8; `entry_value(rdi); stack_value`: RDI as the
 * function began) is still where that register is at the entry. */
static bool optimized_expr(const Dwarf_Op *ops, size_t n)
{
	bool computed = false, from_reg = false;
	for (size_t i = 0; i < n; i++) {
		uint8_t a = ops[i].atom;
		if (a == DW_OP_implicit_value || a == DW_OP_implicit_pointer || a == DW_OP_GNU_implicit_pointer ||
		    (a == DW_OP_piece && (i == 0 || ops[i - 1].atom == DW_OP_piece)))
			return true;
		computed |= a == DW_OP_stack_value;
		from_reg |= (a >= DW_OP_reg0 && a <= DW_OP_reg31) || (a >= DW_OP_breg0 && a <= DW_OP_breg31) ||
			    a == DW_OP_regx || a == DW_OP_bregx || a == DW_OP_fbreg || a == DW_OP_entry_value ||
			    a == DW_OP_GNU_entry_value;
	}
	return computed && !from_reg;
}

/* See ct_param.constant: DW_AT_const_value, or a location at PC that
 * optimized code wrote. */
static bool given_as_constant(Dwarf_Die *p, Dwarf_Addr pc)
{
	Dwarf_Attribute a;
	Dwarf_Op buf[MAX_OPS], *ops;
	size_t n;
	if (dwarf_attr(p, DW_AT_const_value, &a))
		return true;
	return dwarf_attr(p, DW_AT_location, &a) && loc_at(&a, pc, buf, &ops, &n) && optimized_expr(ops, n);
}

/* See ct_param.optimized: no location, or a location list whose first
 * entry is not "the value is at the address in a register". */
static bool described_elsewhere(Dwarf_Die *p)
{
	Dwarf_Attribute a;
	if (!dwarf_attr(p, DW_AT_location, &a))
		return true;
	int form = (int)dwarf_whatform(&a);
	if (form != DW_FORM_sec_offset && form != DW_FORM_loclistx && form != DW_FORM_data4 &&
	    form != DW_FORM_data8)
		return false; /* one expression for the whole function */
	Dwarf_Addr base, start, end;
	Dwarf_Op *ops;
	size_t n;
	if (dwarf_getlocations(&a, 0, &base, &start, &end, &ops, &n) <= 0)
		return true;
	return !(n == 1 && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31 && ops[0].number == 0);
}

static void param_loc(Dwarf_Die *p, Dwarf_Addr pc, const struct fbase *fb, uint32_t size,
		      struct ct_loc *out, struct gaps *gaps)
{
	Dwarf_Attribute a;
	Dwarf_Op buf[MAX_OPS], *ops;
	size_t n;
	out->pieces = NULL;
	out->n = 0;
	if (!dwarf_attr(p, DW_AT_location, &a) || !loc_at(&a, pc, buf, &ops, &n))
		return;
	eval_loc(ops, n, fb, size, out, gaps);
}

/* A parameter the compiler replaced by a constant (gcc and clang give
 * DW_AT_const_value for a constant-propagated argument): one CONST piece. */
static bool const_loc(Dwarf_Die *p, uint32_t size, struct ct_loc *out)
{
	Dwarf_Attribute a;
	uint64_t v = 0;
	if (!size || size > 8 || !dwarf_attr(p, DW_AT_const_value, &a))
		return false;
	switch (dwarf_whatform(&a)) {
	case DW_FORM_sdata:
	case DW_FORM_implicit_const: {
		Dwarf_Sword s;
		if (dwarf_formsdata(&a, &s))
			return false;
		v = (uint64_t)s;
		break;
	}
	case DW_FORM_block1:
	case DW_FORM_block2:
	case DW_FORM_block4:
	case DW_FORM_block: {
		Dwarf_Block b;
		if (dwarf_formblock(&a, &b) || b.length != size)
			return false;
		memcpy(&v, b.data, size);
		break;
	}
	default: {
		Dwarf_Word u;
		if (dwarf_formudata(&a, &u))
			return false;
		v = u;
	}
	}
	out->pieces = xcalloc(1, sizeof(*out->pieces));
	out->pieces[0] = (struct ct_piece){.kind = CT_PIECE_CONST, .size = (uint16_t)size, .literal = v};
	out->n = 1;
	return true;
}

/* The scalar parts of a value in memory order; for Go, also the
 * register-assigned parts in ABI order (the algorithm of abi-internal.md:
 * structs field by field, [1]T as T, strings, slices, interfaces and
 * complex numbers as their words).  gc describes a value in registers with
 * one DWARF piece per part and pieces for padding only sometimes (an
 * optimized build has none, -N -l some), so piece i goes to leaf i's
 * offset rather than to the running sum. */
struct leaf {
	uint32_t off, size;
};

static bool leaves(const struct ct_typetab *tt, uint32_t id, uint32_t base, struct leaf *out,
		      size_t max, size_t *n, int depth)
{
	const struct ct_type *t = ct_type_get(tt, id);
	if (depth > 16)
		return false;
#define LEAF(o, sz)                                                            \
	do {                                                                   \
		if (*n == max)                                                 \
			return false;                                          \
		out[(*n)++] = (struct leaf){base + (o), (sz)};                 \
	} while (0)
	switch (t->kind) {
	case CT_K_STRUCT:
	case CT_K_SEQ: /* its parts are its scalars */
		for (uint32_t i = 0; i < t->nfields; i++)
			if (!leaves(tt, t->fields[i].type, base + t->fields[i].offset, out, max, n, depth + 1))
				return false;
		return true;
	case CT_K_VARIANT:
		return false;
	case CT_K_ARRAY:
		if (t->len == 0)
			return true;
		if (t->len == 1)
			return leaves(tt, t->elem, base, out, max, n, depth + 1);
		LEAF(0, t->size);
		return true;
	case CT_K_STRING:
	case CT_K_IFACE:
	case CT_K_EFACE:
		LEAF(0, 8);
		LEAF(8, 8);
		return true;
	case CT_K_SLICE:
		LEAF(0, 8);
		LEAF(8, 8);
		LEAF(16, 8);
		return true;
	case CT_K_COMPLEX:
		LEAF(0, t->size / 2);
		LEAF(t->size / 2, t->size / 2);
		return true;
	case CT_K_UNKNOWN:
		return false;
	default:
		if (t->size)
			LEAF(0, t->size);
		return true;
	}
#undef LEAF
}

static void loc_drop(struct ct_loc *l)
{
	free(l->pieces);
	l->pieces = NULL;
	l->n = 0;
}

/* Places Go pieces at their leaves' offsets; drops the location if the
 * pieces do not match the leaves one to one.  Gaps (empty pieces) are
 * ignored: their offsets are as unreliable as the others', and a missing
 * part shows as a missing leaf. */
static void go_fix_pieces(const struct ct_typetab *tt, uint32_t type, struct ct_loc *l,
			  bool had_gaps)
{
	if (l->n < 2 && !had_gaps)
		return;
	struct leaf lv[64];
	size_t n = 0;
	bool ok = leaves(tt, type, 0, lv, 64, &n, 0) && n == l->n;
	for (size_t i = 0; ok && i < n; i++) {
		if (l->pieces[i].size != lv[i].size)
			ok = false;
		else
			l->pieces[i].value_off = lv[i].off;
	}
	if (!ok)
		loc_drop(l);
}

/* C: a location with gaps is kept only if the gaps are padding. */
static void c_check_gaps(const struct ct_typetab *tt, uint32_t type, struct ct_loc *l,
			 const struct gaps *g)
{
	struct leaf lv[64];
	size_t n = 0;
	if (!g->n)
		return;
	if (!leaves(tt, type, 0, lv, 64, &n, 0)) {
		loc_drop(l);
		return;
	}
	for (size_t i = 0; i < g->n; i++)
		for (size_t j = 0; j < n; j++)
			if (g->off[i] < lv[j].off + lv[j].size && lv[j].off < g->off[i] + g->size[i]) {
				loc_drop(l);
				return;
			}
}

/* ---- the function index ---------------------------------------------- */

static void index_die(struct ct_types *ts, Dwarf_Die *d, int depth)
{
	do {
		int tag = dwarf_tag(d);
		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr lo;
			if (dwarf_lowpc(d, &lo) == 0) {
				if (!map_get(&ts->funcs, lo))
					map_put(&ts->funcs, lo, (void *)(uintptr_t)(dwarf_dieoffset(d) + 1));
			} else if (die_has(d, DW_AT_ranges)) {
				Dwarf_Addr base, start, end;
				if (dwarf_ranges(d, 0, &base, &start, &end) > 0 && !map_get(&ts->funcs, start))
					map_put(&ts->funcs, start, (void *)(uintptr_t)(dwarf_dieoffset(d) + 1));
			}
		}
		/* also functions defined inside functions (C++ lambdas, local
		 * classes' members) and inside types */
		if ((tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_subprogram ||
		     tag == DW_TAG_lexical_block || tag == DW_TAG_structure_type || tag == DW_TAG_class_type) &&
		    depth < 8) {
			Dwarf_Die c;
			if (dwarf_child(d, &c) == 0)
				index_die(ts, &c, depth + 1);
		}
	} while (dwarf_siblingof(d, d) == 0);
}

static void build_index(struct ct_types *ts)
{
	if (ts->indexed)
		return;
	ts->indexed = true;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	while (dwarf_get_units(ts->dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
		Dwarf_Die c;
		if (dwarf_child(&cudie, &c) == 0)
			index_die(ts, &c, 0);
	}
}

/* ---- public API ------------------------------------------------------ */

struct ct_types *ct_types_open(const char *path, bool go)
{
	if (access(path, R_OK)) {
		ct_fail("%s: cannot open: %m", path);
		return NULL;
	}
	Dwarf *dw = ct_dwarf_shared(path); /* shared with the target's facts */
	if (!dw) {
		ct_fail("%s: no DWARF: %s", path, dwarf_errmsg(-1));
		return NULL;
	}
	struct ct_types *ts = xcalloc(1, sizeof(*ts));
	ts->path = xstrdup(path);
	ts->fd = -1;
	ts->dw = dw;
	ts->go = go;
	tab_init(ts);
	return ts;
}

/* Waits for the index thread, if one runs: TS is ours again. */
static void join_indexer(struct ct_types *ts)
{
	if (ts->indexing) {
		pthread_join(ts->indexer, NULL);
		ts->indexing = false;
	}
}

void ct_types_close(struct ct_types *ts)
{
	if (!ts)
		return;
	join_indexer(ts);
	free(ts->path); /* ts->dw is the shared handle: not ours to end */
	map_free(&ts->funcs);
	map_free(&ts->memo);
	map_free(&ts->rtmap);
	MAP_FOREACH(&ts->sigs, i)
	{
		ct_sig_free(ts->sigs.vals[i]);
		free(ts->sigs.vals[i]);
	}
	map_free(&ts->sigs);
	CT_VEC_FREE(ts->fixups);
	ct_typetab_free(&ts->tab);
	free(ts);
}

const struct ct_typetab *ct_types_table(const struct ct_types *ts)
{
	return &ts->tab;
}

static bool closure_part(const char *p, size_t n)
{
	static const char *const pre[] = {"func", "deferwrap", "gowrap"};
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++) {
		size_t l = strlen(pre[i]);
		if (n > l && !strncmp(p, pre[i], l) && strspn(p + l, "0123456789") == n - l)
			return true;
	}
	return false;
}

/* Go: does this function take a hidden dictionary?  Shape instances are
 * named "pkg.F[go.shape.int_0]", "pkg.(*T[go.shape.int_0]).M" and take one;
 * closures inside them ("...].func1", "...].M.func2", gowrapN, deferwrapN)
 * reach it through their context and do not, though they carry the same
 * ".paramN" typedefs with DW_AT_go_dict_index.  Those typedefs decide only
 * when the name says nothing. */
static bool go_has_dict(Dwarf_Die *fn, const char *name)
{
	const char *s = name ? strstr(name, "[go.shape.") : NULL;
	if (!s) {
		Dwarf_Die c;
		if (dwarf_child(fn, &c) == 0) {
			do {
				if (dwarf_tag(&c) == DW_TAG_typedef && die_has(&c, DW_AT_go_dict_index))
					return true;
			} while (dwarf_siblingof(&c, &c) == 0);
		}
		return false;
	}
	/* skip the type arguments, then look at the dotted parts after them */
	int depth = 0;
	const char *p = s;
	for (; *p; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']' && --depth == 0)
			break;
	}
	if (!*p)
		return true;
	for (p++; *p;) {
		if (*p == ')' || *p == '.') {
			p++;
			continue;
		}
		size_t n = strcspn(p, ".");
		if (closure_part(p, n))
			return false;
		p += n;
	}
	return true;
}

/* A copy of S in OUT, whose own it is. */
static void sig_copy(struct ct_sig *out, const struct ct_sig *s)
{
	*out = *s;
	out->params = xcalloc(s->n ? s->n : 1, sizeof(*out->params));
	for (size_t i = 0; i < s->n; i++) {
		const struct ct_param *p = &s->params[i];
		out->params[i] = *p;
		out->params[i].name = xstrdup(p->name);
		out->params[i].entry_loc.pieces = NULL;
		if (p->entry_loc.n) {
			size_t bytes = p->entry_loc.n * sizeof(*p->entry_loc.pieces);
			out->params[i].entry_loc.pieces = xmalloc(bytes);
			memcpy(out->params[i].entry_loc.pieces, p->entry_loc.pieces, bytes);
		}
	}
}

static bool sig_of(struct ct_types *ts, uint64_t entry, struct ct_sig *out);

bool ct_types_sig(struct ct_types *ts, uint64_t entry, struct ct_sig *out)
{
	join_indexer(ts);
	const struct ct_sig *known = map_get(&ts->sigs, entry);
	if (known) {
		sig_copy(out, known);
		return true;
	}
	if (!sig_of(ts, entry, out))
		return false;
	struct ct_sig *keep = xmalloc(sizeof(*keep));
	sig_copy(keep, out);
	map_put(&ts->sigs, entry, keep);
	return true;
}

static bool sig_of(struct ct_types *ts, uint64_t entry, struct ct_sig *out)
{
	memset(out, 0, sizeof(*out));
	build_index(ts);
	void *v = map_get(&ts->funcs, entry);
	if (!v)
		return false;
	Dwarf_Die fn;
	if (!dwarf_offdie(ts->dw, (Dwarf_Off)((uintptr_t)v - 1), &fn))
		return false;
	bool go = die_is_go(ts, &fn);
	/* Rust functions follow Rust's convention unless extern "C", which
	 * (with #[no_mangle], the way C calls them) leaves no linkage name. */
	Dwarf_Attribute la;
	bool rust = !go && die_lang(&fn) == DW_LANG_Rust;
	out->rust_abi = rust && dwarf_attr_integrate(&fn, DW_AT_linkage_name, &la);
	bool external = false;
	if (!go && dwarf_attr_integrate(&fn, DW_AT_external, &la))
		dwarf_formflag(&la, &external);
	out->external = external;
	struct fbase fb = frame_base(&fn, entry);
	CT_VEC(struct ct_param) ps = {0};
	CT_VEC(Dwarf_Off) order = {0}; /* per param: its abstract DIE's offset */

	/* Parameters: the concrete DIE's own children (they point at the
	 * abstract ones for names and types). */
	Dwarf_Die c, origin;
	bool have_origin = die_ref(&fn, DW_AT_abstract_origin, &origin) ||
			   die_ref(&fn, DW_AT_specification, &origin);
	int nparams = 0;
	for (int pass = 0; pass < 2; pass++) {
		/* pass 1 (Go only): a concrete DIE without params of its own
		 * takes the abstract ones, without locations */
		Dwarf_Die *src = pass == 0 ? &fn : &origin;
		if (pass == 1 && (!have_origin || nparams || !go))
			break;
		if (dwarf_child(src, &c) != 0)
			continue;
		do {
			int tag = dwarf_tag(&c);
			if (tag == DW_TAG_unspecified_parameters) {
				out->variadic = true;
				continue;
			}
			if (tag != DW_TAG_formal_parameter)
				continue;
			nparams++;
			struct ct_param p = {0};
			const char *nm = die_name(&c);
			p.name = xstrdup(nm ? nm : "");
			p.type = conv_type_of(ts, &c);
			if (go) {
				Dwarf_Attribute a;
				bool flag = false;
				if (dwarf_attr_integrate(&c, DW_AT_variable_parameter, &a))
					dwarf_formflag(&a, &flag);
				p.is_result = flag;
			}
			struct gaps gaps = {.n = 0};
			if (pass == 0) {
				param_loc(&c, entry, &fb, ts->tab.v[p.type].size, &p.entry_loc, &gaps);
				if (!p.entry_loc.n && !go)
					const_loc(&c, ts->tab.v[p.type].size, &p.entry_loc);
			}
			p.optimized = pass == 0 && described_elsewhere(&c);
			p.constant = pass == 0 && !go && given_as_constant(&c, entry); /* gc keeps its ABI */
			if (go)
				go_fix_pieces(&ts->tab, p.type, &p.entry_loc, gaps.n > 0);
			else
				c_check_gaps(&ts->tab, p.type, &p.entry_loc, &gaps);
			/* Rust: a value of no size (a closure without captures,
			 * ()) is not passed and says nothing */
			if (rust && ts->tab.v[p.type].size == 0 && ts->tab.v[p.type].kind != CT_K_UNKNOWN) {
				free(p.name);
				free(p.entry_loc.pieces);
				continue;
			}
			/* Go 1.18-1.21 list some functions' results twice
			 * (golang/go#61357: (*body).Close() error as ~r0, ~r0):
			 * the copy would take the next result registers, garbage */
			bool repeated = false;
			for (size_t k = 0; go && *p.name && strcmp(p.name, "_") && k < ps.n; k++)
				repeated |= !strcmp(ps.v[k].name, p.name);
			if (repeated) {
				free(p.name);
				free(p.entry_loc.pieces);
				continue;
			}
			/* -N -l lists a shape instance's dictionary as ".dict":
			 * reported as go_dict, as in optimized builds */
			if (go && !p.is_result && ps.n == 0 && !strcmp(p.name, ".dict")) {
				out->go_dict = true;
				free(p.name);
				free(p.entry_loc.pieces);
				continue;
			}
			Dwarf_Die po;
			CT_VEC_PUSH(order, die_ref(&c, DW_AT_abstract_origin, &po) ? dwarf_dieoffset(&po) : dwarf_dieoffset(&c));
			CT_VEC_PUSH(ps, p);
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	/* C: a clone (gcc's "use.constprop.0.isra.0") lists the parameters
	 * that survived in its own order; show them in the source's (the
	 * abstract DIE's) */
	for (size_t i = 1; !go && i < ps.n; i++)
		for (size_t j = i; j > 0 && order.v[j - 1] > order.v[j]; j--) {
			struct ct_param tp = ps.v[j];
			ps.v[j] = ps.v[j - 1];
			ps.v[j - 1] = tp;
			Dwarf_Off to = order.v[j];
			order.v[j] = order.v[j - 1];
			order.v[j - 1] = to;
		}
	CT_VEC_FREE(order);
	/* C: a variadic marker may sit only in the abstract DIE. */
	if (!go && have_origin && !out->variadic && dwarf_child(&origin, &c) == 0) {
		do
			if (dwarf_tag(&c) == DW_TAG_unspecified_parameters)
				out->variadic = true;
		while (dwarf_siblingof(&c, &c) == 0);
	}
	if (!go) {
		Dwarf_Die rt;
		if (die_type(&fn, &rt)) {
			struct ct_param p = {.name = xstrdup(""), .is_result = true};
			p.type = conv(ts, &rt);
			/* (C++'s nullptr_t, also an unspecified type, has a name) */
			const char *rtn = dwarf_tag(&rt) == DW_TAG_unspecified_type ? die_name(&rt) : NULL;
			p.asm_word = dwarf_tag(&rt) == DW_TAG_unspecified_type && (!rtn || !*rtn);
			if (ts->tab.v[p.type].kind == CT_K_VOID || /* a typedef of void */
			    (rust && !ts->tab.v[p.type].size))  /* (), ! */
				free(p.name);
			else
				CT_VEC_PUSH(ps, p);
		}
	} else if (!out->go_dict) {
		out->go_dict = go_has_dict(&fn, die_name(&fn));
	}
	out->params = ps.v;
	out->n = ps.n;
	return true;
}

static void build_rtmap(struct ct_types *ts)
{
	if (ts->rtmap_done)
		return;
	ts->rtmap_done = true;
	find_rt_syms(ts);
	if (!ts->types_lo)
		return;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	while (dwarf_get_units(ts->dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
		Dwarf_Die c;
		if (dwarf_srclang(&cudie) != DW_LANG_Go || dwarf_child(&cudie, &c) != 0)
			continue;
		do {
			int tag = dwarf_tag(&c);
			if (tag == DW_TAG_subprogram || tag == DW_TAG_variable)
				continue;
			uint64_t rt = die_rtype(ts, &c);
			if (rt && !map_get(&ts->rtmap, rt))
				map_put(&ts->rtmap, rt, (void *)(uintptr_t)(dwarf_dieoffset(&c) + 1));
		} while (dwarf_siblingof(&c, &c) == 0);
	}
}

static void *index_rtypes(void *ts)
{
	build_rtmap(ts);
	return NULL;
}

void ct_types_index_rtypes_start(struct ct_types *ts)
{
	join_indexer(ts);
	if (!ts->rtmap_done)
		ts->indexing = pthread_create(&ts->indexer, NULL, index_rtypes, ts) == 0;
}

uint32_t ct_types_by_rtype(struct ct_types *ts, uint64_t rtype)
{
	if (!rtype)
		return CT_TYPE_NONE;
	join_indexer(ts);
	build_rtmap(ts);
	void *v = map_get(&ts->rtmap, rtype);
	Dwarf_Die d;
	if (!v || !dwarf_offdie(ts->dw, (Dwarf_Off)((uintptr_t)v - 1), &d))
		return CT_TYPE_NONE;
	return conv(ts, &d);
}

void ct_sig_free(struct ct_sig *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->params[i].name);
		free(s->params[i].entry_loc.pieces);
	}
	free(s->params);
	memset(s, 0, sizeof(*s));
}

const struct ct_type *ct_type_get(const struct ct_typetab *tt, uint32_t id)
{
	static const struct ct_type unknown = {.kind = CT_K_UNKNOWN, .name = (char *)"?"};
	if (!tt || id >= tt->n || !tt->v)
		return &unknown;
	return &tt->v[id];
}

bool ct_type_is_x87(const struct ct_type *t)
{
	uint32_t parts = t->kind == CT_K_FLOAT ? 1 : t->kind == CT_K_COMPLEX ? 2 : 0;
	return parts && t->size >= 10 * parts && t->size <= 16 * parts && !(t->name && strstr(t->name, "128"));
}

const struct ct_field *ct_type_field(const struct ct_type *t, const char *name)
{
	for (uint32_t i = 0; i < t->nfields; i++)
		if (!strcmp(t->fields[i].name, name))
			return &t->fields[i];
	return NULL;
}

void ct_typetab_free(struct ct_typetab *tt)
{
	if (!tt)
		return;
	for (size_t i = 0; i < tt->n; i++) {
		free(tt->v[i].name);
		for (uint32_t j = 0; j < tt->v[i].nfields; j++)
			free(tt->v[i].fields[j].name);
		free(tt->v[i].fields);
	}
	free(tt->v);
	tt->v = NULL;
	tt->n = 0;
}
