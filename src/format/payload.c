#include "format/payload.h"
#include "target/types.h" /* enum ct_piece_kind */

#include "util/util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void ct_site_fetch_free(struct ct_site_fetch *f)
{
	for (uint32_t i = 0; i < f->nvals; i++) {
		free(f->vals[i].name);
		free(f->vals[i].pieces);
	}
	free(f->vals);
	memset(f, 0, offsetof(struct ct_site_fetch, prog.ops)); /* F may end there (ct_site_fetch_keep) */
}

static size_t site_fetch_bytes(uint32_t nops)
{
	return offsetof(struct ct_site_fetch, prog.ops) + nops * sizeof(struct ct_fetch_op);
}

struct ct_site_fetch *ct_site_fetch_keep(const struct ct_site_fetch *f)
{
	struct ct_site_fetch *h = xmalloc(site_fetch_bytes(f->prog.nops));
	memcpy(h, f, site_fetch_bytes(f->prog.nops));
	return h;
}

void ct_site_fetch_set_prog(struct ct_site_fetch **slot, const struct ct_fetch *prog)
{
	struct ct_site_fetch *f = *slot;
	if (!f)
		f = xcalloc(1, site_fetch_bytes(prog->nops));
	else
		f = xrealloc(f, site_fetch_bytes(prog->nops));
	ct_fetch_copy(&f->prog, prog);
	*slot = f;
}

void ct_fetch_copy(struct ct_fetch *dst, const struct ct_fetch *src)
{
	memcpy(dst, src, offsetof(struct ct_fetch, ops) + src->nops * sizeof(src->ops[0]));
}

bool ct_piece_in_payload(int kind)
{
	return kind == CT_PIECE_REG || kind == CT_PIECE_STACK || kind == CT_PIECE_REGMEM;
}

const struct ct_val_piece *ct_val_piece_of(const struct ct_val_desc *d, uint32_t off, uint32_t size)
{
	for (uint32_t i = 0; i < d->npieces; i++) {
		const struct ct_val_piece *p = &d->pieces[i];
		if (off >= p->value_off && (uint64_t)off + size <= (uint64_t)p->value_off + p->size)
			return p;
	}
	return NULL;
}

int ct_val_piece_slot(const struct ct_val_piece *p, uint32_t off)
{
	if (p->kind == CT_PIECE_REG)
		return off == p->value_off ? p->slot : -1;
	if (ct_piece_in_payload(p->kind)) /* memory: after its header */
		return (int)(p->slot + CT_MEM_HDR + (off - p->value_off));
	return -1;
}

const uint8_t *ct_val_piece_bytes(const struct ct_val_piece *p, const uint8_t *payload, size_t len, uint32_t off,
				  uint32_t size)
{
	int at = ct_val_piece_slot(p, off);
	if (at < 0 || (uint64_t)at + size > len)
		return NULL;
	if (p->kind == CT_PIECE_REG) {
		if (size > 8)
			return NULL;
	} else {
		uint16_t got;
		memcpy(&got, payload + p->slot, 2);
		if (got != p->size)
			return NULL;
	}
	return payload + at;
}

bool ct_fetch_op_is_mem(uint8_t code)
{
	return code != CT_OP_REG && code != CT_OP_STACKWORD && code != CT_OP_REGDIFF && code != CT_OP_MEMWORD;
}

size_t ct_fetch_compact(const struct ct_fetch *f, const uint8_t *raw, size_t rawlen, uint8_t *out,
			size_t outcap)
{
	size_t n = 0;
	for (uint32_t i = 0; i < f->nops && i < CT_MAX_OPS; i++) {
		const struct ct_fetch_op *op = &f->ops[i];
		if (!ct_fetch_op_is_mem(op->code)) {
			if (op->dst + 8u > rawlen || n + 8 > outcap)
				return n;
			memcpy(out + n, raw + op->dst, 8);
			n += 8;
			continue;
		}
		uint16_t hdr = CT_FETCH_FAILED;
		if (op->dst + (size_t)CT_MEM_HDR <= rawlen)
			memcpy(&hdr, raw + op->dst, 2);
		if (hdr != CT_FETCH_FAILED && (hdr > op->size || op->dst + CT_MEM_HDR + (size_t)hdr > rawlen))
			hdr = CT_FETCH_FAILED;
		size_t need = 2 + (hdr == CT_FETCH_FAILED ? 0 : hdr);
		if (n + need > outcap)
			return n;
		memcpy(out + n, &hdr, 2);
		n += 2;
		if (hdr != CT_FETCH_FAILED) {
			memcpy(out + n, raw + op->dst + CT_MEM_HDR, hdr);
			n += hdr;
		}
	}
	return n;
}

size_t ct_fetch_expand(const struct ct_fetch *f, const uint8_t *compact, size_t len, uint8_t *out,
		       size_t outcap)
{
	size_t pos = 0, size = f->size < outcap ? f->size : outcap;
	memset(out, 0, size);
	for (uint32_t i = 0; i < f->nops && i < CT_MAX_OPS; i++) {
		const struct ct_fetch_op *op = &f->ops[i];
		if (!ct_fetch_op_is_mem(op->code)) {
			if (pos + 8 > len || op->dst + 8u > size)
				return 0;
			memcpy(out + op->dst, compact + pos, 8);
			pos += 8;
			continue;
		}
		uint16_t hdr;
		if (pos + 2 > len || op->dst + (size_t)CT_MEM_HDR > size)
			return 0;
		memcpy(&hdr, compact + pos, 2);
		pos += 2;
		if (hdr != CT_FETCH_FAILED &&
		    (hdr > op->size || pos + hdr > len || op->dst + CT_MEM_HDR + (size_t)hdr > size))
			return 0;
		memcpy(out + op->dst, &hdr, 2);
		if (hdr != CT_FETCH_FAILED) {
			memcpy(out + op->dst + CT_MEM_HDR, compact + pos, hdr);
			pos += hdr;
		}
	}
	return size;
}

size_t ct_fetch_snapshots(const struct ct_fetch *f, const uint8_t *payload, struct ct_snapshot *out,
			  size_t max)
{
	size_t n = 0;
	for (uint32_t i = 0; i < f->nops && i < CT_MAX_OPS && n < max; i++) {
		const struct ct_fetch_op *op = &f->ops[i];
		if (op->code != CT_OP_DEREF && op->code != CT_OP_DEREF_LEN && op->code != CT_OP_DEREF_STR &&
		    op->code != CT_OP_DEREF_SPAN)
			continue;
		if (op->src + 8u > f->size || op->dst + (uint32_t)CT_MEM_HDR > f->size)
			continue;
		uint64_t ptr;
		uint16_t hdr;
		memcpy(&ptr, payload + (op->src & ~7U), 8);
		memcpy(&hdr, payload + op->dst, 2);
		/* never past the op's slot, whatever the header says */
		uint32_t room = f->size - (op->dst + (uint32_t)CT_MEM_HDR);
		if (hdr != CT_FETCH_FAILED && (hdr > op->size || hdr > room))
			hdr = (uint16_t)(op->size < room ? op->size : room);
		out[n].addr = ptr + (int64_t)op->off;
		out[n].bytes = hdr == CT_FETCH_FAILED ? NULL : payload + op->dst + CT_MEM_HDR;
		out[n].len = hdr == CT_FETCH_FAILED ? 0 : hdr;
		out[n].cap = op->code == CT_OP_DEREF_STR ? op->size - 1u : op->size;
		n++;
	}
	return n;
}
