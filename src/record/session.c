#include "record/session.h"
#include "record/calibrate.h"
#include "plan/pads.h"
#include "plan/plt.h"
#include "target/goruntime.h"
#include "target/libs.h"
#include "target/overlay.h"
#include "wasm/wasm.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#define FLUSH_EVERY_NS 200000000ULL /* a killed tracer loses at most this */
#define MAX_CALLER_LINKS 120 /* links for exits found while recording: probes.c keeps room for 128 */

static void write_target_meta(struct ct_session *s)
{
	struct ct_writer *w = s->w;
	const struct ct_target *t = &s->target;
	ct_writer_meta(w, "target.path", "%s", s->binary);
	ct_writer_meta(w, "target.build_id", "%s", t->elf.build_id);
	ct_writer_meta(w, "target.lang", "%s", t->lang == CT_LANG_GO ? "go" : "c");
	ct_writer_meta(w, "target.kind", "%s", ct_target_kind(t));
	ct_writer_meta(w, "target.funcs_source", "%s", t->funcs_source);
	ct_writer_meta(w, "target.dwarf", "%s", t->has_dwarf ? "yes" : "no");
	ct_writer_meta(w, "target.pie", "%s", t->elf.pie ? "yes" : "no");
	if (t->lang == CT_LANG_GO) {
		ct_writer_meta(w, "go.version", "%s", t->go_version[0] ? t->go_version : "unknown");
		ct_writer_meta(w, "go.module", "%s", t->main_module ? t->main_module : "");
		if (t->module_from_path)
			ct_writer_meta(w, "go.module_from", "the main package's path (a GOPATH build: no module info)");
		ct_writer_meta(w, "go.abi", "%s", t->regabi ? "register" : "stack");
		ct_writer_meta(w, "go.g_offsets", "goid=%u stack.hi=%u m=%u m.curg=%u gopc=%u tls_g=%lld source=%s",
			       t->gcfg.goid_off, t->gcfg.stack_hi_off, t->gcfg.m_off, t->gcfg.curg_off,
			       t->gcfg.gopc_off, (long long)t->gcfg.tls_g_off, t->gcfg_source);
	}
	if (t->gccgo)
		ct_writer_meta(w, "gccgo.version", "%s", t->go_version[0] ? t->go_version : "unknown");
}

static void write_meta(struct ct_session *s)
{
	struct ct_writer *w = s->w;
	struct utsname u;
	char host[256] = "";
	ct_writer_meta(w, "calltrace.version", "%s", "0.1.0");
	ct_writer_meta(w, "record.cmdline", "%s", s->o.cmdline ? s->o.cmdline : "");
	/* whether a call's time off CPU is known (0 when there was none) */
	ct_writer_meta(w, "record.off_cpu", "%s",
		       s->wasm ? "no (a WebAssembly module: node's thread takes no probe)"
		       : s->o.no_sched ? "no (--no-sched)"
				       : "yes");
	if (s->wasm)
		ct_wasm_run_meta(s->wasm, w);
	else
		write_target_meta(s);
	if (uname(&u) == 0)
		ct_writer_meta(w, "host.kernel", "%s %s", u.sysname, u.release);
	gethostname(host, sizeof(host) - 1);
	ct_writer_meta(w, "host.name", "%s", host);
	ct_writer_meta(w, "host.cpus", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	ct_writer_meta(w, "clock.start_ns", "%llu", (unsigned long long)s->start_ns);
	ct_writer_meta(w, "clock.realtime_ns", "%llu", (unsigned long long)now_real_ns());
	ct_writer_meta(w, "plan.functions", "%u", s->total_funcs);
	ct_writer_meta(w, "plan.sites", "%u", s->total_sites);
	for (size_t k = 0; k < s->nlibs; k++) {
		const struct ct_libbin *lb = &s->libs[k];
		if (lb->catch_only) {
			ct_writer_meta(w, "plan.catch", "%s", lb->path);
			continue;
		}
		ct_writer_meta(w, "library", "%s %s", lb->name, lb->path);
		ct_writer_meta(w, "library.args", "%s %s", lb->name, lb->plan.args_note ? lb->plan.args_note : "on");
	}
	if (!s->wasm) {
		char note[160];
		ct_writer_meta(w, "plan.cheap_entries", "%zu", s->plan.cheap_entries);
		/* with only libraries traced the program has no plan: theirs say why */
		const char *exits_note = s->exits_note ? s->exits_note : s->plan.exits_note;
		for (size_t k = 0; !exits_note && !s->plan.funcs.n && k < s->nlibs; k++)
			exits_note = s->libs[k].plan.exits_note;
		if (exits_note)
			ct_writer_meta(w, "plan.exits", "ret (%s)", exits_note);
		else
			ct_writer_meta(w, "plan.exits", "auto: %zu of %zu functions observed from their callers%s",
				       s->plan.in_caller, s->plan.funcs.n, ct_plan_icall_note(&s->plan, note, sizeof(note)));
		if (s->plan.ahead_entries)
			ct_writer_meta(w, "plan.ahead", "%zu calls seen at the exit probe of the call before (one hit for both)",
				       s->plan.ahead_entries);
	}
	if (s->plan.skipped.n) {
		char *names = ct_plan_skipped_names(&s->plan, 32);
		ct_writer_meta(w, "plan.skipped", "%zu: %s", s->plan.skipped.n, names);
		free(names);
	}
	const char *args_note = s->wasm ? ct_wasm_run_plan(s->wasm)->args_note : s->plan.args_note;
	ct_writer_meta(w, "args", "%s", args_note ? args_note : "on");
	struct ct_buf lim = {0};
	char tmp[128];
	if (s->o.max_depth)
		buf_put(&lim, tmp, snprintf(tmp, sizeof(tmp), "max-depth=%u ", s->o.max_depth));
	if (s->o.min_dur_ns)
		buf_put(&lim, tmp, snprintf(tmp, sizeof(tmp), "min-duration=%lluns ", (unsigned long long)s->o.min_dur_ns));
	for (size_t i = 0; i < s->o.nroots; i++)
		buf_put(&lim, tmp, snprintf(tmp, sizeof(tmp), "root=%s ", s->o.roots[i]));
	if (s->o.sample_n > 1)
		buf_put(&lim, tmp, snprintf(tmp, sizeof(tmp), "sample=1/%u ", s->o.sample_n));
	if (s->o.sample_g_n > 1)
		buf_put(&lim, tmp, snprintf(tmp, sizeof(tmp), "sample-goroutines=1/%u ", s->o.sample_g_n));
	if (s->o.max_events)
		buf_put(&lim, tmp, snprintf(tmp, sizeof(tmp), "max-events=%llu ", (unsigned long long)s->o.max_events));
	if (s->o.max_size)
		buf_put(&lim, tmp, snprintf(tmp, sizeof(tmp), "max-size=%llu ", (unsigned long long)s->o.max_size));
	if (s->o.duration_ns)
		buf_put(&lim, tmp, snprintf(tmp, sizeof(tmp), "duration=%lluns ", (unsigned long long)s->o.duration_ns));
	buf_put(&lim, "", 1);
	ct_writer_meta(w, "limits", "%s", lim.n > 1 ? (char *)lim.p : "none");
	if (s->costs.ok) {
		char calib[CT_COSTS_TEXT_MAX];
		ct_costs_format(&s->costs, calib, sizeof(calib));
		ct_writer_meta(w, "calib", "%s", calib);
	}
	buf_free(&lim);
	if (s->o.args.enabled)
		ct_writer_meta(w, "args.limits", "max_string=%u max_items=%u max_depth=%u",
			       s->o.args.fetch.max_string, s->o.args.fetch.max_items, s->o.args.fetch.max_depth);
}

static bool is_root_name(const struct ct_session_opts *o, const char *name)
{
	for (size_t k = 0; k < o->nroots; k++)
		if (glob_match(o->roots[k], name))
			return true;
	return false;
}

/* --root GLOB or --root 'BIN:GLOB' (BIN: the library or exec'd binary F
 * is in, NULL for the program), as -F names them. */
static bool is_root(const struct ct_session *s, const struct ct_func *f, const char *bin)
{
	size_t n = bin ? strlen(bin) : 0;
	for (size_t k = 0; k < s->o.nroots; k++) {
		const char *g = s->o.roots[k];
		if (ct_names_match(&f->dm, f->name, g) || (bin && !strncmp(g, bin, n) && g[n] == ':' &&
							   ct_names_match(&f->dm, f->name, g + n + 1)))
			return true;
	}
	return false;
}

/* --follow: a function name the program's -F asks for exactly (no wildcard)
 * may be one of a program it execs; marks those T has as seen. */
static void follow_names_in(struct ct_session *s, const struct ct_target *t)
{
	const struct ct_selection *sel = &s->main_sel;
	for (size_t i = 0; s->names_seen && i < sel->ntrace; i++)
		for (size_t j = 0; !s->names_seen[i] && j < t->nfuncs; j++)
			s->names_seen[i] = ct_names_equal(&t->funcs[j].dm, t->funcs[j].name, sel->trace[i]);
}

/* Does calltrace itself map PATH (its own dynamic loader or libc, run as
 * the program)?  Then its launcher's hits before the exec are on the
 * program's own functions too. */
static bool mapped_by_calltrace(const char *path)
{
	struct stat st;
	FILE *f = stat(path, &st) ? NULL : fopen("/proc/self/maps", "re");
	bool found = false;
	char line[PATH_MAX + 128];
	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		unsigned long long ino;
		if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &ino) == 3)
			found = ino == (unsigned long long)st.st_ino && makedev(maj, min) == st.st_dev;
	}
	if (f)
		fclose(f);
	return found;
}

/* Whether SEL picks any function of T that could be probed (plan.c selected). */
static bool selects_any(const struct ct_target *t, const struct ct_selection *sel)
{
	for (size_t j = 0; j < t->nfuncs; j++)
		if (!(t->funcs[j].flags & (CT_FN_NOPROBE | CT_FN_WRAPPER)) && ct_plan_names_selected(t, &t->funcs[j], sel))
			return true;
	return false;
}

char *ct_session_names_missing(const struct ct_session *s)
{
	const struct ct_selection *sel = &s->main_sel;
	if (!s->o.follow || s->wasm || !sel->ntrace)
		return NULL;
	struct ct_buf b = {0};
	size_t n = 0;
	for (size_t i = 0; s->names_seen && i < sel->ntrace; i++) {
		if (s->names_seen[i] || strpbrk(sel->trace[i], "*?["))
			continue;
		if (n++)
			buf_put(&b, ", ", 2);
		buf_put(&b, sel->trace[i], strlen(sel->trace[i]));
	}
	char *r = NULL;
	if (n)
		r = xasprintf("no function named %.*s in %s or any program it ran (--follow); see: calltrace list PROGRAM",
			      (int)b.n, (char *)b.p, s->binary);
	else if (!s->total_funcs && !ct_session_traced_libs(s)) {
		/* (only wildcards, none matching anything anywhere) */
		for (size_t i = 0; i < sel->ntrace; i++) {
			if (i)
				buf_put(&b, ", ", 2);
			buf_put(&b, "'", 1);
			buf_put(&b, sel->trace[i], strlen(sel->trace[i]));
			buf_put(&b, "'", 1);
		}
		r = xasprintf("no traceable function matches %.*s in %s or any program it ran (--follow); see: calltrace "
			      "list PROGRAM", (int)b.n, (char *)b.p, s->binary);
	}
	buf_free(&b);
	return r;
}

/* Splits -F/-N into the program's globs and per-library ones. */
static int split_libraries(struct ct_session *s, const struct ct_selection *in, struct ct_selection *out, int pid)
{
	const char **globs[2] = {in->trace, in->exclude};
	size_t ns[2] = {in->ntrace, in->nexclude};
	const char **mine[2] = {xcalloc(in->ntrace + 1, sizeof(char *)), xcalloc(in->nexclude + 1, sizeof(char *))};
	size_t nmine[2] = {0, 0};
	for (int which = 0; which < 2; which++) {
		for (size_t i = 0; i < ns[which]; i++) {
			const char *g = globs[which][i];
			size_t colon;
			if (!ct_lib_glob(g, &colon)) {
				mine[which][nmine[which]++] = g;
				continue;
			}
			char *name = xasprintf("%.*s", (int)colon, g);
			struct ct_libbin *lb = NULL;
			for (size_t k = 0; k < s->nlibs; k++)
				if (!strcmp(s->libs[k].name, name))
					lb = &s->libs[k];
			if (!lb) {
				if (s->nlibs + 1 >= CT_MAX_BINS) {
					free(name);
					return ct_fail("too many libraries (at most %d)", CT_MAX_BINS - 1);
				}
				/* where the process maps it, or where ld.so would find it */
				char *path = pid > 0 ? ct_lib_resolve_pid(pid, name, NULL) : ct_lib_resolve_exe(s->binary, name);
				if (!path) {
					/* a program that is no ELF binary: that is the problem, not its libraries */
					struct ct_elf exe;
					char *why = xstrdup(ct_error());
					if (pid <= 0 && ct_elf_open(&exe, s->binary)) {
						free(why);
						free(name);
						return -1;
					}
					if (pid <= 0)
						ct_elf_close(&exe);
					int rc = name[0] == '/' ? ct_fail("cannot find library %s: %s", name, why)
								: ct_fail("cannot find library %s: %s; give its path, e.g. -F "
									  "'/usr/lib/x86_64-linux-gnu/%s:GLOB'", name, why, name);
					free(why);
					free(name);
					return rc;
				}
				s->libs = xrealloc(s->libs, (s->nlibs + 1) * sizeof(*s->libs));
				lb = &s->libs[s->nlibs++];
				memset(lb, 0, sizeof(*lb));
				lb->name = name;
				lb->path = path;
			} else {
				free(name);
			}
			if (which == 0)
				CT_VEC_PUSH(lb->trace, g + colon + 1);
			else
				CT_VEC_PUSH(lb->exclude, g + colon + 1);
		}
	}
	for (size_t k = 0; k < s->nlibs; k++)
		if (!s->libs[k].trace.n)
			return ct_fail("-N '%s:...' needs a -F '%s:GLOB' to exclude from", s->libs[k].name, s->libs[k].name);
	*out = (struct ct_selection){.trace = mine[0], .ntrace = nmine[0], .exclude = mine[1], .nexclude = nmine[1],
				     .exits = in->exits, .no_interim = in->no_interim, .go_markers = in->go_markers,
				     .catch_marker = in->catch_marker, .limits = in->limits, .go_parks = in->go_parks,
				     /* (a park's time off CPU, and the Go scheduler's
				      * preemptions, are times off CPU: not with --no-sched) */
				     .go_scheduler = in->go_parks && !s->o.no_sched};
	return 0;
}

/* -A/-R for the functions of LB (a library, or a binary exec'd under
 * --follow): the globs that name it ('LIB:GLOB', as -F does), and those that
 * name no library (as --root's). */
/* Does glob G name LB ('LIB:GLOB')?  Then *AFTER is the GLOB. */
static bool names_object(const char *g, const struct ct_libbin *lb, const char **after)
{
	size_t colon;
	*after = g;
	if (!ct_lib_glob(g, &colon) || colon != strlen(lb->name) || strncmp(g, lb->name, colon))
		return false;
	*after = g + colon + 1;
	return true;
}

static void object_args(struct ct_session *s, struct ct_libbin *lb)
{
	const struct ct_args_opts *o = &s->o.args;
	const char *const *in[2] = {o->args, o->rets};
	size_t nin[2] = {o->nargs, o->nrets};
	for (int which = 0; which < 2; which++)
		for (size_t i = 0; i < nin[which]; i++) {
			const char *g = in[which][i], *mine;
			size_t colon;
			if (!names_object(g, lb, &mine) && ct_lib_glob(g, &colon))
				continue; /* another library's */
			if (which == 0)
				CT_VEC_PUSH(lb->arg_globs, mine);
			else
				CT_VEC_PUSH(lb->ret_globs, mine);
		}
	lb->args = *o;
	lb->args.args = lb->arg_globs.v;
	lb->args.nargs = lb->arg_globs.n;
	lb->args.rets = lb->ret_globs.v;
	lb->args.nrets = lb->ret_globs.n;
	/* -A/-R chose other functions only: none of these (no -A and no -R
	 * would mean all) */
	if ((o->nargs || o->nrets) && !lb->args.nargs && !lb->args.nrets)
		lb->args.enabled = false;
}

/* The captures of LB's functions, planned as the program's are (a Go
 * binary's interface values name their dynamic types in its own RTYPES). */
static void plan_object_args(struct ct_session *s, struct ct_libbin *lb)
{
	if (s->o.args.enabled && !lb->args.enabled) {
		lb->plan.args_note = "none chosen (-A/-R)";
		return;
	}
	ct_plan_args(&lb->plan, &lb->args);
	bool named = false; /* did -A/-R name this library? */
	for (size_t i = 0; i < s->o.args.nargs + s->o.args.nrets; i++) {
		const char *g = i < s->o.args.nargs ? s->o.args.args[i] : s->o.args.rets[i - s->o.args.nargs], *mine;
		named |= names_object(g, lb, &mine);
	}
	if (named && lb->plan.args_note)
		ct_warn("%s: %s", lb->name, lb->plan.args_note);
}

/* An exit probe planned before recording in another file (PATH) than its
 * object BIN's, site LOCAL of its plan; a return address there (file DEV,
 * INO, offset OFF) that the tail jump probe LOCAL of object BIN looks up. */
struct ct_early_exit {
	uint32_t bin, local;
	const char *path;
};
struct ct_early_ret {
	uint32_t bin, local, dev;
	uint64_t ino, off;
};

static void plan_returns_elsewhere(struct ct_session *s);

size_t ct_session_traced_libs(const struct ct_session *s)
{
	size_t n = 0;
	for (size_t k = 0; k < s->nlibs; k++)
		n += !s->libs[k].catch_only;
	return n;
}

/* C++ exceptions: where a handler begins (__cxa_begin_catch, called by the
 * frame that catches), the frames deeper than that one were unwound -- also
 * where no traced code catches: a template's handler in the program
 * (std::async's task setter), libstdc++'s own catch (...) (an ostream's).
 * The program's libstdc++ (as it loads it, or process PID maps it) gets that
 * CATCH marker as an object of its own, none of its functions traced,
 * unless -F 'LIB:GLOB' traces it (its plan has the marker: catch_marker);
 * a program linked with it statically has it in its own plan.  Not under
 * record-time limits (their kernel-side stacks do not follow it). */
static void add_catch_library(struct ct_session *s, int pid)
{
	static const char lib[] = "libstdc++.so.6";
	if (!s->main_sel.catch_marker || s->o.follow)
		return;
	char *path = pid > 0 ? ct_lib_resolve_pid(pid, lib, NULL) : ct_lib_resolve_exe(s->binary, lib);
	struct stat st, ls;
	if (!path || stat(path, &st)) {
		free(path);
		return; /* it loads none */
	}
	for (size_t k = 0; k < s->nlibs; k++)
		if (stat(s->libs[k].path, &ls) == 0 && ls.st_dev == st.st_dev && ls.st_ino == st.st_ino) {
			free(path);
			return;
		}
	if (s->nlibs + 1 >= CT_MAX_BINS) {
		ct_debug("no C++ catch marker: too many libraries");
		free(path);
		return;
	}
	s->libs = xrealloc(s->libs, (s->nlibs + 1) * sizeof(*s->libs));
	struct ct_libbin *lb = &s->libs[s->nlibs++];
	memset(lb, 0, sizeof(*lb));
	lb->name = xstrdup(lib);
	lb->path = path;
	lb->catch_only = true;
}

static int prepare_libraries(struct ct_session *s)
{
	s->total_funcs = (uint32_t)s->plan.funcs.n;
	s->total_sites = (uint32_t)s->plan.sites.n;
	s->main_nsites = s->total_sites;
	for (size_t k = 0; k < s->nlibs; k++) {
		struct ct_libbin *lb = &s->libs[k];
		if (lb->catch_only) {
			/* (the last one: add_catch_library) */
			if (ct_target_open(&lb->target, lb->path) || ct_plan_catch_only(&lb->plan, &lb->target)) {
				ct_debug("no C++ catch marker: %s", ct_error());
				if (lb->target.elf.path)
					ct_target_close(&lb->target);
				free(lb->name);
				free(lb->path);
				s->nlibs--;
			}
			continue;
		}
		if (ct_target_open(&lb->target, lb->path))
			return -1;
		object_args(s, lb);
		struct ct_selection sel = {.trace = lb->trace.v, .ntrace = lb->trace.n, .exclude = lb->exclude.v,
					   .nexclude = lb->exclude.n, .exits = s->main_sel.exits, .args = &lb->args,
					   .limits = s->main_sel.limits, .catch_marker = s->main_sel.catch_marker,
					   .fixed_sites = true};
		if (ct_plan_build(&lb->plan, &lb->target, &sel))
			return -1;
		plan_object_args(s, lb);
	}
	plan_returns_elsewhere(s);
	for (size_t k = 0; k < s->nlibs; k++) {
		struct ct_libbin *lb = &s->libs[k];
		lb->func_base = s->total_funcs;
		lb->site_base = s->total_sites;
		lb->nsites = (uint32_t)lb->plan.sites.n;
		s->total_funcs += (uint32_t)lb->plan.funcs.n;
		s->total_sites += (uint32_t)lb->plan.sites.n;
		ct_debug("library %s (%s): %zu functions, %zu sites", lb->name, lb->path, lb->plan.funcs.n,
			 lb->plan.sites.n);
	}
	return 0;
}

/* A WebAssembly module: no probes; the runner's recorder applies the limits. */
static int prepare_wasm(struct ct_session *s)
{
	const struct ct_session_opts *o = &s->o;
	if (o->follow || o->lib_pid)
		return ct_fail("%s is a WebAssembly module: --follow and -p do not apply to it", s->binary);
	if (o->sel.go_parks)
		ct_warn("--parks: %s is a WebAssembly module, not a native Go program: ignored (-F runtime.gopark traces a Go "
			"module's parks as calls)", s->binary);
	struct ct_wasm_limits lim = {0};
	lim.flags = (o->max_depth ? CT_LIM_DEPTH : 0) | (o->min_dur_ns ? CT_LIM_MINDUR : 0) |
		    (o->nroots ? CT_LIM_ROOT : 0) | (o->sample_n > 1 ? CT_LIM_SAMPLE : 0) |
		    (o->sample_g_n > 1 ? CT_LIM_SAMPLE_G : 0) | (o->max_events ? CT_LIM_MAXEV : 0);
	lim.max_depth = o->max_depth;
	lim.sample_n = o->sample_n;
	lim.sample_g_n = o->sample_g_n;
	lim.min_dur_ns = o->min_dur_ns;
	lim.max_events = o->max_events;
	lim.roots = o->roots;
	lim.nroots = o->nroots;
	s->wasm = ct_wasm_run_prepare(s->binary, &o->sel, &o->args, &lim);
	if (!s->wasm)
		return -1;
	const struct ct_wasm_plan *p = ct_wasm_run_plan(s->wasm);
	size_t nroot = 0;
	for (size_t i = 0; i < p->nfuncs; i++)
		nroot += is_root_name(o, p->funcs[i].name);
	if (o->nroots && !nroot)
		return ct_fail("no traced function matches --root; roots must be among the traced functions (-F)");
	s->total_funcs = (uint32_t)p->nfuncs;
	s->total_sites = (uint32_t)p->nsites;
	s->w = ct_writer_create(o->output);
	return s->w ? 0 : -1;
}

int ct_session_exec(struct ct_session *s, char **prog, const char **path, char ***argv)
{
	if (!s->wasm)
		return 0;
	return ct_wasm_run_exec(s->wasm, prog, path, argv);
}

/* The fetch program site I of PLAN runs, NULL if none. */
static const struct ct_fetch *site_program(const struct ct_plan *plan, size_t i)
{
	return plan->fetch && plan->fetch[i] &&
			       (ct_site_is_probe(&plan->sites.v[i]) || ct_plan_site_runs_fetch(plan, i))
		       ? &plan->fetch[i]->prog
		       : NULL;
}

/* The fetch programs of PLAN's probes, at their ids in the file's tables,
 * and the classes of their hits. */
static int set_fetches(struct ct_session *s, const struct ct_plan *plan, uint32_t site_base)
{
	for (size_t i = 0; i < plan->sites.n; i++) {
		const struct ct_fetch *f = site_program(plan, i);
		if (f && ct_probes_set_fetch(s->probes, site_base + (uint32_t)i, f))
			return -1;
		if (ct_site_is_probe(&plan->sites.v[i]))
			ct_probes_set_site_class(s->probes, site_base + (uint32_t)i,
						 ct_hit_class_of(plan->sites.v[i].kind, ct_plan_site_flags(plan, i)));
	}
	return 0;
}

/* How many distinct fetch programs the plans' sites run (+ 1: index 0). */
static uint32_t count_programs(const struct ct_session *s)
{
	struct ct_fetch_programs t = {0};
	bool added;
	for (size_t k = 0; k <= s->nlibs; k++) {
		const struct ct_plan *plan = k ? &s->libs[k - 1].plan : &s->plan;
		for (size_t i = 0; i < plan->sites.n; i++) {
			const struct ct_fetch *f = site_program(plan, i);
			if (f)
				ct_fetch_program_index(&t, f, UINT32_MAX, &added);
		}
	}
	uint32_t n = t.n ? t.n : 1;
	ct_fetch_programs_free(&t);
	return n;
}

/* How many conditional tail jumps the plans probe (event.h CT_COOKIE_JCC). */
static uint32_t count_jcc(const struct ct_session *s)
{
	uint32_t n = 0;
	for (size_t k = 0; k <= s->nlibs; k++) {
		const struct ct_plan *p = k ? &s->libs[k - 1].plan : &s->plan;
		for (size_t i = 0; i < p->sites.n; i++)
			n += p->sites.v[i].cond != 0;
	}
	return n;
}

/* Does a probe of PLAN check where a tail jump to untraced code returns? */
static bool has_tail_checks(const struct ct_plan *plan)
{
	const uint64_t *rets;
	size_t n;
	for (size_t i = 0; i < plan->sites.n; i++)
		if (ct_site_is_probe(&plan->sites.v[i]) && ct_plan_tail_check(plan, i, &rets, &n))
			return true;
	return false;
}

/* How many return addresses the probes may report: one for every fourth
 * function observed from its callers, at least CT_MAX_CALLERS (each a
 * hash entry, two sites and a fetch program's room kept for it).
 * cc1plus -F '*' (19,503 such functions) reached 1,024 in two minutes,
 * and the calls from every later one ended unobserved. */
static uint32_t callers_budget(const struct ct_session *s)
{
	size_t in_caller = s->plan.in_caller;
	for (size_t k = 0; k < s->nlibs; k++)
		in_caller += s->libs[k].plan.in_caller;
	size_t n = in_caller / 4;
	return n < CT_MAX_CALLERS ? CT_MAX_CALLERS : n > CT_MAX_CALLERS_BIG ? CT_MAX_CALLERS_BIG : (uint32_t)n;
}

int ct_session_prepare(struct ct_session *s, const char *binary, const char *probe_path,
		       const struct ct_session_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->o = *o;
	s->binary = xstrdup(binary);
	if (ct_wasm_is_module(probe_path ? probe_path : binary))
		return prepare_wasm(s);
	struct ct_selection sel = o->sel, main_sel;
	/* Record-time limits keep shadow stacks in the kernel that follow the
	 * callee-side rules only: with them, exits stay at RET. */
	bool shadow = o->max_depth || o->min_dur_ns || o->nroots || o->sample_n > 1 || o->sample_g_n > 1;
	if (shadow && sel.exits == CT_EXITS_AUTO) {
		sel.exits = CT_EXITS_RET;
		s->exits_note = "record-time limits (their kernel-side stacks follow RET probes)";
	}
	sel.go_markers = !shadow;
	sel.catch_marker = !shadow;
	sel.limits = shadow;
	if (split_libraries(s, &sel, &main_sel, o->lib_pid))
		return -1;
	main_sel.args = &s->o.args;
	/* The program's (and under --follow each exec'd binary's) functions
	 * whose callers only a CHECK finds (address-taken, exported) are
	 * observed from their callers, with interim RETs: the sites found
	 * while recording take the file's next ids, after those of binaries
	 * exec'd before (report_callers, below); a library's (LIB:GLOB) keep
	 * their RETs (split_libraries: fixed_sites). */
	main_sel.fixed_sites = false;
	/* --follow: a name may be that of a program it execs (the launcher
	 * `sh -c` has none of them): which no program had is said at the end */
	main_sel.lenient |= o->follow;
	s->o.sel = main_sel;
	s->main_sel = main_sel;
	uint64_t t0 = now_mono_ns();
	if (ct_target_open(&s->target, probe_path ? probe_path : binary))
		return -1;
	s->target_open = true;
	s->program_is_ours = mapped_by_calltrace(probe_path ? probe_path : binary);
	size_t stubs = ct_plt_add_funcs(&s->target, &main_sel);
	uint64_t t1 = now_mono_ns();
	ct_debug("target: %s, %zu functions from %s, %s%s in %.1f ms", binary, s->target.nfuncs,
		 s->target.funcs_source, s->target.lang == CT_LANG_GO ? "Go " : "C",
		 s->target.go_version, (t1 - t0) / 1e6);
	if (main_sel.ntrace == 0 && s->nlibs && o->sel.ntrace) {
		/* only library functions were asked for: nothing of the program */
		s->plan.t = &s->target;
	} else if (!s->target.nfuncs && s->nlibs) {
		/* a stripped program (-F '*' -F 'LIB:GLOB'): its own globs name
		 * nothing, the libraries' functions are what can be traced */
		ct_warn("%s has no function symbols (it is stripped, and no separate debug file was found): only its libraries' functions are traced",
			binary);
		s->plan.t = &s->target;
	} else if (o->follow && main_sel.ntrace && !selects_any(&s->target, &main_sel)) {
		ct_debug("--follow: nothing of %s is chosen; tracing the programs it runs", binary);
		s->plan.t = &s->target;
	} else if (ct_plan_build(&s->plan, &s->target, &main_sel)) {
		return -1;
	} else if (stubs && !main_sel.ntrace) {
		/* a stripped program, by default: say what it is traced as */
		char dpath[PATH_MAX], where[3 * PATH_MAX], own[64] = "";
		ct_debug_file_find(s->target.elf.elf, s->target.elf.path, dpath, sizeof(dpath), where, sizeof(where));
		if (s->target.nfuncs > stubs)
			snprintf(own, sizeof(own), "its %zu exported functions and ", s->target.nfuncs - stubs);
		ct_warn("%s is stripped, and no separate debug file was found%s%s%s: tracing %sits calls of library "
			"functions (NAME@plt); for its own functions install its debug symbols (Debian: its -dbgsym "
			"package) or rebuild it without -s; -F 'LIB:GLOB' traces its libraries' functions",
			binary, where[0] ? " (none at " : "", where, where[0] ? ")" : "", own);
	}
	s->plan_built = true;
	if (o->follow) {
		s->names_seen = xcalloc(main_sel.ntrace + 1, sizeof(*s->names_seen));
		follow_names_in(s, &s->target);
	}
	if (s->plan.skipped.n) {
		char *names = ct_plan_skipped_names(&s->plan, 8);
		ct_warn("%zu function%s cannot be probed and %s not traced: %s (see: calltrace list %s)", s->plan.skipped.n,
			s->plan.skipped.n > 1 ? "s" : "", s->plan.skipped.n > 1 ? "are" : "is", names, binary);
		free(names);
	}
	ct_plan_args(&s->plan, &o->args);
	add_catch_library(s, o->lib_pid);
	if (prepare_libraries(s))
		return -1;
	uint64_t t2 = now_mono_ns();
	ct_debug("plan: %zu functions, %zu sites (%zu cheap entry sites, %zu single-stepped), arguments of %zu functions%s%s in %.1f ms",
		 s->plan.funcs.n, s->plan.sites.n, s->plan.cheap_entries, s->plan.slow_entries,
		 s->plan.args_funcs, s->plan.args_note ? ": " : "", s->plan.args_note ? s->plan.args_note : "",
		 (t2 - t1) / 1e6);
	if (s->plan.args_incomplete)
		ct_debug("%zu functions have parameters DWARF does not list (blank _); those without a DWARF location are shown unavailable",
			 s->plan.args_incomplete);

	struct ct_probes_opts po = {0};
	po.ringbuf_bytes = o->ringbuf_bytes;
	po.bins[0] = s->target.gcfg;
	/* Calls from call sites not planned (a CHECK's), and tail jumps to
	 * untraced code that return where no probe watches: their exits are
	 * planned and probed while recording, with the file's next site ids
	 * (under --follow too: those of binaries exec'd later come after the
	 * ones found by then, and found ones after theirs; not with
	 * record-time limits, whose kernel-side stacks know exits at return
	 * addresses only). */
	bool tail_checks = has_tail_checks(&s->plan);
	for (size_t k = 0; k < s->nlibs; k++)
		tail_checks |= has_tail_checks(&s->libs[k].plan);
	po.report_callers = (s->plan.in_caller || tail_checks || o->follow) && !shadow; /* (--follow: an exec'd binary's may) */
	s->max_callers = po.max_callers = callers_budget(s);
	/* ids for those sites, then the calibration's */
	s->found_max = po.report_callers ? 2 * s->max_callers : 0;
	s->found_end = s->total_sites + s->found_max;
	po.nsites = s->found_end + CT_CALIB_SITES;
	/* the plans' programs, and room for one each of the sites after theirs */
	po.nprograms = count_programs(s) + (po.nsites - s->total_sites);
	ct_debug("%u distinct argument fetch programs for %u sites", po.nprograms - (po.nsites - s->total_sites) - 1,
		 s->total_sites);
	po.filter_pids = o->follow;
	po.nfile_rets = (uint32_t)s->early_rets.n;
	po.njcc = o->follow ? 1u << 16 : count_jcc(s) + 256; /* (libraries loaded later add theirs) */
	/* the plans' call sites, the return sites their tail jumps to
	 * untraced code check, one for each caller a CHECK reports (it
	 * reports each at most once) and as many for tail jumps that check
	 * found ones (watch_tails), the calibration's; --follow's binaries
	 * add theirs later */
	if (!o->follow) {
		po.max_planned = (uint32_t)(s->plan.planned.n + ct_plan_tail_check_entries(&s->plan)) +
				 (po.report_callers ? 2 * s->max_callers : 0) + CT_CALIB_PLANNED;
		for (size_t k = 0; k < s->nlibs; k++)
			po.max_planned += (uint32_t)(s->libs[k].plan.planned.n +
						     ct_plan_tail_check_entries(&s->libs[k].plan));
	}
	struct stat bst;
	if (o->follow && stat(probe_path ? probe_path : binary, &bst) == 0)
		po.follow_ino = bst.st_ino;
	po.bins[0].is_go = s->target.lang == CT_LANG_GO;
	po.max_depth = o->max_depth;
	po.min_dur_ns = o->min_dur_ns;
	po.max_events = o->max_events;
	po.sample_n = o->sample_n;
	po.sample_g_n = o->sample_g_n;
	po.limits = (o->max_depth ? CT_LIM_DEPTH : 0) | (o->min_dur_ns ? CT_LIM_MINDUR : 0) |
		    (o->nroots ? CT_LIM_ROOT : 0) | (o->sample_n > 1 ? CT_LIM_SAMPLE : 0) |
		    (o->sample_g_n > 1 ? CT_LIM_SAMPLE_G : 0) | (o->max_events ? CT_LIM_MAXEV : 0);
	if (o->nroots) {
		size_t nroot = 0;
		for (size_t i = 0; i < s->plan.funcs.n; i++)
			nroot += is_root(s, s->plan.funcs.v[i].fn, NULL);
		for (size_t l = 0; l < s->nlibs; l++)
			for (size_t i = 0; i < s->libs[l].plan.funcs.n; i++)
				nroot += is_root(s, s->libs[l].plan.funcs.v[i].fn, s->libs[l].name);
		if (!nroot)
			return ct_fail("no traced function matches --root; roots must be among the traced functions (-F)");
	}
	if (s->total_sites >= CT_MAX_SITES)
		return ct_fail("%u probe sites is more than calltrace supports (%u); narrow the selection with -F",
			       s->total_sites, CT_MAX_SITES);
	s->probes = ct_probes_load(&po);
	if (!s->probes)
		return -1;
	if (o->follow && ct_probes_guard(s->probes))
		return -1;
	if (set_fetches(s, &s->plan, 0))
		return -1;
	for (size_t k = 0; k < s->nlibs; k++)
		if (set_fetches(s, &s->libs[k].plan, s->libs[k].site_base))
			return -1;
	s->compact = xmalloc(CT_MAX_PAYLOAD * 2);
	/* What a hit costs here, for replay's overhead correction (not under
	 * --follow, whose probes see listed processes only, nor --max-events,
	 * whose budget the calibration's events would take). */
	size_t r14 = 0; /* the g the hits read: as most of the program's */
	for (size_t i = 0; i < s->plan.sites.n; i++)
		r14 += s->plan.sites.v[i].gsrc == CT_G_R14;
	unsigned classes = ct_plan_hit_classes(&s->plan);
	for (size_t k = 0; k < s->nlibs; k++)
		classes |= ct_plan_hit_classes(&s->libs[k].plan);
	if (!o->follow && !o->max_events &&
	    !(s->calib = ct_calib_start(s->probes, po.nsites - CT_CALIB_SITES, &po.bins[0],
					2 * r14 > s->plan.sites.n ? CT_G_R14 : CT_G_NONE, classes, &s->costs)))
		ct_debug("no overhead correction: %s", ct_error());
	else if (s->calib && s->costs.ok)
		ct_probes_set_silent_weights(s->probes, &s->costs);
	s->hits_known = ct_probes_hits_total(s->probes, &s->hits_at_start) == 0;
	/* (a calibration whose events the ring had no room for: not the program's losses) */
	s->lost_base = ct_probes_lost(s->probes);
	s->loss_gen = ct_probes_loss_gen(s->probes);
	uint64_t t3 = now_mono_ns();
	ct_debug("BPF programs loaded in %.1f ms (ring buffer %llu KiB)", (t3 - t2) / 1e6,
		 (unsigned long long)(o->ringbuf_bytes >> 10));

	s->w = ct_writer_create(o->output);
	if (!s->w)
		return -1;
	return 0;
}

/* The attach cookie of site I of PLAN (event.h), the file's site ID. */
static uint64_t site_cookie(struct ct_session *s, const struct ct_plan *plan, size_t i, uint32_t id,
			    uint32_t func_base, uint32_t bin)
{
	const struct ct_plan_site *site = &plan->sites.v[i];
	struct ct_cookie_parts cp = {0};
	cp.site = id;
	cp.gsrc = site->gsrc;
	cp.bin = bin;
	cp.fetch = plan->fetch && plan->fetch[i];
	cp.kind = site->kind;
	/* the same bit: a TAIL's target is traced; a CHECK's function is
	 * called indirectly (which counter its unplanned calls go to) */
	cp.tail_traced = site->kind == CT_SITE_CHECK ? (site->flags & CT_SITEF_INDIRECT) != 0
			 : site->kind == CT_SITE_RET	 ? site->interim /* (CT_COOKIE_INTERIM) */
			 : site->kind == CT_SITE_RETSITE ? 0 /* (CT_COOKIE_ICALL_EXIT: attach_icall_exits sets it) */
						     : site->target_func != CT_NOFUNC || (site->flags & CT_SITEF_INDIRECT);
	/* and an ENTRY's: its function's RET is the same instruction */
	for (size_t k = site->next; site->kind == CT_SITE_ENTRY && k < plan->sites.n; k = plan->sites.v[k].next) {
		const struct ct_plan_site *role = &plan->sites.v[k];
		cp.tail_traced |= role->kind == CT_SITE_RET && role->func == site->func;
		/* or its tail jump (for the kernel's shadow stack under limits) */
		if (role->kind == CT_SITE_TAIL && role->func == site->func) {
			cp.entry_tail = 1;
			cp.entry_tail_traced = role->target_func != CT_NOFUNC || (role->flags & CT_SITEF_INDIRECT);
		}
	}
	/* a function running on into the next one's entry (the next id) */
	if (site->kind == CT_SITE_ENTRY && site->func != CT_NOFUNC && site->func + 1 < plan->funcs.n &&
	    plan->funcs.v[site->func].falls_through &&
	    plan->funcs.v[site->func + 1].fn->entry == plan->funcs.v[site->func].fn->end)
		cp.falls = 1;
	cp.call_walk = site->kind != CT_SITE_ENTRY && ct_plan_call_walks(plan, i);
	/* a conditional tail jump or a call seen ahead on one way of a jump
	 * among its roles: the probe asks the flags which way it goes (one
	 * instruction, one condition) */
	for (size_t k = i; site->kind != CT_SITE_ENTRY && k < plan->sites.n; k = plan->sites.v[k].next) {
		const struct ct_plan_site *role = &plan->sites.v[k];
		if ((role->kind != CT_SITE_TAIL && role->kind != CT_SITE_CALL) || !role->cond)
			continue;
		/* (alone, it sends nothing when the jump does not go -- but a
		 * call seen on the way it does not take is made just then) */
		bool alone = k == i && site->next == CT_NOSITE && !(role->flags & CT_SITEF_FALL);
		uint32_t cond = (uint32_t)(role->cond - 1) | (alone ? CT_JCC_ALONE : 0);
		if (ct_probes_set_jcc(s->probes, id, cond) == 0)
			cp.jcc = 1;
		else
			ct_debug("%s", ct_error()); /* (taken for a jump each time, as before) */
		break;
	}
	const uint64_t *rets;
	size_t nrets;
	cp.retcheck = ct_plan_tail_check(plan, i, &rets, &nrets);
	cp.func = site->kind == CT_SITE_CHECK	  ? site->sp_drop
		  : site->kind == CT_SITE_GOREADY ? (uint32_t)site->key_adj /* CT_GOSCHED_* */
		  : site->func == CT_NOFUNC	  ? 0
						  : func_base + site->func;
	cp.root = site->func != CT_NOFUNC && is_root(s, plan->funcs.v[site->func].fn, bin ? s->libs[bin - 1].name : NULL);
	return CT_COOKIE(cp);
}

/* Object BIN's exit probes in other files planned before recording (one
 * link per file), then the return addresses there its tail jumps look up:
 * once the probes are in, a jump not flagged unwatched has one. */
static int attach_early(struct ct_session *s, const struct ct_plan *plan, uint32_t site_base, uint32_t func_base,
			uint32_t bin, int pid)
{
	bool *done = xcalloc(s->early_exits.n + 1, sizeof(*done));
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < s->early_exits.n; i++) {
		if (done[i] || s->early_exits.v[i].bin != bin)
			continue;
		CT_VEC(uint64_t) xo = {0}, xc = {0};
		for (size_t j = i; j < s->early_exits.n; j++) {
			const struct ct_early_exit *x = &s->early_exits.v[j];
			if (done[j] || x->bin != bin || strcmp(x->path, s->early_exits.v[i].path))
				continue;
			done[j] = true;
			CT_VEC_PUSH(xo, plan->sites.v[x->local].offset);
			CT_VEC_PUSH(xc, site_cookie(s, plan, x->local, site_base + x->local, func_base, bin));
		}
		struct ct_attach a = {s->early_exits.v[i].path, pid, NULL, NULL, 0, xo.v, xc.v, xo.n};
		rc = ct_probes_attach(s->probes, &a);
		if (rc == 0)
			ct_debug("attached %zu exits in %s of calls into %s", xo.n, a.path, s->libs[bin - 1].name);
		CT_VEC_FREE(xo);
		CT_VEC_FREE(xc);
	}
	free(done);
	for (size_t i = 0; rc == 0 && i < s->early_rets.n; i++) {
		const struct ct_early_ret *r = &s->early_rets.v[i];
		struct ct_file_ret k = {site_base + r->local, r->dev, r->ino, r->off};
		if (r->bin == bin)
			rc = ct_probes_add_file_ret(s->probes, &k);
	}
	return rc;
}

static void attach_interim(struct ct_session *s, const struct ct_plan *plan, size_t n, uint32_t bin, int pid);

/* The roles probe site I of PLAN plays: its own kind and those its `next`
 * chain names (one probe is often a call's exit and the next call's CALL).
 * Bit 0: one opens a call (or marks where a goroutine goes); bit 1: one
 * ends a call.  attach_plan attaches by it. */
#define ROLE_OPENS 1u
#define ROLE_ENDS 2u
static unsigned probe_roles(const struct ct_plan *plan, size_t i)
{
	unsigned roles = 0;
	for (uint32_t k = (uint32_t)i, n = 0; k < plan->sites.n && n < 64; k = plan->sites.v[k].next, n++) {
		enum ct_site_kind kind = plan->sites.v[k].kind;
		roles |= kind == CT_SITE_ENTRY || kind == CT_SITE_GOEXIT || kind == CT_SITE_CALL || kind == CT_SITE_CHECK ||
				 kind == CT_SITE_RECOVER || kind == CT_SITE_DEFERRET
			 ? ROLE_OPENS
			 : ROLE_ENDS;
	}
	return roles;
}

struct offset_cookie {
	uint64_t off, cookie;
};

static int cmp_offset_down(const void *x, const void *y)
{
	const struct offset_cookie *a = x, *b = y;
	return a->off < b->off ? 1 : a->off > b->off ? -1 : 0;
}

static const uint8_t *elf_code_at(void *ctx, uint64_t addr, size_t *len)
{
	for (size_t n = 15; n; n--) {
		const uint8_t *b = ct_elf_bytes_at(ctx, addr, n);
		if (b) {
			*len = n;
			return b;
		}
	}
	return NULL;
}

/* A program about to start (launched, or exec'd and held): its first probe
 * hit and its first single-step on its way to main (ct_warm_up_site), not
 * in the first traced calls, which they made look 0.1-0.5 ms longer.  (An
 * attached process had them, or has them in its next calls.) */
static void warm_up(struct ct_session *s, const struct ct_target *t, const char *path, int pid)
{
	GElf_Ehdr eh;
	if (getenv("CALLTRACE_NO_WARM_UP")) /* (for bench/correction.py's comparison) */
		return;
	if (!gelf_getehdr(t->elf.elf, &eh) || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		return;
	uint64_t at = ct_warm_up_site(eh.e_entry, elf_code_at, (void *)&t->elf);
	int64_t off = at ? ct_elf_vaddr_to_offset(&t->elf, at) : -1;
	if (off < 0 || ct_probes_warm_up(s->probes, path, pid, (uint64_t)off))
		ct_debug("no warm-up probe in %s", path);
	else {
		s->warm_ups++;
		ct_debug("warm-up probe at 0x%llx in %s", (unsigned long long)at, path);
	}
}

/* Whether PATH is no longer the file object BIN was read from: rebuilt or
 * replaced since (a linker writes a new file under the old name, or
 * truncates and writes the old one), so the offsets planned are not that
 * file's.  The kernel then refuses those past its end (EINVAL), or probes
 * whatever instruction is there now. */
static bool object_replaced(struct ct_session *s, uint32_t bin, const char *path)
{
	const struct ct_elf *e = bin ? &s->libs[bin - 1].target.elf : &s->target.elf;
	struct stat then, now;
	if (s->wasm || !e->data || e->fd < 0 || fstat(e->fd, &then))
		return false;
	if (stat(path, &now))
		return strncmp(path, "/proc/", 6) != 0; /* (a process gone says so itself) */
	if (now.st_dev == then.st_dev && now.st_ino == then.st_ino && (size_t)now.st_size == e->size)
		return false;
	/* a new file of the same bytes (a build that wrote what it did
	 * before): the same offsets, nothing to say */
	bool same = false;
	int fd = (size_t)now.st_size == e->size ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		void *m = e->size ? mmap(NULL, e->size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
		if (m != MAP_FAILED) {
			same = !memcmp(m, e->data, e->size);
			munmap(m, e->size);
		}
		close(fd);
	}
	return !same;
}

static int say_replaced(const char *path)
{
	return ct_fail("%s changed while calltrace was reading it (rebuilt or replaced meanwhile?): the probes were planned on "
		       "the file as it was; record again once it is written",
		       path);
}

bool ct_session_program_replaced(struct ct_session *s, const char *path)
{
	if (!object_replaced(s, 0, path))
		return false;
	say_replaced(path);
	return true;
}

/* Does process PID run another file than the program planned now?  1
 * yes (its path in RUNS, "" if unreadable), 0 no, -1 unknown (gone). */
static int runs_another(struct ct_session *s, int pid, char *runs, size_t size)
{
	char exe[64];
	struct stat then, now;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	runs[0] = 0;
	if (s->wasm || !s->target_open || s->target.elf.fd < 0 || fstat(s->target.elf.fd, &then) || stat(exe, &now))
		return -1;
	if (now.st_dev == then.st_dev && now.st_ino == then.st_ino)
		return 0;
	ssize_t n = readlink(exe, runs, size - 1);
	runs[n > 0 ? n : 0] = 0;
	return 1;
}

bool ct_session_process_execd(struct ct_session *s, int pid)
{
	char runs[PATH_MAX];
	if (runs_another(s, pid, runs, sizeof(runs)) <= 0)
		return false; /* (a process gone says so itself) */
	/* An exec just after the probes went in is one the trace saw: its
	 * record is in the ring buffer (left_by_exec takes it from there).
	 * The process ran on meanwhile: a test's program exec'd another as
	 * soon as `record -v` said it was attached, and was told nothing had
	 * been traced. */
	ct_session_pump(s, 0);
	if (map_get(&s->exec_left, (uint64_t)pid))
		return false;
	ct_fail("process %d exec'd %s while calltrace was planning its probes for %s: nothing was traced; run "
		"calltrace record -p %d again to trace what it runs now",
		pid, runs[0] ? runs : "another program", s->binary, pid);
	return true;
}

/* Without --follow: process PID exec'd the binary of inode INO.  The
 * same program: its probes see the new one too.  Another: none of its
 * calls can be seen, and the recording went on waiting, silent, for it to
 * end.  Under -p it is traced no more (once no process is, recording
 * ends); a program record launched (or one of its processes) is waited
 * for all the same, its exit status is record's to report: one line says
 * so either way. */
static void left_by_exec(struct ct_session *s, uint32_t pid, uint64_t ino)
{
	char runs[PATH_MAX];
	struct stat st;
	int other = runs_another(s, (int)pid, runs, sizeof(runs));
	/* The kernel's word, the inode it exec'd: by now the process may have
	 * exec'd again, or be gone (/proc says what it runs now) */
	if (ino && s->target_open && fstat(s->target.elf.fd, &st) == 0)
		other = st.st_ino != ino;
	if (!other) {
		ct_debug("process %u exec'd %s again: still traced", pid, s->binary);
		return;
	}
	map_put(&s->exec_left, pid, (void *)1);
	/* (the links made for it alone: its libraries' probes are on the
	 * files, and the program it runs now paid a hit at each of their
	 * sites it ran, until the recording ended) */
	size_t closed = ct_probes_close_pid_links(s->probes, pid);
	ct_debug("process %u left by exec: %zu of its links closed", pid, closed);
	if (s->launch_pid) {
		ct_say("process %u exec'd %s: the program it runs now is not traced (--follow "
			"traces the programs it execs)", pid, runs[0] ? runs : "another program");
		return;
	}
	ct_probes_del_pid(s->probes, pid);
	ct_say("process %u exec'd %s: the program it runs now is not traced, its recording "
		"ends there (the process runs on; --follow traces the programs it execs)",
		pid, runs[0] ? runs : "another program");
	free(s->left_by_exec);
	s->left_by_exec = xasprintf("exec'd %s (not traced)", runs[0] ? runs : "another program");
}

/* Is probe site I of P an exit of an indirect call planned before the
 * program ran, and nothing else: every role of it the end of a call of a
 * traced function made by that one call instruction (plan_indirect_sites)?
 * Then it can go while the program runs (weigh_icall_exit). */
static bool icall_only_exit(const struct ct_plan *p, size_t i)
{
	uint64_t at = 0;
	for (uint32_t k = (uint32_t)i, n = 0; k < p->sites.n && n < 64; k = p->sites.v[k].next, n++) {
		const struct ct_plan_site *r = &p->sites.v[k];
		if (r->kind != CT_SITE_RETSITE || !r->cs || !r->cs->icall || r->elsewhere || r->interim ||
		    (r->flags & CT_SITEF_DYNAMIC) || r->call_site >= p->sites.n || (at && r->cs->at != at))
			return false;
		at = r->cs->at;
	}
	return at != 0;
}

static uint32_t global_site(struct ct_session *s, uint32_t bin, uint32_t local);

/* Watched exit probes of indirect calls per link: taking one out makes
 * its link again with the others (a few dozen breakpoints). */
#define ICALL_LINK_PROBES 16

/* The link of L's watched exits still in (none: no link), made again;
 * the old one closed once the new one is in (a hit meanwhile is seen
 * twice: the second event closes no call).  False if it failed: the old
 * one stays. */
static bool icall_link_make(struct ct_session *s, struct ct_icall_link *l)
{
	const struct ct_plan *p = &s->plan;
	CT_VEC(uint64_t) xo = {0}, xc = {0};
	for (size_t k = l->first; k < l->first + l->n; k++) {
		const struct ct_icall_exit *x = &s->icall_exits.v[k];
		if (x->out)
			continue;
		CT_VEC_PUSH(xo, p->sites.v[x->site].offset);
		CT_VEC_PUSH(xc, site_cookie(s, p, x->site, global_site(s, 0, x->site), 0, 0) | CT_COOKIE_ICALL_EXIT_BIT);
	}
	int link = xo.n ? ct_probes_attach_link(s->probes, l->path, l->pid, xo.v, xc.v, xo.n) : -1;
	bool ok = !xo.n || link >= 0;
	if (ok) {
		ct_probes_close_link(s->probes, l->link);
		l->link = link;
	}
	CT_VEC_FREE(xo);
	CT_VEC_FREE(xc);
	return ok;
}

/* The program's exits of indirect calls at sites W (N of them, icall_only_exit)
 * in links of their own, watched (struct ct_icall_exit); those that cannot
 * be go to XO/XC (at *NX), probed as the other exits are.  What the events
 * read say of them is counted by the site table ICALL_OF, which names
 * each one's probe and the CALL sites of the calls it closes. */
static void attach_icall_exits(struct ct_session *s, const uint32_t *w, size_t n, const char *path, int pid,
			       uint64_t *xo, uint64_t *xc, size_t *nx)
{
	const struct ct_plan *p = &s->plan;
	size_t links = (n + ICALL_LINK_PROBES - 1) / ICALL_LINK_PROBES;
	/* (room for the interim RETs' and the found exits' links first) */
	bool room = ct_probes_links_left(s->probes) > links + 256 + MAX_CALLER_LINKS + 64;
	for (size_t i = 0; i < n; i += ICALL_LINK_PROBES) {
		size_t m = n - i < ICALL_LINK_PROBES ? n - i : ICALL_LINK_PROBES, first = s->icall_exits.n;
		for (size_t k = i; room && k < i + m; k++) {
			if (s->icall_exits.n >= CT_ICALL_EXITS_MAX || ct_probes_watch_icall_exit(s->probes, w[k]))
				break;
			struct ct_icall_exit x = {.site = w[k], .link = (uint32_t)s->icall_links.n};
			CT_VEC_PUSH(s->icall_exits, x);
		}
		struct ct_icall_link l = {xstrdup(path), pid, -1, first, s->icall_exits.n - first};
		if (l.n && icall_link_make(s, &l)) {
			CT_VEC_PUSH(s->icall_links, l);
		} else {
			s->icall_exits.n = first; /* (their hits are counted for nothing: no report is read) */
			free(l.path);
		}
		for (size_t k = i + (s->icall_exits.n - first); k < i + m; k++) {
			xo[*nx] = p->sites.v[w[k]].offset;
			xc[(*nx)++] = site_cookie(s, p, w[k], w[k], 0, 0);
		}
	}
	/* (those found while recording are watched too: watch_found_exit) */
	s->icall_of_n = p->sites.n;
	s->icall_of = xcalloc(p->sites.n ? p->sites.n : 1, sizeof(*s->icall_of));
	s->calls_of_n = p->funcs.n;
	s->calls_of = xcalloc(p->funcs.n ? p->funcs.n : 1, sizeof(*s->calls_of));
	if (!s->icall_exits.n)
		return;
	/* each site's probe: the head of the chain it is a role of, or of the
	 * one it rides on */
	uint32_t *head = xmalloc(p->sites.n * sizeof(*head));
	for (size_t i = 0; i < p->sites.n; i++)
		head[i] = CT_NOSITE;
	for (size_t i = 0; i < p->sites.n; i++)
		for (uint32_t k = (uint32_t)i, c = 0; ct_site_is_probe(&p->sites.v[i]) && k < p->sites.n && c < 64;
		     k = p->sites.v[k].next, c++)
			head[k] = (uint32_t)i;
	for (size_t k = 0; k < s->icall_exits.n; k++)
		s->icall_of[s->icall_exits.v[k].site] = (uint32_t)(k + 1) << 1;
	for (size_t i = 0; i < p->sites.n; i++) {
		const struct ct_plan_site *r = &p->sites.v[i];
		uint32_t h = r->rides != CT_NOSITE && r->rides < p->sites.n ? head[r->rides] : head[i];
		if (r->kind != CT_SITE_RETSITE || h >= p->sites.n || !s->icall_of[h] || (s->icall_of[h] & 1) ||
		    r->call_site >= p->sites.n)
			continue;
		s->icall_of[r->call_site] = s->icall_of[h] | 1;
	}
	free(head);
	ct_debug("exits of indirect calls watched: %zu in %zu links", s->icall_exits.n, s->icall_links.n);
}

/* The probes of one plan (the program's, bin 0, or a library's), with ids
 * offset into the file's global tables. */
static int attach_plan(struct ct_session *s, const struct ct_plan *plan, uint32_t site_base,
		       uint32_t func_base, uint32_t bin, const char *path, int pid)
{
	size_t n = plan->sites.n, ne = 0, nx = 0, nm = 0, nint = 0, nw = 0;
	for (size_t i = 0; i < n; i++)
		if (plan->sites.v[i].elsewhere)
			n = i; /* found while recording, in another file: attached then */
	if (!n)
		return 0;
	uint64_t *eo = xcalloc(n, 8), *ec = xcalloc(n, 8), *xo = xcalloc(n, 8), *xc = xcalloc(n, 8);
	/* the program's exits of indirect calls that may go (not under
	 * --follow: an exec'd copy's hits would be counted with its) */
	bool watch = plan == &s->plan && !s->o.follow && plan->exits == CT_EXITS_AUTO && plan->in_caller && !s->icall_of;
	uint32_t *w = watch ? xcalloc(n, sizeof(*w)) : NULL;
	struct offset_cookie *mixed = xcalloc(n, sizeof(*mixed));
	for (size_t k = 0; k < plan->planned.n; k++) {
		uint64_t key = plan->planned.v[k].key;
		struct ct_planned_call val = plan->planned.v[k].val;
		val.site += site_base;
		if (val.fetch)
			val.fetch += site_base;
		if (val.caller_check)
			val.caller_check += site_base;
		if (ct_probes_add_planned(s->probes, CT_PLANNED_KEY((key >> 32) + site_base, (uint32_t)key), &val)) {
			free(eo);
			free(ec);
			free(xo);
			free(xc);
			free(mixed);
			free(w);
			return -1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct ct_plan_site *site = &plan->sites.v[i];
		if (!ct_site_is_probe(site))
			continue; /* applied with the probe whose `next` names it */
		/* a tail jump to untraced code: where a probe sees its call end */
		const uint64_t *rets;
		size_t nrets = 0;
		int rc = 0;
		if (ct_plan_tail_check(plan, i, &rets, &nrets))
			for (size_t k = 0; k < nrets && !rc; k++) {
				struct ct_planned_call val = {.site = site_base + (uint32_t)i};
				rc = ct_probes_add_planned(s->probes, CT_PLANNED_KEY(site_base + i, (int64_t)(rets[k] - site->addr)),
							   &val);
			}
		/* (an interim RET: the CHECK whose lookup it does again) */
		uint32_t check = site->interim ? plan->funcs.v[site->func].check_site : CT_NOSITE;
		if (!rc && check < plan->sites.n) {
			struct ct_interim_check ic = {site_base + check, (int32_t)(site->addr - plan->sites.v[check].addr)};
			rc = ct_probes_set_interim_check(s->probes, site_base + (uint32_t)i, &ic);
		}
		if (rc) {
			free(eo);
			free(ec);
			free(xo);
			free(xc);
			free(mixed);
			free(w);
			return -1;
		}
		uint64_t cookie = site_cookie(s, plan, i, site_base + (uint32_t)i, func_base, bin);
		if (site->interim) {
			nint++; /* a link of their own (interim_attach) */
		} else if (w && icall_only_exit(plan, i)) {
			w[nw++] = (uint32_t)i; /* links of their own (attach_icall_exits) */
		} else if (probe_roles(plan, i) == ROLE_OPENS) {
			eo[ne] = site->offset;
			ec[ne++] = cookie;
		} else if (probe_roles(plan, i) == ROLE_ENDS) {
			xo[nx] = site->offset;
			xc[nx++] = cookie;
		} else {
			mixed[nm].off = site->offset;
			mixed[nm++].cookie = cookie;
		}
	}
	/* Every probe that ends a call goes in before any that opens one: the
	 * exits, the interim RETs, the exits elsewhere of calls into this
	 * object, the probes that end one call and open the next, then the
	 * entries.  A process already running (-p) makes calls meanwhile, and
	 * attaching takes a while (the interim RETs' links: ~50-100 ms under
	 * -F '*'; the kernel makes a link's probes live one after another);
	 * a call entered before its exit probe was in ended unseen where the
	 * reconstruction, which takes every probe as in from the start, called
	 * it unwound (a server's sort.Slice less function, its memmoves:
	 * hundreds of calls).  The probes that end one call and open another
	 * go in from the highest address down: the exit of a call is after it
	 * on the straight line, so each is live before the probe opening the
	 * calls it ends. */
	if (w)
		attach_icall_exits(s, w, nw, path, pid, xo, xc, &nx);
	free(w);
	qsort(mixed, nm, sizeof(*mixed), cmp_offset_down);
	for (size_t k = 0; k < nm; k++) {
		xo[nx + k] = mixed[k].off;
		xc[nx + k] = mixed[k].cookie;
	}
	struct ct_attach exits = {path, pid, NULL, NULL, 0, xo, xc, nx},
			 both = {path, pid, NULL, NULL, 0, xo + nx, xc + nx, nm},
			 entries = {path, pid, eo, ec, ne, NULL, NULL, 0};
	uint64_t t0 = now_mono_ns();
	int rc = ct_probes_attach(s->probes, &exits);
	uint32_t goid_site = ct_plan_goid_site(plan, n);
	if (rc == 0 && goid_site != CT_NOSITE)
		ct_probes_set_goid_sites(s->probes, bin, site_base + goid_site, plan->goid_sites);
	if (rc == 0 && nint)
		attach_interim(s, plan, n, bin, pid);
	if (rc == 0)
		rc = attach_early(s, plan, site_base, func_base, bin, pid);
	if (rc == 0)
		rc = ct_probes_attach(s->probes, &both);
	if (rc == 0)
		rc = ct_probes_attach(s->probes, &entries);
	s->attach_ns += now_mono_ns() - t0;
	if (rc && object_replaced(s, bin, path))
		say_replaced(path);
	if (rc == 0)
		ct_debug("attached %zu sites (%zu entry, %zu exit, %zu both) of %s%s in %.1f ms", n, ne, nx, nm, path,
			 pid ? "" : " (all processes)", (now_mono_ns() - t0) / 1e6);
	free(mixed);
	free(eo);
	free(ec);
	free(xo);
	free(xc);
	return rc;
}

/* Process PID runs while its probes go in (-p, not the program record
 * launched, which waits): when that began (ALL false) and ended, for
 * replay (CT_PROC_PROBES_IN). */
static void probes_going_in(struct ct_session *s, int pid, bool all)
{
	if (pid > 0 && (uint32_t)pid != s->launch_pid)
		ct_writer_proc(s->w, now_mono_ns(), CT_PROC_PROBES_IN, (uint32_t)pid, 0, all);
}

static int attach_all(struct ct_session *s, const char *probe_path, int pid)
{
	probes_going_in(s, pid, false);
	if (attach_plan(s, &s->plan, 0, 0, 0, probe_path, pid))
		return -1;
	for (size_t k = 0; k < s->nlibs; k++) {
		struct ct_libbin *lb = &s->libs[k];
		if (attach_plan(s, &lb->plan, lb->site_base, lb->func_base, (uint32_t)k + 1, lb->path, pid))
			return -1;
	}
	probes_going_in(s, pid, true);
	return 0;
}

/* The file's function and site tables for bins FROM..TO-1 (0 = the program,
 * k = s->libs[k-1], whose names get "LIB:" in front).  The first call writes
 * the file's header with them; later ones add to the tables (--follow). */
static int write_tables(struct ct_session *s, size_t from, size_t to)
{
	uint32_t fb0 = from ? s->libs[from - 1].func_base : 0, sb0 = from ? s->libs[from - 1].site_base : 0;
	uint32_t nf = s->total_funcs - fb0, ns = s->total_sites - sb0;
	struct ct_file_func *ff = xcalloc(nf ? nf : 1, sizeof(*ff));
	struct ct_file_site *fs = xcalloc(ns ? ns : 1, sizeof(*fs));
	CT_VEC(char *) names = {0};
	for (size_t k = from; k < to; k++) {
		const struct ct_plan *plan = k ? &s->libs[k - 1].plan : &s->plan;
		uint32_t fb = k ? s->libs[k - 1].func_base : 0, sb = k ? s->libs[k - 1].site_base : 0;
		struct ct_file_func *f = ff + (fb - fb0);
		struct ct_file_site *st = fs + (sb - sb0);
		ct_plan_file_tables(plan, f, st); /* (plan-local ids, made the file's here) */
		for (size_t i = 0; i < plan->funcs.n; i++) {
			f[i].id = fb + (uint32_t)i;
			if (k) {
				char *nm = xasprintf("%s:%s", s->libs[k - 1].name, f[i].name);
				CT_VEC_PUSH(names, nm);
				f[i].name = nm;
			}
		}
		for (size_t i = 0; i < plan->sites.n; i++) {
			st[i].id = sb + (uint32_t)i;
			if (st[i].func != CT_NOFUNC)
				st[i].func = fb + st[i].func;
			if (st[i].target_func != CT_NOFUNC)
				st[i].target_func = fb + st[i].target_func;
			if (st[i].call_site != UINT32_MAX)
				st[i].call_site = sb + st[i].call_site;
			if (st[i].next != UINT32_MAX)
				st[i].next = sb + st[i].next;
		}
	}
	int rc = 0;
	if (from == 0)
		rc = ct_writer_begin(s->w, ff, nf, fs, ns);
	else
		ct_writer_tables(s->w, ff, nf, fs, ns);
	for (size_t i = 0; i < names.n; i++)
		free(names.v[i]);
	CT_VEC_FREE(names);
	free(ff);
	free(fs);
	return rc;
}

/* PLAN's types and capture plans into the file (sites from SITE_BASE on). */
static void write_captures(struct ct_session *s, const struct ct_plan *plan, uint32_t site_base,
			   struct ct_type_ids *ids)
{
	if (!plan->fetch)
		return;
	const struct ct_typetab *tt = plan->types ? ct_types_table(plan->types) : NULL;
	struct ct_typetab none = {0};
	struct ct_type unknown = {0};
	unknown.name = (char *)"?";
	none.v = &unknown;
	none.n = 1;
	ct_writer_types(s->w, tt ? tt : &none, ids);
	struct ct_site_fetch **all = xcalloc(plan->sites.n ? plan->sites.n : 1, sizeof(*all));
	memcpy(all, plan->fetch, plan->sites.n * sizeof(*all));
	if (plan->gocreate_site < plan->sites.n)
		all[plan->gocreate_site] = NULL; /* its events are rewritten (goroutine_created) */
	ct_writer_fetch(s->w, all, plan->sites.n, site_base, ids);
	free(all);
}

static int attach_probes(struct ct_session *s, const char *probe_path, int pid);
static struct ct_map *index_probes(struct ct_session *s, uint32_t bin);
static struct ct_pads *object_pads(struct ct_session *s, uint32_t bin);

/* Every probe link is a file descriptor, and the interim RETs' alone may
 * take INTERIM_LINKS_MAX per object: the soft limit goes up to the hard
 * one (a launched program, forked before this, keeps its own). */
static void more_files(void)
{
	struct rlimit r;
	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* The file a plan was read from (E, named NAME), as the path of the probes
 * added to it while recording: its open descriptor's, /proc/self/fd/N,
 * which the kernel's uprobe_multi lookup follows to that very file, even
 * deleted or its name given to a rebuilt one since (by its name: ENOENT, or
 * probes in the new file's bytes, which the program does not run).  Its
 * name where none is open. */
static char *object_file(const struct ct_elf *e, const char *name)
{
	return e->fd >= 0 ? xasprintf("/proc/self/fd/%d", e->fd) : xstrdup(name);
}

int ct_session_attach(struct ct_session *s, const char *probe_path, int pid)
{
	more_files();
	/* The file's tables and clock base go out before the first event. */
	s->start_ns = now_mono_ns();
	s->attach_path = s->target_open ? object_file(&s->target.elf, s->binary)
					: xstrdup(probe_path ? probe_path : s->binary);
	for (size_t k = 0; k < s->nlibs; k++)
		s->libs[k].attach_path = object_file(&s->libs[k].target.elf, s->libs[k].path);
	CT_VEC_PUSH(s->attach_pids, s->o.follow ? 0 : pid);
	write_meta(s);
	if (s->wasm) {
		const struct ct_wasm_plan *p = ct_wasm_run_plan(s->wasm);
		ct_wasm_run_started(s->wasm);
		if (ct_writer_begin(s->w, p->funcs, p->nfuncs, p->sites, p->nsites))
			return -1;
		ct_writer_types(s->w, &p->types, &s->type_ids);
		ct_writer_fetch(s->w, p->fetch, p->nsites, 0, &s->type_ids);
		return 0;
	}
	/* The file's tables are made at once (restic's: ~25 MB, the tables
	 * and their encoding), after planning and loading the BPF programs
	 * left holes in the heap they do not fit: those pages go back first. */
	malloc_trim(0);
	int rc = write_tables(s, 0, s->nlibs + 1);
	if (rc == 0) {
		write_captures(s, &s->plan, 0, &s->type_ids);
		for (size_t k = 0; k < s->nlibs; k++)
			write_captures(s, &s->libs[k].plan, s->libs[k].site_base, &s->libs[k].type_ids);
	}
	/* the ends of its threads and of itself (and its children: --follow) */
	if (rc == 0)
		rc = ct_probes_watch(s->probes, s->o.follow, !s->o.no_sched);
	if (rc == 0 && pid > 0)
		rc = ct_probes_add_pid(s->probes, (uint32_t)pid);
	/* From here on, the index that names the dynamic types of Go
	 * interface values is built beside the attach and the program's start:
	 * built at the first value named, it stalled the drain 15-25 ms as the
	 * program started (bench/http), and the calls from the call sites
	 * found meanwhile ended unobserved.  Not under --follow: an exec'd
	 * copy of the program would read the same DWARF handle meanwhile. */
	if (rc == 0 && s->plan.types && s->target.lang == CT_LANG_GO && !s->o.follow)
		ct_types_index_rtypes_start(s->plan.types);
	/* what each object probes where, for the exit walks of the call sites
	 * found while recording: built at the first, it held that one's probe
	 * back ~5 ms on cppcheck's 98,648 sites */
	for (uint32_t k = 0; rc == 0 && k <= s->nlibs && k < CT_MAX_BINS; k++) {
		if (k && s->libs[k - 1].catch_only)
			continue; /* (no call is found there: module_open) */
		index_probes(s, k);
		/* and, for C code, the tables of its landing pads (.eh_frame's
		 * FDEs and their LSDAs): read at the first, they held its probe
		 * back ~3 ms more on cppcheck */
		if ((k ? s->libs[k - 1].target.lang : s->target.lang) == CT_LANG_C)
			ct_pads_fde_at(object_pads(s, k), 0);
	}
	/* (-p: the file the plan was read from; /proc/PID/exe names whatever
	 * the process runs now, another program if it exec'd meanwhile) */
	if (rc == 0)
		rc = attach_probes(s, s->launch_pid || !s->target_open ? probe_path : s->attach_path, pid);
	if (rc == 0 && s->launch_pid && (uint32_t)pid == s->launch_pid)
		warm_up(s, &s->target, probe_path ? probe_path : s->binary, s->o.follow ? 0 : pid);
	return rc;
}

static int attach_probes(struct ct_session *s, const char *probe_path, int pid)
{
	int rc = 0;
	if (s->o.follow) {
		/* children are found by the kernel: links for every process of
		 * the binary, filtered in BPF by the traced pids */
		probes_going_in(s, pid, false);
		rc = attach_plan(s, &s->plan, 0, 0, 0, probe_path, 0);
		for (size_t k = 0; rc == 0 && k < s->nlibs; k++) {
			struct ct_libbin *lb = &s->libs[k];
			rc = attach_plan(s, &lb->plan, lb->site_base, lb->func_base, (uint32_t)k + 1, lb->path, pid);
		}
		if (rc == 0)
			probes_going_in(s, pid, true);
		struct stat st;
		if (rc == 0 && stat(probe_path, &st) == 0) {
			s->main_dev = st.st_dev;
			s->main_ino = st.st_ino;
		}
		return rc;
	}
	return attach_all(s, probe_path, pid);
}

/* --follow: a traced process exec'd another binary; trace it too, with the
 * same selection.  Its first instructions may run before the probes are in. */
static void follow_exec(struct ct_session *s, uint32_t pid)
{
	char exe[64], target[PATH_MAX];
	struct stat st;
	snprintf(exe, sizeof(exe), "/proc/%u/exe", pid);
	/* Opened once, and everything taken from that one file: an exec into
	 * the recorded program is not held, so the process may have exec'd
	 * again by now (la_launch execs la_main at once); /proc/PID/exe read
	 * twice named one binary and planned the other. */
	int fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	snprintf(exe, sizeof(exe), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(exe, target, sizeof(target) - 1);
	bool skip = n <= 0 || fstat(fd, &st);
	if (!skip) {
		target[n] = 0;
		/* the same binary: its probes cover every process */
		skip = st.st_dev == s->main_dev && st.st_ino == s->main_ino;
		for (size_t k = 0; k < s->nlibs && !skip; k++)
			skip = s->libs[k].dev == st.st_dev && s->libs[k].ino == st.st_ino;
	}
	if (!skip && s->nlibs + 1 >= CT_MAX_BINS) {
		ct_debug("--follow: not tracing %s (too many binaries)", target);
		skip = true;
	}
	if (skip) {
		close(fd);
		return;
	}
	s->libs = xrealloc(s->libs, (s->nlibs + 1) * sizeof(*s->libs));
	struct ct_libbin *lb = &s->libs[s->nlibs];
	memset(lb, 0, sizeof(*lb));
	const char *base = strrchr(target, '/');
	lb->name = xstrdup(base ? base + 1 : target);
	lb->path = xstrdup(target);
	lb->dev = st.st_dev;
	lb->ino = st.st_ino;
	lb->exe_fd = fd;
	struct ct_selection sel = s->main_sel;
	sel.lenient = true;
	object_args(s, lb);
	int rc = ct_target_open(&lb->target, exe);
	if (rc == 0) {
		follow_names_in(s, &lb->target);
		lb->attach_path = object_file(&lb->target.elf, lb->path);
		sel.args = &lb->args;
		rc = ct_plan_build(&lb->plan, &lb->target, &sel);
	}
	if (rc) {
		ct_debug("--follow: not tracing %s: %s", target, ct_error());
		if (lb->target.elf.path)
			ct_target_close(&lb->target);
		free(lb->name);
		free(lb->path);
		free(lb->attach_path);
		CT_VEC_FREE(lb->arg_globs);
		CT_VEC_FREE(lb->ret_globs);
		close(fd);
		return;
	}
	s->nlibs++;
	lb->func_base = s->total_funcs;
	lb->site_base = s->total_sites;
	lb->nsites = (uint32_t)lb->plan.sites.n;
	s->total_funcs += (uint32_t)lb->plan.funcs.n;
	s->total_sites += (uint32_t)lb->plan.sites.n;
	plan_object_args(s, lb);
	write_tables(s, s->nlibs, s->nlibs + 1);
	write_captures(s, &lb->plan, lb->site_base, &lb->type_ids);
	struct ct_bin_config bc = lb->target.gcfg;
	bc.is_go = lb->target.lang == CT_LANG_GO;
	ct_probes_set_bin(s->probes, (uint32_t)s->nlibs, &bc);
	if (set_fetches(s, &lb->plan, lb->site_base) ||
	    attach_plan(s, &lb->plan, lb->site_base, lb->func_base, (uint32_t)s->nlibs, exe, 0)) {
		ct_warn("--follow: cannot trace %s: %s", target, ct_error());
		return;
	}
	warm_up(s, &lb->target, exe, 0);
	ct_debug("--follow: process %u exec'd %s: %zu functions traced", pid, target, lb->plan.funcs.n);
}

/* Does process PID map the same file for each traced library (LIB:GLOB)
 * as the first process did?  Their probes are on that file: the calls of a
 * process that maps another (started after an upgrade, with another
 * LD_LIBRARY_PATH) would be left out without a word. */
static int same_libraries(struct ct_session *s, int pid)
{
	for (size_t k = 0; k < s->nlibs; k++) {
		struct ct_libbin *lb = &s->libs[k];
		struct stat ours, theirs;
		if (lb->exe_fd || lb->ino || fstat(lb->target.elf.fd, &ours))
			continue; /* (a binary exec'd under --follow) */
		char *shown = NULL, *path = ct_lib_resolve_pid(pid, lb->name, &shown);
		if (!path)
			return ct_fail("cannot trace %s in process %d too: %s", lb->name, pid, ct_error());
		bool same = !stat(path, &theirs) && theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino;
		free(path);
		if (!same) {
			int rc = ct_fail("process %d maps another file for %s (%s) than the first process (one of them "
					 "started before an upgrade, or with another LD_LIBRARY_PATH?): trace each on its own",
					 pid, lb->name, shown);
			free(shown);
			return rc;
		}
		free(shown);
	}
	return 0;
}

int ct_session_attach_more(struct ct_session *s, int pid)
{
	if (same_libraries(s, pid) || ct_probes_add_pid(s->probes, (uint32_t)pid))
		return -1;
	if (!s->o.follow) {
		CT_VEC_PUSH(s->attach_pids, pid);
		return attach_all(s, s->attach_path, pid);
	}
	/* the program's links cover every traced process already */
	for (size_t k = 0; k < s->nlibs; k++) {
		struct ct_libbin *lb = &s->libs[k];
		if (attach_plan(s, &lb->plan, lb->site_base, lb->func_base, (uint32_t)k + 1, lb->path, pid))
			return -1;
	}
	return 0;
}

size_t ct_session_traced(struct ct_session *s)
{
	return s->probes ? ct_probes_traced(s->probes) : 0; /* a wasm runner: its own process */
}

static int64_t maps_bias(uint32_t pid, const char *binary, const struct ct_elf *e);

/* One traced object as the event loop sees it: the program or one of
 * s->libs (a library, a binary exec'd under --follow), and its sites' place
 * in the file's table. */
struct object {
	const char *path;
	const char *attach_path; /* where probes added while recording go */
	struct ct_target *target;
	struct ct_plan *plan;
	struct ct_type_ids *type_ids;
	struct ct_go_names *go;
	uint32_t site_base;
	uint32_t nsites; /* its site range (RTYPES, PCPOS): site_base.. */
	uint32_t own;    /* its own sites: plan index = file id - site_base */
	uint32_t bin;    /* 0 the program, k s->libs[k-1] */
	uint32_t func_base;
};

/* Traced object BIN (0: the program, k: s->libs[k-1]). */
static struct object object_n(struct ct_session *s, uint32_t bin)
{
	if (!bin) /* alone, the program's found sites follow its own: its range grows */
		return (struct object){s->binary, s->attach_path, &s->target, &s->plan, &s->type_ids, &s->go, 0,
				       s->nlibs ? s->main_nsites : (uint32_t)s->plan.sites.n, s->main_nsites, 0, 0};
	struct ct_libbin *lb = &s->libs[bin - 1];
	return (struct object){lb->path, lb->attach_path, &lb->target, &lb->plan, &lb->type_ids, &lb->go,
			       lb->site_base, lb->nsites, lb->nsites, bin, lb->func_base};
}

/* The object whose sites include the file's site SITE, and its index in
 * the object's plan (LOCAL); false: none. */
static bool object_of_site(struct ct_session *s, uint32_t site, struct object *o, uint32_t *local)
{
	/* (a plan's own sites first: most events are theirs, and a hash
	 * lookup for each was a few percent of the tracer's time; the ranges
	 * as object_n has them, the object made once found) */
	for (uint32_t k = 0; k <= s->nlibs; k++) {
		uint32_t base = k ? s->libs[k - 1].site_base : 0;
		uint32_t own = k ? s->libs[k - 1].nsites : s->main_nsites;
		if (site >= base && site - base < own) {
			*o = object_n(s, k);
			*local = site - base;
			return true;
		}
	}
	uintptr_t found = (uintptr_t)map_get(&s->found_sites, site);
	if (found) {
		*o = object_n(s, (uint32_t)((found - 1) >> 32));
		*local = (uint32_t)(found - 1);
		return true;
	}
	return false;
}

/* The file's id of site LOCAL of object BIN's plan (CT_NOSITE for none). */
static uint32_t global_site(struct ct_session *s, uint32_t bin, uint32_t local)
{
	struct object o = object_n(s, bin);
	if (local == CT_NOSITE || local < o.own)
		return local == CT_NOSITE ? CT_NOSITE : o.site_base + local;
	uintptr_t id = (uintptr_t)map_get(&s->found_ids, (uint64_t)bin << 32 | local);
	return id ? (uint32_t)(id - 1) : CT_NOSITE;
}

/* ---- Interim RETs ----
 * An address-taken function observed from its callers has its RETs probed
 * too until the callers it has are found (plan.c emit_function): the first
 * calls from each would end unobserved, a server's first request through
 * its handler among them.  They cost a single-step a call, any call, so
 * they go once a function's have let CT_INTERIM_WORTH calls go by
 * (another probe saw them end: its callers are being found) and no new
 * caller of it was reported for CT_INTERIM_QUIET_MS: their link is closed,
 * or made again without them.  Not before: a single-step is priced and
 * taken out of the durations, but the probe change is not, and costs the
 * program more (it holds its mmap_lock, flushes its TLBs, waits for a
 * grace period): in lefthook's --help (-F '*cobra*'), ~40 functions
 * settling made cobra's ExecuteC look 2-4 ms long after the correction,
 * for ~0.4 ms untraced; their few hits since cost less. */
#define INTERIM_TICK_NS 10000000ULL  /* how often settle_interim looks */
#define INTERIM_QUIET_NS (CT_INTERIM_QUIET_MS * 1000000ULL) /* no caller reported for so long */

/* Links of interim RETs per object and process, at most: a function's are
 * in a link of their own where there are no more functions than that.
 * One link for them all was made again whenever a function settled: in
 * lefthook's `version` (-F '*', 6,792 functions with interim RETs),
 * ~600,000 probes placed and taken out while the program ran, each
 * holding its mmap_lock, and its threads waited 200-280 ms for it; now a
 * settled function's link goes, or its group's few others' are made
 * again (5,000-8,000 probes, 14-48 ms of waits). */
#define INTERIM_LINKS_MAX 256

/* Is site I of P an interim RET of a function whose are still in? */
static bool interim_live(const struct ct_plan *p, size_t i)
{
	return p->sites.v[i].interim && p->funcs.v[p->sites.v[i].func].interim;
}

/* ... and one of L's functions' */
static bool interim_live_in(const struct ct_plan *p, size_t i, const struct ct_interim_link *l)
{
	return interim_live(p, i) && p->sites.v[i].func >= l->f0 && p->sites.v[i].func < l->f1;
}

/* The file learns which of L's functions' interim RETs are out as of TS
 * (all of them if NONE_IN: its first link failed): replay takes a call of one
 * without an exit probe, still open when its thread ends, for one that had
 * not returned only while they were in.  TS is taken before the old link
 * goes: a call ending while it goes is taken to have had none. */
static void interim_gone(struct ct_session *s, const struct ct_interim_link *l, uint64_t ts, bool none_in)
{
	struct object o = object_n(s, l->bin);
	struct ct_plan *p = o.plan;
	for (size_t i = l->s0; i < l->s1; i++) {
		uint32_t f = p->sites.v[i].func;
		struct ct_plan_func *pf = p->sites.v[i].interim && f >= l->f0 && f < l->f1 ? &p->funcs.v[f] : NULL;
		/* (not a function whose RETs are probed for good now,
		 * ct_plan_rets_from_now: they still see its open call end,
		 * and one still open when its process exits had not returned) */
		if (pf && !pf->interim_said_gone && !pf->rets_probed && (none_in || !interim_live(p, i))) {
			pf->interim_said_gone = true;
			ct_writer_proc(s->w, ts, CT_PROC_INTERIM_GONE, l->pid, 0, o.func_base + p->sites.v[i].func);
		}
	}
}

/* A probe link made while recording for process PID failed (WHY): the
 * calls its probes were for end unobserved, or interim RETs that should
 * have gone stay in.  Counted, with the first reason, for the file's stats
 * (`calltrace info`) -- unless the process is gone (its end raced it). */
static void probe_refused(struct ct_session *s, int pid, const char *why)
{
	if (pid > 0 && kill(pid, 0) && errno == ESRCH)
		return;
	s->probes_refused++;
	if (!s->probes_refused_why)
		s->probes_refused_why = xstrdup(why);
}

/* L's link made (again) with the interim RETs of its functions still
 * interim (none: no link); the old one closed once the new one is in.
 * False if that failed (the old one stays). */
static bool interim_attach(struct ct_session *s, struct ct_interim_link *l)
{
	struct object o = object_n(s, l->bin);
	const struct ct_plan *p = o.plan;
	CT_VEC(uint64_t) xo = {0}, xc = {0};
	for (size_t i = l->s0; i < l->s1; i++) {
		const struct ct_plan_site *st = &p->sites.v[i];
		if (interim_live_in(p, i, l)) {
			CT_VEC_PUSH(xo, st->offset);
			CT_VEC_PUSH(xc, site_cookie(s, p, i, global_site(s, l->bin, (uint32_t)i), o.func_base, l->bin));
		}
	}
	int link = xo.n ? ct_probes_attach_link(s->probes, l->path, l->pid, xo.v, xc.v, xo.n) : -1;
	bool ok = !xo.n || link >= 0;
	if (ok) {
		if (l->link >= 0) {
			s->interim_remade++;
			s->interim_changes += xo.n + l->nsites;
		}
		interim_gone(s, l, now_mono_ns(), false);
		ct_probes_close_link(s->probes, l->link);
		l->link = link;
		l->nsites = xo.n;
		ct_debug("interim RETs of %s: %zu", l->path, xo.n);
	} else {
		int e = errno;
		if (l->link < 0)
			interim_gone(s, l, now_mono_ns(), true);
		char *why = xasprintf("interim RETs of %s: %zu not attached: %s%s", l->path, xo.n, strerror(e),
				      e == EOPNOTSUPP ? " (one perf-event uprobe per site: no links of a few functions)" : "");
		ct_debug("%s", why);
		probe_refused(s, l->pid, why);
		free(why);
	}
	CT_VEC_FREE(xo);
	CT_VEC_FREE(xc);
	return ok;
}

/* The interim RETs of PLAN's first N sites (object BIN) in links of up to
 * INTERIM_LINKS_MAX groups of functions, consecutive by index. */
static void attach_interim(struct ct_session *s, const struct ct_plan *plan, size_t n, uint32_t bin, int pid)
{
	/* each function's interim RETs: sites [lo, hi) */
	size_t *lo = xcalloc(plan->funcs.n + 1, sizeof(*lo)), *hi = xcalloc(plan->funcs.n + 1, sizeof(*hi));
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t f = plan->sites.v[i].func;
		if (!plan->sites.v[i].interim || f >= plan->funcs.n)
			continue;
		if (!hi[f]) {
			lo[f] = i;
			m++;
		}
		hi[f] = i + 1;
	}
	/* (half the links left at most: other objects, and the exits found
	 * while recording, need theirs) */
	size_t most = ct_probes_links_left(s->probes) / 2;
	most = most < 1 ? 1 : most > INTERIM_LINKS_MAX ? INTERIM_LINKS_MAX : most;
	size_t per = (m + most - 1) / most, in = 0, seen = 0, s0 = 0, s1 = 0;
	uint32_t f0 = 0;
	for (uint32_t f = 0; f < plan->funcs.n; f++) {
		if (!hi[f])
			continue;
		if (!in++) {
			f0 = f;
			s0 = lo[f];
		}
		s0 = lo[f] < s0 ? lo[f] : s0;
		s1 = hi[f] > s1 ? hi[f] : s1;
		if (++seen < m && in < per)
			continue;
		struct ct_interim_link il = {.bin = bin, .f0 = f0, .f1 = f + 1, .s0 = s0, .s1 = s1, .pid = pid,
					     .path = xstrdup(object_n(s, bin).attach_path), .link = -1};
		CT_VEC_PUSH(s->interim_links, il);
		interim_attach(s, &s->interim_links.v[s->interim_links.n - 1]);
		in = 0;
		s1 = 0;
	}
	free(lo);
	free(hi);
}

/* The functions whose interim RETs go now (see above), and their links
 * made again or closed. */
static void settle_interim(struct ct_session *s)
{
	uint64_t now = now_mono_ns();
	if (!s->interim_links.n || s->end_ts || now - s->interim_tick < INTERIM_TICK_NS)
		return;
	s->interim_tick = now;
	uint32_t sites[512], passes[512];
	size_t n;
	do {
		n = ct_probes_interim_passed(s->probes, sites, passes, sizeof(sites) / sizeof(sites[0]));
		for (size_t i = 0; i < n; i++) {
			struct object o;
			uint32_t local;
			if (object_of_site(s, sites[i], &o, &local) && local < o.plan->sites.n &&
			    o.plan->sites.v[local].func < o.plan->funcs.n) {
				struct ct_plan_func *pf = &o.plan->funcs.v[o.plan->sites.v[local].func];
				pf->interim_passes += passes[i] ? passes[i] : 1;
			}
		}
	} while (n == sizeof(sites) / sizeof(sites[0]));
	for (uint32_t k = 0; k <= s->nlibs && k < CT_MAX_BINS; k++) {
		struct ct_plan *p = object_n(s, k).plan;
		for (size_t j = 0; p->interim_funcs && j < p->funcs.n; j++) {
			struct ct_plan_func *pf = &p->funcs.v[j];
			if (pf->interim && !pf->interim_kept && pf->interim_passes >= CT_INTERIM_WORTH &&
			    now - pf->interim_report_ns >= INTERIM_QUIET_NS) {
				pf->interim = false;
				s->interim_settled++;
			}
		}
	}
	/* (fewer left also where a function's RETs were probed for good
	 * meanwhile: ct_plan_rets_from_now; each link counts its own sites:
	 * counting every site of the plan for each, as before, took ~16 ms
	 * of every 10 ms tick under -F '*' (gojq, gron: up to 256 links of
	 * ~100,000 sites), most of calltrace's CPU, and the ring buffer was
	 * read that much later: a caller found while recording waited 5-35
	 * ms for its exit probe, its calls meanwhile unobserved) */
	s->interim_links_in = 0;
	for (size_t i = 0; i < s->interim_links.n; i++) {
		struct ct_interim_link *l = &s->interim_links.v[i];
		const struct ct_plan *p = object_n(s, l->bin).plan;
		size_t left = 0;
		for (size_t k = l->s0; l->link >= 0 && !l->stuck && k < l->s1; k++)
			left += interim_live_in(p, k, l);
		if (l->link >= 0 && !l->stuck && left != l->nsites)
			l->stuck = !interim_attach(s, l);
		s->interim_links_in += l->link >= 0 && !l->stuck;
	}
}


/* Where PID mapped O (PIE), to turn the runtime type pointers found in
 * interface values into link-time addresses. */
static int64_t object_bias(const struct object *o, uint32_t pid)
{
	if (!o->go->bias_known) {
		o->go->bias_known = true;
		o->go->load_bias = maps_bias(pid, o->path, &o->target->elf);
	}
	return o->go->load_bias;
}

/* Where PID mapped the ELF file E at PATH: runtime minus link-time address. */
static int64_t maps_bias(uint32_t pid, const char *binary, const struct ct_elf *e)
{
	int64_t bias = 0;
	if (!e->pie)
		return 0;
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	uint64_t seg0 = 0;
	for (size_t i = 0; i < e->nsegs; i++)
		if (e->segs[i].offset == 0)
			seg0 = e->segs[i].vaddr & ~0xfffULL;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s%n", &lo, &hi, perms, &off, &pos) < 4)
			continue;
		const char *file = line + pos;
		while (*file == ' ')
			file++;
		size_t n = strlen(file);
		if (n && file[n - 1] == '\n')
			n--;
		if (off == 0 && n == strlen(binary) && !strncmp(file, binary, n)) {
			bias = (int64_t)(lo - seg0);
			break;
		}
	}
	fclose(f);
	return bias;
}

static bool value_word(const struct ct_val_desc *d, const uint8_t *raw, uint32_t len, uint32_t off, uint64_t *w)
{
	const struct ct_val_piece *p = ct_val_piece_of(d, off, 8);
	const uint8_t *b = p ? ct_val_piece_bytes(p, raw, len, off, 8) : NULL;
	if (b)
		memcpy(w, b, 8);
	return b != NULL;
}

/* Where a value's bytes are: in the event's payload (value D, at offsets
 * into it) or, behind a pointer, in the memory the snapshots copied. */
struct value_src {
	const struct ct_val_desc *d;
	const uint8_t *raw;
	uint32_t len;
	const struct ct_fetch *prog;
	struct ct_snapshot *snaps; /* of the payload's memory ops, once one is read */
	size_t nsnaps;
	bool snapped;
	const struct ct_typetab *tt;
	unsigned budget; /* values still to look at: a bound on the walk */
	uint64_t rtypes[32];
	unsigned nrtypes;
};

/* The payload's memory ops' snapshots, once one is read. */
static void take_snapshots(struct value_src *v)
{
	if (!v->snapped && v->len >= v->prog->size)
		v->nsnaps = ct_fetch_snapshots(v->prog, v->raw, v->snaps, CT_MAX_OPS);
	v->snapped = true;
}

static bool src_word(struct value_src *v, bool in_mem, uint64_t at, uint64_t *w)
{
	if (!in_mem)
		return at <= UINT32_MAX - 8 && value_word(v->d, v->raw, v->len, (uint32_t)at, w);
	take_snapshots(v);
	for (size_t k = 0; k < v->nsnaps; k++) {
		const struct ct_snapshot *sn = &v->snaps[k];
		if (sn->bytes && at >= sn->addr && sn->len >= 8 && at - sn->addr <= sn->len - 8) {
			memcpy(w, sn->bytes + (at - sn->addr), 8);
			return true;
		}
	}
	return false;
}

/* Did the capture copy any of the SIZE bytes at ADDR (a snapshot of a
 * memory op holds some)?  If not, nothing behind a pointer there can be
 * looked at: the walk below stops (bench/http: it went through every field
 * of the structs its *Request and *response arguments point to, none of
 * them copied -- a tenth of the tracer's time). */
static bool src_copied(struct value_src *v, uint64_t addr, uint64_t size)
{
	take_snapshots(v);
	uint64_t end = addr + (size ? size : 1);
	if (end < addr)
		end = UINT64_MAX;
	for (size_t k = 0; k < v->nsnaps; k++) {
		const struct ct_snapshot *sn = &v->snaps[k];
		if (sn->bytes && sn->len && sn->addr < end && addr < sn->addr + sn->len)
			return true;
	}
	return false;
}

/* The runtime types of the Go interface values in the value of type ID at
 * AT (an offset into the payload's value, or an address once IN_MEM): its
 * own, and those in its struct fields, array and slice items and behind
 * its pointers, as far as the capture copied them (fmt.Println's
 * `...any`, a struct's error field).  An iface's type is in its itab. */
static void dynamic_types_in(struct value_src *v, uint32_t id, uint64_t at, bool in_mem, unsigned depth)
{
	const struct ct_type *t = ct_type_get(v->tt, id);
	uint64_t w, n;
	if (!v->budget || depth > 4)
		return;
	v->budget--;
	switch (t->kind) {
	case CT_K_IFACE:
	case CT_K_EFACE:
		if (src_word(v, in_mem, at, &w) && w &&
		    (t->kind == CT_K_EFACE || src_word(v, true, w + CT_GO_ITAB_TYPE_OFF, &w)) && w &&
		    v->nrtypes < sizeof(v->rtypes) / sizeof(v->rtypes[0]))
			v->rtypes[v->nrtypes++] = w;
		break;
	case CT_K_STRUCT:
		for (uint32_t i = 0; i < t->nfields; i++)
			if (!(t->fields[i].flags & CT_FIELD_BITS))
				dynamic_types_in(v, t->fields[i].type, at + t->fields[i].offset, in_mem, depth);
		break;
	case CT_K_ARRAY:
	case CT_K_SLICE: {
		const struct ct_type *et = ct_type_get(v->tt, t->elem);
		uint32_t size = et->size;
		if (et->kind != CT_K_IFACE && et->kind != CT_K_EFACE && et->kind != CT_K_STRUCT &&
		    et->kind != CT_K_ARRAY && et->kind != CT_K_SLICE && et->kind != CT_K_PTR)
			return; /* []byte, []int, []string...: nothing to find */
		n = t->len;
		if (t->kind == CT_K_SLICE) {
			if (!src_word(v, in_mem, at + 8, &n) || !src_word(v, in_mem, at, &at) ||
			    !src_copied(v, at, size && n > UINT64_MAX / size ? UINT64_MAX : n * size))
				return;
			in_mem = true;
			depth++;
		}
		for (uint64_t i = 0; size && i < n && v->budget; i++)
			dynamic_types_in(v, t->elem, at + i * size, in_mem, depth);
		break;
	}
	case CT_K_PTR:
		if (t->elem != CT_TYPE_NONE && src_word(v, in_mem, at, &w) && w &&
		    src_copied(v, w, ct_type_get(v->tt, t->elem)->size))
			dynamic_types_in(v, t->elem, w, true, depth + 1);
		break;
	default:
		break;
	}
}

/* May a value of type ID hold an interface value, in itself or in what the
 * walk above looks at (fields, items, what pointers point to, at any depth:
 * a superset of the walk's)?  SEEN: the types met (again adds nothing). */
static bool iface_reachable(const struct ct_typetab *tt, uint32_t id, struct ct_map *seen)
{
	const struct ct_type *t = ct_type_get(tt, id);
	if (map_get(seen, (uint64_t)id + 1))
		return false;
	map_put(seen, (uint64_t)id + 1, (void *)1);
	switch (t->kind) {
	case CT_K_IFACE:
	case CT_K_EFACE:
		return true;
	case CT_K_STRUCT:
		for (uint32_t i = 0; i < t->nfields; i++)
			if (!(t->fields[i].flags & CT_FIELD_BITS) && iface_reachable(tt, t->fields[i].type, seen))
				return true;
		return false;
	case CT_K_ARRAY:
	case CT_K_SLICE:
	case CT_K_PTR:
		return t->elem != CT_TYPE_NONE && iface_reachable(tt, t->elem, seen);
	default:
		return false;
	}
}

/* iface_reachable, once per type of an object's values (bench/http: the
 * walk went through structs without any, time.Time's, on every event). */
static bool may_hold_iface(struct ct_go_names *g, const struct ct_typetab *tt, uint32_t id)
{
	while (g->iface_in.n <= id) /* (ids are dense, the table only grows) */
		CT_VEC_PUSH(g->iface_in, 0);
	if (!g->iface_in.v[id]) {
		struct ct_map seen = {0};
		g->iface_in.v[id] = iface_reachable(tt, id, &seen) ? 2 : 1;
		map_free(&seen);
	}
	return g->iface_in.v[id] == 2;
}

/* Interface values name their dynamic type by a runtime pointer: the first
 * time one is seen, look the type up in DWARF and add it to the file. */
static void note_dynamic_types(struct ct_session *s, const struct object *o, const struct ct_site_fetch *f,
			       const uint8_t *raw, uint32_t len, uint32_t pid)
{
	if (o->go->rtypes_range && o->nsites > o->go->rtypes_range) {
		/* call sites found while recording joined the object: the types
		 * written so far hold for their events too (the reader takes
		 * the widest range of an object's chunks) */
		ct_writer_rtypes(s->w, o->site_base, o->nsites, NULL, NULL, 0, o->type_ids);
		o->go->rtypes_range = o->nsites;
	}
	const struct ct_typetab *tt = ct_types_table(o->plan->types);
	uint32_t i = 0;
	while (i < f->nvals && !may_hold_iface(o->go, tt, f->vals[i].type))
		i++;
	if (i == f->nvals)
		return;
	/* (set field by field: zeroing it all, rtypes[] too, was a tenth of the
	 * time of an event's handling) */
	struct ct_snapshot snaps[CT_MAX_OPS];
	struct value_src v;
	v.raw = raw;
	v.len = len;
	v.prog = &f->prog;
	v.snaps = snaps;
	v.nsnaps = 0;
	v.snapped = false;
	v.tt = tt;
	v.nrtypes = 0;
	for (; i < f->nvals; i++) {
		v.d = &f->vals[i];
		v.budget = 256;
		if (may_hold_iface(o->go, tt, v.d->type))
			dynamic_types_in(&v, v.d->type, 0, false, 0);
	}
	CT_VEC(uint64_t) addrs = {0};
	CT_VEC(uint32_t) ids = {0};
	for (unsigned k = 0; k < v.nrtypes; k++) {
		uint64_t rtype = v.rtypes[k];
		if (map_get(&o->go->rtypes_seen, rtype))
			continue;
		uint32_t id = ct_types_by_rtype(o->plan->types, rtype - (uint64_t)object_bias(o, pid));
		map_put(&o->go->rtypes_seen, rtype, (void *)(uintptr_t)(id + 1));
		if (id != CT_TYPE_NONE) {
			CT_VEC_PUSH(addrs, rtype);
			CT_VEC_PUSH(ids, id);
		}
	}
	if (addrs.n) {
		ct_writer_types(s->w, ct_types_table(o->plan->types), o->type_ids); /* it may have grown */
		ct_writer_rtypes(s->w, o->site_base, o->nsites, addrs.v, ids.v, addrs.n, o->type_ids);
		o->go->rtypes_range = o->nsites;
	}
	CT_VEC_FREE(addrs);
	CT_VEC_FREE(ids);
}

/* A goroutine was made (plan/goroutines.c).  The file keeps: goid = the
 * goroutine that ran the `go` statement (0: none, the runtime's start), key
 * = the new goroutine, payload = the statement's address (8 bytes), whose
 * source position goes into a PCPOS chunk the first time it is seen. */
static void goroutine_created(struct ct_session *s, const struct object *o, const struct ct_event *e,
			      const void *payload)
{
	uint64_t goid, gopc;
	if (!ct_plan_goroutine_created(o->plan, payload, e->len, &goid, &gopc))
		return;
	uint64_t seen = (uint64_t)e->pid << 47 ^ gopc;
	if (gopc && !map_get(&o->go->gopcs_seen, seen)) {
		map_put(&o->go->gopcs_seen, seen, (void *)1);
		struct ct_pcpos pos = {e->pid, gopc, NULL, NULL, 0};
		const struct ct_go_func *fn;
		const char *file;
		int32_t line;
		/* gopc is a return address: its call is the byte before */
		uint64_t link = gopc - (uint64_t)maps_bias(e->pid, o->path, &o->target->elf) - 1;
		if (ct_pclntab_pos(&o->target->pcln, link, &fn, &file, &line)) {
			pos.func = fn->name;
			pos.file = (char *)file;
			pos.line = (uint32_t)line;
			ct_writer_pcpos(s->w, o->site_base, o->nsites, &pos);
		}
	}
	struct ct_event c = *e;
	c.goid = e->flags & CT_EV_SYSSTACK ? e->goid : 0;
	c.key = goid;
	c.flags = 0;
	c.len = 8;
	ct_writer_event(s->w, &c, &gopc);
	if (s->sink)
		s->sink(s->sink_ctx, &c, &gopc);
}

/* A call with no traced call inside: from its entry event to its exit
 * event on one thread is what a probe hit costs the program (its body
 * aside), a sample for calibrate_at_end (insitu.h). */
static void note_tiny_call(struct ct_session *s, const struct object *o, uint32_t site, const struct ct_event *e)
{
	struct ct_tiny_last *t = &s->tiny_last[e->tid % (sizeof(s->tiny_last) / sizeof(s->tiny_last[0]))];
	const struct ct_plan_site *ps = &o->plan->sites.v[site];
	uint64_t key = e->key + (uint64_t)(int64_t)ps->key_adj;
	struct object eo;
	uint32_t el;
	if (t->tid == e->tid && t->opens && (ps->kind == CT_SITE_RET || ps->kind == CT_SITE_RETSITE) &&
	    !ps->elsewhere && t->goid == e->goid && t->key == key && e->ts > t->ts &&
	    object_of_site(s, t->site, &eo, &el)) {
		const struct ct_plan_site *es = &eo.plan->sites.v[el];
		if (eo.plan == o->plan && es->func == ps->func)
			ct_insitu_add(&s->insitu, t->site, e->site, e->ts - t->ts);
	}
	t->tid = e->tid;
	t->site = e->site;
	t->opens = ps->kind == CT_SITE_ENTRY || ps->kind == CT_SITE_CALL;
	t->ts = e->ts;
	t->key = key;
	t->goid = e->goid;
}

/* The call sites probes report come in bursts (a request's first pass
 * reaches dozens), and each batch attaches a link, which takes 0.5-10 ms
 * with the program running (the kernel writes each breakpoint into its
 * pages): planned one by one, the last of bench/http's first ~36 waited
 * ~100-200 ms, and their calls meanwhile ended unobserved (6-17% of a
 * 50-request run's calls); planned with those read within 2 ms of the
 * first, in 2-3 batches, 4-6% (~1% with the Go type index built beside:
 * ct_session_attach). */
#define CALLERS_WINDOW_NS 2000000ULL

static int read_event(struct ct_session *s, const struct ct_event *e, const void *payload);

static int on_event(void *ctx, const struct ct_event *e, const void *payload)
{
	struct ct_session *s = ctx;
	int rc = read_event(s, e, payload);
	if (rc == 0 && s->callers_since && now_mono_ns() - s->callers_since >= CALLERS_WINDOW_NS)
		return CT_EVENT_PAUSE; /* plan them now (run_deferred) */
	return rc;
}

static void off_cpu_record(struct ct_session *s, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t goid, uint64_t ns,
			   uint32_t flags)
{
	s->offcpu++;
	s->offcpu_ns += ns;
	ct_writer_offcpu(s->w, ts, pid, tid, goid, ns, flags);
}

/* A traced thread off CPU since SINCE was still off at the trace's end
 * (its record came after the end, or it had not run again when the
 * tracepoints came out: ct_probes_still_off): the time up to the end,
 * flagged so.  Replay gives it to the calls open then (unfinished),
 * --sched a linux:schedule that is unfinished too. */
static void off_cpu_at_end(struct ct_session *s, uint32_t pid, uint32_t tid, uint64_t since, uint64_t goid,
			   uint32_t flags)
{
	if (since >= s->end_ts || (!s->launched && pid == s->launch_pid) || map_get(&s->exec_left, pid))
		return;
	off_cpu_record(s, s->end_ts, pid, tid, goid, s->end_ts - since, flags | CT_OFFCPU_AT_END);
	s->offcpu_at_end++;
}

static void still_off(void *ctx, uint32_t pid, uint32_t tid, uint64_t since, uint64_t goid, uint32_t flags)
{
	off_cpu_at_end(ctx, pid, tid, since, goid, flags);
}

static int read_event(struct ct_session *s, const struct ct_event *e, const void *payload)
{
	bool cut = s->o.max_size && ct_writer_bytes(s->w) >= s->o.max_size;
	bool after_end = s->end_ts && e->ts > s->end_ts; /* the trace ends when detaching starts (see finish) */
	if (!s->wasm && (int32_t)(e->loss_gen - s->loss_gen) > 0) {
		/* Events were dropped since the last event that said so: the
		 * loss record goes here, before the first event that began
		 * after the drop (see ct_event.loss_gen); what is not written
		 * here goes at the end. */
		uint32_t n = e->loss_gen - s->loss_gen;
		s->loss_gen = e->loss_gen;
		s->launched = true; /* its exec may be among them */
		if (!cut && !after_end) {
			ct_writer_lost(s->w, e->ts, n);
			s->lost_marked += n;
		}
	}
	/* A process that exec'd another program: the probes its links put
	 * in the files both map (a library's) still fire there until they go
	 * (at the end): not its program's calls, and no caller of them is
	 * planned (the process's own end and exit still count) */
	if (s->exec_left.n && (!(e->flags & CT_EV_PROC) || e->site == CT_PROC_CALLER ||
			       e->site == CT_PROC_ICALL_EXIT || e->site == CT_PROC_STALL || e->site == CT_PROC_OFFCPU ||
			       e->site == CT_PROC_READY) &&
	    map_get(&s->exec_left, e->pid)) {
		s->exec_left_dropped++;
		return 0;
	}
	if ((e->flags & CT_EV_PROC) && e->site == CT_PROC_CALLER) {
		/* a new call site or return address: planned and probed with
		 * the others read within CALLERS_WINDOW_NS of it, before the
		 * events behind them are read (on_event; the calls from there
		 * until the probe is in end unobserved); once a good share of
		 * the links is used, after this drain, with the others it
		 * brings (a burst of them, as a library's initialization makes,
		 * would use up the links one by one).  No event read before
		 * that names the new sites. */
		struct ct_deferred d = {.kind = CT_DEFER_CALLER, .pid = e->pid, .caller = e->goid, .ret = e->key};
		if (e->len >= sizeof(struct ct_caller_file)) {
			struct ct_caller_file cf;
			memcpy(&cf, payload, sizeof(cf));
			d.kdev = cf.dev;
			d.kino = cf.ino;
		}
		if (!s->launched && e->pid == s->launch_pid)
			return 0; /* calltrace's own code, before the program's exec */
		CT_VEC_PUSH(s->deferred, d);
		if (s->caller_links < MAX_CALLER_LINKS / 4 && !s->callers_since)
			s->callers_since = now_mono_ns();
		return 0;
	}
	if ((e->flags & CT_EV_PROC) && e->site == CT_PROC_ICALL_EXIT) {
		/* weighed now, with every event before it read (their counts) */
		if (after_end || cut || !s->icall_of)
			return 0;
		struct ct_deferred d = {.kind = CT_DEFER_ICALL, .pid = e->pid, .caller = e->key};
		CT_VEC_PUSH(s->deferred, d);
		return CT_EVENT_PAUSE;
	}
	if ((e->flags & CT_EV_PROC) && e->site == CT_PROC_STALL) {
		/* a wait for our probe changes (calltrace.bpf.c ct_wait_end) */
		if (after_end || cut || (!s->launched && e->pid == s->launch_pid))
			return 0;
		s->stalls++;
		s->stall_ns += e->key;
		ct_writer_stall(s->w, e->ts, e->pid, e->tid, e->goid, e->key > UINT32_MAX ? UINT32_MAX : (uint32_t)e->key);
		return 0;
	}
	if ((e->flags & CT_EV_PROC) && e->site == CT_PROC_OFFCPU) {
		/* a traced thread ran again after the scheduler took it off
		 * (calltrace.bpf.c ct_switch); after the end, off CPU since
		 * before it: that part, up to the end (off_cpu_at_end) */
		if (cut || (!s->launched && e->pid == s->launch_pid))
			return 0;
		if (after_end)
			off_cpu_at_end(s, e->pid, e->tid, e->ts - e->key, e->goid, e->pad);
		else
			off_cpu_record(s, e->ts, e->pid, e->tid, e->goid, e->key, e->pad);
		return 0;
	}
	if ((e->flags & CT_EV_PROC) && e->site == CT_PROC_READY) {
		/* a parked goroutine made runnable (record --parks, calltrace.bpf.c send_ready) */
		if (after_end || cut || (!s->launched && e->pid == s->launch_pid))
			return 0;
		ct_writer_ready(s->w, e->ts, e->pid, e->tid, e->goid);
		return 0;
	}
	if ((e->flags & CT_EV_PROC) && e->site == CT_PROC_EXEC && e->pid == s->launch_pid && !s->launched) {
		/* the program's own exec: what follows is the program */
		s->launched = true;
		if (!s->o.follow)
			return 0;
	}
	if (e->flags & CT_EV_PROC) {
		/* replay ends the calls of a process that ends or execs */
		if (!after_end && !cut)
			ct_writer_proc(s->w, e->ts, e->site, e->pid, e->tid, e->site == CT_PROC_FORK ? (uint32_t)e->goid : 0);
		if (e->site == CT_PROC_EXEC && !s->o.follow) {
			/* a later exec, without --follow: its calls end, the new binary is not probed */
			if (!after_end)
				left_by_exec(s, e->pid, e->key);
			return 0;
		}
		if (e->site == CT_PROC_EXIT && !s->launch_pid) {
			free(s->left_by_exec); /* (the last to go went otherwise) */
			s->left_by_exec = NULL;
		}
		if (e->site == CT_PROC_EXEC) {
			/* planning and attaching happen in the loop, before the
			 * events behind this one are read */
			struct ct_deferred d = {.kind = CT_DEFER_EXEC, .held = e->goid != 0, .pid = e->pid};
			CT_VEC_PUSH(s->deferred, d);
			return CT_EVENT_PAUSE;
		} else if (e->site == CT_PROC_FORK) {
			ct_debug("--follow: process %u forked %llu", e->pid, (unsigned long long)e->goid);
		}
		return 0;
	}
	if (cut) {
		s->cut_size++; /* drained after the limit: not written */
		return 0;
	}
	if (after_end)
		return 0; /* the trace ends when detaching starts (see finish) */
	if (s->wasm) {
		/* the recorder's values are 8-byte words: already compact */
		ct_writer_event(s->w, e, payload);
		s->calls_written++; /* (entries and exits alike: only "none" counts) */
		if (s->sink)
			s->sink(s->sink_ctx, e, payload);
		return 0;
	}
	struct object o;
	uint32_t site = 0;
	bool known = object_of_site(s, e->site, &o, &site);
	if (!s->launched && e->pid == s->launch_pid) {
		/* the program's own code runs only after its exec (not
		 * before, unless calltrace runs that code too) */
		if (known && o.plan == &s->plan && !s->program_is_ours)
			s->launched = true;
		else {
			s->before_exec++;
			return 0;
		}
	}
	const struct ct_site_fetch *f = known && o.plan->fetch ? o.plan->fetch[site] : NULL;
	/* The ring carries what the ops copied, as the file keeps it
	 * (calltrace.bpf.c compacts); the words are read in the fixed layout. */
	const void *sent = payload;
	uint16_t sent_len = e->len;
	struct ct_event fixed = *e;
	if (e->len && f) {
		fixed.len = (uint16_t)ct_fetch_expand(&f->prog, payload, e->len, s->compact, CT_MAX_PAYLOAD * 2);
		e = &fixed;
		payload = s->compact;
	}
	if (known && o.plan->sites.v[site].kind == CT_SITE_GOCREATE) {
		goroutine_created(s, &o, e, payload);
		return 0;
	}
	if (e->len && f) {
		/* every role's values are in the payload (one probe's, or a
		 * CHECK's sending the exit before its call) */
		for (uint32_t k = site, n = 0; o.plan->types && k < o.plan->sites.n && n < 8; n++) {
			if (o.plan->fetch[k])
				note_dynamic_types(s, &o, o.plan->fetch[k], payload, e->len, e->pid);
			k = o.plan->sites.v[k].next;
			if (k >= o.plan->sites.n || !(o.plan->sites.v[k].flags & CT_SITEF_COMPANION))
				break;
		}
		struct ct_event c = *e;
		c.len = sent_len;
		ct_writer_event(s->w, &c, sent);
	} else {
		struct ct_event c = *e;
		c.len = 0;
		ct_writer_event(s->w, &c, NULL);
	}
	if (known) {
		enum ct_site_kind kind = o.plan->sites.v[site].kind;
		bool call = kind == CT_SITE_ENTRY || kind == CT_SITE_CALL || kind == CT_SITE_CHECK;
		s->calls_written += call;
		if (s->icall_of && o.plan == &s->plan) {
			/* (what weigh_icall_exit weighs) */
			uint32_t x = site < s->icall_of_n ? s->icall_of[site] : 0, fn = o.plan->sites.v[site].func;
			if (x & 1)
				s->icall_exits.v[(x >> 1) - 1].calls++;
			else if (x)
				s->icall_exits.v[(x >> 1) - 1].hits++;
			if (call && fn < s->calls_of_n)
				s->calls_of[fn]++;
		}
	}
	if (s->sink)
		s->sink(s->sink_ctx, e, payload);
	if (known && s->calib)
		note_tiny_call(s, &o, site, e);
	return 0;
}

#define CALLER_REFUSED UINT32_MAX

typedef CT_VEC(uint64_t) u64_vec;

/* A file a return address found while recording is in (the program, a
 * library, traced or not), as the traced process maps it. */
struct ct_module {
	char *path;
	char *attach_path; /* where probes in it go (object_file) */
	ino_t ino;
	uint32_t dev; /* as the kernel has it (MAJOR << 20 | MINOR): struct ct_file_ret */
	struct ct_elf elf;
	int bin; /* the traced object it is (0: the program, k: s->libs[k-1]), -1: none */
	bool borrowed; /* ELF: that object's own (not a second mapping of the file) */
	/* The file as the kernel side's lookups by file and offset
	 * (file_rets, file_calls) see it: on overlayfs the file under it,
	 * whose device and inode stat() does not show (ct_overlay_backing),
	 * and the identity a probe's report of a return address in it carries
	 * (kino 0: none known yet; elsewhere, dev and ino) */
	uint32_t kdev;
	uint64_t kino;
	struct ct_pads *pads; /* its code's exception landing pads, at the first need (a traced object's: its plan's) */
};

/* Traced object BIN's code's landing pads: its plan's (made at the first
 * need), which its found callers' exits are judged by too. */
static struct ct_pads *object_pads(struct ct_session *s, uint32_t bin)
{
	struct ct_plan *p = bin ? &s->libs[bin - 1].plan : &s->plan;
	if (!p->pads)
		p->pads = ct_pads_new(&p->t->elf, p->t);
	return p->pads;
}

/* Why an exit probe at a return address RET in M could take a call that
 * did not return for one that did (NULL: none): its caller calls setjmp (a
 * longjmp out of the call may go on there), or catches exceptions there
 * (any catch that may resume it; a cleanup that unwinds on is no way back). */
static const char *module_way_back(struct ct_session *s, struct ct_module *m, uint64_t ret)
{
	/* (a traced object's are its plan's, which its found callers' exits
	 * are judged by too: read before the program ran, object_pads) */
	if (!m->pads && m->bin >= 0)
		m->pads = object_pads(s, (uint32_t)m->bin);
	else if (!m->pads)
		m->pads = ct_pads_new(&m->elf, NULL);
	/* (a traced file's plan knows its setjmp callers; another's are
	 * looked for at the first need) */
	if (m->bin >= 0 ? ct_plan_return_unproven(m->bin ? &s->libs[m->bin - 1].plan : &s->plan, ret)
			: ct_pads_twice(m->pads, ret))
		return "its caller calls setjmp (a longjmp out of the call may go on there)";
	return ct_pads_rejoin(m->pads, 0, ret, 0, false);
}

static struct ct_module *module_open(struct ct_session *s, const char *path, unsigned long long ino)
{
	for (size_t i = 0; i < s->modules.n; i++)
		if (s->modules.v[i]->ino == (ino_t)ino && !strcmp(s->modules.v[i]->path, path))
			return s->modules.v[i];
	struct stat st, os;
	if (stat(path, &st) || st.st_ino != (ino_t)ino)
		return NULL; /* replaced since it was mapped */
	struct ct_module *m = xcalloc(1, sizeof(*m));
	m->bin = -1;
	/* (by the file each object was read from: its name may be gone, or
	 * another file's now) */
	for (size_t k = 0; k <= s->nlibs && m->bin < 0; k++) {
		if (k && s->libs[k - 1].catch_only)
			continue; /* none of its functions traced: a module as any other */
		const struct ct_elf *oe = k ? &s->libs[k - 1].target.elf : &s->target.elf;
		if (oe->fd >= 0 && fstat(oe->fd, &os) == 0 && os.st_dev == st.st_dev && os.st_ino == st.st_ino)
			m->bin = (int)k;
	}
	/* a traced object's file is open already (mapped again, its pages
	 * read were 2 MB more of the tracer's memory on bench/http) */
	const struct ct_target *ot = m->bin < 0 ? NULL : m->bin ? &s->libs[m->bin - 1].target : &s->target;
	if (ot && ot->elf.elf) {
		m->elf = ot->elf;
		m->borrowed = true;
	} else if (ct_elf_open(&m->elf, path)) {
		free(m);
		return NULL;
	}
	m->path = xstrdup(path);
	m->attach_path = object_file(&m->elf, path);
	m->ino = st.st_ino;
	m->dev = (uint32_t)(major(st.st_dev) << 20 | minor(st.st_dev));
	struct stat bs;
	if (!ct_on_overlay(path)) {
		m->kdev = m->dev;
		m->kino = m->ino;
	} else if (ct_overlay_backing(path, &bs)) {
		m->kdev = (uint32_t)(major(bs.st_dev) << 20 | minor(bs.st_dev));
		m->kino = bs.st_ino;
	}
	CT_VEC_PUSH(s->modules, m);
	return m;
}

/* The file process PID runs ADDR from (an executable mapping of one), and
 * ADDR's link-time address there (*LINK); NULL if none. */
static struct ct_module *module_at(struct ct_session *s, uint32_t pid, uint64_t addr, uint64_t *link)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	struct ct_module *m = NULL;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, ino;
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %llu%n", &lo, &hi, perms, &off, &ino, &pos) < 5 || addr < lo ||
		    addr >= hi)
			continue;
		char *file = line + pos;
		while (*file == ' ')
			file++;
		file[strcspn(file, "\n")] = 0;
		if (perms[2] == 'x' && file[0] == '/' && !(m = module_open(s, file, ino))) {
			/* the process sees its files where this one does not (its
			 * own mount namespace: a container) */
			char *link_path = ct_mapping_link((pid_t)pid, lo, hi);
			m = module_open(s, link_path, ino);
			free(link_path);
		}
		if (m) {
			uint64_t foff = addr - lo + off;
			const struct ct_elf *e = &m->elf;
			size_t i = 0;
			while (i < e->nsegs && !((e->segs[i].flags & PF_X) && foff >= e->segs[i].offset &&
						  foff - e->segs[i].offset < e->segs[i].filesz))
				i++;
			if (i < e->nsegs)
				*link = e->segs[i].vaddr + (foff - e->segs[i].offset);
			else
				m = NULL;
		}
		break;
	}
	fclose(f);
	return m;
}

struct module_probes {
	struct ct_session *s;
	const struct ct_module *m;
};

/* What the traced object M probes at ADDR (ct_found_return.probe_at); the
 * return sites other objects' tail jumps found there are return sites. */
/* Brings s->probes_at[BIN] up to date with its plan's sites. */
static struct ct_map *index_probes(struct ct_session *s, uint32_t bin)
{
	const struct ct_plan *p = bin ? &s->libs[bin - 1].plan : &s->plan;
	struct ct_map *idx = &s->probes_at[bin].there;
	size_t *n = &s->probes_at[bin].n;
	for (; *n < p->sites.n; ++*n) {
		const struct ct_plan_site *st = &p->sites.v[*n];
		if (st->elsewhere || (st->flags & CT_SITEF_ATCHECK) || st->kind == CT_SITE_TAILDIFF)
			continue;
		enum ct_probe_there at = st->kind == CT_SITE_RETSITE || st->kind == CT_SITE_TAILRES ? CT_THERE_RETSITE
					 : st->kind == CT_SITE_RET || st->kind == CT_SITE_TAIL	? CT_THERE_EXIT
													: CT_THERE_OTHER;
		uintptr_t had = (uintptr_t)map_get(idx, st->addr);
		if ((uintptr_t)at + 1 > had)
			map_put(idx, st->addr, (void *)((uintptr_t)at + 1));
	}
	return idx;
}

static enum ct_probe_there module_probe_at(void *ctx, uint64_t addr)
{
	const struct module_probes *c = ctx;
	if (c->m->bin < 0 || c->m->bin >= CT_MAX_BINS)
		return CT_THERE_NONE;
	uintptr_t there = (uintptr_t)map_get(index_probes(c->s, (uint32_t)c->m->bin), addr);
	return there ? (enum ct_probe_there)(there - 1) : CT_THERE_NONE;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

/* The return sites of the direct calls in file PATH (target CT, traced or
 * not) through its PLT of library K's functions whose calls may end in
 * untraced code (ENDS, BY_NAME: name hash -> index + 1): an exit probe
 * after each, as after a return address found while recording (each
 * function of the call's tail jumps its own, a frame the call may be), and
 * for each probe whose tail jump may end the call, the return address in
 * that file; not where that file's plan CALLER_PLAN says a return address
 * proves no return (a setjmp caller's).  How many calls got them. */
static size_t returns_from(struct ct_session *s, size_t k, const struct ct_tail_ends *ends, struct ct_map *by_name,
			   const struct ct_target *ct, const struct ct_plan *caller_plan, const char *path)
{
	struct ct_plan *p = &s->libs[k].plan;
	struct ct_plt_stub *stubs;
	size_t nstubs = ct_plt_stubs(&ct->elf, &stubs), ncalls = 0, done = 0;
	CT_VEC(uint64_t) targets = {0};
	struct ct_map stub_func = {0};
	for (size_t i = 0; i < nstubs; i++) {
		size_t j1 = (size_t)(uintptr_t)map_get(by_name, hash_str(stubs[i].name));
		if (j1 && !strcmp(p->funcs.v[j1 - 1].fn->name, stubs[i].name)) {
			CT_VEC_PUSH(targets, stubs[i].addr);
			map_put(&stub_func, stubs[i].addr, (void *)(uintptr_t)j1);
		}
	}
	free(stubs);
	struct ct_call_to *calls = NULL;
	struct stat st;
	struct ct_module *m = NULL;
	if (targets.n && stat(path, &st) == 0 && (m = module_open(s, path, st.st_ino))) {
		/* where decoding can start: functions with a symbol or unwind
		 * information */
		uint64_t *fdes;
		size_t nf = ct_fde_starts(&ct->elf, &fdes), ns = 0;
		uint64_t *starts = xcalloc(nf + ct->nfuncs + 1, sizeof(*starts));
		for (size_t i = 0; i < nf; i++)
			starts[ns++] = fdes[i];
		for (size_t i = 0; i < ct->nfuncs; i++)
			starts[ns++] = ct->funcs[i].entry;
		qsort(starts, ns, sizeof(*starts), cmp_u64);
		qsort(targets.v, targets.n, sizeof(*targets.v), cmp_u64);
		ncalls = ct_calls_to(&ct->elf, starts, ns, targets.v, targets.n, &calls);
		free(fdes);
		free(starts);
	}
	struct module_probes mp = {s, m};
	for (size_t i = 0; i < ncalls; i++) {
		uint32_t j = (uint32_t)((uintptr_t)map_get(&stub_func, calls[i].target) - 1);
		uint64_t ret = calls[i].at + 5;
		if (module_way_back(s, m, ret))
			continue; /* (a longjmp or a catch may resume the caller there: the call's end unobserved) */
		int64_t off = ct_elf_vaddr_to_offset(&m->elf, ret);
		size_t len = 256;
		while (len > 1 && !ct_elf_bytes_at(&m->elf, ret, len))
			len /= 2;
		if (off < 0 || !ct_elf_bytes_at(&m->elf, ret, len))
			continue;
		struct ct_found_return fr = {ret, ct_elf_bytes_at(&m->elf, ret, len), len, off - (int64_t)ret,
					     module_probe_at, &mp, 0};
		bool busy;
		const char *why;
		uint32_t exit = ct_plan_return_elsewhere(p, j, ends[j].entry, &fr, &busy, &why);
		if (exit == CT_NOSITE && !busy)
			continue;
		for (size_t f = 0; exit != CT_NOSITE && f <= ends[j].funcs.n; f++) {
			uint32_t fn = f ? ends[j].funcs.v[f - 1] : j;
			uint32_t e = f ? ct_plan_return_elsewhere(p, fn, ends[fn].entry, &fr, &busy, &why) : exit;
			struct ct_early_exit x = {(uint32_t)k + 1, e, m->path};
			if (e != CT_NOSITE)
				CT_VEC_PUSH(s->early_exits, x);
		}
		for (size_t q = 0; q < ends[j].probes.n; q++) {
			struct ct_early_ret r = {(uint32_t)k + 1, ends[j].probes.v[q], m->kdev, m->kino, (uint64_t)off};
			CT_VEC_PUSH(s->early_rets, r);
		}
		done++;
	}
	free(calls);
	map_free(&stub_func);
	CT_VEC_FREE(targets);
	return done;
}

/* A traced library's functions whose calls may go on in untraced code (a
 * tail jump) end where they return: called from another file (the
 * program, another library) through its PLT, that return address is known
 * before the program runs, and its exit probe goes in with the others
 * (found while recording, the first call from there would be unobserved).
 * Not with record-time limits (their kernel-side stacks know RET probes
 * only) nor --follow (other processes, other files). */
static void plan_returns_elsewhere(struct ct_session *s)
{
	if (s->main_sel.limits || s->o.follow)
		return;
	for (size_t k = 0; k < s->nlibs; k++) {
		if (s->libs[k].catch_only)
			continue;
		struct ct_plan *p = &s->libs[k].plan;
		struct ct_tail_ends *ends = ct_plan_tail_ends(p);
		struct ct_map by_name = {0};
		for (size_t j = 0; j < p->funcs.n; j++)
			if (ends[j].probes.n && ends[j].entry != CT_NOSITE)
				map_put(&by_name, hash_str(p->funcs.v[j].fn->name), (void *)(uintptr_t)(j + 1));
		for (size_t c = 0; by_name.n && c <= s->nlibs; c++) {
			if (c == k + 1 || (c && s->libs[c - 1].catch_only))
				continue; /* its own calls are planned with it; (none from an untraced library) */
			const struct ct_target *ct = c ? &s->libs[c - 1].target : &s->target;
			const struct ct_plan *cp = c ? &s->libs[c - 1].plan : &s->plan;
			size_t n = returns_from(s, k, ends, &by_name, ct, cp, ct->elf.path);
			if (n)
				ct_debug("%s: exit probes after %zu calls of its functions from %s", s->libs[k].name, n,
					 ct->elf.path);
		}
		map_free(&by_name);
		ct_plan_tail_ends_free(ends, p->funcs.n);
	}
}

/* A return address LINK in M found while recording, as the place an exit
 * probe goes after: a call instruction ends there (else it is not one, and
 * no probe goes in the middle of an instruction; the call's length in
 * FR->call_len), and nothing but the call's return goes on there
 * (module_way_back).  *FR: the code from there, for the exit walk (its
 * probe_at asks *MP).  False with *WHY if not. */
static bool module_return(struct ct_session *s, struct ct_module *m, uint64_t link, struct module_probes *mp,
			  struct ct_found_return *fr, const char **why)
{
	size_t nb = 16, call_len = 0;
	while (nb >= 2 && !ct_elf_bytes_at(&m->elf, link - nb, nb))
		nb--;
	if (nb >= 2)
		call_len = ct_call_ends_at(ct_elf_bytes_at(&m->elf, link - nb, nb), nb);
	if (!call_len) {
		*why = "no call instruction returns there";
		return false;
	}
	const char *back = module_way_back(s, m, link);
	if (back) {
		*why = back; /* that way back would look like the call's return */
		return false;
	}
	size_t len = 256;
	while (len > 1 && !ct_elf_bytes_at(&m->elf, link, len))
		len /= 2;
	*mp = (struct module_probes){s, m};
	*fr = (struct ct_found_return){link, ct_elf_bytes_at(&m->elf, link, len), len,
				       ct_elf_vaddr_to_offset(&m->elf, link) - (int64_t)link, module_probe_at, mp, call_len};
	if (!fr->code) {
		*why = "the return address is in no code of the file";
		return false;
	}
	return true;
}

/* What one batch of found call sites and return addresses adds: exit
 * probes (object BIN's plan site LOCAL, probed in file PATH), and the
 * "planned_calls" entries that say they are in. */
struct found_probe {
	uint32_t bin, local;
	const char *path;
};
struct found_planned {
	uint64_t key;
	uint32_t bin, local;
	int32_t key_delta;
	uint32_t via;
};
/* ... and a call site in another file than its CHECK's ("file_calls") */
struct found_file_call {
	struct ct_file_ret key;
	uint32_t bin, local;
};
struct found_batch {
	CT_VEC(struct found_probe) probes;
	CT_VEC(struct found_planned) planned;
	CT_VEC(struct found_file_call) file_calls;
	uint32_t first[CT_MAX_BINS]; /* each object's plan size before the batch */
	uint32_t added;              /* sites added to the plans so far */
	size_t watches;              /* of PLANNED and FILE_CALLS: for tail jumps (watch_tails) */
};

/* The probes whose tail jumps to untraced code check whether a probe sees
 * the call end (ct_plan_tail_probes_of) learn that one does for the calls
 * from found call site CALL of object O, returning to RET (link-time, in
 * O's file; or, with M, at file offset OFF of M): else a call from there
 * that goes on in untraced code would end unobserved at the jump. */
static void watch_tails(struct ct_session *s, const struct object *o, uint32_t call, uint64_t ret,
			const struct ct_module *m, uint64_t off, struct found_batch *b)
{
	struct ct_plan *p = o->plan;
	const struct ct_callsite *cs = p->sites.v[call].cs;
	if (!cs || (cs->exit_site == CT_NOSITE && cs->how != CT_EXIT_TAILPOS))
		return; /* (no exit probe of its own: its function's RETs, which a tail jump skips) */
	uint32_t *t;
	size_t n = ct_plan_tail_probes_of(p, p->sites.v[call].func, &t);
	if (s->tail_watches + n > s->max_callers)
		n = 0; /* (the room the maps were sized with: those calls end at the jump) */
	s->tail_watches += (uint32_t)n;
	for (size_t k = 0; k < n; k++) {
		uint32_t gt = global_site(s, o->bin, t[k]);
		if (m) {
			struct found_file_call fc = {{gt, m->kdev, m->kino, off}, o->bin, call};
			CT_VEC_PUSH(b->file_calls, fc);
		} else {
			struct found_planned fd = {CT_PLANNED_KEY(gt, (int64_t)(ret - p->sites.v[t[k]].addr)), o->bin, call, 0,
						   0};
			CT_VEC_PUSH(b->planned, fd);
		}
	}
	b->watches += n;
	free(t);
}

/* The probes of the sites object O's plan gained since it had BEFORE, in
 * file PATH, into the batch. */
static void probe_new_sites_in(struct ct_session *s, const struct object *o, uint32_t before, const char *path,
			       struct found_batch *b)
{
	const struct ct_plan *p = o->plan;
	for (uint32_t i = before; i < p->sites.n; i++)
		if (ct_site_is_probe(&p->sites.v[i])) {
			struct found_probe fp = {o->bin, i, path};
			CT_VEC_PUSH(b->probes, fp);
		}
}

/* ... in its own file. */
static void probe_new_sites(struct ct_session *s, const struct object *o, uint32_t before, struct found_batch *b)
{
	probe_new_sites_in(s, o, before, o->attach_path, b);
}

/* Exit probes at their return addresses again for the calls of CHECK's
 * function that an untraced caller's return was to see end (CT_EXIT_VIA),
 * one place it returns to having no exit probe (BEFORE: the plan's size
 * before): those calls from there end unobserved, the others from now on
 * are seen where they are. */
static void unvia(struct ct_session *s, const struct object *o, uint32_t check, uint32_t before,
		  struct found_batch *b)
{
	struct ct_plan *p = o->plan;
	struct ct_plan_planned *pl = NULL;
	size_t n = 0;
	ct_plan_unvia(p, check, &pl, &n);
	probe_new_sites(s, o, before, b);
	uint32_t gcheck = global_site(s, o->bin, check);
	for (size_t k = 0; k < n; k++) {
		struct found_planned fd = {CT_PLANNED_KEY(gcheck, (uint32_t)pl[k].key), o->bin, pl[k].val.site,
					   pl[k].val.key_delta, 0};
		CT_VEC_PUSH(b->planned, fd);
	}
	if (n)
		ct_debug("calls of %s: %zu exits at their return addresses again", p->funcs.v[p->sites.v[check].func].fn->name,
			 n);
	free(pl);
}

/* Calls of CHECK's function (in object O) from a place no exit probe can
 * watch (why: WHY) would each end unobserved: its RETs see them end
 * instead (this one too if it is still running when they are in), at a
 * RET's price from now on.  Else those calls end unobserved. */
static void rets_from_now(struct ct_session *s, const struct object *o, uint32_t check, uint32_t before,
			  const struct ct_deferred *d, struct found_batch *b, const char *why)
{
	struct ct_plan *p = o->plan;
	const struct ct_func *fn = p->funcs.v[p->sites.v[check].func].fn;
	bool rets = ct_plan_rets_from_now(p, check);
	bool kept = rets && p->funcs.v[p->sites.v[check].func].interim_kept;
	ct_debug("calls of %s from 0x%llx keep no exit: %s%s", ct_names_show(&fn->dm, fn->name), (unsigned long long)d->ret,
		 why, kept ? "; its interim RETs stay" : rets ? "; its RETs are probed from now on" : "");
	if (rets)
		probe_new_sites(s, o, before, b);
	else
		unvia(s, o, check, before, b);
}

/* A CHECK's call from a return address LINK in another file, M (D): its
 * call site and exit probe planned there, looked up by file and offset
 * (the two files load anywhere: the distance from the CHECK says nothing). */
static bool found_call_elsewhere(struct ct_session *s, const struct ct_deferred *d, const struct object *o,
				 uint32_t check, struct ct_module *m, uint64_t link, struct found_batch *b, const char **why)
{
	struct ct_plan *p = o->plan;
	uint32_t before = (uint32_t)p->sites.n, func = p->sites.v[check].func, call = CT_NOSITE;
	const struct ct_func *fn = p->funcs.v[func].fn;
	struct module_probes mp;
	struct ct_found_return fr;
	struct ct_planned_call val;
	if (d->kino && (d->kino != m->kino || d->kdev != m->kdev)) {
		/* the report of a return address in it says which file the
		 * kernel side sees (on overlayfs: the one under it, found from
		 * the mount's layers too, ct_overlay_backing) */
		if (m->kino)
			ct_debug("%s: the kernel side sees file %u:%u ino %" PRIu64 ", not the layer's %u:%u ino %" PRIu64,
				 m->path, d->kdev >> 20, d->kdev & 0xfffff, d->kino, m->kdev >> 20, m->kdev & 0xfffff,
				 m->kino);
		m->kino = d->kino;
		m->kdev = d->kdev;
	}
	if (p->funcs.v[func].rets_probed)
		*why = "its RETs see its calls end";
	else if (!m->kino)
		*why = "its caller's file is on overlayfs, and the kernel side did not say which file is under it";
	else if (module_return(s, m, link, &mp, &fr, why))
		call = ct_plan_found_caller_elsewhere(p, check, &fr, &val, why);
	if (call == CT_NOSITE) {
		if (!p->funcs.v[func].rets_probed)
			rets_from_now(s, o, check, before, d, b, *why);
		return false;
	}
	probe_new_sites_in(s, o, before, m->attach_path, b);
	struct found_file_call fc = {{global_site(s, o->bin, check), m->kdev, m->kino,
				      (uint64_t)((int64_t)link + fr.file_off)},
				     o->bin, call};
	CT_VEC_PUSH(b->file_calls, fc);
	watch_tails(s, o, call, link, m, fc.key.off, b);
	const struct ct_plan_site *x = &p->sites.v[p->sites.v[call].cs->exit_site];
	ct_debug("calls of %s from %s+0x%llx: exit probe at 0x%llx there (key_adj %d)", ct_names_show(&fn->dm, fn->name),
		 m->path, (unsigned long long)link, (unsigned long long)x->addr, (int)x->key_adj);
	return true;
}

/* A CHECK's call from a return address it had no call site for (D): the
 * call site, planned in the CHECK's object O, whose code it must be in. */
static bool found_call(struct ct_session *s, const struct ct_deferred *d, const struct object *o, uint32_t check,
		       struct found_batch *b, const char **why)
{
	struct ct_plan *p = o->plan;
	uint64_t ret = p->sites.v[check].addr + (uint64_t)(int64_t)(int32_t)(uint32_t)d->caller, link = 0;
	/* The caller may be in another file (a library calling back, an
	 * exported function's caller): then RET is no address in this one,
	 * whatever the code there looks like. */
	struct ct_module *m = module_at(s, d->pid, d->ret, &link);
	struct ct_plan_planned pl;
	uint32_t before = (uint32_t)p->sites.n, call = CT_NOSITE;
	const struct ct_func *fn = p->funcs.v[p->sites.v[check].func].fn;
	if (m && m->bin != (int)o->bin)
		return found_call_elsewhere(s, d, o, check, m, link, b, why);
	if (!m || link != ret)
		*why = "the return address is in no file the process runs code from";
	else
		call = ct_plan_found_caller(p, check, ret, &pl, why);
	if (call == CT_NOSITE) {
		rets_from_now(s, o, check, before, d, b, *why);
		return false;
	}
	/* its exit probe; or its function's RETs, probed from now on */
	uint32_t exit = p->sites.v[call].cs->exit_site;
	/* (made last by a wrapper: where that returns to, now, not each
	 * place at the first call from there) */
	struct ct_plan_planned *more = NULL;
	size_t nmore = 0;
	if (pl.val.via)
		ct_plan_via_places(p, check, call, &more, &nmore);
	uint32_t gcheck = global_site(s, o->bin, check);
	for (size_t k = 0; k < nmore; k++) {
		struct found_planned fd = {CT_PLANNED_KEY(gcheck, (uint32_t)more[k].key), o->bin, more[k].val.site,
					   more[k].val.key_delta, more[k].val.via};
		CT_VEC_PUSH(b->planned, fd);
		map_put(&s->callers_done, fd.key, (void *)1);
	}
	free(more);
	probe_new_sites(s, o, before, b);
	struct found_planned fd = {d->caller, o->bin, call, pl.val.key_delta, pl.val.via};
	CT_VEC_PUSH(b->planned, fd);
	if (!pl.val.via)
		watch_tails(s, o, call, ret, NULL, 0, b);
	ct_debug("calls of %s from 0x%llx: exit probe at 0x%llx (key_adj %d)", ct_names_show(&fn->dm, fn->name),
		 (unsigned long long)ret, exit != CT_NOSITE ? (unsigned long long)p->sites.v[exit].addr : 0ULL,
		 exit != CT_NOSITE ? (int)p->sites.v[exit].key_adj : 0);
	return true;
}

/* A tail jump to untraced code (of the probe PROBE of object O) whose call
 * returns to D's return address, which no probe watched: an exit probe
 * there, in whatever file the process runs that code from. */
static bool found_return(struct ct_session *s, const struct ct_deferred *d, const struct object *o, uint32_t probe,
			 struct found_batch *b, const char **why)
{
	uint32_t func = o->plan->sites.v[probe].func;
	if (func < o->plan->funcs.n && o->plan->funcs.v[func].noreturn) {
		*why = "the function never returns (plan.c plan_noreturn)";
		return false;
	}
	uint64_t link = 0;
	struct ct_module *m = module_at(s, d->pid, d->ret, &link);
	if (!m) {
		*why = "the return address is in no file the process runs code from";
		return false;
	}
	struct module_probes mp;
	struct ct_found_return fr;
	if (!module_return(s, m, link, &mp, &fr, why))
		return false;
	uint32_t gprobe = o->site_base + probe;
	uint64_t seen = (uint64_t)m->ino * 0x9e3779b97f4a7c15ULL ^ link * 0xff51afd7ed558ccdULL ^ gprobe;
	uintptr_t known = (uintptr_t)map_get(&s->found_rets, seen);
	bool busy = false;
	uint32_t exit = known ? (uint32_t)(known - 1) : CT_NOSITE;
	if (!known) {
		exit = ct_plan_found_return(o->plan, probe, &fr, &busy, why);
		if (exit == CT_NOSITE && !busy) {
			ct_debug("tail jump at site %u returning to %s+0x%llx: no exit probe: %s", gprobe, m->path,
				 (unsigned long long)link, *why);
			return false;
		}
		if (busy)
			exit = probe; /* the probe there sees the call end */
		else {
			struct found_probe fp = {o->bin, exit, m->attach_path};
			CT_VEC_PUSH(b->probes, fp);
		}
		map_put(&s->found_rets, seen, (void *)(uintptr_t)(exit + 1));
		ct_debug("tail jump at site %u returning to %s+0x%llx: %s 0x%llx", gprobe, m->path, (unsigned long long)link,
			 busy ? "a probe is there already" : "exit probe at",
			 busy ? 0ULL : (unsigned long long)o->plan->sites.v[exit].addr);
	}
	struct found_planned fd = {d->caller, o->bin, exit, 0, 0};
	CT_VEC_PUSH(b->planned, fd);
	return true;
}

/* The call site or return address a probe reported (D), planned once. */
static void plan_caller(struct ct_session *s, const struct ct_deferred *d, struct found_batch *b)
{
	if (map_get(&s->callers_done, d->caller))
		return;
	uint32_t site = (uint32_t)(d->caller >> 32), probe = 0;
	const char *why = "the trace has ended";
	struct object o;
	bool ok = false;
	if (s->end_ts)
		;
	else if (s->caller_links >= MAX_CALLER_LINKS)
		why = "too many probe links added while recording";
	else if (s->found_n + b->added + 16 > s->found_max)
		why = "too many sites found while recording";
	else if (!object_of_site(s, site, &o, &probe) || probe >= o.own)
		why = "not a planned probe";
	else {
		uint32_t before = (uint32_t)o.plan->sites.n;
		if (o.plan->sites.v[probe].kind == CT_SITE_CHECK) {
			/* (its interim RETs stay a while longer: settle_interim) */
			o.plan->funcs.v[o.plan->sites.v[probe].func].interim_report_ns = now_mono_ns();
			ok = found_call(s, d, &o, probe, b, &why);
		} else {
			ok = found_return(s, d, &o, probe, b, &why);
		}
		b->added += (uint32_t)o.plan->sites.n - before;
	}
	if (!ok) {
		s->callers_refused++;
		if (why)
			ct_debug("return address 0x%llx reported by site %u: no exit probe: %s", (unsigned long long)d->ret,
				 site, why);
	}
	map_put(&s->callers_done, d->caller, (void *)(uintptr_t)(ok ? 1 : CALLER_REFUSED));
}

/* The sites object BIN's plan gained in this batch: the file's next ids,
 * into the file (tables, captures) and the BPF side's fetch programs. */
static bool write_found_sites(struct ct_session *s, uint32_t bin, uint32_t first)
{
	struct object o = object_n(s, bin);
	struct ct_plan *p = o.plan;
	uint32_t n = (uint32_t)p->sites.n - first, id0 = s->total_sites;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t packed = (uint64_t)bin << 32 | (first + i);
		map_put(&s->found_sites, id0 + i, (void *)(uintptr_t)(packed + 1));
		map_put(&s->found_ids, packed, (void *)(uintptr_t)(id0 + i + 1));
	}
	s->total_sites += n;
	s->found_n += n;
	struct ct_file_site *fs = ct_plan_file_sites(p, first, n);
	for (uint32_t i = 0; i < n; i++) {
		struct ct_file_site *f = &fs[i];
		f->id = global_site(s, bin, first + i);
		if (f->func != CT_NOFUNC)
			f->func += o.func_base;
		if (f->target_func != CT_NOFUNC)
			f->target_func += o.func_base;
		f->call_site = global_site(s, bin, f->call_site);
		f->next = global_site(s, bin, f->next);
	}
	ct_writer_tables(s->w, NULL, 0, fs, n);
	free(fs);
	bool ok = true;
	if (p->fetch) {
		for (uint32_t i = first; i < first + n; i++)
			if (p->fetch[i] && ct_site_is_probe(&p->sites.v[i]) &&
			    ct_probes_set_fetch(s->probes, id0 + i - first, &p->fetch[i]->prog))
				ok = false;
		if (p->types)
			ct_writer_types(s->w, ct_types_table(p->types), o.type_ids);
		ct_writer_fetch(s->w, p->fetch + first, n, id0, o.type_ids);
	}
	return ok;
}

/* N elements from SRC at the end of VEC. */
#define VEC_APPEND(vec, src, cnt)                                                   \
	do {                                                                        \
		CT_VEC_GROW(vec, (vec).n + (cnt));                                  \
		memcpy((vec).v + (vec).n, (src), (cnt) * sizeof(*(vec).v));         \
		(vec).n += (cnt);                                                   \
	} while (0)

static void caller_link_free(struct ct_caller_link *l)
{
	free(l->path);
	CT_VEC_FREE(l->offsets);
	CT_VEC_FREE(l->cookies);
}

/* The links of exits found while recording running short (a program that
 * finds callers all its life: cc1plus -F '*' refused 825 of them, their
 * calls unobserved), those of one file and process are made one link, the
 * old ones closed once it is in (a hit meanwhile is seen twice: its second
 * event closes no call).  A link failing to be made leaves the old ones. */
static void merge_caller_links(struct ct_session *s)
{
	size_t n = s->caller_link_list.n;
	struct ct_caller_link *v = s->caller_link_list.v;
	CT_VEC(struct ct_caller_link) out = {0};
	bool *taken = xcalloc(n ? n : 1, sizeof(*taken));
	for (size_t i = 0; i < n; i++) {
		if (taken[i])
			continue;
		struct ct_caller_link all = {xstrdup(v[i].path), v[i].pid, -1, {0}, {0}};
		size_t parts = 0;
		for (size_t j = i; j < n; j++)
			if (!taken[j] && v[j].pid == v[i].pid && !strcmp(v[j].path, v[i].path)) {
				VEC_APPEND(all.offsets, v[j].offsets.v, v[j].offsets.n);
				VEC_APPEND(all.cookies, v[j].cookies.v, v[j].cookies.n);
				parts++;
			}
		if (parts > 1)
			all.link = ct_probes_attach_link(s->probes, all.path, all.pid, all.offsets.v, all.cookies.v,
							 all.offsets.n);
		bool merged = all.link >= 0;
		for (size_t j = i; j < n; j++)
			if (!taken[j] && v[j].pid == all.pid && !strcmp(v[j].path, all.path)) {
				taken[j] = true;
				if (!merged) {
					CT_VEC_PUSH(out, v[j]);
					continue;
				}
				ct_probes_close_link(s->probes, v[j].link);
				caller_link_free(&v[j]);
			}
		if (!merged) {
			caller_link_free(&all);
			continue;
		}
		ct_debug("exits found while recording in %s: %zu links made one (%zu probes)", all.path, parts,
			 all.offsets.n);
		CT_VEC_PUSH(out, all);
		s->caller_links -= parts - 1;
		s->caller_links_merged += parts;
	}
	free(taken);
	CT_VEC_FREE(s->caller_link_list);
	s->caller_link_list.v = out.v;
	s->caller_link_list.n = out.n;
	s->caller_link_list.cap = out.cap;
}

/* The call sites and return addresses probes reported since the last
 * drain, as one batch: new sites into the file, their exit probes in one
 * link per file (and traced process), then the probes told that an exit
 * probe is in: CHECKs send those calls as their CALL sites', tail jumps
 * no longer flag them unwatched.  The program ran on meanwhile: the calls
 * from there before the probe was in end unobserved. */
static bool add_found(struct ct_session *s, struct found_batch *bp);

static void add_callers(struct ct_session *s)
{
	struct found_batch b = {0};
	if (s->caller_links >= MAX_CALLER_LINKS * 3 / 4)
		merge_caller_links(s);
	for (uint32_t k = 0; k <= s->nlibs && k < CT_MAX_BINS; k++)
		b.first[k] = (uint32_t)object_n(s, k).plan->sites.n;
	for (size_t i = 0; i < s->deferred.n; i++)
		if (s->deferred.v[i].kind == CT_DEFER_CALLER)
			plan_caller(s, &s->deferred.v[i], &b);
	add_found(s, &b);
}

/* Found exits of indirect calls watched, at most (a link each) */
#define ICALL_FOUND_MAX 32

/* FP, a probe batch B planned, in a link of its own and watched if it is
 * the exit of a call found while recording at an indirect call
 * instruction of the program, and nothing else (a function value's call
 * of a traced closure, from where untraced functions are called too:
 * unicode.IsDigit through count's f): as those planned before the program
 * ran (attach_icall_exits).  False if not. */
static bool watch_found_exit(struct ct_session *s, const struct found_probe *fp, const struct found_batch *b)
{
	struct ct_plan *p = &s->plan;
	const struct ct_plan_site *r = fp->bin ? NULL : &p->sites.v[fp->local];
	if (!s->icall_of || !r || s->icall_found >= ICALL_FOUND_MAX || s->attach_pids.n != 1 ||
	    s->icall_exits.n >= CT_ICALL_EXITS_MAX || r->kind != CT_SITE_RETSITE || r->next != CT_NOSITE || !r->cs ||
	    r->elsewhere || r->call_site >= p->sites.n)
		return false;
	/* (a direct call has one callee: each hit closes its call) */
	const uint8_t *op = ct_elf_bytes_at(&s->target.elf, r->cs->at, 1);
	uint64_t key = 0;
	for (size_t k = 0; k < b->planned.n && !key; k++)
		if (!b->planned.v[k].bin && b->planned.v[k].local == r->call_site && !b->planned.v[k].via)
			key = b->planned.v[k].key;
	uint32_t id = global_site(s, 0, fp->local);
	if (!op || *op == 0xe8 || !key || id == CT_NOSITE || ct_probes_watch_icall_exit(s->probes, id))
		return false;
	struct ct_icall_exit x = {.site = fp->local, .link = (uint32_t)s->icall_links.n, .key = key};
	CT_VEC_PUSH(s->icall_exits, x);
	struct ct_icall_link l = {xstrdup(fp->path), s->attach_pids.v[0], -1, s->icall_exits.n - 1, 1};
	if (!icall_link_make(s, &l)) {
		s->icall_exits.n--;
		free(l.path);
		return false;
	}
	CT_VEC_PUSH(s->icall_links, l);
	if (s->icall_of_n < p->sites.n) {
		s->icall_of = xrealloc(s->icall_of, p->sites.n * sizeof(*s->icall_of));
		memset(s->icall_of + s->icall_of_n, 0, (p->sites.n - s->icall_of_n) * sizeof(*s->icall_of));
		s->icall_of_n = p->sites.n;
	}
	s->icall_of[fp->local] = (uint32_t)s->icall_exits.n << 1;
	s->icall_of[r->call_site] = (uint32_t)s->icall_exits.n << 1 | 1;
	s->icall_found++;
	return true;
}

/* What a batch planned (B): into the file, probed, then told to the
 * probes.  False if a site could not be written or probed. */
static bool add_found(struct ct_session *s, struct found_batch *bp)
{
	struct found_batch b = *bp;
	bool ok = true;
	for (uint32_t k = 0; k <= s->nlibs && k < CT_MAX_BINS; k++)
		if (object_n(s, k).plan->sites.n > b.first[k] && !write_found_sites(s, k, b.first[k]))
			ok = false;
	/* one link per file and process (the program's exits of indirect
	 * calls: one each, watched) */
	bool *done = xcalloc(b.probes.n ? b.probes.n : 1, sizeof(*done));
	for (size_t i = 0; ok && i < b.probes.n; i++)
		done[i] = watch_found_exit(s, &b.probes.v[i], &b);
	for (size_t i = 0; ok && i < b.probes.n; i++) {
		if (done[i])
			continue;
		u64_vec xo = {0}, xc = {0};
		for (size_t j = i; j < b.probes.n; j++) {
			const struct found_probe *fp = &b.probes.v[j];
			if (done[j] || strcmp(fp->path, b.probes.v[i].path))
				continue;
			done[j] = true;
			struct object o = object_n(s, fp->bin);
			CT_VEC_PUSH(xo, o.plan->sites.v[fp->local].offset);
			CT_VEC_PUSH(xc, site_cookie(s, o.plan, fp->local, global_site(s, fp->bin, fp->local), o.func_base,
						    fp->bin));
		}
		for (size_t k = 0; ok && k < s->attach_pids.n; k++) {
			struct ct_attach a = {b.probes.v[i].path, s->attach_pids.v[k], NULL, NULL, 0, xo.v, xc.v, xo.n};
			int link = ct_probes_attach_link(s->probes, a.path, a.pid, xo.v, xc.v, xo.n);
			if (link >= 0) {
				struct ct_caller_link cl = {xstrdup(a.path), a.pid, link, {0}, {0}};
				VEC_APPEND(cl.offsets, xo.v, xo.n);
				VEC_APPEND(cl.cookies, xc.v, xc.n);
				CT_VEC_PUSH(s->caller_link_list, cl);
			} else if (ct_probes_attach(s->probes, &a)) { /* (perf events: an older kernel) */
				ct_debug("exits found while recording: %s", ct_error());
				probe_refused(s, a.pid, ct_error());
				ok = false;
			}
		}
		s->caller_links++;
		CT_VEC_FREE(xo);
		CT_VEC_FREE(xc);
	}
	free(done);
	/* only once their exits are in: a CALL event means an exit probe will
	 * see that call end, and so does a tail jump not flagged unwatched */
	for (size_t k = 0; ok && k < b.planned.n; k++) {
		const struct found_planned *fp = &b.planned.v[k];
		struct ct_planned_call val = {.site = global_site(s, fp->bin, fp->local), .key_delta = fp->key_delta,
					      .via = fp->via};
		ct_plan_call_caller(object_n(s, fp->bin).plan, fp->local, &val);
		if (val.caller_check)
			val.caller_check = global_site(s, fp->bin, val.caller_check - 1) + 1;
		ok = ct_probes_add_planned(s->probes, fp->key, &val) == 0;
	}
	for (size_t k = 0; ok && k < b.file_calls.n; k++) {
		const struct found_file_call *fc = &b.file_calls.v[k];
		struct ct_planned_call val = {.site = global_site(s, fc->bin, fc->local), .key_delta = -8};
		ok = ct_probes_add_file_call(s->probes, &fc->key, &val) == 0;
	}
	if (ok)
		s->callers_found += b.planned.n + b.file_calls.n - b.watches;
	CT_VEC_FREE(b.probes);
	CT_VEC_FREE(b.planned);
	CT_VEC_FREE(b.file_calls);
	return ok;
}

/* What a hit of each class costs, for weighing probes against each
 * other: the calibration's, or the kernel's ratio here (README: an
 * emulated hit ~1 us, a single-step 13-22). */
static void hit_prices(const struct ct_session *s, uint64_t *emulated, uint64_t *stepped)
{
	uint64_t pr[CT_HIT_CLASSES];
	*emulated = 1000;
	*stepped = 15000;
	if (!s->costs.ok)
		return;
	ct_costs_hit_prices(&s->costs, pr);
	if (pr[CT_HIT_EMULATED] && pr[CT_HIT_RET] > pr[CT_HIT_EMULATED]) {
		*emulated = pr[CT_HIT_EMULATED];
		*stepped = pr[CT_HIT_RET];
	}
}

/* Hits of a watched exit that closed no call, at least, before it may go */
#define ICALL_WASTE_MIN 16

/* Watched exit probe ID of an indirect call was hit again as often as
 * before (CT_PROC_ICALL_EXIT).  Every call made at its call instruction
 * hits it; those of untraced functions (sort.IsSorted's data.Less with a
 * type no -F names) close nothing.  Where those wasted hits cost more than
 * the RETs of the traced functions whose calls it closes would (each
 * call of them a single-step, from wherever it is made: counted from
 * their events so far), those RETs are probed and the probe goes: the
 * calls from there are then sent by their CHECKs as calls without an exit
 * probe (their planned entries taken out), which the RETs end.  A call
 * already made from there ends at its RET, or at the probe while it is
 * still in (the RET then finds its planned entry and lets it go). */
static void weigh_icall_exit(struct ct_session *s, uint32_t id)
{
	struct object o;
	uint32_t site = 0;
	if (s->end_ts || !object_of_site(s, id, &o, &site) || o.plan != &s->plan || site >= s->icall_of_n ||
	    !s->icall_of[site] || (s->icall_of[site] & 1))
		return;
	uint32_t mine = s->icall_of[site] | 1;
	struct ct_icall_exit *x = &s->icall_exits.v[(mine >> 1) - 1];
	struct ct_plan *p = o.plan;
	if (x->out || x->settled)
		return;
	/* (found while recording: another call found there later whose exit
	 * rides on it, ride_found_exit, would be left without one) */
	for (size_t i = p->built_sites; x->key && i < p->sites.n && !x->settled; i++)
		x->settled = p->sites.v[i].kind == CT_SITE_RETSITE && (p->sites.v[i].flags & CT_SITEF_COMPANION) &&
			     p->sites.v[i].addr == p->sites.v[site].addr;
	if (x->settled)
		return;
	uint64_t wasted = x->hits > x->calls ? x->hits - x->calls : 0, emulated, stepped, rets = 0;
	hit_prices(s, &emulated, &stepped);
	for (size_t c = 0; c < s->icall_of_n; c++)
		if (s->icall_of[c] == mine && !p->funcs.v[p->sites.v[c].func].rets_probed)
			rets += (p->sites.v[c].func < s->calls_of_n ? s->calls_of[p->sites.v[c].func] : 0) * stepped;
	if (wasted < ICALL_WASTE_MIN || wasted * emulated <= rets) {
		ct_debug("exit probe of the indirect call at 0x%llx: %llu hits, %llu calls: stays",
			 (unsigned long long)p->sites.v[site].addr, (unsigned long long)x->hits,
			 (unsigned long long)x->calls);
		return;
	}
	/* the RETs first: a call from there ends at them once its planned
	 * entry is gone */
	struct found_batch b = {0};
	for (uint32_t k = 0; k <= s->nlibs && k < CT_MAX_BINS; k++)
		b.first[k] = (uint32_t)object_n(s, k).plan->sites.n;
	uint32_t before = (uint32_t)p->sites.n;
	bool ok = s->found_n + 64 <= s->found_max;
	for (size_t c = 0; ok && c < s->icall_of_n; c++)
		if (s->icall_of[c] == mine) {
			uint32_t check = p->funcs.v[p->sites.v[c].func].check_site;
			ok = check < p->sites.n && ct_plan_rets_from_now(p, check);
		}
	probe_new_sites(s, &o, before, &b);
	ok = add_found(s, &b) && ok;
	x = &s->icall_exits.v[(mine >> 1) - 1]; /* (the vector may have moved) */
	if (!ok) {
		x->settled = true;
		ct_debug("exit probe of the indirect call at 0x%llx: stays (the RETs of the functions whose calls it closes "
			 "could not all be probed)",
			 (unsigned long long)p->sites.v[site].addr);
		return;
	}
	for (size_t k = 0; k <= p->planned.n; k++) {
		uint64_t key = k < p->planned.n ? p->planned.v[k].key : x->key;
		if (k < p->planned.n &&
		    (p->planned.v[k].val.site >= s->icall_of_n || s->icall_of[p->planned.v[k].val.site] != mine))
			continue;
		if (k < p->planned.n)
			key = CT_PLANNED_KEY(global_site(s, 0, (uint32_t)(key >> 32)), (uint32_t)key);
		else if (!key)
			break;
		/* (its CHECK reports the return address once: not planned again) */
		map_put(&s->callers_done, key, (void *)(uintptr_t)CALLER_REFUSED);
		if (ct_probes_drop_planned(s->probes, key))
			ct_debug("%s", ct_error());
	}
	x->out = true;
	p->sites.v[site].gone = true;
	s->icall_out++;
	bool gone = icall_link_make(s, &s->icall_links.v[x->link]);
	ct_debug("exit probe of the indirect call at 0x%llx: %llu hits, %llu calls: %s", (unsigned long long)p->sites.v[site].addr,
		 (unsigned long long)x->hits, (unsigned long long)x->calls,
		 gone ? "taken out, the RETs of the functions whose calls it closed probed" : "its link could not be made again");
}

/* A process the kernel side held stopped (--follow, an exec) goes on. */
static void continue_held(struct ct_session *s, uint32_t pid)
{
	kill((pid_t)pid, SIGCONT);
	ct_probes_released(s->probes, pid);
}

/* What on_event queued, in order.  A process the kernel held for us is let
 * go even when nothing is done for it any more (the trace has ended). */
static void run_deferred(struct ct_session *s)
{
	s->callers_since = 0;
	bool callers = false;
	for (size_t i = 0; i < s->deferred.n; i++) {
		const struct ct_deferred *d = &s->deferred.v[i];
		switch (d->kind) {
		case CT_DEFER_EXEC:
			if (!s->end_ts)
				follow_exec(s, d->pid);
			break;
		case CT_DEFER_CALLER:
			callers = true;
			break;
		case CT_DEFER_ICALL:
			weigh_icall_exit(s, (uint32_t)d->caller);
			break;
		}
	}
	if (callers)
		add_callers(s);
	for (size_t i = 0; i < s->deferred.n; i++)
		if (s->deferred.v[i].held)
			continue_held(s, s->deferred.v[i].pid);
	s->deferred.n = 0;
}

/* One drain of the event source, then what its events queued. */
static int poll_events(struct ct_session *s, int timeout_ms)
{
	int n = s->wasm ? ct_wasm_run_poll(s->wasm, timeout_ms, on_event, s)
			: ct_probes_poll(s->probes, timeout_ms, on_event, s);
	run_deferred(s);
	return n;
}

static uint64_t counter(const struct ct_session *s, enum ct_counter which)
{
	return s->wasm ? ct_wasm_run_counter(s->wasm, which) : ct_probes_counter(s->probes, which);
}

/* Stops the events at their source. */
static void detach(struct ct_session *s)
{
	if (s->wasm)
		ct_wasm_run_stop(s->wasm);
	else
		ct_probes_detach(s->probes);
}

/* Losses go into the stream before the first event that began after them
 * (on_event); AT_END, the drops no later event followed.  (A wasm runner's blocking pipe loses nothing.) */
static void note_losses(struct ct_session *s, bool at_end)
{
	if (s->wasm)
		return;
	uint64_t lost = ct_probes_lost(s->probes);
	s->lost_seen = lost > s->lost_base ? lost - s->lost_base : 0;
	if (at_end && s->lost_seen > s->lost_marked) {
		ct_writer_lost(s->w, now_mono_ns(), s->lost_seen - s->lost_marked);
		s->lost_marked = s->lost_seen;
	}
}

int ct_session_pump(struct ct_session *s, int timeout_ms)
{
	static uint64_t last_flush;
	/* The ring buffer wakes calltrace when it fills, not per event: the
	 * poll waits its whole timeout.  While interim RETs are in, no longer
	 * than settle_interim's tick: they go at the first look after their
	 * calls qualify them, and looking every 50 ms kept them in the first
	 * 100-150 ms (bench/http, 200 requests in ~270 ms: 5,900 of its
	 * 9,700 single-steps were interim RETs' that had qualified). */
	if (!s->wasm && (s->interim_links_in || !s->interim_tick) && s->interim_links.n &&
	    timeout_ms > (int)(INTERIM_TICK_NS / 1000000))
		timeout_ms = (int)(INTERIM_TICK_NS / 1000000);
	if (poll_events(s, timeout_ms) < 0)
		return -1;
	settle_interim(s);
	note_losses(s, false);
	uint64_t now = now_mono_ns();
	if (now - last_flush >= (s->o.flush_ns ? s->o.flush_ns : FLUSH_EVERY_NS)) {
		ct_writer_flush(s->w);
		last_flush = now;
	}
	if (s->o.max_size && ct_writer_bytes(s->w) >= s->o.max_size && !s->stop) {
		/* Detach now: what follows must not cost transport either. */
		s->stop = true;
		s->stop_reason = "--max-size reached";
		s->end_ts = now_mono_ns();
		detach(s);
	}
	if (s->o.max_events && !s->stop && s->probes &&
	    ct_probes_counter(s->probes, CT_CNT_EMITTED) >= s->o.max_events) {
		s->stop = true;
		s->stop_reason = "--max-events reached";
		s->end_ts = now_mono_ns();
		ct_probes_detach(s->probes);
	}
	return 0;
}

void ct_session_progress(struct ct_session *s, bool final)
{
	static uint64_t last;
	if (!isatty(2) || !s->w)
		return;
	uint64_t now = now_mono_ns();
	if (!final && now - last < 250000000ULL)
		return;
	last = now;
	double el = (now - s->start_ns) / 1e9;
	uint64_t ev = ct_writer_events(s->w);
	fprintf(stderr, "\r\033[Kcalltrace: %.1fs  %llu events  %.0f/s  lost %llu  %.1f MiB%s", el,
		(unsigned long long)ev, el > 0 ? ev / el : 0.0, (unsigned long long)s->lost_seen,
		ct_writer_bytes(s->w) / 1048576.0, final ? "\n" : "");
}

/* The program's probe hits, those that sent no event too, whenever they
 * can be read (before the end's calibration adds its own): every recording
 * with probes, stopped by a limit, a signal or shown while recording too. */
static void note_probe_hits(struct ct_session *s)
{
	uint64_t now;
	if (s->probes && s->hits_known && ct_probes_hits_total(s->probes, &now) == 0)
		ct_writer_stat(s->w, "probe_hits", "%llu (in the program, those that sent no event too)",
			       (unsigned long long)(now - s->hits_at_start));
}

/* What a hit cost where the program's hits ran (calibrate.c), before the
 * probes go (not when a limit took them already); what the program sent
 * before the end is read first. */
static void calibrate_at_end(struct ct_session *s)
{
	if (!s->calib || s->o.shown_while_recording || s->stop)
		return;
	for (int i = 0; i < 64 && poll_events(s, 0) > 0; i++)
		;
	for (size_t i = 0; i < s->insitu.n; i++) {
		struct ct_insitu_calls *f = &s->insitu.f[i];
		struct object eo, xo;
		uint32_t e = 0, x = 0;
		object_of_site(s, f->site, &eo, &e);
		object_of_site(s, f->exit_site, &xo, &x);
		f->entry_class = ct_hit_class_of(eo.plan->sites.v[e].kind, ct_plan_site_flags(eo.plan, e));
		f->exit_class = ct_hit_class_of(xo.plan->sites.v[x].kind, ct_plan_site_flags(xo.plan, x));
	}
	struct ct_costs c;
	uint64_t lost = ct_probes_lost(s->probes);
	int rc = ct_calib_again(s->calib, on_event, s, &s->insitu, &c);
	s->lost_base += ct_probes_lost(s->probes) - lost; /* (its own, if any) */
	if (rc) {
		ct_debug("overhead correction from the start-up measurement: %s", ct_error());
		return;
	}
	char calib[CT_COSTS_TEXT_MAX];
	ct_costs_format(&c, calib, sizeof(calib));
	ct_writer_stat(s->w, "calib", "%s", calib);
}

int ct_session_finish(struct ct_session *s, const char *exit_desc)
{
	if (!s->w)
		return 0;
	uint64_t t0 = now_mono_ns();
	/* The links close one after the other; events after this moment are
	 * dropped so the trace ends at one instant, with the calls then open
	 * unfinished, instead of half-cut trees. */
	if (s->wasm && !s->stop) {
		/* What the runner wrote before the end is in the pipe: read it
		 * to its end (a program still running after --duration keeps
		 * writing: stop once it is quiet or after a second). */
		uint64_t until = t0 + 1000000000ULL;
		while (!ct_wasm_run_eof(s->wasm) && now_mono_ns() < until)
			if (ct_wasm_run_poll(s->wasm, 100, on_event, s) <= 0 && !ct_wasm_run_eof(s->wasm) &&
			    s->o.duration_ns)
				break;
	}
	if (!s->end_ts)
		s->end_ts = t0;
	note_probe_hits(s);
	calibrate_at_end(s);
	t0 = now_mono_ns();
	detach(s);
	s->detach_ns = now_mono_ns() - t0;
	ct_debug("detached in %.1f ms", s->detach_ns / 1e6);
	/* Events already in the ring buffer still count. */
	while (s->probes && poll_events(s, 0) > 0)
		;
	note_losses(s, true);
	/* the threads still off CPU (a -p process's blocked ones, a program
	 * sleeping at --duration's end): their records would have come when
	 * they ran again, after the end */
	if (s->probes && !s->o.no_sched && ct_probes_still_off(s->probes, still_off, s) < 0)
		ct_debug("threads still off CPU at the end not known: %s", ct_error());
	uint64_t end = s->end_ts ? s->end_ts : now_mono_ns();
	ct_writer_stat(s->w, "clock.end_ns", "%llu", (unsigned long long)end);
	ct_writer_stat(s->w, "exit", "%s", exit_desc ? exit_desc : "");
	ct_writer_stat(s->w, "events", "%llu", (unsigned long long)ct_writer_events(s->w));
	ct_writer_stat(s->w, "lost", "%llu", (unsigned long long)s->lost_seen);
	if (s->lost_seen) /* (replay says it too, but only once it is run) */
		ct_warn("%llu events were lost while recording (the ring buffer was full); the calls around them are "
			"marked lost: record with a larger --buffer-size (now %lluK), fewer functions (-F, -N) or "
			"--sample",
			(unsigned long long)s->lost_seen, (unsigned long long)(s->o.ringbuf_bytes >> 10));
	if (s->before_exec)
		ct_writer_stat(s->w, "launch.before_exec", "%llu (events of calltrace's launcher before the program's exec, left out)",
			       (unsigned long long)s->before_exec);
	if (!s->stop_reason && s->o.max_events && counter(s, CT_CNT_EMITTED) >= s->o.max_events)
		s->stop_reason = "--max-events reached";
	if (!s->stop_reason && s->cut_size)
		s->stop_reason = "--max-size reached";
	uint64_t cut = counter(s, CT_CNT_CUT) + s->cut_size;
	ct_writer_stat(s->w, "cut", "%llu", (unsigned long long)cut);
	s->never_ran = !s->calls_written && !cut && !s->lost_seen;
	if (s->plan.in_caller) {
		ct_writer_stat(s->w, "unplanned", "%llu", (unsigned long long)counter(s, CT_CNT_UNPLANNED));
		ct_writer_stat(s->w, "indirect", "%llu", (unsigned long long)counter(s, CT_CNT_INDIRECT));
	}
	if (counter(s, CT_CNT_JCC_SILENT))
		ct_writer_stat(s->w, "cond_tails", "%llu (hits of conditional tail jumps that went on in their function, "
			       "no event: priced with their thread's next event, as \"silent\" says)",
			       (unsigned long long)counter(s, CT_CNT_JCC_SILENT));
	if (ct_writer_silent(s->w))
		ct_writer_stat(s->w, "silent", "%.1f (probe hits that sent no event, as emulated hits' worth: "
			       "replay takes their cost out with their thread's next event)",
			       (double)ct_writer_silent(s->w) / CT_SILENT_UNIT);
	if (ct_writer_extra_ns(s->w) && ct_writer_events(s->w))
		ct_writer_stat(s->w, "bpf_extra", "%+.3f ms (%+.0f ns an event: the BPF program's time before its clock "
			       "read beyond the calibration's hits of each class, which replay takes out too)",
			       ct_writer_extra_ns(s->w) / 1e6,
			       (double)ct_writer_extra_ns(s->w) / (double)ct_writer_events(s->w));
	if (s->interim_links.n)
		ct_writer_stat(s->w, "interim", "%llu (calls whose end the interim RETs saw; %llu hits of theirs saw none; %zu functions' taken out, %zu links made again or closed, %zu probes placed or taken out)",
			       (unsigned long long)counter(s, CT_CNT_INTERIM_ENDS),
			       (unsigned long long)counter(s, CT_CNT_INTERIM_PASSES), s->interim_settled, s->interim_remade,
			       s->interim_changes);
	if (s->icall_exits.n)
		ct_writer_stat(s->w, "icall_exits", "%zu (exit probes of indirect calls that may go, %zu of them found while recording; %zu taken out: their hits that closed no call cost more than the RETs of the functions whose calls they closed)",
			       s->icall_exits.n, s->icall_found, s->icall_out);
	s->forks_untraced = s->probes ? ct_probes_forks_untraced(s->probes) : 0;
	uint64_t unfollowed = s->probes ? ct_probes_forks_unfollowed(s->probes) : 0;
	if (unfollowed) {
		ct_writer_stat(s->w, "forks_unfollowed", "%llu (processes forked while 8192 were traced: not traced)",
			       (unsigned long long)unfollowed);
		ct_warn("--follow: %llu processes were forked while 8192 traced processes ran: they are not traced "
			"(the most traced at once), nor their calls", (unsigned long long)unfollowed);
	}
	if (s->forks_untraced)
		ct_writer_stat(s->w, "forks", "%llu (processes the traced ones forked: not traced without --follow)",
			       (unsigned long long)s->forks_untraced);
	if (s->exec_left_dropped)
		ct_writer_stat(s->w, "exec_left", "%llu (events of processes after they exec'd another program, not "
			       "written: a library's probes fire in the new program too)",
			       (unsigned long long)s->exec_left_dropped);
	if (s->plan.in_caller || s->callers_found || s->callers_refused) {
		char merged[64] = "";
		if (s->caller_links_merged)
			snprintf(merged, sizeof(merged), "; %zu of their links made one with others", s->caller_links_merged);
		ct_writer_stat(s->w, "callers_found", "%llu (exits added while recording; %llu refused%s)",
			       (unsigned long long)s->callers_found, (unsigned long long)s->callers_refused, merged);
	}
	if (s->probes_refused)
		ct_writer_stat(s->w, "probes_refused", "%zu (probe links made while recording that failed; the first: %s)",
			       s->probes_refused, s->probes_refused_why);
	if (s->offcpu) {
		char at_end[96] = "";
		if (s->offcpu_at_end)
			snprintf(at_end, sizeof(at_end), "; %llu of them until the end, the thread still off CPU then",
				 (unsigned long long)s->offcpu_at_end);
		ct_writer_stat(s->w, "off_cpu", "%llu (times a traced thread was off CPU while it ran a goroutine or its own calls, %.3f ms in all, kept in the durations%s)",
			       (unsigned long long)s->offcpu, s->offcpu_ns / 1e6, at_end);
	}
	if (counter(s, CT_CNT_OFFCPU_DROPPED))
		ct_writer_stat(s->w, "off_cpu_dropped", "%llu (times off CPU not recorded: the ring buffer was over half full; "
			       "the calls open then show less time off CPU than they had)",
			       (unsigned long long)counter(s, CT_CNT_OFFCPU_DROPPED));
	if (s->stalls)
		ct_writer_stat(s->w, "stalls", "%llu (waits of the program's threads for calltrace's probe changes, %.3f ms in all, taken out)",
			       (unsigned long long)s->stalls, s->stall_ns / 1e6);
	if (s->warm_ups)
		ct_writer_stat(s->w, "warm_ups", "%llu (processes whose first probe hit and first single-step were paid before main)",
			       (unsigned long long)counter(s, CT_CNT_WARM_UPS));
	if (counter(s, CT_CNT_LIMITS_FULL)) {
		ct_writer_stat(s->w, "limits_full", "%llu (goroutines/threads that entered traced calls while about 8192 "
			       "others were inside some: the record-time limits follow that many at once)",
			       (unsigned long long)counter(s, CT_CNT_LIMITS_FULL));
		ct_warn("more than ~7000 goroutines/threads were inside traced calls at once (%llu began so): the "
			"record-time limits follow 8192, and those pushed out lose what was held back for them "
			"(--min-duration: their calls are missing) or their depth (--max-depth, --root: cut otherwise)",
			(unsigned long long)counter(s, CT_CNT_LIMITS_FULL));
	}
	if (counter(s, CT_CNT_OVERFLOW))
		ct_writer_stat(s->w, "cut.too_deep", "%llu", (unsigned long long)counter(s, CT_CNT_OVERFLOW));
	if (s->stop_reason)
		ct_writer_stat(s->w, "stopped", "%s", s->stop_reason);
	ct_writer_stat(s->w, "attach_ms", "%.3f", s->attach_ns / 1e6);
	ct_writer_stat(s->w, "detach_ms", "%.3f", s->detach_ns / 1e6);
	if (s->probes && *ct_probes_stack_depth(s->probes))
		ct_writer_stat(s->w, "probe.stack_depth", "%s", ct_probes_stack_depth(s->probes));
	ct_session_progress(s, true);
	int rc = ct_writer_close(s->w);
	s->w = NULL;
	ct_debug("trace written in %.1f ms after detach", (now_mono_ns() - t0) / 1e6);
	return rc; /* its one line is recorded, or was printed when it happened */
}

static void go_names_free(struct ct_go_names *g)
{
	map_free(&g->rtypes_seen);
	CT_VEC_FREE(g->iface_in);
	map_free(&g->gopcs_seen);
}

void ct_session_free(struct ct_session *s)
{
	for (size_t i = 0; s->probes && i < s->deferred.n; i++) /* never leave a process the kernel held stopped */
		if (s->deferred.v[i].held)
			continue_held(s, s->deferred.v[i].pid);
	if (s->probes)
		ct_probes_free(s->probes);
	ct_calib_free(s->calib);
	free(s->left_by_exec);
	ct_insitu_free(&s->insitu);
	ct_wasm_run_free(s->wasm);
	if (s->w)
		ct_writer_close(s->w);
	if (s->plan_built)
		ct_plan_free(&s->plan);
	if (s->target_open)
		ct_target_close(&s->target);
	for (size_t k = 0; k < s->nlibs; k++) {
		struct ct_libbin *lb = &s->libs[k];
		if (lb->plan.t)
			ct_plan_free(&lb->plan);
		if (lb->target.elf.path)
			ct_target_close(&lb->target);
		free(lb->name);
		free(lb->path);
		CT_VEC_FREE(lb->trace);
		CT_VEC_FREE(lb->exclude);
		CT_VEC_FREE(lb->arg_globs);
		CT_VEC_FREE(lb->ret_globs);
		ct_type_ids_free(&lb->type_ids);
		go_names_free(&lb->go);
		if (lb->exe_fd > 0)
			close(lb->exe_fd);
		free(lb->attach_path);
	}
	ct_type_ids_free(&s->type_ids);
	CT_VEC_FREE(s->deferred);
	CT_VEC_FREE(s->attach_pids);
	free(s->names_seen);
	free(s->attach_path);
	free(s->probes_refused_why);
	for (size_t i = 0; i < s->caller_link_list.n; i++)
		caller_link_free(&s->caller_link_list.v[i]);
	CT_VEC_FREE(s->caller_link_list);
	for (size_t i = 0; i < s->interim_links.n; i++)
		free(s->interim_links.v[i].path);
	CT_VEC_FREE(s->interim_links);
	for (size_t i = 0; i < s->icall_links.n; i++)
		free(s->icall_links.v[i].path);
	CT_VEC_FREE(s->icall_links);
	CT_VEC_FREE(s->icall_exits);
	free(s->icall_of);
	free(s->calls_of);
	map_free(&s->callers_done);
	map_free(&s->exec_left);
	for (size_t k = 0; k < CT_MAX_BINS; k++)
		map_free(&s->probes_at[k].there);
	map_free(&s->found_sites);
	map_free(&s->found_ids);
	map_free(&s->found_rets);
	for (size_t i = 0; i < s->modules.n; i++) {
		if (s->modules.v[i]->bin < 0) /* (a traced object's are its plan's) */
			ct_pads_free(s->modules.v[i]->pads);
		if (!s->modules.v[i]->borrowed)
			ct_elf_close(&s->modules.v[i]->elf);
		free(s->modules.v[i]->path);
		free(s->modules.v[i]->attach_path);
		free(s->modules.v[i]);
	}
	CT_VEC_FREE(s->modules);
	CT_VEC_FREE(s->early_exits);
	CT_VEC_FREE(s->early_rets);
	free(s->libs);
	free((void *)s->main_sel.trace);
	free((void *)s->main_sel.exclude);
	free(s->binary);
	free(s->compact);
	go_names_free(&s->go);
	memset(s, 0, sizeof(*s));
}
