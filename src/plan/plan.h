/* The plan: which functions of a target get probed, at which sites, with
 * which cookie.  Second stage: target -> plan -> probes. */
#ifndef CT_PLAN_H
#define CT_PLAN_H

#include "plan/fetch.h"
#include "plan/sites.h"
#include "format/tracefile.h"
#include "target/fde.h"
#include "target/target.h"

/* --exit: where calls end (and start) are observed. */
enum ct_exit_mode {
	CT_EXITS_AUTO = 0, /* from the callers where every call is seen there, else RET */
	CT_EXITS_RET = 1,  /* callee side: entry and every RET (the fallback) */
};

/* One direct call of a function observed from its caller (--exit=auto). */
struct ct_callsite {
	uint64_t at, ret;               /* the call instruction, its return address */
	const struct ct_func *caller;
	/* the walk from the return address, what choosing its exit reads;
	 * the whole of it (where each register's value went) is
	 * ct_callsite_walk's: FULL where the plan keeps it (p->kept_walks
	 * owns it, copies of the call site share it), else walked again */
	struct ct_exit_brief walk;
	const struct ct_exit_walk *full;
	uint8_t how;                    /* chosen: CT_EXIT_EMULATED/STEPPED/TAILPOS/VIA */
	uint64_t exit;                  /* the exit probe (0: tail position) */
	int32_t sp_delta;               /* SP at the exit probe minus SP at the return */
	uint32_t call_site, exit_site;  /* plan site indices (exit: CT_NOSITE if none) */
	/* the runtime's call site of every closure (goexit, deferreturn): one
	 * exit probe there closes the calls of all of them */
	bool shared;
	/* TAILPOS: the caller returns the results as they are, and they are
	 * read at the exits of the caller's own calls (plan function
	 * tail_caller), in a CT_SITE_TAILRES role of each */
	bool tail_results;
	uint32_t tail_caller;
	/* TAILPOS: the caller returns the sum of the one result and the one
	 * of the call just before it, which it kept in its frame (`return
	 * f(n-1) + f(n-2)`): that result is the caller's less the other's
	 * (the reconstruction works it out, CT_SITE_TAILDIFF) */
	bool tail_less_prev;
	/* at an indirect call instruction of traced code (plan/callers.c
	 * plan_indirect_sites): planned for every address-taken function it
	 * may call, each with its own exit site there; one whose results are
	 * read as an earlier one's (the same program) rides on that one's
	 * probe: rides_on is its plan function + 1 (0: none), rides_k its
	 * index in that function's calls */
	bool icall;
	uint32_t rides_on, rides_k;
	/* the exit is at an indirect call instruction whose callee the code
	 * shows (callers.c exits_at_deferred_closures): that callee's plan
	 * function + 1, whose CHECK, the call from there, sees this call end
	 * (0: none) */
	uint32_t closed_by;
	/* a place where a wrapper that makes one of the function's calls last
	 * (CT_EXIT_VIA) may return to, planned before the program runs
	 * (callers.c plan_via_returns): the runtime's (wrapper NULL) or the
	 * open-coded defer of WRAPPER in the function it was made in */
	bool via_place;
	const struct ct_func *wrapper;
};

struct ct_plan_func {
	const struct ct_func *fn; /* in the target */
	uint64_t entry_site;
	bool entry_emulated;
	bool entry_optimized; /* a 5-byte nop the kernel probes without a trap */
	bool falls_through;   /* runs on into the code at its end (CT_FN_FALLS) */
	bool parks_only;      /* traced for record --parks alone (CT_FN_PARKS) */
	uint32_t nexits; /* the ways out of its code (RETs, tail jumps): list's EXITS */
	/* --exit=auto: entries at its call sites and exits at their return
	 * sites (in_caller), or why not (RET probes kept). */
	bool in_caller;
	char *why;                /* (indirect: where its address is taken) */
	/* it never returns (plan.c plan_noreturn, an enum ct_noreturn): no
	 * exit probe after a call of it, none found while recording */
	uint8_t noreturn;
	struct ct_callsite *calls;
	size_t ncalls;
	uint32_t check_site;      /* CHECK probe at its own cheap entry, CT_NOSITE if none */
	/* Observed at its entry and RETs, but a call may end in untraced code it
	 * tail-jumps to: `calls` are its direct calls, each with an exit probe
	 * at the return address (plan/callers.c). */
	bool return_sites;
	/* The return addresses of its calls where a probe sees the call end
	 * (its planned calls' and, for return_sites, the direct calls whose
	 * return address some probe holds already); and, if it tail-jumps to
	 * untraced code (C), those of every function whose call may go on in
	 * that jump (itself, and those tail-jumping to it): where the BPF
	 * side looks the return address up (CT_COOKIE_RETCHECK). */
	CT_VEC(uint64_t) watched;
	CT_VEC(uint64_t) tail_watch;
	bool tail_checked;
	bool results;             /* results are captured (exits must keep them) */
	/* a call of it from where a CT_EXIT_VIA caller returns to could not be
	 * planned: those calls have their exits at the return address again,
	 * and calls found from now on do too (ct_plan_unvia) */
	bool no_via;
	/* Its SPILL site (plan/spill.c: arguments passed in SSE registers, read
	 * where its prologue stored them), CT_NOSITE if none. */
	uint32_t spill_site;
	/* in_caller, but its address is taken (a Go interface method, a
	 * function value): its CHECK reports calls from other sites, whose
	 * exits are added while recording (ct_plan_found_caller) */
	bool indirect;
	/* in_caller, and some of its planned calls are through a GOT slot
	 * (`call *slot(%rip)`, single-stepped): its CHECK sends them, also
	 * where its entry is single-stepped (after the prologue if it can) */
	bool slot_called;
	/* indirect or slot_called, its entry single-stepped: its CHECK is after the
	 * prologue, at check_walk->site, which the walk from the entry
	 * describes (ct_check_after_entry: how far SP went down, where its
	 * arguments are); NULL: at its entry site */
	struct ct_exit_walk *check_walk;
	/* indirect: its RETs (not probed), and whether they are now: a call
	 * site found while recording whose exit would be single-stepped where
	 * other paths of its caller go too has the calls end at them instead
	 * (ct_plan_found_caller), and later ones need no exit probe */
	CT_VEC(uint64_t) rets;
	bool rets_probed;
	/* its RETs are interim RETs, still probed (plan.c emit_function);
	 * while recording: how many calls they let go by (another probe saw
	 * them end), and when a caller of it was last reported (session.c) */
	bool interim;
	/* ... and stay: a call of it made last by a wrapper, whose caller no
	 * probe can watch, ends at them (ct_plan_rets_from_now) */
	bool interim_kept;
	uint32_t interim_passes;
	bool interim_said_gone; /* the file was told they are out (session.c interim_gone) */
	uint64_t interim_report_ns;
	/* Its captures as seen at its own entry and RET (ct_plan_args), for list. */
	struct ct_site_fetch *args_view, *results_view;
};

#define CT_NOSITE UINT32_MAX

/* A function's interim RETs go once no new caller of it was reported for
 * so long, and they let so many calls go by that ended at exit probes
 * (session.c settle_interim). */
#define CT_INTERIM_QUIET_MS 20
#define CT_INTERIM_WORTH 16

/* (its fields in an order without holes: 72 bytes, a plan has 200,000 of
 * them for a program of restic's size) */
struct ct_plan_site {
	uint64_t addr;   /* link-time vaddr */
	uint64_t offset; /* file offset, for the uprobe */
	uint64_t target_addr; /* TAIL/RESTART: jump or call target */
	struct ct_callsite *cs; /* CALL/RETSITE: the call */
	uint32_t func;   /* plan function index, CT_NOFUNC for markers */
	uint32_t target_func; /* TAIL: traced function at target_addr */
	int32_t key_adj; /* CALL/RETSITE: added to the event's key (callee frame) */
	uint32_t call_site; /* RETSITE: the CALL site whose call returns here */
	uint32_t next;   /* the next role of the same probe, CT_NOSITE if none */
	uint32_t sp_drop; /* CHECK: bytes SP is below the entry's there (the cookie says) */
	/* RETSITE at an indirect call instruction: the site (an exit of the
	 * same call instruction, the same fetch program) on whose probe it
	 * rides, a companion no `next` names (CT_NOSITE: none) */
	uint32_t rides;
	uint16_t flags;  /* CT_SITEF_* (format/tracefile.h) */
	uint8_t kind;    /* enum ct_site_kind */
	uint8_t gsrc;    /* enum ct_gsrc */
	/* in another module than the plan's target (a return address found
	 * while recording): addr and offset are that module's, its bytes are
	 * not the target's (its hit flags were set when it was planned) */
	bool elsewhere;
	/* TAIL of a PLT stub observed from its callers: a role of a call's
	 * probe, after its CALL (plan.c emit_function), never a probe of its
	 * own, no return check */
	bool at_call;
	/* RET probed only until its function's callers are found (an interim
	 * RET, emit_function): a probe of its own, never a role of another's,
	 * in a link of its own that user space closes then (session.c) */
	bool interim;
	/* TAIL: a conditional jump's condition + 1 (ct_exit_site.cond), 0: always */
	uint8_t cond;
	/* a probe taken out while recording (session.c weigh_icall_exit): no
	 * exit found later rides on it (ride_found_exit) */
	bool gone;
};

struct ct_tail_user {
	uint32_t caller; /* tail_caller: the function returning the results */
	uint32_t func;   /* the plan function called, and its call */
	uint32_t call;
};

struct ct_plan_planned {
	uint64_t key;               /* CT_PLANNED_KEY(CHECK site, return address - CHECK) */
	struct ct_planned_call val; /* CALL site, key delta */
};

struct ct_plan_skip {
	const struct ct_func *fn;
	char *why;
};

struct ct_args_opts;

struct ct_selection {
	const char **trace;   /* -F globs; none = the default set */
	size_t ntrace;
	const char **exclude; /* -N globs */
	size_t nexclude;
	bool lenient;         /* exact names may be missing (--follow: other binaries) */
	enum ct_exit_mode exits;
	bool no_interim;      /* auto: no interim RETs (record --no-interim) */
	bool go_markers;      /* Go: probe runtime.recovery/deferreturn (no record-time limits) */
	/* C++: probe __cxa_begin_catch where the file has it (libstdc++, or
	 * a program linked with it statically): a CATCH marker (no
	 * record-time limits) */
	bool catch_marker;
	/* A library traced with LIB: globs (session.c split_libraries):
	 * address-taken and exported functions keep RETs, and none gets
	 * interim RETs. */
	bool fixed_sites;
	/* The captures that will be planned (ct_plan_args), NULL for none:
	 * a call whose results are captured needs an exit probe that sees them. */
	const struct ct_args_opts *args;
	/* Record-time limits are in force: the kernel's shadow stack follows
	 * calls only, so no SPILL sites (plan/spill.c). */
	bool limits;
	/* Go (record --parks): runtime.gopark traced too, whatever -F/-N say
	 * (CT_GO_GOPARK): where a goroutine waited is a call of its own */
	bool go_parks;
	/* ... and the Go scheduler's markers (GOREADY sites): its time off CPU */
	bool go_scheduler;
};

/* What to capture besides the calls themselves. */
struct ct_args_opts {
	bool enabled;           /* --no-args turns it off */
	const char **args;      /* -A 'GLOB[@name,name]': arguments of these */
	size_t nargs;
	const char **rets;      /* -R GLOB: results of these */
	size_t nrets;           /* no -A and no -R: everything */
	bool go_parks;          /* record --parks: runtime.gopark's `reason` (only) too */
	struct ct_fetch_opts fetch;
};

struct ct_pads;
struct ct_plan {
	const struct ct_target *t;
	/* the code's exception landing pads, for calls found while recording
	 * (plan/pads.h; made at the first need) */
	struct ct_pads *pads;
	/* per function, its tail jumps' probe sites and targets, for calls
	 * found while recording (ct_plan_tail_probes_of; made at the first need) */
	struct ct_tail_index *tail_index;
	CT_VEC(struct ct_plan_func) funcs;
	CT_VEC(struct ct_plan_site) sites;
	size_t cheap_entries, slow_entries;
	size_t trapless_entries; /* of the cheap ones, at 5-byte nops (no trap) */
	enum ct_exit_mode exits;
	const char *exits_note; /* why everything kept RET probes, if so */
	/* address-taken functions observed from their callers get interim
	 * RETs (not under --follow, record-time limits or --no-interim) */
	bool interim_rets;
	size_t interim_funcs; /* ... so many */
	size_t in_caller;       /* functions observed from their callers */
	/* CHECK sites' planned callers: CT_PLANNED_KEY(site, delta) and the
	 * CALL site (plan index) each stands for */
	CT_VEC(struct ct_plan_planned) planned;
	/* call sites found while recording (ct_plan_found_caller), each once */
	CT_VEC(struct ct_callsite *) found_calls;
	/* the planned calls in tail position whose results their caller
	 * returns (tail_results), by that caller: made at the first call found
	 * while recording (each one's exit reads them: callers.c
	 * add_tail_result_roles), not a walk over every call each time */
	CT_VEC(struct ct_tail_user) tail_users;
	struct ct_map tail_users_of; /* caller + 1 -> its first in tail_users + 1 */
	bool tail_users_made;
	/* Selected functions that cannot be probed (undecodable, or the kernel
	 * refuses an instruction a probe would go on), with the reason. */
	CT_VEC(struct ct_plan_skip) skipped;
	/* Argument capture (plan/args.c): per site id, NULL if none.  Many
	 * sites have the same one (a function's RETs, the calls of it that
	 * read its arguments alike, raw words of as many arguments): those
	 * are kept once, in FETCH_POOL (content hash -> the fetch), owned by
	 * it (FETCH_POOLED: by address), never changed (ct_plan_fetch_*). */
	struct ct_site_fetch **fetch;
	struct ct_map fetch_pool, fetch_pooled;
	struct ct_types *types;
	const char *args_note; /* why arguments are not captured, if so */
	bool no_spills;        /* no SPILL sites (record-time limits) */
	size_t exits_at_checks; /* return sites sent by the next call's CHECK */
	size_t ahead_entries;   /* CALL sites probed ahead of their call (ahead.c) */
	struct ct_map ahead_walks; /* ... site + 1 -> the walk from there to the call (owned) */
	size_t args_funcs, args_incomplete;
	/* each function's captures as planned once (struct ct_func * ->
	 * args.c struct captures): the plan asks for them many times */
	struct ct_map captures;
	struct ct_map plt_traced; /* PLT stub -> traced function (index + 1) it jumps to */
	/* code outside every known function with calls of traced functions:
	 * the `caller` of those call sites (heap, one each) */
	CT_VEC(struct ct_func *) gap_callers;
	struct ct_map shared_exits; /* exit of a shared call site -> its RETSITE (index + 1) */
	/* sites when ct_plan_build returned: those found while recording
	 * (CT_SITEF_DYNAMIC) come after them */
	size_t built_sites;
	/* function + 1 -> its ENTRY site + 1, over the first entry_sites_n
	 * sites (ct_plan_found_return asks while the program runs: not a look
	 * through every site each time) */
	struct ct_map entry_site_of;
	size_t entry_sites_n;
	/* the whole walks of the call sites that keep theirs (struct
	 * ct_callsite.full: where results are read, or a walk the code from
	 * the return address does not give again) */
	CT_VEC(struct ct_exit_walk *) kept_walks;
	/* Go: where the runtime calls closures (goexit's return address for a
	 * goroutine's function, deferreturn's fn(), ...), as call sites */
	CT_VEC(struct ct_callsite) runtime_calls;
	/* every function by the hash of its name (callers.c func_named) */
	struct ct_map by_name;
	bool by_name_done;
	/* Code where a return address proves no return (plan/callers.c): a
	 * function that calls setjmp, whose longjmp resumes it past that call
	 * and may go on to the address after any of its calls.  Link-time
	 * [start, end), sorted. */
	CT_VEC(struct ct_fde) unproven;
	/* indirect call instructions of traced code planned for the
	 * address-taken functions they may call (plan_indirect_sites), and the
	 * (call instruction, function) pairs; the sites left to be found while
	 * recording (over the budget) */
	size_t icall_sites, icall_pairs, icall_left;
	/* Goroutine lineage (plan/goroutines.c): the creation probe's site
	 * (CT_NOFUNC: none) and where its payload holds the new goroutine's
	 * goid and gopc (0: not captured). */
	uint32_t gocreate_site;
	bool gocreate_abi0;
	uint32_t gocreate_goid_at, gocreate_gopc_at;
	/* ... and with it, the sites whose hits see every goroutine id the
	 * runtime gives out, and every move of a goroutine's stack, before the
	 * g can run (0: not all are seen), so that a thread may keep the id
	 * and stack.hi it read from a g until the next such hit
	 * (ct_plan_goid_site): it, then the others (sending no events) */
	uint32_t goid_sites;
	char goid_note[240]; /* the functions those are in, or why not */
};

/* Selects functions and finds their sites.  Fails with one line when nothing
 * matches or a selected function cannot be decoded. */
int ct_plan_build(struct ct_plan *p, const struct ct_target *t, const struct ct_selection *sel);
/* The plan of a library none of whose functions is traced, but whose
 * __cxa_begin_catch says where C++ exceptions were caught (libstdc++): its
 * CATCH marker only.  Fails if it has none that can be probed. */
#define CT_CXA_BEGIN_CATCH "__cxa_begin_catch"
int ct_plan_catch_only(struct ct_plan *p, const struct ct_target *t);
void ct_plan_free(struct ct_plan *p);

/* Plans argument/result capture for every planned function (needs DWARF;
 * without it, raw words).  Never fails: what cannot be captured is marked. */
void ct_plan_args(struct ct_plan *p, const struct ct_args_opts *o);

/* Arguments passed in SSE registers (plan/spill.c): a SPILL site for each
 * function whose prologue stores them, with its capture (ct_plan_args). */
void ct_plan_spills(struct ct_plan *p);

/* Goroutine lineage (plan/goroutines.c).  ct_plan_build adds the creation
 * probe of a Go target; ct_plan_args gives it its fetch program (argument
 * capture or not); ct_plan_goroutine_created reads a hit's raw payload. */
void ct_plan_goroutines(struct ct_plan *p);
void ct_plan_goroutine_fetch(struct ct_plan *p);
bool ct_plan_goroutine_created(const struct ct_plan *p, const uint8_t *raw, size_t len, uint64_t *goid,
			       uint64_t *gopc);
/* The first of P->goid_sites sites (bins[].goid_site) when all are among
 * the first N sites (those attached) and probes of their own; else
 * CT_NOSITE: every hit reads g.goid and g.stack.hi. */
uint32_t ct_plan_goid_site(const struct ct_plan *p, size_t n);
/* How a hit of P's finds its goroutine id, for `list` (OUT: N bytes). */
const char *ct_plan_goid_note(const struct ct_plan *p, char *out, size_t n);

/* The calling convention of F's code by its flags (Go register ABI, Go ABI0,
 * else SysV); argument capture turns SysV into Rust's own where DWARF says. */
enum ct_callconv ct_callconv_of(const struct ct_func *f);

/* Does SEL name F (its -F/-N globs, or the default set), whatever its flags
 * (a compiler-generated wrapper is never traced, but its code is)? */
bool ct_plan_names_selected(const struct ct_target *t, const struct ct_func *f, const struct ct_selection *sel);
/* Is F part of the default selection (main program's own code)? */
bool ct_plan_default_selected(const struct ct_target *t, const struct ct_func *f);

/* The whole binary's code scanned for references to the functions at
 * ENTRIES (those that may be planned), on another thread while the plan is
 * worked out (plan/callers.c). */
struct ct_code_scan;
struct ct_code_scan *ct_code_scan_start(const struct ct_target *t, const uint64_t *entries, size_t n);
void ct_code_scan_free(struct ct_code_scan *scan);
/* --exit=auto: decides which functions are observed from their callers and
 * fills their call sites (plan/callers.c).  FOUND[j]: p->funcs.v[j]'s own
 * sites; SCAN: what ct_code_scan_start found (NULL: the code is scanned
 * here). */
void ct_callers_plan(struct ct_plan *p, const struct ct_fn_sites *found, const struct ct_selection *sel,
		     struct ct_code_scan *scan);
/* CS's walk is W (from its return address): its brief, and the whole of it
 * kept by the plan if KEEP -- which must be set where W is not what
 * ct_exit_walk gives from the caller's code at the return address (a walk
 * to an indirect call, code of another module). */
void ct_callsite_set_walk(struct ct_plan *p, struct ct_callsite *cs, const struct ct_exit_walk *w, bool keep);
/* CS's whole walk: the one the plan kept, else walked again from its
 * caller's code into BUF (the same bytes give the same walk; one walk is
 * cheaper than keeping 700 bytes for each of 100k call sites).  A call site
 * never walked gets one where every value is lost. */
const struct ct_exit_walk *ct_callsite_walk(const struct ct_plan *p, const struct ct_callsite *cs,
					    struct ct_exit_walk *buf);

/* A CHECK site saw a call from return address RET (link-time) that it has
 * no planned call site for: plans that call site (a CALL site flagged
 * CT_SITEF_DYNAMIC) and its exit (a RETSITE, the same walk as for planned
 * ones; none for a call in tail position), appended to the site table (and
 * p->fetch), and the "planned_calls" entry that makes the CHECK send its
 * calls as that CALL site's.  Returns the CALL site, or CT_NOSITE with *WHY. */
uint32_t ct_plan_found_caller(struct ct_plan *p, uint32_t check_site, uint64_t ret, struct ct_plan_planned *planned,
			      const char **why);
/* A caller of CHECK_SITE's function found while recording whose call no
 * exit probe can watch (ct_plan_found_caller refused it, or it is in
 * another file): the function's RETs, appended to the site table, see its
 * calls end from now on, from wherever they are made (its planned exits
 * too: the first hit at a frame's key closes it).  False if they cannot be
 * probed (none known, or another probe is at one).  A function whose calls
 * a wrapper makes keeps its interim RETs instead (interim_kept). */
bool ct_plan_rets_from_now(struct ct_plan *p, uint32_t check_site);
/* The calls of CHECK_SITE's function planned with CT_EXIT_VIA, once a place
 * their untraced callers return to could not be planned (the runtime runs a
 * `defer` wrapper, another file): each gets its exit probe at its return
 * address, single-stepped, a RETSITE appended to the site table; their
 * planned entries, without via, appended to OUT.  Once a function. */
void ct_plan_unvia(struct ct_plan *p, uint32_t check_site, struct ct_plan_planned **out, size_t *nout);
/* CALL, a call site of CHECK_SITE's function just found while recording
 * (ct_plan_found_caller), made last by a wrapper (CT_EXIT_VIA): the places
 * the code shows that wrapper returns to, planned as found call sites of
 * the function now (where their exits are emulated, or in tail position),
 * not each at its first call from there; their planned entries appended to
 * OUT (callers.c plan_via_returns does the same before the program runs). */
void ct_plan_via_places(struct ct_plan *p, uint32_t check_site, uint32_t call, struct ct_plan_planned **out,
			size_t *nout);
/* What is probed at an address already, for a probe added there while
 * recording: a second probe at one instruction sends its events in no
 * known order, harmless only beside other return sites. */
enum ct_probe_there {
	CT_THERE_NONE = 0,
	CT_THERE_RETSITE, /* return sites only (of other calls): one more may go there */
	CT_THERE_EXIT,    /* a RET or tail jump (of the caller): its hit, shallower, ends the call */
	CT_THERE_OTHER,   /* an entry, a call...: its hit would take the call for unwound */
};
/* A tail jump to untraced code (a TAIL role of the probe at site PROBE,
 * with a return check) went on in code that returns to RET, which no probe
 * watches: found while recording (CT_PROC_CALLER).  RET and the code from it
 * are in a module the plan need not know (the program, another library). */
struct ct_found_return {
	uint64_t ret;         /* link-time address in its module */
	const uint8_t *code;  /* that module's bytes from RET on */
	size_t len;
	int64_t file_off;     /* file offset minus link-time address there */
	/* what the traced objects probe at ADDR of that module already */
	enum ct_probe_there (*probe_at)(void *ctx, uint64_t addr);
	void *ctx;
	size_t call_len;      /* the call instruction's length (it ends at RET) */
};
/* Plans the exit probe there: a RETSITE (flagged CT_SITEF_DYNAMIC, and
 * `elsewhere`) that closes the call opened at the function's ENTRY, at the
 * first instruction after RET the kernel emulates when the walk says the
 * results can be read there (else at RET itself, single-stepped), appended
 * to the site table (and p->fetch).  Returns it, or CT_NOSITE with *WHY; or
 * CT_NOSITE with *BUSY when a RET or tail jump of a traced function is
 * probed at RET already (it sees the call end, as at the planned ones:
 * plan_return_sites). */
/* Is ADDR, a return address in P's target, in code where it proves no
 * return (p->unproven)?  No return site goes there. */
bool ct_plan_return_unproven(const struct ct_plan *p, uint64_t addr);
uint32_t ct_plan_found_return(struct ct_plan *p, uint32_t probe, const struct ct_found_return *fr, bool *busy,
			      const char **why);
/* ... the same for a call of FUNC (ENTRY: its entry site) known before
 * recording (a direct call through another module's PLT): not flagged
 * found while recording. */
uint32_t ct_plan_return_elsewhere(struct ct_plan *p, uint32_t func, uint32_t entry, const struct ct_found_return *fr,
				  bool *busy, const char **why);
/* A CHECK site saw a call from FR->ret in another file (a library calling
 * back, the program's exported function called by a plugin), whose call
 * instruction ends there (FR->call_len): plans that call site (a CALL site,
 * `elsewhere`) and its exit (a RETSITE there, as ct_plan_return_elsewhere
 * places it), appended to the site table (and p->fetch), and *VAL, the
 * entry of map "file_calls" that makes the CHECK send those calls as the
 * CALL site's.  Returns the CALL site, or CT_NOSITE with *WHY. */
uint32_t ct_plan_found_caller_elsewhere(struct ct_plan *p, uint32_t check_site, const struct ct_found_return *fr,
					struct ct_planned_call *val, const char **why);
/* S appended to the site table (which grows by a quarter: sites found
 * while recording must not double a table of 200,000). */
struct ct_plan_site *ct_plan_push_site(struct ct_plan *p, const struct ct_plan_site *s);
/* A site added after planning (ct_plan_found_caller): its own probe. */
struct ct_plan_site *ct_plan_add_site(struct ct_plan *p, uint64_t addr, uint32_t func, uint8_t kind,
				      const struct ct_func *code);
/* ... in another module (ct_plan_found_return): at file OFFSET there. */
struct ct_plan_site *ct_plan_add_site_elsewhere(struct ct_plan *p, uint64_t addr, uint64_t offset, uint32_t func,
						uint8_t kind, uint8_t gsrc);
/* A deep copy (its program, its values). */
struct ct_site_fetch *ct_site_fetch_clone(const struct ct_site_fetch *f);
/* The plan's one fetch like *F (struct ct_plan.fetch_pool), F's values taken
 * (F itself, which may hold all CT_MAX_OPS ops, stays the caller's). */
struct ct_site_fetch *ct_plan_fetch_intern(struct ct_plan *p, struct ct_site_fetch *f);
/* ... of H, a heap fetch (ct_site_fetch_keep) taken whole: H itself kept,
 * or freed for the one like it. */
struct ct_site_fetch *ct_plan_fetch_intern_heap(struct ct_plan *p, struct ct_site_fetch *h);
/* Is F one of the plan's shared fetches (never freed or changed alone)? */
bool ct_plan_fetch_pooled(const struct ct_plan *p, const struct ct_site_fetch *f);
/* Frees F (NULL: nothing) unless it is shared. */
void ct_plan_fetch_drop(struct ct_plan *p, struct ct_site_fetch *f);
/* The results of a call at its RETSITE, as ct_plan_args plans them (it
 * may move the site to the return address), or NULL. */
struct ct_site_fetch *ct_plan_results_at_exit(struct ct_plan *p, struct ct_plan_site *site);
/* RES (a function's results as at its RET) as they are at its caller's
 * ret, walk W from the return address (TAILPOS, at_ret), in OUT: in
 * registers, the same or others the caller copied them to (or added a
 * constant to: `return f(x) + 1`, read as that less it), so that they can
 * be read wherever the caller's own results can (a call in tail position
 * with results, CT_SITE_TAILRES).  Nothing written on the way but registers
 * -- and, for a Go caller (GO), its own frame, gone at its ret: what a Go
 * function returns never points into it.  False if not. */
bool ct_plan_tail_results(const struct ct_site_fetch *res, const struct ct_exit_walk *w, bool go,
			  struct ct_site_fetch *out);
/* One fetch program for the roles of the probe at site I (its `next`
 * chain), each role's values placed in it (their fetches, in P->fetch). */
void ct_plan_share_fetch(struct ct_plan *p, size_t i);

/* The traced function (plan index + 1) whose code starts at ADDR, or that a
 * PLT stub at ADDR jumps to; 0 if none.  BY_ENTRY: entry -> index + 1. */
size_t ct_plan_traced_at(const struct ct_plan *p, const struct ct_map *by_entry, uint64_t addr);
/* The caller fields of a planned call's entry (struct ct_planned_call) for
 * CALL site CALL_SITE (plan-local ids; none for other sites). */
void ct_plan_call_caller(const struct ct_plan *p, uint32_t call_site, struct ct_planned_call *val);
/* Site I (and the roles after it) has a CALL from a Go function that is not
 * traced (a closure made for a generic function's value, a wrapper): its
 * hit walks the frame pointer chain when a call without an exit probe is
 * open in the goroutine (CT_COOKIE_CALLWALK), as an entry from an unknown
 * caller does.  A traced caller's entry did that already. */
bool ct_plan_call_walks(const struct ct_plan *p, size_t i);
/* The capture of F's results at its RETs (as ct_plan_args will plan it), or
 * NULL; the caller frees it (ct_site_fetch_free, free). */
struct ct_site_fetch *ct_plan_results_fetch(struct ct_plan *p, const struct ct_args_opts *o, const struct ct_func *fn);
/* Frees what the plan kept of its functions' captures (struct ct_plan.captures). */
void ct_plan_captures_free(struct ct_plan *p);
/* ... and of its arguments at its entry. */
struct ct_site_fetch *ct_plan_args_fetch(struct ct_plan *p, const struct ct_args_opts *o, const struct ct_func *fn);
/* Do calls of F have their results captured (as ct_plan_args will plan)? */
bool ct_plan_wants_results(struct ct_plan *p, const struct ct_args_opts *o, const struct ct_func *f);

/* Links the roles that share a probe address (a call's exit that is the
 * next call, ...): the first in order is probed, `next` chains the others,
 * flagged CT_SITEF_COMPANION.  Again after sites moved (ct_plan_args). */
void ct_plan_link_roles(struct ct_plan *p);
/* Go, --exit=auto: the CALL sites a jump or nop that is already an exit
 * probe leads to, alone and with the arguments in place, probed there
 * instead (plan/ahead.c; CT_SITEF_AHEAD): one hit for a loop's call and
 * the end of the one before. */
void ct_plan_ahead_entries(struct ct_plan *p, const struct ct_selection *sel);
/* AT_CALL, a capture as at the call instruction of CALL site SITE, as read
 * where that site is probed ahead of it (ct_fetch_ahead); false if the
 * site is not probed ahead or the capture cannot be read there. */
bool ct_plan_ahead_fetch(struct ct_plan *p, const struct ct_site_fetch *at_call, uint32_t site,
			 struct ct_site_fetch *out);
/* A return site at a call instruction whose callee has a CHECK (a call's
 * exit that is the next call) is sent by that CHECK rather than probed: the
 * planned call's entry in P->planned names it, its roles chain on to the
 * CALL site's (one hit instead of two); the results it reads, by a program
 * of that call's own (the entry's `fetch`) where they can be read at the
 * CHECK.  At the end of ct_plan_args (it needs to know what each exit
 * reads); not under record-time limits. */
void ct_plan_merge_exits_into_checks(struct ct_plan *p);
/* Does site I (not a probe) have a program a CHECK's hit runs (a planned
 * call's `fetch`)? */
bool ct_plan_site_runs_fetch(const struct ct_plan *p, size_t i);
/* Is probe site I (with its companion roles) a tail jump to untraced code
 * whose return address the BPF side checks (CT_COOKIE_RETCHECK)?  Then
 * *RETS, *N: the return addresses where a probe sees the call end. */
bool ct_plan_tail_check(const struct ct_plan *p, size_t i, const uint64_t **rets, size_t *n);
/* Where a call of a function from another module may end in untraced code,
 * per function: its ENTRY site (CT_NOSITE if none), the probe sites whose
 * tail jumps to untraced code check the return address (CT_COOKIE_RETCHECK)
 * when the call goes on there -- its own, then those of the functions it
 * tail-jumps to, transitively -- and those functions (with an ENTRY: their
 * frame may be the call's, its own ended at a jump to untraced code that
 * jumped on to them).  None when PROBES is empty. */
struct ct_tail_ends {
	uint32_t entry;
	CT_VEC(uint32_t) probes;
	CT_VEC(uint32_t) funcs;
};
struct ct_tail_ends *ct_plan_tail_ends(const struct ct_plan *p); /* p->funcs.n of them */
void ct_plan_tail_ends_free(struct ct_tail_ends *e, size_t n);
/* The probe sites whose tail jumps to untraced code check the return
 * address (CT_COOKIE_RETCHECK) when a call of FUNC goes on there: its own,
 * then those of the functions it tail-jumps to, transitively.  A call site
 * of FUNC found while recording returns where they must know a probe sees
 * the call end (else they take it for unwatched).  Into *OUT (malloc'd);
 * how many. */
size_t ct_plan_tail_probes_of(struct ct_plan *p, uint32_t func, uint32_t **out);
/* How many return addresses all of P's probes check (planned_calls entries). */
size_t ct_plan_tail_check_entries(const struct ct_plan *p);
/* Does S get a probe of its own (not a companion role)? */
bool ct_site_is_probe(const struct ct_plan_site *s);

/* "; N indirect call instructions planned (M calls through them, K left to
 * be found while recording)", or "" when none is (OUT: N bytes). */
const char *ct_plan_icall_note(const struct ct_plan *p, char *out, size_t n);
/* "a, b, c (and N more)": the skipped functions' names, for one line. */
char *ct_plan_skipped_names(const struct ct_plan *p, size_t max);

/* The tables as they go into the record file, into FUNCS and SITES
 * (p->funcs.n and p->sites.n of them: the caller's, no copy of its own
 * beside them -- restic's sites are 10 MB in the file's form). */
void ct_plan_file_tables(const struct ct_plan *p, struct ct_file_func *funcs, struct ct_file_site *sites);
/* Sites [FIRST, FIRST + N) alone (those found while recording: a batch's
 * cost is its own sites', not the plan's), ids as in the plan. */
struct ct_file_site *ct_plan_file_sites(const struct ct_plan *p, size_t first, size_t n);
/* Site I's flags as the file has them: with what its instruction says of
 * its hits' cost (CT_SITEF_STEPPED, CALLINSN, RETINSN, NOTRAP). */
uint16_t ct_plan_site_flags(const struct ct_plan *p, size_t i);
/* The hit classes its probes have, a bit (1 << enum ct_hit_class of
 * format/calib.h) each: record's calibration measures the rarer ones only
 * when they occur. */
unsigned ct_plan_hit_classes(const struct ct_plan *p);

#endif
