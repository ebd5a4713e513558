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
 * Limits of the type model (struct ct_type has no alignment or bit-field
 * data): a C member with _Alignas or a packed struct is judged by its
 * natural alignment (packing shows up as unaligned fields -> MEMORY, which is
 * right); a 16-byte float is taken to be x87 long double, never _Float128
 * (SSE); a union without member descriptions is classified INTEGER. */
#include "plan/abi.h"
#include "util/util.h"

#include <string.h>

#define MAX_DEPTH 32           /* nesting limit: guards against cyclic tables */
#define STACK_CHUNK 0x8000u    /* largest STACK piece we emit (size is uint16_t) */

static const uint8_t go_iregs[] = {CT_RAX, CT_RBX, CT_RCX, CT_RDI, CT_RSI,
				   CT_R8,  CT_R9,  CT_R10, CT_R11};
#define GO_NI 9u
#define GO_NF 15u

static const uint8_t sysv_iregs[] = {CT_RDI, CT_RSI, CT_RDX, CT_RCX, CT_R8, CT_R9};
#define SYSV_NI 6u
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
	struct ct_piece p = {kind, reg, (uint16_t)size, value_off, stack_off};
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
	case CT_K_MAP: case CT_K_CHAN: case CT_K_FUNC: case CT_K_CSTRING:
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
	bool go = cc != CT_CC_SYSV;
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
	case CT_K_UNION: /* members all at offset 0: checked like a struct */
	case CT_K_STRUCT:
		if (go && t->kind == CT_K_UNION)
			return ct_fail("abi: union type %s in a Go signature", name);
		for (uint32_t i = 0; i < t->nfields; i++) {
			const struct ct_field *f = &t->fields[i];
			if (check_type(tt, f->type, cc, depth + 1) < 0)
				return -1;
			if ((uint64_t)f->offset + type_at(tt, f->type)->size > t->size)
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
	case CT_K_UNION: {
		uint32_t a = 1;
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
		push_piece(&s->pv, CT_PIECE_REG, go_iregs[s->ni++], min_u32(8, size - 8 * i),
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
		s.max_i = GO_NI;
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

enum sv_class { SV_NONE, SV_INTEGER, SV_SSE, SV_X87, SV_X87UP, SV_CX87, SV_MEMORY };

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
		if (t->size == 16) { /* long double: x87 */
			sv_mark(cls, off, 8, SV_X87);
			sv_mark(cls, off + 8, 8, SV_X87UP);
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
		if (t->nfields == 0 && t->kind == CT_K_UNION) {
			/* members unknown: raw bytes, as integers */
			sv_mark(cls, off, t->size, SV_INTEGER);
			return;
		}
		for (uint32_t i = 0; i < t->nfields; i++) {
			const struct ct_field *f = &t->fields[i];
			uint32_t fa = type_align(tt, f->type, 0);
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
	if (t->kind == CT_K_COMPLEX && t->size == 32) { /* complex long double */
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
		if (t->kind == CT_K_VOID || n == 0 || sv_is_x87(cls[0])) {
			/* void, empty, or in x87 st(0)/st(1), which nothing reads: unknown */
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
				else if (cls[eb] == SV_SSE)
					push_piece(&pv, CT_PIECE_XREG, (uint8_t)(CT_XMM0 + rf++), sz, 8 * eb, 0);
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
		if (n == 0) {
			/* empty struct: GCC passes nothing */
			push_piece(&pv, CT_PIECE_STACK, 0, 0, 0, (int32_t)stack);
		} else if (!mem && ni + need_i <= SYSV_NI && nf + need_f <= SYSV_NF) {
			for (uint32_t eb = 0; eb < n; eb++) {
				uint32_t sz = min_u32(8, t->size - 8 * eb);
				if (cls[eb] == SV_INTEGER)
					push_piece(&pv, CT_PIECE_REG, sysv_iregs[ni++], sz, 8 * eb, 0);
				else if (cls[eb] == SV_SSE)
					push_piece(&pv, CT_PIECE_XREG, (uint8_t)(CT_XMM0 + nf++), sz, 8 * eb, 0);
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

int ct_abi_assign(const struct ct_typetab *tt, const struct ct_sig *sig, enum ct_callconv cc,
		  struct ct_abi_layout *out)
{
	memset(out, 0, sizeof(*out));
	if (cc != CT_CC_GO_REG && cc != CT_CC_GO_STACK && cc != CT_CC_SYSV)
		return ct_fail("abi: unknown calling convention %d", (int)cc);
	size_t nres = 0;
	for (size_t i = 0; i < sig->n; i++) {
		const struct ct_param *p = &sig->params[i];
		nres += p->is_result;
		/* a C void result is accepted (and gets no location) */
		if (cc == CT_CC_SYSV && p->is_result && type_at(tt, p->type) &&
		    type_at(tt, p->type)->kind == CT_K_VOID)
			continue;
		if (check_type(tt, p->type, cc, 0) < 0)
			return -1;
	}
	if (cc == CT_CC_SYSV && nres > 1)
		return ct_fail("abi: a C function with %zu results", nres);
	out->n = sig->n;
	out->locs = sig->n ? xcalloc(sig->n, sizeof(*out->locs)) : NULL;
	if (cc == CT_CC_SYSV)
		sysv_layout(tt, sig, out);
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
