/* OTLP/HTTP client (see otlp_http.h).  All network work happens on the
 * client's own thread; the queue between it and the submitter is bounded in
 * bytes, so a collector that is slow or gone costs dropped spans, counted,
 * never memory or the submitter's time (unless it asked to block: dump). */
#include "export/otlp_http.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_QUEUE_BYTES (16u << 20)
#define CONNECT_TIMEOUT_MS 2000
#define IO_TIMEOUT_S 10
#define MAX_ATTEMPTS 6              /* one try and five retries */
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000
#define RETRY_AFTER_MAX_MS 30000
#define MAX_HEADER_BYTES (64u << 10)
#define MAX_RESPONSE_BYTES (4u << 20) /* the specification's recommended limit */

struct item {
	struct item *next;
	uint8_t *body;
	size_t n;
	uint64_t nspans;
};

struct ct_otlp_http {
	char *host, *port, *path, *url;
	bool json, block;
	size_t max_bytes;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t mu;
	pthread_cond_t work, room;
	struct item *head, *tail;
	size_t queued_bytes;
	bool finishing, given_up;
	uint64_t deadline;
	const char *aborted; /* why finish stopped the sending: NULL while it may go on */
	struct ct_otlp_http_stats st;
	/* the thread's own */
	int fd;
	unsigned seed;
	uint8_t rbuf[16384];
	size_t rpos, rlen;
};

/* ---- URL ---- */

static int parse_url(struct ct_otlp_http *h, const char *url)
{
	if (!strncasecmp(url, "https://", 8))
		return ct_fail("--otlp-endpoint %s: calltrace speaks plain HTTP only (no TLS); send to a local collector or a TLS-terminating proxy with http://",
			       url);
	if (strncasecmp(url, "http://", 7))
		return ct_fail("--otlp-endpoint needs a URL like http://HOST:4318, not '%s'", url);
	const char *p = url + 7, *end = p + strcspn(p, "/?#");
	const char *host = p, *host_end, *port = NULL;
	if (*p == '[') { /* [v6 address] */
		host = p + 1;
		host_end = memchr(host, ']', (size_t)(end - host));
		if (!host_end)
			return ct_fail("--otlp-endpoint %s: unclosed '[' in the host", url);
		if (host_end[1] == ':')
			port = host_end + 2;
		else if (host_end + 1 != end)
			return ct_fail("--otlp-endpoint %s: bad host", url);
	} else {
		host_end = memchr(host, ':', (size_t)(end - host));
		if (host_end)
			port = host_end + 1;
		else
			host_end = end;
	}
	if (host_end == host)
		return ct_fail("--otlp-endpoint %s: no host", url);
	if (memchr(host, '@', (size_t)(end - host)))
		return ct_fail("--otlp-endpoint %s: user names in URLs are not supported", url);
	size_t plen = port ? (size_t)(end - port) : 0;
	if (port && (!plen || strspn(port, "0123456789") < plen || plen > 5 || atoi(port) < 1 || atoi(port) > 65535))
		return ct_fail("--otlp-endpoint %s: bad port", url);
	h->host = xasprintf("%.*s", (int)(host_end - host), host);
	h->port = port ? xasprintf("%.*s", (int)plen, port) : xstrdup("4318");
	const char *path = *end == '/' ? end : "";
	size_t pathlen = strcspn(path, "#");
	h->path = pathlen > 1 ? xasprintf("%.*s", (int)pathlen, path) : xstrdup("/v1/traces");
	bool v6 = strchr(h->host, ':') != NULL;
	h->url = xasprintf("http://%s%s%s:%s%s", v6 ? "[" : "", h->host, v6 ? "]" : "", h->port, h->path);
	for (const char *c = h->host; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == '/' || *c == '\\')
			return ct_fail("--otlp-endpoint %s: bad host", url);
	for (const char *c = h->path; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return ct_fail("--otlp-endpoint %s: the path has spaces or control characters", url);
	return 0;
}

bool ct_otlp_http_url_ok(const char *url)
{
	struct ct_otlp_http h;
	memset(&h, 0, sizeof(h));
	bool ok = parse_url(&h, url) == 0;
	free(h.host);
	free(h.port);
	free(h.path);
	free(h.url);
	return ok;
}

int ct_otlp_protocol_parse(const char *s, bool *json)
{
	if (!strcmp(s, "http/protobuf") || !strcmp(s, "http/json")) {
		*json = !strcmp(s, "http/json");
		return 0;
	}
	return ct_fail("--otlp-protocol is http/protobuf (default) or http/json, not '%s' (no gRPC)", s);
}

/* ---- connection ---- */

/* FD becomes the connection (-1: none).  Changed under the lock, so that
 * finish can shut down the socket the thread is blocked on. */
static void set_fd(struct ct_otlp_http *h, int fd)
{
	pthread_mutex_lock(&h->mu);
	if (fd >= 0 && h->aborted)
		shutdown(fd, SHUT_RDWR); /* (given up meanwhile: fails at once) */
	h->fd = fd;
	pthread_mutex_unlock(&h->mu);
}

static void disconnect(struct ct_otlp_http *h)
{
	int fd = h->fd;
	set_fd(h, -1);
	if (fd >= 0)
		close(fd);
	h->rpos = h->rlen = 0;
}

static int dial(struct ct_otlp_http *h, char *err, size_t errn)
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_family = AF_UNSPEC;
	int rc = getaddrinfo(h->host, h->port, &hints, &res);
	if (rc) {
		snprintf(err, errn, "cannot resolve %s: %s", h->host, gai_strerror(rc));
		return -1;
	}
	int fd = -1;
	snprintf(err, errn, "cannot connect to %s:%s", h->host, h->port);
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		set_fd(h, fd); /* (finish may shut it down, ending the connect) */
		int e = 0;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			e = errno;
			if (e == EINPROGRESS) {
				struct pollfd pf = {fd, POLLOUT, 0};
				int pr = poll(&pf, 1, CONNECT_TIMEOUT_MS);
				socklen_t len = sizeof(e);
				if (pr <= 0)
					e = pr == 0 ? ETIMEDOUT : errno;
				else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
					e = errno;
			}
		}
		if (e) {
			snprintf(err, errn, "cannot connect to %s:%s: %s", h->host, h->port, strerror(e));
			set_fd(h, -1);
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		return -1;
	int flags = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &flags, sizeof(flags));
	struct timeval tv = {IO_TIMEOUT_S, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* back to blocking, bounded by the timeouts above */
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		snprintf(err, errn, "socket: %s", strerror(errno));
		set_fd(h, -1);
		close(fd);
		return -1;
	}
	h->rpos = h->rlen = 0;
	return 0;
}

static int send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Buffered reading of the response. */
static int fill(struct ct_otlp_http *h)
{
	if (h->rpos == h->rlen)
		h->rpos = h->rlen = 0;
	if (h->rlen == sizeof(h->rbuf)) {
		memmove(h->rbuf, h->rbuf + h->rpos, h->rlen - h->rpos);
		h->rlen -= h->rpos;
		h->rpos = 0;
	}
	for (;;) {
		ssize_t r = recv(h->fd, h->rbuf + h->rlen, sizeof(h->rbuf) - h->rlen, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		h->rlen += (size_t)r;
		return 0;
	}
}

/* One line without its CRLF into OUT (cut to N-1 bytes); -1 at EOF/error. */
static int read_line(struct ct_otlp_http *h, char *out, size_t n, size_t *total)
{
	size_t k = 0;
	for (;;) {
		if (h->rpos == h->rlen && fill(h))
			return -1;
		char c = (char)h->rbuf[h->rpos++];
		if (++*total > MAX_HEADER_BYTES)
			return -1;
		if (c == '\n')
			break;
		if (k + 1 < n)
			out[k++] = c;
	}
	if (k && out[k - 1] == '\r')
		k--;
	out[k] = 0;
	return 0;
}

static int skip_bytes(struct ct_otlp_http *h, uint64_t n)
{
	while (n) {
		if (h->rpos == h->rlen && fill(h))
			return -1;
		size_t take = h->rlen - h->rpos < n ? h->rlen - h->rpos : (size_t)n;
		h->rpos += take;
		n -= take;
	}
	return 0;
}

enum outcome { SENT, RETRY, DOWN, FINAL }; /* DOWN: no connection could be made */

/* One POST of IT on the open connection.  *RETRY_MS: the server's
 * Retry-After, if any.  *STALE: the connection died before any answer (a
 * kept-alive connection the server closed meanwhile). */
static enum outcome post(struct ct_otlp_http *h, const struct item *it, char *err, size_t errn, uint64_t *retry_ms,
			 bool *stale)
{
	char head[1024];
	int hn = snprintf(head, sizeof(head),
			  "POST %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: calltrace/0.1.0\r\nContent-Type: %s\r\n"
			  "Content-Length: %zu\r\nConnection: keep-alive\r\n\r\n",
			  h->path, strchr(h->host, ':') ? "[" : "", h->host, strchr(h->host, ':') ? "]" : "", h->port,
			  h->json ? "application/json" : "application/x-protobuf", it->n);
	*stale = false;
	if (hn <= 0 || (size_t)hn >= sizeof(head)) {
		snprintf(err, errn, "request header too long");
		return FINAL;
	}
	if (send_all(h->fd, head, (size_t)hn) || send_all(h->fd, it->body, it->n)) {
		snprintf(err, errn, "sending to %s failed: %s", h->url, strerror(errno));
		*stale = true;
		return RETRY;
	}
	char line[1024];
	size_t total = 0;
	if (read_line(h, line, sizeof(line), &total)) {
		snprintf(err, errn, "%s closed the connection without an answer", h->url);
		*stale = total == 0;
		return RETRY;
	}
	int status = 0;
	if (sscanf(line, "HTTP/1.%*d %d", &status) != 1 || status < 100 || status > 999) {
		snprintf(err, errn, "%s did not answer HTTP: '%.60s'", h->url, line);
		disconnect(h);
		return FINAL;
	}
	uint64_t clen = 0;
	bool has_len = false, chunked = false, close_after = false;
	for (;;) {
		if (read_line(h, line, sizeof(line), &total)) {
			snprintf(err, errn, "%s: the answer's headers end early", h->url);
			return RETRY;
		}
		if (!line[0])
			break;
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = 0;
		const char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		if (!strcasecmp(line, "content-length")) {
			has_len = true;
			clen = strtoull(v, NULL, 10);
		} else if (!strcasecmp(line, "transfer-encoding")) {
			chunked = strcasestr(v, "chunked") != NULL;
		} else if (!strcasecmp(line, "connection")) {
			close_after = strcasestr(v, "close") != NULL;
		} else if (!strcasecmp(line, "retry-after") && strspn(v, "0123456789") == strlen(v) && *v) {
			uint64_t secs = strtoull(v, NULL, 10);
			*retry_ms = secs > RETRY_AFTER_MAX_MS / 1000 ? RETRY_AFTER_MAX_MS : secs * 1000;
		}
	}
	/* The body (an ExportTraceServiceResponse or a Status) is not needed:
	 * read past it to keep the connection usable. */
	bool body_ok = true;
	if (chunked) {
		for (;;) {
			uint64_t size;
			if (read_line(h, line, sizeof(line), &(size_t){0})) {
				body_ok = false;
				break;
			}
			size = strtoull(line, NULL, 16);
			if (!size) {
				while (!read_line(h, line, sizeof(line), &(size_t){0}) && line[0])
					; /* trailers */
				break;
			}
			if (size > MAX_RESPONSE_BYTES || skip_bytes(h, size + 2)) {
				body_ok = false;
				break;
			}
		}
	} else if (has_len) {
		body_ok = clen <= MAX_RESPONSE_BYTES && !skip_bytes(h, clen);
	} else if (status >= 200 && status != 204 && status != 304) {
		close_after = true; /* the body ends with the connection */
	}
	if (!body_ok || close_after)
		disconnect(h);
	if (status >= 200 && status < 300)
		return SENT;
	snprintf(err, errn, "%s answered HTTP %d", h->url, status);
	if (status == 429 || status == 502 || status == 503 || status == 504)
		return RETRY;
	return FINAL;
}

/* One attempt at sending IT, connecting if needed (and once more on a
 * stale kept-alive connection). */
static enum outcome attempt(struct ct_otlp_http *h, const struct item *it, char *err, size_t errn, uint64_t *retry_ms)
{
	for (int tries = 0; tries < 2; tries++) {
		bool fresh = h->fd < 0;
		if (fresh && dial(h, err, errn))
			return DOWN;
		bool stale;
		enum outcome o = post(h, it, err, errn, retry_ms, &stale);
		if (o == RETRY && h->fd >= 0 && stale)
			disconnect(h);
		if (o == RETRY && stale && !fresh)
			continue;
		if (o == RETRY)
			disconnect(h);
		return o;
	}
	return RETRY;
}

/* ---- queue and thread ---- */

static void drop_locked(struct ct_otlp_http *h, struct item *it)
{
	h->st.dropped_spans += it->nspans;
	h->st.dropped_requests++;
	free(it->body);
	free(it);
}

static struct item *pop_locked(struct ct_otlp_http *h)
{
	struct item *it = h->head;
	h->head = it->next;
	if (!h->head)
		h->tail = NULL;
	h->queued_bytes -= it->n;
	pthread_cond_broadcast(&h->room);
	return it;
}

static void drop_all_locked(struct ct_otlp_http *h)
{
	while (h->head)
		drop_locked(h, pop_locked(h));
}

static void wait_ms_locked(struct ct_otlp_http *h, uint64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t ns = (uint64_t)ts.tv_nsec + (ms % 1000) * 1000000ULL;
	ts.tv_sec += (time_t)(ms / 1000 + ns / 1000000000ULL);
	ts.tv_nsec = (long)(ns % 1000000000ULL);
	pthread_cond_timedwait(&h->work, &h->mu, &ts);
}

static void *sender(void *arg)
{
	struct ct_otlp_http *h = arg;
	unsigned attempts = 0;
	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (!h->head && !h->finishing)
			pthread_cond_wait(&h->work, &h->mu);
		if (!h->head)
			break;
		if (h->aborted) {
			snprintf(h->st.last_error, sizeof(h->st.last_error), "%s", h->aborted);
			drop_all_locked(h);
			break;
		}
		if (h->finishing && now_mono_ns() >= h->deadline) {
			snprintf(h->st.last_error, sizeof(h->st.last_error), "%s did not take everything in time",
				 h->url);
			drop_all_locked(h);
			break;
		}
		struct item *it = h->head; /* stays queued while it is tried */
		pthread_mutex_unlock(&h->mu);
		char err[256] = "";
		uint64_t retry_ms = 0;
		enum outcome o = attempt(h, it, err, sizeof(err), &retry_ms);
		pthread_mutex_lock(&h->mu);
		if (o != SENT && h->aborted) {
			/* (what failed is what finish's shutdown ended) */
			snprintf(h->st.last_error, sizeof(h->st.last_error), "%s", h->aborted);
			drop_all_locked(h);
			break;
		}
		if (o == SENT) {
			pop_locked(h);
			h->st.sent_spans += it->nspans;
			h->st.sent_requests++;
			free(it->body);
			free(it);
			attempts = 0;
			continue;
		}
		snprintf(h->st.last_error, sizeof(h->st.last_error), "%s", err);
		attempts++;
		bool gone = o == DOWN && h->finishing && !h->block;
		if (o == FINAL || attempts >= MAX_ATTEMPTS || gone) {
			drop_locked(h, pop_locked(h));
			attempts = 0;
			if (gone || (h->block && o != FINAL)) {
				/* record has ended and nothing listens: no waiting;
				 * dump: retried in vain, the rest would be too */
				h->given_up = h->block;
				drop_all_locked(h);
			}
			continue;
		}
		h->st.retries++;
		uint64_t ms = BACKOFF_FIRST_MS << (attempts - 1);
		if (ms > BACKOFF_MAX_MS)
			ms = BACKOFF_MAX_MS;
		ms = ms / 2 + (uint64_t)rand_r(&h->seed) % (ms + 1); /* jitter: 0.5x to 1.5x */
		if (retry_ms)
			ms = retry_ms;
		uint64_t now = now_mono_ns();
		if (h->finishing && h->deadline > now && ms > (h->deadline - now) / 1000000)
			ms = (h->deadline - now) / 1000000 + 1;
		wait_ms_locked(h, ms);
	}
	pthread_mutex_unlock(&h->mu);
	disconnect(h);
	return NULL;
}

struct ct_otlp_http *ct_otlp_http_start(const struct ct_otlp_http_opts *o)
{
	struct ct_otlp_http *h = xcalloc(1, sizeof(*h));
	h->fd = -1;
	if (parse_url(h, o->url)) {
		ct_otlp_http_free(h);
		return NULL;
	}
	h->json = o->json;
	h->block = o->block;
	h->max_bytes = o->max_queue_bytes ? o->max_queue_bytes : DEFAULT_QUEUE_BYTES;
	h->seed = (unsigned)(now_mono_ns() ^ (uint64_t)getpid());
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->work, NULL);
	pthread_cond_init(&h->room, NULL);
	if (pthread_create(&h->thread, NULL, sender, h)) {
		ct_fail("cannot start the OTLP sender thread");
		ct_otlp_http_free(h);
		return NULL;
	}
	h->thread_started = true;
	return h;
}

bool ct_otlp_http_submit(struct ct_otlp_http *h, const uint8_t *body, size_t n, uint64_t nspans)
{
	struct item *it = xcalloc(1, sizeof(*it));
	it->n = n;
	it->nspans = nspans;
	pthread_mutex_lock(&h->mu);
	while (h->block && h->head && h->queued_bytes + n > h->max_bytes && !h->finishing && !h->given_up)
		pthread_cond_wait(&h->room, &h->mu);
	bool full = h->head && h->queued_bytes + n > h->max_bytes;
	if (full || h->finishing || h->given_up) {
		drop_locked(h, it);
		pthread_mutex_unlock(&h->mu);
		return false;
	}
	it->body = xmalloc(n ? n : 1);
	memcpy(it->body, body, n);
	if (h->tail)
		h->tail->next = it;
	else
		h->head = it;
	h->tail = it;
	h->queued_bytes += n;
	pthread_cond_signal(&h->work);
	pthread_mutex_unlock(&h->mu);
	return true;
}

void ct_otlp_http_finish(struct ct_otlp_http *h, uint64_t grace_ns, const volatile sig_atomic_t *signals)
{
	if (!h->thread_started)
		return;
	pthread_mutex_lock(&h->mu);
	h->finishing = true;
	h->deadline = now_mono_ns() + grace_ns;
	pthread_cond_broadcast(&h->work);
	pthread_cond_broadcast(&h->room);
	pthread_mutex_unlock(&h->mu);
	/* The thread may be blocked on a collector that takes the connection
	 * and never answers (10 s a read): at the deadline, or at a signal
	 * (Ctrl-C: whoever waits wants out), its socket is shut down, which
	 * ends what it waits for at once. */
	for (;;) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_timedjoin_np(h->thread, NULL, &ts) == 0)
			break;
		bool interrupted = signals && *signals;
		if (!interrupted && now_mono_ns() < h->deadline)
			continue;
		pthread_mutex_lock(&h->mu);
		if (!h->aborted) {
			static char why[300];
			snprintf(why, sizeof(why), interrupted ? "interrupted while waiting for %s" : "%s did not take everything in time",
				 h->url);
			h->aborted = why;
		}
		if (h->fd >= 0)
			shutdown(h->fd, SHUT_RDWR);
		pthread_cond_broadcast(&h->work);
		pthread_cond_broadcast(&h->room);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->thread, NULL);
		break;
	}
	h->thread_started = false;
}

void ct_otlp_http_get_stats(struct ct_otlp_http *h, struct ct_otlp_http_stats *st)
{
	pthread_mutex_lock(&h->mu);
	*st = h->st;
	pthread_mutex_unlock(&h->mu);
}

const char *ct_otlp_http_url(const struct ct_otlp_http *h)
{
	return h->url;
}

uint64_t ct_otlp_http_report(struct ct_otlp_http *h)
{
	struct ct_otlp_http_stats st;
	ct_otlp_http_get_stats(h, &st);
	fprintf(stderr, "calltrace: otlp: %" PRIu64 " spans sent to %s in %" PRIu64 " requests", st.sent_spans, h->url,
		st.sent_requests);
	if (st.dropped_spans)
		fprintf(stderr, "; %" PRIu64 " spans dropped (%s)", st.dropped_spans,
			st.last_error[0] ? st.last_error : "queue full");
	fputc('\n', stderr);
	return st.dropped_spans;
}

void ct_otlp_http_free(struct ct_otlp_http *h)
{
	if (!h)
		return;
	if (h->thread_started)
		ct_otlp_http_finish(h, 0, NULL);
	while (h->head) {
		struct item *it = h->head;
		h->head = it->next;
		free(it->body);
		free(it);
	}
	free(h->host);
	free(h->port);
	free(h->path);
	free(h->url);
	free(h);
}
