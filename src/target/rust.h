/* Rust programs: which functions are the program's own code (the default
 * selection), as Go's default is the main module.  A Rust executable holds
 * std, core, alloc and their dependencies, plus the monomorphized generics of
 * all of them; the program's own crates are the compile units compiled where
 * the crate defining `main` was (the workspace), from DWARF.  Pure reading. */
#ifndef CT_RUST_H
#define CT_RUST_H

#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

struct ct_func;

struct ct_rust {
	bool is_rust;  /* an executable whose main is Rust's (std::rt::lang_start) */
	char **crates; /* the program's crates ("m", "app_core"), at least main's */
	size_t ncrates;
	struct ct_map unmangled; /* entry -> 1: #[no_mangle] functions of those crates */
};

/* Reads the facts of the ELF at PATH with functions FUNCS (demangled
 * names set).  Never fails: not Rust leaves is_rust false. */
void ct_rust_read(const char *path, const struct ct_func *funcs, size_t n, struct ct_rust *out);
void ct_rust_free(struct ct_rust *r);
/* Is F code of the program's own crates?  A generic of std instantiated for
 * the program's types ("core::ptr::drop_in_place<m::T>") is std's code; an
 * impl of a std trait for a program's type ("<m::T as core::fmt::Debug>::fmt")
 * is the program's. */
bool ct_rust_own(const struct ct_rust *r, const struct ct_func *f);

/* The crate a demangled Rust path belongs to: "m::app::run" -> "m",
 * "<m::T as core::fmt::Debug>::fmt" -> "m"; writes at most CAP bytes into
 * OUT; false if there is none ("<&T as ...>", "<[T] as ...>"). */
bool ct_rust_crate_of(const char *path, char *out, size_t cap);

#endif
