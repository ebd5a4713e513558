/* record --otlp-endpoint (see otlp_export.h). */
#include "export/otlp_export.h"
#include "export/otlp_http.h"
#include "reconstruct/reconstruct.h"
#include "render/otlp.h"
#include "util/util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POLL_NS 100000000ULL      /* look for new events this often */
#define FLUSH_NS 1000000000ULL    /* a partial request waits at most this long */
#define FINISH_GRACE_NS 10000000000ULL

struct ct_otlp_export {
	struct ct_trace t;
	struct ct_otlp *spans;
	struct ct_otlp_http *http;
	pthread_t thread;
	atomic_bool done;       /* the file is complete */
	uint64_t end_ts;
};

static int submit(void *ctx, const uint8_t *body, size_t n, uint64_t nspans)
{
	ct_otlp_http_submit(ctx, body, n, nspans); /* a drop is counted there */
	return 0;
}

static void *tail_record(void *arg)
{
	struct ct_otlp_export *x = arg;
	struct ct_trace *t = &x->t;
	/* corrected like replay's spans */
	struct ct_recon *r = ct_recon_for_trace(t, &ct_otlp_ops, x->spans);
	struct ct_event_iter it;
	struct ct_rec_event ev;
	ct_iter_init(&it, t);
	it.follow = true;
	uint64_t last_flush = now_mono_ns(), last_ts = t->first_ts;
	for (;;) {
		/* Read after seeing `done`, so the last pass covers the whole file. */
		bool last = atomic_load(&x->done);
		while (ct_iter_next(&it, &ev)) {
			ct_recon_set_sites(r, t->sites, t->nsites); /* may grow (--follow) */
			ct_recon_set_funcs(r, t->funcs, t->nfuncs);
			ct_recon_event(r, &ev);
			if (ev.ts > last_ts)
				last_ts = ev.ts;
		}
		if (last)
			break;
		uint64_t now = now_mono_ns();
		if (now - last_flush >= FLUSH_NS) {
			ct_otlp_flush(x->spans);
			last_flush = now;
		}
		struct timespec nap = {0, (long)POLL_NS};
		nanosleep(&nap, NULL);
	}
	/* (the tables as they are now: a chunk read after the last event may
	 * have moved them, and the calls still open are closed with them) */
	ct_recon_set_sites(r, t->sites, t->nsites);
	ct_recon_set_funcs(r, t->funcs, t->nfuncs);
	ct_recon_finish(r, x->end_ts > last_ts ? x->end_ts : last_ts);
	ct_otlp_flush(x->spans);
	ct_recon_free(r);
	ct_iter_free(&it);
	return NULL;
}

struct ct_otlp_export *ct_otlp_export_start(int fd, const char *name, const struct ct_otlp_export_opts *o)
{
	struct ct_otlp_export *x = xcalloc(1, sizeof(*x));
	if (ct_trace_open_fd(&x->t, fd, name)) {
		free(x);
		return NULL;
	}
	struct ct_otlp_http_opts ho = {.url = o->url, .json = o->json};
	x->http = ct_otlp_http_start(&ho);
	struct ct_otlp_opts so = {.service = o->service, .proto = !o->json, .with_values = o->with_values,
				  .request = submit};
	if (x->http) {
		so.ctx = x->http;
		x->spans = ct_otlp_new(&x->t, &so);
	}
	if (!x->spans || pthread_create(&x->thread, NULL, tail_record, x)) {
		if (x->spans)
			ct_fail("cannot start the OTLP export thread");
		ct_otlp_free(x->spans);
		ct_otlp_http_free(x->http);
		ct_trace_close(&x->t);
		free(x);
		return NULL;
	}
	return x;
}

uint64_t ct_otlp_export_finish(struct ct_otlp_export *x, uint64_t end_ts, const volatile sig_atomic_t *signals)
{
	if (!x)
		return 0;
	x->end_ts = end_ts;
	atomic_store(&x->done, true);
	pthread_join(x->thread, NULL);
	ct_otlp_http_finish(x->http, FINISH_GRACE_NS, signals);
	uint64_t dropped = ct_otlp_http_report(x->http);
	if (ct_otlp_lost(x->spans))
		ct_warn("otlp: %llu events were lost while recording; spans may be missing",
			(unsigned long long)ct_otlp_lost(x->spans));
	ct_otlp_free(x->spans);
	ct_otlp_http_free(x->http);
	ct_trace_close(&x->t);
	free(x);
	return dropped;
}
