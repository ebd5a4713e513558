/* The record file (src/format/tracefile.c): round trip of every field,
 * file mode and .old, truncation at many lengths, corruption, foreign and
 * future files, and the encoded size per event. */
#include "unit.h"

#include "plan/sites.h"
#include "probes/event.h"
#include "format/tracefile.h"
#include "util/util.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- temp dir ---- */
static char tmpdir[256];

static const char *tdir(void)
{
	if (!tmpdir[0]) {
		const char *base = getenv("TMPDIR");
		snprintf(tmpdir, sizeof(tmpdir), "%s/ct-tracefile-XXXXXX", base && *base ? base : "/tmp");
		if (!mkdtemp(tmpdir)) {
			snprintf(tmpdir, sizeof(tmpdir), "/tmp/ct-tracefile-XXXXXX");
			if (!mkdtemp(tmpdir))
				abort();
		}
	}
	return tmpdir;
}

static char *tpath(const char *name)
{
	return xasprintf("%s/%s", tdir(), name);
}

__attribute__((destructor)) static void rm_tdir(void)
{
	if (!tmpdir[0])
		return;
	DIR *d = opendir(tmpdir);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
				char *p = tpath(de->d_name);
				unlink(p);
				free(p);
			}
		closedir(d);
	}
	rmdir(tmpdir);
}

/* ---- deterministic generator ---- */
static uint64_t rng_state;
static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* ---- tables ---- */
static char long_name[400];

static struct ct_file_func funcs[] = {
	{0, "main.main", 0x401000, 0x80, 1},
	{1, "main.(*Server).handle", 0x401080, 0x2000, 0},
	{2, "runtime.goexit1", 0xffffffff00001000ULL, 1, 0xffffffffu},
	{3, NULL /* long_name */, 0x7fffffffffffULL, 0, 7},
	{4, "", 0, 0, 0},
};
#define NF (sizeof(funcs) / sizeof(funcs[0]))

static const struct ct_file_site sites[] = {
	{0, 0x401004, 0, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{1, 0x40107f, 0, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{2, 0x401084, 1, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{3, 0x401100, 1, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{4, 0x401200, 1, CT_SITE_TAIL, 0, 0, UINT32_MAX, UINT32_MAX, 0},
	{5, 0x401300, 1, CT_SITE_TAIL, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{6, 0x401400, 1, CT_SITE_RESTART, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{7, 0xffffffff00001000ULL, CT_NOFUNC, CT_SITE_GOEXIT, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{8, 0x7fffffffffffULL, 3, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{9, 0x7fffffffffffULL + 1, 3, CT_SITE_RET, 4, 0, UINT32_MAX, UINT32_MAX, 0},
};
#define NS (sizeof(sites) / sizeof(sites[0]))

static void init_tables(void)
{
	for (size_t i = 0; i + 1 < sizeof(long_name); i++)
		long_name[i] = (char)('a' + i % 26);
	funcs[3].name = long_name;
}

/* ---- the stream ---- */
struct xev {
	bool lost;
	struct ct_event e;
	uint8_t *payload;
	uint64_t lost_ts, lost_n;
};
static CT_VEC(struct xev) xs;

static void xs_free(void)
{
	for (size_t i = 0; i < xs.n; i++)
		free(xs.v[i].payload);
	CT_VEC_FREE(xs);
}

static void add_ev(uint64_t ts, uint32_t pid, uint32_t tid, uint64_t goid, uint64_t key, uint32_t site,
		   uint16_t len)
{
	struct xev x = {0};
	x.e.ts = ts;
	x.e.pid = pid;
	x.e.tid = tid;
	x.e.goid = goid;
	x.e.key = key;
	x.e.site = site;
	x.e.len = len;
	/* some carry silent hits' cost (ct_event.silent), from a byte to four */
	x.e.silent = ts % 11 == 0 ? (uint32_t)(ts >> (ts % 4 * 8)) : 0;
	/* some their BPF time beyond the calibration's (ct_event.extra_ns),
	 * more or less, small and at the ends of the range */
	x.e.extra_ns = ts % 7 == 0 ? (int32_t)(ts % 2000) - 1000 : ts % 13 == 0 ? (ts % 2 ? INT32_MAX : INT32_MIN) : 0;
	if (len) {
		x.payload = xmalloc(len);
		for (uint32_t i = 0; i < len; i++)
			x.payload[i] = (uint8_t)(rnd() >> 24);
	}
	CT_VEC_PUSH(xs, x);
}

static void add_lost(uint64_t ts, uint64_t n)
{
	struct xev x = {0};
	x.lost = true;
	x.lost_ts = ts;
	x.lost_n = n;
	CT_VEC_PUSH(xs, x);
}

struct thr {
	uint32_t pid, tid;
	uint64_t goid, key;
};

/* N mixed events: interleaved threads and goroutines (some migrating),
 * timestamps that sometimes go backwards, keys that jump both ways,
 * payloads, loss records. PAYLOAD_PCT: share of events with arguments. */
static void gen_mixed(uint64_t seed, size_t n, int payload_pct, int max_payload)
{
	rng_state = seed;
	struct thr th[] = {
		{1000, 1000, 1, 100},
		{1000, 1001, 2, 200},
		{1000, 1002, 0, CT_C_KEY_BASE - 0x7ffc0000ULL},
		{1000, 1003, 1ULL << 40, 50},
		{2000, 2000, 0, CT_C_KEY_BASE - 0x7ffd0000ULL},
		{2000, 0x7fffffff, 3, 0},
	};
	size_t nth = sizeof(th) / sizeof(th[0]), cur = 0;
	uint64_t ts = 1000000000000ULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rnd();
		if (r % 100 == 0) {
			ts += rnd() % 5000;
			add_lost(ts, 1 + rnd() % 100000);
			continue;
		}
		if (r % 5 == 0)
			cur = (size_t)(rnd() % nth);
		struct thr *t = &th[cur];
		if (t->goid && rnd() % 50 == 0)
			t->tid = 1000 + (uint32_t)(rnd() % 8); /* goroutine migrates */
		int64_t dts = (int64_t)(rnd() % 4000) - 500; /* sometimes backwards */
		if (rnd() % 1000 == 0)
			dts = (int64_t)(1ULL << 40);
		ts += (uint64_t)dts;
		int64_t dk = (int64_t)(rnd() % 97) - 48;
		t->key += (uint64_t)dk;
		uint32_t site = (uint32_t)(rnd() % NS);
		uint16_t len = 0;
		if ((int)(rnd() % 100) < payload_pct)
			len = (uint16_t)(1 + rnd() % (uint64_t)max_payload);
		add_ev(ts, t->pid, t->tid, t->goid, t->key, site, len);
	}
}

/* Writes xs to PATH; FLUSH_FROM: from this event on, flush a chunk after
 * every FLUSH_EVERY records (small chunks at the end of the file). */
static int write_xs(const char *path, size_t flush_from, size_t flush_every)
{
	struct ct_writer *w = ct_writer_create(path);
	if (!w)
		return -1;
	ct_writer_meta(w, "clock.start_ns", "%llu", 999999999999ULL);
	ct_writer_meta(w, "target.lang", "%s", "go");
	ct_writer_meta(w, "empty", "%s", "");
	ct_writer_meta(w, "unicode", "%s", "gr\xc3\xbc\xc3\x9f dich \xe2\x9c\x93");
	if (ct_writer_begin(w, funcs, NF, sites, NS))
		return -1;
	for (size_t i = 0; i < xs.n; i++) {
		if (xs.v[i].lost)
			ct_writer_lost(w, xs.v[i].lost_ts, xs.v[i].lost_n);
		else
			ct_writer_event(w, &xs.v[i].e, xs.v[i].payload);
		if (i >= flush_from && flush_every && (i - flush_from) % flush_every == flush_every - 1)
			ct_writer_flush(w);
	}
	ct_writer_stat(w, "clock.end_ns", "%llu", 2000000000000ULL);
	ct_writer_stat(w, "events", "%llu", (unsigned long long)ct_writer_events(w));
	return ct_writer_close(w);
}

static bool ev_equal(const struct xev *x, const struct ct_rec_event *ev)
{
	if (x->lost)
		return ev->kind == CT_EV_LOST && ev->ts == x->lost_ts && ev->lost == x->lost_n &&
		       ev->payload_len == 0 && ev->silent == 0 && ev->extra_ns == 0;
	const struct ct_event *e = &x->e;
	if (ev->ts != e->ts || ev->goid != e->goid || ev->key != e->key || ev->pid != e->pid ||
	    ev->tid != e->tid || ev->site != e->site || ev->kind != sites[e->site].kind || ev->lost != 0 ||
	    ev->payload_len != e->len || ev->silent != e->silent || ev->extra_ns != e->extra_ns)
		return false;
	if (e->len && (!ev->payload || memcmp(ev->payload, x->payload, e->len)))
		return false;
	return true;
}

/* Reads all events of T; returns how many matched xs as a prefix, or
 * (size_t)-1 when one did not match. */
static size_t read_prefix(struct ct_trace *t, size_t *bad_at)
{
	struct ct_event_iter it;
	struct ct_rec_event ev;
	size_t i = 0;
	ct_iter_init(&it, t);
	while (ct_iter_next(&it, &ev)) {
		if (i >= xs.n || !ev_equal(&xs.v[i], &ev)) {
			if (bad_at)
				*bad_at = i;
			ct_iter_free(&it);
			return (size_t)-1;
		}
		i++;
	}
	/* Stays at the end. */
	if (ct_iter_next(&it, &ev))
		i = (size_t)-2;
	ct_iter_free(&it);
	return i;
}

/* ---- raw file helpers ---- */
static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	rewind(f);
	uint8_t *p = xmalloc(sz > 0 ? (size_t)sz : 1);
	*n = fread(p, 1, (size_t)sz, f);
	fclose(f);
	return p;
}

static int spit(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t k = fwrite(p, 1, n, f);
	return fclose(f) == 0 && k == n ? 0 : -1;
}

struct chunk {
	size_t off, end; /* [off, end) incl. the 16-byte header */
	uint32_t type, count;
	size_t events_before; /* records in event chunks before this one */
};

/* Walks the on-disk layout: 32-byte header, then chunks of
 * {u32 type, u32 len, u32 crc, u32 count} + len bytes. */
static size_t parse_chunks(const uint8_t *p, size_t n, struct chunk *out, size_t max)
{
	size_t off = 32, k = 0, evs = 0;
	while (off + 16 <= n && k < max) {
		uint32_t h[4];
		memcpy(h, p + off, 16);
		out[k].off = off;
		out[k].end = off + 16 + h[1];
		out[k].type = h[0];
		out[k].count = h[3];
		out[k].events_before = evs;
		if (h[0] == CT_CHUNK_EVENTS)
			evs += h[3];
		off = out[k].end;
		k++;
	}
	return k;
}

static int cmp_size_desc(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* ---------------- tests ---------------- */

TEST(tracefile_roundtrip_all_fields)
{
	init_tables();
	xs_free();
	gen_mixed(0x9e3779b97f4a7c15ULL, 60000, 5, 300);
	/* Extremes. */
	add_ev(UINT64_MAX - 5, 1, 2, UINT64_MAX, UINT64_MAX, 9, 0);
	add_ev(0, UINT32_MAX, UINT32_MAX, 0, 0, 0, 0);
	add_ev(12345, 1, 1, 1, 1ULL << 63, 8, 65535);
	add_lost(0, UINT64_MAX);
	add_ev(12346, 1, 1, 1, 0, 1, 1);
	char *path = tpath("rt.data");
	unlink(path);
	CHECK_EQ_I(write_xs(path, SIZE_MAX, 0), 0);

	struct ct_trace t;
	CHECK_EQ_I(ct_trace_open(&t, path), 0);
	CHECK(!t.truncated);
	CHECK_STR(t.path, path);
	CHECK_EQ_U(t.first_ts, 999999999999ULL);
	CHECK_EQ_U(t.meta.n, 4);
	CHECK_STR(t.meta.v[0].key, "clock.start_ns");
	CHECK_STR(t.meta.v[0].val, "999999999999");
	CHECK_STR(ct_trace_meta(&t, "target.lang"), "go");
	CHECK_STR(ct_trace_meta(&t, "empty"), "");
	CHECK_STR(ct_trace_meta(&t, "unicode"), "gr\xc3\xbc\xc3\x9f dich \xe2\x9c\x93");
	CHECK(ct_trace_meta(&t, "nope") == NULL);
	CHECK_EQ_U(t.stats.n, 2);
	CHECK_STR(ct_trace_stat(&t, "clock.end_ns"), "2000000000000");
	CHECK(ct_trace_stat(&t, "events") != NULL);
	CHECK_EQ_U(t.nfuncs, NF);
	for (size_t i = 0; i < NF; i++) {
		CHECK_EQ_U(t.funcs[i].id, funcs[i].id);
		CHECK_STR(t.funcs[i].name, funcs[i].name);
		CHECK_EQ_U(t.funcs[i].entry, funcs[i].entry);
		CHECK_EQ_U(t.funcs[i].size, funcs[i].size);
		CHECK_EQ_U(t.funcs[i].flags, funcs[i].flags);
	}
	CHECK_EQ_U(t.nsites, NS);
	for (size_t i = 0; i < NS; i++) {
		CHECK_EQ_U(t.sites[i].id, sites[i].id);
		CHECK_EQ_U(t.sites[i].addr, sites[i].addr);
		CHECK_EQ_U(t.sites[i].func, sites[i].func);
		CHECK_EQ_U(t.sites[i].kind, sites[i].kind);
		CHECK_EQ_U(t.sites[i].target_func, sites[i].target_func);
	}
	size_t bad = 0;
	size_t got = read_prefix(&t, &bad);
	if (got == (size_t)-1)
		unit_fail(__FILE__, __LINE__, "event %zu differs", bad);
	CHECK_EQ_U(got, xs.n);
	CHECK(!t.truncated);

	/* Several event chunks exist. */
	size_t n;
	uint8_t *raw = slurp(path, &n);
	CHECK(raw != NULL);
	CHECK_EQ_U(n, (size_t)t.file_size);
	struct chunk ch[256];
	size_t nch = parse_chunks(raw, n, ch, 256);
	size_t nev = 0;
	for (size_t i = 0; i < nch; i++)
		nev += ch[i].type == CT_CHUNK_EVENTS;
	CHECK(nev >= 5);
	CHECK_EQ_U(ch[nch - 1].type, CT_CHUNK_STATS);
	CHECK_EQ_U(ch[nch - 1].end, n);
	free(raw);

	/* Two iterators over the same trace are independent. */
	struct ct_event_iter a, b;
	struct ct_rec_event ea, eb;
	ct_iter_init(&a, &t);
	ct_iter_init(&b, &t);
	for (int i = 0; i < 3000; i++) {
		CHECK(ct_iter_next(&a, &ea));
		if (i % 2 == 0)
			CHECK(ct_iter_next(&b, &eb));
	}
	CHECK(ev_equal(&xs.v[2999], &ea));
	CHECK(ev_equal(&xs.v[1499], &eb));
	ct_iter_free(&a);
	ct_iter_free(&b);
	ct_trace_close(&t);
	free(path);
	xs_free();
}

TEST(tracefile_empty_trace)
{
	init_tables();
	xs_free();
	char *path = tpath("rt.data");
	CHECK_EQ_I(write_xs(path, SIZE_MAX, 0), 0);
	struct ct_trace t;
	CHECK_EQ_I(ct_trace_open(&t, path), 0);
	CHECK(!t.truncated);
	CHECK_EQ_U(read_prefix(&t, NULL), 0);
	CHECK_STR(ct_trace_stat(&t, "events"), "0");
	ct_trace_close(&t);
	free(path);
}

TEST(tracefile_mode_and_old)
{
	init_tables();
	char *path = tpath("mode.data"), *old = tpath("mode.data.old");
	unlink(path);
	unlink(old);
	mode_t um = umask(0); /* even a permissive umask gives 0600 */
	struct ct_writer *w = ct_writer_create(path);
	umask(um);
	CHECK(w != NULL);
	CHECK_EQ_I(ct_writer_begin(w, funcs, NF, sites, NS), 0);
	CHECK_EQ_I(ct_writer_close(w), 0);
	struct stat st;
	CHECK_EQ_I(stat(path, &st), 0);
	CHECK_EQ_U(st.st_mode & 07777, 0600);
	CHECK(access(old, F_OK) != 0);

	/* Something else there (a program: `record -o prog -- ./prog`; any
	 * file not a record) is refused, and left as it was. */
	CHECK_EQ_I(spit(path, (const uint8_t *)"\177ELF\2\1\1", 7), 0);
	CHECK(ct_writer_create(path) == NULL);
	CHECK(strstr(ct_error(), "ELF") != NULL);
	CHECK_EQ_I(spit(path, (const uint8_t *)"notes", 5), 0);
	CHECK(ct_writer_create(path) == NULL);
	CHECK(strstr(ct_error(), "not a calltrace record file") != NULL);
	size_t n;
	uint8_t *p = slurp(path, &n);
	CHECK(p && n == 5 && !memcmp(p, "notes", 5) && access(old, F_OK) != 0);
	free(p);

	/* An existing record file (here: with other contents and mode) becomes
	 * .old. */
	CHECK_EQ_I(spit(path, (const uint8_t *)CT_FILE_MAGIC " previous", 16), 0);
	chmod(path, 0644);
	w = ct_writer_create(path);
	CHECK(w != NULL);
	CHECK_EQ_I(stat(path, &st), 0);
	CHECK_EQ_U(st.st_mode & 07777, 0600);
	CHECK_EQ_I(ct_writer_begin(w, funcs, NF, sites, NS), 0);
	CHECK_EQ_I(ct_writer_close(w), 0);
	p = slurp(old, &n);
	CHECK(p != NULL);
	CHECK_EQ_U(n, 16);
	CHECK(!memcmp(p, CT_FILE_MAGIC " previous", 16));
	free(p);
	struct ct_trace t;
	CHECK_EQ_I(ct_trace_open(&t, path), 0);
	ct_trace_close(&t);
	/* The third write replaces the old .old (a record file). */
	w = ct_writer_create(path);
	CHECK(w != NULL);
	CHECK_EQ_I(ct_writer_begin(w, funcs, NF, sites, NS), 0);
	ct_writer_close(w);
	CHECK_EQ_I(ct_trace_open(&t, old), 0);
	ct_trace_close(&t);
	/* ... but not a .old that is something else */
	CHECK_EQ_I(spit(old, (const uint8_t *)"keep me", 7), 0);
	CHECK(ct_writer_create(path) == NULL);
	CHECK(strstr(ct_error(), ".old") != NULL);
	p = slurp(old, &n);
	CHECK(p && n == 7 && !memcmp(p, "keep me", 7));
	free(p);

	/* Unwritable place: NULL and a message naming the path. */
	char *nodir = tpath("no/such/dir/x.data");
	CHECK(ct_writer_create(nodir) == NULL);
	CHECK(strstr(ct_error(), "no/such/dir") != NULL);
	free(nodir);
	free(path);
	free(old);
}

/* The truncation trace: a few big event chunks (payload-heavy events),
 * then small chunks (a flush every few records), then STATS. */
static void gen_truncation_stream(void)
{
	xs_free();
	gen_mixed(42, 1200, 60, 400); /* ~150 KB: two full 64 KiB chunks */
	rng_state = 7;
	uint64_t ts = 5000000000000ULL;
	for (int i = 0; i < 60; i++) {
		ts += 1000 + rnd() % 100;
		if (i % 13 == 6)
			add_lost(ts, 5);
		else
			add_ev(ts, 1000, 1000 + i % 3, i % 2, 300 + i, (uint32_t)(i % NS),
			       i % 7 == 0 ? 9 : 0);
	}
}

TEST(tracefile_truncated_at_every_length)
{
	init_tables();
	gen_truncation_stream();
	size_t nbig = xs.n - 60;
	char *full = tpath("trunc.data"), *cut = tpath("cut.data");
	CHECK_EQ_I(write_xs(full, nbig, 7), 0);
	size_t n;
	uint8_t *raw = slurp(full, &n);
	CHECK(raw != NULL);
	struct chunk ch[64];
	size_t nch = parse_chunks(raw, n, ch, 64);
	CHECK(nch > 10);
	CHECK_EQ_U(ch[0].type, CT_CHUNK_META);
	CHECK_EQ_U(ch[2].type, CT_CHUNK_SITES);
	CHECK_EQ_U(ch[nch - 1].type, CT_CHUNK_STATS);
	CHECK_EQ_U(ch[nch - 1].end, n);
	size_t tables_end = ch[2].end;
	size_t nbigchunks = 0;
	for (size_t i = 3; i < nch && ch[i].end - ch[i].off > 60000; i++)
		nbigchunks++;
	CHECK(nbigchunks >= 2);
	size_t small_from = ch[3 + nbigchunks - 1].off; /* last big chunk on */

	/* Cut lengths: every byte through the tables, every byte from the
	 * last big chunk's header to the end (last few chunks), around
	 * every chunk boundary, and a spread through the big chunks. */
	CT_VEC(size_t) lens = {0};
	for (size_t L = 0; L <= tables_end + 20; L++)
		CT_VEC_PUSH(lens, L);
	for (size_t L = small_from, c = 3 + nbigchunks - 1; L <= n; L++) {
		while (c + 1 < nch && L >= ch[c].end)
			c++;
		/* thin out the middle of chunks bigger than 1 KiB */
		if (ch[c].end - ch[c].off > 1024 && L > ch[c].off + 40 && L + 40 < ch[c].end && L % 97)
			continue;
		CT_VEC_PUSH(lens, L);
	}
	for (size_t i = 3; i < nch; i++)
		for (size_t d = 0; d < 3; d++) {
			CT_VEC_PUSH(lens, ch[i].off + d);
			CT_VEC_PUSH(lens, ch[i].off - d);
		}
	for (size_t L = tables_end; L < small_from; L += 4099)
		CT_VEC_PUSH(lens, L);

	/* Longest first: write the file once, then cut it shorter and shorter. */
	qsort(lens.v, lens.n, sizeof(*lens.v), cmp_size_desc);
	CHECK_EQ_I(spit(cut, raw, n), 0);
	size_t opened = 0, failed = 0;
	for (size_t li = 0; li < lens.n; li++) {
		size_t L = lens.v[li];
		if (L > n || (li && L == lens.v[li - 1]))
			continue;
		if (truncate(cut, (off_t)L)) {
			unit_fail(__FILE__, __LINE__, "cannot truncate %s", cut);
			break;
		}
		/* What a correct reader must give for this cut. */
		size_t want = 0;
		bool boundary = L == 32 || L == n;
		bool stats = L == n;
		for (size_t i = 0; i < nch; i++) {
			if (ch[i].end <= L && ch[i].type == CT_CHUNK_EVENTS)
				want = ch[i].events_before + ch[i].count;
			if (ch[i].end == L)
				boundary = true;
		}
		struct ct_trace t;
		int rc = ct_trace_open(&t, cut);
		if (L < tables_end) {
			if (rc == 0) {
				unit_fail(__FILE__, __LINE__, "cut at %zu (inside tables) opened", L);
				ct_trace_close(&t);
				break;
			}
			const char *e = ct_error();
			if (!e || !*e || strchr(e, '\n') || !strstr(e, cut) ||
			    !(strstr(e, "damaged") || strstr(e, "not a calltrace"))) {
				unit_fail(__FILE__, __LINE__, "cut at %zu: unclear error \"%s\"", L, e ? e : "");
				break;
			}
			if (L < 32 && !strstr(e, "not a calltrace")) {
				unit_fail(__FILE__, __LINE__, "cut at %zu: \"%s\"", L, e);
				break;
			}
			failed++;
			continue;
		}
		if (rc != 0) {
			unit_fail(__FILE__, __LINE__, "cut at %zu (after tables) failed: %s", L, ct_error());
			break;
		}
		opened++;
		size_t bad = 0;
		size_t got = read_prefix(&t, &bad);
		bool tr = t.truncated, has_stats = t.stats.n > 0;
		ct_trace_close(&t);
		if (got == (size_t)-1 || got == (size_t)-2) {
			unit_fail(__FILE__, __LINE__, "cut at %zu: event %zu is not the original's", L, bad);
			break;
		}
		if (got != want) {
			unit_fail(__FILE__, __LINE__, "cut at %zu: %zu events, want %zu", L, got, want);
			break;
		}
		if (tr != !boundary) {
			unit_fail(__FILE__, __LINE__, "cut at %zu: truncated=%d, want %d", L, tr, !boundary);
			break;
		}
		if (has_stats != stats) {
			unit_fail(__FILE__, __LINE__, "cut at %zu: stats=%d, want %d", L, has_stats, stats);
			break;
		}
	}
	CT_VEC_FREE(lens);
	printf("# truncation: %zu cuts opened, %zu refused, %zu-byte file\n", opened, failed, n);
	CHECK(opened > 1000);
	CHECK(failed > 100);
	unlink(cut);
	free(raw);
	free(full);
	free(cut);
	xs_free();
}

TEST(tracefile_corrupt_event_chunk)
{
	init_tables();
	gen_truncation_stream();
	size_t nbig = xs.n - 60;
	char *full = tpath("trunc.data"), *flip = tpath("flip.data");
	CHECK_EQ_I(write_xs(full, nbig, 7), 0);
	size_t n;
	uint8_t *raw = slurp(full, &n);
	CHECK(raw != NULL);
	struct chunk ch[64];
	size_t nch = parse_chunks(raw, n, ch, 64);
	uint8_t *copy = xmalloc(n);
	int tried = 0;
	for (size_t i = 3; i < nch; i++) {
		if (ch[i].type != CT_CHUNK_EVENTS)
			continue;
		/* First payload byte (the base timestamp), the middle, the last. */
		size_t at[3] = {ch[i].off + 16, (ch[i].off + 16 + ch[i].end) / 2, ch[i].end - 1};
		for (int k = 0; k < 3; k++) {
			memcpy(copy, raw, n);
			copy[at[k]] ^= 0x20;
			CHECK_EQ_I(spit(flip, copy, n), 0);
			struct ct_trace t;
			CHECK_EQ_I(ct_trace_open(&t, flip), 0);
			size_t got = read_prefix(&t, NULL);
			bool tr = t.truncated;
			ct_trace_close(&t);
			if (got != ch[i].events_before || !tr) {
				unit_fail(__FILE__, __LINE__,
					  "flip in chunk %zu at +%zu: %zu events (want %zu), truncated=%d", i,
					  at[k] - ch[i].off, got, ch[i].events_before, tr);
				goto out;
			}
			tried++;
		}
	}
	CHECK(tried >= 30);
out:
	free(copy);
	free(raw);
	unlink(flip);
	free(flip);
	free(full);
	xs_free();
}

TEST(tracefile_corrupt_chunk_header_never_crashes)
{
	/* Damage to any byte of an event chunk's 16-byte header must not
	 * crash the reader, and what it yields must be a prefix of the
	 * original stream (no events dropped from the middle). */
	init_tables();
	gen_truncation_stream();
	size_t nbig = xs.n - 60;
	char *full = tpath("trunc.data"), *flip = tpath("hdr.data");
	CHECK_EQ_I(write_xs(full, nbig, 7), 0);
	size_t n;
	uint8_t *raw = slurp(full, &n);
	CHECK(raw != NULL);
	struct chunk ch[64];
	size_t nch = parse_chunks(raw, n, ch, 64);
	uint8_t *copy = xmalloc(n);
	size_t target = nch - 3; /* a small event chunk near the end */
	CHECK_EQ_U(ch[target].type, CT_CHUNK_EVENTS);
	char fails[512] = "";
	for (size_t b = 0; b < 16; b++) {
		static const uint8_t masks[] = {0x01, 0x80, 0xff};
		for (int m = 0; m < 3; m++) {
			memcpy(copy, raw, n);
			copy[ch[target].off + b] ^= masks[m];
			CHECK_EQ_I(spit(flip, copy, n), 0);
			struct ct_trace t;
			if (ct_trace_open(&t, flip) != 0)
				continue;
			size_t got = read_prefix(&t, NULL);
			ct_trace_close(&t);
			if ((got == (size_t)-1 || got == (size_t)-2) && strlen(fails) < sizeof(fails) - 40) {
				char one[40];
				snprintf(one, sizeof(one), " byte %zu^0x%02x", b, masks[m]);
				strcat(fails, one);
			}
		}
	}
	if (fails[0])
		unit_fail(__FILE__, __LINE__, "events missing from the middle after flipping header%s", fails);
	free(copy);
	free(raw);
	unlink(flip);
	free(flip);
	free(full);
	xs_free();
}

TEST(tracefile_foreign_and_future_files)
{
	init_tables();
	char *bad = tpath("bad.data"), *fut = tpath("fut.data"), *shrt = tpath("short.data");
	const char *text = "#!/bin/sh\necho this is not a calltrace file at all\n";
	CHECK_EQ_I(spit(bad, (const uint8_t *)text, strlen(text)), 0);
	struct ct_trace t;
	CHECK_EQ_I(ct_trace_open(&t, bad), -1);
	CHECK(strstr(ct_error(), "not a calltrace record file") != NULL);
	CHECK(strstr(ct_error(), bad) != NULL);
	CHECK(strchr(ct_error(), '\n') == NULL);
	CHECK(t.f == NULL && t.path == NULL); /* nothing left open */

	CHECK_EQ_I(spit(shrt, (const uint8_t *)"CALL", 4), 0);
	CHECK_EQ_I(ct_trace_open(&t, shrt), -1);
	CHECK(strstr(ct_error(), "not a calltrace record file") != NULL);
	CHECK_EQ_I(spit(shrt, (const uint8_t *)"", 0), 0);
	CHECK_EQ_I(ct_trace_open(&t, shrt), -1);
	CHECK(strstr(ct_error(), "not a calltrace record file") != NULL);

	/* A valid file claiming the next version. */
	xs_free();
	add_ev(100, 1, 1, 1, 1, 0, 0);
	CHECK_EQ_I(write_xs(fut, SIZE_MAX, 0), 0);
	size_t n;
	uint8_t *raw = slurp(fut, &n);
	CHECK(raw != NULL);
	CHECK(!memcmp(raw, CT_FILE_MAGIC, 8));
	uint32_t v;
	memcpy(&v, raw + 8, 4);
	CHECK_EQ_U(v, CT_FILE_VERSION);
	v = CT_FILE_VERSION + 1;
	memcpy(raw + 8, &v, 4);
	CHECK_EQ_I(spit(fut, raw, n), 0);
	CHECK_EQ_I(ct_trace_open(&t, fut), -1);
	char want[32];
	snprintf(want, sizeof(want), "version %u", CT_FILE_VERSION + 1);
	CHECK(strstr(ct_error(), want) != NULL);
	CHECK(strstr(ct_error(), "newer") != NULL);
	CHECK(strchr(ct_error(), '\n') == NULL);

	/* A bad header size. */
	v = CT_FILE_VERSION;
	memcpy(raw + 8, &v, 4);
	v = 8;
	memcpy(raw + 12, &v, 4);
	CHECK_EQ_I(spit(fut, raw, n), 0);
	CHECK_EQ_I(ct_trace_open(&t, fut), -1);
	CHECK(strstr(ct_error(), "damaged") != NULL);
	free(raw);

	/* Missing file. */
	char *none = tpath("does-not-exist.data");
	CHECK_EQ_I(ct_trace_open(&t, none), -1);
	CHECK(strstr(ct_error(), "does not exist") != NULL);
	CHECK(strchr(ct_error(), '\n') == NULL);
	free(none);
	free(bad);
	free(fut);
	free(shrt);
	xs_free();
}

/* fib(n) as the probes would see it: one goroutine, entry/ret pairs ~1 us
 * apart, the key moving by one small frame per level. */
static uint64_t fib_ts;
static uint32_t fib_tid = 1000;
static void fib_events(int n, int depth)
{
	uint64_t key = 0x1000 + 48ULL * (uint64_t)depth;
	fib_ts += 700 + rnd() % 600;
	if (rnd() % 20000 == 0)
		fib_tid = 1000 + (uint32_t)(rnd() % 4); /* the goroutine migrates */
	add_ev(fib_ts, 4242, fib_tid, 17, key, 2, 0);
	if (n >= 2) {
		fib_events(n - 1, depth + 1);
		fib_events(n - 2, depth + 1);
	}
	fib_ts += 700 + rnd() % 600;
	add_ev(fib_ts, 4242, fib_tid, 17, key, 3, 0);
}

TEST(tracefile_bytes_per_event)
{
	init_tables();
	xs_free();
	rng_state = 12345;
	fib_ts = 1000000000000ULL;
	fib_events(21, 0); /* 35421 calls */
	fib_events(21, 0);
	/* A C thread interleaved now and then (thread switches). */
	size_t nfib = xs.n;
	for (size_t i = 0; i < 200; i++) {
		fib_ts += 900;
		add_ev(fib_ts, 4242, 4243, 0, CT_C_KEY_BASE - 0x7ffe1000ULL, i % 2 ? 1 : 0, 0);
		fib_ts += 900;
		add_ev(fib_ts, 4242, fib_tid, 17, 0x1000, 2, 0);
		add_ev(fib_ts + 800, 4242, fib_tid, 17, 0x1000, 3, 0);
	}
	CHECK(xs.n >= 100000);
	char *path = tpath("bpe.data");
	struct ct_writer *w = ct_writer_create(path);
	CHECK(w != NULL);
	CHECK_EQ_I(ct_writer_begin(w, funcs, NF, sites, NS), 0);
	uint64_t b0 = ct_writer_bytes(w);
	for (size_t i = 0; i < xs.n; i++)
		ct_writer_event(w, &xs.v[i].e, NULL);
	CHECK_EQ_I(ct_writer_flush(w), 0);
	uint64_t b1 = ct_writer_bytes(w);
	CHECK_EQ_U(ct_writer_events(w), xs.n);
	CHECK_EQ_I(ct_writer_close(w), 0);
	double bpe = (double)(b1 - b0) / (double)xs.n;
	printf("# bytes/event: %.2f (%zu events, %zu of them fib)\n", bpe, xs.n, nfib);
	CHECK(bpe <= 16.0);
	struct ct_trace t;
	CHECK_EQ_I(ct_trace_open(&t, path), 0);
	CHECK_EQ_U(read_prefix(&t, NULL), xs.n);
	ct_trace_close(&t);
	free(path);
	xs_free();
}

/* ---- per-object Go runtime entries (RTYPES, PCPOS: version 8) ---- */

/* Two Go binaries in one file (a program and one it exec'd in the same
 * process): sites 0..4 are the first's, 5..9 the second's; both have a
 * runtime type at 0x48ce00 and a `go` statement at 0x401234 of pid 7, not
 * the same.  RANGE_B: the second's range as written (to make lies). */
static int write_two_objects(const char *path, uint32_t first_b, uint32_t n_b)
{
	struct ct_writer *w = ct_writer_create(path);
	if (!w)
		return -1;
	ct_writer_meta(w, "clock.start_ns", "%llu", 1000ULL);
	if (ct_writer_begin(w, funcs, NF, sites, NS))
		return -1;
	struct ct_typetab ta = {0}, tb = {0};
	struct ct_type va[2] = {{.kind = CT_K_UNKNOWN, .name = (char *)"?"},
				{.kind = CT_K_INT, .name = (char *)"main.Level", .size = 8, .is_signed = true}};
	struct ct_type vb[3] = {{.kind = CT_K_UNKNOWN, .name = (char *)"?"},
				{.kind = CT_K_INT, .name = (char *)"int", .size = 8},
				{.kind = CT_K_STRING, .name = (char *)"main.Level", .size = 16}};
	ta.v = va, ta.n = 2;
	tb.v = vb, tb.n = 3;
	struct ct_type_ids ia = {0}, ib = {0};
	ct_writer_types(w, &ta, &ia); /* file ids 0, 1 */
	ct_writer_types(w, &tb, &ib); /* 0 (the same unknown), 2, 3 */
	uint64_t addr = 0x48ce00;
	uint32_t level = 1;
	ct_writer_rtypes(w, 0, 5, &addr, &level, 1, &ia);
	level = 2;
	ct_writer_rtypes(w, first_b, n_b, &addr, &level, 1, &ib);
	struct ct_pcpos pa = {7, 0x401234, (char *)"main.main", (char *)"a.go", 10};
	struct ct_pcpos pb = {7, 0x401234, (char *)"main.main", (char *)"b.go", 20};
	ct_writer_pcpos(w, 0, 5, &pa);
	ct_writer_pcpos(w, first_b, n_b, &pb);
	struct ct_event e = {.ts = 2000, .pid = 7, .tid = 7, .goid = 1, .key = 64, .site = 0};
	ct_writer_event(w, &e, NULL);
	ct_type_ids_free(&ia);
	ct_type_ids_free(&ib);
	return ct_writer_close(w);
}

/* The payload of the K-th chunk of TYPE in RAW (N bytes), or NULL. */
static const uint8_t *nth_chunk(const uint8_t *raw, size_t n, uint32_t type, int k, size_t *len)
{
	struct chunk ch[64];
	size_t nch = parse_chunks(raw, n, ch, 64);
	for (size_t i = 0; i < nch; i++)
		if (ch[i].type == type && k-- == 0) {
			*len = ch[i].end - ch[i].off - 16;
			return raw + ch[i].off + 16;
		}
	return NULL;
}

/* Sites found while recording after other objects' ranges (the program's,
 * with a library traced) are their function's object's: the first object
 * 0..4, the second 8 (function 3); 5 and 6 (function 1, whose first site 2
 * is the first's) and 9 (function 3) are in no range, 7 has no function. */
TEST(tracefile_go_entries_of_sites_after_other_ranges)
{
	init_tables();
	char *path = tpath("objects-found.data");
	CHECK_EQ_I(write_two_objects(path, 8, 1), 0);
	struct ct_trace t;
	CHECK_EQ_I(ct_trace_open(&t, path), 0);
	CHECK_EQ_U(ct_trace_rtype(&t, 2, 0x48ce00), 1);
	CHECK_EQ_U(ct_trace_rtype(&t, 5, 0x48ce00), 1);
	CHECK_EQ_U(ct_trace_rtype(&t, 6, 0x48ce00), 1);
	CHECK_EQ_U(ct_trace_rtype(&t, 7, 0x48ce00), CT_TYPE_NONE);
	CHECK_EQ_U(ct_trace_rtype(&t, 8, 0x48ce00), 3);
	CHECK_EQ_U(ct_trace_rtype(&t, 9, 0x48ce00), 3);
	const struct ct_pcpos *pos = ct_trace_pcpos(&t, 6, 7, 0x401234);
	CHECK(pos && !strcmp(pos->file, "a.go"));
	ct_trace_close(&t);
	free(path);
}

TEST(tracefile_go_entries_per_object)
{
	init_tables();
	char *path = tpath("objects.data");
	CHECK_EQ_I(write_two_objects(path, 5, 5), 0);
	struct ct_trace t;
	CHECK_EQ_I(ct_trace_open(&t, path), 0);
	CHECK_EQ_U(t.version, CT_FILE_VERSION);
	CHECK_EQ_U(t.types.n, 4);
	/* one address, each object's own type */
	for (uint32_t site = 0; site < 5; site++)
		CHECK_EQ_U(ct_trace_rtype(&t, site, 0x48ce00), 1);
	for (uint32_t site = 5; site < NS; site++)
		CHECK_EQ_U(ct_trace_rtype(&t, site, 0x48ce00), 3);
	CHECK_STR(t.types.v[1].name, "main.Level");
	CHECK_EQ_I(t.types.v[1].kind, CT_K_INT);
	CHECK_STR(t.types.v[3].name, "main.Level");
	CHECK_EQ_I(t.types.v[3].kind, CT_K_STRING);
	CHECK_EQ_U(ct_trace_rtype(&t, 0, 0x48ce08), CT_TYPE_NONE); /* not named */
	CHECK_EQ_U(ct_trace_rtype(&t, NS, 0x48ce00), CT_TYPE_NONE); /* no such site */
	const struct ct_pcpos *pos = ct_trace_pcpos(&t, 3, 7, 0x401234);
	CHECK(pos && !strcmp(pos->file, "a.go") && pos->line == 10);
	pos = ct_trace_pcpos(&t, 9, 7, 0x401234);
	CHECK(pos && !strcmp(pos->file, "b.go") && pos->line == 20);
	CHECK(ct_trace_pcpos(&t, 9, 8, 0x401234) == NULL); /* another process */
	ct_trace_close(&t);

	/* The bytes FORMAT.md gives: first_site, nsites, n, (addr, type)... */
	size_t n, len;
	uint8_t *raw = slurp(path, &n);
	CHECK(raw != NULL);
	const uint8_t *p = nth_chunk(raw, n, CT_CHUNK_RTYPES, 0, &len);
	static const uint8_t rt_a[] = {0, 5, 1, 0x80, 0x9c, 0xa3, 0x02, 1};
	CHECK(p && len == sizeof(rt_a) && !memcmp(p, rt_a, len));
	p = nth_chunk(raw, n, CT_CHUNK_RTYPES, 1, &len);
	static const uint8_t rt_b[] = {5, 5, 1, 0x80, 0x9c, 0xa3, 0x02, 3};
	CHECK(p && len == sizeof(rt_b) && !memcmp(p, rt_b, len));
	p = nth_chunk(raw, n, CT_CHUNK_PCPOS, 1, &len);
	static const uint8_t pc_b[] = {5, 5, 1, 7, 0xb4, 0xa4, 0x80, 0x02, 9, 'm', 'a', 'i', 'n', '.', 'm', 'a', 'i', 'n',
				       4, 'b', '.', 'g', 'o', 20};
	CHECK(p && len == sizeof(pc_b) && !memcmp(p, pc_b, len));

	/* A version 7 file has no ranges: one table for every site.  (The
	 * same file rewritten so: the entries written last win.) */
	uint8_t *old = xmalloc(n);
	size_t m = 32;
	memcpy(old, raw, 32);
	uint32_t v7 = 7;
	memcpy(old + 8, &v7, 4);
	struct chunk ch[64];
	size_t nch = parse_chunks(raw, n, ch, 64);
	for (size_t i = 0; i < nch; i++) {
		uint32_t h[4];
		memcpy(h, raw + ch[i].off, 16);
		const uint8_t *body = raw + ch[i].off + 16;
		if (h[0] == CT_CHUNK_RTYPES || h[0] == CT_CHUNK_PCPOS)
			body += 2, h[1] -= 2; /* the two one-byte range fields */
		uint32_t hc[3] = {h[0], h[1], h[3]};
		uLong crc = crc32(0, (const Bytef *)hc, sizeof(hc));
		h[2] = (uint32_t)crc32(crc, body, h[1]);
		memcpy(old + m, h, 16);
		memcpy(old + m + 16, body, h[1]);
		m += 16 + h[1];
	}
	char *opath = tpath("objects-v7.data");
	CHECK_EQ_I(spit(opath, old, m), 0);
	CHECK_EQ_I(ct_trace_open(&t, opath), 0);
	CHECK_EQ_U(ct_trace_rtype(&t, 0, 0x48ce00), 3);
	CHECK_EQ_U(ct_trace_rtype(&t, 9, 0x48ce00), 3);
	pos = ct_trace_pcpos(&t, 9, 7, 0x401234);
	CHECK(pos && !strcmp(pos->file, "a.go")); /* the first kept */
	ct_trace_close(&t);
	free(old);
	free(opath);
	free(raw);

	/* The program's range grows (call sites found while recording take
	 * the ids after its own when it is the only object). */
	CHECK_EQ_I(write_two_objects(path, 0, 7), 0);
	CHECK_EQ_I(ct_trace_open(&t, path), 0);
	CHECK_EQ_U(ct_trace_rtype(&t, 6, 0x48ce00), 3); /* the later entry for the address */
	CHECK_EQ_U(ct_trace_rtype(&t, 7, 0x48ce00), CT_TYPE_NONE);
	ct_trace_close(&t);

	/* Ranges that lie: past the sites, overlapping another object's, or
	 * empty.  The file is damaged, said in one line. */
	uint32_t lies[][2] = {{5, 6}, {3, 5}, {5, 0}, {UINT32_MAX, 2}};
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		CHECK_EQ_I(write_two_objects(path, lies[i][0], lies[i][1]), 0);
		CHECK_EQ_I(ct_trace_open(&t, path), -1);
		CHECK(strstr(ct_error(), "damaged") && !strchr(ct_error(), '\n'));
	}
	free(path);
}
