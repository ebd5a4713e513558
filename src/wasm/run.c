/* Recording a wasm module: stage the instrumented module, the runner and the
 * recorder in a private directory, run node on them with the write end of a
 * pipe, and feed what comes through the pipe to the session loop. */
#include "wasm/wasm.h"
#include "wasm/wire.h"
#include "plan/sites.h"
#include "util/files.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Built into the binary (assets.S): an installed calltrace needs no data files. */
extern const unsigned char ct_asset_runner[], ct_asset_runner_end[];
extern const unsigned char ct_asset_recorder[], ct_asset_recorder_end[];

struct ct_wasm_run {
	struct ct_wasm_target t;
	struct ct_wasm_plan p;
	struct ct_wasm_limits lim;
	char dir[64];
	char *node, *node_version, *wasm_exec, *wasm_exec_version;
	uint64_t rewrite_ns;
	size_t rewritten_size;
	int rfd, wfd;
	char **argv;
	char *staged[3]; /* argv's paths into dir */
	struct ct_buf in; /* bytes of records not yet whole */
	size_t in_off;
	bool eof;
	struct ct_wire_reader rd;
};

static char *find_in_path(const char *name)
{
	const char *path = getenv("PATH");
	char *copy = xstrdup(path ? path : "/usr/local/bin:/usr/bin:/bin"), *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char *c = xasprintf("%s/%s", *d ? d : ".", name);
		if (access(c, X_OK) == 0) {
			free(copy);
			return c;
		}
		free(c);
	}
	free(copy);
	return NULL;
}

static char *read_small(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char buf[256];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return xstrdup(buf);
}

/* The wasm_exec.js of a Go installation, the one of the module's Go
 * version if there is one: its imports must match the module's. */
static char *find_wasm_exec(const char *want_version, char **found_version)
{
	CT_VEC(char *) roots = {0};
	const char *env = getenv("GOROOT");
	if (env && *env)
		CT_VEC_PUSH(roots, xstrdup(env));
	int minor = 0;
	if (sscanf(want_version, "go1.%d", &minor) == 1)
		CT_VEC_PUSH(roots, xasprintf("/usr/lib/go-1.%d", minor));
	CT_VEC_PUSH(roots, xstrdup("/usr/lib/go"));
	CT_VEC_PUSH(roots, xstrdup("/usr/local/go"));
	DIR *d = opendir("/usr/lib");
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, "go-1.", 5))
			CT_VEC_PUSH(roots, xasprintf("/usr/lib/%s", de->d_name));
	if (d)
		closedir(d);
	char *best = NULL, *best_ver = NULL;
	for (size_t i = 0; i < roots.n; i++) {
		static const char *const rel[] = {"misc/wasm/wasm_exec.js", "lib/wasm/wasm_exec.js"};
		for (int k = 0; k < 2; k++) {
			char *js = xasprintf("%s/%s", roots.v[i], rel[k]);
			char *vf = xasprintf("%s/VERSION", roots.v[i]);
			char *ver = read_small(vf);
			free(vf);
			bool ok = access(js, R_OK) == 0;
			bool match = ok && ver && *want_version && !strncmp(ver, want_version, strlen(want_version));
			if (ok && (!best || match)) {
				/* same minor version is what matters */
				free(best);
				free(best_ver);
				best = js;
				best_ver = ver;
				js = NULL;
				ver = NULL;
				if (match)
					i = roots.n - 1;
			}
			free(js);
			free(ver);
			if (best && i == roots.n - 1)
				break;
		}
	}
	for (size_t i = 0; i < roots.n; i++)
		free(roots.v[i]);
	CT_VEC_FREE(roots);
	*found_version = best_ver;
	return best;
}

static int write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int rc = 0;
	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		rc = ct_fail("cannot write %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

static bool is_root(const struct ct_wasm_limits *l, const char *name)
{
	for (size_t i = 0; i < l->nroots; i++)
		if (glob_match(l->roots[i], name))
			return true;
	return false;
}

static int write_config(struct ct_wasm_run *r)
{
	struct ct_buf b = {0};
	buf_printf(&b, "{\"fd\":%d,\"recorder\":\"%s/recorder.wasm\",\"wasm_exec\":\"%s\",", r->wfd, r->dir,
		   r->wasm_exec ? r->wasm_exec : "");
	buf_printf(&b, "\"limits\":{\"flags\":%u,\"max_depth\":%u,\"sample_n\":%u,\"sample_g_n\":%u,"
		       "\"min_dur_ns\":%llu,\"max_events\":%llu},\"sites\":[",
		   r->lim.flags, r->lim.max_depth, r->lim.sample_n ? r->lim.sample_n : 1,
		   r->lim.sample_g_n ? r->lim.sample_g_n : 1, (unsigned long long)r->lim.min_dur_ns,
		   (unsigned long long)r->lim.max_events);
	for (size_t i = 0; i < r->p.nsites; i++) {
		const struct ct_file_site *s = &r->p.sites[i];
		bool root = s->func != CT_NOFUNC && r->lim.nroots && is_root(&r->lim, r->p.funcs[s->func].name);
		buf_printf(&b, "%s%u", i ? "," : "", CT_WIRE_SITE(s->func & 0xffffff, s->kind, root));
	}
	buf_cstr(&b, "]}\n");
	int rc = write_file(r->dir, "config.json", b.p, b.n);
	buf_free(&b);
	return rc;
}

static bool json_safe(const char *s)
{
	for (; s && *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			return false;
	return true;
}

struct ct_wasm_run *ct_wasm_run_prepare(const char *path, const struct ct_selection *sel,
					const struct ct_args_opts *ao, const struct ct_wasm_limits *lim)
{
	struct ct_wasm_run *r = xcalloc(1, sizeof(*r));
	r->rfd = r->wfd = -1;
	r->lim = *lim;
	if (ct_wasm_target_open(&r->t, path)) {
		free(r);
		return NULL;
	}
	if (r->t.m.is_object) {
		ct_fail("%s is a relocatable wasm object file (it has linking/reloc sections): link it into a module first (e.g. wasm-ld)",
			path);
		goto fail;
	}
	if (!r->t.go && !r->t.m.wasi) {
		ct_fail("%s imports neither WASI (wasi_snapshot_preview1) nor Go's js glue: calltrace runs WASI and Go GOOS=js modules only",
			path);
		goto fail;
	}
	r->node = find_in_path("node");
	if (!r->node)
		r->node = find_in_path("nodejs");
	if (!r->node) {
		ct_fail("running a wasm module needs node (Node.js 20): install it (make deps does)");
		goto fail;
	}
	if (r->t.m.go_js) {
		r->wasm_exec = find_wasm_exec(r->t.gw.go_version, &r->wasm_exec_version);
		if (!r->wasm_exec) {
			ct_fail("%s is a Go js/wasm module (%s): its runtime glue, wasm_exec.js, was not found in a Go installation (GOROOT, /usr/lib/go-1.N, /usr/local/go); install Go %s",
				path, r->t.gw.go_version[0] ? r->t.gw.go_version : "Go version unknown",
				r->t.gw.go_version[0] ? r->t.gw.go_version : "");
			goto fail;
		}
		if (r->t.gw.go_version[0] && (!r->wasm_exec_version ||
					      strncmp(r->wasm_exec_version, r->t.gw.go_version, strlen("go1.19")) ))
			ct_warn("%s was built by %s but the only wasm_exec.js found is %s's (%s); it may not run",
				path, r->t.gw.go_version, r->wasm_exec_version ? r->wasm_exec_version : "unknown Go",
				r->wasm_exec);
	}
	if (ct_wasm_plan_build(&r->p, &r->t, sel, ao))
		goto fail;
	uint64_t t0 = now_mono_ns();
	struct ct_buf out = {0};
	if (ct_wasm_rewrite(&r->t.m, r->p.fns.v, r->p.fns.n, r->t.go ? &r->t.gw.cfg : NULL, &out)) {
		buf_free(&out);
		ct_fail("cannot instrument %s: %s", path, ct_error());
		goto fail;
	}
	r->rewrite_ns = now_mono_ns() - t0;
	r->rewritten_size = out.n;
	const char *save = getenv("CALLTRACE_WASM_SAVE"); /* a copy of the instrumented module (tests, debugging) */
	if (save && *save) { /* an output like any other: no symlinks followed, 0600 */
		struct ct_output so;
		if (ct_output_create(&so, save, CT_OUT_PRIVATE) == 0) {
			FILE *sf = ct_output_stream(&so);
			if (!sf || fwrite(out.p, 1, out.n, sf) != out.n)
				ct_output_discard(&so);
			else if (ct_output_commit(&so) == 0)
				save = NULL;
		}
		if (save)
			ct_warn("CALLTRACE_WASM_SAVE: cannot write %s", getenv("CALLTRACE_WASM_SAVE"));
	}
	ct_debug("instrumented %zu of %u functions of %s in %.1f ms (%zu -> %zu bytes)", r->p.fns.n, r->t.m.nfuncs,
		 path, r->rewrite_ns / 1e6, r->t.size, out.n);
	snprintf(r->dir, sizeof(r->dir), "/tmp/calltrace-wasm-XXXXXX");
	if (!mkdtemp(r->dir)) {
		buf_free(&out);
		r->dir[0] = 0;
		ct_fail("cannot create a private directory in /tmp: %s", strerror(errno));
		goto fail;
	}
	ct_wasm_dwarf_names(&r->p, &r->t, r->dir);
	int rc = write_file(r->dir, "module.wasm", out.p, out.n);
	buf_free(&out);
	if (rc || write_file(r->dir, "runner.cjs", ct_asset_runner, (size_t)(ct_asset_runner_end - ct_asset_runner)) ||
	    write_file(r->dir, "recorder.wasm", ct_asset_recorder,
		       (size_t)(ct_asset_recorder_end - ct_asset_recorder)))
		goto fail;
	if (!json_safe(r->dir) || !json_safe(r->wasm_exec)) {
		ct_fail("unusual characters in %s", r->wasm_exec ? r->wasm_exec : r->dir);
		goto fail;
	}
	int fds[2];
	if (pipe2(fds, O_CLOEXEC)) {
		ct_fail("pipe: %s", strerror(errno));
		goto fail;
	}
	r->rfd = fds[0];
	/* room for a few batches: the runner rarely waits for calltrace */
	fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
	/* the child inherits the write end */
	r->wfd = fcntl(fds[1], F_DUPFD, 3);
	close(fds[1]);
	if (r->wfd < 0 || write_config(r))
		goto fail;
	return r;
fail:
	ct_wasm_run_free(r);
	return NULL;
}

const struct ct_wasm_plan *ct_wasm_run_plan(const struct ct_wasm_run *r)
{
	return &r->p;
}

void ct_wasm_run_meta(const struct ct_wasm_run *r, struct ct_writer *w)
{
	const struct ct_wasm_target *t = &r->t;
	ct_writer_meta(w, "target.path", "%s", t->path);
	ct_writer_meta(w, "target.format", "wasm");
	ct_writer_meta(w, "target.lang", "%s", t->go ? "go" : "c");
	ct_writer_meta(w, "target.funcs_source", "%s", t->go ? t->gw.names_source : "name section");
	ct_writer_meta(w, "target.dwarf", "%s", t->m.has_dwarf ? "yes (parameter names)" : "no");
	ct_writer_meta(w, "wasm.runtime", "%s",
		       t->m.go_js ? "node (Go js/wasm, wasm_exec.js)" : "node (node:wasi, preview1)");
	ct_writer_meta(w, "wasm.node", "%s", r->node);
	if (r->wasm_exec)
		ct_writer_meta(w, "wasm.wasm_exec", "%s (%s)", r->wasm_exec,
			       r->wasm_exec_version ? r->wasm_exec_version : "unknown version");
	ct_writer_meta(w, "wasm.rewrite", "%zu functions instrumented in %.1f ms, %zu -> %zu bytes", r->p.fns.n,
		       r->rewrite_ns / 1e6, r->t.size, r->rewritten_size);
	if (t->go) {
		ct_writer_meta(w, "go.version", "%s", t->gw.go_version[0] ? t->gw.go_version : "unknown");
		ct_writer_meta(w, "go.module", "%s", t->gw.main_module ? t->gw.main_module : "");
		ct_writer_meta(w, "go.abi", "wasm");
		ct_writer_meta(w, "go.g_offsets", "goid=%u stack.hi=%u source=table", t->gw.cfg.goid_off,
			       t->gw.cfg.stack_hi_off);
	}
}

int ct_wasm_run_exec(struct ct_wasm_run *r, char **prog, const char **exec_path, char ***exec_argv)
{
	size_t n = 0;
	while (prog[n])
		n++;
	r->argv = xcalloc(n + 8, sizeof(char *));
	size_t k = 0;
	r->argv[k++] = r->node;
	r->argv[k++] = (char *)"--no-warnings";
	r->argv[k++] = r->staged[0] = xasprintf("%s/runner.cjs", r->dir);
	r->argv[k++] = r->staged[1] = xasprintf("%s/config.json", r->dir);
	r->argv[k++] = r->staged[2] = xasprintf("%s/module.wasm", r->dir);
	for (size_t i = 0; i < n; i++)
		r->argv[k++] = prog[i]; /* argv[0]: the module as the user named it */
	*exec_path = r->node;
	*exec_argv = r->argv;
	return 0;
}

void ct_wasm_run_started(struct ct_wasm_run *r)
{
	if (r->wfd >= 0)
		close(r->wfd);
	r->wfd = -1;
}

/* Reads of at most this much, into the start of the buffer each time:
 * records still in the cache when decoded */
#define READ_CHUNK (128u << 10)

size_t ct_wasm_wire_decode(struct ct_wire_reader *rd, const uint8_t *p, size_t n,
			   int (*fn)(void *ctx, const struct ct_event *e, const void *payload), void *ctx,
			   int *events)
{
	size_t off = 0;
	int k = 0;
	for (;;) {
		size_t avail = n - off;
		if (avail < sizeof(struct ct_wire_event))
			break;
		/* (in place: records are 8-byte multiples, and the buffer is
		 * malloc'd; a copy to the stack cost a store-forwarding stall
		 * per record) */
		const struct ct_wire_event *w = (const struct ct_wire_event *)(p + off);
		size_t plen = ((size_t)w->len + 7) & ~(size_t)7;
		if (avail < sizeof(*w) + plen)
			break;
		const uint8_t *payload = (const uint8_t *)(w + 1);
		off += sizeof(*w) + plen;
		if (__builtin_expect(w->site >= CT_WIRE_STATS, 0)) {
			uint64_t v = 0;
			if (w->len >= 8)
				memcpy(&v, payload, 8);
			switch (w->site) {
			case CT_WIRE_STATS:
				memcpy(rd->counters, payload,
				       w->len < sizeof(rd->counters) ? w->len : sizeof(rd->counters));
				break;
			case CT_WIRE_THREAD:
				rd->pid = w->key;
				rd->goid = v;
				break;
			case CT_WIRE_TIME:
				rd->ts = v;
				break;
			case CT_WIRE_KEY:
				rd->next_key = v;
				rd->have_key = true;
				break;
			}
			continue;
		}
		rd->ts += (uint64_t)(int64_t)w->dts;
		uint64_t key = w->key;
		if (rd->have_key) {
			key = rd->next_key;
			rd->have_key = false;
		}
		struct ct_event e = {.ts = rd->ts, .goid = rd->goid, .key = key, .pid = rd->pid, .tid = rd->pid,
				     .site = w->site, .len = w->len, .flags = w->flags};
		fn(ctx, &e, w->len ? payload : NULL);
		k++;
	}
	*events += k;
	return off;
}

/* Hands every whole record in r->in to FN. */
static int drain_records(struct ct_wasm_run *r, int (*fn)(void *, const struct ct_event *, const void *), void *ctx)
{
	int n = 0;
	r->in_off += ct_wasm_wire_decode(&r->rd, r->in.p + r->in_off, r->in.n - r->in_off, fn, ctx, &n);
	size_t rest = r->in.n - r->in_off;
	if (rest <= 4096 || r->in_off > (1u << 20)) {
		/* the start of a record still coming (a few bytes, usually) to
		 * the front: the next read lands where the last one did */
		memmove(r->in.p, r->in.p + r->in_off, rest);
		r->in.n = rest;
		r->in_off = 0;
	}
	return n;
}

int ct_wasm_run_poll(struct ct_wasm_run *r, int timeout_ms,
		     int (*fn)(void *ctx, const struct ct_event *e, const void *payload), void *ctx)
{
	if (r->rfd < 0 || r->eof)
		return 0;
	struct pollfd pfd = {r->rfd, POLLIN, 0};
	int pr = poll(&pfd, 1, timeout_ms);
	if (pr < 0)
		return errno == EINTR ? 0 : -1;
	if (pr == 0)
		return 0;
	int total = 0;
	/* read what is there now, in large pieces */
	for (int rounds = 0; rounds < 64; rounds++) {
		buf_reserve(&r->in, READ_CHUNK);
		size_t room = r->in.cap - r->in.n;
		ssize_t got = read(r->rfd, r->in.p + r->in.n, room < READ_CHUNK ? room : READ_CHUNK);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got == 0)
				r->eof = true;
			break;
		}
		r->in.n += (size_t)got;
		total += drain_records(r, fn, ctx);
		struct pollfd again = {r->rfd, POLLIN, 0};
		if (poll(&again, 1, 0) <= 0)
			break;
	}
	return total;
}

bool ct_wasm_run_eof(const struct ct_wasm_run *r)
{
	return r->eof || r->rfd < 0;
}

void ct_wasm_run_stop(struct ct_wasm_run *r)
{
	if (r->rfd >= 0)
		close(r->rfd);
	r->rfd = -1;
}

uint64_t ct_wasm_run_counter(const struct ct_wasm_run *r, int which)
{
	return which >= 0 && which < CT_CNT_MAX ? r->rd.counters[which] : 0;
}

void ct_wasm_run_free(struct ct_wasm_run *r)
{
	if (!r)
		return;
	if (r->dir[0]) {
		static const char *const files[] = {"module.wasm", "runner.cjs", "recorder.wasm", "config.json"};
		for (size_t i = 0; i < 4; i++) {
			char *p = xasprintf("%s/%s", r->dir, files[i]);
			unlink(p);
			free(p);
		}
		rmdir(r->dir);
	}
	if (r->rfd >= 0)
		close(r->rfd);
	if (r->wfd >= 0)
		close(r->wfd);
	for (size_t i = 0; i < 3; i++)
		free(r->staged[i]);
	free(r->argv);
	ct_wasm_plan_free(&r->p);
	ct_wasm_target_close(&r->t);
	free(r->node);
	free(r->node_version);
	free(r->wasm_exec);
	free(r->wasm_exec_version);
	buf_free(&r->in);
	free(r);
}
