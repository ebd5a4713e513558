/* A WebAssembly module read from its binary encoding: the sections, the
 * function index space (imports first), each function's type and body, the
 * names from the name section, the data segments.  Pure parsing of bytes the
 * caller keeps alive; no runtime involved.  Also the instruction walker that
 * knows every opcode's immediates (MVP, 0xFB GC, 0xFC, 0xFD SIMD, 0xFE
 * atomics, exceptions, tail calls), used by the rewriter (rewrite.c). */
#ifndef CT_WASM_MODULE_H
#define CT_WASM_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CT_WASM_MAGIC "\0asm"

enum ct_wasm_sec {
	WSEC_CUSTOM = 0, WSEC_TYPE = 1, WSEC_IMPORT = 2, WSEC_FUNCTION = 3, WSEC_TABLE = 4,
	WSEC_MEMORY = 5, WSEC_GLOBAL = 6, WSEC_EXPORT = 7, WSEC_START = 8, WSEC_ELEMENT = 9,
	WSEC_CODE = 10, WSEC_DATA = 11, WSEC_DATACOUNT = 12, WSEC_TAG = 13,
};

/* Value types: the first byte (0x7f i32, 0x7e i64, 0x7d f32, 0x7c f64, 0x7b
 * v128, reference types) and the whole encoding (references may carry a
 * heap type). */
#define WT_I32 0x7f
#define WT_I64 0x7e
#define WT_F32 0x7d
#define WT_F64 0x7c
struct ct_wasm_valtype {
	const uint8_t *p;
	uint8_t len;
	uint8_t code;
};

struct ct_wasm_functype {
	bool is_func; /* false: a GC struct/array type */
	struct ct_wasm_valtype *params, *results;
	uint32_t nparams, nresults;
};

struct ct_wasm_section {
	uint8_t id;
	size_t start;   /* offset of the id byte */
	size_t payload; /* offset of the contents */
	size_t size;    /* contents size */
	char name[64];  /* custom sections */
};

struct ct_wasm_func {
	uint32_t type;      /* index into types */
	bool imported;
	char *name;         /* name section, export name, or "wasm-function[N]" */
	const char *import_module, *import_field; /* imported: not NUL-terminated */
	uint32_t import_module_len, import_field_len;
	size_t body;        /* defined: offset of the body (after its size) */
	size_t body_size;
};

struct ct_wasm_data {
	uint32_t mem_offset; /* active segments with an i32.const offset */
	bool active;
	size_t file_offset, size;
};

struct ct_wasm_module {
	const uint8_t *bytes;
	size_t size;
	struct ct_wasm_section *secs;
	size_t nsecs;
	struct ct_wasm_functype *types;
	uint32_t ntypes;
	struct ct_wasm_func *funcs; /* the function index space */
	uint32_t nfuncs, nimported;
	uint32_t nglobals, nimported_globals;
	struct ct_wasm_data *data;
	size_t ndata;
	bool has_dwarf;       /* .debug_info custom section */
	bool is_object;       /* linking / reloc.* sections: a relocatable object */
	const char *import_modules; /* e.g. "wasi_snapshot_preview1", "go" (first seen) */
	bool wasi, go_js;     /* imports wasi_snapshot_preview1 / Go's js glue module "go" */
	bool go_buildid;      /* has Go's "go.buildid" (or "go:buildid") custom section */
};

/* Parses BYTES (kept alive by the caller).  Fails with one clear line when
 * it is not a wasm binary or is damaged. */
int ct_wasm_parse(struct ct_wasm_module *m, const uint8_t *bytes, size_t size, const char *path);
void ct_wasm_free(struct ct_wasm_module *m);
const struct ct_wasm_section *ct_wasm_section(const struct ct_wasm_module *m, uint8_t id, const char *name);
/* "(i32, i64) -> f64" */
char *ct_wasm_sig(const struct ct_wasm_module *m, uint32_t func);
const char *ct_wasm_valtype_name(uint8_t code);

/* Steps over one value type (a byte, or 0x63/0x64 and a heap type). */
bool ct_wasm_skip_valtype(const uint8_t **p, const uint8_t *end);

/* LEB128 over a bounded range; overruns set *bad. */
uint64_t ct_leb_u(const uint8_t **p, const uint8_t *end, bool *bad);
int64_t ct_leb_s(const uint8_t **p, const uint8_t *end, bool *bad);
/* Appends V as unsigned LEB128 to OUT (at most 10 bytes); returns bytes. */
size_t ct_leb_put(uint8_t *out, uint64_t v);

/* One instruction, as the walker sees it. */
enum ct_wasm_ikind {
	WI_OTHER = 0,
	WI_BLOCK,        /* block, loop, if, try, try_table: opens a label */
	WI_ELSE,         /* else / catch / catch_all: same label, new arm */
	WI_END,          /* end (closes a label; the last one closes the function) */
	WI_DELEGATE,     /* legacy EH: closes a try */
	WI_RETURN,
	WI_CALL,         /* call f: `index` is f, at `index_at` */
	WI_RETURN_CALL,  /* return_call f */
	WI_RETURN_CALL_OTHER, /* return_call_indirect / return_call_ref */
	WI_REF_FUNC,     /* ref.func f */
};
struct ct_wasm_insn {
	enum ct_wasm_ikind kind;
	uint8_t op;          /* first opcode byte */
	uint32_t sub;        /* prefixed opcodes: the LEB sub-opcode */
	const uint8_t *start, *end;      /* the whole instruction */
	const uint8_t *index_at, *index_end; /* the function index (CALL, RETURN_CALL, REF_FUNC) */
	uint32_t index;
	bool catch_arm;      /* WI_ELSE from catch / catch_all (a landing site) */
	uint32_t try_table_labels[16]; /* try_table: its catch clauses' labels */
	uint32_t ntry_table_labels;
};
/* Decodes the instruction at *P (< END), advancing *P.  Returns -1 with
 * ct_fail() on an unknown opcode or truncated immediates. */
int ct_wasm_next_insn(const uint8_t **p, const uint8_t *end, struct ct_wasm_insn *in);

#endif
