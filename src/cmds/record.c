/* calltrace record: start a program with every probe in place before its
 * first instruction (or attach to a running one with -p) and write
 * calltrace.data until it exits (or Ctrl-C / --duration). */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmds/cmds.h"
#include "export/otlp_export.h"
#include "export/otlp_http.h"
#include "record/session.h"
#include "render/filter.h"
#include "render/render.h"
#include "util/util.h"
#include "wasm/wasm.h"

static volatile sig_atomic_t stop_requested, forward_sig, stop_count;
/* Stop signals since tracing ended (while calltrace detaches, writes the
 * file and waits for an OTLP collector): whoever sends one wants out. */
static volatile sig_atomic_t tracing_over, late_signals;
/* The launched program died by this signal: calltrace dies by it too, once
 * the file is closed, so that shells and supervisors see what they would
 * have seen without calltrace. */
static int program_term_sig;
/* After a second stop signal the program gets this long to exit (timeout(1)
 * sends SIGTERM to calltrace and to its process group: both arrive); after
 * one while only its descendants run (--follow), they do. */
#define STOP_GRACE_NS 500000000ULL

/* `calltrace live`: the record file is read back as it grows and each
 * event goes through the same reconstruction and tree as replay. */
struct live_view {
	bool on;
	bool started;
	struct ct_trace t;
	struct ct_event_iter it;
	struct ct_render_opts ro;
	struct ct_tree_live *tree;
	uint64_t last_ts;
	int fd; /* reads the file being written (never reopened by name) */
	bool closed; /* its output failed (`| head`, a full disk): tracing stops */
};
static struct live_view live = {.fd = -1};

/* --otlp-endpoint: a thread reads the record as it is written and sends
 * spans (export/otlp_export.h); started once the file's tables are
 * written, finished once the file is closed. */
static struct ct_otlp_export_opts otlp_opts;
static struct ct_otlp_export *otlp;

static void otlp_step(const struct ct_session *s)
{
	if (!otlp_opts.url)
		return;
	if (!otlp && s->w) {
		int fd = ct_writer_reader_fd(s->w);
		if (fd < 0 || !(otlp = ct_otlp_export_start(fd, s->o.output, &otlp_opts))) {
			ct_warn("otlp: not sending spans: %s", ct_error());
			otlp_opts.url = NULL;
		}
	} else if (otlp && !s->w) {
		ct_otlp_export_finish(otlp, s->end_ts, &late_signals);
		otlp = NULL;
		otlp_opts.url = NULL;
	}
}

static void live_step(struct ct_session *s)
{
	otlp_step(s);
	if (!live.on)
		return;
	if (live.fd < 0 && s->w)
		live.fd = ct_writer_reader_fd(s->w);
	if (!live.started) {
		int fd = live.fd >= 0 ? dup(live.fd) : -1;
		if (fd < 0 || ct_trace_open_fd(&live.t, fd, s->o.output ? s->o.output : "the live record"))
			return;
		ct_iter_init(&live.it, &live.t);
		live.it.follow = true;
		live.ro = (struct ct_render_opts){stdout, isatty(1), true, NULL};
		live.tree = ct_tree_live_new(&live.t, &live.ro);
		live.started = true;
	}
	struct ct_rec_event ev;
	while (ct_iter_next(&live.it, &ev)) {
		ct_tree_live_event(live.tree, &ev);
		if (ev.ts > live.last_ts)
			live.last_ts = ev.ts;
	}
	if ((fflush(stdout) || ferror(stdout)) && !live.closed) {
		/* nobody reads on (SIGPIPE is ignored): stop as --duration
		 * would, leaving the program to run on */
		static char why[96];
		snprintf(why, sizeof(why), "cannot write the live output (%s)", strerror(errno ? errno : EIO));
		live.closed = true;
		if (!s->stop_reason)
			s->stop_reason = why;
	}
}

static void live_end(void)
{
	if (live.started) {
		ct_tree_live_finish(live.tree, live.last_ts);
		ct_iter_free(&live.it);
		ct_trace_close(&live.t);
		live.started = false;
	}
	if (live.fd >= 0)
		close(live.fd);
	live.fd = -1;
}

/* A terminal's Ctrl-C reaches the whole foreground process group, child
 * included, so only signals sent by a process (kill, timeout, systemd) are
 * forwarded; the child must not get SIGINT twice. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	stop_requested = sig;
	stop_count++;
	if (tracing_over)
		late_signals++;
	if (si->si_code <= 0) /* SI_USER, SI_QUEUE, SI_TKILL: sent by someone */
		forward_sig = sig;
}

/* The signals calltrace handles, and which of them it was started with
 * ignored (nohup's SIGHUP, SIGINT of a background job in a script): those
 * stay ignored, by calltrace and by the program, as they would untraced. */
static const int handled_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
static bool inherited_ignored[sizeof(handled_sigs) / sizeof(handled_sigs[0])];

static void install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(handled_sigs) / sizeof(handled_sigs[0]); i++) {
		struct sigaction old;
		inherited_ignored[i] = sigaction(handled_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN;
		if (handled_sigs[i] == SIGPIPE)
			signal(SIGPIPE, SIG_IGN); /* a closed output is an error to report */
		else if (!inherited_ignored[i])
			sigaction(handled_sigs[i], &sa, NULL);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: calltrace record [options] [--] PROGRAM [ARGS...]\n"
		"   or: calltrace record [options] -p PID\n"
		"   or: calltrace live [options] [--] PROGRAM [ARGS...]   (same options)\n"
		"\n"
		"live prints the call tree while the program runs, all goroutines/threads in\n"
		"time order: a call that returns before its goroutine does anything else prints\n"
		"as one line when it returns; otherwise its '{' prints at its next event.  Lines\n"
		"come out about every 50 ms.  live keeps no record file unless given -o.\n"
		"\n"
		"The exit status is the program's; a program killed by a signal kills calltrace\n"
		"by the same signal once the file is written.  Signals sent to calltrace are\n"
		"passed on to the program.\n"
		"\n"
		"  -o, --output FILE      record file (default: calltrace.data; created mode 0600, an\n"
		"                         existing one kept as FILE.old; a symlink there is refused)\n"
		"  -F, --trace GLOB       trace functions matching GLOB (repeatable); default: the\n"
		"                         main program (Go: package main and the main module;\n"
		"                         Rust: the program's crates; C++: not std::);\n"
		"                         C++/Rust names match mangled or demangled ('app::*'),\n"
		"                         a GCC clone its name before the suffix (look for\n"
		"                         look.constprop.0)\n"
		"                         'LIB:GLOB' traces a shared library's functions, e.g.\n"
		"                         -F 'libc.so.6:malloc' (only for the traced process)\n"
		"  -N, --exclude GLOB     do not trace functions matching GLOB (repeatable)\n"
		"  -A, --args GLOB[@a,b]  capture the arguments of matching functions (only a, b)\n"
		"  -R, --retval GLOB      capture the results of matching functions\n"
		"                         (-A/-R 'LIB:GLOB': a library's or exec'd binary's only)\n"
		"                         (default without -A/-R: arguments and results of all)\n"
		"      --no-args          capture no arguments or results\n"
		"      --max-string N     bytes of each string captured (default 64, at most 1024)\n"
		"      --max-items N      elements of each slice/array captured (default 8)\n"
		"      --follow           also trace the processes it forks, and binaries they exec\n"
		"                         (same -F selection; LIB:GLOB probes stay on the first\n"
		"                         process), and record until every traced process has exited,\n"
		"                         not only the program (a daemon it starts too); once the\n"
		"                         program has exited, Ctrl-C stops tracing the others\n"
		"      --no-sched         do not record when traced threads are off CPU (replay\n"
		"                         says how much of a call's time its thread was preempted\n"
		"                         or blocked in the kernel; recorded by default)\n"
		"      --parks            Go: also trace runtime.gopark, where a goroutine waits\n"
		"                         (a channel, select, sleep, lock, network): each wait is\n"
		"                         a call runtime.gopark(reason=chan receive) under the\n"
		"                         traced call that waited, as long as it waited\n"
		"      --demangle MODE    live: how C++/Rust names are shown (simple, full, no)\n"
		"      --raw              live: durations as measured (the tracer's own time per\n"
		"                         probe hit is not taken out)\n"
		"      --sched            live: each time a thread was off CPU inside traced\n"
		"                         calls, as a call of its own (linux:schedule) under the\n"
		"                         call it interrupted\n"
		"      --exit MODE        where calls are observed: auto (default) probes the\n"
		"                         function's cheap entry (else the call instruction) and\n"
		"                         the first cheap instruction after the call for\n"
		"                         functions only ever called directly (and for Go\n"
		"                         functions called through their address: each new call\n"
		"                         site's exit probe is added when it is first seen, and\n"
		"                         their RETs see the calls end until then), RET probes\n"
		"                         for the rest; ret probes every function's entry and RETs\n"
		"      --no-interim       auto: no RET probes until a function's call sites are\n"
		"                         found (each one's first calls then end unobserved; the\n"
		"                         single-steps those RETs cost meanwhile are saved)\n"
		"  -p, --pid PID          attach to a running process instead of starting one\n"
		"                         (repeatable, for processes of the same binary; a thread\n"
		"                         id stands for its process)\n"
		"      --duration TIME    stop after TIME (e.g. 10s, 500ms)\n"
		"\n"
		"limits and sampling (decided in the kernel: what is cut costs no transport):\n"
		"      --max-depth N      record only N levels of traced calls\n"
		"      --min-duration T   record only calls that lasted at least T (e.g. 10us);\n"
		"                         their callers still appear; their entry arguments are not kept\n"
		"      --root GLOB        record only the subtrees under matching functions\n"
		"      --sample N         keep 1 in N root calls (whole subtrees)\n"
		"      --sample-goroutines N  keep 1 in N goroutines (threads for C)\n"
		"      --max-events N     stop recording after N events\n"
		"      --max-size SIZE    stop recording when the file reaches SIZE (e.g. 256M)\n"
		"      (limits other than --max-events/--max-size track 64 levels of traced calls\n"
		"      per goroutine; deeper calls are counted as cut)\n"
		"\n"
		"      --buffer-size SIZE  ring buffer size (default 16M)\n"
		"  -v, --verbose          print the phases and their timings\n"
		"\n"
		"OpenTelemetry (spans as dump --otlp makes them, sent while recording):\n"
		"      --otlp-endpoint URL  send spans to an OTLP/HTTP collector, e.g.\n"
		"                         http://localhost:4318 (plain HTTP, no TLS; path /v1/traces\n"
		"                         unless given), in batches, retried with backoff; never\n"
		"                         holds up the program or the record file: when the\n"
		"                         collector is down or slow, spans are dropped and counted\n"
		"      --otlp-protocol P  http/protobuf (default) or http/json\n"
		"      --service NAME     service.name of the spans (default: the program's name)\n"
		"\n"
		"PROGRAM may be a WebAssembly module (WASI, or Go GOOS=js GOARCH=wasm): it runs\n"
		"on node, instrumented; no root needed (README: WebAssembly modules).\n");
}

/* PATH lookup like execvp, so that the probes go on the file exec runs. */
static char *resolve_program(const char *prog)
{
	if (!*prog) /* (PATH's directories would match it) */
		return NULL;
	if (strchr(prog, '/'))
		return realpath(prog, NULL);
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	char *copy = xstrdup(path), *save = NULL;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char *cand = xasprintf("%s/%s", *dir ? dir : ".", prog);
		if (access(cand, X_OK) == 0) {
			char *r = realpath(cand, NULL);
			free(cand);
			free(copy);
			return r;
		}
		free(cand);
	}
	free(copy);
	return NULL;
}

static char *join_cmdline(int argc, char **argv)
{
	struct ct_buf b = {0};
	for (int i = 0; i < argc; i++) {
		if (i)
			buf_put(&b, " ", 1);
		buf_put(&b, argv[i], strlen(argv[i]));
	}
	buf_put(&b, "", 1);
	return (char *)b.p;
}

static char *describe_status(int status)
{
	if (WIFEXITED(status))
		return xasprintf("exited %d", WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return xasprintf("killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	return xstrdup("unknown");
}

/* Child side of the launch: wait until the parent has attached, then exec.
 * An exec failure is reported back through ERRFD (close-on-exec). */
static void child_exec(int gofd, int errfd, char **argv, const char *path)
{
	char c;
	for (size_t i = 0; i < sizeof(handled_sigs) / sizeof(handled_sigs[0]); i++)
		signal(handled_sigs[i], inherited_ignored[i] ? SIG_IGN : SIG_DFL);
	if (read(gofd, &c, 1) != 1)
		_exit(127); /* the tracer gave up */
	execv(path, argv);
	int e = errno;
	if (write(errfd, &e, sizeof(e)) < 0) {
	}
	_exit(127);
}

/* Process PID's state letter in /proc/PID/stat (R, S, T, Z...), 0 when it
 * is gone; *KTHREAD: it is a kernel thread. */
static char process_state(int pid, bool *kthread)
{
	char path[64], line[512], st = 0;
	unsigned flags = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (f && fgets(line, sizeof(line), f)) {
		/* pid (comm) state ppid pgrp session tty tpgid flags: comm may
		 * hold anything, the fields start after its last ')' */
		const char *rp = strrchr(line, ')');
		if (!rp || sscanf(rp + 1, " %c %*d %*d %*d %*d %*d %u", &st, &flags) != 2)
			st = 0;
	}
	if (f)
		fclose(f);
	*kthread = flags & 0x00200000; /* PF_KTHREAD */
	return st;
}

/* A limit of the session's own ended the recording (--duration, or one
 * the session enforces: --max-events, --max-size). */
static bool session_done(const struct ct_session *s)
{
	return (s->o.duration_ns && now_mono_ns() - s->start_ns >= s->o.duration_ns) || s->stop || live.closed;
}

/* Closes the file with its exit line, and the live view with it. */
static int session_end(struct ct_session *s, const char *exit_desc)
{
	tracing_over = 1;
	int rc = ct_session_finish(s, exit_desc);
	live_step(s);
	live_end();
	char *missing = rc ? NULL : ct_session_names_missing(s);
	if (missing) {
		/* (the file is kept: what the programs did is in it) */
		ct_fail("%s", missing);
		free(missing);
		return -1;
	}
	if (!rc && s->never_ran && s->binary && !(s->launch_pid && stop_requested) && !live.closed) {
		/* what replay, report and dump of the file say, at once (not
		 * when a signal stopped the program calltrace started: that is
		 * why; under -p it is how a recording ends) */
		bool kthread;
		int pid = !s->launch_pid && s->attach_pids.n == 1 ? s->attach_pids.v[0] : 0;
		char st = pid > 0 ? process_state(pid, &kthread) : 0;
		if (st == 'T' || st == 't') {
			/* -p of a process stopped all along: not a selection that missed */
			ct_say("no calls recorded: process %d was stopped (%s) while calltrace recorded; "
				"record while it runs (%s)", pid, st == 'T' ? "SIGSTOP, Ctrl-Z" : "a debugger holds it",
				st == 'T' ? "kill -CONT it" : "continue it in its debugger");
			return rc;
		}
		char nfuncs[16];
		snprintf(nfuncs, sizeof(nfuncs), "%u", s->total_funcs);
		if (s->o.duration_ns && now_mono_ns() - s->start_ns >= s->o.duration_ns) {
			/* (they may well run later: the time was too short) */
			char d[32];
			ct_fmt_duration(d, sizeof(d), s->o.duration_ns);
			char *two = strstr(d + strspn(d, " "), "  "); /* ("1.000  s": the column's unit) */
			if (two)
				memmove(two, two + 1, strlen(two));
			ct_say("no calls recorded in --duration %s: none of the %s function%s traced ran "
				"in that time; record longer", d + strspn(d, " "), nfuncs, s->total_funcs == 1 ? "" : "s");
			return rc;
		}
		if (ct_note_forked(s->binary, nfuncs, s->forks_untraced))
			return rc;
		const char *src = s->target.funcs_source;
		ct_note_never_ran(s->binary, nfuncs, src && !strcmp(src, "dynsym") && !ct_session_traced_libs(s));
	}
	return rc;
}

/* A stop signal (Ctrl-C, kill, timeout) came before the program ran (while
 * calltrace planned or attached): it is not started, and calltrace dies by
 * that signal once the file is gone, as the program would have (the
 * program is held here, so it never got a terminal's Ctrl-C).  It ran
 * anyway: the signal was only passed on once it had started, and a
 * terminal's Ctrl-C (not passed on) was ignored. */
static int stopped_before_start(bool launch)
{
	program_term_sig = stop_requested;
	return ct_fail("interrupted (SIG%s) before %s, and nothing was recorded", sigabbrev_np(stop_requested),
		       launch ? "the program started: it was not run" : "the probes went in");
}

/* Forks the program, attaches the probes for its pid, then lets it exec,
 * so that they are in place before its first instruction.  *CHILD: its pid. */
static int start_program(struct ct_session *s, char **argv, const char *path, pid_t *child)
{
	int go[2], err[2];
	const char *exec_path = path; /* a wasm module runs in node */
	char **exec_argv = argv;
	if (ct_session_exec(s, argv, &exec_path, &exec_argv))
		return -1;
	if (pipe2(go, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return ct_fail("pipe: %s", strerror(errno));
	*child = fork();
	if (*child < 0)
		return ct_fail("fork: %s", strerror(errno));
	if (*child == 0) {
		close(go[1]);
		close(err[0]);
		child_exec(go[0], err[1], exec_argv, exec_path);
	}
	close(go[0]);
	close(err[1]);
	s->launch_pid = (uint32_t)*child;
	/* (and the file it execs is the one whose probes those are: not
	 * rewritten since it was read, by a build running meanwhile) */
	if (ct_session_attach(s, path, *child) || ct_session_program_replaced(s, path) ||
	    (stop_requested && stopped_before_start(true))) {
		close(go[1]); /* child reads EOF and exits without running */
		waitpid(*child, NULL, 0);
		close(err[0]);
		return -1;
	}
	if (write(go[1], "g", 1) != 1) {
	}
	close(go[1]);
	int e = 0;
	if (read(err[0], &e, sizeof(e)) == sizeof(e)) {
		waitpid(*child, NULL, 0);
		close(err[0]);
		struct statvfs fs;
		bool noexec = e == EACCES && !statvfs(exec_path, &fs) && (fs.f_flag & ST_NOEXEC);
		return ct_fail("cannot execute %s: %s%s", exec_path, strerror(e),
			       noexec ? " (its file system is mounted noexec)" : "");
	}
	close(err[0]);
	return 0;
}

/* The program stopped itself alone (raise(SIGTSTP), a "wait for the
 * debugger" SIGSTOP, kill -STOP from elsewhere): untraced, its parent (a
 * job-control shell) would see it stopped; now calltrace is that child, so
 * it stops by the same signal, and once continued continues the program, as
 * sudo does.  A terminal's Ctrl-Z stops the whole foreground group,
 * calltrace too: by the time it runs again the program was continued with
 * it, and nothing is done.  Not --follow's SIGSTOP, with which calltrace
 * holds a process that exec'd until its probes are in. */
static void mirror_stop(struct ct_session *s, pid_t child, int sig)
{
	bool kthread;
	if ((sig == SIGSTOP && s->o.follow) || process_state(child, &kthread) != 'T')
		return;
	struct sigaction now;
	if (sigaction(sig, NULL, &now) || now.sa_handler != SIG_DFL)
		sig = SIGSTOP; /* (calltrace was started with it ignored) */
	fflush(NULL);
	raise(sig);
	kill(child, SIGCONT);
}

/* waitpid for the program (FLAGS: 0 or WNOHANG), passing its stops on:
 * its pid once it has ended, with *STATUS. */
static pid_t wait_program(struct ct_session *s, pid_t child, int *status, int flags)
{
	for (;;) {
		pid_t w = waitpid(child, status, flags | WUNTRACED);
		if (w != child || !WIFSTOPPED(*status))
			return w;
		mirror_stop(s, child, WSTOPSIG(*status));
	}
}

/* Records while the program runs: until it has exited (--follow: and every
 * traced process with it), a limit ends the session, or stop signals do.
 * *STATUS is its wait status once *EXITED.  -1 on a session error. */
static int trace_program(struct ct_session *s, pid_t child, int *status, bool *exited)
{
	int rc = 0;
	uint64_t stopping_ns = 0;
	for (;;) {
		if (ct_session_pump(s, 50) < 0) {
			rc = -1;
			if (!*exited)
				kill(child, SIGTERM);
		}
		live_step(s);
		if (forward_sig) {
			if (!*exited)
				kill(child, forward_sig);
			forward_sig = 0;
		}
		if (!*exited && wait_program(s, child, status, WNOHANG) == child)
			*exited = true;
		/* --follow: until every traced descendant is gone too (a daemon
		 * forks and exits at once) */
		if (*exited && (rc || !s->o.follow || !ct_session_traced(s)))
			break;
		if (session_done(s))
			break; /* stop tracing; the program keeps running */
		/* A second Ctrl-C while the program ignores it, or one while only
		 * its descendants run: stop tracing, let them run on untraced --
		 * unless they are only slow to die of the signal. */
		if (*exited ? stop_count > 0 : (stop_count >= 2 && !forward_sig)) {
			if (!stopping_ns)
				stopping_ns = now_mono_ns();
			else if (now_mono_ns() - stopping_ns >= STOP_GRACE_NS) {
				s->stop_reason = *exited ? "interrupted" : "interrupted twice";
				break;
			}
		}
		ct_session_progress(s, false);
	}
	return rc;
}

/* The file's exit line; on stderr, what keeps running untraced. */
static char *describe_end(struct ct_session *s, const char *path, bool exited, int status, int rc)
{
	size_t others = exited && s->o.follow && !rc ? ct_session_traced(s) : 0;
	if (!exited) {
		if (s->stop_reason)
			ct_say("%s: recording stopped, %s keeps running", s->stop_reason, path);
		return xstrdup("still running (tracing stopped)");
	}
	if (!others)
		return describe_status(status);
	char *st = describe_status(status);
	char *desc = xasprintf("%s; %zu traced process%s still running (tracing stopped)", st, others,
			       others > 1 ? "es" : "");
	free(st);
	ct_say("%s%srecording stopped, %zu traced process%s keep%s running",
		s->stop_reason ? s->stop_reason : "", s->stop_reason ? ": " : "", others, others > 1 ? "es" : "",
		others > 1 ? "" : "s");
	return desc;
}

/* calltrace's exit status: the program's, as a shell reports it (a program
 * killed by a signal: calltrace dies by it too, in record_main). */
static int program_exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		program_term_sig = WTERMSIG(status);
		return 128 + WTERMSIG(status);
	}
	return 1;
}

/* Runs the program PATH (ARGV) under the probes; its exit status, or -1. */
static int run_launch(struct ct_session *s, char **argv, const char *path)
{
	pid_t child = 0;
	if (start_program(s, argv, path, &child))
		return -1;
	int status = 0;
	bool exited = false; /* the program itself */
	int rc = trace_program(s, child, &status, &exited);
	char *desc = describe_end(s, path, exited, status, rc);
	if (session_end(s, desc))
		rc = -1;
	free(desc);
	if (rc)
		return -1;
	if (!exited) {
		/* --duration ended the trace: wait for the program as a shell would. */
		while (wait_program(s, child, &status, 0) < 0 && errno == EINTR) {
			if (forward_sig) {
				kill(child, forward_sig);
				forward_sig = 0;
			}
		}
	}
	return program_exit_status(status);
}

/* Dies by SIG as the program did.  calltrace's own core is of no use to
 * anyone (the program's core, if any, was already written): not dumpable
 * stops even a core_pattern pipe, RLIMIT_CORE 0 a plain file. */
static void die_by_signal(int sig)
{
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	fflush(NULL);
	signal(sig, SIG_DFL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
	/* a signal whose default is not to terminate: the shell's convention */
}

static int run_attach(struct ct_session *s, const int *pids, size_t npids, const char *probe_path)
{
	/* (each process checked once its probes are in: an exec after that
	 * is one the trace sees) */
	if (ct_session_attach(s, probe_path, pids[0]) || ct_session_process_execd(s, pids[0]))
		return -1;
	for (size_t i = 1; i < npids; i++)
		if (ct_session_attach_more(s, pids[i]) || ct_session_process_execd(s, pids[i]))
			return -1;
	ct_say("tracing %zu process%s of %s; Ctrl-C to stop", npids, npids > 1 ? "es" : "",
		s->binary);
	while (!stop_requested) {
		if (ct_session_pump(s, 50) < 0)
			break;
		live_step(s);
		if (!ct_session_traced(s)) /* with --follow: their descendants too */
			break;
		if (session_done(s))
			break;
		ct_session_progress(s, false);
	}
	bool gone = !ct_session_traced(s);
	if (session_end(s, !gone ? "detached (process left running)"
			   : s->left_by_exec ? s->left_by_exec : "process exited"))
		return -1;
	if (!live.closed)
		return 0;
	ct_say("%s: recording stopped, the process%s left running", s->stop_reason,
		npids > 1 ? "es" : "");
	return 1;
}

/* The process (thread group) PID belongs to: a thread id names its process. */
static int process_of(int pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	int tgid = pid;
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid > 0 ? tgid : pid;
}

/* -p P -p P (or a thread of P) would attach the probes twice and record
 * every event twice: each process once, in the order given. */
static void unique_processes(int *pids, size_t *n)
{
	size_t out = 0;
	for (size_t i = 0; i < *n; i++) {
		int p = process_of(pids[i]);
		if (p != pids[i])
			ct_say("%d is a thread of process %d: tracing the process", pids[i], p);
		bool seen = false;
		for (size_t k = 0; k < out; k++)
			seen |= pids[k] == p;
		if (!seen)
			pids[out++] = p;
	}
	*n = out;
}

/* The command line, parsed: the session's options and the lists of GLOBs
 * and pids they point into. */
struct record_cmd {
	struct ct_session_opts o;
	CT_VEC(const char *) trace, exclude, args, rets, roots;
	CT_VEC(int) pids; /* -p, one per process once parsed */
	char **prog;      /* PROGRAM [ARGS...]; none with -p */
	int nprog;
	bool live;        /* `calltrace live` */
	bool output_given;
};

/* Options with no letter of their own. */
enum {
	OPT_NO_ARGS = 0x2000,
	OPT_MAX_STRING,
	OPT_MAX_ITEMS,
	OPT_EXIT,
	OPT_NO_INTERIM,
	OPT_PARKS,
	OPT_MAX_DEPTH,
	OPT_MIN_DURATION,
	OPT_ROOT,
	OPT_SAMPLE,
	OPT_SAMPLE_GOROUTINES,
	OPT_MAX_EVENTS,
	OPT_MAX_SIZE,
	OPT_DURATION,
	OPT_BUFFER_SIZE,
	OPT_FOLLOW,
	OPT_NO_SCHED,
	OPT_DEMANGLE,
	OPT_RAW,
	OPT_SCHED,
	OPT_OTLP_ENDPOINT,
	OPT_OTLP_PROTOCOL,
	OPT_SERVICE,
};

static const struct option record_options[] = {
	{"output", required_argument, NULL, 'o'},
	{"trace", required_argument, NULL, 'F'},
	{"exclude", required_argument, NULL, 'N'},
	{"pid", required_argument, NULL, 'p'},
	{"duration", required_argument, NULL, OPT_DURATION},
	{"buffer-size", required_argument, NULL, OPT_BUFFER_SIZE},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"args", required_argument, NULL, 'A'},
	{"retval", required_argument, NULL, 'R'},
	{"no-args", no_argument, NULL, OPT_NO_ARGS},
	{"max-string", required_argument, NULL, OPT_MAX_STRING},
	{"max-items", required_argument, NULL, OPT_MAX_ITEMS},
	{"max-depth", required_argument, NULL, OPT_MAX_DEPTH},
	{"min-duration", required_argument, NULL, OPT_MIN_DURATION},
	{"root", required_argument, NULL, OPT_ROOT},
	{"sample", required_argument, NULL, OPT_SAMPLE},
	{"sample-goroutines", required_argument, NULL, OPT_SAMPLE_GOROUTINES},
	{"max-events", required_argument, NULL, OPT_MAX_EVENTS},
	{"max-size", required_argument, NULL, OPT_MAX_SIZE},
	{"follow", no_argument, NULL, OPT_FOLLOW},
	{"no-sched", no_argument, NULL, OPT_NO_SCHED},
	{"demangle", required_argument, NULL, OPT_DEMANGLE},
	{"raw", no_argument, NULL, OPT_RAW},
	{"sched", no_argument, NULL, OPT_SCHED},
	{"otlp-endpoint", required_argument, NULL, OPT_OTLP_ENDPOINT},
	{"otlp-protocol", required_argument, NULL, OPT_OTLP_PROTOCOL},
	{"service", required_argument, NULL, OPT_SERVICE},
	{"exit", required_argument, NULL, OPT_EXIT},
	{"no-interim", no_argument, NULL, OPT_NO_INTERIM},
	{"parks", no_argument, NULL, OPT_PARKS},
	{NULL, 0, NULL, 0},
};

/* An option parser's answer for another group's option. */
#define NOT_MINE (-1)

/* A bad option value: one line saying what the option needs; exit status 2. */
static int bad_value(const char *needs, const char *arg)
{
	ct_print_errorf("%s, not '%s'", needs, arg);
	return 2;
}

/* What to trace and what to capture.  0, or 2 for a bad value. */
static int selection_option(struct record_cmd *cmd, int c, char *arg)
{
	uint64_t v;
	switch (c) {
	case 'F':
		if (ct_empty_glob(c, arg))
			return 2;
		CT_VEC_PUSH(cmd->trace, arg);
		return 0;
	case 'N':
		if (ct_empty_glob(c, arg))
			return 2;
		CT_VEC_PUSH(cmd->exclude, arg);
		return 0;
	case 'A':
		CT_VEC_PUSH(cmd->args, arg);
		return 0;
	case 'R':
		CT_VEC_PUSH(cmd->rets, arg);
		return 0;
	case OPT_NO_ARGS:
		cmd->o.args.enabled = false;
		return 0;
	case OPT_MAX_STRING:
		if (parse_u64(arg, &v) || !v || v > 1024)
			return bad_value("--max-string needs a number of bytes from 1 to 1024", arg);
		cmd->o.args.fetch.max_string = (uint32_t)v;
		return 0;
	case OPT_MAX_ITEMS:
		if (parse_u64(arg, &v) || !v || v > 64)
			return bad_value("--max-items needs a number from 1 to 64", arg);
		cmd->o.args.fetch.max_items = (uint32_t)v;
		return 0;
	case OPT_EXIT:
		if (strcmp(arg, "auto") && strcmp(arg, "ret"))
			return bad_value("--exit is auto (default) or ret", arg);
		cmd->o.sel.exits = strcmp(arg, "ret") ? CT_EXITS_AUTO : CT_EXITS_RET;
		return 0;
	case OPT_NO_INTERIM:
		cmd->o.sel.no_interim = true;
		return 0;
	case OPT_PARKS:
		cmd->o.sel.go_parks = cmd->o.args.go_parks = true;
		return 0;
	}
	return NOT_MINE;
}

/* Limits and sampling, and --duration.  0, or 2 for a bad value. */
static int limit_option(struct record_cmd *cmd, int c, char *arg)
{
	struct ct_session_opts *o = &cmd->o;
	uint64_t v;
	switch (c) {
	case OPT_MAX_DEPTH:
		if (parse_u64(arg, &v) || !v || v > 1000)
			return bad_value("--max-depth needs a depth from 1 to 1000", arg);
		o->max_depth = (uint32_t)v;
		return 0;
	case OPT_MIN_DURATION:
		if (parse_duration(arg, &o->min_dur_ns) || !o->min_dur_ns)
			return bad_value("--min-duration needs a time like 10us", arg);
		return 0;
	case OPT_ROOT:
		CT_VEC_PUSH(cmd->roots, arg);
		return 0;
	case OPT_SAMPLE:
	case OPT_SAMPLE_GOROUTINES:
		if (parse_u64(arg, &v) || !v || v > 1000000000)
			return bad_value(c == OPT_SAMPLE ? "--sample needs a number N (keep 1 in N)"
							 : "--sample-goroutines needs a number N (keep 1 in N)",
					 arg);
		*(c == OPT_SAMPLE ? &o->sample_n : &o->sample_g_n) = (uint32_t)v;
		return 0;
	case OPT_MAX_EVENTS:
		if (parse_u64(arg, &o->max_events) || !o->max_events)
			return bad_value("--max-events needs a number of events", arg);
		return 0;
	case OPT_MAX_SIZE:
		if (parse_size(arg, &o->max_size) || o->max_size < 4096)
			return bad_value("--max-size needs a size of 4K or more (e.g. 256M)", arg);
		return 0;
	case OPT_DURATION:
		/* (a bare number is nanoseconds to parse_duration: "10" traced
		 * for 10 ns, the program ran untraced) */
		if (!*arg || (arg[strlen(arg) - 1] >= '0' && arg[strlen(arg) - 1] <= '9'))
			return bad_value("--duration needs a time with its unit, like 10s or 500ms", arg);
		if (parse_duration(arg, &o->duration_ns) || !o->duration_ns)
			return bad_value("--duration needs a time like 10s or 500ms", arg);
		return 0;
	}
	return NOT_MINE;
}

/* Which processes, where the file goes, how it is shown (live).  0, or 2
 * for a bad value. */
static int run_option(struct record_cmd *cmd, int c, char *arg)
{
	uint64_t v;
	switch (c) {
	case 'o':
		cmd->o.output = arg;
		cmd->output_given = true;
		return 0;
	case 'p':
		if (parse_u64(arg, &v) || !v || v > INT_MAX)
			return bad_value("-p needs a process id", arg);
		CT_VEC_PUSH(cmd->pids, (int)v);
		return 0;
	case OPT_FOLLOW:
		cmd->o.follow = true;
		return 0;
	case OPT_NO_SCHED:
		cmd->o.no_sched = true;
		return 0;
	case OPT_BUFFER_SIZE:
		if (parse_size(arg, &v) || v < 4096 || v > (1ULL << 31))
			return bad_value("--buffer-size needs a size between 4K and 2G", arg);
		/* The kernel wants a power of two. */
		cmd->o.ringbuf_bytes = 4096;
		while (cmd->o.ringbuf_bytes < v)
			cmd->o.ringbuf_bytes <<= 1;
		return 0;
	case 'v':
		ct_verbose++;
		return 0;
	case OPT_DEMANGLE:
		if (ct_demangle_parse(arg, &ct_demangle_mode))
			return bad_value("--demangle takes simple, full or no", arg);
		return 0;
	case OPT_RAW:
		ct_raw_durations = true;
		return 0;
	case OPT_SCHED:
		ct_sched_calls = true;
		return 0;
	}
	return NOT_MINE;
}

/* --otlp-*: spans sent while recording.  0, or 2 for a bad value. */
static int otlp_option(int c, char *arg)
{
	switch (c) {
	case OPT_OTLP_ENDPOINT:
		if (!ct_otlp_http_url_ok(arg)) {
			ct_print_error();
			return 2;
		}
		otlp_opts.url = arg;
		otlp_opts.with_values = true;
		return 0;
	case OPT_OTLP_PROTOCOL:
		if (ct_otlp_protocol_parse(arg, &otlp_opts.json)) {
			ct_print_error();
			return 2;
		}
		return 0;
	case OPT_SERVICE:
		otlp_opts.service = arg;
		return 0;
	}
	return NOT_MINE;
}

static int record_option(struct record_cmd *cmd, int c, char *arg)
{
	int rc = selection_option(cmd, c, arg);
	if (rc == NOT_MINE)
		rc = limit_option(cmd, c, arg);
	if (rc == NOT_MINE)
		rc = run_option(cmd, c, arg);
	if (rc == NOT_MINE)
		rc = otlp_option(c, arg);
	return rc;
}

/* What the options say together; the session's options from the lists. */
static int check_record_cmd(struct record_cmd *cmd)
{
	struct ct_session_opts *o = &cmd->o;
	if (!otlp_opts.url && (otlp_opts.service || otlp_opts.json)) {
		ct_print_errorf("--service and --otlp-protocol go with --otlp-endpoint");
		return 2;
	}
	if (cmd->pids.n)
		unique_processes(cmd->pids.v, &cmd->pids.n);
	if ((cmd->pids.n > 0) == (cmd->nprog > 0)) {
		ct_print_errorf("%s: give either a program to run or -p PID (see calltrace %s --help)",
				cmd->live ? "live" : "record", cmd->live ? "live" : "record");
		return 2;
	}
	if (cmd->live && !cmd->output_given)
		o->output = NULL; /* live keeps no file unless asked to (-o): an unnamed one */
	o->flush_ns = cmd->live ? 50000000ULL : 0;
	o->sel.trace = cmd->trace.v;
	o->sel.ntrace = cmd->trace.n;
	o->sel.exclude = cmd->exclude.v;
	o->sel.nexclude = cmd->exclude.n;
	o->args.args = cmd->args.v;
	o->args.nargs = cmd->args.n;
	o->args.rets = cmd->rets.v;
	o->args.nrets = cmd->rets.n;
	o->roots = cmd->roots.v;
	o->nroots = cmd->roots.n;
	o->lib_pid = cmd->pids.n ? cmd->pids.v[0] : 0;
	return 0;
}

/* Parses the command line into CMD.  False when the command ends here,
 * with *STATUS its exit status (--help, a bad option). */
static bool parse_record_cmd(int argc, char **argv, bool is_live, struct record_cmd *cmd, int *status)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->live = is_live;
	cmd->o.output = "calltrace.data";
	cmd->o.ringbuf_bytes = 16 << 20;
	cmd->o.args.enabled = true;
	cmd->o.args.fetch = (struct ct_fetch_opts){64, 8, 3};
	optind = 1;
	opterr = 0; /* one line of our own: ct_bad_option */
	int c;
	while ((c = getopt_long(argc, argv, "+:o:F:N:p:A:R:vh", record_options, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			*status = 0;
			return false;
		}
		int rc = record_option(cmd, c, optarg);
		if (rc == NOT_MINE)
			ct_bad_option(is_live ? "live" : "record", c, argv, record_options);
		if (rc) {
			*status = 2;
			return false;
		}
	}
	cmd->prog = argv + optind;
	cmd->nprog = argc - optind;
	*status = check_record_cmd(cmd);
	return *status == 0;
}

static void record_cmd_free(struct record_cmd *cmd)
{
	free(cmd->o.cmdline);
	CT_VEC_FREE(cmd->trace);
	CT_VEC_FREE(cmd->exclude);
	CT_VEC_FREE(cmd->args);
	CT_VEC_FREE(cmd->rets);
	CT_VEC_FREE(cmd->roots);
	CT_VEC_FREE(cmd->pids);
}

/* What is traced: the binary to plan for and the file the probes go on
 * (the program itself, or /proc/PID/exe: the running image, even if the
 * file on disk has since been replaced). */
struct record_target {
	char *path;
	char *probe_path;
};

/* Why process PID has no program to trace, its /proc/PID/exe unreadable
 * (ERR): it exists, but is a kernel thread or a zombie; or it is gone, or
 * not ours to see. */
static void no_program(int pid, const char *exe, int err)
{
	bool kthread = false;
	char st = err == ENOENT ? process_state(pid, &kthread) : 0;
	bool exists = st != 0;
	const char *state = !st ? NULL : st == 'Z' || st == 'X' ? "Z" : kthread ? "K" : "";
	char task[64];
	snprintf(task, sizeof(task), "/proc/%d/task", pid);
	DIR *d = state && *state == 'Z' ? opendir(task) : NULL;
	int threads = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		threads += de->d_name[0] != '.';
	if (d)
		closedir(d);
	if (threads > 1) /* its main thread is (pthread_exit in main), the others run */
		ct_print_errorf("process %d runs on without its main thread (it called pthread_exit): calltrace cannot "
				"attach to such a process; trace the program from its start (calltrace record -- PROGRAM)",
				pid);
	else if (state && *state == 'Z')
		ct_print_errorf("process %d has exited (a zombie its parent has not waited for): nothing to trace", pid);
	else if (state && *state == 'K')
		ct_print_errorf("process %d is a kernel thread: it runs no program to trace; give a user process's PID",
				pid);
	else if (err == ENOENT && !exists)
		ct_print_errorf("there is no process %d (not running, or in another PID namespace); check the PID", pid);
	else
		ct_print_errorf("cannot read %s: %s (is process %d running, and are you root?)", exe, strerror(err), pid);
}

/* The -p processes' binary (one: one plan; each process gets its links). */
static bool resolve_processes(const struct record_cmd *cmd, struct record_target *t)
{
	for (size_t i = 0; i < cmd->pids.n; i++)
		if (cmd->pids.v[i] == getpid()) {
			/* each event it wrote would be calls of its own to trace:
			 * it never caught up, nor stopped for a signal */
			ct_print_errorf("process %d is this calltrace itself: give the PID of the program to trace",
					cmd->pids.v[i]);
			return false;
		}
	int pid = cmd->pids.v[0];
	t->probe_path = xasprintf("/proc/%d/exe", pid);
	char buf[PATH_MAX];
	ssize_t n = readlink(t->probe_path, buf, sizeof(buf) - 1);
	if (n < 0) {
		no_program(pid, t->probe_path, errno);
		return false;
	}
	buf[n] = 0;
	t->path = xstrdup(buf);
	struct stat st0, sti;
	for (size_t i = 1; i < cmd->pids.n; i++) {
		char *pp = xasprintf("/proc/%d/exe", cmd->pids.v[i]);
		int bad = stat(t->probe_path, &st0) || stat(pp, &sti) || st0.st_dev != sti.st_dev ||
			  st0.st_ino != sti.st_ino;
		free(pp);
		if (bad) {
			ct_print_errorf("processes %d and %d do not run the same binary (or one is gone); record them separately",
					pid, cmd->pids.v[i]);
			return false;
		}
	}
	return true;
}

/* The file's record.cmdline: the program's, or the -p list and binary. */
static char *record_cmdline(const struct record_cmd *cmd, const char *path)
{
	if (!cmd->pids.n)
		return join_cmdline(cmd->nprog, cmd->prog);
	struct ct_buf b = {0};
	for (size_t i = 0; i < cmd->pids.n; i++) {
		char t[32];
		buf_put(&b, t, snprintf(t, sizeof(t), "-p %d ", cmd->pids.v[i]));
	}
	char *ps = xasprintf("%.*s(%s)", (int)b.n, (char *)b.p, path);
	buf_free(&b);
	return ps;
}

/* Is PATH a shared library with no entry point (libfoo.so, not libc.so.6,
 * which runs)?  Run, it would jump to its load address and crash. */
static bool library_without_entry(const char *path)
{
	Elf64_Ehdr eh;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	bool lib = fd >= 0 && read(fd, &eh, sizeof(eh)) == sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
		   eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_type == ET_DYN && eh.e_entry == 0;
	if (fd >= 0)
		close(fd);
	return lib;
}

/* Open files a recording needs at the least (a small C program's maps,
 * links and pipes take ~60); -F '*' on a big program takes hundreds more,
 * which the session's messages say when they run out. */
#define MIN_FILES 64

/* Finds what CMD traces and checks that it can be recorded; false after
 * printing why not. */
static bool resolve_target(struct record_cmd *cmd, struct record_target *t)
{
	if (cmd->pids.n) {
		if (!resolve_processes(cmd, t))
			return false;
	} else {
		t->path = resolve_program(cmd->prog[0]);
		if (!t->path) {
			ct_print_errorf("cannot find program '%s'%s", cmd->prog[0],
					strchr(cmd->prog[0], '/') ? "" : " in PATH");
			return false;
		}
		t->probe_path = xstrdup(t->path);
		if (library_without_entry(t->path)) {
			ct_print_errorf("%s is a shared library (it has no entry point), not a program: record a program "
					"that loads it, with -F '%s:GLOB' to trace its functions",
					cmd->prog[0], t->path);
			return false;
		}
	}
	if (geteuid() != 0 && !ct_wasm_is_module(t->probe_path)) { /* wasm needs no BPF */
		ct_print_errorf("recording needs root (BPF and uprobes): run it with sudo");
		return false;
	}
	/* (below this even a small program's maps, links and pipes do not fit:
	 * it failed wherever the descriptors ran out, some lines blaming the
	 * kernel's BPF support) */
	struct rlimit files;
	if (!ct_wasm_is_module(t->probe_path) && !getrlimit(RLIMIT_NOFILE, &files) && files.rlim_max < MIN_FILES) {
		ct_print_errorf("the limit of open files is %llu (ulimit -Hn): calltrace holds a file descriptor per BPF map "
				"and probe link and needs at least %d; raise it", (unsigned long long)files.rlim_max,
				MIN_FILES);
		return false;
	}
	cmd->o.cmdline = record_cmdline(cmd, t->path);
	return true;
}

/* Plans, attaches and records; the exit status (the program's when it ran). */
static int run_session(struct record_cmd *cmd, const struct record_target *t)
{
	live.on = cmd->live;
	cmd->o.shown_while_recording = cmd->live || otlp_opts.url;
	install_signals();
	struct ct_session s;
	int rc = ct_session_prepare(&s, t->path, t->probe_path, &cmd->o);
	if (rc == 0 && stop_requested)
		rc = stopped_before_start(!cmd->pids.n);
	else if (rc == 0)
		rc = cmd->pids.n ? run_attach(&s, cmd->pids.v, cmd->pids.n, t->probe_path)
				 : run_launch(&s, cmd->prog, t->probe_path);
	if (rc < 0) {
		ct_print_error();
		if (s.w) {
			/* Nothing ran under the probes: leave no half-made file. */
			ct_writer_discard(s.w);
			s.w = NULL;
		}
		rc = 1;
	}
	ct_session_free(&s);
	return rc;
}

/* record and live, step by step: the command line into a struct
 * (parse_record_cmd), what it names (resolve_target), the recording
 * (run_session: run_launch or run_attach), and an end as the program's. */
static int record_main(int argc, char **argv, bool is_live)
{
	struct record_cmd cmd;
	struct record_target t = {NULL, NULL};
	int status;
	if (parse_record_cmd(argc, argv, is_live, &cmd, &status))
		status = resolve_target(&cmd, &t) ? run_session(&cmd, &t) : 1;
	record_cmd_free(&cmd);
	free(t.path);
	free(t.probe_path);
	if (program_term_sig)
		die_by_signal(program_term_sig);
	return status;
}

int cmd_record(int argc, char **argv)
{
	return record_main(argc, argv, false);
}

int cmd_live(int argc, char **argv)
{
	return record_main(argc, argv, true);
}
