/* Tests for src/target/types.c against the args fixtures
 * (tests/fixtures/go/args, tests/fixtures/c/args): exact signatures (names,
 * kinds, sizes, type names, results, struct layouts, element types), entry
 * locations from DWARF, Go generic dictionaries, runtime type addresses
 * checked against the runtime._type bytes in the file, and a consistency
 * sweep over every function of several fixtures. */
#include "target/elf.h"
#include "target/types.h"
#include "util/util.h"
#include "unit.h"

#include <stdbool.h>
#include <stdlib.h>

struct fx {
	struct ct_elf elf;
	struct ct_types *ts;
	const struct ct_typetab *tt;
	struct ct_sig sig;
	bool elf_open;
};

static bool fx_open(struct fx *f, const char *name, bool go)
{
	memset(f, 0, sizeof(*f));
	char *path = ct_fixture(name);
	if (!path) {
		unit_fail(__FILE__, __LINE__, "fixture %s/%s not built (run sh tests/fixtures/build.sh)",
			  ct_fixture_dir(), name);
		return false;
	}
	if (ct_elf_open(&f->elf, path) != 0) {
		unit_fail(__FILE__, __LINE__, "%s", ct_error());
		free(path);
		return false;
	}
	f->elf_open = true;
	f->ts = ct_types_open(path, go);
	free(path);
	if (!f->ts) {
		unit_fail(__FILE__, __LINE__, "ct_types_open(%s): %s", name, ct_error());
		return false;
	}
	f->tt = ct_types_table(f->ts);
	return true;
}

static void fx_close(struct fx *f)
{
	ct_sig_free(&f->sig);
	ct_types_close(f->ts);
	if (f->elf_open)
		ct_elf_close(&f->elf);
	memset(f, 0, sizeof(*f));
}

/* Loads the signature of function NAME (by its .symtab entry) into f->sig. */
static bool fx_sig(struct fx *f, const char *name)
{
	GElf_Sym sym;
	ct_sig_free(&f->sig);
	if (!ct_elf_symbol(&f->elf, name, &sym)) {
		unit_fail(__FILE__, __LINE__, "no symbol %s", name);
		return false;
	}
	if (!ct_types_sig(f->ts, sym.st_value, &f->sig)) {
		unit_fail(__FILE__, __LINE__, "no DWARF signature for %s", name);
		return false;
	}
	f->tt = ct_types_table(f->ts); /* may have grown */
	return true;
}

static const struct ct_type *ty(struct fx *f, uint32_t id)
{
	return ct_type_get(f->tt, id);
}

static const struct ct_type *pty(struct fx *f, size_t i)
{
	return i < f->sig.n ? ty(f, f->sig.params[i].type) : ct_type_get(NULL, 0);
}

static const char *reg_name(unsigned r)
{
	static const char *const n[] = {"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10",
					"r9",  "r8",  "rax", "rcx", "rdx", "rsi", "rdi"};
	static char buf[16];
	if (r < sizeof(n) / sizeof(n[0]))
		return n[r];
	if (r >= CT_XMM0 && r < CT_XMM0 + 16) {
		snprintf(buf, sizeof(buf), "x%u", r - CT_XMM0);
		return buf;
	}
	snprintf(buf, sizeof(buf), "r?%u", r);
	return buf;
}

/* "rax:8 rbx:8", "x0:8", "cfa+8:8", "[rdi+0]:16"; "" when unknown; a piece
 * whose value offset is not the running sum is marked with "@off". */
static const char *loc_str(const struct ct_loc *l)
{
	static char buf[512];
	size_t n = 0;
	uint32_t voff = 0;
	buf[0] = 0;
	for (uint32_t i = 0; i < l->n && n < sizeof(buf) - 64; i++) {
		const struct ct_piece *p = &l->pieces[i];
		if (i)
			buf[n++] = ' ';
		switch (p->kind) {
		case CT_PIECE_REG:
		case CT_PIECE_XREG:
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s:%u", reg_name(p->reg), p->size);
			break;
		case CT_PIECE_STACK:
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "cfa%+d:%u", p->stack_off, p->size);
			break;
		case CT_PIECE_REGMEM:
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "[%s%+d]:%u", reg_name(p->reg),
					      p->stack_off, p->size);
			break;
		case CT_PIECE_CONST:
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "=%llu:%u", (unsigned long long)p->literal,
					      p->size);
			break;
		default:
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "?%u", p->kind);
		}
		if (p->value_off != voff)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "@%u", p->value_off);
		voff = p->value_off + p->size;
	}
	return buf;
}

/* Checks parameter I: name, type name, kind, size, is_result. */
#define PARAM(f, i, nm, tname, k, sz, res)                                     \
	do {                                                                   \
		CHECK((i) < (f)->sig.n);                                       \
		CHECK_STR((f)->sig.params[i].name, nm);                        \
		CHECK_STR(pty(f, i)->name, tname);                             \
		CHECK_EQ_U(pty(f, i)->kind, k);                                \
		CHECK_EQ_U(pty(f, i)->size, sz);                               \
		CHECK_EQ_U((f)->sig.params[i].is_result, res);                 \
	} while (0)
#define LOC(f, i, s) CHECK_STR(loc_str(&(f)->sig.params[i].entry_loc), s)

TEST(types_open_errors)
{
	CHECK(ct_types_open("/nonexistent/calltrace-types", true) == NULL);
	/* Debian's /bin/true carries no DWARF. */
	struct ct_types *ts = ct_types_open("/bin/true", false);
	if (ts) {
		struct ct_sig s;
		/* an address where nothing starts */
		CHECK(!ct_types_sig(ts, 1, &s));
		ct_types_close(ts);
	}
	struct fx f;
	if (!fx_open(&f, "go_args", true))
		return;
	struct ct_sig s;
	CHECK(!ct_types_sig(f.ts, 1, &s));
	CHECK_EQ_U(s.n, 0);
	CHECK_STR(ct_type_get(f.tt, CT_TYPE_NONE)->name, "?");
	CHECK_EQ_U(ct_type_get(f.tt, 0xfffffff)->kind, CT_K_UNKNOWN);
	CHECK_EQ_U(ct_types_by_rtype(f.ts, 0), CT_TYPE_NONE);
	CHECK_EQ_U(ct_types_by_rtype(f.ts, 12345), CT_TYPE_NONE);
	fx_close(&f);
}

TEST(types_go_scalars)
{
	struct fx f;
	if (!fx_open(&f, "go_args", true))
		return;
	if (!fx_sig(&f, "main.Ints"))
		goto out;
	CHECK_EQ_U(f.sig.n, 6);
	CHECK(!f.sig.go_dict && !f.sig.variadic);
	PARAM(&f, 0, "a", "int8", CT_K_INT, 1, false);
	PARAM(&f, 1, "b", "int16", CT_K_INT, 2, false);
	PARAM(&f, 2, "c", "int32", CT_K_INT, 4, false);
	PARAM(&f, 3, "d", "int64", CT_K_INT, 8, false);
	PARAM(&f, 4, "e", "int", CT_K_INT, 8, false);
	PARAM(&f, 5, "~r0", "int", CT_K_INT, 8, true);
	LOC(&f, 0, "rax:1");
	LOC(&f, 1, "rbx:2");
	LOC(&f, 2, "rcx:4");
	LOC(&f, 3, "rdi:8");
	LOC(&f, 4, "rsi:8");
	LOC(&f, 5, ""); /* unnamed results have no location */

	if (!fx_sig(&f, "main.Uints"))
		goto out;
	CHECK_EQ_U(f.sig.n, 7);
	PARAM(&f, 0, "a", "uint8", CT_K_UINT, 1, false);
	PARAM(&f, 1, "b", "uint16", CT_K_UINT, 2, false);
	PARAM(&f, 2, "c", "uint32", CT_K_UINT, 4, false);
	PARAM(&f, 3, "d", "uint64", CT_K_UINT, 8, false);
	PARAM(&f, 4, "e", "uint", CT_K_UINT, 8, false);
	PARAM(&f, 5, "p", "uintptr", CT_K_UINT, 8, false);
	LOC(&f, 5, "r8:8");
	PARAM(&f, 6, "~r0", "uint", CT_K_UINT, 8, true);

	if (!fx_sig(&f, "main.Add"))
		goto out;
	CHECK_EQ_U(f.sig.n, 3);
	PARAM(&f, 0, "a", "int", CT_K_INT, 8, false);
	PARAM(&f, 1, "b", "int", CT_K_INT, 8, false);
	CHECK_EQ_U(f.sig.params[0].type, f.sig.params[1].type); /* memoized */
	LOC(&f, 0, "rax:8");
	LOC(&f, 1, "rbx:8");

	if (!fx_sig(&f, "main.Bool"))
		goto out;
	PARAM(&f, 0, "b", "bool", CT_K_BOOL, 1, false);
	LOC(&f, 0, "rax:1");
	PARAM(&f, 1, "~r0", "bool", CT_K_BOOL, 1, true);

	if (!fx_sig(&f, "main.Floats"))
		goto out;
	CHECK_EQ_U(f.sig.n, 4);
	PARAM(&f, 0, "f", "float32", CT_K_FLOAT, 4, false);
	PARAM(&f, 1, "d", "float64", CT_K_FLOAT, 8, false);
	PARAM(&f, 2, "c", "complex128", CT_K_COMPLEX, 16, false);
	PARAM(&f, 3, "~r0", "float64", CT_K_FLOAT, 8, true);
	LOC(&f, 0, "x0:4");
	LOC(&f, 1, "x1:8");
	LOC(&f, 2, "x2:8 x3:8");
	CHECK_EQ_U(f.sig.params[2].entry_loc.pieces[0].kind, CT_PIECE_XREG);

	/* type Celsius float64: the name is kept, the kind is the underlying one */
	if (!fx_sig(&f, "main.Temp"))
		goto out;
	PARAM(&f, 0, "c", "main.Celsius", CT_K_FLOAT, 8, false);
	LOC(&f, 0, "x0:8");
	PARAM(&f, 1, "~r0", "main.Celsius", CT_K_FLOAT, 8, true);
out:
	fx_close(&f);
}

TEST(types_go_composites)
{
	struct fx f;
	if (!fx_open(&f, "go_args", true))
		return;
	if (!fx_sig(&f, "main.Str"))
		goto out;
	PARAM(&f, 0, "s", "string", CT_K_STRING, 16, false);
	LOC(&f, 0, "rax:8 rbx:8");

	if (!fx_sig(&f, "main.Slices"))
		goto out;
	CHECK_EQ_U(f.sig.n, 3);
	PARAM(&f, 0, "a", "[]int", CT_K_SLICE, 24, false);
	CHECK_STR(ty(&f, pty(&f, 0)->elem)->name, "int");
	PARAM(&f, 1, "b", "[]string", CT_K_SLICE, 24, false);
	CHECK_STR(ty(&f, pty(&f, 1)->elem)->name, "string");
	CHECK_EQ_U(ty(&f, pty(&f, 1)->elem)->kind, CT_K_STRING);
	LOC(&f, 0, "rax:8 rbx:8 rcx:8");
	LOC(&f, 1, "rdi:8 rsi:8 r8:8");

	if (!fx_sig(&f, "main.Arrays"))
		goto out;
	PARAM(&f, 0, "a", "[3]uint8", CT_K_ARRAY, 3, false);
	CHECK_EQ_U(pty(&f, 0)->len, 3);
	CHECK_STR(ty(&f, pty(&f, 0)->elem)->name, "uint8");
	PARAM(&f, 1, "b", "[1]int32", CT_K_ARRAY, 4, false);
	CHECK_EQ_U(pty(&f, 1)->len, 1);
	CHECK_STR(ty(&f, pty(&f, 1)->elem)->name, "int32");
	LOC(&f, 0, "cfa+0:3"); /* [N>1]T never goes in registers */
	LOC(&f, 1, "rax:4");

	if (!fx_sig(&f, "main.ByValue"))
		goto out;
	PARAM(&f, 0, "p", "main.Point", CT_K_STRUCT, 32, false);
	const struct ct_type *pt = pty(&f, 0);
	uint32_t point_id = f.sig.params[0].type;
	CHECK_EQ_U(pt->nfields, 3);
	CHECK_STR(pt->fields[0].name, "X");
	CHECK_EQ_U(pt->fields[0].offset, 0);
	CHECK_STR(ty(&f, pt->fields[0].type)->name, "int64");
	CHECK_STR(pt->fields[1].name, "Y");
	CHECK_EQ_U(pt->fields[1].offset, 8);
	CHECK_STR(pt->fields[2].name, "Name");
	CHECK_EQ_U(pt->fields[2].offset, 16);
	CHECK_EQ_U(ty(&f, pt->fields[2].type)->kind, CT_K_STRING);
	LOC(&f, 0, "rax:8 rbx:8 rcx:8 rdi:8");

	if (!fx_sig(&f, "main.Nested"))
		goto out;
	PARAM(&f, 0, "l", "main.Line", CT_K_STRUCT, 72, false);
	const struct ct_type *lt = pty(&f, 0);
	CHECK_EQ_U(lt->nfields, 3);
	CHECK_STR(lt->fields[0].name, "A");
	CHECK_EQ_U(lt->fields[0].type, point_id); /* typedef main.Point -> the struct */
	CHECK_STR(lt->fields[1].name, "B");
	CHECK_EQ_U(lt->fields[1].offset, 32);
	CHECK_EQ_U(lt->fields[1].type, point_id);
	CHECK_STR(lt->fields[2].name, "Width");
	CHECK_EQ_U(lt->fields[2].offset, 64);
	CHECK_STR(ty(&f, lt->fields[2].type)->name, "uint16");
	LOC(&f, 0, "rax:8 rbx:8 rcx:8 rdi:8 rsi:8 r8:8 r9:8 r10:8 r11:2");

	/* gc gives one DWARF piece per register-assigned field and none for
	 * padding: pieces land at the fields' offsets */
	if (!fx_sig(&f, "main.Pad"))
		goto out;
	PARAM(&f, 0, "p", "main.Padded", CT_K_STRUCT, 24, false);
	CHECK_EQ_U(pty(&f, 0)->nfields, 4);
	CHECK_EQ_U(pty(&f, 0)->fields[3].offset, 18);
	LOC(&f, 0, "rax:1 rbx:8@8 rcx:1 rdi:2@18");

	if (!fx_sig(&f, "main.Ptrs"))
		goto out;
	PARAM(&f, 0, "p", "*int", CT_K_PTR, 8, false);
	CHECK_STR(ty(&f, pty(&f, 0)->elem)->name, "int");
	PARAM(&f, 1, "pp", "**main.Point", CT_K_PTR, 8, false);
	const struct ct_type *pp = ty(&f, pty(&f, 1)->elem);
	CHECK_STR(pp->name, "*main.Point");
	CHECK_EQ_U(pp->kind, CT_K_PTR);
	CHECK_EQ_U(pp->elem, point_id);
	PARAM(&f, 2, "s", "*string", CT_K_PTR, 8, false);
	LOC(&f, 2, "rcx:8");
out:
	fx_close(&f);
}

TEST(types_go_ifaces_maps_funcs)
{
	struct fx f;
	if (!fx_open(&f, "go_args", true))
		return;
	if (!fx_sig(&f, "main.Iface"))
		goto out;
	PARAM(&f, 0, "i", "interface {}", CT_K_EFACE, 16, false);
	CHECK(!pty(&f, 0)->is_error);
	LOC(&f, 0, "rax:8 rbx:8");
	PARAM(&f, 1, "~r0", "string", CT_K_STRING, 16, true);

	if (!fx_sig(&f, "main.Err"))
		goto out;
	PARAM(&f, 0, "e", "error", CT_K_IFACE, 16, false);
	CHECK(pty(&f, 0)->is_error);
	LOC(&f, 0, "rax:8 rbx:8");

	if (!fx_sig(&f, "main.Fail"))
		goto out;
	CHECK_EQ_U(f.sig.n, 2);
	PARAM(&f, 1, "~r0", "error", CT_K_IFACE, 16, true);
	CHECK(pty(&f, 1)->is_error);

	if (!fx_sig(&f, "main.Multi"))
		goto out;
	CHECK_EQ_U(f.sig.n, 4);
	PARAM(&f, 0, "s", "string", CT_K_STRING, 16, false);
	PARAM(&f, 1, "~r0", "string", CT_K_STRING, 16, true);
	PARAM(&f, 2, "~r1", "int", CT_K_INT, 8, true);
	PARAM(&f, 3, "~r2", "error", CT_K_IFACE, 16, true);
	CHECK(pty(&f, 3)->is_error);

	if (!fx_sig(&f, "main.Map"))
		goto out;
	PARAM(&f, 0, "m", "map[string]int", CT_K_MAP, 8, false);
	CHECK_STR(ty(&f, pty(&f, 0)->key)->name, "string");
	CHECK_EQ_U(ty(&f, pty(&f, 0)->key)->kind, CT_K_STRING);
	CHECK_STR(ty(&f, pty(&f, 0)->elem)->name, "int");
	LOC(&f, 0, "rax:8");

	if (!fx_sig(&f, "main.Chan"))
		goto out;
	PARAM(&f, 0, "c", "chan int", CT_K_CHAN, 8, false);
	CHECK_STR(ty(&f, pty(&f, 0)->elem)->name, "int");
	LOC(&f, 0, "rax:8");

	if (!fx_sig(&f, "main.Func"))
		goto out;
	PARAM(&f, 0, "f", "func(int) int", CT_K_FUNC, 8, false);
	LOC(&f, 0, "rax:8");

	if (!fx_sig(&f, "main.MakeAdder"))
		goto out;
	PARAM(&f, 0, "n", "int", CT_K_INT, 8, false);
	PARAM(&f, 1, "~r0", "func(int) int", CT_K_FUNC, 8, true);
out:
	fx_close(&f);
}

TEST(types_go_stack_results_methods)
{
	struct fx f;
	if (!fx_open(&f, "go_args", true))
		return;
	if (!fx_sig(&f, "main.Many"))
		goto out;
	CHECK_EQ_U(f.sig.n, 13);
	static const char *const regs[9] = {"rax:8", "rbx:8", "rcx:8", "rdi:8", "rsi:8",
					    "r8:8",  "r9:8",  "r10:8", "r11:8"};
	for (size_t i = 0; i < 9; i++) {
		char nm[8];
		snprintf(nm, sizeof(nm), "a%zu", i + 1);
		PARAM(&f, i, nm, "int", CT_K_INT, 8, false);
		LOC(&f, i, regs[i]);
	}
	PARAM(&f, 9, "a10", "int", CT_K_INT, 8, false);
	LOC(&f, 9, "cfa+0:8");  /* DW_OP_call_frame_cfa */
	LOC(&f, 10, "cfa+8:8"); /* DW_OP_fbreg 8, frame base = CFA */
	PARAM(&f, 11, "r1", "int", CT_K_INT, 8, true);
	PARAM(&f, 12, "r2", "int", CT_K_INT, 8, true);

	if (!fx_sig(&f, "main.Named"))
		goto out;
	CHECK_EQ_U(f.sig.n, 3);
	PARAM(&f, 1, "sum", "int", CT_K_INT, 8, true);
	PARAM(&f, 2, "ok", "bool", CT_K_BOOL, 1, true);

	/* value receiver first */
	if (!fx_sig(&f, "main.Point.Sum"))
		goto out;
	CHECK_EQ_U(f.sig.n, 2);
	PARAM(&f, 0, "p", "main.Point", CT_K_STRUCT, 32, false);
	LOC(&f, 0, "rax:8 rbx:8 rcx:8 rdi:8");
	PARAM(&f, 1, "~r0", "int64", CT_K_INT, 8, true);

	if (!fx_sig(&f, "main.(*Point).Move"))
		goto out;
	CHECK_EQ_U(f.sig.n, 2);
	PARAM(&f, 0, "p", "*main.Point", CT_K_PTR, 8, false);
	CHECK_STR(ty(&f, pty(&f, 0)->elem)->name, "main.Point");
	PARAM(&f, 1, "dx", "int64", CT_K_INT, 8, false);
	LOC(&f, 0, "rax:8");
	LOC(&f, 1, "rbx:8");

	/* the closure context is in RDX and not a parameter */
	if (!fx_sig(&f, "main.MakeAdder.func1"))
		goto out;
	CHECK_EQ_U(f.sig.n, 2);
	PARAM(&f, 0, "x", "int", CT_K_INT, 8, false);
	LOC(&f, 0, "rax:8");

	/* blank params are absent from DWARF though they take registers */
	if (!fx_sig(&f, "main.Blank"))
		goto out;
	CHECK_EQ_U(f.sig.n, 3);
	PARAM(&f, 0, "b", "int", CT_K_INT, 8, false);
	PARAM(&f, 1, "c", "float64", CT_K_FLOAT, 8, false);
	PARAM(&f, 2, "~r0", "float64", CT_K_FLOAT, 8, true);
	LOC(&f, 0, "rbx:8");
	LOC(&f, 1, "x0:8");
out:
	fx_close(&f);
}

TEST(types_go_generic)
{
	struct fx f;
	if (!fx_open(&f, "go_args", true))
		return;
	if (!fx_sig(&f, "main.Max[go.shape.int_0]"))
		goto out;
	CHECK(f.sig.go_dict);
	CHECK_EQ_U(f.sig.n, 3);
	PARAM(&f, 0, "a", "go.shape.int_0", CT_K_INT, 8, false);
	PARAM(&f, 1, "b", "go.shape.int_0", CT_K_INT, 8, false);
	PARAM(&f, 2, "~r0", "go.shape.int_0", CT_K_INT, 8, true);
	LOC(&f, 0, "rbx:8"); /* the dictionary took RAX */
	LOC(&f, 1, "rcx:8");

	if (!fx_sig(&f, "main.Max[go.shape.string_0]"))
		goto out;
	CHECK(f.sig.go_dict);
	PARAM(&f, 0, "a", "go.shape.string_0", CT_K_STRING, 16, false);
	LOC(&f, 0, "rbx:8 rcx:8");
	LOC(&f, 1, "rdi:8 rsi:8");

	if (!fx_sig(&f, "main.Max[go.shape.float64_0]"))
		goto out;
	CHECK(f.sig.go_dict);
	PARAM(&f, 0, "a", "go.shape.float64_0", CT_K_FLOAT, 8, false);
	LOC(&f, 0, "x0:8");

	if (!fx_sig(&f, "main.ForEach[go.shape.string_0]"))
		goto out;
	CHECK(f.sig.go_dict);
	CHECK_EQ_U(f.sig.n, 2);
	PARAM(&f, 0, "xs", "[]go.shape.string_0", CT_K_SLICE, 24, false);
	CHECK_EQ_U(ty(&f, pty(&f, 0)->elem)->kind, CT_K_STRING);
	PARAM(&f, 1, "f", "func(go.shape.string_0)", CT_K_FUNC, 8, false);
	LOC(&f, 0, "rbx:8 rcx:8 rdi:8");
	LOC(&f, 1, "rsi:8");

	/* a closure inside a shape instance takes no dictionary, though it
	 * carries the same go_dict_index typedefs */
	if (!fx_sig(&f, "main.Apply[go.shape.int_0].func1"))
		goto out;
	CHECK(!f.sig.go_dict);
	CHECK_EQ_U(f.sig.n, 1);
	PARAM(&f, 0, "x", "go.shape.int_0", CT_K_INT, 8, false);
	LOC(&f, 0, "rax:8");

	if (!fx_sig(&f, "main.Add"))
		goto out;
	CHECK(!f.sig.go_dict);
	if (!fx_sig(&f, "main.MakeAdder.func1"))
		goto out;
	CHECK(!f.sig.go_dict);
out:
	fx_close(&f);
}

TEST(types_go_noopt)
{
	struct fx f;
	if (!fx_open(&f, "go_args_noopt", true))
		return;
	if (!fx_sig(&f, "main.Add"))
		goto out;
	CHECK_EQ_U(f.sig.n, 3);
	PARAM(&f, 0, "a", "int", CT_K_INT, 8, false);
	LOC(&f, 0, "rax:8");
	LOC(&f, 1, "rbx:8");
	/* -N -l gives the result a slot in the callee's frame, which does
	 * not exist yet at entry: no entry location */
	PARAM(&f, 2, "~r0", "int", CT_K_INT, 8, true);
	LOC(&f, 2, "");

	if (!fx_sig(&f, "main.Many"))
		goto out;
	CHECK_EQ_U(f.sig.n, 13);
	LOC(&f, 8, "r11:8");
	LOC(&f, 9, "cfa+0:8");
	LOC(&f, 10, "cfa+8:8");

	if (!fx_sig(&f, "main.Nested"))
		goto out;
	PARAM(&f, 0, "l", "main.Line", CT_K_STRUCT, 72, false);
	LOC(&f, 0, "rax:8 rbx:8 rcx:8 rdi:8 rsi:8 r8:8 r9:8 r10:8 r11:2");

	/* -N -l lists the dictionary as a ".dict" param: folded into go_dict */
	if (!fx_sig(&f, "main.Max[go.shape.int_0]"))
		goto out;
	CHECK(f.sig.go_dict);
	CHECK_EQ_U(f.sig.n, 3);
	PARAM(&f, 0, "a", "go.shape.int_0", CT_K_INT, 8, false);
	LOC(&f, 0, "rbx:8");
	if (!fx_sig(&f, "main.Apply[go.shape.int_0].func1"))
		goto out;
	CHECK(!f.sig.go_dict);
	CHECK_EQ_U(f.sig.n, 1);

	/* here gc emits a padding piece after A but none before D */
	if (!fx_sig(&f, "main.Pad"))
		goto out;
	LOC(&f, 0, "rax:1 rbx:8@8 rcx:1 rdi:2@18");

	if (!fx_sig(&f, "main.Blank"))
		goto out;
	CHECK_EQ_U(f.sig.n, 3);
	CHECK_STR(f.sig.params[0].name, "b");
	CHECK_STR(f.sig.params[1].name, "c");
out:
	fx_close(&f);
}

/* Reads the runtime._type (Go 1.19 layout: size @0, kind @23, str nameOff
 * @40, tflag @20) at link-time address RT and checks it describes T. */
static bool check_rtype(struct fx *f, const struct ct_type *t, uint8_t want_kind,
			uint64_t types_lo, uint64_t types_hi)
{
	uint64_t rt = t->go_rtype;
	if (rt < types_lo || rt + 48 > types_hi) {
		unit_fail(__FILE__, __LINE__, "%s: rtype %#llx outside runtime.types [%#llx, %#llx)",
			  t->name, (unsigned long long)rt, (unsigned long long)types_lo,
			  (unsigned long long)types_hi);
		return false;
	}
	const uint8_t *b = ct_elf_bytes_at(&f->elf, rt, 48);
	if (!b) {
		unit_fail(__FILE__, __LINE__, "%s: rtype not in the file", t->name);
		return false;
	}
	uint64_t size;
	int32_t name_off;
	memcpy(&size, b, 8);
	memcpy(&name_off, b + 40, 4);
	uint8_t tflag = b[20], kind = b[23] & 31;
	if (size != t->size || kind != want_kind) {
		unit_fail(__FILE__, __LINE__, "%s: _type size %llu kind %u, want %u %u", t->name,
			  (unsigned long long)size, kind, t->size, want_kind);
		return false;
	}
	/* name: flags byte, varint length, bytes; tflagExtraStar (2) = a
	 * leading '*' to skip */
	const uint8_t *nb = ct_elf_bytes_at(&f->elf, types_lo + (uint64_t)name_off, 3);
	if (!nb) {
		unit_fail(__FILE__, __LINE__, "%s: name not in the file", t->name);
		return false;
	}
	size_t len = 0, i = 1;
	for (int sh = 0;; sh += 7) {
		nb = ct_elf_bytes_at(&f->elf, types_lo + (uint64_t)name_off, i + 1);
		if (!nb || sh > 28)
			return false;
		len |= (size_t)(nb[i] & 0x7f) << sh;
		if (!(nb[i++] & 0x80))
			break;
	}
	nb = ct_elf_bytes_at(&f->elf, types_lo + (uint64_t)name_off, i + len);
	if (!nb)
		return false;
	const char *s = (const char *)nb + i;
	if (tflag & 2) {
		s++;
		len--;
	}
	if (strlen(t->name) != len || memcmp(s, t->name, len)) {
		unit_fail(__FILE__, __LINE__, "_type name \"%.*s\" != \"%s\"", (int)len, s, t->name);
		return false;
	}
	return true;
}

TEST(types_go_rtype)
{
	struct fx f;
	if (!fx_open(&f, "go_args", true))
		return;
	GElf_Sym lo, hi;
	CHECK(ct_elf_symbol(&f.elf, "runtime.types", &lo));
	CHECK(ct_elf_symbol(&f.elf, "runtime.etypes", &hi));
	struct {
		const char *fn;
		size_t param;
		uint8_t kind;
	} cases[] = {
		{"main.Add", 0, 2},        /* int */
		{"main.Str", 0, 24},       /* string */
		{"main.Uints", 5, 12},     /* uintptr: an absolute address in DWARF */
		{"main.Uints", 0, 8},      /* uint8 */
		{"main.Bool", 0, 1},       /* bool */
		{"main.Err", 0, 20},       /* error */
		{"main.Iface", 0, 20},     /* interface {} */
		{"main.Map", 0, 21},       /* map[string]int */
		{"main.Chan", 0, 18},      /* chan int */
		{"main.Temp", 0, 14},      /* main.Celsius */
		{"main.Slices", 1, 23},    /* []string */
		{"main.Floats", 2, 16},    /* complex128 */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!fx_sig(&f, cases[i].fn))
			goto out;
		uint32_t id = f.sig.params[cases[i].param].type;
		const struct ct_type *t = ty(&f, id);
		if (!check_rtype(&f, t, cases[i].kind, lo.st_value, hi.st_value))
			goto out;
		uint32_t back = ct_types_by_rtype(f.ts, t->go_rtype);
		f.tt = ct_types_table(f.ts);
		if (back != id) {
			unit_fail(__FILE__, __LINE__, "%s: by_rtype gave #%u \"%s\", want #%u", t->name, back,
				  ty(&f, back)->name, id);
			goto out;
		}
	}
out:
	fx_close(&f);
}

TEST(types_c)
{
	struct fx f;
	if (!fx_open(&f, "c_args", false))
		return;
	if (!fx_sig(&f, "c_ints"))
		goto out;
	CHECK_EQ_U(f.sig.n, 9);
	CHECK(!f.sig.variadic && !f.sig.go_dict);
	PARAM(&f, 0, "a", "int", CT_K_INT, 4, false);
	PARAM(&f, 1, "b", "long int", CT_K_INT, 8, false);
	PARAM(&f, 2, "c", "short int", CT_K_INT, 2, false);
	PARAM(&f, 3, "d", "char", CT_K_INT, 1, false);
	PARAM(&f, 4, "e", "unsigned int", CT_K_UINT, 4, false);
	PARAM(&f, 5, "f", "long unsigned int", CT_K_UINT, 8, false);
	PARAM(&f, 6, "g", "signed char", CT_K_INT, 1, false);
	PARAM(&f, 7, "h", "unsigned char", CT_K_UINT, 1, false);
	PARAM(&f, 8, "", "int", CT_K_INT, 4, true);
	LOC(&f, 0, "rdi:4");
	LOC(&f, 1, "rsi:8");
	LOC(&f, 2, "rdx:2");
	LOC(&f, 3, "rcx:1");
	LOC(&f, 4, "r8:4");
	LOC(&f, 5, "r9:8");
	LOC(&f, 6, "cfa+0:1");
	LOC(&f, 7, "cfa+8:1");
	LOC(&f, 8, "");

	if (!fx_sig(&f, "c_floats"))
		goto out;
	PARAM(&f, 0, "a", "double", CT_K_FLOAT, 8, false);
	PARAM(&f, 1, "b", "float", CT_K_FLOAT, 4, false);
	PARAM(&f, 2, "c", "int", CT_K_INT, 4, false);
	PARAM(&f, 3, "", "double", CT_K_FLOAT, 8, true);
	LOC(&f, 0, "x0:8");
	LOC(&f, 1, "x1:4");
	LOC(&f, 2, "rdi:4");

	if (!fx_sig(&f, "c_strings"))
		goto out;
	PARAM(&f, 0, "s", "char *", CT_K_CSTRING, 8, false);
	PARAM(&f, 1, "cs", "const char *", CT_K_CSTRING, 8, false);
	CHECK_STR(ty(&f, pty(&f, 1)->elem)->name, "char"); /* const stripped */
	PARAM(&f, 2, "us", "const unsigned char *", CT_K_CSTRING, 8, false);
	PARAM(&f, 3, "ss", "signed char *", CT_K_CSTRING, 8, false);
	PARAM(&f, 4, "", "size_t", CT_K_UINT, 8, true);
	LOC(&f, 1, "rsi:8");

	if (!fx_sig(&f, "c_ptrs"))
		goto out;
	PARAM(&f, 0, "p", "int *", CT_K_PTR, 8, false);
	CHECK_STR(ty(&f, pty(&f, 0)->elem)->name, "int");
	PARAM(&f, 1, "v", "void *", CT_K_PTR, 8, false);
	CHECK_EQ_U(pty(&f, 1)->elem, CT_TYPE_NONE);
	PARAM(&f, 2, "sp", "struct small *", CT_K_PTR, 8, false);
	CHECK_EQ_U(ty(&f, pty(&f, 2)->elem)->kind, CT_K_STRUCT);
	CHECK_EQ_U(pty(&f, 3)->kind, CT_K_PTR);
	CHECK_STR(ty(&f, pty(&f, 3)->elem)->name, "long int");

	if (!fx_sig(&f, "c_small"))
		goto out;
	PARAM(&f, 0, "s", "struct small", CT_K_STRUCT, 8, false);
	CHECK_EQ_U(pty(&f, 0)->nfields, 2);
	CHECK_STR(pty(&f, 0)->fields[1].name, "b");
	CHECK_EQ_U(pty(&f, 0)->fields[1].offset, 4);
	LOC(&f, 0, "rdi:8");

	if (!fx_sig(&f, "c_pair"))
		goto out;
	PARAM(&f, 0, "p", "struct pair", CT_K_STRUCT, 16, false);
	LOC(&f, 0, "rdi:8 x0:8");

	if (!fx_sig(&f, "c_big"))
		goto out;
	PARAM(&f, 0, "b", "struct big", CT_K_STRUCT, 40, false);
	CHECK_EQ_U(pty(&f, 0)->nfields, 2);
	const struct ct_type *arr = ty(&f, pty(&f, 0)->fields[0].type);
	CHECK_EQ_U(arr->kind, CT_K_ARRAY);
	CHECK_EQ_U(arr->len, 4);
	CHECK_EQ_U(arr->size, 32);
	CHECK_STR(arr->name, "long int [4]");
	CHECK_EQ_U(pty(&f, 0)->fields[1].offset, 32);
	LOC(&f, 0, "cfa+0:40");

	if (!fx_sig(&f, "c_ret_small"))
		goto out;
	CHECK_EQ_U(f.sig.n, 3);
	PARAM(&f, 2, "", "struct small", CT_K_STRUCT, 8, true);

	if (!fx_sig(&f, "c_ret_big"))
		goto out;
	CHECK_EQ_U(f.sig.n, 2); /* the hidden result pointer is not in DWARF */
	PARAM(&f, 0, "x", "long int", CT_K_INT, 8, false);
	LOC(&f, 0, "rsi:8");
	PARAM(&f, 1, "", "struct big", CT_K_STRUCT, 40, true);

	if (!fx_sig(&f, "c_enum"))
		goto out;
	PARAM(&f, 0, "c", "enum color", CT_K_ENUM, 4, false);
	CHECK(!pty(&f, 0)->is_signed);
	PARAM(&f, 1, "d", "enum delta", CT_K_ENUM, 4, false);
	CHECK(pty(&f, 1)->is_signed);

	if (!fx_sig(&f, "c_union"))
		goto out;
	PARAM(&f, 0, "n", "union num", CT_K_UNION, 8, false);
	PARAM(&f, 1, "u", "u32", CT_K_UINT, 4, false); /* typedef: name kept */
	LOC(&f, 0, "rdi:8");

	if (!fx_sig(&f, "c_many"))
		goto out;
	CHECK_EQ_U(f.sig.n, 9);
	LOC(&f, 5, "r9:4");
	LOC(&f, 6, "cfa+0:4");
	LOC(&f, 7, "cfa+8:8");

	if (!fx_sig(&f, "c_sum"))
		goto out;
	CHECK(f.sig.variadic);
	CHECK_EQ_U(f.sig.n, 2);
	PARAM(&f, 0, "n", "int", CT_K_INT, 4, false);

	if (!fx_sig(&f, "c_apply"))
		goto out;
	PARAM(&f, 0, "f", "binop", CT_K_FUNC, 8, false);
	LOC(&f, 0, "rdi:8");

	if (!fx_sig(&f, "c_void"))
		goto out;
	CHECK_EQ_U(f.sig.n, 1); /* void: no result */
	PARAM(&f, 0, "out", "int *", CT_K_PTR, 8, false);
out:
	fx_close(&f);
}

struct sweep {
	struct fx *f;
	bool go;
	size_t funcs, sigs, bad;
	char why[256];
};

static void sweep_fn(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct sweep *s = ctx;
	struct ct_sig sig;
	s->funcs++;
	if (!ct_types_sig(s->f->ts, sym->st_value, &sig))
		return;
	s->sigs++;
	const struct ct_typetab *tt = ct_types_table(s->f->ts);
	for (size_t i = 0; i < sig.n; i++) {
		const struct ct_param *p = &sig.params[i];
		const struct ct_type *t = ct_type_get(tt, p->type);
		uint32_t end = 0, sum = 0;
		bool ok = p->name && p->type < tt->n;
		/* pieces in order, disjoint, inside the value, and (C: exactly,
		 * Go: up to padding) covering it */
		for (uint32_t k = 0; ok && k < p->entry_loc.n; k++) {
			const struct ct_piece *q = &p->entry_loc.pieces[k];
			ok = q->value_off >= end && q->size > 0 &&
			     (q->kind != CT_PIECE_STACK || q->stack_off >= 0) &&
			     (q->kind != CT_PIECE_REG || q->size <= 8) &&
			     (!s->go || q->value_off == end || k > 0);
			if (!s->go && q->value_off != end)
				ok = false;
			end = q->value_off + q->size;
			sum += q->size;
		}
		if (ok && p->entry_loc.n && t->kind != CT_K_UNKNOWN && t->size &&
		    (end > t->size || (!s->go && sum != t->size)))
			ok = false;
		if (!ok && !s->bad++)
			snprintf(s->why, sizeof(s->why), "%s param %zu (%s: %s) loc %s", name, i,
				 p->name ? p->name : "(null)", t->name, loc_str(&p->entry_loc));
	}
	ct_sig_free(&sig);
}

TEST(types_c_clones_and_constants)
{
	/* gcc -O2 clones use() as use.constprop.0.isra.0: its own DIE lists
	 * p (in rsi), unused (a constant) and v (split into registers DWARF
	 * does not name) in that order; shown in the source's order */
	struct fx f;
	if (!fx_open(&f, "cgraph/gcc-O2/cg_args", false))
		return;
	if (!fx_sig(&f, "use.constprop.0.isra.0"))
		goto out;
	CHECK(!f.sig.external);
	PARAM(&f, 0, "v", "struct S", CT_K_STRUCT, 16, false);
	PARAM(&f, 1, "p", "long int *", CT_K_PTR, 8, false);
	PARAM(&f, 2, "unused", "int", CT_K_INT, 4, false);
	LOC(&f, 0, "");
	LOC(&f, 1, "rsi:8");
	LOC(&f, 2, "=2:4");
	CHECK(f.sig.params[0].optimized);
	if (!fx_sig(&f, "scale"))
		goto out;
	CHECK(f.sig.external);
	fx_close(&f);

	/* clang -O2 keeps the name and drops the argument in place */
	if (!fx_open(&f, "cgraph/clang-O2/cg_args", false))
		return;
	if (!fx_sig(&f, "use"))
		goto out;
	CHECK(!f.sig.external);
	PARAM(&f, 2, "unused", "int", CT_K_INT, 4, false);
	LOC(&f, 2, "=2:4");
out:
	fx_close(&f);
}

TEST(types_sweep_fixtures)
{
	static const struct {
		const char *name;
		bool go;
	} fxs[] = {{"go_args", true}, {"go_args_noopt", true}, {"c_args", false},
		   {"go_core_pie", true}, {"gobin_cgo", true}, {"c_core", false}};
	for (size_t i = 0; i < sizeof(fxs) / sizeof(fxs[0]); i++) {
		struct fx f;
		if (!fx_open(&f, fxs[i].name, fxs[i].go))
			return;
		struct sweep s = {.f = &f, .go = fxs[i].go};
		ct_elf_each_func(&f.elf, sweep_fn, &s);
		/* every type is in range and well formed */
		const struct ct_typetab *tt = ct_types_table(f.ts);
		size_t badt = 0;
		for (size_t k = 0; k < tt->n; k++) {
			const struct ct_type *t = &tt->v[k];
			if (!t->name || t->elem >= tt->n || t->key >= tt->n)
				badt++;
			for (uint32_t j = 0; j < t->nfields; j++)
				if (t->fields[j].type >= tt->n || (j && t->fields[j].offset < t->fields[j - 1].offset))
					badt++;
		}
		fx_close(&f);
		if (s.bad || badt) {
			unit_fail(__FILE__, __LINE__, "%s: %zu bad params, %zu bad types; first: %s",
				  fxs[i].name, s.bad, badt, s.why);
			return;
		}
		/* nearly every function has DWARF (assembly and crt ones do not) */
		if (s.sigs * 10 < s.funcs * 9 && fxs[i].go) {
			unit_fail(__FILE__, __LINE__, "%s: only %zu of %zu functions have a signature",
				  fxs[i].name, s.sigs, s.funcs);
			return;
		}
	}
}
