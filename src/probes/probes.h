/* Loading the BPF programs and attaching them to probe sites.  All sites of
 * one binary go into one uprobe_multi link per program (entry, exit): a
 * perf-event uprobe per site takes minutes to detach at a few thousand
 * sites, one link takes milliseconds.  Links die with the tracer's file
 * descriptors, so even a SIGKILLed tracer leaves no probe behind. */
#ifndef CT_PROBES_H
#define CT_PROBES_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/event.h"
#include "util/util.h" /* struct ct_map */

struct ct_costs; /* format/calib.h */

struct ct_probes;

struct ct_probes_opts {
	uint64_t ringbuf_bytes; /* power of two, >= page size */
	bool filter_pids;       /* trace only tgids added with ct_probes_add_pid */
	uint32_t nsites;        /* site ids with a slot in the fetch map (later ones: a hash) */
	/* distinct fetch programs among them, the most (ct_fetch_programs):
	 * identical programs share one slot of the fetch map */
	uint32_t nprograms;
	struct ct_bin_config bins[CT_MAX_BINS];
	/* record-time limits and sampling (CT_LIM_*), decided in the kernel */
	uint32_t limits, max_depth, sample_n, sample_g_n;
	uint64_t min_dur_ns, max_events;
	uint64_t follow_ino;
	/* --exit=auto: CHECKs report return addresses the plan did not know
	 * (CT_PROC_CALLER), user space adds their exits */
	bool report_callers;
	uint32_t max_callers; /* ... at most so many (0: CT_MAX_CALLERS) */
	/* the most planned call sites ever added (ct_probes_add_planned), 0:
	 * not known in advance (binaries exec'd under --follow add theirs) */
	uint32_t max_planned;
	/* how many return addresses in other files are planned (ct_probes_add_file_ret) */
	uint32_t nfile_rets;
	/* the most conditional tail jumps' probes (ct_probes_set_jcc) */
	uint32_t njcc;
};

/* Loads the BPF object.  Fails with one clear line (not root, no BPF). */
struct ct_probes *ct_probes_load(const struct ct_probes_opts *o);
/* What a BPF verifier LOG (level 1) says of a rejection, in one line in
 * OUT (N bytes): its last line but the statistics, and the instruction
 * before it ("" if none).  Returns OUT. */
const char *ct_verifier_reason(const char *log, char *out, size_t n);

/* Sites for one binary: OFFSETS are file offsets, COOKIES from CT_COOKIE. */
struct ct_attach {
	const char *path; /* the binary, e.g. "/proc/PID/exe" for an attach */
	int pid;          /* only this process (0: any, filtered in BPF) */
	const uint64_t *entry_offsets, *entry_cookies;
	size_t nentry;
	const uint64_t *exit_offsets, *exit_cookies;
	size_t nexit;
};
int ct_probes_attach(struct ct_probes *p, const struct ct_attach *a);
int ct_probes_add_pid(struct ct_probes *p, uint32_t pid);
/* PID is traced no more (its events are not sent from now on). */
void ct_probes_del_pid(struct ct_probes *p, uint32_t pid);
/* Closes the links made for process PID alone (its program's, its
 * libraries', the exits found in them): after it exec'd another program,
 * whose hits of the libraries' probes would cost it all the same.  Their
 * slots stay named until ct_probes_close_link.  How many were open. */
size_t ct_probes_close_pid_links(struct ct_probes *p, uint32_t pid);
/* Tracepoints reporting the end of every thread and process added with
 * ct_probes_add_pid, and their execs, as CT_EV_PROC events; with FOLLOW
 * also their forks (children are added; without, forks are counted), and an exec of another binary is
 * held stopped until it is probed (else none is held: a launched program's
 * own, or -p's process running another program).  With OFFCPU, the times
 * their threads are off CPU (CT_PROC_OFFCPU). */
int ct_probes_watch(struct ct_probes *p, bool follow, bool offcpu);
/* --follow: starts the guard, a process that continues whatever the
 * kernel side still holds stopped once calltrace is gone, however it
 * ended (probes.c). */
int ct_probes_guard(struct ct_probes *p);
/* PID, held by the kernel side, was continued. */
void ct_probes_released(struct ct_probes *p, uint32_t pid);
/* How many of the processes added (and their children, FOLLOW) are alive. */
size_t ct_probes_traced(struct ct_probes *p);
/* The traced threads off CPU now, as ct_switch left them (call once the
 * tracepoints are out: nothing changes it then): FN(CTX, pid, tid, since,
 * goid, CT_OFFCPU_* flags) for each that went off CPU running traced code
 * (ct_switch's off_since, which its record would have said when it ran
 * again).  Returns how many, or -1 with ct_fail() if the kernel cannot say
 * (no thread pidfds: Linux < 6.9). */
typedef void (*ct_still_off_fn)(void *ctx, uint32_t pid, uint32_t tid, uint64_t since, uint64_t goid,
				uint32_t flags);
int ct_probes_still_off(struct ct_probes *p, ct_still_off_fn fn, void *ctx);
/* Without FOLLOW: how many processes those added forked (counted only). */
uint64_t ct_probes_forks_untraced(struct ct_probes *p);
/* With FOLLOW: how many processes were forked while the most the kernel
 * side keeps (8192) were traced, and so were not. */
uint64_t ct_probes_forks_unfollowed(struct ct_probes *p);
/* The runtime facts of binary BIN (a binary exec'd under --follow). */
void ct_probes_set_bin(struct ct_probes *p, uint32_t bin, const struct ct_bin_config *c);
/* Hits of binary BIN take a thread's cached goroutine id while no goroutine
 * got an id since: sites FIRST..FIRST+N-1 (attached) are the probes whose
 * hits see each one the runtime gives (ct_plan_goid_site). */
void ct_probes_set_goid_sites(struct ct_probes *p, uint32_t bin, uint32_t first, uint32_t n);
/* A planned call site of a CHECK site: CT_PLANNED_KEY(site, delta) and the
 * CALL site a hit from it is sent as. */
int ct_probes_add_planned(struct ct_probes *p, uint64_t key, const struct ct_planned_call *call);
/* Puts KEY's entry (or its new value) in one of its slots of SLOTS (1 <<
 * BITS of them, struct ct_planned_slot); false if they are all taken. */
bool ct_planned_slot_put(struct ct_planned_slot *slots, uint32_t bits, uint64_t key, const struct ct_planned_call *call);
/* Takes KEY's entry out (a slot keeps CT_PLANNED_GONE): a CHECK's call
 * from there is one without an exit probe from now on. */
int ct_probes_drop_planned(struct ct_probes *p, uint64_t key);
/* Counts the hits of exit probe SITE (cookie CT_COOKIE_ICALL_EXIT), which
 * reports each doubling (CT_PROC_ICALL_EXIT); at most CT_ICALL_EXITS_MAX. */
int ct_probes_watch_icall_exit(struct ct_probes *p, uint32_t site);
/* the most slots: 6 MiB */
#define CT_PLANNED_MAX_BITS 18
/* The condition of the conditional tail jump probed at SITE (event.h
 * CT_COOKIE_JCC: its low 4 bits of opcode, | CT_JCC_ALONE). */
int ct_probes_set_jcc(struct ct_probes *p, uint32_t site, uint32_t cond);
/* Interim RET SITE's function's CHECK (calltrace.bpf.c interim_ends). */
int ct_probes_set_interim_check(struct ct_probes *p, uint32_t site, const struct ct_interim_check *c);
/* A return address in another file where a probe sees a call end. */
int ct_probes_add_file_ret(struct ct_probes *p, const struct ct_file_ret *k);
/* A call site of a CHECK site in another file (K: the CHECK's site, the
 * return address's file and offset), found while recording, and the CALL
 * site a hit from it is sent as. */
int ct_probes_add_file_call(struct ct_probes *p, const struct ct_file_ret *k, const struct ct_planned_call *call);
/* The distinct fetch programs seen: all RETs of a function read the same
 * results, and most exit sites of its calls too (14,577 sites of net/http
 * and crypto had 581 distinct programs), so the fetch map holds each once
 * and a site id only the index of its program. */
struct ct_fetch_programs {
	struct ct_map by_hash; /* hash of a program -> its list of struct fetch_program */
	uint32_t n;            /* programs so far + 1 (index 0 is none) */
};
/* The index of program F among T's, added (*ADDED) if new and T has fewer
 * than MOST; UINT32_MAX if it has not. */
uint32_t ct_fetch_program_index(struct ct_fetch_programs *t, const struct ct_fetch *f, uint32_t most, bool *added);
void ct_fetch_programs_free(struct ct_fetch_programs *t);

/* The class of SITE's hits (before attaching): what one that sends no
 * event costs is weighed by it (calltrace.bpf.c silent_hit) ... */
void ct_probes_set_site_class(struct ct_probes *p, uint32_t site, enum ct_hit_class cls);
/* ... with the weights of C, the start-up calibration's prices. */
void ct_probes_set_silent_weights(struct ct_probes *p, const struct ct_costs *c);
/* ... and what the BPF program took before its clock read and after it
 * in the calibration's hits of each class, and capturing the calibration's
 * values more (ns): a hit's ct_event.extra_ns is what its own took beyond
 * (the ends of the thread's hits since its last event too). */
void ct_probes_set_bpf_times(struct ct_probes *p, const uint32_t pre_ns[CT_HIT_CLASSES],
			     const uint32_t post_ns[CT_HIT_CLASSES], uint32_t args_ns);
/* Installs the argument fetch program of SITE (before attaching). */
int ct_probes_set_fetch(struct ct_probes *p, uint32_t site, const struct ct_fetch *f);
/* The probe at OFFSET of PATH (ct_warm_up_site) that pays a process's
 * first hit and first single-step before its traced code runs: closed
 * with the others.  -1 if it could not be made (no uprobe_multi links). */
int ct_probes_warm_up(struct ct_probes *p, const char *path, int pid, uint64_t offset);
/* Exit probes in a link of their own that user space closes before the end
 * (interim RETs, session.c): its slot, or -1 with errno (EOPNOTSUPP: no
 * uprobe_multi links; EMFILE: none left; the kernel's: it refused; those
 * sites stay without probes). */
int ct_probes_attach_link(struct ct_probes *p, const char *path, int pid, const uint64_t *offsets,
			  const uint64_t *cookies, size_t n);
/* How many more links there is room for. */
size_t ct_probes_links_left(const struct ct_probes *p);
/* Closes the link in SLOT: its breakpoints go at once; the kernel's grace
 * period after that is waited for on a thread of its own. */
void ct_probes_close_link(struct ct_probes *p, int slot);
/* The interim RETs that let a call go by (another probe sees it end) since
 * the last time: at most N site ids into SITES and how many times into
 * PASSES; how many sites. */
size_t ct_probes_interim_passed(struct ct_probes *p, uint32_t *sites, uint32_t *passes, size_t n);
/* Removes every probe (closes the links). */
void ct_probes_detach(struct ct_probes *p);

typedef int (*ct_event_cb)(void *ctx, const struct ct_event *e, const void *payload);
/* What CB returns to stop the drain after this event (it queued work that
 * must be done before the events behind it are read); the poll returns. */
#define CT_EVENT_PAUSE (-EAGAIN)
/* Drains the ring buffer, calling CB per event; waits at most TIMEOUT_MS for
 * data (the BPF side wakes us only when the buffer fills up).  Returns the
 * events read (> 0 also when CB paused it), or -1. */
int ct_probes_poll(struct ct_probes *p, int timeout_ms, ct_event_cb cb, void *ctx);
uint64_t ct_probes_lost(struct ct_probes *p);
/* The drops so far as the events' loss_gen counts them (ct_event). */
uint32_t ct_probes_loss_gen(struct ct_probes *p);
/* Probe hits so far on each CPU (the first N): how many CPUs it wrote. */
size_t ct_probes_hits(struct ct_probes *p, uint64_t *per_cpu, size_t n);
/* Probe hits so far on all CPUs into *TOTAL; -1 if they cannot be read. */
int ct_probes_hits_total(struct ct_probes *p, uint64_t *total);
/* The probe program's stack frame per BPF function (main program first),
 * in bytes, as its verifier reported them: "48+16+8" ("" if it did not).
 * The kernel (6.14+) puts a frame that rounds up to 64 bytes or more on a
 * per-CPU private stack, where the program, sleepable, must not keep one
 * (calltrace.bpf.c, struct run). */
const char *ct_probes_stack_depth(struct ct_probes *p);
/* A kernel-side counter (enum ct_counter). */
uint64_t ct_probes_counter(struct ct_probes *p, enum ct_counter which);
void ct_probes_free(struct ct_probes *p);

#endif
