/* A binary's calls into other modules: its PLT stubs and the dynamic
 * symbols they jump to, and the direct calls of them in its code. */
#ifndef CT_PLAN_PLT_H
#define CT_PLAN_PLT_H

#include <stddef.h>
#include <stdint.h>

#include "plan/plan.h"
#include "target/elf.h"
#include "target/target.h"

/* A PLT stub (.plt, .plt.sec, .plt.got) and the symbol whose GOT slot it
 * jumps through (its JUMP_SLOT or GLOB_DAT relocation): NAME points into
 * the ELF's string table. */
struct ct_plt_stub {
	uint64_t addr;
	const char *name;
	uint64_t jmp_end; /* the end of its jump through the slot (a lazy
			     binding stub's `push; jmp .plt` follow it) */
};

/* E's PLT stubs, sorted by address, in *OUT (malloc'd); how many. */
size_t ct_plt_stubs(const struct ct_elf *e, struct ct_plt_stub **out);

/* Adds T's PLT stubs to its functions as "SYMBOL@plt" (CT_FN_PLT), so that
 * the program's calls of library functions can be traced from its own
 * call sites, as uftrace does by default -- when SEL will pick them: a glob
 * of it names CT_PLT_SUFFIX, or it has none and T is stripped (its exported
 * functions, if any, are all it has besides).  C programs only; how many. */
size_t ct_plt_add_funcs(struct ct_target *t, const struct ct_selection *sel);

/* The function starts .eh_frame_hdr's search table lists (every function
 * with unwind information, also without a symbol), sorted, in *OUT; how
 * many (0 without a table this reader knows). */
size_t ct_fde_starts(const struct ct_elf *e, uint64_t **out);

/* A direct call (`call rel32`) at AT of TARGET; it returns to AT + 5. */
struct ct_call_to {
	uint64_t at, target;
};

/* The direct calls of one of the NT sorted TARGETS in E's executable
 * sections, in *OUT (malloc'd, by address); how many.  Found by their
 * bytes (e8 and a displacement that lands on a target), each confirmed by
 * decoding from the nearest known start below it (one of the NS sorted
 * STARTS: function entries, FDE starts; else its section's start) up to
 * it: an instruction starts there, so a probe after it is never placed in
 * the middle of one. */
size_t ct_calls_to(const struct ct_elf *e, const uint64_t *starts, size_t ns, const uint64_t *targets, size_t nt,
		   struct ct_call_to **out);

#endif
