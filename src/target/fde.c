/* .eh_frame's FDEs (fde.h). */
#include "target/fde.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static bool leb(const uint8_t **p, const uint8_t *end, bool sign, uint64_t *out)
{
	uint64_t v = 0;
	for (int sh = 0; *p < end && sh < 64; sh += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			if (sign && sh + 7 < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << (sh + 7);
			*out = v;
			return true;
		}
	}
	return false;
}

bool ct_eh_pointer(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t at, uint64_t datarel, bool apply,
		   uint64_t *out)
{
	static const uint8_t width[16] = {[0x0] = 8, [0x2] = 2, [0x3] = 4, [0x4] = 8, [0xa] = 2, [0xb] = 4, [0xc] = 8};
	uint64_t v = 0;
	uint8_t form = enc & 0x0f;
	if (form == 0x01 || form == 0x09) {
		if (!leb(p, end, form == 0x09, &v))
			return false;
	} else {
		size_t n = width[form];
		if (!n || (size_t)(end - *p) < n)
			return false;
		memcpy(&v, *p, n); /* little-endian */
		*p += n;
		if (form == 0x0a)
			v = (uint64_t)(int64_t)(int16_t)v;
		else if (form == 0x0b)
			v = (uint64_t)(int64_t)(int32_t)v;
	}
	if (apply && v) { /* (0 stays 0, as libgcc reads it: an FDE without an LSDA) */
		switch (enc & 0x70) {
		case 0x00: break;
		case 0x10: v += at; break;      /* pcrel */
		case 0x30: v += datarel; break; /* datarel */
		default: return false;
		}
	}
	*out = v;
	return true;
}

/* What an FDE's CIE says of how to read it. */
struct cie {
	Dwarf_Off off;
	uint8_t fde_enc, lsda_enc;
	bool z, ok;
};

static bool read_cie(const unsigned char *ident, Elf_Data *d, Dwarf_Off off, uint64_t addr, struct cie *c)
{
	Dwarf_CFI_Entry ent;
	Dwarf_Off next;
	memset(c, 0, sizeof(*c));
	c->off = off;
	c->lsda_enc = 0xff; /* DW_EH_PE_omit */
	if (dwarf_next_cfi(ident, d, true, off, &next, &ent) != 0 || !dwarf_cfi_cie_p(&ent))
		return false;
	const char *aug = ent.cie.augmentation;
	if (!aug || !*aug)
		return c->ok = true; /* absolute pointers */
	if (aug[0] != 'z')
		return false; /* augmentation data of a size not known */
	c->z = true;
	const uint8_t *p = ent.cie.augmentation_data, *end = p + ent.cie.augmentation_data_size;
	for (const char *a = aug + 1; *a; a++) {
		uint64_t ignored;
		switch (*a) {
		case 'L':
			if (p >= end)
				return false;
			c->lsda_enc = *p++;
			break;
		case 'R':
			if (p >= end)
				return false;
			c->fde_enc = *p++;
			break;
		case 'P': /* the personality routine */
			if (p >= end)
				return false;
			uint8_t enc = *p++;
			if (!ct_eh_pointer(&p, end, enc & 0x7f, addr + (uint64_t)(p - (const uint8_t *)d->d_buf), 0, true,
					   &ignored))
				return false;
			break;
		case 'S':
		case 'B':
			break;
		default:
			return false;
		}
	}
	return c->ok = true;
}

static int cmp_fde(const void *x, const void *y)
{
	const struct ct_fde *a = x, *b = y;
	return (a->start > b->start) - (a->start < b->start);
}

size_t ct_fdes(const struct ct_elf *e, struct ct_fde **out)
{
	*out = NULL;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const unsigned char *ident = (const unsigned char *)elf_getident(e->elf, NULL);
	if (!ident || elf_getshdrstrndx(e->elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(e->elf, scn))) {
		const char *name;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS && (name = elf_strptr(e->elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, ".eh_frame"))
			break;
	}
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf)
		return 0;
	CT_VEC(struct ct_fde) v = {0};
	struct cie c = {.off = (Dwarf_Off)-1};
	for (Dwarf_Off off = 0, next; off < d->d_size; off = next) {
		Dwarf_CFI_Entry ent;
		if (dwarf_next_cfi(ident, d, true, off, &next, &ent) != 0)
			break; /* the end, its terminator, or bytes libdw cannot read */
		if (dwarf_cfi_cie_p(&ent))
			continue;
		if (ent.fde.CIE_pointer != c.off && !read_cie(ident, d, ent.fde.CIE_pointer, sh.sh_addr, &c))
			c.ok = false;
		if (!c.ok)
			continue;
		const uint8_t *p = ent.fde.start, *end = ent.fde.end;
		uint64_t at = sh.sh_addr + (uint64_t)(p - (const uint8_t *)d->d_buf), pc, len, auglen = 0, lsda = 0;
		if (!ct_eh_pointer(&p, end, c.fde_enc, at, 0, true, &pc) ||
		    !ct_eh_pointer(&p, end, c.fde_enc & 0x0f, 0, 0, false, &len) || (c.z && !leb(&p, end, false, &auglen)))
			continue;
		at = sh.sh_addr + (uint64_t)(p - (const uint8_t *)d->d_buf);
		if (c.z && c.lsda_enc != 0xff && auglen && !ct_eh_pointer(&p, end, c.lsda_enc & 0x7f, at, 0, true, &lsda))
			continue;
		if (!len || pc + len < pc)
			continue;
		struct ct_fde f = {pc, pc + len, lsda};
		CT_VEC_PUSH(v, f);
	}
	if (v.n)
		qsort(v.v, v.n, sizeof(*v.v), cmp_fde);
	*out = v.v;
	return v.n;
}

bool ct_lsda_landing_pad(const struct ct_elf *e, uint64_t lsda, uint64_t start, uint64_t ret, uint64_t *pad)
{
	*pad = UINT64_MAX;
	size_t n = 0; /* as many bytes as the segment has from there, up to 64 KiB */
	for (size_t step = 1u << 16; step; step /= 2)
		if (ct_elf_bytes_at(e, lsda, n + step))
			n += step;
	const uint8_t *base = ct_elf_bytes_at(e, lsda, n), *p = base, *end = base ? base + n : NULL;
	if (!p || n < 3)
		return false;
	uint64_t lpstart = start, skip;
	uint8_t enc = *p++;
	if (enc != 0xff && !ct_eh_pointer(&p, end, enc, lsda + (uint64_t)(p - base), 0, true, &lpstart))
		return false;
	if (p >= end)
		return false;
	if ((enc = *p++) != 0xff && !leb(&p, end, false, &skip)) /* the type table's offset */
		return false;
	if (p >= end)
		return false;
	uint8_t cs_enc = *p++;
	uint64_t cs_len;
	if (!leb(&p, end, false, &cs_len) || cs_len > (uint64_t)(end - p))
		return false;
	const uint8_t *cs_end = p + cs_len;
	uint64_t ip = ret - 1;
	while (p < cs_end) {
		uint64_t cs_start, len, lp, action;
		if (!ct_eh_pointer(&p, cs_end, cs_enc & 0x0f, 0, 0, false, &cs_start) ||
		    !ct_eh_pointer(&p, cs_end, cs_enc & 0x0f, 0, 0, false, &len) ||
		    !ct_eh_pointer(&p, cs_end, cs_enc & 0x0f, 0, 0, false, &lp) || !leb(&p, cs_end, false, &action))
			return false;
		if (ip < start + cs_start)
			break; /* (sorted: no record for it) */
		if (ip < start + cs_start + len) {
			*pad = lp ? lpstart + lp : 0;
			return true;
		}
	}
	*pad = 0;
	return false;
}

const struct ct_fde *ct_fde_at(const struct ct_fde *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < v[lo - 1].end ? &v[lo - 1] : NULL;
}

struct ct_cfi {
	Dwarf_CFI *cfi;
};

struct ct_cfi *ct_cfi_open(const struct ct_elf *e)
{
	Dwarf_CFI *cfi = e->elf ? dwarf_getcfi_elf(e->elf) : NULL;
	if (!cfi)
		return NULL;
	struct ct_cfi *c = xcalloc(1, sizeof(*c));
	c->cfi = cfi;
	return c;
}

void ct_cfi_free(struct ct_cfi *c)
{
	if (!c)
		return;
	dwarf_cfi_end(c->cfi);
	free(c);
}

bool ct_cfa_sp_offset(struct ct_cfi *c, uint64_t addr, int64_t *off)
{
	Dwarf_Frame *fr;
	if (!c || dwarf_cfi_addrframe(c->cfi, addr, &fr) != 0)
		return false;
	Dwarf_Op *ops;
	size_t n;
	/* a register-plus-offset rule comes as one DW_OP_bregx; x86-64's
	 * DWARF register 7 is RSP */
	bool sp = dwarf_frame_cfa(fr, &ops, &n) == 0 && n == 1 && ops[0].atom == DW_OP_bregx && ops[0].number == 7;
	if (sp)
		*off = (int64_t)ops[0].number2;
	free(fr);
	return sp;
}
