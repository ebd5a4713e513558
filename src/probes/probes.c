#include "probes/probes.h"
#include "format/calib.h"   /* ct_costs_hit_prices */
#include "format/payload.h" /* ct_fetch_copy */
#include "util/util.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "calltrace.skel.h"

/* libbpf 1.1 (Debian 12) predates uprobe_multi: no wrapper, and the uapi
 * header lacks the attach type and attr layout (kernel 6.6+). */
#define CT_BPF_TRACE_UPROBE_MULTI 48
#define CT_BPF_LINK_CREATE 28

struct uprobe_multi_attr {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t um_flags;
	uint32_t pid;
	uint8_t pad[128 - 60];
};

/* + the exits found while recording, + the interim RETs' (session.c
 * INTERIM_LINKS_MAX per object and process) */
#define MAX_LINKS (2 * CT_MAX_BINS * 4 + 128 + 1024)

struct ct_probes {
	struct calltrace_bpf *skel;
	uint32_t nsites;             /* in the fetch_index array; later ones: fetch_later */
	struct ct_fetch *fetch;      /* the fetch array, mapped: each program once */
	size_t fetch_bytes;
	uint64_t *fetch_index;       /* a site's index in it, mapped */
	size_t fetch_index_bytes;
	uint32_t nprograms;          /* the fetch array's size */
	struct ct_fetch_programs programs; /* those in it */
	struct ct_planned_slot *planned; /* the planned_slots array, mapped */
	size_t planned_bytes;
	bool perf_events;            /* no uprobe_multi: one perf-event uprobe per site */
	CT_VEC(struct bpf_link *) pe_links;
	CT_VEC(uint8_t) pe_phase;    /* per pe_links: when detach destroys it (enum perf_phase) */
	struct ring_buffer *rb;
	int links[MAX_LINKS];        /* -1: a free slot; LINK_GONE: closed, its slot still named */
	bool link_is_exit[MAX_LINKS];
	int link_pid[MAX_LINKS];     /* the process each was made for (0: any) */
	size_t nlinks;
	struct bpf_link *tps[6]; /* process tracepoints: exit, fork, exec; lock waits: begin, end; context switches */
	ct_event_cb cb;
	void *cb_ctx;
	int ncpus;
	char stack_depth[128]; /* the verifier's, per BPF function of ct_hit: "48+16+8" */
	int guard_fd;          /* the guard's pipe (ct_probes_guard), 0: none */
};

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN || ct_verbose > 1)
		return ct_verbose ? vfprintf(stderr, fmt, ap) : 0;
	return 0;
}

/* strerror(E), and for EMFILE what to do: each link and map is a file
 * descriptor (hundreds with -F '*'; record raises its soft limit to the
 * hard one, which is what is low then). */
static const char *fd_limit(int e)
{
	static char buf[192];
	struct rlimit rl;
	if (e != EMFILE || getrlimit(RLIMIT_NOFILE, &rl))
		return strerror(e);
	snprintf(buf, sizeof(buf), "%s (calltrace holds a file descriptor per probe link: the limit, ulimit -Hn, is %llu; raise it)",
		 strerror(e), (unsigned long long)rl.rlim_max);
	return buf;
}

static int link_uprobe_multi(int prog_fd, const char *path, int pid, const uint64_t *offsets,
			     const uint64_t *cookies, size_t n)
{
	struct uprobe_multi_attr a;
	memset(&a, 0, sizeof(a));
	a.prog_fd = prog_fd;
	a.attach_type = CT_BPF_TRACE_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offsets;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.cnt = (uint32_t)n;
	a.pid = (uint32_t)pid;
	return (int)syscall(__NR_bpf, CT_BPF_LINK_CREATE, &a, sizeof(a));
}

/* Around every link made or closed: the BPF side's probe_changes (see
 * there), in the bss map, which is mmap'ed; links close on threads of
 * their own too, hence atomic. */
static __u64 *probe_changes;

static void changing_probes(int64_t d)
{
	if (probe_changes)
		__atomic_add_fetch(probe_changes, (__u64)d, __ATOMIC_SEQ_CST);
}

static int link_changing(int prog_fd, const char *path, int pid, const uint64_t *offsets, const uint64_t *cookies,
			 size_t n)
{
	changing_probes(1);
	int fd = link_uprobe_multi(prog_fd, path, pid, offsets, cookies, n);
	changing_probes(-1);
	return fd;
}

static void close_changing(int fd)
{
	changing_probes(1);
	close(fd);
	changing_probes(-1);
}

/* Whether this kernel has uprobe_multi links (Linux 6.6 brought them, but a
 * distribution kernel may have them earlier or leave them out): asked by
 * trying.  A two-instruction program of that attach type is linked to "/",
 * which a kernel that knows the link refuses as not a file (EBADF) and any
 * other refuses before it looks at the path.  CALLTRACE_PERF_EVENTS=1 forces
 * the older path (so it can be tested on a new kernel). */
/* uname's release ("6.18.44-..."), for messages. */
static const char *kernel_release(void)
{
	static struct utsname u;
	return uname(&u) ? "an unknown kernel" : u.release;
}

static bool uprobe_multi_supported(void)
{
	const char *force = getenv("CALLTRACE_PERF_EVENTS");
	if (force && *force == '1')
		return false;
	const struct bpf_insn ret0[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, lo, .expected_attach_type = (enum bpf_attach_type)CT_BPF_TRACE_UPROBE_MULTI);
	int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", ret0, 2, &lo);
	if (prog < 0)
		/* not allowed to load at all: the real load says why */
		return errno == EPERM || errno == EACCES;
	uint64_t offset = 0;
	int link = link_uprobe_multi(prog, "/", 0, &offset, NULL, 1);
	int e = errno;
	if (link >= 0)
		close(link);
	close(prog);
	return link < 0 && e == EBADF;
}

/* What a perf-event link probes: the program's exits or entries, or
 * calltrace itself (the calibration's), which ct_probes_detach lets go of
 * last: the program need not wait for those. */
enum perf_phase { PERF_EXITS = 1, PERF_ENTRIES = 2, PERF_OWN = 4 };

/* Fallback: a perf-event uprobe per site (cookie per site as well). */
static int attach_perf_events(struct ct_probes *p, struct bpf_program *prog, const char *path, int pid,
			      const uint64_t *offsets, const uint64_t *cookies, size_t n, bool exits)
{
	uint8_t phase = pid == getpid() ? PERF_OWN : exits ? PERF_EXITS : PERF_ENTRIES;
	for (size_t i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = cookies[i]);
		struct bpf_link *l = bpf_program__attach_uprobe_opts(prog, pid ? pid : -1, path, offsets[i], &uo);
		if (!l && pid > 0 && errno == ESRCH) /* (perf_event_open of a task that is gone) */
			return ct_fail("process %d exited before it could be traced", pid);
		if (!l)
			return ct_fail("attaching a probe at offset 0x%llx of %s failed: %s",
				       (unsigned long long)offsets[i], path, strerror(errno));
		CT_VEC_PUSH(p->pe_links, l);
		CT_VEC_PUSH(p->pe_phase, phase);
	}
	return 0;
}

/* vm.mmap_min_addr: a pointer below it (a nil pointer plus a field offset)
 * points at nothing.  0 (every address may be mapped) if unreadable. */
static uint32_t mmap_min_addr(void)
{
	FILE *f = fopen("/proc/sys/vm/mmap_min_addr", "re");
	unsigned long v = 0;
	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* An mmap'able array map M of STRIDE-byte elements, mapped (its size in
 * *BYTES); NULL if it cannot be. */
static void *map_array(const struct bpf_map *m, size_t stride, size_t *bytes)
{
	long page = sysconf(_SC_PAGESIZE);
	*bytes = ((size_t)bpf_map__max_entries(m) * stride + page - 1) & ~(size_t)(page - 1);
	void *v = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);
	return v == MAP_FAILED ? NULL : v;
}

/* The probe program opened and set up for O (its config, its maps' sizes)
 * for loading; NULL with a message if it cannot be opened.  PERF_EVENTS:
 * without uprobe_multi links. */
static struct calltrace_bpf *open_configured(const struct ct_probes_opts *o, bool perf_events)
{
	struct calltrace_bpf *skel = calltrace_bpf__open();
	if (!skel) {
		ct_fail("cannot open the BPF object: %s", strerror(errno));
		return NULL;
	}
	struct ct_config *cfg = (struct ct_config *)&skel->rodata->cfg;
	/* a quarter of the ring pending wakes the reader: each CPU wakes it
	 * after its share of that (calltrace.bpf.c wake_flags) */
	int ncpus = libbpf_num_possible_cpus();
	cfg->wake_bytes = (uint32_t)(o->ringbuf_bytes / 4 / (ncpus > 0 ? (unsigned)ncpus : 1));
	cfg->filter_pids = o->filter_pids;
	cfg->limits = o->limits;
	cfg->follow_ino = o->follow_ino;
	cfg->report_callers = o->report_callers;
	cfg->min_addr = mmap_min_addr();
	cfg->self_tgid = (uint32_t)getpid();
	cfg->file_rets = o->nfile_rets > 0;
	cfg->max_depth = o->max_depth;
	cfg->min_dur_ns = o->min_dur_ns;
	cfg->max_events = o->max_events;
	cfg->sample_n = o->sample_n ? o->sample_n : 1;
	cfg->sample_g_n = o->sample_g_n ? o->sample_g_n : 1;
	bpf_map__set_max_entries(skel->maps.events, (uint32_t)o->ringbuf_bytes);
	bpf_map__set_max_entries(skel->maps.fetch, o->nprograms ? o->nprograms : 1);
	bpf_map__set_max_entries(skel->maps.fetch_index, o->nsites ? o->nsites : 1);
	/* (--follow: and those of binaries exec'd later, which take the ids
	 * after these: room for 256 Ki interim RETs more, 4 MB of buckets) */
	uint32_t interims = o->nsites + (o->filter_pids ? 1u << 18 : 0);
	bpf_map__set_max_entries(skel->maps.interim_checks, interims ? interims : 1);
	bpf_map__set_max_entries(skel->maps.jcc_conds, o->njcc ? o->njcc : 1);
	bpf_map__set_max_entries(skel->maps.fetch_later, o->filter_pids ? CT_MAX_SITES : 1);
	/* Entries are allocated as they come, but the buckets are not: 1 << 20
	 * of them took ~100 ms to create (and to free) where a few thousand
	 * entries was all a program needed. */
	bpf_map__set_max_entries(skel->maps.planned_calls, o->max_planned ? o->max_planned : 1u << 20);
	/* twice the entries' slots, so that each is a probe or two from its
	 * own (--follow: as many as a program with thousands) */
	uint64_t want = 2 * (uint64_t)(o->max_planned ? o->max_planned : 4096);
	while (cfg->planned_bits < CT_PLANNED_MAX_BITS && (1ull << cfg->planned_bits) < want)
		cfg->planned_bits++;
	bpf_map__set_max_entries(skel->maps.planned_slots, 1u << cfg->planned_bits);
	bpf_map__set_max_entries(skel->maps.file_rets, o->nfile_rets ? o->nfile_rets : 1);
	uint32_t callers = o->max_callers ? o->max_callers : CT_MAX_CALLERS;
	bpf_map__set_max_entries(skel->maps.callers_seen, callers);
	bpf_map__set_max_entries(skel->maps.file_calls, 2 * callers);
	/* The shadow stacks exist only for the kernel-side limits; an LRU hash
	 * is preallocated in full (8192 x 2.5 KiB = 21 MiB, ~40 ms to create). */
	if (!(o->limits & CT_LIM_SHADOW))
		bpf_map__set_max_entries(skel->maps.gstates, 1);
	if (!perf_events) {
		bpf_program__set_expected_attach_type(skel->progs.ct_hit, CT_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.ct_warm, CT_BPF_TRACE_UPROBE_MULTI);
	} else {
		bpf_program__set_autoload(skel->progs.ct_warm, false);
	}
	memcpy(skel->bss->bins, o->bins, sizeof(o->bins));
	return skel;
}

const char *ct_verifier_reason(const char *log, char *out, size_t n)
{
	/* the log ends with the rejection and then its statistics: the last
	 * line that is not one of those, the instruction line before it and
	 * the source line that instruction is of ("; C source @ file:line") */
	static const char *const stats[] = {"processed ", "verification time", "stack depth", "max_states_per_insn"};
	const char *line[2] = {NULL, NULL}, *src[2] = {NULL, NULL}, *cur = NULL;
	for (const char *l = log; *l; l += strcspn(l, "\n"), l += *l == '\n') {
		size_t k = strcspn(l, "\n");
		bool skip = strspn(l, " \t") == k;
		for (size_t i = 0; !skip && i < sizeof(stats) / sizeof(stats[0]); i++)
			skip = !strncmp(l, stats[i], strlen(stats[i]));
		if (!skip && !strncmp(l, "; ", 2))
			cur = l + 2;
		else if (!skip)
			line[0] = line[1], src[0] = src[1], line[1] = l, src[1] = cur;
	}
#define LINE(l) (int)strcspn(l, "\n"), l
	size_t digits = line[0] ? strspn(line[0], "0123456789") : 0;
	if (!line[1])
		snprintf(out, n, "%s", "");
	else if (!digits || line[0][digits] != ':')
		snprintf(out, n, "%.*s", LINE(line[1]));
	else if (!src[0])
		snprintf(out, n, "%.*s (at instruction %.*s)", LINE(line[1]), LINE(line[0]));
	else
		snprintf(out, n, "%.*s (at instruction %.*s, of `%.*s`)", LINE(line[1]), LINE(line[0]), LINE(src[0]));
#undef LINE
	return out;
}

/* Why the verifier rejected the program set up for O: loaded again with
 * the instruction log (level 1) into a buffer the kernel (6.4+) keeps the
 * end of, the lines that say why, in OUT ("" if the log does not). */
static void verifier_reason(const struct ct_probes_opts *o, bool perf_events, char *out, size_t n)
{
	out[0] = 0;
	struct calltrace_bpf *skel = open_configured(o, perf_events);
	if (!skel)
		return;
	size_t size = 1 << 20;
	char *log = xcalloc(1, size);
	bpf_program__set_log_buf(skel->progs.ct_hit, log, size);
	bpf_program__set_log_level(skel->progs.ct_hit, 1);
	int err = calltrace_bpf__load(skel);
	/* a log longer than the buffer (ENOSPC): before 6.4 the kernel kept
	 * its start, not the end that says why */
	unsigned major = 0, minor = 0;
	bool end_kept = sscanf(kernel_release(), "%u.%u", &major, &minor) == 2 && (major > 6 || (major == 6 && minor >= 4));
	if (err && (err != -ENOSPC || end_kept)) /* (loaded now: nothing to say) */
		ct_verifier_reason(log, out, n);
	calltrace_bpf__destroy(skel);
	free(log);
}

struct ct_probes *ct_probes_load(const struct ct_probes_opts *o)
{
	libbpf_set_print(libbpf_quiet);
	struct ct_probes *p = xcalloc(1, sizeof(*p));
	p->perf_events = !uprobe_multi_supported();
	if (p->perf_events)
		ct_warn("this kernel has no uprobe_multi links (Linux 6.6+ has them): using one perf-event uprobe per probe site, which can take minutes to detach for thousands of sites; trace fewer functions (-F) on this kernel");
	p->skel = open_configured(o, p->perf_events);
	if (!p->skel) {
		free(p);
		return NULL;
	}
	p->nsites = o->nsites;
	p->nprograms = o->nprograms ? o->nprograms : 1;
	/* The verifier's statistics for the probe program (log level 4, a few
	 * lines): its stack depth per BPF function, see ct_probes_stack_depth.
	 * Room for more than they end as: a log that ran past the buffer on the
	 * way fails the load (ENOSPC), though 4 KiB held its final lines. */
	char vlog[16384] = "";
	bpf_program__set_log_buf(p->skel->progs.ct_hit, vlog, sizeof(vlog));
	bpf_program__set_log_level(p->skel->progs.ct_hit, 4 /* BPF_LOG_STATS */);
	int err = calltrace_bpf__load(p->skel);
	bpf_program__set_log_buf(p->skel->progs.ct_hit, NULL, 0);
	const char *depth = strstr(vlog, "stack depth ");
	if (depth)
		snprintf(p->stack_depth, sizeof(p->stack_depth), "%.*s", (int)strcspn(depth + 12, "\n"), depth + 12);
	if (err) {
		int e = -err;
		calltrace_bpf__destroy(p->skel);
		if (e == EACCES && geteuid() == 0) {
			/* root, refused: the verifier rejected the program (it
			 * says EACCES), which no privilege changes */
			char why[512];
			verifier_reason(o, p->perf_events, why, sizeof(why));
			ct_fail("the kernel's BPF verifier rejected calltrace's probe program (%s%s%s): a calltrace bug or a "
				"kernel it does not support (this is %s); please report it",
				*why ? why : strerror(e), *why ? "; " : "", *why ? strerror(e) : "", kernel_release());
		} else if (e == EPERM || e == EACCES)
			ct_fail("loading BPF programs was refused (%s): run calltrace as root (it needs CAP_BPF and CAP_PERFMON)",
				strerror(e));
		else if (e == EMFILE)
			ct_fail("loading BPF programs failed: %s", fd_limit(e));
		else
			ct_fail("loading BPF programs failed: %s (kernel %s BTF and BPF ring buffers are needed; run with -v for details)",
				strerror(e), access("/sys/kernel/btf/vmlinux", R_OK) ? "without" : "with");
		free(p);
		return NULL;
	}
	p->ncpus = libbpf_num_possible_cpus();
	probe_changes = &p->skel->bss->probe_changes;
	/* an array's elements are value_size rounded up to 8 bytes apart */
	_Static_assert(sizeof(struct ct_fetch) % 8 == 0, "struct ct_fetch is the fetch array's stride");
	_Static_assert(sizeof(struct ct_planned_slot) % 8 == 0, "struct ct_planned_slot is the array's stride");
	if (!(p->fetch = map_array(p->skel->maps.fetch, sizeof(struct ct_fetch), &p->fetch_bytes)) ||
	    !(p->fetch_index = map_array(p->skel->maps.fetch_index, sizeof(uint64_t), &p->fetch_index_bytes)) ||
	    !(p->planned = map_array(p->skel->maps.planned_slots, sizeof(struct ct_planned_slot), &p->planned_bytes))) {
		ct_fail("cannot map the BPF argument plans or planned call sites: %s", strerror(errno));
		ct_probes_free(p);
		return NULL;
	}
	return p;
}


/* A link closed by ct_probes_close_pid_links: its slot is not given to
 * another link until the session closes it by its slot (ct_probes_close_link)
 * -- it may still name it, and would close the other one. */
#define LINK_GONE (-2)

/* A slot of links[] for one more link: one a closed link left
 * (ct_probes_close_link), else the next; MAX_LINKS if none is left. */
static size_t free_link_slot(const struct ct_probes *p)
{
	for (size_t i = 0; i < p->nlinks; i++)
		if (p->links[i] == -1)
			return i;
	return p->nlinks < MAX_LINKS ? p->nlinks : MAX_LINKS;
}

size_t ct_probes_links_left(const struct ct_probes *p)
{
	size_t used = 0;
	for (size_t i = 0; i < p->nlinks; i++)
		used += p->links[i] != -1;
	return MAX_LINKS - used;
}

static void take_link_slot(struct ct_probes *p, size_t slot, int fd, bool exits, int pid)
{
	p->links[slot] = fd;
	p->link_is_exit[slot] = exits;
	p->link_pid[slot] = pid;
	if (slot == p->nlinks)
		p->nlinks++;
}

int ct_probes_attach(struct ct_probes *p, const struct ct_attach *a)
{
	struct bpf_program *prog = p->skel->progs.ct_hit;
	struct {
		const uint64_t *off, *cookie;
		size_t n;
	} sets[2] = {
		/* exits first, entries second (two links of the one program): a
		 * call entered meanwhile is never without its return; detach
		 * closes them in the same order */
		{a->exit_offsets, a->exit_cookies, a->nexit},
		{a->entry_offsets, a->entry_cookies, a->nentry},
	};
	for (int i = 0; i < 2; i++) {
		if (!sets[i].n)
			continue;
		if (p->perf_events) {
			if (attach_perf_events(p, prog, a->path, a->pid, sets[i].off, sets[i].cookie, sets[i].n, i == 0))
				return -1;
			continue;
		}
		size_t slot = free_link_slot(p);
		if (slot >= MAX_LINKS)
			return ct_fail("too many probe links");
		int fd = link_changing(bpf_program__fd(prog), a->path, a->pid, sets[i].off,
					   sets[i].cookie, sets[i].n);
		if (fd < 0) {
			int e = errno;
			/* (this kernel has uprobe_multi links: ct_probes_load
			 * tried one) EINVAL: an offset past the file's end,
			 * which a file rewritten since it was read has */
			if (e == EINVAL)
				return ct_fail("attaching %zu probes to %s failed: %s (an offset past the file's end: was it "
					       "rewritten after calltrace read it?)",
					       sets[i].n, a->path, strerror(e));
			if (e == EOPNOTSUPP || e == ENOSYS)
				return ct_fail("attaching %zu probes to %s failed: %s (uprobe_multi links need Linux 6.6 or newer)",
					       sets[i].n, a->path, strerror(e));
			/* ENOENT: /proc/PID/exe of a process that has exited
			 * (not /proc/self/fd/N: calltrace's own open file) */
			if (e == ESRCH || (e == ENOENT && a->pid > 0 && !strncmp(a->path, "/proc/", 6) &&
					   strncmp(a->path, "/proc/self/", 11)))
				return ct_fail("process %d exited before it could be traced", a->pid);
			if (e == 524) /* ENOTSUPP, the kernel's own: a refused instruction */
				return ct_fail("attaching %zu probes to %s failed: this kernel refuses a uprobe on one of the instructions calltrace chose (calltrace list -v BINARY shows them); leave that function out with -N",
					       sets[i].n, a->path);
			return ct_fail("attaching %zu probes to %s failed: %s", sets[i].n, a->path, fd_limit(e));
		}
		take_link_slot(p, slot, fd, i == 0, a->pid);
	}
	/* The goroutine-creation probe is in from here on: what a thread
	 * cached before (another process's links, an entry link first) may
	 * come from a g reused without its bump (calltrace.bpf.c goid_gen). */
	__atomic_fetch_add(&p->skel->bss->goid_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

void ct_probes_set_site_class(struct ct_probes *p, uint32_t site, enum ct_hit_class cls)
{
	if (site < p->nsites && p->fetch_index)
		p->fetch_index[site] = (p->fetch_index[site] & UINT32_MAX) | (uint64_t)(cls + 1) << 32;
}

void ct_probes_set_bpf_times(struct ct_probes *p, const uint32_t pre_ns[CT_HIT_CLASSES],
			     const uint32_t post_ns[CT_HIT_CLASSES], uint32_t args_ns)
{
	for (int k = 0; k < CT_HIT_CLASSES; k++) {
		p->skel->bss->bpf_pre_ns[k] = pre_ns[k];
		p->skel->bss->bpf_post_ns[k] = post_ns[k];
	}
	p->skel->bss->bpf_args_ns = args_ns;
	p->skel->bss->self_tgid = (uint32_t)getpid();
	p->skel->bss->bpf_times_set = 1;
}

void ct_probes_set_silent_weights(struct ct_probes *p, const struct ct_costs *c)
{
	uint64_t hit[CT_HIT_CLASSES];
	ct_costs_hit_prices(c, hit);
	for (int k = 0; k < CT_HIT_CLASSES && hit[CT_HIT_EMULATED]; k++) {
		uint64_t w = hit[k] * CT_SILENT_UNIT / hit[CT_HIT_EMULATED];
		p->skel->bss->silent_weight[k] = w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
	}
	ct_debug("a hit that sends no event weighs (per %u of an emulated one's price): stepped %u, call %u, ret %u, "
		 "check %u, 5-byte nop %u", CT_SILENT_UNIT, p->skel->bss->silent_weight[CT_HIT_STEPPED],
		 p->skel->bss->silent_weight[CT_HIT_CALL], p->skel->bss->silent_weight[CT_HIT_RET],
		 p->skel->bss->silent_weight[CT_HIT_CHECK], p->skel->bss->silent_weight[CT_HIT_NOTRAP]);
}

void ct_probes_set_goid_sites(struct ct_probes *p, uint32_t bin, uint32_t first, uint32_t n)
{
	if (bin >= CT_MAX_BINS)
		return;
	struct ct_bin_config *c = &p->skel->bss->bins[bin];
	if (c->goid_site == first + 1 && c->goid_sites == n)
		return; /* (another process's links) */
	/* off while the range changes: its hits read g.goid, and bump as
	 * none -- what they cache meanwhile goes stale at the bump after */
	__atomic_store_n(&c->goid_sites, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&c->goid_site, first + 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&c->goid_sites, n, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&p->skel->bss->goid_gen, 1, __ATOMIC_SEQ_CST);
}

int ct_probes_add_pid(struct ct_probes *p, uint32_t pid)
{
	uint8_t one = 1;
	if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.traced_pids), &pid, &one, BPF_ANY))
		return ct_fail("cannot add pid %u to the filter: %s", pid, strerror(errno));
	return 0;
}

void ct_probes_del_pid(struct ct_probes *p, uint32_t pid)
{
	bpf_map_delete_elem(bpf_map__fd(p->skel->maps.traced_pids), &pid);
}

bool ct_planned_slot_put(struct ct_planned_slot *slots, uint32_t bits, uint64_t key, const struct ct_planned_call *call)
{
	uint32_t mask = (1u << bits) - 1, at = ct_planned_slot_of(key, bits);
	for (uint32_t n = 0; n < CT_PLANNED_PROBES; n++) {
		struct ct_planned_slot *s = &slots[(at + n) & mask];
		uint64_t sk = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
		if (sk && sk != key + 1)
			continue;
		/* the value first: a probe that finds the key reads it after
		 * (a key added while recording is a new one; an old one's
		 * value changes only in its `via`, one word: ct_plan_unvia) */
		s->val = *call;
		__atomic_store_n(&s->key, key + 1, __ATOMIC_RELEASE);
		return true;
	}
	return false;
}

int ct_probes_add_planned(struct ct_probes *p, uint64_t key, const struct ct_planned_call *call)
{
	const struct ct_config *cfg = &p->skel->rodata->cfg;
	if (ct_planned_slot_put(p->planned, cfg->planned_bits, key, call))
		return 0;
	/* those slots are taken: the hash map, which the probes look in once
	 * they know there is something there */
	if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.planned_calls), &key, call, BPF_ANY))
		return ct_fail("cannot load the planned call sites: %s", strerror(errno));
	__atomic_store_n(&p->skel->bss->planned_overflow, 1, __ATOMIC_RELEASE);
	return 0;
}

int ct_probes_drop_planned(struct ct_probes *p, uint64_t key)
{
	const struct ct_config *cfg = &p->skel->rodata->cfg;
	uint32_t mask = (1u << cfg->planned_bits) - 1, at = ct_planned_slot_of(key, cfg->planned_bits);
	for (uint32_t n = 0; n < CT_PLANNED_PROBES; n++) {
		struct ct_planned_slot *s = &p->planned[(at + n) & mask];
		uint64_t sk = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
		if (!sk)
			break;
		if (sk == key + 1) {
			__atomic_store_n(&s->key, CT_PLANNED_GONE, __ATOMIC_RELEASE);
			return 0;
		}
	}
	if (bpf_map_delete_elem(bpf_map__fd(p->skel->maps.planned_calls), &key) && errno != ENOENT)
		return ct_fail("cannot take a planned call site out: %s", strerror(errno));
	return 0;
}

int ct_probes_watch_icall_exit(struct ct_probes *p, uint32_t site)
{
	uint64_t zero = 0;
	if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.icall_exit_hits), &site, &zero, BPF_NOEXIST))
		return ct_fail("cannot watch an indirect call's exit probe: %s", strerror(errno));
	return 0;
}

int ct_probes_set_jcc(struct ct_probes *p, uint32_t site, uint32_t cond)
{
	if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.jcc_conds), &site, &cond, BPF_ANY))
		return ct_fail("cannot load the conditional tail jumps' conditions: %s", strerror(errno));
	return 0;
}

int ct_probes_set_interim_check(struct ct_probes *p, uint32_t site, const struct ct_interim_check *c)
{
	if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.interim_checks), &site, c, BPF_ANY))
		return ct_fail("cannot load the interim RETs' CHECK sites: %s", strerror(errno));
	return 0;
}

int ct_probes_add_file_ret(struct ct_probes *p, const struct ct_file_ret *k)
{
	uint8_t one = 1;
	if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.file_rets), k, &one, BPF_ANY))
		return ct_fail("cannot load the planned return sites in other files: %s", strerror(errno));
	return 0;
}

int ct_probes_add_file_call(struct ct_probes *p, const struct ct_file_ret *k, const struct ct_planned_call *call)
{
	if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.file_calls), k, call, BPF_ANY))
		return ct_fail("cannot load the call sites found in other files: %s", strerror(errno));
	__atomic_store_n(&p->skel->bss->file_calls_open, 1, __ATOMIC_RELEASE);
	return 0;
}

/* F's header as identical programs have it: its pads zero (whatever the
 * plan left there). */
static struct ct_fetch fetch_head(const struct ct_fetch *f)
{
	return (struct ct_fetch){.nops = f->nops, .size = f->size, .guard_lo = f->guard_lo, .guard_hi = f->guard_hi,
				 .guard_from = f->guard_from, .guard_to = f->guard_to};
}

static uint64_t fetch_program_hash(const struct ct_fetch *f)
{
	struct ct_fetch h = fetch_head(f);
	return hash_strn((const char *)&h, offsetof(struct ct_fetch, ops)) ^
	       hash_strn((const char *)f->ops, f->nops * sizeof(f->ops[0]));
}

static bool fetch_program_same(const struct ct_fetch *a, const struct ct_fetch *b)
{
	struct ct_fetch ha = fetch_head(a), hb = fetch_head(b);
	return !memcmp(&ha, &hb, offsetof(struct ct_fetch, ops)) &&
	       !memcmp(a->ops, b->ops, a->nops * sizeof(a->ops[0]));
}

struct fetch_program {
	struct fetch_program *next; /* of the same hash */
	uint32_t index;
	struct ct_fetch prog; /* ends after its ops */
};

uint32_t ct_fetch_program_index(struct ct_fetch_programs *t, const struct ct_fetch *f, uint32_t most, bool *added)
{
	*added = false;
	if (!t->n)
		t->n = 1; /* index 0: none, what a site without a program reads */
	void **slot = map_slot(&t->by_hash, fetch_program_hash(f), true);
	for (struct fetch_program *q = *slot; q; q = q->next)
		if (fetch_program_same(&q->prog, f))
			return q->index;
	if (t->n >= most)
		return UINT32_MAX;
	struct fetch_program *q = xmalloc(offsetof(struct fetch_program, prog.ops) + f->nops * sizeof(f->ops[0]));
	ct_fetch_copy(&q->prog, f);
	q->index = t->n++;
	q->next = *slot;
	*slot = q;
	*added = true;
	return q->index;
}

void ct_fetch_programs_free(struct ct_fetch_programs *t)
{
	MAP_FOREACH(&t->by_hash, i)
	for (struct fetch_program *q = t->by_hash.vals[i], *next; q; q = next) {
		next = q->next;
		free(q);
	}
	map_free(&t->by_hash);
	t->n = 0;
}

int ct_probes_set_fetch(struct ct_probes *p, uint32_t site, const struct ct_fetch *f)
{
	if (site < p->nsites) {
		/* neither the site nor a new program's index is in use yet:
		 * the site is not attached */
		bool added;
		uint32_t i = ct_fetch_program_index(&p->programs, f, p->nprograms, &added);
		if (i != UINT32_MAX) {
			if (added)
				ct_fetch_copy(&p->fetch[i], f);
			p->fetch_index[site] = (p->fetch_index[site] & ~(uint64_t)UINT32_MAX) | i; /* (the class above) */
			return 0;
		}
		/* more programs than planned for: the site's own, by id */
	}
	struct ct_fetch whole = {0}; /* F may end after its ops (the plan's heap copies) */
	ct_fetch_copy(&whole, f);
	if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.fetch_later), &site, &whole, BPF_ANY))
		return ct_fail("cannot load the argument plan of site %u: %s", site, strerror(errno));
	return 0;
}

void ct_probes_set_bin(struct ct_probes *p, uint32_t bin, const struct ct_bin_config *c)
{
	if (bin < CT_MAX_BINS)
		p->skel->bss->bins[bin] = *c; /* the bss map is mmap'ed: no syscall */
}

int ct_probes_watch(struct ct_probes *p, bool follow, bool offcpu)
{
	struct bpf_program *progs[3] = {p->skel->progs.ct_proc_exit, p->skel->progs.ct_fork, p->skel->progs.ct_exec};
	for (int i = 0; i < 3; i++) {
		p->tps[i] = bpf_program__attach(progs[i]);
		if (!p->tps[i])
			return ct_fail("cannot attach the process tracepoints: %s", fd_limit(errno));
	}
	/* the program's waits for the probe changes (none when the kernel has
	 * no lock contention tracepoints: those waits stay in the durations) */
	struct bpf_program *waits[2] = {p->skel->progs.ct_wait_begin, p->skel->progs.ct_wait_end};
	for (int i = 0; i < 2; i++) {
		p->tps[3 + i] = bpf_program__attach(waits[i]);
		if (!p->tps[3 + i]) {
			ct_debug("no lock contention tracepoints: waits for probe changes stay in the durations");
			break;
		}
	}
	/* the times traced threads are off CPU (CT_PROC_OFFCPU) */
	if (offcpu) {
		p->tps[5] = bpf_program__attach(p->skel->progs.ct_switch);
		if (!p->tps[5])
			return errno == EMFILE ? ct_fail("cannot attach to the scheduler's sched_switch tracepoint: %s",
							 fd_limit(errno))
					       : ct_fail("cannot attach to the scheduler's sched_switch tracepoint: %s (record "
							 "--no-sched goes without)", strerror(errno));
	}
	return 0;
}

uint64_t ct_probes_forks_untraced(struct ct_probes *p)
{
	return __atomic_load_n(&p->skel->bss->forks_untraced, __ATOMIC_RELAXED);
}

uint64_t ct_probes_forks_unfollowed(struct ct_probes *p)
{
	return __atomic_load_n(&p->skel->bss->forks_unfollowed, __ATOMIC_RELAXED);
}

size_t ct_probes_traced(struct ct_probes *p)
{
	int fd = bpf_map__fd(p->skel->maps.traced_pids);
	uint32_t key, next, *prev = NULL;
	size_t n = 0;
	CT_VEC(uint32_t) gone = {0};
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		/* one that ended before the tracepoints were in place */
		if (kill((pid_t)next, 0) && errno == ESRCH)
			CT_VEC_PUSH(gone, next);
		else
			n++;
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < gone.n; i++)
		bpf_map_delete_elem(fd, &gone.v[i]);
	CT_VEC_FREE(gone);
	return n;
}

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* (Linux 6.9: a pidfd of one thread) */
#endif

/* The byte offset of member NAME of BTF struct T, -1 if none. */
static int member_offset(const struct btf *btf, const struct btf_type *t, const char *name)
{
	const struct btf_member *m = btf_members(t);
	for (unsigned i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), name))
			return (int)(btf_member_bit_offset(t, i) / 8);
	return -1;
}

/* Has thread TID of PID exited (a zombie thread group leader: its last
 * switch set off_since, and it never runs again)? */
static bool thread_dead(uint32_t pid, uint32_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%u/task/%u/stat", pid, tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	const char *paren = strrchr(buf, ')'); /* (the name may hold any byte) */
	return !paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X';
}

/* (struct run's fields as the BPF object's BTF places them, read from
 * each traced thread's task storage through a pidfd of the thread) */
int ct_probes_still_off(struct ct_probes *p, ct_still_off_fn fn, void *ctx)
{
	const struct btf *btf = bpf_object__btf(p->skel->obj);
	int id = btf ? btf__find_by_name_kind(btf, "run", BTF_KIND_STRUCT) : -1;
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, (__u32)id) : NULL;
	int at_since = t ? member_offset(btf, t, "off_since") : -1, at_goid = t ? member_offset(btf, t, "off_goid") : -1,
	    at_flags = t ? member_offset(btf, t, "off_flags") : -1;
	if (at_since < 0 || at_goid < 0 || at_flags < 0)
		return ct_fail("the BPF object's BTF has no struct run with off_since, off_goid and off_flags");
	uint8_t *val = xmalloc(bpf_map__value_size(p->skel->maps.runs));
	int runs = bpf_map__fd(p->skel->maps.runs), pids = bpf_map__fd(p->skel->maps.traced_pids);
	uint32_t pid, prev_pid;
	int n = 0;
	for (int rc = bpf_map_get_next_key(pids, NULL, &pid); rc == 0 && n >= 0;
	     prev_pid = pid, rc = bpf_map_get_next_key(pids, &prev_pid, &pid)) {
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%u/task", pid);
		DIR *d = opendir(dir);
		struct dirent *de;
		while (d && n >= 0 && (de = readdir(d))) {
			uint32_t tid = (uint32_t)strtoul(de->d_name, NULL, 10);
			int fd = tid ? (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD) : -1;
			if (fd < 0 && tid && errno == EINVAL) {
				n = -1;
				ct_fail("no pidfd of a thread here (Linux 6.9 has them)");
			}
			if (fd < 0)
				continue;
			if (thread_dead(pid, tid)) {
				close(fd);
				continue;
			}
			uint64_t since = 0, goid = 0;
			uint32_t flags = 0;
			if (bpf_map_lookup_elem(runs, &fd, val) == 0) {
				memcpy(&since, val + at_since, sizeof(since));
				memcpy(&goid, val + at_goid, sizeof(goid));
				memcpy(&flags, val + at_flags, sizeof(flags));
			}
			close(fd);
			if (since) {
				fn(ctx, pid, tid, since, goid, flags);
				n++;
			}
		}
		if (d)
			closedir(d);
	}
	free(val);
	return n;
}

/* Links closing on threads of their own that ct_probes_close_link left
 * (they count probe_changes: the bss stays until they are done). */
static int detached_closes;

static void *close_link(void *fd)
{
	close_changing((int)(intptr_t)fd);
	return NULL;
}

static void *close_link_detached(void *fd)
{
	close_link(fd);
	__atomic_sub_fetch(&detached_closes, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Closing a uprobe_multi link takes the breakpoints out at once, then waits
 * for a grace period (the kernel's uprobe_unregister_sync), ~25 ms here.
 * One at a time, the exits of callers found while recording (up to 48
 * links) made detach take 1.4 s; closed from one thread each, the waits
 * overlap and cost about one grace period. */
static void close_links(struct ct_probes *p, bool exits)
{
	pthread_t th[MAX_LINKS];
	bool started[MAX_LINKS] = {0};
	for (size_t i = 0; i < p->nlinks; i++)
		if (p->link_is_exit[i] == exits && p->links[i] >= 0)
			started[i] = !pthread_create(&th[i], NULL, close_link, (void *)(intptr_t)p->links[i]);
	for (size_t i = 0; i < p->nlinks; i++)
		if (p->link_is_exit[i] == exits && p->links[i] >= 0) {
			if (started[i])
				pthread_join(th[i], NULL);
			else
				close_changing(p->links[i]);
			p->links[i] = -1;
		}
}

/* The perf-event links of one phase, shared out among threads that
 * destroy them (destroy_perf_links). */
struct perf_batch {
	struct ct_probes *p;
	unsigned phases; /* enum perf_phase bits */
	size_t next;     /* the next link to look at (atomic) */
};

static void *destroy_perf_share(void *arg)
{
	struct perf_batch *b = arg;
	struct ct_probes *p = b->p;
	for (size_t i; (i = __atomic_fetch_add(&b->next, 1, __ATOMIC_SEQ_CST)) < p->pe_links.n;)
		if ((p->pe_phase.v[i] & b->phases) && p->pe_links.v[i]) {
			bpf_link__destroy(p->pe_links.v[i]);
			p->pe_links.v[i] = NULL;
		}
	return NULL;
}

/* Threads destroying perf-event links at once, at most. */
#define PERF_CLOSERS 256

/* Destroying a perf-event uprobe takes its BPF program off at once, then
 * its breakpoint out and waits for grace periods (uprobe_unregister_sync)
 * holding the kernel's event_mutex: ~100-230 ms each here (6.18), one
 * after the other whatever the threads (strace: each close ended 0.1-0.2 s
 * after the one before).  From a thread each, every program of PHASES is
 * off in the first ~0.2 s (bpf map `hits` read meanwhile: the program
 * pays its traps alone, no BPF, no event), and the breakpoints go out in
 * the order the threads queue.  (One at a time, the exits first, the
 * entries ran on until every exit was out: -F '*' on c_core, 4.5 s.) */
static void destroy_perf_links(struct ct_probes *p, unsigned phases)
{
	size_t n = 0;
	for (size_t i = 0; i < p->pe_links.n; i++)
		n += (p->pe_phase.v[i] & phases) && p->pe_links.v[i];
	struct perf_batch b = {p, phases, 0};
	pthread_t th[PERF_CLOSERS];
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 16); /* (a close and a free) */
	size_t started = 0;
	while (started + 1 < n && started < PERF_CLOSERS && !pthread_create(&th[started], &attr, destroy_perf_share, &b))
		started++;
	pthread_attr_destroy(&attr);
	destroy_perf_share(&b); /* (all of them if no thread started) */
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

int ct_probes_attach_link(struct ct_probes *p, const char *path, int pid, const uint64_t *offsets,
			  const uint64_t *cookies, size_t n)
{
	size_t slot = free_link_slot(p);
	if (p->perf_events || !n || slot >= MAX_LINKS) {
		errno = p->perf_events ? EOPNOTSUPP : n ? EMFILE : EINVAL; /* (what the caller says why with) */
		return -1;
	}
	int fd = link_changing(bpf_program__fd(p->skel->progs.ct_hit), path, pid, offsets, cookies, n);
	if (fd < 0)
		return -1;
	take_link_slot(p, slot, fd, true, pid);
	return (int)slot;
}

int ct_probes_warm_up(struct ct_probes *p, const char *path, int pid, uint64_t offset)
{
	size_t slot = free_link_slot(p);
	if (p->perf_events || slot >= MAX_LINKS)
		return -1;
	uint64_t cookie = 0;
	int fd = link_changing(bpf_program__fd(p->skel->progs.ct_warm), path, pid, &offset, &cookie, 1);
	if (fd < 0)
		return -1;
	take_link_slot(p, slot, fd, false, pid);
	return 0;
}

/* Closes link FD: its breakpoints go at once; the grace period after that
 * is a thread's to wait, not the event loop's. */
static void close_link_later(int fd)
{
	pthread_t th;
	__atomic_add_fetch(&detached_closes, 1, __ATOMIC_SEQ_CST);
	if (pthread_create(&th, NULL, close_link_detached, (void *)(intptr_t)fd) == 0) {
		pthread_detach(th);
	} else {
		__atomic_sub_fetch(&detached_closes, 1, __ATOMIC_SEQ_CST);
		close_changing(fd);
	}
}

void ct_probes_close_link(struct ct_probes *p, int slot)
{
	if (slot < 0 || (size_t)slot >= p->nlinks || p->links[slot] == -1)
		return;
	int fd = p->links[slot];
	p->links[slot] = -1;
	if (fd != LINK_GONE)
		close_link_later(fd);
}

size_t ct_probes_close_pid_links(struct ct_probes *p, uint32_t pid)
{
	size_t n = 0;
	for (size_t i = 0; i < p->nlinks && pid; i++)
		if (p->links[i] >= 0 && p->link_pid[i] == (int)pid) {
			close_link_later(p->links[i]);
			p->links[i] = LINK_GONE;
			n++;
		}
	return n;
}

size_t ct_probes_interim_passed(struct ct_probes *p, uint32_t *sites, uint32_t *passes, size_t n)
{
	int fd = bpf_map__fd(p->skel->maps.interim_passed);
	size_t got = 0;
	uint32_t key, next;
	const uint32_t *prev = NULL;
	while (got < n && bpf_map_get_next_key(fd, prev, &next) == 0) {
		sites[got++] = next;
		key = next;
		prev = &key;
	}
	for (size_t i = 0; i < got; i++)
		if (bpf_map_lookup_and_delete_elem(fd, &sites[i], &passes[i]))
			passes[i] = 0; /* (gone meanwhile) */
	return got;
}

void ct_probes_detach(struct ct_probes *p)
{
	/* Exits go first (they were created first): a call caught between the
	 * two closes then has no return and shows as unfinished, rather than
	 * returning with the end of its subtree silently missing. */
	close_links(p, true);
	close_links(p, false);
	/* (events after the detach began are dropped: the exits' and entries'
	 * programs may come off together) */
	destroy_perf_links(p, PERF_EXITS | PERF_ENTRIES);
	destroy_perf_links(p, PERF_OWN);
	p->nlinks = 0;
	CT_VEC_FREE(p->pe_links);
	CT_VEC_FREE(p->pe_phase);
	for (size_t i = 0; i < sizeof(p->tps) / sizeof(p->tps[0]); i++)
		if (p->tps[i]) {
			bpf_link__destroy(p->tps[i]);
			p->tps[i] = NULL;
		}
}

static int on_sample(void *ctx, void *data, size_t size)
{
	struct ct_probes *p = ctx;
	const struct ct_event *e = data;
	if (size < sizeof(*e))
		return 0;
	return p->cb(p->cb_ctx, e, (const uint8_t *)data + sizeof(*e));
}

int ct_probes_poll(struct ct_probes *p, int timeout_ms, ct_event_cb cb, void *ctx)
{
	p->cb = cb;
	p->cb_ctx = ctx;
	if (!p->rb) {
		p->rb = ring_buffer__new(bpf_map__fd(p->skel->maps.events), on_sample, p, NULL);
		if (!p->rb)
			return ct_fail("cannot open the ring buffer: %s", fd_limit(errno));
	}
	int n = ring_buffer__poll(p->rb, timeout_ms);
	if (n == CT_EVENT_PAUSE)
		return 1;
	if (n < 0 && n != -EINTR)
		return ct_fail("reading the ring buffer failed: %s", strerror(-n));
	/* Without a wakeup, poll() only times out: consume what is there. */
	int m = ring_buffer__consume(p->rb);
	if (m == CT_EVENT_PAUSE)
		return (n > 0 ? n : 0) + 1;
	if (m < 0 && m != -EINTR)
		return ct_fail("reading the ring buffer failed: %s", strerror(-m));
	return (n > 0 ? n : 0) + (m > 0 ? m : 0);
}

uint64_t ct_probes_lost(struct ct_probes *p)
{
	uint64_t vals[p->ncpus > 0 ? p->ncpus : 1], sum = 0;
	uint32_t zero = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.lost), &zero, vals))
		return 0;
	for (int i = 0; i < p->ncpus; i++)
		sum += vals[i];
	return sum;
}

uint32_t ct_probes_loss_gen(struct ct_probes *p)
{
	return (uint32_t)__atomic_load_n(&p->skel->bss->loss_gen, __ATOMIC_RELAXED);
}

size_t ct_probes_hits(struct ct_probes *p, uint64_t *per_cpu, size_t n)
{
	uint64_t vals[p->ncpus > 0 ? p->ncpus : 1];
	uint32_t zero = 0;
	if (p->ncpus <= 0 || bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.hits), &zero, vals))
		return 0;
	size_t k = (size_t)p->ncpus < n ? (size_t)p->ncpus : n;
	memcpy(per_cpu, vals, k * sizeof(*vals));
	return k;
}

int ct_probes_hits_total(struct ct_probes *p, uint64_t *total)
{
	uint64_t vals[p->ncpus > 0 ? p->ncpus : 1];
	size_t n = ct_probes_hits(p, vals, (size_t)(p->ncpus > 0 ? p->ncpus : 1));
	if (!n)
		return -1;
	*total = 0;
	for (size_t i = 0; i < n; i++)
		*total += vals[i];
	return 0;
}

const char *ct_probes_stack_depth(struct ct_probes *p)
{
	return p->stack_depth;
}

uint64_t ct_probes_counter(struct ct_probes *p, enum ct_counter which)
{
	uint32_t k = which;
	uint64_t v = 0;
	if (bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.counters), &k, &v))
		return 0;
	return v;
}

/* ---- The guard of held processes ----
 *
 * --follow holds a process that execs another binary with SIGSTOP (ct_exec)
 * until its probes are in place.  Were calltrace killed (SIGKILL, the OOM
 * killer) in that instant, the process would stay stopped for good.  The
 * guard is a process of its own that outlives calltrace: it waits for the
 * end of a pipe only calltrace holds, then continues every process still
 * in held_pids (the kernel side adds a process there before stopping it,
 * user space takes it out when it continues it).  It holds nothing else:
 * no link, no ring buffer, no terminal. */

/* The guard, in its own session; never returns. */
static void guard_run(int rfd, int map_fd)
{
	int lo = rfd < map_fd ? rfd : map_fd, hi = rfd < map_fd ? map_fd : rfd;
	if (lo > 0)
		syscall(SYS_close_range, 0u, (unsigned)lo - 1, 0u);
	if (hi > lo + 1)
		syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0u);
	syscall(SYS_close_range, (unsigned)hi + 1, ~0u, 0u);
	int null = open("/dev/null", O_RDWR);
	for (int fd = 0; null >= 0 && fd < 3; fd++)
		if (fd != rfd && fd != map_fd && fd != null)
			dup2(null, fd);
	setsid(); /* no Ctrl-C, hangup or stop of calltrace's terminal reaches it */
	int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2};
	for (size_t i = 0; i < sizeof(ignored) / sizeof(*ignored); i++)
		signal(ignored[i], SIG_IGN);
	prctl(PR_SET_NAME, "calltrace-guard");
	char c;
	while (read(rfd, &c, 1) != 0 && errno == EINTR)
		;
	/* calltrace is gone (or done): nothing it held stays stopped */
	uint32_t key, next, *prev = NULL;
	while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
		kill((pid_t)next, SIGCONT);
		key = next;
		prev = &key;
	}
	_exit(0);
}

int ct_probes_guard(struct ct_probes *p)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return ct_fail("cannot start the guard of held processes: pipe: %s", strerror(errno));
	int map_fd = bpf_map__fd(p->skel->maps.held_pids);
	/* forked twice: calltrace never waits for it, and no waitpid of the
	 * program's can collect it */
	pid_t mid = fork();
	if (mid == 0) {
		if (fork() == 0)
			guard_run(fds[0], map_fd);
		_exit(0);
	}
	close(fds[0]);
	if (mid < 0) {
		close(fds[1]);
		return ct_fail("cannot start the guard of held processes: fork: %s", strerror(errno));
	}
	while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
		;
	p->guard_fd = fds[1];
	return 0;
}

void ct_probes_released(struct ct_probes *p, uint32_t pid)
{
	bpf_map_delete_elem(bpf_map__fd(p->skel->maps.held_pids), &pid);
}

void ct_probes_free(struct ct_probes *p)
{
	if (!p)
		return;
	ct_probes_detach(p);
	while (__atomic_load_n(&detached_closes, __ATOMIC_SEQ_CST))
		usleep(1000); /* (a grace period: tens of ms) */
	probe_changes = NULL;
	if (p->guard_fd > 0)
		close(p->guard_fd); /* the guard continues what is still held, and ends */
	if (p->rb)
		ring_buffer__free(p->rb);
	if (p->fetch)
		munmap(p->fetch, p->fetch_bytes);
	if (p->fetch_index)
		munmap(p->fetch_index, p->fetch_index_bytes);
	ct_fetch_programs_free(&p->programs);
	if (p->planned)
		munmap(p->planned, p->planned_bytes);
	calltrace_bpf__destroy(p->skel);
	free(p);
}
