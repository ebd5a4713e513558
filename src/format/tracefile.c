#include "format/tracefile.h"
#include "probes/event.h"
#include "target/target.h" /* CT_FN_* */
#include "util/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define HEADER_SIZE 32
#define CHUNK_HDR 16
#define EVENT_CHUNK_MAX (64 * 1024) /* flush an event chunk at this size */
#define MAX_CHUNK (64u << 20)       /* reader's sanity bound */

/* Event record head byte. */
#define EV_NEW_THREAD 0x01 /* pid, tid, goid follow */
#define EV_PAYLOAD 0x02    /* uvar length + bytes follow */
#define EV_LOST 0x04       /* a loss record: uvar count instead of a site */
#define EV_FLAGS 0x08      /* uvar event flags (CT_EV_*) follow */
#define EV_PROC 0x10       /* a process record: uvar what, svar ts, uvar pid, tid, child */
#define EV_SILENT 0x20     /* uvar silent hits' worth (ct_event.silent) follows the flags (version 16) */
#define EV_EXTRA 0x40      /* svar ct_event.extra_ns follows those (version 17) */

struct ct_writer {
	struct ct_output out;
	int fd;
	char *path;
	char *space_hint; /* what to do when its disk is full */
	struct ct_buf meta, stats, ev;
	uint32_t ev_count;
	struct ct_event prev;
	bool have_prev;
	uint64_t chunk_base_ts;
	uint64_t events, bytes;
	uint64_t silent; /* the events' ct_event.silent, summed */
	int64_t extra_ns; /* ... and their ct_event.extra_ns */
	bool failed;
	bool running;   /* the header is out: the program runs from now on */
	int err;        /* errno of the write that failed, 0 for a short one */
	uint32_t ntypes; /* entries of the file's type table written */
};

static void put_kv(struct ct_buf *b, const char *key, const char *fmt, va_list ap)
{
	char *v;
	if (vasprintf(&v, fmt, ap) < 0)
		return;
	buf_str(b, key);
	buf_str(b, v);
	free(v);
}

struct ct_writer *ct_writer_create(const char *path)
{
	/* 0600: the file holds memory of the traced program.  Created at once
	 * (not renamed at the end): a killed tracer leaves a readable file. */
	struct ct_output out;
	if (ct_output_create_of(&out, path, CT_OUT_PRIVATE | CT_OUT_KEEP_OLD | CT_OUT_AT_ONCE, CT_FILE_MAGIC))
		return NULL;
	struct ct_writer *w = xcalloc(1, sizeof(*w));
	w->out = out;
	w->fd = out.fd;
	w->path = xstrdup(path ? path : "the temporary record file");
	/* (live without -o: the file is in $TMPDIR, which -o does not name) */
	const char *tmpdir = getenv("TMPDIR");
	w->space_hint = path ? xstrdup("free space, or record with -o to another disk")
			     : xasprintf("free space in %s, or give live -o FILE on another disk",
					 tmpdir && *tmpdir ? tmpdir : "/tmp");
	return w;
}

int ct_writer_reader_fd(const struct ct_writer *w)
{
	/* A description of its own (own offset), not a second open of the
	 * path, which could have been replaced meanwhile. */
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", w->fd);
	int fd = open(proc, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		ct_fail("cannot read back %s: %s", w->path, strerror(errno));
	return fd;
}

void ct_writer_meta(struct ct_writer *w, const char *key, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	put_kv(&w->meta, key, fmt, ap);
	va_end(ap);
}

void ct_writer_stat(struct ct_writer *w, const char *key, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	put_kv(&w->stats, key, fmt, ap);
	va_end(ap);
}

static const char *write_error(const struct ct_writer *w)
{
	return w->err ? strerror(w->err) : "short write";
}

static int write_all(struct ct_writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = write(w->fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			/* said now, once, while the program runs on; the
			 * exit status says it again (ct_writer_close) */
			if (!w->failed) {
				w->err = k < 0 ? errno : 0;
				if (w->running)
					ct_print_errorf("writing %s failed: %s; the trace ends here, the program runs on (%s)",
							w->path, write_error(w), w->space_hint);
			}
			w->failed = true;
			return -1;
		}
		b += k;
		n -= k;
		w->bytes += k;
	}
	return 0;
}

/* The CRC covers type, length and count as well as the payload, so that a
 * damaged header cannot silently drop or skip a chunk's events. */
static uint32_t chunk_crc(uint32_t type, uint32_t len, uint32_t count, const uint8_t *p)
{
	uint32_t hc[3] = {type, len, count};
	uLong crc = crc32(0, (const Bytef *)hc, sizeof(hc));
	if (len)
		crc = crc32(crc, p, len);
	return (uint32_t)crc;
}

/* One chunk = header + payload in a single write(), so that a tracer killed
 * mid-way leaves at most one partial chunk, which the CRC exposes. */
static int write_chunk(struct ct_writer *w, uint32_t type, const uint8_t *p, size_t n, uint32_t count)
{
	struct ct_buf b = {0};
	buf_u32(&b, type);
	buf_u32(&b, (uint32_t)n);
	buf_u32(&b, chunk_crc(type, (uint32_t)n, count, p));
	buf_u32(&b, count);
	buf_put(&b, p, n);
	int rc = w->failed ? -1 : write_all(w, b.p, b.n);
	buf_free(&b);
	return rc;
}

void ct_writer_tables(struct ct_writer *w, const struct ct_file_func *funcs, size_t nfuncs,
		      const struct ct_file_site *sites, size_t nsites)
{
	struct ct_buf b = {0};
	ct_writer_flush(w); /* keep chunks in stream order */
	buf_uvar(&b, nfuncs);
	for (size_t i = 0; i < nfuncs; i++) {
		buf_uvar(&b, funcs[i].id);
		buf_str(&b, funcs[i].name);
		buf_uvar(&b, funcs[i].entry);
		buf_uvar(&b, funcs[i].size);
		buf_uvar(&b, funcs[i].flags);
	}
	write_chunk(w, CT_CHUNK_FUNCS, b.p, b.n, (uint32_t)nfuncs);
	b.n = 0;
	buf_uvar(&b, nsites);
	for (size_t i = 0; i < nsites; i++) {
		buf_uvar(&b, sites[i].id);
		buf_uvar(&b, sites[i].addr);
		buf_uvar(&b, sites[i].func + 1ULL);
		buf_u8(&b, sites[i].kind);
		buf_uvar(&b, sites[i].target_func + 1ULL);
		buf_svar(&b, sites[i].key_adj);
		buf_uvar(&b, sites[i].call_site + 1ULL);
		buf_uvar(&b, sites[i].next + 1ULL);
		buf_uvar(&b, sites[i].flags); /* (version 13: a uvar) */
	}
	write_chunk(w, CT_CHUNK_SITES, b.p, b.n, (uint32_t)nsites);
	buf_free(&b);
}

int ct_writer_begin(struct ct_writer *w, const struct ct_file_func *funcs, size_t nfuncs,
		    const struct ct_file_site *sites, size_t nsites)
{
	uint8_t hdr[HEADER_SIZE] = {0};
	memcpy(hdr, CT_FILE_MAGIC, 8);
	uint32_t v = CT_FILE_VERSION, hs = HEADER_SIZE;
	memcpy(hdr + 8, &v, 4);
	memcpy(hdr + 12, &hs, 4);
	if (!write_all(w, hdr, sizeof(hdr))) {
		write_chunk(w, CT_CHUNK_META, w->meta.p, w->meta.n, 0);
		ct_writer_tables(w, funcs, nfuncs, sites, nsites);
	}
	if (w->failed) /* before the program ran: the caller says it */
		return ct_fail("cannot write %s: %s (%s)", w->path, write_error(w), w->space_hint);
	w->running = true;
	return 0;
}

uint32_t ct_type_ids_file(const struct ct_type_ids *ids, uint32_t id)
{
	if (!ids)
		return id;
	return id < ids->file.n ? ids->file.v[id] : CT_TYPE_NONE;
}

void ct_type_ids_free(struct ct_type_ids *ids)
{
	CT_VEC_FREE(ids->file);
}

void ct_writer_types(struct ct_writer *w, const struct ct_typetab *tt, struct ct_type_ids *ids)
{
	/* The file's entry 0 is the first table's "unknown"; every other
	 * table's entry 0 (CT_TYPE_NONE) is that one too. */
	if (!ids->file.n && tt->n && w->ntypes)
		CT_VEC_PUSH(ids->file, CT_TYPE_NONE);
	size_t from = ids->file.n;
	if (from >= tt->n)
		return;
	uint32_t first = w->ntypes;
	for (size_t i = from; i < tt->n; i++)
		CT_VEC_PUSH(ids->file, w->ntypes++);
	struct ct_buf b = {0};
	buf_uvar(&b, first);
	buf_uvar(&b, tt->n - from);
	for (size_t i = from; i < tt->n; i++) {
		const struct ct_type *t = &tt->v[i];
		buf_u8(&b, (uint8_t)t->kind);
		buf_str(&b, t->name);
		buf_uvar(&b, t->size);
		buf_uvar(&b, ct_type_ids_file(ids, t->elem));
		buf_uvar(&b, ct_type_ids_file(ids, t->key));
		buf_uvar(&b, t->len);
		bool values = t->kind == CT_K_ENUM || t->kind == CT_K_VARIANT;
		for (uint32_t k = 0; k < t->nfields; k++)
			values |= (t->fields[k].flags & CT_FIELD_BITS) != 0;
		buf_u8(&b, (uint8_t)(t->is_signed | (t->is_error << 1) | (t->is_text << 2) | (t->by_ref << 3) |
				     (values << 4)));
		buf_uvar(&b, t->go_rtype);
		buf_uvar(&b, t->nfields);
		for (uint32_t k = 0; k < t->nfields; k++) {
			if (values) {
				const struct ct_field *f = &t->fields[k];
				/* a bit-field's value: where its bits are */
				buf_svar(&b, f->flags & CT_FIELD_BITS ? f->bit_size | f->bit_off << 8 : f->value);
				buf_u8(&b, f->flags);
			}
			buf_str(&b, t->fields[k].name);
			buf_uvar(&b, t->fields[k].offset);
			buf_uvar(&b, ct_type_ids_file(ids, t->fields[k].type));
		}
	}
	ct_writer_flush(w); /* keep chunks in stream order */
	write_chunk(w, CT_CHUNK_TYPES, b.p, b.n, (uint32_t)(tt->n - from));
	buf_free(&b);
}

void ct_writer_fetch(struct ct_writer *w, struct ct_site_fetch *const *fetch, size_t nsites, uint32_t first_site,
		     const struct ct_type_ids *ids)
{
	struct ct_buf b = {0};
	uint32_t count = 0;
	for (size_t i = 0; i < nsites; i++)
		count += fetch[i] != NULL;
	if (!count)
		return;
	buf_uvar(&b, count);
	for (size_t i = 0; i < nsites; i++) {
		const struct ct_site_fetch *f = fetch[i];
		if (!f)
			continue;
		buf_uvar(&b, first_site + i);
		buf_uvar(&b, f->prog.size);
		buf_u8(&b, f->truncated);
		buf_uvar(&b, f->prog.nops);
		for (uint32_t k = 0; k < f->prog.nops; k++) {
			const struct ct_fetch_op *op = &f->prog.ops[k];
			buf_u8(&b, op->code);
			buf_u8(&b, op->reg);
			buf_uvar(&b, op->dst);
			buf_uvar(&b, op->size);
			buf_uvar(&b, op->src);
			buf_uvar(&b, op->src2);
			buf_uvar(&b, op->scale);
			buf_svar(&b, op->off);
		}
		buf_uvar(&b, f->nvals);
		for (uint32_t k = 0; k < f->nvals; k++) {
			const struct ct_val_desc *v = &f->vals[k];
			buf_str(&b, v->name);
			buf_uvar(&b, ct_type_ids_file(ids, v->type));
			buf_u8(&b, v->flags);
			buf_uvar(&b, v->npieces);
			for (uint32_t j = 0; j < v->npieces; j++) {
				const struct ct_val_piece *p = &v->pieces[j];
				buf_u8(&b, p->kind);
				buf_u8(&b, p->reg);
				buf_uvar(&b, p->size);
				buf_uvar(&b, p->value_off);
				buf_uvar(&b, p->slot);
				if (p->kind == CT_PIECE_CONST)
					buf_uvar(&b, p->literal);
			}
		}
	}
	ct_writer_flush(w);
	write_chunk(w, CT_CHUNK_FETCH, b.p, b.n, count);
	buf_free(&b);
}

void ct_writer_rtypes(struct ct_writer *w, uint32_t first_site, uint32_t nsites, const uint64_t *addrs,
		      const uint32_t *ids, size_t n, const struct ct_type_ids *map)
{
	struct ct_buf b = {0}; /* (N may be 0: the chunk widens the object's range) */
	buf_uvar(&b, first_site);
	buf_uvar(&b, nsites);
	buf_uvar(&b, n);
	for (size_t i = 0; i < n; i++) {
		buf_uvar(&b, addrs[i]);
		buf_uvar(&b, ct_type_ids_file(map, ids[i]));
	}
	ct_writer_flush(w);
	write_chunk(w, CT_CHUNK_RTYPES, b.p, b.n, (uint32_t)n);
	buf_free(&b);
}

void ct_writer_pcpos(struct ct_writer *w, uint32_t first_site, uint32_t nsites, const struct ct_pcpos *pos)
{
	struct ct_buf b = {0};
	buf_uvar(&b, first_site);
	buf_uvar(&b, nsites);
	buf_uvar(&b, 1);
	buf_uvar(&b, pos->pid);
	buf_uvar(&b, pos->pc);
	buf_str(&b, pos->func ? pos->func : "");
	buf_str(&b, pos->file ? pos->file : "");
	buf_uvar(&b, pos->line);
	ct_writer_flush(w); /* before the events that refer to it */
	write_chunk(w, CT_CHUNK_PCPOS, b.p, b.n, 1);
	buf_free(&b);
}

static void start_event(struct ct_writer *w, uint64_t ts)
{
	if (w->ev_count == 0) {
		/* Each chunk starts from an absolute timestamp and a clean
		 * "previous event", so chunks decode on their own. */
		w->ev.n = 0;
		buf_u64(&w->ev, ts);
		w->chunk_base_ts = ts;
		w->have_prev = false;
		memset(&w->prev, 0, sizeof(w->prev));
		w->prev.ts = ts;
	}
}

void ct_writer_event(struct ct_writer *w, const struct ct_event *e, const void *payload)
{
	start_event(w, e->ts);
	bool same = w->have_prev && e->pid == w->prev.pid && e->tid == w->prev.tid &&
		    e->goid == w->prev.goid;
	uint8_t head = (same ? 0 : EV_NEW_THREAD) | (e->len ? EV_PAYLOAD : 0) | (e->flags ? EV_FLAGS : 0) |
		       (e->silent ? EV_SILENT : 0) | (e->extra_ns ? EV_EXTRA : 0);
	buf_u8(&w->ev, head);
	buf_uvar(&w->ev, e->site);
	buf_svar(&w->ev, (int64_t)(e->ts - w->prev.ts));
	if (!same) {
		buf_uvar(&w->ev, e->pid);
		buf_uvar(&w->ev, e->tid);
		buf_uvar(&w->ev, e->goid);
	}
	buf_svar(&w->ev, (int64_t)(e->key - w->prev.key));
	if (e->len) {
		buf_uvar(&w->ev, e->len);
		buf_put(&w->ev, payload, e->len);
	}
	if (e->flags)
		buf_uvar(&w->ev, e->flags);
	if (e->silent) {
		buf_uvar(&w->ev, e->silent);
		w->silent += e->silent;
	}
	if (e->extra_ns) {
		buf_svar(&w->ev, e->extra_ns);
		w->extra_ns += e->extra_ns;
	}
	w->prev = *e;
	w->have_prev = true;
	w->ev_count++;
	w->events++;
	if (w->ev.n >= EVENT_CHUNK_MAX)
		ct_writer_flush(w);
}

void ct_writer_lost(struct ct_writer *w, uint64_t ts, uint64_t n)
{
	start_event(w, ts);
	buf_u8(&w->ev, EV_LOST);
	buf_uvar(&w->ev, n);
	buf_svar(&w->ev, (int64_t)(ts - w->prev.ts));
	w->prev.ts = ts;
	w->ev_count++;
	if (w->ev.n >= EVENT_CHUNK_MAX)
		ct_writer_flush(w);
}

static void proc_record(struct ct_writer *w, uint64_t ts, uint32_t what, uint32_t pid, uint32_t tid, uint32_t child)
{
	start_event(w, ts);
	buf_u8(&w->ev, EV_PROC);
	buf_uvar(&w->ev, what);
	buf_svar(&w->ev, (int64_t)(ts - w->prev.ts));
	buf_uvar(&w->ev, pid);
	buf_uvar(&w->ev, tid);
	buf_uvar(&w->ev, child);
	w->prev.ts = ts;
}

static void proc_done(struct ct_writer *w)
{
	w->ev_count++;
	if (w->ev.n >= EVENT_CHUNK_MAX)
		ct_writer_flush(w);
}

void ct_writer_proc(struct ct_writer *w, uint64_t ts, uint32_t what, uint32_t pid, uint32_t tid, uint32_t child)
{
	proc_record(w, ts, what, pid, tid, child);
	proc_done(w);
}

void ct_writer_stall(struct ct_writer *w, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t goid, uint32_t ns)
{
	proc_record(w, ts, CT_PROC_STALL, pid, tid, ns);
	buf_uvar(&w->ev, goid);
	proc_done(w);
}

void ct_writer_ready(struct ct_writer *w, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t goid)
{
	proc_record(w, ts, CT_PROC_READY, pid, tid, 0);
	buf_uvar(&w->ev, goid);
	proc_done(w);
}

void ct_writer_offcpu(struct ct_writer *w, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t goid, uint64_t ns,
		      uint32_t flags)
{
	proc_record(w, ts, CT_PROC_OFFCPU, pid, tid, flags);
	buf_uvar(&w->ev, goid);
	buf_uvar(&w->ev, ns);
	proc_done(w);
}

int ct_writer_flush(struct ct_writer *w)
{
	if (!w->ev_count)
		return 0;
	int rc = write_chunk(w, CT_CHUNK_EVENTS, w->ev.p, w->ev.n, w->ev_count);
	w->ev_count = 0;
	w->ev.n = 0;
	return rc;
}

uint64_t ct_writer_events(const struct ct_writer *w)
{
	return w->events;
}

uint64_t ct_writer_silent(const struct ct_writer *w)
{
	return w->silent;
}

int64_t ct_writer_extra_ns(const struct ct_writer *w)
{
	return w->extra_ns;
}

uint64_t ct_writer_bytes(const struct ct_writer *w)
{
	return w->bytes + w->ev.n;
}

static void free_writer(struct ct_writer *w)
{
	buf_free(&w->meta);
	buf_free(&w->stats);
	buf_free(&w->ev);
	free(w->path);
	free(w->space_hint);
	free(w);
}

int ct_writer_close(struct ct_writer *w)
{
	ct_writer_flush(w);
	write_chunk(w, CT_CHUNK_STATS, w->stats.p, w->stats.n, 0);
	/* a write that failed while the program ran was said then (write_all) */
	int rc = !w->failed ? 0 : w->running ? ct_fail_said() : ct_fail("cannot write %s: %s", w->path, write_error(w));
	if (fsync(w->fd) != 0 && errno != EINVAL && !rc)
		rc = ct_fail("writing %s failed: %s", w->path, strerror(errno));
	if (ct_output_commit(&w->out) && !w->failed)
		rc = -1;
	free_writer(w);
	return rc;
}

void ct_writer_discard(struct ct_writer *w)
{
	ct_output_discard(&w->out);
	free_writer(w);
}

/* ---------------- reading ---------------- */

/* Reads one chunk at the current position.  Returns 1 ok, 0 at a clean end
 * of file, -1 for an incomplete or damaged chunk. */
static int read_chunk(FILE *f, uint32_t *type, uint32_t *count, struct ct_buf *out)
{
	uint32_t h[4];
	size_t k = fread(h, 1, sizeof(h), f);
	if (k == 0)
		return 0;
	if (k != sizeof(h) || h[1] > MAX_CHUNK)
		return -1;
	out->n = 0;
	buf_reserve(out, h[1]);
	if (fread(out->p, 1, h[1], f) != h[1])
		return -1;
	out->n = h[1];
	if (chunk_crc(h[0], h[1], h[3], out->p) != h[2])
		return -1;
	*type = h[0];
	*count = h[3];
	return 1;
}

static void read_kvs(const struct ct_buf *b, void *vecp)
{
	CT_VEC(struct ct_kv) *vec = vecp;
	struct ct_rd r = ct_rd_of(b->p, b->n);
	while (r.p < r.end && !r.bad) {
		struct ct_kv kv;
		kv.key = rd_str(&r);
		kv.val = rd_str(&r);
		CT_VEC_PUSH(*vec, kv);
	}
}

const char *ct_kv_get(const struct ct_kv *kv, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(kv[i].key, key))
			return kv[i].val;
	return NULL;
}

const char *ct_trace_meta(const struct ct_trace *t, const char *key)
{
	return ct_kv_get(t->meta.v, t->meta.n, key);
}

const char *ct_trace_stat(const struct ct_trace *t, const char *key)
{
	return ct_kv_get(t->stats.v, t->stats.n, key);
}

bool ct_file_func_runs_into(const struct ct_file_func *from, const struct ct_file_func *to)
{
	/* (TO inside FROM: overlapping symbols, assembly whose first part runs
	 * on into a second entry, `overlap_b` in `overlap_a`) */
	return ((from->flags & CT_FN_FALLS) && from->entry + from->size == to->entry) ||
	       (to->entry > from->entry && to->entry < from->entry + from->size);
}

bool ct_file_func_is_go(const struct ct_file_func *f)
{
	return (f->flags & CT_FN_GO) != 0;
}

bool ct_file_func_parks_only(const struct ct_file_func *f)
{
	return (f->flags & CT_FN_PARKS) != 0;
}

bool ct_file_func_is_asm(const struct ct_file_func *f)
{
	return (f->flags & CT_FN_ASM) != 0;
}

bool ct_trace_func_is_go(const struct ct_trace *t, uint32_t func)
{
	return func < t->nfuncs && ct_file_func_is_go(&t->funcs[func]);
}

bool ct_trace_has_go(const struct ct_trace *t)
{
	for (size_t i = 0; i < t->nfuncs; i++)
		if (ct_file_func_is_go(&t->funcs[i]))
			return true;
	return false;
}

/* FUNCS and SITES chunks: the first ones, and more for binaries that
 * started later (--follow); ids continue the tables. */
/* Tables are read as hostile: a count is checked against the bytes left
 * (each entry takes at least MIN_BYTES) before anything is allocated for it,
 * so a lying count costs nothing. */
static bool count_ok(const struct ct_rd *r, uint64_t n, size_t min_bytes)
{
	return !r->bad && n <= (size_t)(r->end - r->p) / min_bytes;
}

static bool read_funcs(struct ct_trace *t, const struct ct_buf *b)
{
	struct ct_rd r = ct_rd_of(b->p, b->n);
	uint64_t n = rd_uvar(&r);
	if (!count_ok(&r, n, 5))
		return false;
	struct ct_rd peek = r;
	if (n && rd_uvar(&peek) < t->nfuncs)
		return true; /* already read (a live reader meets chunks twice) */
	t->funcs = xrealloc(t->funcs, (t->nfuncs + n + 1) * sizeof(*t->funcs));
	t->func_names = xrealloc(t->func_names, (t->nfuncs + n + 1) * sizeof(*t->func_names));
	for (uint64_t i = 0; i < n && !r.bad; i++) {
		struct ct_file_func *f = &t->funcs[t->nfuncs];
		f->id = (uint32_t)rd_uvar(&r);
		f->name = rd_str(&r);
		/* (a name is printed as it is by the text outputs: an escape
		 * sequence in a symbol table must not reach a terminal) */
		for (char *c = f->name; c && *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		f->entry = rd_uvar(&r);
		f->size = rd_uvar(&r);
		f->flags = (uint32_t)rd_uvar(&r);
		ct_names_init(&t->func_names[t->nfuncs], f->name, ct_func_symbol_len(f->name, f->flags));
		if (f->id != t->nfuncs)
			r.bad = true;
		t->nfuncs++;
	}
	return !r.bad;
}

static bool read_sites(struct ct_trace *t, const struct ct_buf *b)
{
	struct ct_rd r = ct_rd_of(b->p, b->n);
	uint64_t n = rd_uvar(&r);
	if (!count_ok(&r, n, 5))
		return false;
	struct ct_rd peek = r;
	if (n && rd_uvar(&peek) < t->nsites)
		return true; /* already read */
	size_t old = t->nsites;
	t->sites = xrealloc(t->sites, (t->nsites + n + 1) * sizeof(*t->sites));
	for (uint64_t i = 0; i < n && !r.bad; i++) {
		struct ct_file_site *s = &t->sites[t->nsites];
		s->id = (uint32_t)rd_uvar(&r);
		s->addr = rd_uvar(&r);
		s->func = (uint32_t)(rd_uvar(&r) - 1);
		s->kind = rd_u8(&r);
		s->target_func = (uint32_t)(rd_uvar(&r) - 1);
		s->key_adj = 0;
		s->call_site = s->next = UINT32_MAX;
		s->flags = 0;
		if (t->version >= 4) {
			s->key_adj = (int32_t)rd_svar(&r);
			s->call_site = (uint32_t)(rd_uvar(&r) - 1);
			s->next = (uint32_t)(rd_uvar(&r) - 1);
			s->flags = t->version >= 13 ? (uint16_t)rd_uvar(&r) : rd_u8(&r);
		}
		/* a site that starts or ends a call names its function (markers
		 * such as goexit have none) */
		bool needs_func = s->kind <= CT_SITE_RESTART || s->kind == CT_SITE_CALL || s->kind == CT_SITE_CHECK ||
				  s->kind == CT_SITE_SPILL || s->kind == CT_SITE_TAILRES || s->kind == CT_SITE_TAILDIFF;
		if (s->id != t->nsites || (s->func == CT_NOFUNC && needs_func) ||
		    (s->func != CT_NOFUNC && s->func >= t->nfuncs) ||
		    (s->target_func != CT_NOFUNC && s->target_func >= t->nfuncs) ||
		    s->kind >= CT_SITE_NKINDS || (s->kind == CT_SITE_SPILL && t->version < 7) ||
		    (s->kind == CT_SITE_GOREADY && t->version < 20) || (s->kind == CT_SITE_CATCH && t->version < 21) ||
		    (s->kind == CT_SITE_TAILRES && t->version < 9) || (s->kind == CT_SITE_TAILDIFF && t->version < 10) || (s->call_site != UINT32_MAX && s->call_site >= old + n) ||
		    (s->next != UINT32_MAX && s->next >= old + n))
			r.bad = true;
		t->nsites++;
	}
	if (t->fetch) {
		t->fetch = xrealloc(t->fetch, (t->nsites + 1) * sizeof(*t->fetch));
		memset(t->fetch + old, 0, (t->nsites - old + 1) * sizeof(*t->fetch));
	}
	return !r.bad;
}

/* A type smaller than what its kind's decoder reads (render/values.c) is a
 * lie no compiler tells: such a type is read as unknown (shown raw). */
static bool kind_fits_size(const struct ct_type *t)
{
	switch (t->kind) {
	case CT_K_BOOL:
		return t->size >= 1;
	case CT_K_FLOAT:
		return t->size == 4 || t->size >= 8;
	case CT_K_COMPLEX:
		return t->size == 8 || t->size >= 16;
	case CT_K_PTR:
	case CT_K_MAP:
	case CT_K_CHAN:
	case CT_K_FUNC:
	case CT_K_CSTRING:
	case CT_K_REF:
		return t->size >= 8;
	case CT_K_STRING:
	case CT_K_IFACE:
	case CT_K_EFACE:
		return t->size >= 16;
	case CT_K_SLICE:
		return t->size >= 24;
	default:
		return true;
	}
}

static bool read_types(struct ct_trace *t, const struct ct_buf *b)
{
	struct ct_rd r = ct_rd_of(b->p, b->n);
	uint64_t first = rd_uvar(&r), n = rd_uvar(&r);
	if (r.bad || first != t->types.n || !count_ok(&r, n, 9))
		return false;
	t->types.v = xrealloc(t->types.v, (first + n) * sizeof(*t->types.v));
	for (uint64_t i = 0; i < n && !r.bad; i++) {
		struct ct_type *ty = &t->types.v[t->types.n++];
		memset(ty, 0, sizeof(*ty));
		ty->kind = rd_u8(&r);
		ty->name = rd_str(&r);
		ty->size = (uint32_t)rd_uvar(&r);
		ty->elem = (uint32_t)rd_uvar(&r);
		ty->key = (uint32_t)rd_uvar(&r);
		ty->len = (uint32_t)rd_uvar(&r);
		uint8_t fl = rd_u8(&r);
		ty->is_signed = fl & 1;
		ty->is_error = (fl >> 1) & 1;
		ty->is_text = (fl >> 2) & 1;
		ty->by_ref = (fl >> 3) & 1;
		ty->go_rtype = rd_uvar(&r);
		if (!kind_fits_size(ty))
			ty->kind = CT_K_UNKNOWN;
		uint64_t nf = rd_uvar(&r);
		if (!count_ok(&r, nf, 3)) {
			r.bad = true;
			break;
		}
		ty->fields = xcalloc(nf ? nf : 1, sizeof(*ty->fields));
		for (uint64_t k = 0; k < nf && !r.bad; k++, ty->nfields++) {
			if (fl & 16) {
				ty->fields[k].value = rd_svar(&r);
				ty->fields[k].flags = rd_u8(&r);
			}
			bool lie = false;
			if (ty->fields[k].flags & CT_FIELD_BITS) {
				int64_t v = ty->fields[k].value;
				ty->fields[k].bit_size = (uint8_t)v;
				ty->fields[k].bit_off = (uint8_t)(v >> 8);
				lie = v < 1 || (v & 0xff) == 0 || (v & 0xff) > 64 || (v >> 8) > 7;
			}
			ty->fields[k].name = rd_str(&r);
			ty->fields[k].offset = (uint32_t)rd_uvar(&r);
			ty->fields[k].type = (uint32_t)rd_uvar(&r);
			if (lie) { /* bits nowhere: the field is read as undescribed */
				ty->fields[k].flags &= ~CT_FIELD_BITS;
				ty->fields[k].type = CT_TYPE_NONE;
			}
		}
	}
	return !r.bad;
}

/* The payload layout: every op's bytes inside the payload and apart from
 * every other op's (the writer lays them out so), pointers read from inside
 * it.  Otherwise a register op could overwrite a memory op's length header
 * and make a snapshot claim bytes the payload does not hold. */
static bool fetch_layout_ok(const struct ct_fetch *f)
{
	uint32_t lo[CT_MAX_OPS], hi[CT_MAX_OPS];
	for (uint32_t i = 0; i < f->nops; i++) {
		const struct ct_fetch_op *op = &f->ops[i];
		lo[i] = op->dst;
		hi[i] = op->dst + (ct_fetch_op_is_mem(op->code) ? CT_MEM_HDR + (uint32_t)op->size : 8u);
		if (hi[i] > f->size)
			return false;
		if ((op->code == CT_OP_DEREF || op->code == CT_OP_DEREF_LEN || op->code == CT_OP_DEREF_STR ||
		     op->code == CT_OP_DEREF_SPAN) &&
		    op->src + 8u > f->size)
			return false;
		if ((op->code == CT_OP_DEREF_LEN || op->code == CT_OP_DEREF_SPAN) && op->src2 + 8u > f->size)
			return false;
		for (uint32_t j = 0; j < i; j++)
			if (lo[i] < hi[j] && lo[j] < hi[i])
				return false;
	}
	return true;
}

static bool read_fetch(struct ct_trace *t, const struct ct_buf *b)
{
	struct ct_rd r = ct_rd_of(b->p, b->n);
	uint64_t count = rd_uvar(&r);
	if (!t->fetch)
		t->fetch = xcalloc(t->nsites ? t->nsites : 1, sizeof(*t->fetch));
	for (uint64_t i = 0; i < count && !r.bad; i++) {
		uint64_t site = rd_uvar(&r);
		if (site >= t->nsites || t->fetch[site])
			return false;
		struct ct_site_fetch *f = xcalloc(1, sizeof(*f));
		t->fetch[site] = f;
		f->prog.size = (uint16_t)rd_uvar(&r);
		f->truncated = rd_u8(&r);
		uint64_t nops = rd_uvar(&r);
		if (nops > CT_MAX_OPS || f->prog.size > CT_MAX_PAYLOAD)
			return false;
		f->prog.nops = (uint16_t)nops;
		for (uint64_t k = 0; k < nops; k++) {
			struct ct_fetch_op *op = &f->prog.ops[k];
			op->code = rd_u8(&r);
			op->reg = rd_u8(&r);
			op->dst = (uint16_t)rd_uvar(&r);
			op->size = (uint16_t)rd_uvar(&r);
			op->src = (uint16_t)rd_uvar(&r);
			op->src2 = (uint16_t)rd_uvar(&r);
			op->scale = (uint16_t)rd_uvar(&r);
			op->off = (int32_t)rd_svar(&r);
		}
		if (!fetch_layout_ok(&f->prog))
			return false;
		uint64_t nvals = rd_uvar(&r);
		if (!count_ok(&r, nvals, 4))
			return false;
		f->vals = xcalloc(nvals ? nvals : 1, sizeof(*f->vals));
		for (uint64_t k = 0; k < nvals && !r.bad; k++) {
			struct ct_val_desc *v = &f->vals[f->nvals++]; /* counted now: freed however it ends */
			v->name = rd_str(&r);
			v->type = (uint32_t)rd_uvar(&r);
			v->flags = rd_u8(&r);
			uint64_t np = rd_uvar(&r);
			if (!count_ok(&r, np, 5))
				return false;
			v->pieces = xcalloc(np ? np : 1, sizeof(*v->pieces));
			for (uint64_t j = 0; j < np && !r.bad; j++, v->npieces++) {
				struct ct_val_piece *p = &v->pieces[j];
				p->kind = rd_u8(&r);
				p->reg = rd_u8(&r);
				p->size = (uint16_t)rd_uvar(&r);
				p->value_off = (uint32_t)rd_uvar(&r);
				p->slot = (uint16_t)rd_uvar(&r);
				if (p->kind == CT_PIECE_CONST && t->version >= 5)
					p->literal = rd_uvar(&r);
			}
		}
	}
	return !r.bad;
}

/* The Go runtime entries of the object an RTYPES or PCPOS chunk names
 * (version 8: its site range; before: one for all).  An object is known by
 * its first site; its range grows with the call sites found while
 * recording (they continue the program's when it is the only object).
 * Ranges of different objects never overlap: a file saying otherwise is
 * damaged. */
#define MAX_GO_OBJECTS 256 /* of one file: CT_MAX_BINS in practice */

static struct ct_go_object *go_object(struct ct_trace *t, struct ct_rd *r)
{
	uint64_t first = 0, n = UINT32_MAX;
	if (t->version >= 8) {
		first = rd_uvar(r);
		n = rd_uvar(r);
		if (r->bad || !n || first + n > t->nsites || first + n < first)
			return NULL;
	}
	struct ct_go_object *same = NULL;
	for (size_t i = 0; i < t->go_objects.n; i++) {
		struct ct_go_object *o = &t->go_objects.v[i];
		if (o->first_site == first)
			same = o;
		else if (first < (uint64_t)o->first_site + o->nsites && o->first_site < first + n)
			return NULL;
	}
	if (same) {
		if (n > same->nsites)
			same->nsites = (uint32_t)n;
		return same;
	}
	if (t->go_objects.n >= MAX_GO_OBJECTS)
		return NULL;
	struct ct_go_object o = {.first_site = (uint32_t)first, .nsites = (uint32_t)n};
	CT_VEC_PUSH(t->go_objects, o);
	return &t->go_objects.v[t->go_objects.n - 1];
}

static const struct ct_go_object *go_object_at(const struct ct_trace *t, uint32_t site)
{
	for (size_t i = 0; i < t->go_objects.n; i++) {
		const struct ct_go_object *o = &t->go_objects.v[i];
		if (site >= o->first_site && site - o->first_site < o->nsites)
			return o;
	}
	return NULL;
}

/* The entries for the events of SITE, or NULL.  A site found while
 * recording after other objects' ranges (the program's, with libraries
 * traced) is its function's object's: that of the function's own sites. */
static const struct ct_go_object *go_object_of(const struct ct_trace *t, uint32_t site)
{
	const struct ct_go_object *o = go_object_at(t, site);
	if (o || site >= t->nsites || t->sites[site].func >= t->nfuncs)
		return o;
	struct ct_trace *w = (struct ct_trace *)t; /* a cache of the tables */
	if (w->first_sites_of != t->nsites) {
		free(w->first_site);
		w->first_site = xmalloc((t->nfuncs ? t->nfuncs : 1) * sizeof(*w->first_site));
		memset(w->first_site, 0xff, (t->nfuncs ? t->nfuncs : 1) * sizeof(*w->first_site));
		for (size_t i = t->nsites; i-- > 0;)
			if (t->sites[i].func < t->nfuncs)
				w->first_site[t->sites[i].func] = (uint32_t)i;
		w->first_sites_of = t->nsites;
	}
	uint32_t own = w->first_site[t->sites[site].func];
	return own != site && own != UINT32_MAX ? go_object_at(t, own) : NULL;
}

static bool read_rtypes(struct ct_trace *t, const struct ct_buf *b)
{
	struct ct_rd r = ct_rd_of(b->p, b->n);
	struct ct_go_object *o = go_object(t, &r);
	if (!o)
		return false;
	uint64_t n = rd_uvar(&r);
	for (uint64_t i = 0; i < n && !r.bad; i++) {
		uint64_t addr = rd_uvar(&r), id = rd_uvar(&r);
		if (!r.bad && id < UINT32_MAX)
			map_put(&o->rtypes, addr, (void *)(uintptr_t)(id + 1));
	}
	return !r.bad;
}

uint32_t ct_trace_rtype(const struct ct_trace *t, uint32_t site, uint64_t rtype)
{
	const struct ct_go_object *o = go_object_of(t, site);
	uintptr_t id = o ? (uintptr_t)map_get((struct ct_map *)&o->rtypes, rtype) : 0;
	return id ? (uint32_t)(id - 1) : CT_TYPE_NONE;
}

static uint64_t pcpos_key(uint32_t pid, uint64_t pc)
{
	return (uint64_t)pid << 47 ^ pc;
}

static void pcpos_free(struct ct_pcpos *pos)
{
	free(pos->func);
	free(pos->file);
	free(pos);
}

static bool read_pcpos(struct ct_trace *t, const struct ct_buf *b)
{
	struct ct_rd r = ct_rd_of(b->p, b->n);
	struct ct_go_object *o = go_object(t, &r);
	if (!o)
		return false;
	uint64_t n = rd_uvar(&r);
	if (!count_ok(&r, n, 5))
		return false;
	for (uint64_t i = 0; i < n && !r.bad; i++) {
		struct ct_pcpos *pos = xcalloc(1, sizeof(*pos));
		pos->pid = (uint32_t)rd_uvar(&r);
		pos->pc = rd_uvar(&r);
		pos->func = rd_str(&r);
		pos->file = rd_str(&r);
		pos->line = (uint32_t)rd_uvar(&r);
		if (r.bad || !pos->func || !pos->file) {
			pcpos_free(pos);
			break;
		}
		void **slot = map_slot(&o->pcpos, pcpos_key(pos->pid, pos->pc), true);
		if (*slot) /* the same address twice: keep the first */
			pcpos_free(pos);
		else
			*slot = pos;
	}
	return !r.bad;
}

const struct ct_pcpos *ct_trace_pcpos(const struct ct_trace *t, uint32_t site, uint32_t pid, uint64_t pc)
{
	const struct ct_go_object *o = go_object_of(t, site);
	/* keys of different addresses may collide: the entry must be this one */
	const struct ct_pcpos *pos = o ? map_get((struct ct_map *)&o->pcpos, pcpos_key(pid, pc)) : NULL;
	return pos && pos->pid == pid && pos->pc == pc ? pos : NULL;
}

/* Tables that may come anywhere in the file (types found while recording). */
static bool read_side_chunk(struct ct_trace *t, uint32_t type, const struct ct_buf *b)
{
	switch (type) {
	case CT_CHUNK_FUNCS:
		return read_funcs(t, b);
	case CT_CHUNK_SITES:
		return read_sites(t, b);
	case CT_CHUNK_TYPES:
		return read_types(t, b);
	case CT_CHUNK_FETCH:
		return read_fetch(t, b);
	case CT_CHUNK_RTYPES:
		return read_rtypes(t, b);
	case CT_CHUNK_PCPOS:
		return read_pcpos(t, b);
	default:
		return true;
	}
}

static int bad_file(struct ct_trace *t, const char *what)
{
	ct_fail("%s is damaged (%s); it cannot be replayed", t->path, what);
	ct_trace_close(t);
	return -1;
}

int ct_trace_open(struct ct_trace *t, const char *path)
{
	int fd = ct_input_open(path);
	if (fd < 0) {
		memset(t, 0, sizeof(*t));
		if (errno == ENOENT)
			return ct_fail("%s does not exist; record a trace first with: calltrace record -- PROGRAM",
				       path);
		return -1;
	}
	return ct_trace_open_fd(t, fd, path);
}

int ct_trace_open_fd(struct ct_trace *t, int fd, const char *path)
{
	memset(t, 0, sizeof(*t));
	t->path = xstrdup(path);
	t->f = fdopen(fd, "rb");
	if (!t->f) {
		int e = errno;
		close(fd);
		ct_trace_close(t);
		return ct_fail("cannot open %s: %s", path, strerror(e));
	}
	fseek(t->f, 0, SEEK_END);
	t->file_size = ftell(t->f);
	rewind(t->f);
	uint8_t hdr[HEADER_SIZE];
	if (fread(hdr, 1, sizeof(hdr), t->f) != sizeof(hdr) || memcmp(hdr, CT_FILE_MAGIC, 8)) {
		ct_trace_close(t);
		return ct_fail("%s is not a calltrace record file", path);
	}
	uint32_t ver, hs;
	memcpy(&ver, hdr + 8, 4);
	memcpy(&hs, hdr + 12, 4);
	if (ver > CT_FILE_VERSION) {
		ct_trace_close(t);
		return ct_fail("%s has format version %u, newer than this calltrace (%u): upgrade calltrace",
			       path, ver, CT_FILE_VERSION);
	}
	if (hs < HEADER_SIZE || fseek(t->f, hs, SEEK_SET))
		return bad_file(t, "bad header size");
	t->version = ver;

	struct ct_buf b = {0};
	bool have_funcs = false, have_sites = false;
	while (!(have_funcs && have_sites)) {
		uint32_t type, count;
		int rc = read_chunk(t->f, &type, &count, &b);
		if (rc <= 0) {
			buf_free(&b);
			return bad_file(t, "it ends before the function and site tables");
		}
		bool bad = false;
		if (type == CT_CHUNK_META) {
			read_kvs(&b, &t->meta);
		} else if (type == CT_CHUNK_FUNCS) {
			bad = !read_funcs(t, &b);
			have_funcs = true;
		} else if (type == CT_CHUNK_SITES) {
			bad = !read_sites(t, &b);
			have_sites = true;
		}
		if (bad) {
			buf_free(&b);
			return bad_file(t, "table contents");
		}
	}
	t->data_start = ftell(t->f);
	const char *start = ct_trace_meta(t, "clock.start_ns");
	if (start)
		t->first_ts = strtoull(start, NULL, 10);

	/* Stats live in the last chunk: scan chunk headers (cheap seeks) to
	 * find it and to learn whether the file is whole. */
	for (;;) {
		uint32_t h[4];
		long at = ftell(t->f);
		if (fread(h, 1, sizeof(h), t->f) != sizeof(h)) {
			if (ftell(t->f) != at)
				t->truncated = true;
			break;
		}
		if (h[1] > MAX_CHUNK || at + (long)sizeof(h) + (long)h[1] > t->file_size) {
			t->truncated = true;
			break;
		}
		if (h[0] == CT_CHUNK_STATS || h[0] == CT_CHUNK_TYPES || h[0] == CT_CHUNK_FETCH ||
		    h[0] == CT_CHUNK_RTYPES || h[0] == CT_CHUNK_FUNCS || h[0] == CT_CHUNK_SITES ||
		    h[0] == CT_CHUNK_PCPOS) {
			uint32_t type, count;
			fseek(t->f, at, SEEK_SET);
			if (read_chunk(t->f, &type, &count, &b) != 1) {
				t->truncated = true;
				break;
			}
			if (type == CT_CHUNK_STATS)
				read_kvs(&b, &t->stats);
			else if (!read_side_chunk(t, type, &b)) {
				buf_free(&b);
				return bad_file(t, "argument tables");
			}
			continue;
		}
		fseek(t->f, h[1], SEEK_CUR);
	}
	buf_free(&b);
	return 0;
}

void ct_trace_close(struct ct_trace *t)
{
	if (t->f)
		fclose(t->f);
	for (size_t i = 0; i < t->meta.n; i++)
		free(t->meta.v[i].key), free(t->meta.v[i].val);
	for (size_t i = 0; i < t->stats.n; i++)
		free(t->stats.v[i].key), free(t->stats.v[i].val);
	CT_VEC_FREE(t->meta);
	CT_VEC_FREE(t->stats);
	for (size_t i = 0; i < t->nfuncs; i++) {
		free(t->funcs[i].name);
		ct_names_free(&t->func_names[i]);
	}
	free(t->funcs);
	free(t->func_names);
	if (t->fetch)
		for (size_t i = 0; i < t->nsites; i++)
			if (t->fetch[i]) {
				ct_site_fetch_free(t->fetch[i]);
				free(t->fetch[i]);
			}
	free(t->fetch);
	ct_typetab_free(&t->types);
	for (size_t i = 0; i < t->go_objects.n; i++) {
		struct ct_go_object *o = &t->go_objects.v[i];
		map_free(&o->rtypes);
		MAP_FOREACH(&o->pcpos, k) pcpos_free(o->pcpos.vals[k]);
		map_free(&o->pcpos);
	}
	CT_VEC_FREE(t->go_objects);
	free(t->first_site);
	t->first_site = NULL;
	t->first_sites_of = 0;
	free(t->sites);
	free(t->path);
	memset(t, 0, sizeof(*t));
}

void ct_iter_init(struct ct_event_iter *it, struct ct_trace *t)
{
	memset(it, 0, sizeof(*it));
	it->t = t;
	it->pos = t->data_start;
	t->event_passes++;
}

static bool next_chunk(struct ct_event_iter *it)
{
	for (;;) {
		uint32_t type, count;
		fseek(it->t->f, it->pos, SEEK_SET);
		int rc = read_chunk(it->t->f, &type, &count, &it->chunk);
		if (rc <= 0) {
			/* Following a file being written, an incomplete chunk is
			 * one not written yet: try again later. */
			if (rc < 0 && !it->follow)
				it->t->truncated = true;
			clearerr(it->t->f);
			return false;
		}
		it->pos = ftell(it->t->f);
		if (it->follow && type != CT_CHUNK_EVENTS)
			read_side_chunk(it->t, type, &it->chunk); /* tables that grew while recording */
		if (type != CT_CHUNK_EVENTS || !count)
			continue;
		it->rd = ct_rd_of(it->chunk.p, it->chunk.n);
		it->left = count;
		memset(&it->prev, 0, sizeof(it->prev));
		it->prev.ts = rd_u64(&it->rd);
		return !it->rd.bad;
	}
}

bool ct_iter_next(struct ct_event_iter *it, struct ct_rec_event *ev)
{
	if (it->done)
		return false;
	while (!it->left) {
		if (!next_chunk(it)) {
			it->done = !it->follow;
			return false;
		}
	}
	struct ct_rd *r = &it->rd;
	struct ct_rec_event *p = &it->prev;
	uint8_t head = rd_u8(r);
	it->left--;
	if (head & EV_PROC) {
		*ev = *p;
		ev->kind = CT_EV_PROC_REC;
		ev->proc = (uint8_t)rd_uvar(r);
		ev->ts = p->ts + rd_svar(r);
		ev->pid = (uint32_t)rd_uvar(r);
		ev->tid = (uint32_t)rd_uvar(r);
		ev->child = (uint32_t)rd_uvar(r);
		ev->goid = ev->proc == CT_PROC_STALL || ev->proc == CT_PROC_OFFCPU || ev->proc == CT_PROC_READY ? rd_uvar(r)
															 : 0;
		if (ev->proc == CT_PROC_OFFCPU)
			ev->key = rd_uvar(r);
		ev->flags = 0;
		ev->silent = 0;
		ev->extra_ns = 0;
		ev->payload = NULL;
		ev->payload_len = 0;
		p->ts = ev->ts;
		if (ev->proc < CT_PROC_FORK ||
		    (ev->proc > CT_PROC_PROBES_IN && ev->proc != CT_PROC_OFFCPU && ev->proc != CT_PROC_READY) ||
		    ev->proc == CT_PROC_CALLER)
			r->bad = true;
	} else if (head & EV_LOST) {
		*ev = *p;
		ev->silent = 0;
		ev->extra_ns = 0;
		ev->kind = CT_EV_LOST;
		ev->lost = rd_uvar(r);
		ev->ts = p->ts + rd_svar(r);
		ev->payload = NULL;
		ev->payload_len = 0;
		p->ts = ev->ts;
	} else {
		ev->site = (uint32_t)rd_uvar(r);
		ev->ts = p->ts + rd_svar(r);
		if (head & EV_NEW_THREAD) {
			ev->pid = (uint32_t)rd_uvar(r);
			ev->tid = (uint32_t)rd_uvar(r);
			ev->goid = rd_uvar(r);
		} else {
			ev->pid = p->pid;
			ev->tid = p->tid;
			ev->goid = p->goid;
		}
		ev->key = p->key + rd_svar(r);
		ev->lost = 0;
		ev->proc = 0;
		ev->child = 0;
		ev->payload = NULL;
		ev->payload_len = 0;
		if (head & EV_PAYLOAD) {
			ev->payload_len = (uint32_t)rd_uvar(r);
			ev->payload = rd_bytes(r, ev->payload_len);
		}
		ev->flags = (head & EV_FLAGS) ? (uint16_t)rd_uvar(r) : 0;
		ev->silent = (head & EV_SILENT) ? (uint32_t)rd_uvar(r) : 0;
		ev->extra_ns = (head & EV_EXTRA) ? (int32_t)rd_svar(r) : 0;
		if (ev->site >= it->t->nsites)
			r->bad = true;
		else
			ev->kind = it->t->sites[ev->site].kind;
		*p = *ev;
	}
	if (r->bad) {
		/* CRC passed but the contents do not parse: a writer bug or a
		 * deliberately forged file.  Stop here rather than guess. */
		it->t->truncated = true;
		it->done = true;
		return false;
	}
	return true;
}

void ct_iter_free(struct ct_event_iter *it)
{
	buf_free(&it->chunk);
}
