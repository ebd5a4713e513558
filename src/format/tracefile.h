/* The record file (calltrace.data): a header, then CRC-checked chunks —
 * metadata, the function and site tables, event chunks, and a final stats
 * chunk.  A file cut off mid-write replays up to its last whole chunk.
 * The layout is documented in docs/FORMAT.md; keep the two in step. */
#ifndef CT_TRACEFILE_H
#define CT_TRACEFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "format/payload.h"
#include "target/demangle.h"
#include "target/types.h"
#include "util/util.h"

#define CT_FILE_MAGIC "CALLTRC"
#define CT_FILE_VERSION 21 /* 2: process records (fork, exec, exit); 3: TYPES entries may carry field values;
			    4: caller-side sites (key_adj, call_site, next, flags);
			    5: FETCH value pieces of kind CONST carry their literal;
			    6: bit-fields; 7: SPILL sites;
			    8: RTYPES and PCPOS name the object (its sites) they hold for;
			    9: TAILRES sites; 10: TAILDIFF sites;
			    11: found RETSITEs riding on another's probe;
			    12: planned ones at indirect call instructions too;
			    13: site flags are a uvar (CT_SITEF_INTERIM), process
			    records CT_PROC_INTERIM_GONE;
			    14: process records CT_PROC_STALL (a goroutine id
			    after them);
			    15: process records CT_PROC_PROBES_IN;
			    16: events may carry the cost of hits that sent
			    none (ct_event.silent);
			    17: ... and their BPF program's time beyond the
			    calibration's (ct_event.extra_ns);
			    18: CALL sites probed ahead of their call
			    (CT_SITEF_AHEAD, and COND/FALL on a CALL): an
			    older reader would take every such role as made;
			    19: process records CT_PROC_OFFCPU (a goroutine id
			    and a duration after them);
			    20: process records CT_PROC_READY (a goroutine id
			    after them), GOREADY sites;
			    21: CATCH sites (a C++ handler begins: deeper
			    frames were unwound) */

enum ct_chunk_type {
	CT_CHUNK_META = 1,   /* key/value strings */
	CT_CHUNK_FUNCS = 2,  /* function table */
	CT_CHUNK_SITES = 3,  /* probe site table */
	CT_CHUNK_EVENTS = 4, /* encoded events */
	CT_CHUNK_STATS = 5,  /* key/value strings written at the end */
	CT_CHUNK_TYPES = 6,  /* type table entries (may come in several chunks) */
	CT_CHUNK_FETCH = 7,  /* argument capture plans, per site */
	CT_CHUNK_RTYPES = 8, /* Go runtime type addresses seen -> type ids, per object */
	CT_CHUNK_PCPOS = 9,  /* source positions of code addresses (go statements), per object */
};

#define CT_NOFUNC UINT32_MAX

struct ct_file_func {
	uint32_t id;
	char *name;
	uint64_t entry, size;
	uint32_t flags; /* CT_FN_* of target.h */
};

/* ct_file_site.flags */
#define CT_SITEF_TAILPOS 0x1   /* CALL: the call is in tail position in a traced
				  caller: it ends when that caller's frame ends */
#define CT_SITEF_COMPANION 0x2 /* not probed itself: another role of the probe
				  whose `next` chain names it (same instant) */
#define CT_SITEF_STEPPED 0x4   /* the kernel single-steps its instruction (it
				  does not emulate it): a dearer hit */
#define CT_SITEF_ATCHECK 0x8   /* CALL: not probed itself; its calls are sent
				  by the callee's CHECK probe (same instant).
				  RETSITE at a call whose callee has a CHECK:
				  sent by it too, first of its roles (its
				  FETCH: what that hit reads) */
#define CT_SITEF_DYNAMIC 0x10  /* CALL/RETSITE: a call site found while recording
				  (a CHECK saw its return address), its exit
				  probe added then */
#define CT_SITEF_INDIRECT 0x20 /* CHECK, and its DYNAMIC CALLs: the function's
				  address is taken (called through interfaces,
				  function values): calls from sites not known
				  in advance are expected.  TAIL: a jump through
				  a pointer (target not known): a traced function
				  entering at its key next is its target */
#define CT_SITEF_CALLINSN 0x40 /* probed at a `call` the kernel emulates (it also
				  writes the return address): overhead correction
				  prices its hits so (format/calib.h) */
#define CT_SITEF_RETINSN 0x80  /* probed at a `ret` (single-stepped): the same */
/* Both of the last two (never otherwise together: a `ret` is also STEPPED):
 * probed at a 5-byte nop, which the kernel turns into a call to its uprobe
 * trampoline after the first hit (Linux 6.18+): no trap, the cheapest hit */
#define CT_SITEF_NOTRAP (CT_SITEF_CALLINSN | CT_SITEF_RETINSN)
#define CT_SITEF_INTERIM 0x100 /* RET: an interim RET (version 13), probed only
				  until its function's callers are found
				  (until a process record CT_PROC_INTERIM_GONE
				  names the function): its event ends a call
				  that had no exit probe; one flagged
				  CT_EV_INTERIM_PASS only such a call */
#define CT_SITEF_COND 0x200    /* TAIL: a conditional jump (`je g`); an event
				  flagged CT_EV_NOT_TAKEN did not jump.  CALL
				  (AHEAD): the call is made when the jump goes
				  (FALL: when it does not) */
#define CT_SITEF_AHEAD 0x400   /* CALL: probed ahead of its call instruction, at
				  the exit probe of an earlier call whose way
				  on (with COND: that way of its jump) leads only
				  to this call, a few instructions on (version 18) */
#define CT_SITEF_FALL 0x800    /* CALL, AHEAD and COND: on the way the jump does
				  not take */

struct ct_file_site {
	uint32_t id;
	uint64_t addr;
	uint32_t func;        /* traced function, or CT_NOFUNC (markers) */
	uint8_t kind;         /* enum ct_site_kind */
	uint32_t target_func; /* TAIL: traced target function or CT_NOFUNC */
	int32_t key_adj;      /* added to an event's key: the callee frame's key */
	uint32_t call_site;   /* RETSITE: the CALL site it closes, else UINT32_MAX */
	uint32_t next;        /* the next role of the same probe, else UINT32_MAX */
	uint16_t flags;       /* CT_SITEF_* */
};

/* An event as read back.  kind is from the site table, or LOST, or PROC. */
#define CT_EV_LOST 0xff
#define CT_EV_PROC_REC 0xfe /* a traced process forked, exec'd or ended */
struct ct_rec_event {
	uint64_t ts; /* ns, CLOCK_MONOTONIC */
	uint64_t goid, key;
	uint32_t pid, tid;
	uint32_t site;
	uint8_t kind;  /* enum ct_site_kind, or CT_EV_LOST */
	uint16_t flags;/* CT_EV_* of probes/event.h */
	uint32_t silent; /* ct_event.silent: the thread's hits before it that
			    sent no event, in CT_SILENT_UNITs (version 16) */
	int32_t extra_ns; /* ct_event.extra_ns (version 17) */
	uint64_t lost; /* CT_EV_LOST: how many events were dropped */
	uint8_t proc;  /* CT_EV_PROC_REC: CT_PROC_* of probes/event.h */
	uint32_t child;/* CT_PROC_FORK: the new process (pid, tid: the forking thread);
			  CT_PROC_STALL: how long the thread waited (ns, and
			  goid the goroutine it ran, 0 for a thread);
			  CT_PROC_OFFCPU: CT_OFFCPU_* flags (key: how long
			  the thread was off CPU, goid as for a stall) */
	const uint8_t *payload;
	uint32_t payload_len;
};

/* The source position of a code address of traced process PID (a `go`
 * statement, for goroutine lineage), resolved while recording. */
struct ct_pcpos {
	uint32_t pid;
	uint64_t pc;   /* as the process saw it (g.gopc: the return address) */
	char *func;    /* the function holding it */
	char *file;    /* "" if unknown */
	uint32_t line; /* 0 if unknown */
};

struct ct_kv {
	char *key, *val;
};

/* ---- writing ---- */
struct ct_writer;
struct ct_event;

/* Creates PATH with mode 0600 (an existing file is renamed to PATH.old; a
 * symlink or non-regular file there is refused: util/files.h).  NULL PATH:
 * an unnamed temporary file. */
struct ct_writer *ct_writer_create(const char *path);
/* A new read-only fd on the file being written (for `live`). */
int ct_writer_reader_fd(const struct ct_writer *w);
void ct_writer_meta(struct ct_writer *w, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Writes header, META, FUNCS and SITES; call once before any event. */
int ct_writer_begin(struct ct_writer *w, const struct ct_file_func *funcs, size_t nfuncs,
		    const struct ct_file_site *sites, size_t nsites);
/* More FUNCS and SITES (a binary traced after the start, --follow): their
 * ids continue the tables. */
void ct_writer_tables(struct ct_writer *w, const struct ct_file_func *funcs, size_t nfuncs,
		      const struct ct_file_site *sites, size_t nsites);
/* The file has one type table for every traced object (the program, its
 * libraries, the binaries it execs): an object's own table (target/types.h,
 * ids from 0) goes in as it grows, its entry i becoming the file's entry
 * file.v[i].  Type 0 (unknown) is the same in all. */
struct ct_type_ids {
	CT_VEC(uint32_t) file;
};
/* The file's id of an object's type ID (IDS NULL: the same id). */
uint32_t ct_type_ids_file(const struct ct_type_ids *ids, uint32_t id);
void ct_type_ids_free(struct ct_type_ids *ids);
/* The entries of TT not in the file yet (IDS says which are), numbered
 * after the file's last; call again for types found later. */
void ct_writer_types(struct ct_writer *w, const struct ct_typetab *tt, struct ct_type_ids *ids);
/* Capture plans: FETCH[i] for site FIRST_SITE + i (NULL: none), NSITES
 * entries, their types as IDS numbers them in the file. */
void ct_writer_fetch(struct ct_writer *w, struct ct_site_fetch *const *fetch, size_t nsites, uint32_t first_site,
		     const struct ct_type_ids *ids);
/* Runtime type addresses (as seen in the process) and their type ids (an
 * object's, numbered in the file by MAP), for the values of the object whose
 * sites are FIRST_SITE.. FIRST_SITE+NSITES-1: each Go binary (the program,
 * one it exec'd) has its own runtime types, possibly at the same addresses.
 * N may be 0: the chunk only widens the range (call sites found while
 * recording joined the object). */
void ct_writer_rtypes(struct ct_writer *w, uint32_t first_site, uint32_t nsites, const uint64_t *addrs,
		      const uint32_t *ids, size_t n, const struct ct_type_ids *map);
/* The source position of code address PC of process PID (PCPOS chunk), in
 * the object whose sites are FIRST_SITE.. FIRST_SITE+NSITES-1 (a process
 * that exec'd another Go program has the same pid, other code). */
void ct_writer_pcpos(struct ct_writer *w, uint32_t first_site, uint32_t nsites, const struct ct_pcpos *pos);
/* PAYLOAD/e->len: already compacted (ct_fetch_compact). */
void ct_writer_event(struct ct_writer *w, const struct ct_event *e, const void *payload);
void ct_writer_lost(struct ct_writer *w, uint64_t ts, uint64_t n);
/* A process record: WHAT (CT_PROC_*) happened to thread TID of process PID
 * (CHILD: the new process of a fork). */
void ct_writer_proc(struct ct_writer *w, uint64_t ts, uint32_t what, uint32_t pid, uint32_t tid, uint32_t child);
/* A CT_PROC_STALL record: thread TID of PID (running goroutine GOID, 0 for
 * none) waited NS ns, until TS, for calltrace's probe changes. */
void ct_writer_stall(struct ct_writer *w, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t goid, uint32_t ns);
/* A CT_PROC_OFFCPU record: thread TID of PID (running goroutine GOID, 0 for
 * its own calls) was off CPU NS ns, until TS; FLAGS CT_OFFCPU_*. */
void ct_writer_ready(struct ct_writer *w, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t goid);
void ct_writer_offcpu(struct ct_writer *w, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t goid, uint64_t ns,
		      uint32_t flags);
int ct_writer_flush(struct ct_writer *w); /* write the pending event chunk */
uint64_t ct_writer_events(const struct ct_writer *w);
/* The sum of the events' ct_event.silent (CT_SILENT_UNITs) */
uint64_t ct_writer_silent(const struct ct_writer *w);
/* ... and of their ct_event.extra_ns (ns) */
int64_t ct_writer_extra_ns(const struct ct_writer *w);
uint64_t ct_writer_bytes(const struct ct_writer *w);
/* Flushes, writes the STATS chunk (same key/value form as META), closes. */
void ct_writer_stat(struct ct_writer *w, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int ct_writer_close(struct ct_writer *w);
/* Closes and removes the file (nothing worth keeping was written). */
void ct_writer_discard(struct ct_writer *w);

/* ---- reading ---- */
/* What the Go runtime of one traced object (the program, a binary it
 * exec'd) names by address: the entries for the events of sites first_site..
 * first_site+nsites-1 (files before version 8: one for every site). */
struct ct_go_object {
	uint32_t first_site, nsites;
	struct ct_map rtypes; /* runtime type address -> type id + 1 */
	struct ct_map pcpos;  /* pid << 47 ^ pc -> struct ct_pcpos * */
};

/* What readers say of a file whose last chunk is incomplete: record ends
 * every file with whole chunks unless it died or could not write them (it
 * then warns and exits 1: a full disk) */
#define CT_TRUNCATED_WHY "tracer killed, or its disk full?"

struct ct_trace {
	char *path;
	FILE *f;
	long long file_size;
	CT_VEC(struct ct_kv) meta;
	CT_VEC(struct ct_kv) stats; /* empty if the tracer never finished */
	struct ct_file_func *funcs;
	struct ct_names *func_names; /* funcs[i].name demangled (not in the file) */
	size_t nfuncs;
	struct ct_file_site *sites;
	size_t nsites;
	long data_start;  /* file offset of the first chunk after the tables */
	uint32_t version; /* of the file format */
	bool truncated;   /* the last chunk was incomplete or damaged (CT_TRUNCATED_WHY) */
	uint32_t event_passes; /* how often the events were read (ct_iter_init) */
	uint64_t first_ts;/* from meta "clock.start_ns" */
	struct ct_typetab types;           /* argument types */
	struct ct_site_fetch **fetch;      /* per site id, NULL without capture */
	CT_VEC(struct ct_go_object) go_objects; /* RTYPES and PCPOS, per object */
	/* per function, its first site (its own come before any found while
	 * recording), for the sites of the first FIRST_SITES_OF */
	uint32_t *first_site;
	size_t first_sites_of;
};

/* Opens and reads header and tables; fails with one clear line when PATH is
 * missing, not a calltrace file, of a newer version, or damaged before the
 * tables end. */
int ct_trace_open(struct ct_trace *t, const char *path);
/* The same on an open FD (taken over); PATH names it in messages. */
int ct_trace_open_fd(struct ct_trace *t, int fd, const char *path);
void ct_trace_close(struct ct_trace *t);
const char *ct_trace_meta(const struct ct_trace *t, const char *key);
const char *ct_trace_stat(const struct ct_trace *t, const char *key);
/* The type of the Go runtime type at address RTYPE (as the process saw it)
 * in a value of SITE, or CT_TYPE_NONE when the file does not name it. */
uint32_t ct_trace_rtype(const struct ct_trace *t, uint32_t site, uint64_t rtype);
/* Where code address PC of process PID, named by an event of SITE, is in
 * the source, or NULL. */
const struct ct_pcpos *ct_trace_pcpos(const struct ct_trace *t, uint32_t site, uint32_t pid, uint64_t pc);
/* Language is a property of each function, not of the trace: a --follow
 * trace of a C launcher that execs a Go program holds both.  "target.lang"
 * names the launched program's, for display only. */
bool ct_file_func_is_go(const struct ct_file_func *f); /* gc-compiled Go (CT_FN_GO) */
/* runtime.gopark traced for record --parks alone (CT_FN_PARKS) */
bool ct_file_func_parks_only(const struct ct_file_func *f);
/* ... and is F Go assembly (CT_FN_ASM: frames of its own making)? */
bool ct_file_func_is_asm(const struct ct_file_func *f);
/* FROM's code runs on into TO's entry (CT_FN_FALLS, TO right at its end;
 * or TO's entry is inside FROM's code) */
bool ct_file_func_runs_into(const struct ct_file_func *from, const struct ct_file_func *to);
bool ct_trace_func_is_go(const struct ct_trace *t, uint32_t func);
bool ct_trace_has_go(const struct ct_trace *t); /* any function so far */

/* Streams events in file order. */
struct ct_event_iter {
	struct ct_trace *t;
	long pos;
	struct ct_buf chunk;
	struct ct_rd rd;
	uint32_t left; /* events left in the current chunk */
	struct ct_rec_event prev;
	bool done;
	bool follow; /* the file is still being written: at its end, report no
			event now but keep the place (live view) */
};
void ct_iter_init(struct ct_event_iter *it, struct ct_trace *t);
/* Returns true and fills EV, or false at the end (or at a damaged chunk,
 * after which t->truncated is set). */
bool ct_iter_next(struct ct_event_iter *it, struct ct_rec_event *ev);
void ct_iter_free(struct ct_event_iter *it);

/* Helpers for key/value lists. */
const char *ct_kv_get(const struct ct_kv *kv, size_t n, const char *key);

#endif
