/* See fetchsim.h: calltrace.bpf.c's run_fetch over a made-up process. */
#include "fetchsim.h"

#include <string.h>

void sim_map(struct sim_proc *pr, uint64_t addr, const void *bytes, uint32_t len)
{
	if (pr->nmem < sizeof(pr->mem) / sizeof(pr->mem[0]))
		pr->mem[pr->nmem++] = (struct sim_region){addr, bytes, len};
}

static bool read_mem(const struct sim_proc *pr, uint64_t addr, void *out, uint64_t size)
{
	for (size_t i = 0; i < pr->nmem; i++)
		if (addr >= pr->mem[i].addr && addr - pr->mem[i].addr + size <= pr->mem[i].len) {
			memcpy(out, (const uint8_t *)pr->mem[i].bytes + (addr - pr->mem[i].addr), size);
			return true;
		}
	return false;
}

static uint64_t word_at(const uint8_t *payload, uint32_t off)
{
	uint64_t w;
	memcpy(&w, payload + (off & ~7u), 8);
	return w;
}

static void put_word(uint8_t *payload, uint32_t off, uint64_t w)
{
	memcpy(payload + (off & ~7u), &w, 8);
}

/* Memory op: header (bytes copied, or CT_FETCH_FAILED) at dst, bytes after;
 * a string is copied up to its NUL, which the count leaves out.  A slot of
 * WORDS bytes that later ops may follow words in reads as zero where the
 * read got nothing (the payload is a scratch reused from hit to hit). */
static void mem_op(const struct sim_proc *pr, uint8_t *payload, uint32_t dst, uint64_t size, uint64_t addr, bool str,
		   uint32_t words)
{
	uint8_t *data = payload + dst + CT_MEM_HDR;
	uint16_t hdr = CT_FETCH_FAILED;
	if (words)
		memset(data, 0, words);
	if (!size) {
		hdr = 0;
	} else if (str) {
		for (uint64_t n = 0; n < size && read_mem(pr, addr + n, data + n, 1); n++)
			if (!data[n] || n + 1 == size) {
				data[n] = 0;
				hdr = (uint16_t)n;
				break;
			}
	} else if (read_mem(pr, addr, data, size)) {
		hdr = (uint16_t)size;
	}
	memcpy(payload + dst, &hdr, 2);
}

int sim_run_fetch(const struct sim_proc *pr, const struct ct_fetch *f, uint8_t *payload)
{
	uint64_t sp = pr->regs[CT_REG_SP];
	for (uint32_t i = 0; i < f->nops; i++) {
		const struct ct_fetch_op *op = &f->ops[i];
		uint64_t reg = pr->regs[op->reg & CT_REG_MASK], off = (uint64_t)(int64_t)op->off, n;
		switch (op->code) {
		case CT_OP_REG:
			put_word(payload, op->dst, reg + off);
			break;
		case CT_OP_STACK:
			mem_op(pr, payload, op->dst, op->size, sp + off, false, op->size);
			break;
		case CT_OP_REGMEM:
			mem_op(pr, payload, op->dst, op->size, reg + off, false, op->size);
			break;
		case CT_OP_DEREF:
		case CT_OP_DEREF_STR:
			mem_op(pr, payload, op->dst, op->size, word_at(payload, op->src) + off,
			       op->code == CT_OP_DEREF_STR, op->code == CT_OP_DEREF_STR ? 0 : op->size);
			break;
		case CT_OP_DEREF_LEN:
		case CT_OP_DEREF_SPAN:
			n = op->code == CT_OP_DEREF_LEN ? word_at(payload, op->src2) * op->scale
							: word_at(payload, op->src2) - word_at(payload, op->src);
			mem_op(pr, payload, op->dst, n > op->size ? op->size : n, word_at(payload, op->src) + off,
			       false, op->code == CT_OP_DEREF_LEN && op->scale == 1 ? 0 : op->size);
			break;
		case CT_OP_STACKWORD:
			if (!read_mem(pr, sp + off, &n, 8))
				n = 0;
			put_word(payload, op->dst, n);
			break;
		case CT_OP_REGDIFF:
			if (op->src) {
				if (!read_mem(pr, pr->regs[(op->src - 1) & CT_REG_MASK] + off, &n, 8))
					return -1;
			} else if (!read_mem(pr, sp + off, &n, 8))
				n = reg; /* unreadable: 0, as STACKWORD */
			put_word(payload, op->dst, reg - n);
			break;
		case CT_OP_MEMWORD: {
			uint32_t size = ((op->size - 1u) & 7u) + 1u;
			uint64_t at = reg + off;
			n = 0;
			if (op->scale && at < sp + (uint64_t)(int64_t)(int16_t)op->src2 &&
			    at + size > sp + (uint64_t)(int64_t)(int16_t)op->src)
				return -1;
			if (!read_mem(pr, at, &n, size))
				return -1;
			put_word(payload, op->dst, n);
			break;
		}
		}
	}
	return 0;
}
