/* Go's runtime as calltrace sees it from outside, kept once for every reader
 * (target, plan, the session, render, the wasm backend): facts Go's own
 * source fixes, by Go version where they change, for binaries whose DWARF
 * (target/dwarf.c reads runtime.g/m there first) is gone.  Each says where
 * in Go's source it comes from.  Elsewhere, each once: the funcID numbering
 * and _func layouts by version in target/gobin.c (they are how pclntab is
 * read), the calling conventions and argument registers in plan/abi.h. */
#ifndef CT_GORUNTIME_H
#define CT_GORUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include "probes/event.h" /* struct ct_bin_config */

/* ---- functions ---- */

/* Runtime code that switches stacks, runs without a valid g, or never
 * returns normally: never probed (NAME may end in ".abi0"). */
bool ct_go_must_not_probe(const char *name);

/* Of a Go function in the pclntab, also Go's own `main` (asm_amd64.s, an
 * externally linked program's C entry), which jumps to rt0_go and never
 * returns: its jump to untraced code ended it as returned, with --exit=ret.
 * (A C program's main, linked with a Go archive, is no pclntab function.) */
bool ct_go_pclntab_must_not_probe(const char *name);

/* runtime.morestack and runtime.morestack_noctxt (NAME may end in ".abi0"):
 * a prologue's call of one means its entry is about to run again. */
bool ct_go_is_morestack(const char *name);

/* Functions the runtime calls through their address, once a program,
 * goroutine or defer: main.main (runtime.main: fn := main_main; fn()),
 * package initializers P.init, P.init.N (doInit, from the inittask
 * tables), and closures P.F.funcN, P.F.gowrapN, P.F.deferwrapN (what `go`
 * and `defer` start since Go 1.17; also callbacks). */
bool ct_go_called_by_runtime(const char *name);

/* Of those, the closures (P.F.funcN, P.F.gowrapN, P.F.deferwrapN): what
 * `go` and `defer` start, which the runtime calls from a few call sites of
 * its own (ct_go_runs_closures and goexit), besides their other callers. */
bool ct_go_is_closure(const char *name);

/* The length of a closure's enclosing function's name, the closure's own
 * number left out ("main.f" of "main.f.func1", "main.f.func1" of
 * "main.f.func1.2"): its siblings (a `go`/`defer` wrapper and the closure
 * it calls) share it. */
size_t ct_go_closure_parent_len(const char *name);

/* Runtime functions that call a deferred function through its funcval
 * (Go 1.17 on: deferreturn; while panicking gopanic, and deferCallSave for
 * open-coded defers; NAME may end in ".abi0"): each indirect call in them
 * is a call site of every deferred closure. */
bool ct_go_runs_closures(const char *name);

/* runtime.goexit (NAME may end in ".abi0"): the return address newproc
 * gives every goroutine's function is past its first instruction, a NOP. */
bool ct_go_is_goexit(const char *name);

/* Runs the deferred calls of its caller (before Go 1.17 by jmpdefer, which
 * makes a deferred call return to the caller's CALL of it). */
#define CT_GO_DEFERRETURN "runtime.deferreturn"

/* Marks a recovered panic (on the system stack). */
#define CT_GO_RECOVERY "runtime.recovery"

/* The end of every goroutine (goexit0's caller on the goroutine's stack). */
#define CT_GO_GOEXIT1 "runtime.goexit1"

/* Where a goroutine parks (a channel, select, sleep, lock, netpoll): its
 * call returns when the goroutine runs again (record --parks). */
#define CT_GO_GOPARK "runtime.gopark"
/* ready(gp *g, ...): makes a parked goroutine runnable (channels, timers,
 * locks: not the network poller's, which queues its goroutines itself). */
#define CT_GO_READY "runtime.ready"

/* _func.flag (internal/abi.FuncFlag) */
#define CT_GO_FLAG_TOPFRAME 0x1
#define CT_GO_FLAG_SPWRITE 0x2
#define CT_GO_FLAG_ASM 0x4

/* ---- runtime.g and runtime.m ---- */

/* Go 1.N for which ct_go_offsets_by_version was checked. */
#define CT_GO_TABLE_MIN 9
#define CT_GO_TABLE_MAX 27

/* Fills C's runtime.g / runtime.m offsets (goid, stack.hi, m, m.curg, gopc)
 * for Go 1.MINOR, 64-bit ports (amd64, and wasm, whose g is laid out alike). */
void ct_go_offsets_by_version(int minor, struct ct_bin_config *c);

/* Where g is in TLS (fsbase + this) when Go's own linker links: Tlsoffset. */
#define CT_GO_TLS_G_OFF (-8)

/* ---- data layouts (64-bit) ---- */

/* An interface value is two words: word 0 the dynamic type (eface: its
 * *_type; iface: an *itab), word 1 the data pointer. */
#define CT_GO_IFACE_DATA_OFF 8
/* runtime.itab {inter *interfacetype; _type *_type; ...}: where a non-empty
 * interface's dynamic type is. */
#define CT_GO_ITAB_TYPE_OFF 8
/* A map value points at its header, whose first word is the count: hmap.count
 * (Go < 1.24), internal/runtime/maps.Map.used (swiss maps, 1.24+). */
#define CT_GO_MAP_COUNT_OFF 0
/* A chan value points at runtime.hchan {qcount uint; dataqsiz uint; ...}:
 * elements queued, and the buffer's capacity. */
#define CT_GO_CHAN_QCOUNT_OFF 0
#define CT_GO_CHAN_DATAQSIZ_OFF 8

#endif
