/* OTLP/HTTP client: request bodies (built by render/otlp.c) go into a
 * bounded queue and a thread of their own POSTs them to the collector, so
 * whoever submits never waits for the network.  Plain HTTP/1.1 over TCP (no
 * TLS), one kept-alive connection, the OTLP specification's retry rules:
 * connection failures, disconnects and 429/502/503/504 are retried with
 * exponential backoff and jitter (Retry-After honoured), other answers are
 * final.  A request that still fails, or finds the queue full, is dropped
 * and its spans counted. */
#ifndef CT_OTLP_HTTP_H
#define CT_OTLP_HTTP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ct_otlp_http_opts {
	const char *url;        /* http://HOST[:PORT][/PATH]; port 4318, path /v1/traces by default */
	bool json;              /* bodies are OTLP/JSON (else binary protobuf) */
	bool block;             /* submit waits for room instead of dropping (dump) */
	size_t max_queue_bytes; /* 0: 16 MiB */
};

struct ct_otlp_http_stats {
	uint64_t sent_spans, sent_requests, dropped_spans, dropped_requests, retries;
	char last_error[256]; /* why the last failure failed ("" if none) */
};

struct ct_otlp_http;

/* Whether URL is one ct_otlp_http_start takes (else one line in ct_error()). */
bool ct_otlp_http_url_ok(const char *url);
/* "http/protobuf" or "http/json" (OTEL_EXPORTER_OTLP_PROTOCOL's values):
 * 0 and *JSON set, or -1 with one line in ct_error(). */
int ct_otlp_protocol_parse(const char *s, bool *json);
/* Checks the URL and starts the sending thread (no connection yet).  NULL
 * with one line in ct_error() when the URL is not one we can send to. */
struct ct_otlp_http *ct_otlp_http_start(const struct ct_otlp_http_opts *o);
/* Queues a copy of BODY/N holding NSPANS spans.  False if it was dropped
 * (queue full, or the client is finishing). */
bool ct_otlp_http_submit(struct ct_otlp_http *h, const uint8_t *body, size_t n, uint64_t nspans);
/* Sends what is queued, for at most GRACE_NS (and without waiting for an
 * endpoint that is down, nor, once *SIGNALS is not 0, for any: a count of
 * signals that mean "stop waiting", or NULL), drops the rest, stops the
 * thread. */
void ct_otlp_http_finish(struct ct_otlp_http *h, uint64_t grace_ns, const volatile sig_atomic_t *signals);
void ct_otlp_http_get_stats(struct ct_otlp_http *h, struct ct_otlp_http_stats *st);
/* The URL requests go to (normalized, with port and path). */
const char *ct_otlp_http_url(const struct ct_otlp_http *h);
void ct_otlp_http_free(struct ct_otlp_http *h);

/* "calltrace: otlp: N spans sent to URL in K requests[; M spans dropped (why)]"
 * on stderr; returns the number of spans dropped. */
uint64_t ct_otlp_http_report(struct ct_otlp_http *h);

#endif
