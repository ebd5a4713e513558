/* C++ and Rust exceptions seen from a call site: an exception thrown under
 * a call resumes its caller at the landing pad its exception table (LSDA)
 * gives for the call, the callee's frame gone.  Where that code may go
 * decides whether a probe after the call can tell that the call returned. */
#ifndef CT_PLAN_PADS_H
#define CT_PLAN_PADS_H

#include <stdbool.h>
#include <stdint.h>

#include "target/elf.h"
#include "target/fde.h"
#include "target/target.h"

struct ct_pads;

/* The landing pads of the code in E (its .eh_frame, LSDAs and PLT stubs,
 * read at the first need); T, if not NULL, names E's own functions (a
 * static program's _Unwind_Resume).  Both must outlive it. */
struct ct_pads *ct_pads_new(const struct ct_elf *e, const struct ct_target *t);
void ct_pads_free(struct ct_pads *pd);

/* Why the end of the call returning to RET could not be told from a probe
 * at EXIT (NULL: it can): the code from the call's landing pad may reach
 * EXIT (a catch joining the normal path), or, with TAIL (the call ends with
 * its caller: in tail position, or where the caller returns to), return
 * from the caller; or it goes where it cannot be followed.  A call without
 * a pad, or whose pad runs destructors and unwinds on, is safe; so is one
 * whose pad only comes back to the call instruction itself, AT (not 0: a
 * catch in a loop, a retry), whose probe then sees a new call, which ends
 * the one that threw.  EXIT 0 (not TAIL): wherever the exit is, so any pad
 * that may resume the caller at all (a catch) is a reason. */
const char *ct_pads_rejoin(struct ct_pads *pd, uint64_t at, uint64_t ret, uint64_t exit, bool tail);

/* The FDE whose code ADDR is in (the bounds of a function no symbol
 * names), or NULL. */
const struct ct_fde *ct_pads_fde_at(struct ct_pads *pd, uint64_t addr);

/* Does the function whose code RET is in (its FDE's range) call setjmp or
 * another function that returns twice, directly or through its PLT?  Then
 * a longjmp may resume it past any call in it.  For the code of a file no
 * plan scanned (a library calling back); read at the first need. */
bool ct_pads_twice(struct ct_pads *pd, uint64_t ret);

/* Does the symbol NAME's first N bytes name a function that returns twice? */
bool ct_returns_twice(const char *name, size_t n);

#endif
