#include "plan/fetch.h"
#include "plan/sites.h"
#include "target/goruntime.h"
#include "util/util.h"

#include <string.h>

struct builder {
	const struct ct_typetab *tt;
	const struct ct_fetch_opts *o;
	struct ct_site_fetch *out;
	uint32_t used; /* payload bytes laid out so far */
};

/* Where a pointer-sized word can be found in the payload: in a value's
 * pieces, or inside a captured blob. */
struct region {
	const struct ct_val_desc *val; /* or NULL for a blob */
	uint32_t blob_slot;
	uint32_t blob_size;
};

static int alloc_slot(struct builder *b, uint32_t bytes)
{
	uint32_t at = (b->used + 7) & ~7U;
	if (at + bytes > CT_MAX_PAYLOAD - 8) {
		b->out->truncated = true;
		return -1;
	}
	b->used = at + bytes;
	return (int)at;
}

static struct ct_fetch_op *add_op(struct builder *b, uint8_t code)
{
	struct ct_fetch *f = &b->out->prog;
	if (f->nops >= CT_MAX_OPS) {
		b->out->truncated = true;
		return NULL;
	}
	struct ct_fetch_op *op = &f->ops[f->nops++];
	memset(op, 0, sizeof(*op));
	op->code = code;
	return op;
}

/* A memory op with its slot: header + SIZE bytes. */
static struct ct_fetch_op *add_mem_op(struct builder *b, uint8_t code, uint32_t size)
{
	struct ct_fetch *f = &b->out->prog;
	if (f->nops >= CT_MAX_OPS) {
		b->out->truncated = true;
		return NULL;
	}
	int slot = alloc_slot(b, CT_MEM_HDR + size);
	if (slot < 0)
		return NULL;
	struct ct_fetch_op *op = add_op(b, code);
	op->dst = (uint16_t)slot;
	op->size = (uint16_t)size;
	return op;
}

static int word_slot(const struct region *r, uint32_t off)
{
	if (!r->val)
		return off + 8 <= r->blob_size ? (int)(r->blob_slot + CT_MEM_HDR + off) : -1;
	const struct ct_val_piece *p = ct_val_piece_of(r->val, off, 8);
	return p ? ct_val_piece_slot(p, off) : -1;
}

static bool needs_memory(const struct ct_typetab *tt, uint32_t id, uint32_t depth)
{
	const struct ct_type *t = ct_type_get(tt, id);
	if (depth > 4)
		return false;
	switch (t->kind) {
	case CT_K_STRING:
	case CT_K_SLICE:
	case CT_K_IFACE:
	case CT_K_EFACE:
	case CT_K_MAP:
	case CT_K_CHAN:
	case CT_K_CSTRING:
	case CT_K_REF:
	case CT_K_SEQ:
		return true;
	case CT_K_STRUCT:
	case CT_K_VARIANT:
		for (uint32_t i = 0; i < t->nfields; i++)
			if (needs_memory(tt, t->fields[i].type, depth + 1))
				return true;
		return false;
	case CT_K_ARRAY:
		return t->len && needs_memory(tt, t->elem, depth + 1);
	default:
		return false;
	}
}

/* Deref the pointer at word PTR_SLOT; returns the blob's slot or -1. */
static int deref(struct builder *b, int ptr_slot, int32_t off, uint32_t size)
{
	struct ct_fetch_op *op = add_mem_op(b, CT_OP_DEREF, size);
	if (!op)
		return -1;
	op->src = (uint16_t)ptr_slot;
	op->off = off;
	return op->dst;
}

static void capture(struct builder *b, const struct region *r, uint32_t off, uint32_t id, uint32_t depth);

/* CODE DEREF_LEN (LEN_SLOT: a count of SCALE-byte items) or DEREF_SPAN
 * (LEN_SLOT: the end pointer). */
static int deref_len(struct builder *b, int ptr_slot, int len_slot, uint32_t scale, uint32_t max)
{
	struct ct_fetch_op *op = add_mem_op(b, scale ? CT_OP_DEREF_LEN : CT_OP_DEREF_SPAN, max);
	if (!op)
		return -1;
	op->src = (uint16_t)ptr_slot;
	op->src2 = (uint16_t)len_slot;
	op->scale = (uint16_t)scale;
	return op->dst;
}

/* The items of a slice-like value: ITEM_SIZE bytes each, counted by the
 * word at LEN_SLOT (or up to the end pointer there, SPAN), at most the
 * --max-items and 512 bytes; then what they point to. */
static void capture_items(struct builder *b, int ptr_slot, int len_slot, bool span, uint32_t elem,
			  uint32_t depth)
{
	const struct ct_type *e = ct_type_get(b->tt, elem);
	if (!e->size)
		return;
	uint32_t n = b->o->max_items;
	while (n > 1 && n * e->size > 512)
		n--;
	if (n * e->size > 512)
		return;
	int blob = deref_len(b, ptr_slot, len_slot, span ? 0 : e->size, n * e->size);
	if (blob < 0 || !needs_memory(b->tt, elem, depth + 1))
		return;
	struct region br = {NULL, (uint32_t)blob, n * e->size};
	for (uint32_t i = 0; i < n; i++)
		capture(b, &br, i * e->size, elem, depth + 1);
}


/* Plans the capture of what the value of type ID at OFF in R points to. */
static void capture(struct builder *b, const struct region *r, uint32_t off, uint32_t id, uint32_t depth)
{
	const struct ct_type *t = ct_type_get(b->tt, id);
	if (depth > b->o->max_depth)
		return;
	int p = -1, q = -1;
	switch (t->kind) {
	case CT_K_STRING: /* Go's strings are immutable: a later store cannot change these bytes */
		if ((p = word_slot(r, off)) >= 0 && (q = word_slot(r, off + 8)) >= 0 &&
		    deref_len(b, p, q, 1, b->o->max_string) >= 0)
			b->out->immutable_ops |= 1ull << (b->out->prog.nops - 1);
		break;
	case CT_K_CSTRING: {
		if ((p = word_slot(r, off)) < 0)
			break;
		struct ct_fetch_op *op = add_mem_op(b, CT_OP_DEREF_STR, b->o->max_string + 1);
		if (op)
			op->src = (uint16_t)p;
		break;
	}
	case CT_K_SLICE:
		if ((p = word_slot(r, off)) >= 0 && (q = word_slot(r, off + 8)) >= 0)
			capture_items(b, p, q, false, t->elem, depth);
		break;
	case CT_K_SEQ: {
		const struct ct_field *ptr = ct_type_field(t, "ptr"), *len = ct_type_field(t, "len"),
				     *end = ct_type_field(t, "end");
		if (!ptr || !(len || end) || (p = word_slot(r, off + ptr->offset)) < 0 ||
		    (q = word_slot(r, off + (len ? len : end)->offset)) < 0)
			break;
		if (t->is_text)
			deref_len(b, p, q, len ? ct_type_get(b->tt, t->elem)->size : 0, b->o->max_string);
		else
			capture_items(b, p, q, !len, t->elem, depth);
		break;
	}
	case CT_K_REF: {
		/* what a reference points to, a small value (3 levels at most) */
		const struct ct_type *e = ct_type_get(b->tt, t->elem);
		if (!e->size || e->size > 512 || (p = word_slot(r, off)) < 0)
			break;
		int blob = deref(b, p, 0, e->size);
		if (blob >= 0 && needs_memory(b->tt, t->elem, depth + 1)) {
			struct region br = {NULL, (uint32_t)blob, e->size};
			capture(b, &br, 0, t->elem, depth + 1);
		}
		break;
	}
	case CT_K_VARIANT:
		/* which variant is known only at run time: capture for each */
		for (uint32_t i = 0; i < t->nfields; i++)
			if (needs_memory(b->tt, t->fields[i].type, depth + 1))
				capture(b, r, off, t->fields[i].type, depth + 1);
		break;
	case CT_K_IFACE:
	case CT_K_EFACE: {
		/* Dynamic type: eface word 0 is the *_type; an iface's word 0 is
		 * an *itab whose _type sits at CT_GO_ITAB_TYPE_OFF.  Data: 16 bytes behind the data
		 * word cover a boxed int/float/bool, a string header or the
		 * message field of errors.New/fmt.Errorf values; the string they
		 * may describe is captured too and used only if the type says so. */
		if ((p = word_slot(r, off)) < 0 || (q = word_slot(r, off + CT_GO_IFACE_DATA_OFF)) < 0)
			break;
		if (t->kind == CT_K_IFACE)
			deref(b, p, CT_GO_ITAB_TYPE_OFF, 8);
		int data = deref(b, q, 0, 16);
		if (data >= 0)
			deref_len(b, data + CT_MEM_HDR, data + CT_MEM_HDR + 8, 1, b->o->max_string);
		break;
	}
	case CT_K_MAP:
		if ((p = word_slot(r, off)) >= 0)
			deref(b, p, CT_GO_MAP_COUNT_OFF, 8);
		break;
	case CT_K_CHAN:
		if ((p = word_slot(r, off)) >= 0)
			deref(b, p, CT_GO_CHAN_QCOUNT_OFF, 16); /* and dataqsiz after it */
		break;
	case CT_K_STRUCT:
		for (uint32_t i = 0; i < t->nfields; i++)
			if (needs_memory(b->tt, t->fields[i].type, depth + 1))
				capture(b, r, off + t->fields[i].offset, t->fields[i].type, depth + 1);
		break;
	case CT_K_ARRAY: {
		const struct ct_type *e = ct_type_get(b->tt, t->elem);
		uint32_t n = t->len < b->o->max_items ? t->len : b->o->max_items;
		if (e->size && needs_memory(b->tt, t->elem, depth + 1))
			for (uint32_t i = 0; i < n; i++)
				capture(b, r, off + i * e->size, t->elem, depth + 1);
		break;
	}
	default:
		break;
	}
}

/* Emits the ops that assemble a value from its pieces; fills its desc. */
static void place_value(struct builder *b, const struct ct_loc *loc, struct ct_val_desc *v)
{
	v->pieces = xcalloc(loc->n ? loc->n : 1, sizeof(*v->pieces));
	for (uint32_t i = 0; i < loc->n; i++) {
		const struct ct_piece *pc = &loc->pieces[i];
		struct ct_val_piece *vp = &v->pieces[v->npieces];
		*vp = (struct ct_val_piece){pc->kind, pc->reg, pc->size, pc->value_off, 0, 0};
		struct ct_fetch_op *op = NULL;
		switch (pc->kind) {
		case CT_PIECE_REG: {
			int slot = alloc_slot(b, 8);
			if (slot >= 0 && (op = add_op(b, CT_OP_REG))) {
				op->reg = pc->reg;
				op->dst = (uint16_t)slot;
				vp->slot = (uint16_t)slot;
			}
			break;
		}
		case CT_PIECE_STACK:
		case CT_PIECE_REGMEM:
			if (pc->size > 512)
				break;
			op = add_mem_op(b, pc->kind == CT_PIECE_STACK ? CT_OP_STACK : CT_OP_REGMEM, pc->size);
			if (op) {
				/* Stack offsets are from the CFA, which is SP + 8 at the
				 * function's entry and at its RETs. */
				op->off = pc->kind == CT_PIECE_STACK ? pc->stack_off + 8 : pc->stack_off;
				op->reg = pc->reg;
				vp->slot = op->dst;
			}
			break;
		case CT_PIECE_XREG:
		case CT_PIECE_X87:
			op = (struct ct_fetch_op *)1; /* nothing to fetch: BPF cannot read SSE or x87 registers */
			break;
		case CT_PIECE_CONST:
			if (pc->size > 8)
				break;
			vp->literal = pc->literal;
			op = (struct ct_fetch_op *)1; /* nothing to fetch: the plan knows it */
			break;
		}
		if (op)
			v->npieces++;
		else if (ct_piece_in_payload(pc->kind))
			v->flags |= CT_VAL_NOLOC | CT_VAL_CUT; /* too big, or the op/payload budget ran out */
		else
			v->flags |= CT_VAL_NOLOC;
	}
	if (!loc->n)
		v->flags |= CT_VAL_NOLOC;
}

void ct_fetch_build(const struct ct_typetab *tt, const struct ct_sig *sig, const struct ct_loc *locs,
		    bool results, const struct ct_fetch_opts *o, struct ct_site_fetch *out)
{
	memset(out, 0, sizeof(*out));
	struct builder b = {tt, o, out, 0};
	out->vals = xcalloc(sig->n ? sig->n : 1, sizeof(*out->vals));
	/* First every value's own bytes, then what they point to, so that the
	 * cheap parts survive when the budget runs out. */
	for (size_t i = 0; i < sig->n; i++) {
		if (sig->params[i].is_result != results)
			continue;
		struct ct_val_desc *v = &out->vals[out->nvals++];
		v->name = xstrdup(sig->params[i].name);
		v->type = sig->params[i].type;
		v->flags = results ? CT_VAL_RESULT : 0;
		place_value(&b, &locs[i], v);
	}
	for (uint32_t i = 0; i < out->nvals; i++) {
		struct ct_val_desc *v = &out->vals[i];
		if (v->flags & CT_VAL_NOLOC)
			continue;
		struct region r = {v, 0, 0};
		capture(&b, &r, 0, v->type, 0);
	}
	out->prog.size = (uint16_t)((b.used + 7) & ~7U);
}

/* Raw word I of the arguments (its low SIZE bytes), as value NAME. */
static void raw_word(struct builder *b, enum ct_callconv cc, uint32_t i, uint16_t size, char *name)
{
	const uint8_t *regs = cc == CT_CC_SYSV ? ct_sysv_int_regs : ct_go_int_regs;
	struct ct_val_desc *v = &b->out->vals[b->out->nvals++];
	v->name = name;
	v->flags = CT_VAL_RAW;
	struct ct_piece pc = {CT_PIECE_REG, cc == CT_CC_GO_STACK ? 0 : regs[i], size, 0, 0, 0};
	if (cc == CT_CC_GO_STACK) {
		pc.kind = CT_PIECE_STACK;
		pc.stack_off = (int32_t)(8 * i);
	}
	struct ct_loc loc = {&pc, 1};
	place_value(b, &loc, v);
}

void ct_fetch_build_raw(enum ct_callconv cc, uint32_t nwords, struct ct_site_fetch *out)
{
	memset(out, 0, sizeof(*out));
	uint32_t nregs = cc == CT_CC_SYSV ? CT_SYSV_NINT : CT_GO_NINT;
	if (cc != CT_CC_GO_STACK && nwords > nregs)
		nwords = nregs;
	if (nwords > 16)
		nwords = 16;
	out->vals = xcalloc(nwords ? nwords : 1, sizeof(*out->vals));
	struct ct_fetch_opts o = {0, 0, 0};
	struct builder b = {NULL, &o, out, 0};
	for (uint32_t i = 0; i < nwords; i++)
		raw_word(&b, cc, i, 8, xasprintf("arg%u", i));
	out->prog.size = (uint16_t)((b.used + 7) & ~7U);
}

void ct_fetch_build_raw_one(enum ct_callconv cc, uint32_t word, uint16_t size, const char *name,
			    struct ct_site_fetch *out)
{
	memset(out, 0, sizeof(*out));
	out->vals = xcalloc(1, sizeof(*out->vals));
	struct ct_fetch_opts o = {0, 0, 0};
	struct builder b = {NULL, &o, out, 0};
	raw_word(&b, cc, word, size, xstrdup(name));
	out->prog.size = (uint16_t)((b.used + 7) & ~7U);
}

static void copy_vals(struct ct_site_fetch *out, const struct ct_site_fetch *in, uint16_t slot_shift)
{
	out->vals = xcalloc(in->nvals ? in->nvals : 1, sizeof(*out->vals));
	out->nvals = in->nvals;
	out->truncated = in->truncated;
	for (uint32_t i = 0; i < in->nvals; i++) {
		const struct ct_val_desc *v = &in->vals[i];
		out->vals[i] = *v;
		out->vals[i].name = xstrdup(v->name);
		out->vals[i].pieces = xcalloc(v->npieces ? v->npieces : 1, sizeof(*v->pieces));
		for (uint32_t k = 0; k < v->npieces; k++) {
			out->vals[i].pieces[k] = v->pieces[k];
			out->vals[i].pieces[k].slot = (uint16_t)(v->pieces[k].slot + slot_shift);
		}
	}
}

/* How many low bytes of the register word at payload offset SLOT the values
 * use: the pieces placed there, all 8 if an op reads it as a pointer or a
 * length. */
static uint32_t word_bytes_used(const struct ct_site_fetch *f, uint16_t slot)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < f->prog.nops && i < CT_MAX_OPS; i++) {
		const struct ct_fetch_op *op = &f->prog.ops[i];
		bool two = op->code == CT_OP_DEREF_LEN || op->code == CT_OP_DEREF_SPAN;
		if ((two || op->code == CT_OP_DEREF || op->code == CT_OP_DEREF_STR) &&
		    (op->src == slot || (two && op->src2 == slot)))
			return 8;
	}
	for (uint32_t i = 0; i < f->nvals; i++)
		for (uint32_t k = 0; k < f->vals[i].npieces; k++) {
			const struct ct_val_piece *p = &f->vals[i].pieces[k];
			if (p->kind == CT_PIECE_REG && p->slot == slot)
				n = p->size > n ? p->size : n;
		}
	return n ? n : 8; /* no piece: a raw word */
}

/* Values in SSE registers (float results), which BPF cannot read, that the
 * caller stored before the exit site: read from that memory instead (one
 * more op each, as long as the program has room; else they stay unread). */
static void read_stored_floats(struct ct_site_fetch *f, const struct ct_exit_walk *walk)
{
	for (uint32_t i = 0; i < f->nvals; i++)
		for (uint32_t k = 0; k < f->vals[i].npieces; k++) {
			struct ct_val_piece *p = &f->vals[i].pieces[k];
			if (p->kind != CT_PIECE_XREG || p->reg < CT_XMM0 || p->reg >= CT_XMM0 + 16)
				continue;
			const __typeof__(walk->xloc[0]) *l = &walk->xloc[p->reg - CT_XMM0];
			bool in_reg = l->base == CT_XLOC_REG;
			uint32_t slot = (f->prog.size + 7u) & ~7u, bytes = in_reg ? 8 : CT_MEM_HDR + p->size;
			if (l->base == CT_XLOC_NONE || l->width < p->size || f->prog.nops >= CT_MAX_OPS ||
			    slot + bytes > CT_MAX_PAYLOAD - 8)
				continue;
			struct ct_fetch_op *op = &f->prog.ops[f->prog.nops++];
			memset(op, 0, sizeof(*op));
			op->code = in_reg ? CT_OP_REG : l->base == CT_XLOC_SP ? CT_OP_STACK : CT_OP_REGMEM;
			op->reg = (uint8_t)(in_reg ? l->off : l->base == CT_XLOC_RBP ? CT_RBP : 0);
			op->dst = (uint16_t)slot;
			op->size = in_reg ? 0 : p->size;
			op->off = in_reg ? 0 : l->off;
			f->prog.size = (uint16_t)((slot + bytes + 7u) & ~7u);
			p->kind = in_reg ? CT_PIECE_REG : l->base == CT_XLOC_SP ? CT_PIECE_STACK : CT_PIECE_REGMEM;
			p->reg = op->reg;
			p->slot = op->dst;
		}
}

int ct_fetch_relocate(const struct ct_site_fetch *in, int32_t stack_shift, const struct ct_exit_walk *walk,
		      struct ct_site_fetch *out)
{
	memset(out, 0, sizeof(*out));
	struct ct_fetch prog;
	ct_fetch_copy(&prog, &in->prog);
	bool any_write = walk && (walk->stack_written || walk->mem_written);
	/* Only the caller's own stack slots written on the way: what results
	 * point to is still theirs unless it lies there, which the BPF side
	 * checks at each hit (struct ct_fetch's guard). */
	bool guarded = any_write && !walk->mem_written && walk->stack_lo >= INT16_MIN && walk->stack_hi <= INT16_MAX;
	if (guarded) {
		prog.guard_lo = (int16_t)walk->stack_lo;
		prog.guard_hi = (int16_t)walk->stack_hi;
		prog.guard_from = 0;
		prog.guard_to = CT_MAX_OPS;
	}
	for (uint32_t i = 0; i < prog.nops && i < CT_MAX_OPS; i++) {
		struct ct_fetch_op *op = &prog.ops[i];
		switch (op->code) {
		case CT_OP_REG: {
			if (!walk || op->reg >= 15)
				break;
			const __typeof__(walk->loc[0]) *l = &walk->loc[op->reg];
			uint32_t need = word_bytes_used(in, op->dst);
			if (l->reg != CT_LOC_LOST && l->width < need)
				return ct_fail("only the low %u byte%s of %s %s kept, %u needed", l->width,
					       l->width == 1 ? "" : "s", ct_reg_name(op->reg), l->width == 1 ? "is" : "are",
					       need);
			if (l->reg == CT_LOC_MEM && walk->stack_written &&
			    (walk->stack_lo < INT16_MIN || walk->stack_hi > INT16_MAX))
				return ct_fail("the stack may be written where %s was stored", ct_reg_name(op->reg));
			if (l->reg == CT_LOC_STACK) {
				op->code = CT_OP_STACKWORD;
				op->off = l->stack_off;
			} else if (l->reg == CT_LOC_MEM) {
				op->code = CT_OP_MEMWORD; /* where the caller stored it */
				op->reg = (uint8_t)l->base;
				op->off = l->addend;
				op->size = l->width;
				if (walk->stack_written) { /* the struct may lie in stack the walk saw written */
					op->src = (uint16_t)(int16_t)walk->stack_lo;
					op->src2 = (uint16_t)(int16_t)walk->stack_hi;
					op->scale = 1;
				}
			} else if (l->reg >= 0 && l->less_word) {
				op->code = CT_OP_REGDIFF; /* the register less the word added to it */
				op->reg = (uint8_t)l->reg;
				op->off = l->stack_off;
				op->src = l->word_reg;
			} else if (l->reg >= 0) {
				op->reg = (uint8_t)l->reg;
				op->off += l->addend;
			} else if (walk->lost_at[op->reg]) {
				return ct_fail("the value of %s is gone at 0x%llx", ct_reg_name(op->reg),
					       (unsigned long long)walk->lost_at[op->reg]);
			} else {
				return ct_fail("the value of %s is gone", ct_reg_name(op->reg));
			}
			break;
		}
		case CT_OP_STACK:
			if (any_write)
				return ct_fail("the stack may be written before the exit site");
			op->off += stack_shift;
			break;
		case CT_OP_REGMEM:
			if ((any_write && !guarded) || (walk && (op->reg >= 15 || walk->loc[op->reg].reg < 0 ||
						   walk->loc[op->reg].less_word || walk->loc[op->reg].width < 8)))
				return ct_fail("memory the results point to may be written on the way");
			if (walk) {
				op->off += walk->loc[op->reg].addend;
				op->reg = (uint8_t)walk->loc[op->reg].reg;
			}
			break;
		default: /* what results point to */
			if (any_write && !guarded && !(in->immutable_ops >> i & 1))
				return ct_fail("memory the results point to may be written on the way");
			break;
		}
	}
	out->prog = prog;
	out->immutable_ops = in->immutable_ops;
	copy_vals(out, in, 0);
	if (walk)
		read_stored_floats(out, walk);
	return 0;
}

/* The word at SP + OFF as at the walk's start: still there at its end? */
static bool stack_word_kept(const struct ct_exit_walk *w, int32_t off)
{
	return !w->stack_written || off + 8 <= w->stack_lo || off >= w->stack_hi;
}

int ct_fetch_ahead(const struct ct_site_fetch *in, const struct ct_exit_walk *walk, struct ct_site_fetch *out)
{
	memset(out, 0, sizeof(*out));
	if (walk->sp_delta)
		return ct_fail("SP moves on the way to the call");
	struct ct_fetch prog;
	ct_fetch_copy(&prog, &in->prog);
	/* (no guard, as at exits: a value read as failed where the call's own
	 * probe would have read it is worse than the hit saved) */
	bool written = walk->stack_written || walk->mem_written;
	for (uint32_t i = 0; i < prog.nops && i < CT_MAX_OPS; i++) {
		struct ct_fetch_op *op = &prog.ops[i];
		const __typeof__(walk->held[0]) *h = op->reg < 15 ? &walk->held[op->reg] : NULL;
		switch (op->code) {
		case CT_OP_REG: {
			if (!h || h->width < word_bytes_used(in, op->dst))
				return ct_fail("the value of %s at the call is not known before it",
					       op->reg < 15 ? ct_reg_name(op->reg) : "a register");
			if (h->kind == CT_HELD_REG) {
				op->reg = (uint8_t)h->reg;
				op->off += h->c;
			} else if (h->kind == CT_HELD_STACK && !op->off && stack_word_kept(walk, h->off)) {
				op->code = CT_OP_STACKWORD;
				op->off = h->off;
			} else if (h->kind == CT_HELD_MEM && !op->off && !written &&
				   h->reg >= 0 && walk->held[h->reg].kind == CT_HELD_REG &&
				   walk->held[h->reg].reg == h->reg && !walk->held[h->reg].c) {
				op->code = CT_OP_MEMWORD;
				op->reg = (uint8_t)h->reg;
				op->off = h->off;
				op->size = 8;
			} else {
				return ct_fail("the value of %s at the call is not known before it", ct_reg_name(op->reg));
			}
			break;
		}
		case CT_OP_REGMEM:
			if (!h || h->kind != CT_HELD_REG || h->width < 8 || written)
				return ct_fail("memory the arguments point to may be written on the way");
			op->reg = (uint8_t)h->reg;
			op->off += h->c;
			break;
		case CT_OP_STACK:
			if (walk->stack_written)
				return ct_fail("the stack may be written on the way to the call");
			break;
		default: /* what arguments point to; REGDIFF/MEMWORD/STACKWORD are no capture at an entry */
			if (op->code == CT_OP_REGDIFF || op->code == CT_OP_MEMWORD || op->code == CT_OP_STACKWORD)
				return ct_fail("a capture the walk cannot move");
			if (written && !(in->immutable_ops >> i & 1))
				return ct_fail("memory the arguments point to may be written on the way");
			break;
		}
	}
	out->prog = prog;
	out->immutable_ops = in->immutable_ops;
	copy_vals(out, in, 0);
	return 0;
}

int ct_fetch_merge(const struct ct_site_fetch *a, const struct ct_site_fetch *b, struct ct_site_fetch *out_a,
		   struct ct_site_fetch *out_b)
{
	uint32_t shift = (a->prog.size + 7u) & ~7u;
	if (a->prog.nops + b->prog.nops > CT_MAX_OPS || shift + b->prog.size > CT_MAX_PAYLOAD)
		return ct_fail("two captures at one probe do not fit one fetch program");
	struct ct_fetch prog;
	ct_fetch_copy(&prog, &a->prog);
	if (a->prog.guard_from < a->prog.guard_to) /* its ops only, not b's (another call's entry) */
		prog.guard_to = (uint8_t)(a->prog.guard_to < a->prog.nops ? a->prog.guard_to : a->prog.nops);
	if (b->prog.guard_from < b->prog.guard_to) { /* two guards: one covering both */
		bool a_has = a->prog.guard_from < a->prog.guard_to;
		uint32_t from = a->prog.nops + b->prog.guard_from, to = a->prog.nops + b->prog.guard_to;
		prog.guard_from = (uint8_t)(a_has ? prog.guard_from : from);
		prog.guard_to = (uint8_t)(to < CT_MAX_OPS ? to : CT_MAX_OPS);
		prog.guard_lo = a_has && a->prog.guard_lo < b->prog.guard_lo ? a->prog.guard_lo : b->prog.guard_lo;
		prog.guard_hi = a_has && a->prog.guard_hi > b->prog.guard_hi ? a->prog.guard_hi : b->prog.guard_hi;
	}
	for (uint32_t i = 0; i < b->prog.nops; i++) {
		struct ct_fetch_op op = b->prog.ops[i];
		op.dst = (uint16_t)(op.dst + shift);
		if (op.code == CT_OP_DEREF || op.code == CT_OP_DEREF_LEN || op.code == CT_OP_DEREF_STR ||
		    op.code == CT_OP_DEREF_SPAN) {
			op.src = (uint16_t)(op.src + shift);
			op.src2 = (uint16_t)(op.src2 + shift);
		}
		prog.ops[prog.nops++] = op;
	}
	prog.size = (uint16_t)(shift + b->prog.size);
	memset(out_a, 0, sizeof(*out_a));
	memset(out_b, 0, sizeof(*out_b));
	out_a->prog = out_b->prog = prog;
	copy_vals(out_a, a, 0);
	copy_vals(out_b, b, (uint16_t)shift);
	return 0;
}

