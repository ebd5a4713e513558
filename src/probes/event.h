/* The one event struct shared by the BPF programs (calltrace.bpf.c) and user
 * space (probes.c, record/).  Keep it plain: fixed-width fields only, no
 * pointers, so both compilers lay it out the same way. */
#ifndef CT_EVENT_H
#define CT_EVENT_H

#ifdef __BPF__
/* vmlinux.h provides __u64 and friends. */
#elif defined(__wasm__)
/* the wasm recorder (src/wasm/recorder/) writes these events too */
typedef unsigned long long __u64;
typedef long long __s64;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned char __u8;
#else
#include <linux/types.h>
#endif

/* What a hit costs depends on the probed instruction (the site's flags,
 * CT_SITEF_STEPPED/CALLINSN/RETINSN/NOTRAP): one the kernel emulates, one it
 * single-steps, an emulated `call` (it also writes the return address), a
 * single-stepped `ret`, a 5-byte nop the kernel reaches by a call to its
 * trampoline (no trap); and on what the BPF program does: a CHECK's hit (a
 * function observed from its callers, at its emulated entry) looks up which
 * planned call site it came from. */
enum ct_hit_class {
	CT_HIT_EMULATED,
	CT_HIT_STEPPED,
	CT_HIT_CALL,
	CT_HIT_RET,
	CT_HIT_CHECK,
	CT_HIT_NOTRAP,
	CT_HIT_CLASSES
};
/* Slots of the BPF side's per-class tables (silent_weight), a power of two
 * so that an index masked with it needs no bounds check for the verifier;
 * a site's class is kept plus one (0: none given) under the same mask
 * (ct_probes_set_site_class). */
#define CT_HIT_CLASS_SLOTS 8
_Static_assert(CT_HIT_CLASSES < CT_HIT_CLASS_SLOTS, "a hit class without its slot");

/* Registers, numbered as the 8-byte slots of the kernel's struct pt_regs
 * (x86-64), so the BPF side indexes a copy of the registers directly: a
 * fetch op's `reg` is one of the general registers (masked to 4 bits for
 * the verifier), SP is read for stack slots. */
enum ct_reg {
	CT_R15 = 0, CT_R14 = 1, CT_R13 = 2, CT_R12 = 3, CT_RBP = 4, CT_RBX = 5,
	CT_R11 = 6, CT_R10 = 7, CT_R9 = 8, CT_R8 = 9, CT_RAX = 10, CT_RCX = 11,
	CT_RDX = 12, CT_RSI = 13, CT_RDI = 14,
	CT_REG_SP = 19, /* pt_regs.sp */
	CT_XMM0 = 32,   /* CT_XMM0 + i: SSE registers, which BPF cannot read */
};
#define CT_REG_MASK 15  /* the general registers a fetch op may name */

/* What a probe site is (kept per site in the record file, docs/FORMAT.md).
 * Callee-side sites (--exit=ret, and functions not every call of which is
 * seen from its caller):
 *   ENTRY     the function starts (its first cheap instruction)
 *   RET       a RET: the call returns
 *   TAIL      a JMP out of the function: the call goes on in its target
 *             (a traced one enters at the same frame key: a tail call);
 *             also a role of a CALL's probe, a PLT stub's `jmp *slot`
 *             that follows that call at once
 *   RESTART   CALL runtime.morestack, or a C/C++/Rust branch back to the
 *             function's own entry (self-recursion made a loop): the entry
 *             will run again for the same call
 * Caller-side sites (--exit=auto):
 *   CALL      a `call rel32` to a traced function: the callee's frame is the
 *             caller's SP minus the return address it pushes
 *   RETSITE   the first instruction after such a call (on the straight line
 *             from its return address) that takes a probe: the call returned.
 *             Also, at the return address itself, for callee-side functions
 *             that tail-jump to untraced code (with limits: only there)
 *   CHECK     the callee's own cheap entry: BPF looks up the return address
 *             among its planned call sites; a call from one of them is sent
 *             as that CALL site's event (the CALL is then not probed
 *             itself: one emulated hit a call instead of two), a call from
 *             anywhere else as the CHECK's own (an unplanned caller)
 * Markers (no traced function):
 *   GOEXIT    runtime.goexit1: the goroutine ends
 *   RECOVER   runtime.recovery: a panic was recovered; the goroutine resumes
 *             in the frame that deferred the recovering function
 *   DEFERRET  runtime.deferreturn's entry: where that frame resumes
 *   GOCREATE  the runtime queues a goroutine it just made (plan/goroutines.c):
 *             not a call, so record-time limits never cut it
 *   CATCH     __cxa_begin_catch's entry (libstdc++, or a program it is
 *             linked into): a C++ handler begins, called from the frame that
 *             catches; every frame at or deeper than the key of this call
 *             was unwound, whoever catches (libstdc++'s own catch (...), a
 *             template's in untraced code).  Not under record-time limits.
 * Inside a function:
 *   SPILL     where the straight line from its entry has stored its
 *             arguments passed in SSE registers (which BPF cannot read) to
 *             the stack (plan/spill.c): their values, for the call open at
 *             the frame key (reconstruct.c merges them into its arguments) */
enum ct_site_kind {
	CT_SITE_ENTRY = 0,
	CT_SITE_RET = 1,
	CT_SITE_TAIL = 2,
	CT_SITE_RESTART = 3,
	CT_SITE_GOEXIT = 4,
	CT_SITE_CALL = 5,
	CT_SITE_RETSITE = 6,
	CT_SITE_CHECK = 7,
	CT_SITE_RECOVER = 8,
	CT_SITE_DEFERRET = 9,
	CT_SITE_GOCREATE = 10,
	CT_SITE_SPILL = 11,
	/* Never probed itself: a role of a RETSITE probe, the results of the
	 * call in tail position at `call_site` (of `func`) in the function
	 * whose call that probe closes, which returns them as they are. */
	CT_SITE_TAILRES = 12,
	/* Never probed, no role: the result of the call in tail position at
	 * `call_site` (of `func`), one integer word, is its caller's result
	 * less the one of the caller's call just before (whose exit is this
	 * call's instruction): the caller returns their sum.  The
	 * reconstruction works it out; its FETCH describes that word. */
	CT_SITE_TAILDIFF = 13,
	/* Markers of the Go scheduler (record --parks), by the site's key_adj
	 * (CT_GOSCHED_*, the cookie's func field): runtime.ready's entry,
	 * where a parked goroutine (its first argument's g) is made runnable
	 * (a CT_PROC_READY record); goschedImpl's and preemptPark's, where
	 * the scheduler takes a running goroutine off its thread (Gosched, a
	 * preemption, a stop for the GC); execute's, where it runs one: for
	 * one it took off, a CT_PROC_OFFCPU record (CT_OFFCPU_GOSCHED).  No
	 * call events. */
	CT_SITE_GOREADY = 14,
	CT_SITE_CATCH = 15,
	CT_SITE_NKINDS = 16,
};

/* The attach cookie of every probe site packs everything the BPF program needs
 * to know about the site, so that a hit without arguments or limits costs no
 * map lookup:
 *   bits  0..23  site id (index into the plan's site table, kept in the file)
 *   bits 24..25  where the current goroutine (g) comes from, CT_G_*
 *   bits 26..29  binary index into ct_config.bins[] (per-binary offsets)
 *   bit  30      the site fetches arguments/results (fetch map, by site id)
 *   bit  31      the site's function matches --root
 *   bits 32..35  site kind (enum ct_site_kind)
 *   bit  36      TAIL site whose jump target is a traced function; CHECK
 *                site of a function whose address is taken (called
 *                through interfaces, function values: CT_CNT_INDIRECT);
 *                ENTRY site that is its function's RET too (`f: ret`);
 *                RET site probed only until its function's callers are
 *                found (an interim RET): it sends the end of an
 *                unobserved call only; RETSITE probe of an indirect
 *                call planned before recording whose every role is an
 *                end of that call instruction's calls (a watched one:
 *                map "icall_exit_hits")
 *   bit  37      the probe is a tail jump to untraced code (one of its
 *                roles): look the return address (at SP) up among the
 *                planned return sites ("planned_calls", keyed by this
 *                probe's site); none there: CT_EV_UNWATCHED
 *   bits 38..60  function id (for restart detection and tail calls under
 *                limits; ids past 2^23 wrap); CHECK sites (never under
 *                limits): the bytes SP went down from the entry to the
 *                probe (one after the prologue), where the return address is
 *   bit  61      ENTRY site of a function whose code runs on into the next
 *                function's entry, which is a tail call (CT_FN_FALLS);
 *                other sites: a CALL from a Go function not traced
 *                (ct_plan_call_walks)
 *   bit  62      ENTRY site that is its function's tail jump too (`f: jmp g`);
 *                other sites: a role of the probe is a conditional tail jump
 *                (`je g`) or a call made on one way of the jump (a CALL
 *                seen ahead, plan/ahead.c), whose condition map "jcc_conds"
 *                has (CT_EV_NOT_TAKEN)
 *   bit  63      ... whose target is a traced function (or a pointer)
 */
#define CT_MAX_SITES (1u << 24)
#define CT_COOKIE_SITE(c) ((__u32)(c) & (CT_MAX_SITES - 1))
#define CT_COOKIE_GSRC(c) ((__u32)((c) >> 24) & 3)
#define CT_COOKIE_BIN(c) ((__u32)((c) >> 26) & (CT_MAX_BINS - 1))
#define CT_COOKIE_FETCH(c) ((__u32)((c) >> 30) & 1)
#define CT_COOKIE_ROOT(c) ((__u32)((c) >> 31) & 1)
#define CT_COOKIE_KIND(c) ((__u32)((c) >> 32) & 15)
#define CT_COOKIE_TAILTRACED(c) ((__u32)((c) >> 36) & 1)
#define CT_COOKIE_INDIRECT(c) ((__u32)((c) >> 36) & 1) /* CHECK sites */
#define CT_COOKIE_ENTRYRET(c) ((__u32)((c) >> 36) & 1) /* ENTRY sites */
#define CT_COOKIE_INTERIM(c) ((__u32)((c) >> 36) & 1)  /* RET sites */
#define CT_COOKIE_ICALL_EXIT(c) ((__u32)((c) >> 36) & 1) /* RETSITE sites */
#define CT_COOKIE_ICALL_EXIT_BIT (1ULL << 36)
#define CT_COOKIE_RETCHECK(c) ((__u32)((c) >> 37) & 1)
#define CT_COOKIE_FUNC(c) ((__u32)((c) >> 38) & 0x7fffff)
#define CT_COOKIE_SPDROP(c) ((__u32)((c) >> 38) & 0x7fffff) /* CHECK sites */
#define CT_COOKIE_FALLS(c) ((__u32)((c) >> 61) & 1)           /* ENTRY sites */
#define CT_COOKIE_CALLWALK(c) ((__u32)((c) >> 61) & 1)        /* other sites */
#define CT_COOKIE_ENTRYTAIL(c) ((__u32)((c) >> 62) & 1)
#define CT_COOKIE_ENTRYTAIL_TRACED(c) ((__u32)((c) >> 63) & 1)
#define CT_COOKIE_JCC(c) (CT_COOKIE_KIND(c) != CT_SITE_ENTRY && (((c) >> 62) & 1))
struct ct_cookie_parts {
	__u32 site, gsrc, bin, fetch, root, kind, tail_traced, retcheck, func, falls, call_walk, entry_tail,
		entry_tail_traced, jcc;
};
#define CT_COOKIE(p)                                                                        \
	((__u64)(p).site | ((__u64)(p).gsrc << 24) | ((__u64)(p).bin << 26) |               \
	 ((__u64)(p).fetch << 30) | ((__u64)(p).root << 31) | ((__u64)(p).kind << 32) |     \
	 ((__u64)(p).tail_traced << 36) | ((__u64)(p).retcheck << 37) |                     \
	 ((__u64)((p).func & 0x7fffff) << 38) | ((__u64)((p).falls | (p).call_walk) << 61) |                   \
	 ((__u64)((p).entry_tail | (p).jcc) << 62) | ((__u64)(p).entry_tail_traced << 63))

/* A conditional tail jump's probe (CT_COOKIE_JCC), map "jcc_conds" by site
 * id: its condition, the low 4 bits of its opcode (x86's condition codes:
 * o, no, b, ae, e, ne, be, a, s, ns, p, np, l, ge, le, g), and
 * CT_JCC_ALONE when the jump is the probe's only role (not taken, it sends
 * nothing).  The probe fires before the jump: the flags say which way it
 * goes. */
#define CT_JCC_ALONE 0x10
static inline int ct_jcc_taken(__u32 cc, __u64 eflags)
{
	int cf = eflags & 1, pf = (eflags >> 2) & 1, zf = (eflags >> 6) & 1, sf = (eflags >> 7) & 1,
	    of = (eflags >> 11) & 1, t;
	switch ((cc >> 1) & 7) {
	case 0: t = of; break;
	case 1: t = cf; break;
	case 2: t = zf; break;
	case 3: t = cf | zf; break;
	case 4: t = sf; break;
	case 5: t = pf; break;
	case 6: t = sf != of; break;
	default: t = zf | (sf != of); break;
	}
	return t ^ (int)(cc & 1);
}

/* A CHECK site's planned callers (map "planned_calls"): the key is the site
 * id and the distance from the probe to the return address, which does not
 * depend on where the binary is loaded.  A probe with CT_COOKIE_RETCHECK
 * has the return addresses whose probes see the end of a call that jumped
 * to untraced code there (the value is not used). */
#define CT_PLANNED_KEY(site, delta) (((__u64)(site) << 32) | (__u32)(__s32)(delta))
/* ... and the value: the CALL site the hit stands for, and what to add to
 * the CHECK's frame key so that the CALL site's key_adj gives it back;
 * FETCH (site id + 1, 0: the probe's own): the site whose fetch program the
 * hit runs instead -- the call's exit before it rides on this hit and reads
 * the results of the call that ended (ct_plan_merge_exits_into_checks).
 * CALLER_DEPTH (0: not known): how far below its caller's entry the callee's
 * frame key is (the caller's frame at the call, and the return address),
 * so the caller's entry key; CALLER_CHECK: the caller's CHECK site + 1 (0:
 * the caller is not a traced function observed at a CHECK).  A call without
 * an exit probe at that key, of another function, has ended: the caller runs
 * at its level (track_unobserved).  VIA (0: none): the call is in tail
 * position in an untraced caller (a `go` or `defer` wrapper), so it ends
 * when that caller returns: it is looked up again as the call from where
 * that caller returns to, whose return address is VIA bytes above this
 * one's (CT_VIA_LEVELS such callers at most), and its event keyed as that
 * call's. */
struct ct_planned_call {
	__u32 site;
	__s32 key_delta;
	__u32 fetch;
	__u32 caller_depth;
	__u32 caller_check;
	__u32 via;
};
#define CT_VIA_LEVELS 2
/* The same entries in an open-addressed table (array "planned_slots"),
 * which the program reads without a helper call (an array lookup is
 * inlined: the hash map's cost ~45 ns a CHECK hit): key K is in one of the
 * CT_PLANNED_PROBES slots from ct_planned_slot_of(K) on, or, where those
 * are taken, in "planned_calls" (ct_config.planned_bits: log2 of the
 * slots; user space sets bss planned_overflow once it put one there). */
#define CT_PLANNED_PROBES 8
/* A slot's key once its entry was taken out (ct_probes_drop_planned): no
 * entry's (site ids are below 2^24), and not empty, so the lookups of keys
 * placed past it go on. */
#define CT_PLANNED_GONE (~0ULL)
struct ct_planned_slot {
	__u64 key; /* CT_PLANNED_KEY + 1, written after VAL; 0: empty */
	struct ct_planned_call val;
};
#define ct_planned_slot_of(k, bits) \
	((bits) ? (__u32)(((__u64)(k) * 0x9e3779b97f4a7c15ULL) >> (64 - (bits))) : 0)

/* An interim RET's function's CHECK (map "interim_checks", keyed by the
 * RET's site id): its site id and how far the RET is past the CHECK's
 * probe (link-time addresses of one file), for the CHECK's own lookup of
 * the call's return address, done again at the RET when the probes no
 * longer track the call (calltrace.bpf.c interim_ends). */
struct ct_interim_check {
	__u32 check;
	__s32 delta;
};

/* A CT_PROC_CALLER report's payload: the file of the return address as the
 * kernel side's file lookups (file_of) see it -- on overlayfs the file
 * beneath the overlay, whose device and inode neither stat() nor
 * /proc/PID/maps show -- so user space keys file_calls the same way
 * (ino 0: in no file). */
struct ct_caller_file {
	__u32 dev;
	__u32 pad;
	__u64 ino;
};

/* A return address in another file than the probe's, where a probe sees
 * the end of a call that jumped to untraced code there (map "file_rets",
 * the value unused): planned before recording, so not by its distance from
 * the probe (the two files load anywhere) but by its file and offset, which
 * the BPF side finds from the address (bpf_find_vma).  DEV is the kernel's
 * (MAJOR << 20 | MINOR). */
struct ct_file_ret {
	__u32 site; /* the probe's */
	__u32 dev;
	__u64 ino;
	__u64 off;  /* file offset of the return address */
};

enum ct_gsrc {
	CT_G_NONE = 0, /* not Go code: thread identity, key from SP */
	CT_G_R14 = 1,  /* Go register ABI: g is in R14 at entry and at RET */
	CT_G_TLS = 2,  /* Go ABI0 code: g is in TLS at fsbase + tls_g_off */
};

#define CT_MAX_BINS 16

/* Per-binary facts the kernel side needs (runtime.g layout, TLS slot). */
struct ct_bin_config {
	__s64 tls_g_off;   /* g pointer at fsbase + tls_g_off (usually -8) */
	__u32 goid_off;    /* offsetof(runtime.g, goid) */
	__u32 stack_hi_off;/* offsetof(runtime.g, stack.hi) */
	__u32 m_off;       /* offsetof(runtime.g, m), for g0 -> m.curg */
	__u32 curg_off;    /* offsetof(runtime.m, curg) */
	__u32 is_go;       /* Go code: equal keys + other function = tail call */
	__u32 gopc_off;    /* offsetof(runtime.g, gopc), 0 unknown: read by the
			      goroutine-creation probe's fetch program */
	__u32 goid_site;   /* the site id + 1 of the first of GOID_SITES probes
			      whose hits see every goroutine id the runtime
			      gives out, and every move of a goroutine's
			      stack, before the g runs (GOCREATE, then others
			      that send nothing: plan/goroutines.c), once
			      they are in */
	__u32 goid_sites;  /* 0: each hit reads g.goid and g.stack.hi */
};

/* Frame keys of non-Go frames: deeper frames have lower SP, so flip the
 * sign to make "deeper" mean "larger key" for every kind of code.  The
 * event carries the key of the probed instruction's SP; a caller-side site
 * adds its key_adj (in the site table) to get the callee frame's key. */
#define CT_C_KEY_BASE (1ULL << 47)

/* One probe hit, as it crosses the ring buffer.  56 bytes; the record file
 * re-encodes it to ~8 bytes (see docs/FORMAT.md). */
struct ct_event {
	__u64 ts;   /* bpf_ktime_get_ns() */
	__u64 goid; /* goroutine id; 0 = not a goroutine (C thread or g0) */
	__u64 key;  /* frame key: g.stack.hi - SP (Go), CT_C_KEY_BASE - SP (C, and Go on
		       g0 for no goroutine), sigaltstack top - SP (CT_EV_ALTSTACK, Go) */
	__u32 pid;  /* tgid */
	__u32 tid;
	__u32 site; /* site id from the cookie */
	__u16 len;  /* payload bytes that follow (arguments), 0 without */
	__u16 flags;
	/* Ring buffer only: how many events had been dropped (all CPUs) when
	 * this hit began, read before it reserved its slot.  A thread's or
	 * goroutine's hits are sequential, so a later hit of the one that
	 * lost an event always carries a larger count, whatever other CPUs
	 * do; user space writes a loss record before the first event in the
	 * stream whose count is new (a mark event sent after the drop could
	 * itself be dropped, or land after another CPU's next event). */
	__u32 loss_gen;
	/* The thread's probe hits since its previous event that sent none
	 * (an interim RET of a function without a CHECK that let a call go
	 * by -- with one, the pass is an event: CT_EV_INTERIM_PASS --, a
	 * conditional tail jump
	 * that went on, a goroutine id site, a hit limits cut): what they
	 * cost in CT_SILENT_UNITs, each hit weighed by its class
	 * (silent_weight: its start-up price over an emulated hit's).  Their
	 * time is in the durations around them, and no other event prices it:
	 * replay takes it out on this event's stack (reconstruct.c). */
	__u32 silent;
	/* How much longer than the calibration's hits of their class this
	 * hit's BPF program ran before it read the clock for TS, and the ends
	 * of the thread's hits since its last event (after their clock reads:
	 * the send, capture, the ring buffer), in ns (less: < 0).
	 * The calibration's hits find their lookups in a warm cache; the
	 * program's miss it, and the TLB, between its own work: a CHECK's
	 * lookup of its planned call site took ~1-2.5 us in lefthook's --help
	 * against ~0.2 in the calibration, ~1 us a hit the correction left
	 * in.  Measured per hit (a clock read at the program's start, one
	 * after its send) on a thread's first hits and one in
	 * CT_TIMED_EVERY after (calltrace.bpf.c on_hit); the others carry
	 * the moving average of the thread's timed hits of their class, and
	 * their rare slow parts, timed (a new caller's report, a page faulted
	 * in), so replay takes out what each hit took (reconstruct.c
	 * hit_cost). */
	__s32 extra_ns;
	/* Ring buffer only: the thread's last timed hit's end, as measured
	 * (ns): the calibration (whose hits are all timed) learns each
	 * class's from it. */
	__u32 pad;
};
/* Which hits time themselves (ct_event.extra_ns) once the calibration has
 * learnt the BPF side's times: a thread's first CT_TIMED_FIRST and one in
 * CT_TIMED_EVERY after (calltrace.bpf.c on_hit) */
#define CT_TIMED_FIRST 64
#define CT_TIMED_EVERY 16 /* a power of two */
/* A hit's BPF time before its clock read beyond which it is taken for a
 * wait for the CPU (a sleepable program can be preempted), not priced. */
#define CT_EXTRA_MAX_NS 100000
/* One emulated probe hit's worth of ct_event.silent. */
#define CT_SILENT_UNIT 256

/* Argument capture: a tiny program per site, run by the BPF side to copy
 * registers, stack slots and the memory they point to into the event's
 * payload at fixed offsets (8-byte aligned).  A register op writes 8 bytes at
 * dst.  A memory op writes an 8-byte header at dst (its first u16: bytes
 * copied, or CT_FETCH_FAILED) and the bytes at dst + 8.  Offsets and sizes
 * are bounded so the verifier can check every copy; the event carries what
 * the ops got, compacted as the file keeps it (format/payload.c); user space
 * expands it to read the words. */
#define CT_MAX_OPS 48
#define CT_MAX_PAYLOAD 2048 /* power of two */
#define CT_FETCH_FAILED 0xffff

enum ct_fetch_code {
	CT_OP_REG = 1,       /* 8 bytes: register `reg` (pt_regs slot) plus `off`
				(a result the caller changed by a constant) */
	CT_OP_STACK = 2,     /* mem: `size` bytes at SP + off */
	CT_OP_REGMEM = 3,    /* mem: `size` bytes at regs[reg] + off */
	CT_OP_DEREF = 4,     /* mem: `size` bytes at *(u64 *)(payload + src) + off */
	CT_OP_DEREF_LEN = 5, /* mem: min(*(u64 *)(payload + src2) * scale, size)
				bytes at *(u64 *)(payload + src) + off */
	CT_OP_DEREF_STR = 6, /* mem: a NUL-terminated string of at most `size`
				bytes at *(u64 *)(payload + src) + off (C char *) */
	CT_OP_DEREF_SPAN = 7,/* mem: min(*(u64 *)(payload + src2) - *(u64 *)(payload
				+ src), size) bytes at *(u64 *)(payload + src) + off
				(items between a begin and an end pointer) */
	CT_OP_STACKWORD = 8, /* 8 bytes, like a register: the word at SP + off
				(a result the caller saved before its exit site) */
	CT_OP_REGDIFF = 9,   /* 8 bytes, like a register: register `reg` minus the
				word at SP + off (a result the caller added to a
				value it still keeps on its stack) -- or, src k + 1,
				at regs[k] + off (added to a struct field); the
				hit's values are dropped if that one cannot be read */
	CT_OP_MEMWORD = 10,  /* 8 bytes, like a register: the `size` (1-8) bytes
				at regs[reg] + off, zero-extended (a result the
				caller stored into a struct it points to); the
				hit's values are dropped if they cannot be read,
				or (scale 1) if they overlap [SP + (s16)src,
				SP + (s16)src2), stack written on the way */
};
#define CT_MEM_HDR 8

struct ct_fetch_op {
	__u8 code;
	__u8 reg;
	__u16 dst;   /* payload offset (memory ops: of the u16 header) */
	__u16 size;  /* bytes, or the most bytes for DEREF_LEN */
	__u16 src;   /* DEREF*: payload offset of the pointer */
	__u16 src2;  /* DEREF_LEN: payload offset of the length */
	__u16 scale; /* DEREF_LEN: bytes per length unit */
	__s32 off;
};

struct ct_fetch {
	__u16 nops;
	__u16 size; /* payload bytes (the layout's end) */
	/* At an exit site the caller reached after writing its own stack:
	 * memory ops (REGMEM, DEREF*) among ops [guard_from, guard_to) whose
	 * bytes overlap [SP + guard_lo, SP + guard_hi) read as failed, as what
	 * the results pointed to may have been overwritten there. */
	__s16 guard_lo, guard_hi;
	__u8 guard_from, guard_to;
	__u16 pad;
	__u32 pad2; /* a multiple of 8 bytes: the fetch array's stride, written through mmap */
	struct ct_fetch_op ops[CT_MAX_OPS];
};

/* event.flags */
#define CT_EV_ARGS_DROPPED 0x1 /* the site fetches, but this hit could not */
#define CT_EV_MARKER 0x2       /* not a call event: only says the goroutine's stack
				  is now at `key` (frames deeper were unwound) */
#define CT_EV_SYSSTACK 0x4     /* ran on a system stack (g0, e.g. C called by cgo):
				  goid is the goroutine it ran for (m.curg) */
#define CT_EV_DELAYED 0x8      /* an entry sent at its return (--min-duration):
				  ts is the entry time, arguments were not kept */
#define CT_EV_UNWATCHED 0x20   /* a tail jump to untraced code (CT_COOKIE_RETCHECK)
				  whose return address no probe watches: the
				  call's end will not be observed */
#define CT_EV_WATCHED 0x100   /* a tail jump to untraced code (CT_COOKIE_RETCHECK)
				  whose return address a probe watches: that
				  code returns there, so a traced function
				  entering at its key before is where it jumped
				  on to (a PLT stub to a library's function) */
#define CT_EV_PROC 0x10        /* not a call: a traced process forked, exec'd
				  (--follow) or a thread of it ended; site =
				  CT_PROC_*, tid = the thread, goid = the child
				  for a fork */
#define CT_EV_UNOBSERVED_DONE 0x80 /* the innermost call of its goroutine/thread
				  entered from a call site without an exit probe
				  (a CHECK's) has ended before this hit: the word
				  at its return address slot changed */
/* How many of a goroutine's/thread's calls entered from call sites without
 * an exit probe the probes track at once, the innermost (an interim RET
 * ends them; the others' RETs look their return address up again) */
#define CT_UNOBSERVED_DEPTH 4
#define CT_EV_INTERIM_PASS 0x200 /* an interim RET whose call the probes do
				  not track and whose call site has an exit
				  probe now: added while the call ran, or there
				  when it began (then the call has its own exit) */
#define CT_EV_ALTSTACK 0x40    /* a thread's hit on its alternate signal stack
				  (sigaltstack): a signal handler's frames */
#define CT_EV_NOT_TAKEN 0x400  /* the probe's conditional tail jump (`je g`,
				  CT_COOKIE_JCC) goes on in its function this
				  time: its tail-jump roles do not apply */
#define CT_PROC_FORK 1
#define CT_PROC_EXEC 2 /* (its event's key: the inode of the binary exec'd) */
#define CT_PROC_EXIT 3        /* its last thread ended: the process is gone */
#define CT_PROC_THREAD_EXIT 4 /* one thread ended, others run on */
/* Written by user space (record/session.c), never by the probes: the
 * interim RETs of function `child` (a file function id, CT_SITEF_INTERIM)
 * are not probed from ts on; pid = the process, tid 0.  (Replay: a call
 * of it without an exit probe still open when its thread ends before then
 * had not returned -- one of them would have ended it.) */
#define CT_PROC_INTERIM_GONE 6
/* A thread of the program waited for its process's mmap_lock while
 * calltrace made or closed probe links (the kernel holds the lock to write
 * and take out breakpoints): calltrace's time, which replay takes out of
 * the calls open on it as it takes out probe hits.  ts = the wait's end,
 * key = how long it was (ns), goid = the goroutine that last hit a probe
 * on the thread (0: a thread's own calls). */
#define CT_PROC_STALL 7
/* Written by user space when it attaches to a process already running
 * (record -p): calltrace began making the probe links of process pid at ts
 * (child 0), and all of them were in at ts (child 1).  The kernel makes a
 * link's probes live one after another and the links go in one by one,
 * while the program runs: a call entered in between may have ended
 * before the probe that would see its end was live.  (Replay: such a
 * call, closed other than by its own exit, is unobserved, never unwound.) */
#define CT_PROC_PROBES_IN 8
/* A traced thread was off CPU (the kernel's scheduler ran something else on
 * it) and runs again: ts = when it ran again, key = how long it was off
 * (ns), goid = the goroutine it was running (read at the switch: a Go
 * thread idle in the runtime's scheduler sends none), 0 for a thread's own
 * calls; child = CT_OFFCPU_* flags.  Not calltrace's time: the durations
 * keep it; replay says how much of a call's it was (ct_call.off_preempted...). */
#define CT_PROC_OFFCPU 10
#define CT_OFFCPU_PREEMPTED 1 /* it could have run on (runnable): the CPU was taken */
#define CT_OFFCPU_BY_TRACER 2 /* ... by calltrace's own thread */
#define CT_OFFCPU_GOSCHED 4   /* a goroutine the Go scheduler took off its thread
				 (record --parks), runnable until it ran again:
				 with CT_OFFCPU_PREEMPTED; tid = where it ran again */
#define CT_OFFCPU_AT_END 8    /* written by the recorder at the trace's end
				 (ts): the thread was still off CPU then,
				 the time is up to the end (its own record
				 came after it, or never) */
/* A goroutine that the Go runtime parked is runnable again (runtime.ready,
 * record --parks: a GOREADY probe): ts = then, goid = that goroutine, tid
 * = the thread that readied it.  Its park (a runtime.gopark call) lasts
 * until it runs: the rest of it, it waited for the Go scheduler. */
#define CT_PROC_READY 11
/* GOREADY sites' key_adj */
#define CT_GOSCHED_READY 0
#define CT_GOSCHED_DESCHED 1
#define CT_GOSCHED_EXECUTE 2
#define CT_PROC_CALLER 5      /* a CHECK saw a return address it has no planned
				 call site for, or a tail jump to untraced code
				 one no probe watches (CT_EV_UNWATCHED), the first
				 time: goid = CT_PLANNED_KEY(probe site, return
				 address - probe), key = the return address (as
				 the process maps it); sent just before that
				 call's event.  User space adds an exit probe there
				 for the calls after it (that call itself ends
				 unobserved).  Not written to the file. */
/* A watched exit probe of an indirect call (CT_COOKIE_ICALL_EXIT) was hit
 * goid times, a power of two from CT_ICALL_FIRST_REPORT: key = its site.
 * User space weighs what its hits that close no traced call cost against
 * the RETs of the functions whose calls it closes, and may take it out
 * (session.c weigh_icall_exit).  Not written to the file. */
#define CT_PROC_ICALL_EXIT 9
#define CT_ICALL_FIRST_REPORT 32
/* ... at most so many probes watched (map "icall_exit_hits") */
#define CT_ICALL_EXITS_MAX 4096
/* How many return addresses the probes report (CT_PROC_CALLER) at most:
 * each costs user space a plan and part of a probe link.  At least
 * CT_MAX_CALLERS; a program with many functions observed from their
 * callers gets more (session.c callers_budget), up to CT_MAX_CALLERS_BIG. */
#define CT_MAX_CALLERS 1024
#define CT_MAX_CALLERS_BIG 8192

/* Record-time limits and sampling, decided in the kernel so that what is
 * cut never crosses the ring buffer.  They need a shadow stack per
 * goroutine in BPF (struct ct_gstate), tracked CT_LIM_FRAMES deep. */
#define CT_LIM_DEPTH 0x01     /* --max-depth */
#define CT_LIM_MINDUR 0x02    /* --min-duration */
#define CT_LIM_ROOT 0x04      /* --root */
#define CT_LIM_SAMPLE 0x08    /* --sample N: 1 in N root calls */
#define CT_LIM_SAMPLE_G 0x10  /* --sample-goroutines N */
#define CT_LIM_SHADOW 0x1f    /* any of the above: shadow stacks on */
#define CT_LIM_MAXEV 0x20     /* --max-events */
#define CT_LIM_FRAMES 64

/* Record-time settings written by user space before load (.rodata). */
struct ct_config {
	__u32 wake_bytes; /* a CPU forces a wakeup once it sent this much since its last one */
	__u32 filter_pids;/* 1: only tgids present in the traced_pids map */
	__u32 limits;     /* CT_LIM_* */
	__u32 max_depth;
	__u64 min_dur_ns;
	__u64 max_events;
	__u32 sample_n;
	__u32 sample_g_n;
	__u64 follow_ino; /* --follow: the program's binary; an exec of any other
			     stops the process until user space has probed it */
	__u32 report_callers; /* CT_PROC_CALLER: user space adds exit probes
				 at return addresses found while recording */
	__u32 min_addr;   /* vm.mmap_min_addr: nothing is ever mapped below it */
	__u32 file_rets;  /* "file_rets" has entries: look there too */
	__u32 planned_bits; /* "planned_slots" has 1 << planned_bits entries */
	__u32 self_tgid;  /* calltrace's own process (CT_OFFCPU_BY_TRACER) */
};
/* The per-binary facts live in a writable global (bss), not in ct_config:
 * binaries exec'd under --follow are added after the programs are loaded. */

/* Counters user space reads at the end (array map "counters"). */
enum ct_counter {
	CT_CNT_CUT = 0,      /* events not sent because of limits or sampling */
	CT_CNT_EMITTED = 1,  /* events sent (for --max-events) */
	CT_CNT_SAMPLE = 2,   /* root calls seen (for --sample) */
	CT_CNT_OVERFLOW = 3, /* calls deeper than CT_LIM_FRAMES while limits were on */
	CT_CNT_UNPLANNED = 4,/* calls of caller-observed functions from unplanned call sites */
	CT_CNT_INDIRECT = 5, /* calls of address-taken functions from call sites not
				known yet (their exits are added as they are found) */
	CT_CNT_INTERIM_ENDS = 6, /* such calls whose end an interim RET saw */
	CT_CNT_INTERIM_PASSES = 7, /* interim RET hits that sent nothing (their cost) */
	CT_CNT_WARM_UPS = 8, /* hits of the warm-up probe (session.c warm_up) */
	CT_CNT_JCC_SILENT = 9, /* conditional tail jumps not taken, alone on their probe: no event */
	CT_CNT_OFFCPU_DROPPED = 10, /* times off CPU not sent: the ring was over half full */
	CT_CNT_LIMITS_FULL = 11, /* stacks that began inside traced calls while the limits'
				    table (gstates) was about full: one may have pushed out another's */
	CT_CNT_MAX = 12,
};

#endif
