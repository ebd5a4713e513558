/* ct_abi_assign on hand-built type tables.  Every expectation was checked
 * against real compiler output:
 *  - Go register ABI and ABI0: go1.19.8, `go build -gcflags=-S` (the TEXT
 *    line's args=0x.. is the width; `name+off(SP)` operands and the DWARF
 *    location lists at low_pc, `readelf --debug-dump=info,loc`, give the
 *    places); ABI0 frames via `go vet` (asmdecl) on an assembly stub.
 *  - SysV: gcc 12 -O2, `objdump -d` of noinline functions (CFA = 8(%rsp) at
 *    entry).  The Go and C sources are quoted above each test. */
#include "unit.h"
#include "typetab.h"

#include "plan/abi.h"

/* Go types used by the tests. */
struct gotypes {
	struct ct_typetab tt;
	uint32_t i8, i16, i32, i64, u8, bool_, f32, f64, c64, c128, str, bytes, eface, error, map,
		ptr, point, arr2int, arr1i32, big, rect, prect, mix, empty, arr0i64, arr2i8, arr3i8,
		arr1str, arr1arr1i32, arr2f64, nst;
};

static void go_types(struct gotypes *g)
{
	memset(g, 0, sizeof(*g));
	struct ct_typetab *tt = &g->tt;
	g->i8 = add_type(tt, CT_K_INT, "int8", 1);
	g->i16 = add_type(tt, CT_K_INT, "int16", 2);
	g->i32 = add_type(tt, CT_K_INT, "int32", 4);
	g->i64 = add_type(tt, CT_K_INT, "int", 8);
	g->u8 = add_type(tt, CT_K_UINT, "uint8", 1);
	g->bool_ = add_type(tt, CT_K_BOOL, "bool", 1);
	g->f32 = add_type(tt, CT_K_FLOAT, "float32", 4);
	g->f64 = add_type(tt, CT_K_FLOAT, "float64", 8);
	g->c64 = add_type(tt, CT_K_COMPLEX, "complex64", 8);
	g->c128 = add_type(tt, CT_K_COMPLEX, "complex128", 16);
	g->str = add_type(tt, CT_K_STRING, "string", 16);
	g->bytes = add_elem(tt, CT_K_SLICE, "[]uint8", 24, g->u8);
	g->eface = add_type(tt, CT_K_EFACE, "interface {}", 16);
	g->error = add_type(tt, CT_K_IFACE, "error", 16);
	tt->v[g->error].is_error = true;
	g->map = add_elem(tt, CT_K_MAP, "map[string]int", 8, g->i64);
	tt->v[g->map].key = g->str;
	g->point = add_struct(tt, CT_K_STRUCT, "main.Point", 32, 3, g->i64, 0, g->i64, 8, g->str, 16);
	g->arr2int = add_array(tt, "[2]int", g->i64, 2);
	g->arr1i32 = add_array(tt, "[1]int32", g->i32, 1);
	g->big = add_struct(tt, CT_K_STRUCT, "main.Big", 80, 10, g->i64, 0, g->i64, 8, g->i64, 16,
			    g->i64, 24, g->i64, 32, g->i64, 40, g->i64, 48, g->i64, 56, g->i64, 64,
			    g->i64, 72);
	g->rect = add_struct(tt, CT_K_STRUCT, "main.Rect", 16, 2, g->f64, 0, g->f64, 8);
	g->prect = add_elem(tt, CT_K_PTR, "*main.Rect", 8, g->rect);
	g->ptr = add_elem(tt, CT_K_PTR, "*int", 8, g->i64);
	/* type Mix struct { A int8; F float32; B int64; D float64 } */
	g->mix = add_struct(tt, CT_K_STRUCT, "main.Mix", 24, 4, g->i8, 0, g->f32, 4, g->i64, 8,
			    g->f64, 16);
	g->empty = add_struct(tt, CT_K_STRUCT, "main.Empty", 0, 0);
	g->arr0i64 = add_array(tt, "[0]int64", g->i64, 0);
	g->arr2i8 = add_array(tt, "[2]int8", g->i8, 2);
	g->arr3i8 = add_array(tt, "[3]int8", g->i8, 3);
	g->arr1str = add_array(tt, "[1]string", g->str, 1);
	g->arr1arr1i32 = add_array(tt, "[1][1]int32", g->arr1i32, 1);
	g->arr2f64 = add_array(tt, "[2]float64", g->f64, 2);
	/* type NSt struct { A [1]float32; B struct { C int16; D [0]int }; E bool }
	 * (DWARF: size 32, A@0, B@8 (size 16: the trailing [0]int gets a pad
	 * byte), E@24) */
	uint32_t a1f32 = add_array(tt, "[1]float32", g->f32, 1);
	uint32_t a0int = add_array(tt, "[0]int", g->i64, 0);
	uint32_t inner = add_struct(tt, CT_K_STRUCT, "struct { C int16; D [0]int }", 16, 2, g->i16, 0,
				    a0int, 8);
	g->nst = add_struct(tt, CT_K_STRUCT, "main.NSt", 32, 3, a1f32, 0, inner, 8, g->bool_, 24);
}

/* ---- piece checks ---- */

#define PR(reg, size, voff) {CT_PIECE_REG, (reg), (size), (voff), 0, 0}
#define PX(i, size, voff) {CT_PIECE_XREG, CT_XMM0 + (i), (size), (voff), 0, 0}
#define PS(soff, size) {CT_PIECE_STACK, 0, (size), 0, (soff), 0}
#define PM(reg, soff, size) {CT_PIECE_REGMEM, (reg), (size), 0, (soff), 0}
#define P87(size) {CT_PIECE_X87, 0, (size), 0, 0, 0}

static void fmt_pieces(char *buf, size_t cap, const struct ct_piece *p, size_t n)
{
	size_t k = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n && k < cap; i++)
		k += (size_t)snprintf(buf + k, cap - k, "{k%u r%u s%u v%u o%d} ", p[i].kind, p[i].reg,
				      p[i].size, p[i].value_off, p[i].stack_off);
}

static bool loc_is(const char *file, int line, const struct ct_abi_layout *l, size_t idx,
		   const struct ct_piece *exp, size_t nexp)
{
	if (idx >= l->n) {
		unit_fail(file, line, "param %zu: layout has only %zu", idx, l->n);
		return false;
	}
	const struct ct_loc *loc = &l->locs[idx];
	bool ok = loc->n == nexp;
	for (size_t i = 0; ok && i < nexp; i++) {
		const struct ct_piece *a = &loc->pieces[i], *e = &exp[i];
		ok = a->kind == e->kind && a->size == e->size && a->value_off == e->value_off &&
		     (a->kind == CT_PIECE_STACK || a->reg == e->reg) &&
		     ((a->kind != CT_PIECE_STACK && a->kind != CT_PIECE_REGMEM) ||
		      a->stack_off == e->stack_off);
	}
	if (!ok) {
		char got[512], want[512];
		fmt_pieces(got, sizeof(got), loc->pieces, loc->n);
		fmt_pieces(want, sizeof(want), exp, nexp);
		unit_fail(file, line, "param %zu: got %s, want %s", idx, got, want);
	}
	return ok;
}

#define CHECK_LOC(lay, idx, ...)                                                              \
	do {                                                                                  \
		static const struct ct_piece exp_[] = {__VA_ARGS__};                          \
		if (!loc_is(__FILE__, __LINE__, &(lay), (idx), exp_, sizeof(exp_) / sizeof(exp_[0]))) \
			return;                                                               \
	} while (0)
#define CHECK_NOLOC(lay, idx) CHECK_EQ_U((lay).locs[idx].n, 0)
#define CHECK_FRAME(lay, sa, sr, sp, w)                                                       \
	do {                                                                                  \
		CHECK_EQ_U((lay).stack_args, (sa));                                           \
		CHECK_EQ_U((lay).stack_results, (sr));                                        \
		CHECK_EQ_U((lay).spill, (sp));                                                \
		CHECK_EQ_U((lay).width, (w));                                                 \
	} while (0)

/* ================= Go register ABI ================= */

/* func Mixed(a int8, f float64, s string, sl []byte, i interface{}, e error,
 *	p Point, arr [2]int, arr1 [1]int32, c complex128, m map[string]int)
 *	(string, int, error)                                  args=0xa8 */
TEST(abi_go_mixed)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	sig_init(&b);
	arg(&b, g.i8), arg(&b, g.f64), arg(&b, g.str), arg(&b, g.bytes), arg(&b, g.eface);
	arg(&b, g.error), arg(&b, g.point), arg(&b, g.arr2int), arg(&b, g.arr1i32);
	arg(&b, g.c128), arg(&b, g.map);
	res(&b, g.str), res(&b, g.i64), res(&b, g.error);
	struct ct_abi_layout l;
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_EQ_U(l.n, 14);
	CHECK_LOC(l, 0, PR(CT_RAX, 1, 0));
	CHECK_LOC(l, 1, PX(0, 8, 0));
	CHECK_LOC(l, 2, PR(CT_RBX, 8, 0), PR(CT_RCX, 8, 8));
	CHECK_LOC(l, 3, PR(CT_RDI, 8, 0), PR(CT_RSI, 8, 8), PR(CT_R8, 8, 16));
	CHECK_LOC(l, 4, PR(CT_R9, 8, 0), PR(CT_R10, 8, 8));
	CHECK_LOC(l, 5, PS(0, 16)); /* one integer register left: e goes whole to the stack */
	CHECK_LOC(l, 6, PS(16, 32));
	CHECK_LOC(l, 7, PS(48, 16));
	CHECK_LOC(l, 8, PR(CT_R11, 4, 0)); /* [1]int32 is its element */
	CHECK_LOC(l, 9, PX(1, 8, 0), PX(2, 8, 8));
	CHECK_LOC(l, 10, PS(64, 8));
	CHECK_LOC(l, 11, PR(CT_RAX, 8, 0), PR(CT_RBX, 8, 8)); /* results restart at RAX */
	CHECK_LOC(l, 12, PR(CT_RCX, 8, 0));
	CHECK_LOC(l, 13, PR(CT_RDI, 8, 0), PR(CT_RSI, 8, 8));
	CHECK_FRAME(l, 72, 0, 96, 168);
	CHECK(!l.sret_via_rax);
	ct_abi_layout_free(&l);
	CHECK(l.locs == NULL && l.n == 0);
	free_types(&g.tt);
}

/* func ManyArgs(a1, ..., a11 int) (r1, r2 int)                args=0x58 */
TEST(abi_go_many_args)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	sig_init(&b);
	for (int i = 0; i < 11; i++)
		arg(&b, g.i64);
	res(&b, g.i64), res(&b, g.i64);
	struct ct_abi_layout l;
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	static const uint8_t regs[] = {CT_RAX, CT_RBX, CT_RCX, CT_RDI, CT_RSI,
				       CT_R8,  CT_R9,  CT_R10, CT_R11};
	for (size_t i = 0; i < 9; i++) {
		CHECK_EQ_U(l.locs[i].n, 1);
		CHECK_EQ_U(l.locs[i].pieces[0].kind, CT_PIECE_REG);
		CHECK_EQ_U(l.locs[i].pieces[0].reg, regs[i]);
		CHECK_EQ_U(l.locs[i].pieces[0].size, 8);
	}
	CHECK_LOC(l, 9, PS(0, 8));
	CHECK_LOC(l, 10, PS(8, 8));
	CHECK_LOC(l, 11, PR(CT_RAX, 8, 0));
	CHECK_LOC(l, 12, PR(CT_RBX, 8, 0));
	CHECK_FRAME(l, 16, 0, 72, 88);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* func R(x int, arr [2]int) ([2]int, bool, float32, Big)      args=0x78 */
TEST(abi_go_stack_results)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	sig_init(&b);
	arg(&b, g.i64), arg(&b, g.arr2int);
	res(&b, g.arr2int), res(&b, g.bool_), res(&b, g.f32), res(&b, g.big);
	struct ct_abi_layout l;
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RAX, 8, 0));
	CHECK_LOC(l, 1, PS(0, 16));
	CHECK_LOC(l, 2, PS(16, 16));
	CHECK_LOC(l, 3, PR(CT_RAX, 1, 0));
	CHECK_LOC(l, 4, PX(0, 4, 0));
	CHECK_LOC(l, 5, PS(32, 80));
	CHECK_FRAME(l, 16, 96, 8, 120);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* func (r Rect) Area(scale int8) float64                       args=0x18
 * func (r *Rect) Scale(k float64)                              args=0x10
 * The receiver is simply the first parameter. */
TEST(abi_go_method_receiver)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	sig_init(&b);
	arg(&b, g.rect), arg(&b, g.i8), res(&b, g.f64);
	struct ct_abi_layout l;
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PX(0, 8, 0), PX(1, 8, 8));
	CHECK_LOC(l, 1, PR(CT_RAX, 1, 0));
	CHECK_LOC(l, 2, PX(0, 8, 0));
	CHECK_FRAME(l, 0, 0, 24, 24);
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, g.prect), arg(&b, g.f64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RAX, 8, 0));
	CHECK_LOC(l, 1, PX(0, 8, 0));
	CHECK_FRAME(l, 0, 0, 16, 16);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* func Generic[T any](k T, n int) int
 *   Generic[go.shape.int_0]:    MOVQ CX, AX; RET               args=0x18
 *   Generic[go.shape.string_0]:                                args=0x20
 * func (g *G[T]) Get(n int) T
 *   (*G[go.shape.int_0]).Get:   MOVQ (BX), AX; RET             args=0x18
 * The dictionary takes RAX (before the receiver) and an 8-byte spill slot. */
TEST(abi_go_generic_dict)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	b.sig.go_dict = true;
	arg(&b, g.i64), arg(&b, g.i64), res(&b, g.i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_EQ_U(l.n, 3);
	CHECK_LOC(l, 0, PR(CT_RBX, 8, 0));
	CHECK_LOC(l, 1, PR(CT_RCX, 8, 0));
	CHECK_LOC(l, 2, PR(CT_RAX, 8, 0));
	CHECK_FRAME(l, 0, 0, 24, 24);
	ct_abi_layout_free(&l);

	sig_init(&b);
	b.sig.go_dict = true;
	arg(&b, g.str), arg(&b, g.i64), res(&b, g.i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RBX, 8, 0), PR(CT_RCX, 8, 8));
	CHECK_LOC(l, 1, PR(CT_RDI, 8, 0));
	CHECK_LOC(l, 2, PR(CT_RAX, 8, 0));
	CHECK_FRAME(l, 0, 0, 32, 32);
	ct_abi_layout_free(&l);

	sig_init(&b);
	b.sig.go_dict = true;
	arg(&b, g.ptr), arg(&b, g.i64), res(&b, g.i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RBX, 8, 0));
	CHECK_LOC(l, 1, PR(CT_RCX, 8, 0));
	CHECK_LOC(l, 2, PR(CT_RAX, 8, 0));
	CHECK_FRAME(l, 0, 0, 24, 24);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* func MixS(m Mix, x int16) (Mix, int8)                        args=0x20
 * DWARF: m = reg0 piece1; reg17 piece4; reg3 piece8; reg18 piece8, x = reg2.
 * func NS(n NSt, k int8) (NSt, int8)                            args=0x28
 * DWARF: n = reg17 piece4; reg0 piece2; reg3 piece1, k = reg2. */
TEST(abi_go_struct_int_float)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	sig_init(&b);
	arg(&b, g.mix), arg(&b, g.i16), res(&b, g.mix), res(&b, g.i8);
	struct ct_abi_layout l;
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RAX, 1, 0), PX(0, 4, 4), PR(CT_RBX, 8, 8), PX(1, 8, 16));
	CHECK_LOC(l, 1, PR(CT_RCX, 2, 0));
	CHECK_LOC(l, 2, PR(CT_RAX, 1, 0), PX(0, 4, 4), PR(CT_RBX, 8, 8), PX(1, 8, 16));
	CHECK_LOC(l, 3, PR(CT_RCX, 1, 0));
	CHECK_FRAME(l, 0, 0, 32, 32);
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, g.nst), arg(&b, g.i8), res(&b, g.nst), res(&b, g.i8);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PX(0, 4, 0), PR(CT_RAX, 2, 8), PR(CT_RBX, 1, 24));
	CHECK_LOC(l, 1, PR(CT_RCX, 1, 0));
	CHECK_LOC(l, 2, PX(0, 4, 0), PR(CT_RAX, 2, 8), PR(CT_RBX, 1, 24));
	CHECK_FRAME(l, 0, 0, 40, 40);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* func Z(a int8, e Empty, b int64, z [0]int64, c int8) int      args=0x18
 * func ZeroRes(a int) (struct{}, int, [0]int64)                 args=0x8
 * func ZA(a [2]int8, z [0]int64, b [2]int8) int                 args=0x10
 *   (b at CFA+8: the [0]int64 aligns the stack offset to 8) */
TEST(abi_go_zero_size)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	arg(&b, g.i8), arg(&b, g.empty), arg(&b, g.i64), arg(&b, g.arr0i64), arg(&b, g.i8);
	res(&b, g.i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RAX, 1, 0));
	CHECK_LOC(l, 1, PS(0, 0));
	CHECK_LOC(l, 2, PR(CT_RBX, 8, 0));
	CHECK_LOC(l, 3, PS(0, 0));
	CHECK_LOC(l, 4, PR(CT_RCX, 1, 0));
	CHECK_LOC(l, 5, PR(CT_RAX, 8, 0));
	CHECK_FRAME(l, 0, 0, 24, 24);
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, g.i64), res(&b, g.empty), res(&b, g.i64), res(&b, g.arr0i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RAX, 8, 0));
	CHECK_LOC(l, 1, PS(0, 0));
	CHECK_LOC(l, 2, PR(CT_RAX, 8, 0));
	CHECK_LOC(l, 3, PS(0, 0));
	CHECK_FRAME(l, 0, 0, 8, 8);
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, g.arr2i8), arg(&b, g.arr0i64), arg(&b, g.arr2i8), res(&b, g.i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PS(0, 2));
	CHECK_LOC(l, 1, PS(8, 0));
	CHECK_LOC(l, 2, PS(8, 2));
	CHECK_LOC(l, 3, PR(CT_RAX, 8, 0));
	CHECK_FRAME(l, 16, 0, 0, 16);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* func Arr1(a [1]string, b [1][1]int32, c [2]float64) int         args=0x28
 * func SmallStack(a [2]int8, b int16, c [3]int8, d int32) int     args=0x10
 *   (a at CFA+0, c at CFA+2: stack slots use the type's own alignment) */
TEST(abi_go_arrays)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	arg(&b, g.arr1str), arg(&b, g.arr1arr1i32), arg(&b, g.arr2f64), res(&b, g.i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RAX, 8, 0), PR(CT_RBX, 8, 8));
	CHECK_LOC(l, 1, PR(CT_RCX, 4, 0));
	CHECK_LOC(l, 2, PS(0, 16));
	CHECK_LOC(l, 3, PR(CT_RAX, 8, 0));
	CHECK_FRAME(l, 16, 0, 24, 40);
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, g.arr2i8), arg(&b, g.i16), arg(&b, g.arr3i8), arg(&b, g.i32), res(&b, g.i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PS(0, 2));
	CHECK_LOC(l, 1, PR(CT_RAX, 2, 0));
	CHECK_LOC(l, 2, PS(2, 3));
	CHECK_LOC(l, 3, PR(CT_RBX, 4, 0));
	CHECK_FRAME(l, 8, 0, 8, 16);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* func Strs10(s1, ..., s10 string) int                            args=0xa0
 *   s1-s4 in AX:BX CX:DI SI:R8 R9:R10; s5 at CFA+0 (R11 alone cannot
 *   take a string) ... s10 at CFA+80.
 * func Strs(s1, ..., s6 string) string                            args=0x60
 *   the result restarts at AX:BX. */
TEST(abi_go_strings_spill)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	for (int i = 0; i < 10; i++)
		arg(&b, g.str);
	res(&b, g.i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RAX, 8, 0), PR(CT_RBX, 8, 8));
	CHECK_LOC(l, 1, PR(CT_RCX, 8, 0), PR(CT_RDI, 8, 8));
	CHECK_LOC(l, 2, PR(CT_RSI, 8, 0), PR(CT_R8, 8, 8));
	CHECK_LOC(l, 3, PR(CT_R9, 8, 0), PR(CT_R10, 8, 8));
	for (size_t i = 4; i < 10; i++) {
		CHECK_EQ_U(l.locs[i].n, 1);
		CHECK_EQ_U(l.locs[i].pieces[0].kind, CT_PIECE_STACK);
		CHECK_EQ_I(l.locs[i].pieces[0].stack_off, 16 * (i - 4));
		CHECK_EQ_U(l.locs[i].pieces[0].size, 16);
	}
	CHECK_LOC(l, 10, PR(CT_RAX, 8, 0));
	CHECK_FRAME(l, 96, 0, 64, 160);
	ct_abi_layout_free(&l);

	sig_init(&b);
	for (int i = 0; i < 6; i++)
		arg(&b, g.str);
	res(&b, g.str);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 4, PS(0, 16));
	CHECK_LOC(l, 5, PS(16, 16));
	CHECK_LOC(l, 6, PR(CT_RAX, 8, 0), PR(CT_RBX, 8, 8));
	CHECK_FRAME(l, 32, 0, 64, 96);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* func Floats(a float32, b float64, c complex64, d int16, e bool)
 *	(float64, complex64)                                      args=0x20
 *   (body: CVTSS2SD X0; ADDSD X1, X0; X2,X3 -> X1,X2)
 * func ManyFloats(f1, ..., f16 float64, c complex128) float64     args=0x90
 *   f16 at CFA+0, c at CFA+8 (MOVSD main.f16+8(SP); main.c+16(SP)) */
TEST(abi_go_floats)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	arg(&b, g.f32), arg(&b, g.f64), arg(&b, g.c64), arg(&b, g.i16), arg(&b, g.bool_);
	res(&b, g.f64), res(&b, g.c64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_LOC(l, 0, PX(0, 4, 0));
	CHECK_LOC(l, 1, PX(1, 8, 0));
	CHECK_LOC(l, 2, PX(2, 4, 0), PX(3, 4, 4));
	CHECK_LOC(l, 3, PR(CT_RAX, 2, 0));
	CHECK_LOC(l, 4, PR(CT_RBX, 1, 0));
	CHECK_LOC(l, 5, PX(0, 8, 0));
	CHECK_LOC(l, 6, PX(1, 4, 0), PX(2, 4, 4));
	CHECK_FRAME(l, 0, 0, 32, 32);
	ct_abi_layout_free(&l);

	sig_init(&b);
	for (int i = 0; i < 16; i++)
		arg(&b, g.f64);
	arg(&b, g.c128);
	res(&b, g.f64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	for (size_t i = 0; i < 15; i++) {
		CHECK_EQ_U(l.locs[i].n, 1);
		CHECK_EQ_U(l.locs[i].pieces[0].kind, CT_PIECE_XREG);
		CHECK_EQ_U(l.locs[i].pieces[0].reg, CT_XMM0 + i);
	}
	CHECK_LOC(l, 15, PS(0, 8));
	CHECK_LOC(l, 16, PS(8, 16));
	CHECK_LOC(l, 17, PX(0, 8, 0));
	CHECK_FRAME(l, 24, 0, 120, 144);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* Widths (pclntab _func.args) of blank-free signatures, all from
 * `go build -gcflags=-S` with go1.19.8. */
TEST(abi_go_width_crosscheck)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	struct ct_abi_layout l;

	/* func Add(a, b int) int: args=0x10 (no spill for register results) */
	sig_init(&b);
	arg(&b, g.i64), arg(&b, g.i64), res(&b, g.i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_EQ_U(l.width, 0x10);
	ct_abi_layout_free(&l);

	/* func Blank(_ int, b int, _ string, c float64) float64: args=0x28
	 * when every param is known (DWARF would drop the blank ones) */
	sig_init(&b);
	arg(&b, g.i64), arg(&b, g.i64), arg(&b, g.str), arg(&b, g.f64), res(&b, g.f64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_EQ_U(l.width, 0x28);
	CHECK_LOC(l, 1, PR(CT_RBX, 8, 0));
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* A huge array on the stack is split into pieces a uint16_t size can hold. */
TEST(abi_go_huge_stack_value)
{
	struct gotypes g;
	go_types(&g);
	uint32_t huge = add_array(&g.tt, "[10000]int", g.i64, 10000);
	struct sigb b;
	sig_init(&b);
	arg(&b, g.i8), arg(&b, huge);
	struct ct_abi_layout l;
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_EQ_U(l.locs[1].n, 3);
	CHECK_EQ_U(l.locs[1].pieces[0].size, 0x8000);
	CHECK_EQ_U(l.locs[1].pieces[1].value_off, 0x8000);
	CHECK_EQ_I(l.locs[1].pieces[1].stack_off, 0x8000);
	CHECK_EQ_U(l.locs[1].pieces[2].size, 80000 - 0x10000);
	CHECK_EQ_U(l.width, 80000 + 8);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

TEST(abi_errors)
{
	struct gotypes g;
	go_types(&g);
	uint32_t unk_field = add_struct(&g.tt, CT_K_STRUCT, "main.U", 16, 2, g.i64, 0, CT_TYPE_NONE, 8);
	uint32_t outside = add_struct(&g.tt, CT_K_STRUCT, "main.O", 8, 1, g.i64, 4);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	arg(&b, g.i64), arg(&b, CT_TYPE_NONE);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), -1);
	CHECK(strstr(ct_error(), "undescribed type"));
	CHECK(l.locs == NULL && l.n == 0);

	sig_init(&b);
	arg(&b, unk_field);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_SYSV, &l), -1);

	sig_init(&b);
	arg(&b, outside);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), -1);

	sig_init(&b);
	arg(&b, 12345);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_STACK, &l), -1);
	CHECK(strstr(ct_error(), "out of range"));

	sig_init(&b);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, (enum ct_callconv)9, &l), -1);

	/* no params at all is fine */
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_REG, &l), 0);
	CHECK_EQ_U(l.n, 0);
	CHECK_EQ_U(l.width, 0);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* ================= Go ABI0 ================= */

/* runtime.IndexByteString(s string, c byte) int: MOVQ 0x8(SP),SI;
 * MOVQ 0x10(SP),BX; MOVB 0x18(SP),AL; result at 0x20(SP) -> width 32.
 * go vet (asmdecl) on stubs:
 *   asmf(a int8, b int32, c int8, s string, f float32) (r1 int8, r2 int64):
 *     a+0 b+4 c+8 s+16 f+32 r1+40 r2+48
 *   asmg(a int8) (r1 int8, r2 int16): r1+8 r2+10
 *   asmh(a int8, z struct{}, c complex64) (r [3]byte): c+4 r+16 */
TEST(abi_go_abi0)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	arg(&b, g.str), arg(&b, g.u8), res(&b, g.i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_STACK, &l), 0);
	CHECK_LOC(l, 0, PS(0, 16));
	CHECK_LOC(l, 1, PS(16, 1));
	CHECK_LOC(l, 2, PS(24, 8));
	CHECK_FRAME(l, 24, 8, 0, 32);
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, g.i8), arg(&b, g.i32), arg(&b, g.i8), arg(&b, g.str), arg(&b, g.f32);
	res(&b, g.i8), res(&b, g.i64);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_STACK, &l), 0);
	CHECK_LOC(l, 0, PS(0, 1));
	CHECK_LOC(l, 1, PS(4, 4));
	CHECK_LOC(l, 2, PS(8, 1));
	CHECK_LOC(l, 3, PS(16, 16));
	CHECK_LOC(l, 4, PS(32, 4));
	CHECK_LOC(l, 5, PS(40, 1));
	CHECK_LOC(l, 6, PS(48, 8));
	CHECK_FRAME(l, 40, 16, 0, 56);
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, g.i8), res(&b, g.i8), res(&b, g.i16);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_STACK, &l), 0);
	CHECK_LOC(l, 1, PS(8, 1));
	CHECK_LOC(l, 2, PS(10, 2));
	CHECK_FRAME(l, 8, 8, 0, 16);
	ct_abi_layout_free(&l);

	uint32_t arr3u8 = add_array(&g.tt, "[3]uint8", g.u8, 3);
	sig_init(&b);
	arg(&b, g.i8), arg(&b, g.empty), arg(&b, g.c64), res(&b, arr3u8);
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_GO_STACK, &l), 0);
	CHECK_LOC(l, 0, PS(0, 1));
	CHECK_LOC(l, 1, PS(1, 0));
	CHECK_LOC(l, 2, PS(4, 8));
	CHECK_LOC(l, 3, PS(16, 3));
	CHECK_FRAME(l, 16, 8, 0, 24);
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* ================= SysV AMD64 ================= */

struct ctypes {
	struct ct_typetab tt;
	uint32_t void_, bool_, char_, uchar, short_, int_, long_, float_, double_, ldouble, i128, cstr,
		vptr, cfloat, cdouble, cldouble, l2, dl, b24, b32, f3, fi, cd, p9, u, uf, e, ld, ldl;
};

static void c_types(struct ctypes *c)
{
	memset(c, 0, sizeof(*c));
	struct ct_typetab *tt = &c->tt;
	c->void_ = add_type(tt, CT_K_VOID, "void", 0);
	c->bool_ = add_type(tt, CT_K_BOOL, "_Bool", 1);
	c->char_ = add_type(tt, CT_K_INT, "char", 1);
	c->uchar = add_type(tt, CT_K_UINT, "unsigned char", 1);
	c->short_ = add_type(tt, CT_K_INT, "short", 2);
	c->int_ = add_type(tt, CT_K_INT, "int", 4);
	c->long_ = add_type(tt, CT_K_INT, "long", 8);
	c->float_ = add_type(tt, CT_K_FLOAT, "float", 4);
	c->double_ = add_type(tt, CT_K_FLOAT, "double", 8);
	c->ldouble = add_type(tt, CT_K_FLOAT, "long double", 16);
	c->i128 = add_type(tt, CT_K_INT, "__int128", 16);
	c->cstr = add_elem(tt, CT_K_CSTRING, "const char *", 8, c->char_);
	c->vptr = add_elem(tt, CT_K_PTR, "void *", 8, CT_TYPE_NONE);
	c->cfloat = add_type(tt, CT_K_COMPLEX, "complex float", 8);
	c->cdouble = add_type(tt, CT_K_COMPLEX, "complex double", 16);
	c->cldouble = add_type(tt, CT_K_COMPLEX, "complex long double", 32);
	c->l2 = add_struct(tt, CT_K_STRUCT, "struct L2", 16, 2, c->long_, 0, c->long_, 8);
	c->dl = add_struct(tt, CT_K_STRUCT, "struct DL", 16, 2, c->double_, 0, c->long_, 8);
	c->b24 = add_struct(tt, CT_K_STRUCT, "struct B24", 24, 3, c->long_, 0, c->long_, 8, c->long_, 16);
	c->b32 = add_struct(tt, CT_K_STRUCT, "struct B32", 32, 4, c->long_, 0, c->long_, 8, c->long_, 16,
			    c->long_, 24);
	c->f3 = add_struct(tt, CT_K_STRUCT, "struct F3", 12, 3, c->float_, 0, c->float_, 4, c->float_, 8);
	c->fi = add_struct(tt, CT_K_STRUCT, "struct FI", 8, 2, c->float_, 0, c->int_, 4);
	c->cd = add_struct(tt, CT_K_STRUCT, "struct CD", 16, 2, c->char_, 0, c->double_, 8);
	c->p9 = add_struct(tt, CT_K_STRUCT, "struct P9", 9, 2, c->char_, 0, c->long_, 1); /* packed */
	c->u = add_struct(tt, CT_K_UNION, "union U", 4, 2, c->int_, 0, c->float_, 0);
	c->uf = add_struct(tt, CT_K_UNION, "union UF", 8, 2, c->float_, 0, c->double_, 0);
	c->e = add_struct(tt, CT_K_STRUCT, "struct E", 0, 0);
	c->ld = add_struct(tt, CT_K_STRUCT, "struct LD", 16, 1, c->ldouble, 0);
	c->ldl = add_struct(tt, CT_K_STRUCT, "struct LDL", 32, 2, c->ldouble, 0, c->long_, 16);
}

/* long f7(long a, ..., long g): g = mov 0x8(%rsp) */
TEST(abi_sysv_int_args)
{
	struct ctypes c;
	c_types(&c);
	struct sigb b;
	sig_init(&b);
	for (int i = 0; i < 7; i++)
		arg(&b, c.long_);
	res(&b, c.long_);
	struct ct_abi_layout l;
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 8, 0));
	CHECK_LOC(l, 1, PR(CT_RSI, 8, 0));
	CHECK_LOC(l, 2, PR(CT_RDX, 8, 0));
	CHECK_LOC(l, 3, PR(CT_RCX, 8, 0));
	CHECK_LOC(l, 4, PR(CT_R8, 8, 0));
	CHECK_LOC(l, 5, PR(CT_R9, 8, 0));
	CHECK_LOC(l, 6, PS(0, 8));
	CHECK_LOC(l, 7, PR(CT_RAX, 8, 0));
	CHECK_EQ_U(l.stack_args, 8);
	CHECK_EQ_U(l.width, 8);
	CHECK(!l.sret_via_rax);
	ct_abi_layout_free(&l);

	/* _Bool fb(_Bool a, char b, short c, unsigned char d): dil sil dx cl */
	sig_init(&b);
	arg(&b, c.bool_), arg(&b, c.char_), arg(&b, c.short_), arg(&b, c.uchar), res(&b, c.bool_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 1, 0));
	CHECK_LOC(l, 1, PR(CT_RSI, 1, 0));
	CHECK_LOC(l, 2, PR(CT_RDX, 2, 0));
	CHECK_LOC(l, 3, PR(CT_RCX, 1, 0));
	CHECK_LOC(l, 4, PR(CT_RAX, 1, 0));
	ct_abi_layout_free(&l);

	/* size_t fcs(const char *s, int n); a void result has no location */
	sig_init(&b);
	arg(&b, c.cstr), arg(&b, c.int_), res(&b, c.void_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 8, 0));
	CHECK_LOC(l, 1, PR(CT_RSI, 4, 0));
	CHECK_NOLOC(l, 2);
	ct_abi_layout_free(&l);

	/* variadic: int printf(const char *fmt, ...) places the named param */
	sig_init(&b);
	b.sig.variadic = true;
	arg(&b, c.cstr), res(&b, c.int_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 8, 0));
	CHECK_LOC(l, 1, PR(CT_RAX, 4, 0));
	ct_abi_layout_free(&l);
	free_types(&c.tt);
}

/* long fl2(struct L2 s): rdi, rsi.  long fdl(struct DL s): xmm0, rdi.
 * long fb24(struct B24 s): 0x8/0x10/0x18(%rsp).
 * long fcd(struct CD s): dil, xmm0.  int ffi(struct FI s): edi / rdi>>32.
 * float ff3(struct F3 s): xmm0 (a, b), xmm1 (c).
 * long fp9(struct P9 s /+packed+/, long z): 0x8(%rsp), 0x9(%rsp); z = rdi. */
TEST(abi_sysv_structs)
{
	struct ctypes c;
	c_types(&c);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	arg(&b, c.l2), arg(&b, c.dl), arg(&b, c.b24), arg(&b, c.cd), arg(&b, c.fi), arg(&b, c.f3);
	res(&b, c.long_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 8, 0), PR(CT_RSI, 8, 8));
	CHECK_LOC(l, 1, PX(0, 8, 0), PR(CT_RDX, 8, 8));
	CHECK_LOC(l, 2, PS(0, 24));
	CHECK_LOC(l, 3, PR(CT_RCX, 8, 0), PX(1, 8, 8));
	CHECK_LOC(l, 4, PR(CT_R8, 8, 0)); /* float+int in one eightbyte: INTEGER */
	CHECK_LOC(l, 5, PX(2, 8, 0), PX(3, 4, 8));
	CHECK_EQ_U(l.stack_args, 24);
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, c.p9), arg(&b, c.long_), res(&b, c.long_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PS(0, 9)); /* unaligned field: MEMORY */
	CHECK_LOC(l, 1, PR(CT_RDI, 8, 0));
	CHECK_EQ_U(l.stack_args, 16);
	ct_abi_layout_free(&l);

	/* int fu(union U u, union UF v): edi, xmm0 */
	sig_init(&b);
	arg(&b, c.u), arg(&b, c.uf), res(&b, c.int_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 4, 0));
	CHECK_LOC(l, 1, PX(0, 8, 0));
	ct_abi_layout_free(&l);

	/* long fe(long a, struct E e, long b): an empty struct takes nothing */
	sig_init(&b);
	arg(&b, c.long_), arg(&b, c.e), arg(&b, c.long_), res(&b, c.long_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 8, 0));
	CHECK_LOC(l, 1, PS(0, 0));
	CHECK_LOC(l, 2, PR(CT_RSI, 8, 0));
	CHECK_EQ_U(l.stack_args, 0);
	ct_abi_layout_free(&l);
	free_types(&c.tt);
}

/* long fnofit(long a, ..., long e, struct L2 s, long g): s needs two
 * registers and only R9 is left, so s goes to 0x8(%rsp) and g takes R9.
 * long fi(long a, ..., long e, __int128 x, long f): the same for __int128. */
TEST(abi_sysv_aggregate_no_fit)
{
	struct ctypes c;
	c_types(&c);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	for (int i = 0; i < 5; i++)
		arg(&b, c.long_);
	arg(&b, c.l2), arg(&b, c.long_), res(&b, c.long_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 4, PR(CT_R8, 8, 0));
	CHECK_LOC(l, 5, PS(0, 16));
	CHECK_LOC(l, 6, PR(CT_R9, 8, 0));
	ct_abi_layout_free(&l);

	sig_init(&b);
	for (int i = 0; i < 5; i++)
		arg(&b, c.long_);
	arg(&b, c.i128), arg(&b, c.long_), res(&b, c.long_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 5, PS(0, 16));
	CHECK_LOC(l, 6, PR(CT_R9, 8, 0));
	ct_abi_layout_free(&l);

	/* long fi128(long a, __int128 x, long b): rdi, rsi:rdx, rcx */
	sig_init(&b);
	arg(&b, c.long_), arg(&b, c.i128), arg(&b, c.long_), res(&b, c.long_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 1, PR(CT_RSI, 8, 0), PR(CT_RDX, 8, 8));
	CHECK_LOC(l, 2, PR(CT_RCX, 8, 0));
	ct_abi_layout_free(&l);
	free_types(&c.tt);
}

/* double ffl(float a, double b, int c): xmm0, xmm1, edi -> xmm0.
 * double f9d(double a, ..., double j): a-h xmm0-7, i 0x8(%rsp), j 0x10(%rsp).
 * _Complex double fcx(_Complex double c, _Complex float d): xmm0:xmm1, xmm2. */
TEST(abi_sysv_floats)
{
	struct ctypes c;
	c_types(&c);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	arg(&b, c.float_), arg(&b, c.double_), arg(&b, c.int_), res(&b, c.double_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PX(0, 4, 0));
	CHECK_LOC(l, 1, PX(1, 8, 0));
	CHECK_LOC(l, 2, PR(CT_RDI, 4, 0));
	CHECK_LOC(l, 3, PX(0, 8, 0));
	ct_abi_layout_free(&l);

	sig_init(&b);
	for (int i = 0; i < 10; i++)
		arg(&b, c.double_);
	res(&b, c.double_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 7, PX(7, 8, 0));
	CHECK_LOC(l, 8, PS(0, 8));
	CHECK_LOC(l, 9, PS(8, 8));
	CHECK_EQ_U(l.stack_args, 16);
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, c.cdouble), arg(&b, c.cfloat), res(&b, c.cdouble);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PX(0, 8, 0), PX(1, 8, 8));
	CHECK_LOC(l, 1, PX(2, 8, 0));
	CHECK_LOC(l, 2, PX(0, 8, 0), PX(1, 8, 8));
	ct_abi_layout_free(&l);
	free_types(&c.tt);
}

/* long fld(long a, long double x, long b): fldt 0x8(%rsp); a rdi, b rsi.
 * long fstk(long a..f, long g, long double x, long h): g 0x8(%rsp),
 *   x 0x18(%rsp) (16-aligned), h 0x28(%rsp).
 * long fld1(long a, struct LD s, long b): s 0x8(%rsp).
 * long double rld(long), struct LD rld1(long), _Complex long double
 *   rcld(long): returned in st(0)/st(1), no location; struct LDL rldl(long)
 *   (24 bytes with a long double): memory. */
TEST(abi_sysv_long_double)
{
	struct ctypes c;
	c_types(&c);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	arg(&b, c.long_), arg(&b, c.ldouble), arg(&b, c.long_), res(&b, c.long_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 8, 0));
	CHECK_LOC(l, 1, PS(0, 16));
	CHECK_LOC(l, 2, PR(CT_RSI, 8, 0));
	ct_abi_layout_free(&l);

	sig_init(&b);
	for (int i = 0; i < 7; i++)
		arg(&b, c.long_);
	arg(&b, c.ldouble), arg(&b, c.long_), res(&b, c.long_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 6, PS(0, 8));
	CHECK_LOC(l, 7, PS(16, 16));
	CHECK_LOC(l, 8, PS(32, 8));
	CHECK_EQ_U(l.stack_args, 40);
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, c.long_), arg(&b, c.ld), arg(&b, c.long_), res(&b, c.ldouble);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 1, PS(0, 16));
	CHECK_LOC(l, 2, PR(CT_RSI, 8, 0));
	CHECK_LOC(l, 3, P87(16)); /* st(0): said unreadable, not unknown */
	CHECK(!l.sret_via_rax);
	ct_abi_layout_free(&l);

	uint32_t rets[] = {c.ld, c.cldouble};
	for (size_t i = 0; i < 2; i++) {
		sig_init(&b);
		arg(&b, c.long_), res(&b, rets[i]);
		CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
		CHECK_LOC(l, 0, PR(CT_RDI, 8, 0));
		CHECK_EQ_U(l.locs[1].n, 1); /* st(0) (and st(1)): unreadable */
		CHECK_EQ_U(l.locs[1].pieces[0].kind, CT_PIECE_X87);
		CHECK_EQ_U(l.locs[1].pieces[0].size, i ? 32 : 16);
		CHECK(!l.sret_via_rax);
		ct_abi_layout_free(&l);
	}

	sig_init(&b);
	arg(&b, c.long_), res(&b, c.ldl);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RSI, 8, 0));
	CHECK_LOC(l, 1, PM(CT_RAX, 0, 32));
	CHECK(l.sret_via_rax);
	ct_abi_layout_free(&l);
	/* _Float128 is an IEEE quad: one whole SSE register (SSE+SSEUP), not
	 * x87 memory; the stack argument after six integers stays at CFA+0,
	 * and the eighth double after it is still in a register. */
	uint32_t f128 = add_type(&c.tt, CT_K_FLOAT, "_Float128", 16);
	sig_init(&b);
	arg(&b, f128);
	for (int i = 0; i < 7; i++)
		arg(&b, c.long_);
	for (int i = 0; i < 7; i++)
		arg(&b, c.double_);
	res(&b, f128);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PX(0, 16, 0));
	CHECK_LOC(l, 7, PS(0, 8));
	CHECK_LOC(l, 14, PX(7, 8, 0));
	CHECK_LOC(l, 15, PX(0, 16, 0));
	CHECK_EQ_U(l.stack_args, 8);
	ct_abi_layout_free(&l);
	free_types(&c.tt);
}

/* struct L2 rl2(long x): rax, rdx.  struct DL rdl(long): xmm0, rax.
 * struct F3 rf3(float): xmm0 (a, b), xmm1 (c).  __int128 ri128(long): rax:rdx.
 * struct B32 rb32(long x): x in rsi, stores through rdi, mov %rdi,%rax.
 * struct B32 rb32args(long a, ..., long f): a-e rsi..r9, f 0x8(%rsp). */
TEST(abi_sysv_returns)
{
	struct ctypes c;
	c_types(&c);
	struct sigb b;
	struct ct_abi_layout l;

	sig_init(&b);
	arg(&b, c.long_), res(&b, c.l2);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 8, 0));
	CHECK_LOC(l, 1, PR(CT_RAX, 8, 0), PR(CT_RDX, 8, 8));
	CHECK(!l.sret_via_rax);
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, c.long_), res(&b, c.dl);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 1, PX(0, 8, 0), PR(CT_RAX, 8, 8));
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, c.float_), res(&b, c.f3);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PX(0, 4, 0));
	CHECK_LOC(l, 1, PX(0, 8, 0), PX(1, 4, 8));
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, c.long_), res(&b, c.i128);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 1, PR(CT_RAX, 8, 0), PR(CT_RDX, 8, 8));
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, c.long_), res(&b, c.b32);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK(l.sret_via_rax);
	CHECK_LOC(l, 0, PR(CT_RSI, 8, 0));
	CHECK_LOC(l, 1, PM(CT_RAX, 0, 32));
	ct_abi_layout_free(&l);

	/* the result may come first in the sig: it is placed the same way */
	sig_init(&b);
	res(&b, c.b32);
	for (int i = 0; i < 6; i++)
		arg(&b, c.long_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK(l.sret_via_rax);
	CHECK_LOC(l, 0, PM(CT_RAX, 0, 32));
	CHECK_LOC(l, 1, PR(CT_RSI, 8, 0));
	CHECK_LOC(l, 5, PR(CT_R9, 8, 0));
	CHECK_LOC(l, 6, PS(0, 8));
	CHECK_EQ_U(l.stack_args, 8);
	ct_abi_layout_free(&l);

	/* C has at most one result */
	sig_init(&b);
	res(&b, c.long_), res(&b, c.long_);
	CHECK_EQ_I(ct_abi_assign(&c.tt, &b.sig, CT_CC_SYSV, &l), -1);
	free_types(&c.tt);
}

/* gccgo (SysV) sees Go kinds: a string takes two integer registers, a
 * slice (24 bytes) goes to memory ("s -> RDX, RCX", slice on the stack). */
TEST(abi_sysv_gccgo_kinds)
{
	struct gotypes g;
	go_types(&g);
	struct sigb b;
	sig_init(&b);
	arg(&b, g.i64), arg(&b, g.bytes), arg(&b, g.i64), arg(&b, g.str), res(&b, g.str);
	struct ct_abi_layout l;
	CHECK_EQ_I(ct_abi_assign(&g.tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 8, 0));
	CHECK_LOC(l, 1, PS(0, 24));
	CHECK_LOC(l, 2, PR(CT_RSI, 8, 0));
	CHECK_LOC(l, 3, PR(CT_RDX, 8, 0), PR(CT_RCX, 8, 8));
	CHECK_LOC(l, 4, PR(CT_RAX, 8, 0), PR(CT_RDX, 8, 8));
	ct_abi_layout_free(&l);
	free_types(&g.tt);
}

/* ================= Rust (rustc 1.63, and C++ classes under SysV) ================= */

/* Checked against the fixtures tests/fixtures/rust/app and cpp/app at
 * opt-level 0 / -O0 (`objdump -d`, DWARF locations once stored), and at
 * opt-level 1 against DWARF's entry locations:
 *   fn leaf(s: &str, n: u32) -> usize              rdi:rsi, edx
 *   fn opt(o: Option<u32>) -> u32                   edi (tag), esi
 *   fn pair(p: (u32, u64)) -> u64                   edi, rsi
 *   fn shape_by_value(s: Shape) -> u32              *(rdi) (12 bytes)
 *   fn maybe_ref(o: Option<&u32>) -> u32            rdi (niche)
 *   fn make_string(n: usize) -> String              n: rsi; result *(rax)
 *   fn make_opt(x: u32) -> Option<u32>              eax, edx
 *   fn wide(x: u128, y: u32) -> u128                x, y: unknown; rax:rdx
 *   size_t byval(std::string s)                     *(rdi) */
TEST(abi_rust_and_cxx_classes)
{
	struct ct_typetab tt = {0};
	uint32_t u8 = add_type(&tt, CT_K_UINT, "u8", 1), u32 = add_type(&tt, CT_K_UINT, "u32", 4);
	uint32_t u64 = add_type(&tt, CT_K_UINT, "u64", 8), u128 = add_type(&tt, CT_K_UINT, "u128", 16);
	uint32_t zst = add_struct(&tt, CT_K_STRUCT, "PhantomData<u8>", 0, 0);
	uint32_t pu8 = add_elem(&tt, CT_K_PTR, "*const u8", 8, u8);
	uint32_t ru32 = add_elem(&tt, CT_K_REF, "&u32", 8, u32);
	uint32_t str = add_struct(&tt, CT_K_SEQ, "&str", 16, 2, pu8, 0, u64, 8);
	uint32_t tup = add_struct(&tt, CT_K_STRUCT, "(u32, u64)", 16, 2, u32, 0, u64, 8);
	uint32_t string = add_struct(&tt, CT_K_SEQ, "String", 24, 3, pu8, 0, u64, 8, u64, 16);
	/* Option<u32>: tag u32 at 0; None {}, Some {__0: u32 at 4} */
	uint32_t none = add_struct(&tt, CT_K_STRUCT, "None", 8, 0);
	uint32_t some = add_struct(&tt, CT_K_STRUCT, "Some", 8, 1, u32, 4);
	uint32_t optu32 = add_struct(&tt, CT_K_VARIANT, "Option<u32>", 8, 2, none, 0, some, 0);
	tt.v[optu32].elem = u32;
	tt.v[optu32].fields[1].value = 1;
	/* Option<&u32>: the discriminant is the reference itself (niche) */
	uint32_t none8 = add_struct(&tt, CT_K_STRUCT, "None", 8, 0);
	uint32_t some8 = add_struct(&tt, CT_K_STRUCT, "Some", 8, 2, ru32, 0, zst, 0);
	uint32_t optref = add_struct(&tt, CT_K_VARIANT, "Option<&u32>", 8, 2, none8, 0, some8, 0);
	tt.v[optref].elem = ru32;
	tt.v[optref].fields[1].flags = CT_FIELD_DEFAULT;
	/* Shape { Circle(u32), Rect { w, h }, Empty }: 12 bytes, tag at 0 */
	uint32_t circle = add_struct(&tt, CT_K_STRUCT, "Circle", 12, 1, u32, 4);
	uint32_t rect = add_struct(&tt, CT_K_STRUCT, "Rect", 12, 2, u32, 4, u32, 8);
	uint32_t empty = add_struct(&tt, CT_K_STRUCT, "Empty", 12, 0);
	uint32_t shape = add_struct(&tt, CT_K_VARIANT, "Shape", 12, 3, circle, 0, rect, 0, empty, 0);
	tt.v[shape].elem = u32;
	/* a C++ class with a destructor */
	uint32_t cxxstr = add_struct(&tt, CT_K_SEQ, "string", 32, 2, pu8, 0, u64, 8);
	tt.v[cxxstr].by_ref = true;

	struct sigb b;
	struct ct_abi_layout l;
	sig_init(&b);
	arg(&b, str), arg(&b, u32), arg(&b, zst), res(&b, u64);
	CHECK_EQ_I(ct_abi_assign(&tt, &b.sig, CT_CC_RUST, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 8, 0), PR(CT_RSI, 8, 8));
	CHECK_LOC(l, 1, PR(CT_RDX, 4, 0));
	CHECK_NOLOC(l, 2); /* no size: not passed */
	CHECK_LOC(l, 3, PR(CT_RAX, 8, 0));
	ct_abi_layout_free(&l);

	sig_init(&b);
	arg(&b, optu32), arg(&b, tup), arg(&b, shape), arg(&b, optref), res(&b, optu32);
	CHECK_EQ_I(ct_abi_assign(&tt, &b.sig, CT_CC_RUST, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RDI, 4, 0), PR(CT_RSI, 4, 4));
	CHECK_LOC(l, 1, PR(CT_RDX, 4, 0), PR(CT_RCX, 8, 8));
	CHECK_LOC(l, 2, PM(CT_R8, 0, 12));
	CHECK_LOC(l, 3, PR(CT_R9, 8, 0));
	CHECK_LOC(l, 4, PR(CT_RAX, 4, 0), PR(CT_RDX, 4, 4));
	ct_abi_layout_free(&l);

	/* a String result: through a hidden pointer in RDI, back in RAX */
	sig_init(&b);
	arg(&b, u64), res(&b, string);
	CHECK_EQ_I(ct_abi_assign(&tt, &b.sig, CT_CC_RUST, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RSI, 8, 0));
	CHECK_LOC(l, 1, PM(CT_RAX, 0, 24));
	ct_abi_layout_free(&l);

	/* an i128 argument: its registers, and so everyone's after it, unknown */
	sig_init(&b);
	arg(&b, u128), arg(&b, u32), res(&b, u128);
	CHECK_EQ_I(ct_abi_assign(&tt, &b.sig, CT_CC_RUST, &l), 0);
	CHECK_NOLOC(l, 0);
	CHECK_NOLOC(l, 1);
	CHECK_LOC(l, 2, PR(CT_RAX, 8, 0), PR(CT_RDX, 8, 8));
	ct_abi_layout_free(&l);

	/* SysV: a class that is not trivially copyable goes by reference */
	sig_init(&b);
	arg(&b, u32), arg(&b, cxxstr), res(&b, cxxstr);
	CHECK_EQ_I(ct_abi_assign(&tt, &b.sig, CT_CC_SYSV, &l), 0);
	CHECK_LOC(l, 0, PR(CT_RSI, 4, 0)); /* RDI: the hidden result pointer */
	CHECK_LOC(l, 1, PM(CT_RDX, 0, 32));
	CHECK_LOC(l, 2, PM(CT_RAX, 0, 32));
	ct_abi_layout_free(&l);
	free_types(&tt);
}
