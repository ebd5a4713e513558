/* Calling conventions: where each parameter and result of a signature lives.
 *
 * Go (ABIInternal and ABI0) follows cmd/compile/internal/abi/abiutils.go
 * (Go 1.19) step by step; ABI0 is the same algorithm with no registers.
 * SysV follows the x86-64 psABI classification (section 3.2.3) as GCC
 * implements it.  Every rule here was checked against real compiler output;
 * see tests/unit/test_abi.c for the verified cases.
 *
 * Pieces fill the value's memory layout: value_off is the byte offset in the
 * value, size the number of bytes.  A register piece covers one Go base value
 * (an int8 field is a 1-byte piece) or one SysV eightbyte (up to 8 bytes,
 * which may pack several C fields).  A stack value is one STACK piece, split
 * into 32 KiB chunks only when it is larger than a piece can describe.
 *
 * Limits of the type model (struct ct_type has no alignment data; bit-fields
 * are integers in the bytes their bits cover): a C member with _Alignas or a packed struct is judged by its
 * natural alignment (packing shows up as unaligned fields -> MEMORY, which is
 * right); a 16-byte float is x87 long double unless named as a quad
 * (SSE); a union without member descriptions is classified INTEGER. */
#include "plan/abi.h"
#include "util/util.h"

#include <string.h>

#define MAX_DEPTH 32           /* nesting limit: guards against cyclic tables */
#define STACK_CHUNK 0x8000u    /* largest STACK piece we emit (size is uint16_t) */

const uint8_t ct_go_int_regs[CT_GO_NINT] = {CT_RAX, CT_RBX, CT_RCX, CT_RDI, CT_RSI,
					     CT_R8,  CT_R9,  CT_R10, CT_R11};
const uint8_t ct_sysv_int_regs[CT_SYSV_NINT] = {CT_RDI, CT_RSI, CT_RDX, CT_RCX, CT_R8, CT_R9};
#define GO_NF 15u
#define SYSV_NF 8u

typedef CT_VEC(struct ct_piece) piece_vec;

static const struct ct_type *type_at(const struct ct_typetab *tt, uint32_t id)
{
	return id < tt->n ? &tt->v[id] : NULL;
}

static uint32_t align_up(uint32_t v, uint32_t a)
{
	return a > 1 ? (v + a - 1) / a * a : v;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static void push_piece(piece_vec *pv, uint8_t kind, uint8_t reg, uint32_t size, uint32_t value_off,
		       int32_t stack_off)
{
	struct ct_piece p = {kind, reg, (uint16_t)size, value_off, stack_off, 0};
	CT_VEC_PUSH(*pv, p);
}

/* A memory-resident value of SIZE bytes at BASE + OFF (BASE is CFA for
 * STACK, a register for REGMEM). */
static void push_mem(piece_vec *pv, uint8_t kind, uint8_t reg, uint32_t size, uint32_t off)
{
	uint32_t done = 0;
	do {
		uint32_t n = min_u32(size - done, STACK_CHUNK);
		push_piece(pv, kind, reg, n, done, (int32_t)(off + done));
		done += n;
	} while (done < size);
}

static void take_pieces(piece_vec *pv, struct ct_loc *loc)
{
	loc->n = (uint32_t)pv->n;
	loc->pieces = pv->n ? xcalloc(pv->n, sizeof(*pv->v)) : NULL;
	if (pv->n)
		memcpy(loc->pieces, pv->v, pv->n * sizeof(*pv->v));
	pv->n = 0;
}

static bool is_intlike(enum ct_kind k)
{
	switch (k) {
	case CT_K_BOOL: case CT_K_INT: case CT_K_UINT: case CT_K_ENUM: case CT_K_PTR:
	case CT_K_MAP: case CT_K_CHAN: case CT_K_FUNC: case CT_K_CSTRING: case CT_K_REF:
	case CT_K_CHAR:
		return true;
	default:
		return false;
	}
}

/* Checks that type ID can be laid out: every kind known, sizes plausible,
 * fields inside their struct.  Returns 0 or -1 with ct_fail(). */
static int check_type(const struct ct_typetab *tt, uint32_t id, enum ct_callconv cc, int depth)
{
	const struct ct_type *t = type_at(tt, id);
	if (!t)
		return ct_fail("abi: type id %u out of range", id);
	const char *name = t->name ? t->name : "?";
	if (depth > MAX_DEPTH)
		return ct_fail("abi: type %s nests too deeply", name);
	bool go = ct_callconv_is_go(cc);
	if (t->by_ref && cc == CT_CC_SYSV)
		return 0; /* passed by address: its layout does not matter */
	if (t->size > (1u << 28))
		return ct_fail("abi: type %s is too large to pass (%u bytes)", name, t->size);
	switch (t->kind) {
	case CT_K_UNKNOWN:
	case CT_K_VOID:
		return ct_fail("abi: cannot place a value of undescribed type %s", name);
	case CT_K_FLOAT:
		if (t->size == 4 || t->size == 8 || (!go && t->size == 16))
			return 0;
		return ct_fail("abi: float type %s has unsupported size %u", name, t->size);
	case CT_K_COMPLEX:
		if (t->size == 8 || t->size == 16 || (!go && t->size == 32))
			return 0;
		return ct_fail("abi: complex type %s has unsupported size %u", name, t->size);
	case CT_K_STRING: case CT_K_IFACE: case CT_K_EFACE:
		if (t->size != 16)
			return ct_fail("abi: type %s should be 16 bytes, not %u", name, t->size);
		return 0;
	case CT_K_SLICE:
		if (t->size != 24)
			return ct_fail("abi: slice type %s should be 24 bytes, not %u", name, t->size);
		return 0;
	case CT_K_VARIANT:
		if (cc == CT_CC_SYSV)
			return ct_fail("abi: Rust enum %s in a C signature", name);
		__attribute__((fallthrough)); /* its variants are structs of its size */
	case CT_K_UNION: /* members all at offset 0: checked like a struct */
	case CT_K_STRUCT:
	case CT_K_SEQ:
		if (go && t->kind != CT_K_STRUCT)
			return ct_fail("abi: type %s in a Go signature", name);
		for (uint32_t i = 0; i < t->nfields; i++) {
			const struct ct_field *f = &t->fields[i];
			if (check_type(tt, f->type, cc, depth + 1) < 0)
				return -1;
			uint64_t fsize = f->flags & CT_FIELD_BITS ? (f->bit_off + f->bit_size + 7u) / 8u
								 : type_at(tt, f->type)->size;
			if (f->offset + fsize > t->size)
				return ct_fail("abi: field %s of %s lies outside it", f->name ? f->name : "?",
					       name);
		}
		return 0;
	case CT_K_ARRAY: {
		if (check_type(tt, t->elem, cc, depth + 1) < 0)
			return -1;
		if ((uint64_t)t->len * type_at(tt, t->elem)->size > t->size)
			return ct_fail("abi: array type %s is larger than its size %u", name, t->size);
		return 0;
	}
	default:
		if (!is_intlike(t->kind))
			return ct_fail("abi: type %s has unknown kind %d", name, (int)t->kind);
		if (t->size == 0 || t->size > 16)
			return ct_fail("abi: scalar type %s has unsupported size %u", name, t->size);
		return 0;
	}
}

/* Natural alignment: Go's types.Alignment on amd64, and the C alignment
 * for the psABI (the same rules; only long double/__int128 reach 16).
 * Packed C structs are not visible here; their fields show up as unaligned. */
static uint32_t type_align(const struct ct_typetab *tt, uint32_t id, int depth)
{
	const struct ct_type *t = type_at(tt, id);
	if (!t || depth > MAX_DEPTH)
		return 1;
	switch (t->kind) {
	case CT_K_COMPLEX:
		return t->size / 2 > 16 ? 16 : t->size / 2;
	case CT_K_STRING: case CT_K_SLICE: case CT_K_IFACE: case CT_K_EFACE:
		return 8;
	case CT_K_STRUCT:
	case CT_K_UNION:
	case CT_K_SEQ:
	case CT_K_VARIANT: {
		uint32_t a = t->kind == CT_K_VARIANT ? type_align(tt, t->elem, depth + 1) : 1;
		for (uint32_t i = 0; i < t->nfields; i++) {
			uint32_t fa = type_align(tt, t->fields[i].type, depth + 1);
			if (fa > a)
				a = fa;
		}
		return a;
	}
	case CT_K_ARRAY:
		return type_align(tt, t->elem, depth + 1);
	default: {
		/* scalars: their size, a power of two up to 16 */
		uint32_t a = 1;
		while (a < t->size && a < 16)
			a *= 2;
		return a;
	}
	}
}

/* ---- Go: ABIInternal (and ABI0, which is the same with no registers) ---- */

struct go_state {
	const struct ct_typetab *tt;
	piece_vec pv;       /* pieces of the value being assigned */
	uint32_t ni, nf;    /* integer / float registers used */
	uint32_t max_i, max_f;
	uint32_t stack;     /* next stack offset from CFA */
	uint32_t spill;     /* next offset in the spill area */
};

static bool go_ints(struct go_state *s, uint32_t size, uint32_t off)
{
	uint32_t n = (size + 7) / 8;
	if (s->ni + n > s->max_i)
		return false;
	for (uint32_t i = 0; i < n; i++)
		push_piece(&s->pv, CT_PIECE_REG, ct_go_int_regs[s->ni++], min_u32(8, size - 8 * i),
			   off + 8 * i, 0);
	return true;
}

static bool go_floats(struct go_state *s, uint32_t n, uint32_t each, uint32_t off)
{
	if (s->nf + n > s->max_f)
		return false;
	for (uint32_t i = 0; i < n; i++)
		push_piece(&s->pv, CT_PIECE_XREG, (uint8_t)(CT_XMM0 + s->nf++), each, off + each * i, 0);
	return true;
}

/* abiutils.go regassign + allocateRegs: true if the whole value got registers. */
static bool go_regassign(struct go_state *s, uint32_t id, uint32_t off)
{
	const struct ct_type *t = type_at(s->tt, id);
	switch (t->kind) {
	case CT_K_FLOAT:
		return go_floats(s, 1, t->size, off);
	case CT_K_COMPLEX:
		return go_floats(s, 2, t->size / 2, off);
	case CT_K_STRING: case CT_K_IFACE: case CT_K_EFACE:
		return go_ints(s, 8, off) && go_ints(s, 8, off + 8);
	case CT_K_SLICE:
		return go_ints(s, 8, off) && go_ints(s, 8, off + 8) && go_ints(s, 8, off + 16);
	case CT_K_STRUCT:
		for (uint32_t i = 0; i < t->nfields; i++)
			if (!go_regassign(s, t->fields[i].type, off + t->fields[i].offset))
				return false;
		return true;
	case CT_K_ARRAY:
		if (t->len == 0)
			return true;
		if (t->len > 1)
			return false;
		return go_regassign(s, t->elem, off);
	default: /* integer-like, checked by check_type */
		return go_ints(s, t->size, off);
	}
}

/* abiutils.go assignParamOrReturn. */
static void go_assign(struct go_state *s, uint32_t id, bool is_result, struct ct_loc *loc)
{
	const struct ct_type *t = type_at(s->tt, id);
	uint32_t align = type_align(s->tt, id, 0);
	uint32_t ni = s->ni, nf = s->nf;
	s->pv.n = 0;
	/* (a value of nonzero size always needs a register; no pieces would
	 * mean a struct whose fields were not described) */
	if (t->size > 0 && go_regassign(s, id, 0) && s->pv.n > 0) {
		if (!is_result) /* spill slot, aligned for a T */
			s->spill = align_up(s->spill, align) + t->size;
	} else {
		s->ni = ni;
		s->nf = nf;
		s->pv.n = 0;
		uint32_t off = align_up(s->stack, align);
		push_mem(&s->pv, CT_PIECE_STACK, 0, t->size, off);
		s->stack = off + t->size;
	}
	take_pieces(&s->pv, loc);
}

static void go_layout(const struct ct_typetab *tt, const struct ct_sig *sig, enum ct_callconv cc,
		      struct ct_abi_layout *out)
{
	struct go_state s = {.tt = tt};
	if (cc == CT_CC_GO_REG) {
		s.max_i = CT_GO_NINT;
		s.max_f = GO_NF;
	}
	/* The dictionary of a shape instance is an ordinary first parameter
	 * (a uintptr) that DWARF does not list: it takes RAX and a spill slot
	 * (Generic[go.shape.int_0](k int, n int) has args=0x18). */
	if (sig->go_dict) {
		if (s.max_i > 0) {
			s.ni = 1;
			s.spill = 8;
		} else {
			s.stack = 8;
		}
	}
	for (size_t i = 0; i < sig->n; i++)
		if (!sig->params[i].is_result)
			go_assign(&s, sig->params[i].type, false, &out->locs[i]);
	s.stack = align_up(s.stack, 8);
	out->stack_args = s.stack;
	s.ni = s.nf = 0;
	for (size_t i = 0; i < sig->n; i++)
		if (sig->params[i].is_result)
			go_assign(&s, sig->params[i].type, true, &out->locs[i]);
	s.stack = align_up(s.stack, 8);
	out->stack_results = s.stack - out->stack_args;
	out->spill = align_up(s.spill, 8);
	out->width = s.stack + out->spill;
	CT_VEC_FREE(s.pv);
}

/* ---- SysV AMD64 ---- */

enum sv_class { SV_NONE, SV_INTEGER, SV_SSE, SV_SSEUP, SV_X87, SV_X87UP, SV_CX87, SV_MEMORY };

/* psABI 3.2.3, merging two classes of one eightbyte. */
static enum sv_class sv_merge(enum sv_class a, enum sv_class b)
{
	if (a == b)
		return a;
	if (a == SV_NONE)
		return b;
	if (b == SV_NONE)
		return a;
	if (a == SV_MEMORY || b == SV_MEMORY)
		return SV_MEMORY;
	if (a == SV_INTEGER || b == SV_INTEGER)
		return SV_INTEGER;
	if (a == SV_X87 || a == SV_X87UP || a == SV_CX87 || b == SV_X87 || b == SV_X87UP ||
	    b == SV_CX87)
		return SV_MEMORY;
	return SV_SSE;
}

static void sv_mark(enum sv_class cls[2], uint32_t off, uint32_t size, enum sv_class c)
{
	for (uint32_t eb = off / 8; eb < 2 && eb * 8 < off + size; eb++)
		cls[eb] = sv_merge(cls[eb], c);
}

/* Classifies type ID placed at byte OFF of an aggregate of at most 16 bytes. */
static void sv_classify(const struct ct_typetab *tt, uint32_t id, uint32_t off, enum sv_class cls[2])
{
	const struct ct_type *t = type_at(tt, id);
	switch (t->kind) {
	case CT_K_FLOAT:
		if (t->size == 16 && ct_type_is_x87(t)) { /* long double: x87 */
			sv_mark(cls, off, 8, SV_X87);
			sv_mark(cls, off + 8, 8, SV_X87UP);
		} else if (t->size == 16) { /* _Float128: one SSE register */
			sv_mark(cls, off, 8, SV_SSE);
			sv_mark(cls, off + 8, 8, SV_SSEUP);
		} else {
			sv_mark(cls, off, t->size, SV_SSE);
		}
		return;
	case CT_K_COMPLEX:
		if (t->size == 32)
			sv_mark(cls, off, 16, SV_CX87);
		else
			sv_mark(cls, off, t->size, SV_SSE); /* complex float: one eightbyte */
		return;
	case CT_K_STRUCT:
	case CT_K_UNION:
	case CT_K_SEQ:
		if (t->nfields == 0 && t->kind == CT_K_UNION) {
			/* members unknown: raw bytes, as integers */
			sv_mark(cls, off, t->size, SV_INTEGER);
			return;
		}
		for (uint32_t i = 0; i < t->nfields; i++) {
			const struct ct_field *f = &t->fields[i];
			uint32_t fa = type_align(tt, f->type, 0);
			if (f->flags & CT_FIELD_BITS) { /* integer bits: the bytes they cover */
				sv_mark(cls, off + f->offset, (f->bit_off + f->bit_size + 7u) / 8u, SV_INTEGER);
				continue;
			}
			if (type_at(tt, f->type)->size && (off + f->offset) % fa) {
				sv_mark(cls, off + f->offset, 1, SV_MEMORY); /* unaligned field */
				continue;
			}
			sv_classify(tt, f->type, off + f->offset, cls);
		}
		return;
	case CT_K_ARRAY: {
		uint32_t es = type_at(tt, t->elem)->size;
		if (es == 0)
			return;
		for (uint32_t i = 0; i < t->len && off + i * es < 16; i++)
			sv_classify(tt, t->elem, off + i * es, cls);
		return;
	}
	default: /* integers, pointers, and gccgo's string/interface words */
		sv_mark(cls, off, t->size, SV_INTEGER);
		return;
	}
}

/* The classes of a whole argument or result: MEMORY in cls[0] if it goes to
 * memory; x87 classes are left for the caller.  Returns the eightbyte count. */
static uint32_t sv_classify_value(const struct ct_typetab *tt, uint32_t id, enum sv_class cls[2])
{
	const struct ct_type *t = type_at(tt, id);
	cls[0] = cls[1] = SV_NONE;
	if (t->size == 0)
		return 0;
	if (t->by_ref) { /* C++: through a hidden reference */
		cls[0] = cls[1] = SV_MEMORY;
		return (t->size + 7) / 8;
	}
	if (t->kind == CT_K_COMPLEX && t->size == 32 && ct_type_is_x87(t)) { /* complex long double */
		cls[0] = cls[1] = SV_CX87;
		return 4;
	}
	if (t->size > 16) {
		cls[0] = cls[1] = SV_MEMORY;
		return (t->size + 7) / 8;
	}
	sv_classify(tt, id, 0, cls);
	uint32_t n = (t->size + 7) / 8;
	/* post-merger cleanup */
	if (cls[0] == SV_MEMORY || cls[1] == SV_MEMORY || (cls[1] == SV_X87UP && cls[0] != SV_X87))
		cls[0] = cls[1] = SV_MEMORY;
	if (cls[1] == SV_SSEUP && cls[0] != SV_SSE)
		cls[1] = SV_SSE;
	return n;
}

static bool sv_is_x87(enum sv_class c)
{
	return c == SV_X87 || c == SV_X87UP || c == SV_CX87;
}

static void sysv_layout(const struct ct_typetab *tt, const struct ct_sig *sig,
			struct ct_abi_layout *out)
{
	piece_vec pv = {0};
	uint32_t ni = 0, nf = 0, stack = 0;

	/* The result first: one returned in memory takes RDI. */
	for (size_t i = 0; i < sig->n; i++) {
		const struct ct_param *p = &sig->params[i];
		if (!p->is_result)
			continue;
		const struct ct_type *t = type_at(tt, p->type);
		enum sv_class cls[2];
		uint32_t n = sv_classify_value(tt, p->type, cls);
		if (t->kind == CT_K_VOID || n == 0)
			continue; /* nothing returned */
		if (sv_is_x87(cls[0])) {
			/* in x87 st(0)/st(1), which BPF cannot read: say so */
			push_piece(&pv, CT_PIECE_X87, 0, t->size, 0, 0);
			take_pieces(&pv, &out->locs[i]);
			continue;
		}
		if (cls[0] == SV_MEMORY) {
			push_mem(&pv, CT_PIECE_REGMEM, CT_RAX, t->size, 0);
			out->sret_via_rax = true;
			ni = 1;
		} else {
			static const uint8_t rr[] = {CT_RAX, CT_RDX};
			uint32_t ri = 0, rf = 0;
			for (uint32_t eb = 0; eb < n; eb++) {
				uint32_t sz = min_u32(8, t->size - 8 * eb);
				if (cls[eb] == SV_INTEGER)
					push_piece(&pv, CT_PIECE_REG, rr[ri++], sz, 8 * eb, 0);
				else if (cls[eb] == SV_SSE) /* with SSEUP: the whole register */
					push_piece(&pv, CT_PIECE_XREG, (uint8_t)(CT_XMM0 + rf++),
						   eb + 1 < n && cls[eb + 1] == SV_SSEUP ? 16 : sz, 8 * eb, 0);
			}
		}
		take_pieces(&pv, &out->locs[i]);
	}

	for (size_t i = 0; i < sig->n; i++) {
		const struct ct_param *p = &sig->params[i];
		if (p->is_result)
			continue;
		const struct ct_type *t = type_at(tt, p->type);
		enum sv_class cls[2];
		uint32_t n = sv_classify_value(tt, p->type, cls);
		uint32_t need_i = 0, need_f = 0;
		bool mem = n > 0 && (cls[0] == SV_MEMORY || sv_is_x87(cls[0]));
		for (uint32_t eb = 0; eb < n && !mem; eb++) {
			need_i += cls[eb] == SV_INTEGER;
			need_f += cls[eb] == SV_SSE;
		}
		if (t->by_ref) {
			/* C++: a pointer to the caller's copy (on the stack when
			 * no register is left: then the value is out of reach) */
			if (ni < CT_SYSV_NINT)
				push_mem(&pv, CT_PIECE_REGMEM, ct_sysv_int_regs[ni++], t->size, 0);
			else
				stack += 8;
		} else if (n == 0) {
			/* empty struct: GCC passes nothing */
			push_piece(&pv, CT_PIECE_STACK, 0, 0, 0, (int32_t)stack);
		} else if (!mem && ni + need_i <= CT_SYSV_NINT && nf + need_f <= SYSV_NF) {
			for (uint32_t eb = 0; eb < n; eb++) {
				uint32_t sz = min_u32(8, t->size - 8 * eb);
				if (cls[eb] == SV_INTEGER)
					push_piece(&pv, CT_PIECE_REG, ct_sysv_int_regs[ni++], sz, 8 * eb, 0);
				else if (cls[eb] == SV_SSE) /* with SSEUP: the whole register */
					push_piece(&pv, CT_PIECE_XREG, (uint8_t)(CT_XMM0 + nf++),
						   eb + 1 < n && cls[eb + 1] == SV_SSEUP ? 16 : sz, 8 * eb, 0);
			}
		} else {
			/* memory: 8-byte slots, 16-aligned for 16-aligned types */
			uint32_t a = type_align(tt, p->type, 0);
			uint32_t off = align_up(stack, a > 8 ? a : 8);
			push_mem(&pv, CT_PIECE_STACK, 0, t->size, off);
			stack = off + align_up(t->size, 8);
		}
		take_pieces(&pv, &out->locs[i]);
	}
	out->stack_args = stack;
	out->width = stack;
	CT_VEC_FREE(pv);
}

/* ---- Rust ---- */

enum rs_class { RS_IGNORE, RS_SCALAR, RS_PAIR, RS_AGG, RS_UNKNOWN };

/* A scalar of a Rust value: where, how big, and rustc's "primitive" (two
 * variants' fields share a register only if these are equal). */
struct rs_scalar {
	uint32_t off, size;
	bool sse;
	int prim; /* kind << 8 | size: 1 unsigned, 2 signed, 3 float, 4 pointer */
};

static enum rs_class rs_classify(const struct ct_typetab *tt, uint32_t id, struct rs_scalar sc[2], int depth);

/* Two scalars A (lower offset) and B make a pair only where rustc would lay
 * out the pair itself: B right after A, aligned, and nothing else. */
static bool rs_pair_fits(const struct rs_scalar *a, const struct rs_scalar *b, uint32_t size)
{
	uint32_t al = a->size > b->size ? a->size : b->size;
	return a->off == 0 && b->off == align_up(a->size, b->size) && size == align_up(b->off + b->size, al);
}

static enum rs_class rs_struct(const struct ct_typetab *tt, const struct ct_type *t, const struct ct_field *fs,
			       uint32_t n, struct rs_scalar sc[2], int depth)
{
	const struct ct_field *nz[2];
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!type_at(tt, fs[i].type) || !type_at(tt, fs[i].type)->size)
			continue; /* PhantomData, allocators, () */
		if (k == 2)
			return RS_AGG;
		nz[k++] = &fs[i];
	}
	if (k == 0)
		return RS_UNKNOWN; /* sized, but no field says how */
	struct rs_scalar s[2][2];
	enum rs_class c0 = rs_classify(tt, nz[0]->type, s[0], depth + 1);
	if (k == 1) {
		if (nz[0]->offset || type_at(tt, nz[0]->type)->size != t->size)
			return c0 == RS_UNKNOWN ? RS_UNKNOWN : RS_AGG;
		for (int i = 0; i < 2; i++)
			sc[i] = s[0][i];
		return c0;
	}
	enum rs_class c1 = rs_classify(tt, nz[1]->type, s[1], depth + 1);
	if (c0 == RS_UNKNOWN || c1 == RS_UNKNOWN)
		return RS_UNKNOWN;
	if (c0 != RS_SCALAR || c1 != RS_SCALAR)
		return RS_AGG;
	int lo = nz[0]->offset > nz[1]->offset;
	sc[0] = s[lo][0];
	sc[0].off += nz[lo]->offset;
	sc[1] = s[!lo][0];
	sc[1].off += nz[!lo]->offset;
	return rs_pair_fits(&sc[0], &sc[1], t->size) ? RS_PAIR : RS_AGG;
}

/* Does a field of variant V (a struct at the enum's offsets) overlap the
 * discriminant's bytes?  Then the discriminant is a niche in it. */
static bool rs_overlaps(const struct ct_typetab *tt, const struct ct_type *v, uint32_t off, uint32_t size)
{
	for (uint32_t i = 0; i < v->nfields; i++) {
		const struct ct_type *f = type_at(tt, v->fields[i].type);
		if (f && f->size && v->fields[i].offset < off + size && off < v->fields[i].offset + f->size)
			return true;
	}
	return false;
}

/* rustc's enum layouts: a niche enum has its dataful variant's class; a
 * tagged one is a scalar (no data), a pair (tag, the one scalar every
 * variant with data holds at the same place) or an aggregate. */
static enum rs_class rs_enum(const struct ct_typetab *tt, const struct ct_type *t, struct rs_scalar sc[2], int depth)
{
	const struct ct_type *dt = type_at(tt, t->elem);
	if (t->elem == CT_TYPE_NONE || !dt) {
		if (t->nfields != 1 || !type_at(tt, t->fields[0].type))
			return RS_UNKNOWN;
		return rs_classify(tt, t->fields[0].type, sc, depth + 1);
	}
	const struct ct_type *niche = NULL;
	for (uint32_t i = 0; i < t->nfields; i++) {
		const struct ct_type *v = type_at(tt, t->fields[i].type);
		if (!v || v->kind != CT_K_STRUCT)
			return RS_UNKNOWN;
		if (rs_overlaps(tt, v, t->len, dt->size)) {
			if (niche || !(t->fields[i].flags & CT_FIELD_DEFAULT))
				return RS_UNKNOWN;
			niche = v;
		}
	}
	if (niche) {
		enum rs_class c = rs_classify(tt, (uint32_t)(niche - tt->v), sc, depth + 1);
		return c == RS_SCALAR || c == RS_PAIR || c == RS_UNKNOWN ? c : RS_AGG;
	}
	if (t->len != 0)
		return RS_UNKNOWN;
	sc[0] = (struct rs_scalar){0, dt->size, false, 1 << 8 | (int)dt->size};
	if (dt->size == t->size)
		return RS_SCALAR;
	bool any = false;
	for (uint32_t i = 0; i < t->nfields; i++) {
		const struct ct_type *v = type_at(tt, t->fields[i].type);
		struct rs_scalar s[2];
		uint32_t k = 0, at = 0;
		for (uint32_t j = 0; j < v->nfields; j++)
			if (type_at(tt, v->fields[j].type) && type_at(tt, v->fields[j].type)->size) {
				k++;
				at = j;
			}
		if (k == 0)
			continue;
		if (k > 1)
			return RS_AGG;
		enum rs_class c = rs_classify(tt, v->fields[at].type, s, depth + 1);
		if (c == RS_UNKNOWN)
			return RS_UNKNOWN;
		if (c != RS_SCALAR)
			return RS_AGG;
		s[0].off += v->fields[at].offset;
		if (any && (s[0].prim != sc[1].prim || s[0].off != sc[1].off))
			return RS_AGG;
		sc[1] = s[0];
		any = true;
	}
	return any && rs_pair_fits(&sc[0], &sc[1], t->size) ? RS_PAIR : RS_AGG;
}

static enum rs_class rs_classify(const struct ct_typetab *tt, uint32_t id, struct rs_scalar sc[2], int depth)
{
	const struct ct_type *t = type_at(tt, id);
	if (!t || depth > MAX_DEPTH)
		return RS_UNKNOWN;
	if (!t->size)
		return RS_IGNORE;
	switch (t->kind) {
	case CT_K_FLOAT:
		if (t->size != 4 && t->size != 8)
			return RS_UNKNOWN;
		sc[0] = (struct rs_scalar){0, t->size, true, 3 << 8 | (int)t->size};
		return RS_SCALAR;
	case CT_K_INT: case CT_K_UINT: case CT_K_BOOL: case CT_K_CHAR: case CT_K_ENUM:
	case CT_K_PTR: case CT_K_REF: case CT_K_FUNC: case CT_K_CSTRING: {
		if (t->size > 8)
			return RS_UNKNOWN; /* i128: two registers or the stack */
		bool ptr = t->kind == CT_K_PTR || t->kind == CT_K_REF || t->kind == CT_K_FUNC || t->kind == CT_K_CSTRING;
		bool sgn = t->kind == CT_K_INT || (t->kind == CT_K_ENUM && t->is_signed);
		sc[0] = (struct rs_scalar){0, t->size, false, (ptr ? 4 : sgn ? 2 : 1) << 8 | (int)t->size};
		return RS_SCALAR;
	}
	case CT_K_STRUCT:
	case CT_K_SEQ:
		return rs_struct(tt, t, t->fields, t->nfields, sc, depth);
	case CT_K_VARIANT:
		return rs_enum(tt, t, sc, depth);
	case CT_K_ARRAY:
		return RS_AGG;
	default: /* unions (their fields are not described), undescribed types */
		return RS_UNKNOWN;
	}
}

struct rs_state {
	piece_vec pv;
	uint32_t ni, nf, stack;
};

/* One scalar: the next register of its class, or the next stack slot. */
static void rs_take(struct rs_state *s, const struct rs_scalar *sc)
{
	if (sc->sse && s->nf < SYSV_NF) {
		push_piece(&s->pv, CT_PIECE_XREG, (uint8_t)(CT_XMM0 + s->nf++), sc->size, sc->off, 0);
	} else if (!sc->sse && s->ni < CT_SYSV_NINT) {
		push_piece(&s->pv, CT_PIECE_REG, ct_sysv_int_regs[s->ni++], sc->size, sc->off, 0);
	} else {
		push_piece(&s->pv, CT_PIECE_STACK, 0, sc->size, sc->off, (int32_t)s->stack);
		s->stack += 8;
	}
}

static void rust_layout(const struct ct_typetab *tt, const struct ct_sig *sig, struct ct_abi_layout *out)
{
	struct rs_state s = {0};
	bool lost = false; /* a value took registers we cannot tell: the rest is unknown */
	for (size_t i = 0; i < sig->n; i++) {
		if (!sig->params[i].is_result)
			continue;
		const struct ct_type *t = type_at(tt, sig->params[i].type);
		struct rs_scalar sc[2];
		enum rs_class c = rs_classify(tt, sig->params[i].type, sc, 0);
		if (!t) {
			lost = true;
			continue;
		}
		if (c == RS_UNKNOWN && t->size > 16)
			c = RS_AGG; /* nothing larger than a pair comes back in registers */
		if ((t->kind == CT_K_INT || t->kind == CT_K_UINT) && t->size == 16) {
			/* i128/u128 come back in RAX:RDX */
			push_piece(&s.pv, CT_PIECE_REG, CT_RAX, 8, 0, 0);
			push_piece(&s.pv, CT_PIECE_REG, CT_RDX, 8, 8, 0);
		} else if (c == RS_SCALAR || c == RS_PAIR) {
			static const uint8_t rr[] = {CT_RAX, CT_RDX};
			uint32_t ri = 0, rf = 0;
			for (int k = 0; k < (c == RS_PAIR ? 2 : 1); k++) {
				if (sc[k].sse)
					push_piece(&s.pv, CT_PIECE_XREG, (uint8_t)(CT_XMM0 + rf++), sc[k].size, sc[k].off, 0);
				else
					push_piece(&s.pv, CT_PIECE_REG, rr[ri++], sc[k].size, sc[k].off, 0);
			}
		} else if (c == RS_AGG && t->size <= 8) {
			push_piece(&s.pv, CT_PIECE_REG, CT_RAX, t->size, 0, 0);
		} else if (c == RS_AGG) {
			push_mem(&s.pv, CT_PIECE_REGMEM, CT_RAX, t->size, 0);
			out->sret_via_rax = true;
			s.ni = 1;
		} else if (c == RS_UNKNOWN && t->size > 8) {
			lost = true; /* a pair in RAX:RDX, or a hidden pointer in RDI? */
		}
		take_pieces(&s.pv, &out->locs[i]);
	}
	for (size_t i = 0; i < sig->n && !lost; i++) {
		if (sig->params[i].is_result)
			continue;
		const struct ct_type *t = type_at(tt, sig->params[i].type);
		struct rs_scalar sc[2];
		enum rs_class c = rs_classify(tt, sig->params[i].type, sc, 0);
		if (!t)
			break;
		if (c == RS_UNKNOWN && t->size > 16)
			c = RS_AGG;
		switch (c) {
		case RS_IGNORE:
			break;
		case RS_PAIR:
			rs_take(&s, &sc[0]);
			rs_take(&s, &sc[1]);
			break;
		case RS_SCALAR:
			rs_take(&s, &sc[0]);
			break;
		case RS_AGG:
			if (t->size <= 8) {
				struct rs_scalar whole = {0, t->size, false, 0};
				rs_take(&s, &whole);
			} else if (s.ni < CT_SYSV_NINT) {
				push_mem(&s.pv, CT_PIECE_REGMEM, ct_sysv_int_regs[s.ni++], t->size, 0);
			} else {
				s.stack += 8; /* a pointer on the stack: out of reach */
			}
			break;
		case RS_UNKNOWN:
			lost = true;
			break;
		}
		take_pieces(&s.pv, &out->locs[i]);
	}
	out->stack_args = s.stack;
	out->width = s.stack;
	CT_VEC_FREE(s.pv);
}

int ct_abi_assign(const struct ct_typetab *tt, const struct ct_sig *sig, enum ct_callconv cc,
		  struct ct_abi_layout *out)
{
	memset(out, 0, sizeof(*out));
	if (cc != CT_CC_GO_REG && cc != CT_CC_GO_STACK && cc != CT_CC_SYSV && cc != CT_CC_RUST)
		return ct_fail("abi: unknown calling convention %d", (int)cc);
	size_t nres = 0;
	for (size_t i = 0; i < sig->n; i++) {
		const struct ct_param *p = &sig->params[i];
		nres += p->is_result;
		/* a C void result is accepted (and gets no location) */
		if (cc == CT_CC_SYSV && p->is_result && type_at(tt, p->type) &&
		    type_at(tt, p->type)->kind == CT_K_VOID)
			continue;
		if (cc == CT_CC_RUST) /* rust_layout judges each value itself */
			continue;
		if (check_type(tt, p->type, cc, 0) < 0)
			return -1;
	}
	if ((cc == CT_CC_SYSV || cc == CT_CC_RUST) && nres > 1)
		return ct_fail("abi: a C or Rust function with %zu results", nres);
	out->n = sig->n;
	out->locs = sig->n ? xcalloc(sig->n, sizeof(*out->locs)) : NULL;
	if (cc == CT_CC_SYSV)
		sysv_layout(tt, sig, out);
	else if (cc == CT_CC_RUST)
		rust_layout(tt, sig, out);
	else
		go_layout(tt, sig, cc, out);
	return 0;
}

void ct_abi_layout_free(struct ct_abi_layout *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->locs[i].pieces);
	free(l->locs);
	memset(l, 0, sizeof(*l));
}
