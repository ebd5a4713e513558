/* The functions .eh_frame describes: each FDE's code range, and whether it
 * names an LSDA (C++ landing pads).  What a stripped binary still says of
 * its functions, their symbols gone. */
#ifndef CT_FDE_H
#define CT_FDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "target/elf.h"

struct ct_fde {
	uint64_t start, end; /* link-time [start, end) */
	uint64_t lsda;       /* its language-specific data area (0: none) */
};

/* E's FDEs with a non-empty range, sorted by start, in *OUT (malloc'd);
 * how many (0 without .eh_frame).  Entries are read by libdw
 * (dwarf_next_cfi); what it leaves encoded, by ct_eh_pointer. */
size_t ct_fdes(const struct ct_elf *e, struct ct_fde **out);

/* The FDE of V (N, sorted by start, as ct_fdes gives them) whose code ADDR
 * is in, or NULL. */
const struct ct_fde *ct_fde_at(const struct ct_fde *v, size_t n, uint64_t addr);

/* E's call frame information (.eh_frame), to ask where a frame's CFA is;
 * NULL if it has none.  Free with ct_cfi_free (before E is closed). */
struct ct_cfi;
struct ct_cfi *ct_cfi_open(const struct ct_elf *e);
void ct_cfi_free(struct ct_cfi *c);

/* Where the CFA is when the instruction at ADDR is about to run: SP + *OFF
 * (true; 8 where SP is at the return address: no frame is allocated).
 * False where no FDE covers ADDR or the CFA is found another way (from a
 * frame pointer). */
bool ct_cfa_sp_offset(struct ct_cfi *c, uint64_t addr, int64_t *off);

/* What the LSDA at link-time address LSDA (of the FDE whose code starts at
 * START) says of the call whose return address is RET: its landing pad in
 * *PAD (0: none, an exception leaves the function).  False where there is
 * no record for the call (*PAD 0: C++'s personality then calls
 * std::terminate, C's unwinds on; neither resumes the function) or the
 * table cannot be read (*PAD UINT64_MAX: not known).  The table is gcc_except_table's, which GCC,
 * clang and rustc write alike (libgcc's unwind-c.c/eh_personality.cc
 * read it the same way: call sites relative to the FDE's start, landing
 * pads to LPStart, looked up at RET - 1). */
bool ct_lsda_landing_pad(const struct ct_elf *e, uint64_t lsda, uint64_t start, uint64_t ret, uint64_t *pad);

/* One pointer in DWARF EH encoding ENC (DW_EH_PE_*) at *P (before END),
 * the bytes at link-time address AT (for pc-relative ones) and DATAREL
 * the base of data-relative ones (.eh_frame_hdr's own address); APPLY
 * false: the value alone (an FDE's range).  A 0 stays 0, as libgcc reads
 * it (an LSDA pointer of 0: none).  Advances *P; false if it does
 * not fit or the encoding is not one x86-64 linkers write. */
bool ct_eh_pointer(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t at, uint64_t datarel, bool apply,
		   uint64_t *out);

#endif
