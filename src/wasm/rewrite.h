/* Instruments a WebAssembly module so that selected functions report their
 * entries and exits to imported hooks (module "calltrace", served by the
 * recorder, recorder.c).  The inline scheme keeps tail calls and exceptions
 * intact: the hooks run inside the function itself, never in a wrapper.
 *
 *   func f (params) (results)
 *     [depth-saving]  i32.const ENTRY  [arguments]  call $enterN
 *     block (results)
 *       original body; every `return` became `br` to this block
 *     end
 *     i32.const EXIT  [results]  call $exitN
 *   end
 *
 * `return_call*` get `call $exit` right before them (an exit, then the
 * callee's entry: constant stack).  In functions with exception handlers,
 * each landing site tells the recorder the depth of the frame that caught
 * (deeper frames were unwound).  Adding the hook imports shifts every defined
 * function's index; the rewriter shifts them wherever they occur (calls,
 * ref.func, element segments, exports, start, global and table initialisers,
 * the name section).  DWARF sections are dropped (their code offsets would be
 * stale). */
#ifndef CT_WASM_REWRITE_H
#define CT_WASM_REWRITE_H

#include "util/util.h"
#include "wasm/module.h"

/* The hooks, in import order (index = module's imported functions + this). */
enum ct_wasm_hook {
	WH_ENTER,    /* (i32 site) */
	WH_EXIT,     /* (i32 site) */
	WH_DEPTH,    /* () -> i32: depth of the innermost open frame */
	WH_UNWIND,   /* (i32 depth): a handler of the frame at depth+1 caught */
	WH_ARG_I32,  /* (i32): the next value of the coming entry/exit */
	WH_ARG_I64,
	WH_ARG_F32,
	WH_ARG_F64,
	WH_ENTER1,   /* (i32 site, i64 v0): an entry with its last value(s), */
	WH_ENTER2,   /* one import call instead of one per value and one for */
	WH_ENTER3,   /* the entry; values widened to i64 bits as arg_* store */
	WH_ENTER4,   /* them (i32 and f32 zero-extended) */
	WH_EXIT1,    /* (i32 site, i64 r0): an exit with its last result */
	WH_GENTER,   /* Go: (i32 site, i32 resume_pc, i64 goid, i64 key) */
	WH_GEXIT,    /* Go: (i32 site, i32 unwinding, i64 goid, i64 key) */
	WH_GRESTART, /* Go: (i32 site, i64 goid, i64 key): morestack, the entry re-runs */
	WH_COUNT,
};
extern const char *const ct_wasm_hook_names[WH_COUNT];

#define CT_WASM_NOSITE UINT32_MAX
struct ct_wasm_instr {
	uint32_t func;          /* function index in the original module */
	uint32_t entry_site, exit_site; /* exit_site CT_WASM_NOSITE: entry only */
	uint32_t restart_site;  /* Go: morestack calls (CT_WASM_NOSITE: none) */
	bool args, rets;        /* report numeric parameters / results */
};

/* Go's js/wasm conventions the instrumentation needs (gowasm.c). */
#define CT_WASM_MAX_MORESTACK 3 /* morestack, morestack_noctxt, morestackc */
struct ct_wasm_go {
	bool on;
	uint32_t sp_global, g_global;   /* SP (i32), g (i64) */
	uint32_t goid_off, stack_hi_off;/* in runtime.g */
	uint32_t morestack[CT_WASM_MAX_MORESTACK]; /* function indices of runtime.morestack* */
	uint32_t nmorestack;
};

/* Writes the instrumented module to OUT.  FNS: the functions to instrument
 * (sorted by func).  Fails with one line on what it cannot rewrite. */
int ct_wasm_rewrite(const struct ct_wasm_module *m, const struct ct_wasm_instr *fns, size_t n,
		    const struct ct_wasm_go *go, struct ct_buf *out);

#endif
