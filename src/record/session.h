/* A recording session: target + plan + loaded probes + record file, and the
 * loop that drains the ring buffer into the file until told to stop.  Used
 * by `record` (and by `live`, which also hands each event to a renderer). */
#ifndef CT_SESSION_H
#define CT_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "plan/plan.h"
#include "probes/probes.h"
#include "format/calib.h"
#include "record/insitu.h"
#include "format/tracefile.h"
#include "target/target.h"

struct ct_module;

struct ct_session_opts {
	const char *output;          /* record file path */
	uint64_t ringbuf_bytes;
	struct ct_selection sel;
	struct ct_args_opts args;
	uint64_t duration_ns;        /* stop after this long (0 = no limit) */
	/* limits and sampling, decided in the kernel (probes.h) */
	uint32_t max_depth, sample_n, sample_g_n;
	uint64_t min_dur_ns, max_events;
	const char **roots;          /* --root GLOB */
	size_t nroots;
	uint64_t max_size;           /* --max-size: stop recording at this file size */
	uint64_t flush_ns;           /* write events out at least this often (0: 200 ms) */
	int lib_pid;                 /* -p: find libraries in this process's mappings */
	bool follow;                 /* --follow: trace forked and exec'd children */
	bool no_sched;               /* --no-sched: no CT_PROC_OFFCPU records */
	bool shown_while_recording;  /* live, --otlp-endpoint: corrected with the start-up
					calibration, so no second one at the end */
	char *cmdline;               /* for the file's metadata */
};

/* Work an event asks for that must not run inside the ring buffer's
 * callback (planning, attaching, writing tables): the callback queues it
 * and pauses the drain, the session loop does it before reading on. */
enum ct_deferred_kind {
	CT_DEFER_EXEC = 1,   /* --follow: PID exec'd a binary (HELD: the kernel stopped it) */
	CT_DEFER_CALLER = 2, /* a CHECK's call from a return address it has no
				planned site for (CT_PROC_CALLER): plan it, add
				its exit probe (the program runs on meanwhile) */
	CT_DEFER_ICALL = 3,  /* a watched exit probe of an indirect call was hit
				again as often (CT_PROC_ICALL_EXIT; CALLER: its
				file site id): weigh it (weigh_icall_exit) */
};

struct ct_deferred {
	uint8_t kind;
	bool held;
	uint32_t pid;
	uint64_t caller; /* CALLER: CT_PLANNED_KEY(probe site, return address - probe) */
	uint64_t ret;    /* CALLER: the return address, as process PID maps it */
	/* CALLER: its file as the kernel side sees it (struct ct_caller_file;
	 * kino 0: not known) */
	uint32_t kdev;
	uint64_t kino;
};

/* The Go runtime's names of one traced object (the program, a Go binary it
 * exec'd) written so far: they are the object's, not the file's (two Go
 * binaries have their runtime types, and code, at the same addresses). */
struct ct_go_names {
	struct ct_map rtypes_seen; /* runtime type address -> type id + 1 */
	CT_VEC(uint8_t) iface_in;  /* per type id: 0 not known, 1 no interface in its values, 2 may be */
	struct ct_map gopcs_seen;  /* pid << 47 ^ go statement address: position written */
	uint32_t rtypes_range;     /* the site range the last RTYPES chunk named (0: none yet) */
	int64_t load_bias;         /* of the object in the first process that showed a type */
	bool bias_known;
};

/* A shared library traced next to the program (-F 'LIB:GLOB'), or a binary
 * exec'd under --follow. */
struct ct_libbin {
	char *name;  /* as the user wrote it, e.g. "libc.so.6"; prefixes its functions */
	char *path;  /* the file the probes go on */
	struct ct_target target;
	struct ct_plan plan;
	CT_VEC(const char *) trace, exclude; /* the GLOBs after "LIB:" */
	uint32_t func_base, site_base;
	uint32_t nsites; /* its own sites (from site_base on); those found while recording are elsewhere */
	dev_t dev;   /* --follow: a binary exec'd by a traced process */
	ino_t ino;
	int exe_fd;  /* --follow: that binary, open (path: /proc/self/fd/N); 0 none */
	char *attach_path; /* where probes added while recording go (object_file) */
	/* its captures: -A/-R globs that name it as 'LIB:GLOB' (stripped) or
	 * name no library, and its type ids in the file */
	struct ct_args_opts args;
	CT_VEC(const char *) arg_globs, ret_globs;
	struct ct_type_ids type_ids;
	struct ct_go_names go;
	/* none of its functions traced: the program's libstdc++, for its
	 * CATCH marker (add_catch_library) */
	bool catch_only;
};

/* A link of exit probes found while recording (add_callers), kept so that,
 * the links running short, those of one file and process are made one
 * (merge_caller_links). */
struct ct_caller_link {
	char *path;
	int pid;
	int link; /* ct_probes slot */
	CT_VEC(uint64_t) offsets, cookies;
};

struct ct_interim_link {
	uint32_t bin; /* the object (0: the program, k: libs[k - 1]) */
	uint32_t f0, f1; /* the interim RETs of its functions [f0, f1) ... */
	size_t s0, s1;   /* ... all among the plan's sites [s0, s1): a function's
			    sites are contiguous, in function order (plan.c
			    emit_function), so each look at a link is over its
			    own sites, not the whole plan's */
	int pid;
	char *path;   /* where it was attached */
	int link;     /* ct_probes slot, -1: none now */
	size_t nsites;
	bool stuck;   /* making it again failed: it stays as it is */
};

/* An exit probe of an indirect call planned before the program ran, all
 * of whose roles are ends of that call instruction's calls of traced
 * functions (plan/callers.c plan_indirect_sites).  Every call made there
 * hits it, of untraced implementations too; one that is hit much more
 * often than its calls of traced functions are made, where those
 * functions' RETs cost less than its wasted hits, is taken out and their
 * RETs probed instead (session.c weigh_icall_exit).  In a link of a few
 * such probes (struct ct_icall_link), made again without it. */
struct ct_icall_exit {
	uint32_t site;   /* the probe's site in the program's plan */
	uint32_t link;   /* its link: icall_links[link] */
	uint64_t hits;   /* its events read */
	uint64_t calls;  /* the CALL events read of the calls it closes */
	uint64_t key;    /* found while recording: its call's planned entry (else 0: those
			    planned before, the plan's) */
	bool out;        /* taken out: those calls end at their functions' RETs */
	bool settled;    /* stays for good (those RETs could not be probed) */
};
struct ct_icall_link {
	char *path;
	int pid;
	int link;            /* ct_probes slot, -1: none */
	size_t first, n;     /* its probes: icall_exits[first, first + n) */
};

struct ct_session {
	struct ct_session_opts o;
	struct ct_libbin *libs;
	size_t nlibs;
	struct ct_selection main_sel; /* the program's part of -F/-N */
	/* --follow: which of main_sel's -F names a traced binary has had so
	 * far (an exact one missing from all: ct_session_names_missing) */
	bool *names_seen;
	dev_t main_dev;               /* the program's binary (--follow) */
	ino_t main_ino;
	uint32_t total_funcs, total_sites;
	char *binary;     /* path of the traced binary */
	struct ct_target target;
	struct ct_plan plan;
	struct ct_probes *probes;
	struct ct_writer *w;
	uint64_t start_ns, attach_ns, detach_ns;
	uint64_t lost_seen;
	uint64_t lost_base;   /* drops not of the program's events: the calibrations' */
	/* the probe hits on all CPUs when the program's began (after the
	 * start-up calibration's, whether it succeeded or not) */
	uint64_t hits_at_start;
	bool hits_known;
	uint64_t lost_marked; /* of those, written as loss records in the stream */
	uint32_t loss_gen;    /* the drop count the last loss record brought us to */
	bool target_open, plan_built;
	/* argument capture */
	uint8_t *compact;          /* scratch for payload compaction */
	struct ct_go_names go;       /* the program's */
	struct ct_type_ids type_ids; /* the program's type ids in the file */
	struct ct_costs costs;     /* what a probe hit costs here (calibrate.c) */
	struct ct_calib *calib;    /* its probes, to measure again at the end */
	struct ct_insitu insitu;   /* the program's tiny calls, to price its hits (insitu.h) */
	struct ct_tiny_last { /* per thread (by tid, a few collide): its last event */
		uint32_t tid, site;
		bool opens;
		uint64_t ts, key, goid;
	} tiny_last[256];
	/* The process record forked to exec the program: until its exec, its
	 * hits are of calltrace's own code (a traced library's functions in
	 * the launcher: execv, the read that waited), left out. */
	uint32_t launch_pid;       /* 0: none (-p) */
	bool launched;             /* its exec was seen (or the program's own code ran) */
	bool program_is_ours;      /* calltrace maps the program's file too (ld.so, libc) */
	uint64_t before_exec;      /* launcher events left out */
	bool stop;                 /* a limit was reached: the loop should end */
	uint64_t cut_size;         /* events drained after --max-size was reached */
	uint64_t calls_written;    /* events written that open a call */
	bool never_ran;            /* finished with no call written, none cut, none lost */
	uint64_t end_ts;           /* detaching started: later events are dropped */
	const char *stop_reason;
	/* -p: the last process to stop being traced exec'd another program:
	 * the exit line then (left_by_exec), NULL if none did */
	char *left_by_exec;
	/* processes that exec'd another program without --follow: what the
	 * probes still see in them (a library's functions, traced by file,
	 * fire in the new program too) is not written (left_by_exec) */
	struct ct_map exec_left;
	uint64_t exec_left_dropped; /* their events since */
	uint64_t forks_untraced;   /* processes the traced ones forked, not traced (no --follow) */
	struct ct_wasm_run *wasm;  /* a WebAssembly module: events come from its runner */
	const char *exits_note;    /* why --exit=auto became ret */
	CT_VEC(struct ct_deferred) deferred; /* queued by on_event, done by run_deferred */
	/* Call sites and return addresses found while recording (CT_PROC_CALLER:
	 * ct_plan_found_caller, ct_plan_found_return).  Their sites are added
	 * to their function's object's plan and take the file's next ids (under
	 * --follow, between those of the binaries exec'd meanwhile), found_max
	 * at most (the room the BPF side's maps were sized with). */
	struct ct_map callers_done;  /* CT_PLANNED_KEY -> 1, or UINT32_MAX: refused */
	uint32_t main_nsites;        /* the program's own sites (ids 0..) */
	uint32_t found_end;          /* the ids the BPF side has in its array (later ones: fetch_later) */
	uint32_t found_n, found_max; /* sites found so far, and at most */
	struct ct_map found_sites;   /* file site id -> (object << 32 | plan index) + 1 */
	struct ct_map found_ids;     /* (object << 32 | plan index) -> file site id + 1 */
	struct ct_map found_rets;    /* hash of (module, return address, function) -> exit site id + 1 */
	CT_VEC(struct ct_module *) modules; /* the files return addresses were found in */
	/* per traced object (0: the program, k: libs[k - 1]): what its plan
	 * probes at each address (enum ct_probe_there + 1), over its first N
	 * sites (they only grow; built before the program runs): an exit walk
	 * asks of each instruction it passes, and looking through every site
	 * for each was most of the 5-15 ms a batch of found callers took on
	 * cppcheck's 98,648 sites (their calls ended unobserved meanwhile) */
	struct {
		struct ct_map there;
		size_t n;
	} probes_at[CT_MAX_BINS];
	/* Return sites planned before recording in other files than their
	 * functions' (a program's calls of a traced library's functions through
	 * its PLT: plan_returns_elsewhere): their exit probes, attached with
	 * their object's, and the return addresses the tail jumps look up. */
	CT_VEC(struct ct_early_exit) early_exits;
	CT_VEC(struct ct_early_ret) early_rets;
	CT_VEC(int) attach_pids;     /* where the program's probes went (0: every process, --follow) */
	char *attach_path;           /* where the program's probes added while recording go (object_file) */
	size_t probes_refused;       /* probe links made while recording that the kernel refused */
	char *probes_refused_why;    /* the first one's reason */
	size_t caller_links;         /* probe links added for them */
	CT_VEC(struct ct_caller_link) caller_link_list; /* ... those made one link each (not perf events) */
	size_t caller_links_merged;  /* links made one with others (merge_caller_links) */
	uint64_t callers_since;      /* when the first of them not planned yet was read (0: none) */
	uint64_t callers_found, callers_refused;
	uint32_t max_callers;  /* return addresses the probes report at most (callers_budget) */
	uint32_t tail_watches; /* planned entries for tail jumps' checks (watch_tails), at most max_callers */
	/* Interim RETs (plan.c emit_function), per object and process, in
	 * links of a few functions each: made again without the functions
	 * settled since, or closed once none is left (settle_interim) */
	CT_VEC(struct ct_interim_link) interim_links;
	/* The program's watched exit probes of indirect calls, their links,
	 * and what the events read tell of them: ICALL_OF[i] for the plan's
	 * site i (of ICALL_OF_N) is (index in icall_exits + 1) << 1, | 1 for
	 * a CALL site whose call it closes (0: none); CALLS_OF[j] the calls
	 * of its function j read (CALL, CHECK and ENTRY events) */
	CT_VEC(struct ct_icall_exit) icall_exits;
	CT_VEC(struct ct_icall_link) icall_links;
	uint32_t *icall_of;
	size_t icall_of_n;
	uint64_t *calls_of;
	size_t calls_of_n;
	size_t icall_out;            /* watched exits taken out */
	size_t icall_found;          /* ... of them found while recording */
	uint64_t interim_tick;       /* when settle_interim last looked */
	size_t interim_links_in;     /* ... and how many of the links were in then */
	size_t interim_settled;      /* functions whose interim RETs were taken out */
	size_t interim_remade;       /* links made again or closed for it */
	size_t interim_changes;      /* probes placed or taken out meanwhile */
	size_t warm_ups;             /* warm-up probes attached (warm_up) */
	uint64_t offcpu, offcpu_ns;  /* CT_PROC_OFFCPU records written, their times off CPU */
	uint64_t offcpu_at_end;      /* ... of them CT_OFFCPU_AT_END */
	uint64_t stalls, stall_ns;   /* CT_PROC_STALL records written, their waits */
	/* Optional: every event also goes here (live view). */
	int (*sink)(void *ctx, const struct ct_event *e, const void *payload);
	void *sink_ctx;
};

/* Loads target, plan, BPF and creates the record file.  One clear line in
 * ct_error() on failure; nothing is attached yet. */
int ct_session_prepare(struct ct_session *s, const char *binary, const char *probe_path,
		       const struct ct_session_opts *o);
/* What to exec for the program PROG (argv): itself, or for a wasm module
 * node with the runner.  Call before forking. */
int ct_session_exec(struct ct_session *s, char **prog, const char **path, char ***argv);
/* Attaches every site for process PID (0 = any process running the binary). */
int ct_session_attach(struct ct_session *s, const char *probe_path, int pid);
/* Whether the program at PATH is no longer the file read to plan its
 * probes (rebuilt meanwhile): then true, with one clear line in ct_error(). */
bool ct_session_program_replaced(struct ct_session *s, const char *path);
/* -p: whether process PID no longer runs the file read to plan the probes
 * (it exec'd another program meanwhile: the probes, on the planned file,
 * see nothing): then true, with one clear line in ct_error(). */
bool ct_session_process_execd(struct ct_session *s, int pid);
/* More processes of the same binary (-p A -p B): their own links. */
int ct_session_attach_more(struct ct_session *s, int pid);
/* How many traced processes are alive (the program, processes given with -p
 * and, with --follow, every descendant). */
size_t ct_session_traced(struct ct_session *s);
/* The libraries whose functions are traced (-F 'LIB:GLOB'), of s->libs. */
size_t ct_session_traced_libs(const struct ct_session *s);
/* One round of the loop: drains events, records losses, flushes on time.
 * Returns -1 on a fatal error. */
int ct_session_pump(struct ct_session *s, int timeout_ms);
/* Detaches, drains what is left, writes the stats and closes the file
 * (NEVER_RAN: it has no call, and none was cut or lost). */
int ct_session_finish(struct ct_session *s, const char *exit_desc);
void ct_session_free(struct ct_session *s);

/* --follow, once recorded: the line saying which exact -F names no traced
 * program had (or that no -F matched in any), malloc'ed; NULL if none. */
char *ct_session_names_missing(const struct ct_session *s);

/* Prints the progress line on a tty stderr (elapsed, events, rate, lost, size). */
void ct_session_progress(struct ct_session *s, bool final);

#endif
