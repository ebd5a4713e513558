/* Go's GOOS=js GOARCH=wasm modules: what calltrace needs to know about them.
 *
 * Code generation (cmd/internal/obj/wasm/wasmobj.go): every Go function is
 * (i32 PC_B) -> i32.  PC_B is the resume point: 0 for a call, else the basic
 * block to continue at when the scheduler re-enters a frame the wasm stack
 * lost.  The result is 1 when the function returns only to unwind the wasm
 * stack (a goroutine switch: the Go frame stays alive), 0 for a real RET.
 * Globals: 0 = SP (i32), 2 = g (i64).  Go's own stack lives in linear
 * memory; at entry SP points at the return address, so g.stack.hi - SP is
 * the same frame key as native Go's and survives stack copies.  A function
 * whose prologue calls runtime.morestack is re-entered with PC_B = 0 once
 * the stack has grown: the same call.
 *
 * Names: the linker writes `bufio.__Writer_.Flush` into the name section
 * (every [^\w.] became _); the exact Go name comes from the pclntab in the
 * data segments, read by target/gobin.c over an ELF-like view of the module's
 * memory image.  Function PC = (0x1000 + index among defined functions) << 16
 * (cmd/link/internal/wasm/asm.go, funcValueOffset). */
#ifndef CT_GOWASM_H
#define CT_GOWASM_H

#include "wasm/module.h"
#include "wasm/rewrite.h"

struct ct_gowasm {
	char go_version[32]; /* "go1.19.8", "" unknown */
	int go_minor;
	char *main_module;
	char **names;        /* per function index: the Go name, or NULL */
	bool *wrapper;       /* per function index: compiler-generated wrapper */
	struct ct_wasm_go cfg;
	const char *names_source; /* "pclntab" or "name section" */
};

/* Reads the Go facts of M (a module importing Go's js glue).  Never fails:
 * without a readable pclntab the name section's names are used. */
void ct_gowasm_read(const struct ct_wasm_module *m, const char *path, struct ct_gowasm *out);
void ct_gowasm_free(struct ct_gowasm *g, uint32_t nfuncs);
/* Go code that may be instrumented: the (i32)->i32 convention, not runtime
 * code that switches stacks, not a compiler-generated wrapper (as natively). */
bool ct_gowasm_traceable(const struct ct_wasm_module *m, const struct ct_gowasm *g, uint32_t func);

#endif
