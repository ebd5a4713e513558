/* Types and function signatures, read from DWARF (libdw) for Go and C.
 * A small self-contained type graph: it is also serialized into the record
 * file so that replay can decode argument bytes without the binary. */
#ifndef CT_TYPES_H
#define CT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/event.h" /* enum ct_reg */

enum ct_kind {
	CT_K_UNKNOWN = 0, /* not described (no DWARF, or a construct we skip) */
	CT_K_BOOL,
	CT_K_INT,        /* signed integer of `size` bytes (1,2,4,8) */
	CT_K_UINT,       /* unsigned integer; also Go uintptr, C unsigned char */
	CT_K_FLOAT,      /* 4 or 8 bytes */
	CT_K_COMPLEX,    /* 8 or 16 bytes: two floats */
	CT_K_PTR,        /* pointer to `elem` (CT_TYPE_NONE for void * and unsafe.Pointer) */
	CT_K_STRING,     /* Go string: {ptr *byte, len int}, 16 bytes */
	CT_K_SLICE,      /* Go slice of `elem`: {ptr, len, cap}, 24 bytes */
	CT_K_IFACE,      /* Go non-empty interface (incl. error): {itab *, data} */
	CT_K_EFACE,      /* Go empty interface any: {type *, data} */
	CT_K_STRUCT,     /* fields */
	CT_K_ARRAY,      /* `len` x `elem` */
	CT_K_MAP,        /* Go map: one pointer (to runtime hmap) */
	CT_K_CHAN,       /* Go chan: one pointer (to runtime hchan) */
	CT_K_FUNC,       /* Go func value / C function pointer: one pointer */
	CT_K_CSTRING,    /* C char * (or const char *): shown as a string */
	CT_K_ENUM,       /* C enum: an integer of `size` bytes, signedness in `is_signed` */
	CT_K_UNION,      /* C union: `size` raw bytes */
	CT_K_VOID,       /* C void (return type only) */
	CT_K_REF,        /* a reference that always points to a value (C++ T&/T&&,
			    Rust &T/&mut T/Box<T>): 8 bytes, shown as that `elem` */
	CT_K_VARIANT,    /* Rust enum (a DWARF variant part): the discriminant is
			    an unsigned integer of type `elem` at byte `len`; the
			    fields are the variants (offset 0, type: a struct whose
			    fields are at the enum's offsets, value: the
			    discriminant that selects it, or CT_FIELD_DEFAULT);
			    elem CT_TYPE_NONE: one variant, no discriminant */
	CT_K_SEQ,        /* items in memory, counted: Rust String/Vec/&str/&[T],
			    C++ std::string/std::vector.  Fields give the parts
			    by name: "ptr" (to the first of the `elem` items),
			    then "len" (how many) or "end" (pointer past the last),
			    optional "cap" or "cap_end"; is_text: UTF-8 text */
	CT_K_CHAR,       /* a character (Rust char, C++ char16_t/char32_t): its code point */
};

#define CT_TYPE_NONE 0 /* type id 0 is always { CT_K_UNKNOWN, "?" } */

struct ct_field {
	char *name;
	uint32_t offset;
	uint32_t type;
	int64_t value;  /* VARIANT: discriminant of this variant; ENUM: the enumerator's value */
	uint8_t flags;  /* CT_FIELD_* */
	uint8_t bit_off, bit_size; /* CT_FIELD_BITS: bits bit_off.. of the bytes from offset */
};
#define CT_FIELD_DEFAULT 0x1 /* VARIANT: selected by any value no other variant has */
#define CT_FIELD_BITS 0x2    /* STRUCT: a C bit-field of bit_size bits (1..64), its
				lowest at bit bit_off (0..7) of byte `offset` */

struct ct_type {
	enum ct_kind kind;
	char *name;      /* as the language writes it: "int", "main.Point", "[]string", "error", "char *" */
	uint32_t size;   /* bytes */
	uint32_t elem;   /* PTR, SLICE, ARRAY, MAP (value), CHAN: element type */
	uint32_t key;    /* MAP: key type */
	uint32_t len;    /* ARRAY: number of elements */
	bool is_signed;  /* ENUM */
	bool is_error;   /* Go: the predeclared `error` interface */
	bool is_text;    /* SEQ: the items are UTF-8 text */
	bool by_ref;     /* C++: not trivially copyable, so passed and returned
			    through a hidden reference, never in registers */
	struct ct_field *fields; /* STRUCT: in offset order; ENUM: enumerators;
				    VARIANT: variants; SEQ: parts */
	uint32_t nfields;
	uint64_t go_rtype; /* Go: link-time address of its runtime._type, 0 if unknown */
};

struct ct_typetab {
	struct ct_type *v; /* v[0] is the unknown type */
	size_t n;
};

/* Where one piece of a value lives at a probe site. */
enum ct_piece_kind {
	CT_PIECE_REG = 1,   /* general register `reg` (low `size` bytes) */
	CT_PIECE_XREG = 2,  /* SSE register: unreadable from BPF */
	CT_PIECE_STACK = 3, /* memory at CFA + stack_off (CFA = SP + 8 at entry and at RET) */
	CT_PIECE_REGMEM = 4,/* memory at register `reg` + stack_off (C results returned in memory) */
	CT_PIECE_CONST = 5, /* a constant DWARF gives (DW_AT_const_value): `literal`, nothing to read */
	CT_PIECE_X87 = 6,   /* x87 register st(0) (st(1)): a long double result, unreadable from BPF */
};

struct ct_piece {
	uint8_t kind;       /* enum ct_piece_kind */
	uint8_t reg;        /* enum ct_reg (REG, XREG) */
	uint16_t size;      /* bytes */
	uint32_t value_off; /* where these bytes go in the value's memory layout */
	int32_t stack_off;  /* STACK, REGMEM: byte offset */
	uint64_t literal;   /* CONST: the value's `size` bytes, little-endian */
};

/* A value's location: pieces that together fill its memory layout. */
struct ct_loc {
	struct ct_piece *pieces;
	uint32_t n;         /* 0: location unknown */
};

struct ct_param {
	char *name;     /* "" for unnamed C params; Go "~r0".. for unnamed results */
	uint32_t type;
	bool is_result;
	/* the result of an assembly function (GNU as: a nameless
	 * DW_TAG_unspecified_type), of which DWARF says nothing: none, RAX or
	 * XMM0 -- the plan keeps it only where the code shows RAX set
	 * (plan/sites.h ct_rets_set_rax) */
	bool asm_word;
	/* Location at the function's first instruction from DWARF (location
	 * list entry whose range contains low_pc, or a plain location), n == 0
	 * if none or if it uses anything a ct_loc cannot express (implicit or
	 * entry values, derefs, optimized-out parts); C: the constant a
	 * constant-propagated parameter has (one CONST piece).  Memory below the CFA
	 * (e.g. -N -l result slots in the not yet built frame) is dropped.  Go
	 * register pieces are placed at the offsets of the value's ABI parts
	 * (gc's DWARF omits padding between them). */
	struct ct_loc entry_loc;
	/* Optimized code describes this parameter, but not at the entry (or
	 * not at all): then the value need not be where the calling
	 * convention puts it (LLVM drops or specializes the arguments of
	 * internal functions without renaming them), so no convention may
	 * stand in for entry_loc.  Unoptimized code describes parameters by
	 * frame slots, or (passed by reference) by the register holding the
	 * address once the prologue ran: that is not "optimized". */
	bool optimized;
	/* DWARF gives its value at the entry as a constant, or leaves parts
	 * of it out: the compiler specialized the function for the value
	 * (clang and rustc do so without renaming it), so in any language the
	 * registers the convention names need not hold it. */
	bool constant;
};

/* One function's signature as DWARF describes it.  For Go, receivers come
 * first, then params, then results (DW_AT_variable_parameter = 1).  For C,
 * the return type is one result named "" (none if void). */
struct ct_sig {
	struct ct_param *params;
	size_t n;
	bool variadic; /* C: ends with "..." */
	bool rust_abi; /* Rust's own calling convention (a mangled function of
			  a Rust unit), not SysV: locations come from DWARF or
			  from the Rust rules of plan/abi.c */
	bool external; /* C: DW_AT_external: callable from other units, so its
			  symbol keeps the calling convention of its prototype
			  (a compiler clone, "f.constprop.0", has its own) */
	bool go_dict;  /* Go generic shape instance: a hidden dictionary comes
			  first (not in params; -N -l's explicit ".dict" param
			  is folded into this flag; closures inside shape
			  instances take none) */
};

struct ct_types;

/* Reads DWARF of the ELF at PATH lazily: nothing is parsed until a signature
 * is asked for.  NULL when the file has no usable DWARF. */
struct ct_types *ct_types_open(const char *path, bool go);
void ct_types_close(struct ct_types *ts);
/* The signature of the function whose code starts at ENTRY (link-time);
 * false if DWARF does not describe it.  Types go into ct_types_table(). */
bool ct_types_sig(struct ct_types *ts, uint64_t entry, struct ct_sig *out);
const struct ct_typetab *ct_types_table(const struct ct_types *ts);
/* Go: the type whose runtime._type is at link-time address RTYPE, or
 * CT_TYPE_NONE (for naming the dynamic type of interface values).  The
 * first call scans all Go type DIEs (a few ms on a large binary). */
uint32_t ct_types_by_rtype(struct ct_types *ts, uint64_t rtype);
/* Starts building ct_types_by_rtype's index on a thread of its own rather
 * than at its first call; every other call on TS waits for it first.  The
 * file's DWARF handle is shared (target/dwarf.h ct_dwarf_shared): nothing
 * else may read that file's DWARF until TS has been used or closed. */
void ct_types_index_rtypes_start(struct ct_types *ts);
void ct_sig_free(struct ct_sig *s);

/* Helpers usable on any table (also one read back from a record file). */
const struct ct_type *ct_type_get(const struct ct_typetab *tt, uint32_t id);
/* Whether T is x87 extended precision (C long double on x86-64: 80 bits in
 * the first 10 of 16 bytes), or a complex of two; a 16-byte float named
 * with 128 (_Float128, __float128) is an IEEE quad, passed in SSE. */
bool ct_type_is_x87(const struct ct_type *t);
/* T's field (SEQ: part) named NAME, or NULL. */
const struct ct_field *ct_type_field(const struct ct_type *t, const char *name);
void ct_typetab_free(struct ct_typetab *tt);

#endif
