#include "util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static char err_line[1024];
static bool err_said; /* err_line's failure is on stderr already */
int ct_verbose;

/* S (N bytes at most) with its control characters as \xNN, C1 ones (UTF-8
 * C2 80..9F) too, into OUT (cut to OUTN-1): a message names files and
 * processes (a -p target's binary, a program's path) whose names are
 * anyone's to choose, and an escape sequence in one (set the window's
 * title, ...) must not reach the terminal of whoever runs calltrace. */
static void sanitize(char *out, size_t outn, const char *s)
{
	size_t k = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && k + 1 < outn; p++) {
		bool c1 = *p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
		if (*p < 0x20 || *p == 0x7f || c1) {
			if (k + 5 > outn - 1)
				break;
			k += (size_t)snprintf(out + k, outn - k, "\\x%02x", *p);
			if (c1) {
				if (k + 5 > outn - 1)
					break;
				k += (size_t)snprintf(out + k, outn - k, "\\x%02x", *++p);
			}
		} else {
			out[k++] = (char)*p;
		}
	}
	out[k] = 0;
}

/* Formatted apart first: a caller may wrap the line already recorded
 * (ct_fail("...: %s", ct_error())), which vsnprintf must not read while it
 * writes the same bytes. */
static void record_error(const char *fmt, va_list ap)
{
	char line[sizeof(err_line)];
	vsnprintf(line, sizeof(line), fmt, ap);
	sanitize(err_line, sizeof(err_line), line);
	err_said = false;
}

char *ct_shown(const char *s)
{
	size_t n = strlen(s) * 8 + 1;
	char *safe = xmalloc(n);
	sanitize(safe, n, s);
	return safe;
}

/* "calltrace: PREFIX" and FMT's line, sanitized, on stderr. */
static void say(const char *prefix, const char *fmt, va_list ap)
{
	char *line = NULL;
	if (vasprintf(&line, fmt, ap) < 0)
		return;
	char *safe = ct_shown(line);
	fprintf(stderr, "calltrace: %s%s\n", prefix, safe);
	free(safe);
	free(line);
}

void ct_say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
}

int ct_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	record_error(fmt, ap);
	va_end(ap);
	return -1;
}

int ct_fail_said(void)
{
	err_said = true;
	return -1;
}

size_t ct_lower_bound_u64(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const char *ct_program_path(const char *path, char *buf, size_t n)
{
	const char *p = path && !strncmp(path, "/proc/", 6) ? path + 6 : NULL;
	while (p && *p >= '0' && *p <= '9')
		p++;
	if (!p || p == path + 6 || strcmp(p, "/exe") || n < 2)
		return path;
	ssize_t k = readlink(path, buf, n - 1);
	if (k <= 0)
		return path;
	buf[k] = 0;
	return buf;
}

const char *ct_error(void)
{
	return err_line[0] ? err_line : "unknown error";
}

void ct_print_error(void)
{
	if (err_said)
		return;
	fprintf(stderr, "calltrace: %s\n", ct_error());
}

void ct_print_errorf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	record_error(fmt, ap);
	va_end(ap);
	ct_print_error();
}

void ct_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("warning: ", fmt, ap);
	va_end(ap);
}

void ct_debug(const char *fmt, ...)
{
	if (!ct_verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
}

static void oom(void)
{
	fputs("calltrace: out of memory\n", stderr);
	exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");
	if (!p)
		oom();
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		oom();
	va_end(ap);
	return p;
}

void buf_grow(struct ct_buf *b, size_t extra)
{
	if (b->n + extra <= b->cap)
		return;
	size_t c = b->cap ? b->cap : 256;
	while (c < b->n + extra)
		c *= 2;
	b->p = xrealloc(b->p, c);
	b->cap = c;
}


void buf_u32(struct ct_buf *b, uint32_t v) { buf_put(b, &v, 4); }
void buf_u64(struct ct_buf *b, uint64_t v) { buf_put(b, &v, 8); }

void buf_uvar_long(struct ct_buf *b, uint64_t v)
{
	buf_reserve(b, 10);
	while (v >= 0x80) {
		b->p[b->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->n++] = (uint8_t)v;
}

void buf_svar(struct ct_buf *b, int64_t v)
{
	buf_uvar(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void buf_str(struct ct_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	buf_uvar(b, n);
	buf_put(b, s, n);
}

const char ct_dec_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
			       "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
			       "8081828384858687888990919293949596979899";
const uint64_t ct_dec_pow10[20] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
				   100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
				   10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
				   100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL};

void buf_dec_pad(struct ct_buf *b, uint64_t v, unsigned width)
{
	/* the digits go straight to their place: written to a scratch array
	 * and copied from there as one wide load, they stalled each copy
	 * (a store forwarded to a bigger load), 10% of JSON replay.  A short
	 * pad is one 16-byte store of blanks the digits then overwrite: a
	 * memset call per column was ~3% of replay. */
	unsigned n = dec_len(v), pad = width > n ? width - n : 0;
	buf_reserve(b, pad + n + 16);
	uint8_t *o = b->p + b->n;
	if (pad <= 16)
		memcpy(o, "                ", 16);
	else
		memset(o, ' ', pad);
	dec_digits(v, n, (char *)o + pad);
	b->n += pad + n;
}

void buf_sdec(struct ct_buf *b, int64_t v)
{
	if (v < 0) {
		buf_put(b, "-", 1);
		buf_dec(b, (uint64_t)0 - (uint64_t)v);
	} else {
		buf_dec(b, (uint64_t)v);
	}
}

__attribute__((optimize("no-tree-loop-distribute-patterns"))) void buf_spaces(struct ct_buf *b, size_t n)
{
	/* 16 blanks a store, past N up to the next 16 (room reserved): the
	 * tree's indentation, a few dozen a line, was a memset call each */
	typedef char v16 __attribute__((vector_size(16), aligned(1)));
	buf_reserve(b, n + 16);
	char *o = (char *)b->p + b->n;
	const v16 blanks = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	for (size_t i = 0; i < n; i += 16)
		*(v16 *)(o + i) = blanks;
	b->n += n;
}

void buf_printf(struct ct_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_reserve(b, 256);
	int n = vsnprintf((char *)b->p + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= b->cap - b->n) {
		buf_reserve(b, (size_t)n + 1);
		va_start(ap, fmt);
		vsnprintf((char *)b->p + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
	}
	b->n += (size_t)n;
}

void buf_utf8(struct ct_buf *b, uint32_t c)
{
	if (c < 0x80) {
		buf_u8(b, (uint8_t)c);
	} else if (c < 0x800) {
		buf_u8(b, (uint8_t)(0xc0 | c >> 6));
		buf_u8(b, (uint8_t)(0x80 | (c & 0x3f)));
	} else if (c < 0x10000) {
		buf_u8(b, (uint8_t)(0xe0 | c >> 12));
		buf_u8(b, (uint8_t)(0x80 | ((c >> 6) & 0x3f)));
		buf_u8(b, (uint8_t)(0x80 | (c & 0x3f)));
	} else {
		buf_u8(b, (uint8_t)(0xf0 | c >> 18));
		buf_u8(b, (uint8_t)(0x80 | ((c >> 12) & 0x3f)));
		buf_u8(b, (uint8_t)(0x80 | ((c >> 6) & 0x3f)));
		buf_u8(b, (uint8_t)(0x80 | (c & 0x3f)));
	}
}

/* Length of the well-formed UTF-8 sequence at P (RFC 3629: no overlongs,
 * surrogates or code points past U+10FFFF), 0 if ill-formed; *CP gets its
 * code point. */
size_t utf8_decode(const unsigned char *p, const unsigned char *end, uint32_t *cp)
{
	unsigned c = p[0];
	size_t len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < len)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[k] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

void buf_free(struct ct_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->n = b->cap = 0;
}

const uint8_t *rd_bytes(struct ct_rd *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	return p;
}

uint32_t rd_u32(struct ct_rd *r)
{
	uint32_t v = 0;
	const uint8_t *p = rd_bytes(r, 4);
	if (p)
		memcpy(&v, p, 4);
	return v;
}

uint64_t rd_u64(struct ct_rd *r)
{
	uint64_t v = 0;
	const uint8_t *p = rd_bytes(r, 8);
	if (p)
		memcpy(&v, p, 8);
	return v;
}

uint64_t rd_uvar_long(struct ct_rd *r)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end) {
			r->bad = true;
			return 0;
		}
		uint8_t c = *r->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

char *rd_str(struct ct_rd *r)
{
	uint64_t n = rd_uvar(r);
	const uint8_t *p = rd_bytes(r, n);
	char *s = xmalloc(p ? n + 1 : 1);
	if (p)
		memcpy(s, p, n);
	s[p ? n : 0] = 0;
	return s;
}

uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

uint64_t hash_strn(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
	return h;
}

uint64_t hash_str(const char *s)
{
	return hash_strn(s, strlen(s));
}

static void map_grow(struct ct_map *m)
{
	struct ct_map nm = {0};
	nm.cap = m->cap ? m->cap * 2 : 64;
	nm.keys = xcalloc(nm.cap, sizeof(*nm.keys));
	nm.vals = xcalloc(nm.cap, sizeof(*nm.vals));
	nm.used = xcalloc(nm.cap, 1);
	MAP_FOREACH(m, i) *map_slot(&nm, m->keys[i], true) = m->vals[i];
	map_free(m);
	*m = nm;
}

void **map_slot(struct ct_map *m, uint64_t key, bool create)
{
	if (create && (m->n + 1) * 4 >= m->cap * 3)
		map_grow(m);
	if (!m->cap)
		return NULL;
	size_t mask = m->cap - 1;
	for (size_t i = hash64(key) & mask;; i = (i + 1) & mask) {
		if (!m->used[i]) {
			if (!create)
				return NULL;
			m->used[i] = 1;
			m->keys[i] = key;
			m->vals[i] = NULL;
			m->n++;
			return &m->vals[i];
		}
		if (m->keys[i] == key)
			return &m->vals[i];
	}
}

void *map_get(struct ct_map *m, uint64_t key)
{
	if (!m->n) /* (many maps are empty for most traces: no hash then) */
		return NULL;
	void **s = map_slot(m, key, false);
	return s ? *s : NULL;
}

void map_put(struct ct_map *m, uint64_t key, void *val)
{
	*map_slot(m, key, true) = val;
}

/* Linear-probing delete with backward shift: no tombstones, so long runs of
 * short-lived keys (goroutines) do not slow lookups down. */
bool map_del(struct ct_map *m, uint64_t key)
{
	if (!m->cap)
		return false;
	size_t mask = m->cap - 1, i = hash64(key) & mask;
	for (;; i = (i + 1) & mask) {
		if (!m->used[i])
			return false;
		if (m->keys[i] == key)
			break;
	}
	m->used[i] = 0;
	m->n--;
	for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
		size_t home = hash64(m->keys[j]) & mask;
		/* Move j back into the hole at i if its home is not in (i, j]. */
		bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!between) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			m->used[i] = 1;
			m->used[j] = 0;
			i = j;
		}
	}
	return true;
}

void map_free(struct ct_map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

static int parse_scaled(const char *s, double *num, const char **unit)
{
	char *end;
	errno = 0;
	if (!s || !*s)
		return -1;
	*num = strtod(s, &end);
	if (errno || end == s || *num < 0)
		return -1;
	*unit = end;
	return 0;
}

struct unit {
	const char *u;
	double mul;
};

/* "1.5ms" with UNITS: the number times the unit's multiplier. */
static int parse_with_units(const char *s, const struct unit *units, size_t n, uint64_t *out)
{
	double v;
	const char *u;
	if (parse_scaled(s, &v, &u))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(u, units[i].u)) {
			double x = v * units[i].mul + 0.5;
			/* ~1.8e10 s does not fit in 64 bits of ns: refuse it rather
			 * than wrap (a wrapped --since selected everything) */
			if (!(x < 18446744073709551616.0))
				return -1;
			*out = (uint64_t)x;
			return 0;
		}
	return -1;
}

int parse_duration(const char *s, uint64_t *ns)
{
	static const struct unit units[] = {
		{"", 1}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9},
	};
	return parse_with_units(s, units, sizeof(units) / sizeof(units[0]), ns);
}

int parse_size(const char *s, uint64_t *bytes)
{
	static const struct unit units[] = {
		{"", 1}, {"B", 1}, {"K", 1024.0}, {"KB", 1024.0}, {"KiB", 1024.0}, {"k", 1024.0},
		{"M", 1048576.0}, {"MB", 1048576.0}, {"MiB", 1048576.0}, {"m", 1048576.0},
		{"G", 1073741824.0}, {"GB", 1073741824.0}, {"GiB", 1073741824.0}, {"g", 1073741824.0},
	};
	return parse_with_units(s, units, sizeof(units) / sizeof(units[0]), bytes);
}

int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

bool glob_match(const char *pat, const char *s)
{
	return fnmatch(pat, s, 0) == 0;
}

uint64_t now_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

uint64_t now_real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* A plan holds ~850 bytes a probe site in blocks of every size (lefthook
 * with -F '*': 159,246 sites, 135 MB), and every fresh 4 KiB page of it
 * was a page fault: 32,600 of them, ~30% of that plan's 2.2 s on the
 * 2-vCPU VM, whose hypervisor makes a fault dear.  Transparent huge pages
 * make a fault of 512 of them (1,700 faults, 1.3-1.7 s), as glibc's
 * glibc.malloc.hugetlb=1 tunable would -- which only an environment
 * variable set before calltrace started can ask for, and the traced
 * program would inherit it.  So: the heap grows HEAP_STEP at a time
 * (address space only, until a page is touched), blocks up to the largest
 * threshold glibc takes come from it rather than mmaps of their own, and
 * it is marked for huge pages once grown -- where address space costs
 * nothing until used (address_space_free). */
#define HEAP_STEP (256u << 20)
#define HUGE_PAGE (2u << 20)

/* Is address space cheap here: no limit on it, and the kernel counts only
 * the pages touched (not vm.overcommit_memory=2)?  Else a step of the heap
 * may be refused where calltrace's memory alone would fit. */
static bool address_space_free(void)
{
	struct rlimit as, data;
	if (getrlimit(RLIMIT_AS, &as) || getrlimit(RLIMIT_DATA, &data) || as.rlim_cur != RLIM_INFINITY ||
	    data.rlim_cur != RLIM_INFINITY)
		return false;
	char mode = '0';
	int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && read(fd, &mode, 1) != 1)
		mode = '2';
	if (fd >= 0)
		close(fd);
	return mode != '2';
}

void ct_heap_in_huge_pages(void)
{
	if (!address_space_free() || mallopt(M_TOP_PAD, HEAP_STEP) != 1 ||
	    mallopt(M_TRIM_THRESHOLD, 2 * HEAP_STEP) != 1 || mallopt(M_MMAP_THRESHOLD, 32u << 20) != 1)
		return;
	/* more than the heap has left: it grows, by HEAP_STEP more */
	void *first = malloc(HUGE_PAGE);
	uintptr_t lo = ((uintptr_t)first + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	uintptr_t hi = (uintptr_t)sbrk(0) & ~(uintptr_t)(HUGE_PAGE - 1);
	if (first && hi > lo) /* (no THP in this kernel: EINVAL, and the heap is as it was) */
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
	free(first);
}
