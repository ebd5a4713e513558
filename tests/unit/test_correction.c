/* Overhead correction in the reconstruction (struct ct_costs): exact
 * arithmetic on a synthetic stream -- what a call's corrected duration is,
 * that nesting survives, that --raw leaves the measured times, each hit
 * priced by its instruction's class, and the calib META round trip. */
#include "unit.h"

#include "reconstruct/reconstruct.h"
#include "render/render.h"
#include "util/util.h"

enum { S_P_ENT, S_P_RET, S_C_ENT, S_C_RET, NSITES };

/* entries at emulated instructions, exits at single-stepped RETs (as an
 * older calltrace wrote them: no RETINSN flag) */
static const struct ct_file_site csites[NSITES] = {
	{S_P_ENT, 0x1000, 0, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_P_RET, 0x1010, 0, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, CT_SITEF_STEPPED},
	{S_C_ENT, 0x2000, 1, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_C_RET, 0x2010, 1, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, CT_SITEF_STEPPED},
};
/* the same calls, the child's entry at its caller's `call`, its exits at
 * `ret`s */
static const struct ct_file_site ksites[NSITES] = {
	{S_P_ENT, 0x1000, 0, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	{S_P_RET, 0x1010, 0, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, CT_SITEF_STEPPED | CT_SITEF_RETINSN},
	{S_C_ENT, 0x2000, 1, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, CT_SITEF_CALLINSN},
	{S_C_RET, 0x2010, 1, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, CT_SITEF_STEPPED | CT_SITEF_RETINSN},
};
static const struct ct_file_site *use_sites = csites;

static struct ct_call got[8];
static size_t ngot;

static void on_exit_call(void *ctx, const struct ct_call *c)
{
	if (ngot < 8)
		got[ngot++] = *c;
}

static uint64_t feed_goid = 1; /* 0: a thread's calls */

static uint32_t feed_silent; /* the next event's ct_event.silent */
static int32_t feed_extra[8];  /* the Nth event's ct_event.extra_ns */
static size_t nfed;

static void feed(struct ct_recon *r, uint32_t site, uint64_t ts, uint64_t key)
{
	struct ct_rec_event ev = {0};
	ev.silent = feed_silent;
	feed_silent = 0;
	ev.extra_ns = nfed < 8 ? feed_extra[nfed] : 0;
	nfed++;
	ev.ts = ts;
	ev.goid = feed_goid;
	ev.key = key;
	ev.pid = ev.tid = 7;
	ev.site = site;
	ev.kind = use_sites[site].kind;
	ct_recon_event(r, &ev);
}

/* parent { child x2 }: child 10 us measured each, parent 60 us; the first
 * child's exit carries SILENT (ct_event.silent) */
static void run_silent(const struct ct_costs *c, uint32_t silent)
{
	static const struct ct_recon_ops ops = {NULL, on_exit_call, NULL, NULL};
	struct ct_recon *r = ct_recon_new(use_sites, NSITES, true, &ops, NULL);
	if (c)
		ct_recon_set_costs(r, c);
	ngot = 0;
	nfed = 0;
	feed(r, S_P_ENT, 100000, 100);
	feed(r, S_C_ENT, 110000, 200);
	feed_silent = silent;
	feed(r, S_C_RET, 120000, 200);
	feed(r, S_C_ENT, 130000, 200);
	feed(r, S_C_RET, 140000, 200);
	feed(r, S_P_RET, 160000, 100);
	ct_recon_finish(r, 200000);
	ct_recon_free(r);
}

static void run(const struct ct_costs *c)
{
	run_silent(c, 0);
}

TEST(correction_arithmetic)
{
	struct ct_costs c;
	CHECK(ct_costs_parse("emulated=1000 stepped=5000 emulated+stepped=1500 args=300 calls=100 ms=9.5", &c));
	run(&c);
	CHECK_EQ_U(ngot, 3);
	/* a child: measured minus its entry hit's end and exit hit's start */
	CHECK_EQ_U(got[0].ts_exit - got[0].ts_entry, 10000 - 1500);
	CHECK_EQ_U(got[1].ts_exit - got[1].ts_entry, 10000 - 1500);
	CHECK_EQ_U(got[0].raw_exit - got[0].raw_entry, 10000);
	/* the parent: minus its own share and both children's whole hits */
	CHECK_EQ_U(got[2].ts_exit - got[2].ts_entry, 60000 - 1500 - 2 * (1000 + 5000));
	CHECK_EQ_U(got[2].raw_exit - got[2].raw_entry, 60000);
	/* nested on the corrected clock */
	CHECK(got[0].ts_entry >= got[2].ts_entry && got[1].ts_exit <= got[2].ts_exit);
	CHECK(got[0].ts_exit <= got[1].ts_entry);
}

/* Hits before an event that sent none (ct_event.silent: 2.5 emulated
 * hits' worth before the first child's exit) are taken out of the calls
 * open around them, before the event. */
TEST(correction_silent_hits)
{
	struct ct_costs c;
	CHECK(ct_costs_parse("emulated=1000 stepped=5000 emulated+stepped=1500 args=300 calls=100 ms=9.5", &c));
	run_silent(&c, 5 * CT_SILENT_UNIT / 2);
	CHECK_EQ_U(ngot, 3);
	CHECK_EQ_U(got[0].ts_exit - got[0].ts_entry, 10000 - 1500 - 2500);
	CHECK_EQ_U(got[1].ts_exit - got[1].ts_entry, 10000 - 1500);
	CHECK_EQ_U(got[2].ts_exit - got[2].ts_entry, 60000 - 1500 - 2 * (1000 + 5000) - 2500);
	CHECK_EQ_U(got[0].raw_exit - got[0].raw_entry, 10000);
}

/* An event's BPF time beyond the calibration's (ct_event.extra_ns, before
 * its clock read) comes out of the calls open around it before it, as its
 * hit's own start does; less (< 0) puts time back, never more than the
 * hit's start. */
TEST(correction_bpf_extra)
{
	struct ct_costs c;
	CHECK(ct_costs_parse("emulated=1000 stepped=5000 emulated+stepped=1500 args=300 calls=100 ms=9.5", &c));
	/* events: parent entry, child entry, child exit (+800), child entry,
	 * child exit (-300), parent exit */
	int32_t extra[8] = {0, 0, 800, 0, -300, 0};
	memcpy(feed_extra, extra, sizeof(extra));
	run(&c);
	CHECK_EQ_U(ngot, 3);
	CHECK_EQ_U(got[0].ts_exit - got[0].ts_entry, 10000 - 1500 - 800);
	CHECK_EQ_U(got[1].ts_exit - got[1].ts_entry, 10000 - 1500 + 300);
	CHECK_EQ_U(got[2].ts_exit - got[2].ts_entry, 60000 - 1500 - 2 * (1000 + 5000) - 800 + 300);
	CHECK_EQ_U(got[0].raw_exit - got[0].raw_entry, 10000);
	/* the child's entry hit was cheaper than calibrated by more than its
	 * whole start: it gives back that start at most */
	int32_t less[8] = {0, -900000, 0, 0, 0, 0};
	memcpy(feed_extra, less, sizeof(less));
	run(&c);
	CHECK_EQ_U(ngot, 3);
	CHECK(got[2].ts_exit - got[2].ts_entry <= 60000);
	CHECK(got[2].ts_exit - got[2].ts_entry > 60000 - 1500 - 2 * (1000 + 5000));
	CHECK_EQ_U(got[0].ts_exit - got[0].ts_entry, 10000 - 1500);
	memset(feed_extra, 0, sizeof(feed_extra));
}

TEST(correction_never_below_zero_and_raw)
{
	struct ct_costs c;
	CHECK(ct_costs_parse("emulated=50000 stepped=90000 emulated+stepped=80000 args=0 calls=100 ms=1.0", &c));
	run(&c);
	CHECK_EQ_U(ngot, 3);
	for (size_t i = 0; i < 3; i++) {
		CHECK(got[i].ts_exit >= got[i].ts_entry);
		CHECK(got[i].ts_exit - got[i].ts_entry <= got[i].raw_exit - got[i].raw_entry);
	}
	run(NULL); /* no calibration (or --raw): as measured */
	CHECK_EQ_U(got[2].ts_exit - got[2].ts_entry, 60000);
	CHECK_EQ_U(got[2].ts_entry, got[2].raw_entry);
}

TEST(correction_per_class)
{
	struct ct_costs c;
	CHECK(ct_costs_parse("emulated=1000 stepped=5000 emulated+stepped=1500 args=0 calls=100 ms=9.5 call=1200 ret=5600",
			     &c));
	CHECK_EQ_U(c.hit_ns[CT_HIT_CALL], 1200);
	CHECK_EQ_U(c.hit_ns[CT_HIT_RET], 5600);
	use_sites = ksites;
	run(&c);
	/* the child: a `call` entry's end (its whole hit less an emulated
	 * hit's start, 500) and a `ret` exit's start (a stepped one's: 1500
	 * - 500) */
	CHECK_EQ_U(got[0].ts_exit - got[0].ts_entry, 10000 - (1200 - 500) - 1000);
	/* the parent: its own entry's end and exit's start, and the child's
	 * two whole hits of each class */
	CHECK_EQ_U(got[2].ts_exit - got[2].ts_entry, 60000 - 500 - 1000 - 2 * (1200 + 5600));
	/* the BPF programs' starts measured: a `call` hit's start is an
	 * emulated one's less the difference of theirs (500 - 65) */
	CHECK(ct_costs_parse("emulated=1000 stepped=5000 emulated+stepped=1500 args=0 calls=100 ms=9.5 call=1200 ret=5600 "
			     "bpfpre.emulated=240 bpfpre.call=175",
			     &c));
	CHECK_EQ_U(c.bpf_pre_ns[CT_HIT_CALL], 175);
	run(&c);
	CHECK_EQ_U(got[0].ts_exit - got[0].ts_entry, 10000 - (1200 - 435) - 1000);
	/* (the parent holds both hits: the start moved inside them) */
	CHECK_EQ_U(got[2].ts_exit - got[2].ts_entry, 60000 - 500 - 1000 - 2 * (1200 + 5600));
	/* a file without the classes' costs (older, or no such sites): priced
	 * as emulated and single-stepped hits */
	CHECK(ct_costs_parse("emulated=1000 stepped=5000 emulated+stepped=1500 args=0 calls=100 ms=9.5", &c));
	CHECK_EQ_U(c.hit_ns[CT_HIT_CALL], 0);
	run(&c);
	CHECK_EQ_U(got[0].ts_exit - got[0].ts_entry, 10000 - 1500);
	CHECK_EQ_U(got[2].ts_exit - got[2].ts_entry, 60000 - 1500 - 2 * (1000 + 5000));
	use_sites = csites;
	CHECK_EQ_U(ct_hit_class_of(CT_SITE_RET, CT_SITEF_STEPPED | CT_SITEF_RETINSN), CT_HIT_RET);
	CHECK_EQ_U(ct_hit_class_of(CT_SITE_CALL, CT_SITEF_CALLINSN | CT_SITEF_TAILPOS), CT_HIT_CALL);
	CHECK_EQ_U(ct_hit_class_of(CT_SITE_ENTRY, CT_SITEF_STEPPED), CT_HIT_STEPPED);
	CHECK_EQ_U(ct_hit_class_of(CT_SITE_ENTRY, CT_SITEF_COMPANION), CT_HIT_EMULATED);
	/* a call its callee's CHECK sent, or a CHECK's own event (an
	 * unplanned call): the CHECK's hit; a stepped CHECK's is a stepped one */
	CHECK_EQ_U(ct_hit_class_of(CT_SITE_CALL, CT_SITEF_ATCHECK), CT_HIT_CHECK);
	CHECK_EQ_U(ct_hit_class_of(CT_SITE_CHECK, CT_SITEF_INDIRECT), CT_HIT_CHECK);
	CHECK_EQ_U(ct_hit_class_of(CT_SITE_CALL, CT_SITEF_ATCHECK | CT_SITEF_STEPPED), CT_HIT_STEPPED);
}

/* a call observed at its callee's CHECK (the event names the CALL site), its
 * exit at the return site */
TEST(correction_check_class)
{
	static const struct ct_file_site k[] = {
		{0, 0x1000, 0, CT_SITE_CALL, CT_NOFUNC, 8, UINT32_MAX, UINT32_MAX, CT_SITEF_ATCHECK},
		{1, 0x1005, 0, CT_SITE_RETSITE, CT_NOFUNC, 8, 0, UINT32_MAX, 0},
	};
	static const struct ct_recon_ops ops = {NULL, on_exit_call, NULL, NULL};
	struct ct_costs c;
	CHECK(ct_costs_parse("emulated=1000 stepped=5000 emulated+stepped=1500 args=0 calls=100 ms=9.5 check=1300", &c));
	CHECK_EQ_U(c.hit_ns[CT_HIT_CHECK], 1300);
	struct ct_recon *r = ct_recon_new(k, 2, true, &ops, NULL);
	ct_recon_set_costs(r, &c);
	ngot = 0;
	for (int i = 0; i < 4; i++) {
		struct ct_rec_event ev = {0};
		ev.goid = 1;
		ev.pid = ev.tid = 7;
		ev.key = 92; /* the caller's SP 100, the callee's frame 8 lower */
		ev.site = (uint32_t)(i % 2);
		ev.kind = k[i % 2].kind;
		ev.ts = 100000 + (uint64_t)i * 10000;
		ct_recon_event(r, &ev);
	}
	ct_recon_finish(r, 200000);
	ct_recon_free(r);
	CHECK_EQ_U(ngot, 2);
	/* the lookup comes before the CHECK's clock read: a call measures
	 * the end of an emulated hit and the start of another (1000), not the
	 * lookup too (its whole hit less an emulated one's start: 1300) */
	CHECK_EQ_U(got[0].ts_exit - got[0].ts_entry, 10000 - 1000);
	CHECK_EQ_U(got[1].ts_exit - got[1].ts_entry, 10000 - 1000);
}

TEST(correction_calib_round_trip)
{
	struct ct_costs c = {true, {4939, 18365}, 4879, 302, 100, 12.5, {0}}, back;
	char buf[160];
	ct_costs_format(&c, buf, sizeof(buf));
	CHECK(ct_costs_parse(buf, &back));
	CHECK_EQ_U(back.hit_ns[0], 4939);
	CHECK_EQ_U(back.hit_ns[1], 18365);
	CHECK_EQ_U(back.mixed_ns, 4879);
	CHECK_EQ_U(back.args_ns, 302);
	CHECK_EQ_U(back.hit_ns[CT_HIT_CALL], 0);
	CHECK(!strstr(buf, "call=") && !strstr(buf, "ret="));
	c.hit_ns[CT_HIT_CALL] = 5012;
	c.hit_ns[CT_HIT_RET] = 18500;
	ct_costs_format(&c, buf, sizeof(buf));
	CHECK(ct_costs_parse(buf, &back));
	CHECK_EQ_U(back.hit_ns[CT_HIT_CALL], 5012);
	CHECK_EQ_U(back.hit_ns[CT_HIT_RET], 18500);
	CHECK_EQ_U(back.hit_ns[CT_HIT_CHECK], 0);
	CHECK_EQ_U(back.mixed_ns, 4879);
	CHECK(!strstr(buf, "bpfpre."));
	c.bpf_pre_ns[CT_HIT_EMULATED] = 240;
	c.bpf_pre_ns[CT_HIT_CALL] = 175;
	char text[CT_COSTS_TEXT_MAX];
	ct_costs_format(&c, text, sizeof(text));
	CHECK(ct_costs_parse(text, &back));
	CHECK_EQ_U(back.bpf_pre_ns[CT_HIT_EMULATED], 240);
	CHECK_EQ_U(back.bpf_pre_ns[CT_HIT_CALL], 175);
	CHECK_EQ_U(back.bpf_pre_ns[CT_HIT_RET], 0);
	CHECK_EQ_U(back.hit_ns[CT_HIT_RET], 18500);
	/* a later calltrace's fields are passed over; damaged ones refused */
	CHECK(ct_costs_parse("emulated=1 stepped=2 emulated+stepped=1 args=0 calls=1 ms=1 ret=3 later+thing=9 ", &back));
	CHECK_EQ_U(back.hit_ns[CT_HIT_RET], 3);
	CHECK(!ct_costs_parse("emulated=1 stepped=2 emulated+stepped=1 args=0 calls=1 ms=1 ret=", &back));
	CHECK(!ct_costs_parse("emulated=1 stepped=2 emulated+stepped=1 args=0 calls=1 ms=1 call=99999999999", &back));
	CHECK(!ct_costs_parse("emulated=1", &back) && !ct_costs_parse(NULL, &back));
	/* a damaged file's hit of 2^64-1 ns would wrap every clock: no correction */
	CHECK(!ct_costs_parse("emulated=18446744073709551615 stepped=1 emulated+stepped=1 args=0 calls=1 ms=1", &back));
	CHECK(!back.ok);
}

static void feed_stall(struct ct_recon *r, uint64_t ts, uint64_t goid, uint32_t tid, uint32_t ns)
{
	struct ct_rec_event ev = {0};
	ev.ts = ts;
	ev.kind = CT_EV_PROC_REC;
	ev.proc = CT_PROC_STALL;
	ev.pid = 7;
	ev.tid = tid;
	ev.goid = goid;
	ev.child = ns;
	ct_recon_event(r, &ev);
}

/* A wait for calltrace's probe changes (CT_PROC_STALL) inside the second
 * child: taken out of it and of the parent, as a hit's cost; not out of
 * another goroutine's calls, and not with --raw. */
TEST(correction_takes_out_waits_for_probe_changes)
{
	struct ct_costs c;
	CHECK(ct_costs_parse("emulated=1000 stepped=5000 emulated+stepped=1500 args=300 calls=100 ms=9.5", &c));
	use_sites = csites;
	for (int other = 0; other < 4; other++) {
		/* 0, 1: goroutine 1's calls; 2, 3: thread 7's (C) */
		feed_goid = other < 2;
		static const struct ct_recon_ops ops = {NULL, on_exit_call, NULL, NULL};
		struct ct_recon *r = ct_recon_new(use_sites, NSITES, other < 2, &ops, NULL);
		ct_recon_set_costs(r, &c);
		ngot = 0;
		feed(r, S_P_ENT, 100000, 100);
		feed(r, S_C_ENT, 110000, 200);
		feed(r, S_C_RET, 120000, 200);
		feed(r, S_C_ENT, 130000, 200);
		/* goroutine 2's, thread 8's: none of these calls' */
		feed_stall(r, 135000, other == 0 ? 1 : other == 1 ? 2 : 0, other == 3 ? 8 : 7, 4000);
		feed(r, S_C_RET, 140000, 200);
		feed(r, S_P_RET, 160000, 100);
		ct_recon_finish(r, 200000);
		ct_recon_free(r);
		CHECK_EQ_U(ngot, 3);
		feed_goid = 1;
		uint64_t waited = other % 2 ? 0 : 4000;
		CHECK_EQ_U(got[0].ts_exit - got[0].ts_entry, 10000 - 1500);
		CHECK_EQ_U(got[1].ts_exit - got[1].ts_entry, 10000 - 1500 - waited);
		CHECK_EQ_U(got[1].raw_exit - got[1].raw_entry, 10000);
		CHECK_EQ_U(got[2].ts_exit - got[2].ts_entry, 60000 - 1500 - 2 * (1000 + 5000) - waited);
	}
}

/* The text's "< X" and JSON/YAML's dur_below X: a corrected duration below
 * a tenth of what was taken out of it, X that tenth rounded up to two
 * digits (ct_dur_below), shown as wide as a duration. */
static const char *below_text(uint64_t ns)
{
	static char s[32];
	struct ct_buf b = {0};
	ct_buf_duration_below(&b, ns);
	snprintf(s, sizeof(s), "%.*s", (int)b.n, (const char *)b.p);
	buf_free(&b);
	return s;
}

TEST(correction_below_what_was_taken_out)
{
	CHECK_EQ_U(ct_dur_below(0, 6400), 640);      /* a leaf: nothing left */
	CHECK_EQ_U(ct_dur_below(639, 7039), 640);    /* still below */
	CHECK_EQ_U(ct_dur_below(640, 7040), 0);      /* a tenth: told from none */
	CHECK_EQ_U(ct_dur_below(5000, 5000), 0);     /* nothing taken out (--raw) */
	CHECK_EQ_U(ct_dur_below(5000, 4000), 0);
	CHECK_EQ_U(ct_dur_below(0, 9), 0);           /* a tenth of under 10 ns is 0: nothing to be below */
	/* the tenth rounded up to two significant digits, as the text shows it */
	CHECK_EQ_U(ct_dur_below(0, 5870), 590);
	CHECK_EQ_U(ct_dur_below(100, 5970), 590);    /* what was taken out, not what was measured */
	CHECK_EQ_U(ct_dur_below(0, 5800), 580);      /* exact: not rounded up further */
	CHECK_EQ_U(ct_dur_below(0, 32580), 3300);
	CHECK_EQ_U(ct_dur_below(0, 451230), 46000);
	CHECK_EQ_U(ct_dur_below(0, 999990), 100000);  /* 99,999 rounds up to three digits' worth */
	CHECK_EQ_U(ct_dur_below(0, 70), 7);
	CHECK_EQ_U(ct_dur_below(1000, 1500000000000ULL), 150000000000ULL);
	CHECK_STR(below_text(ct_dur_below(0, 6400)), "< 0.640 us");
	CHECK_STR(below_text(ct_dur_below(0, 5870)), "< 0.590 us");
	CHECK_STR(below_text(ct_dur_below(0, 32580)), "< 3.300 us");
	CHECK_STR(below_text(ct_dur_below(0, 451230)), "<46.000 us");
	CHECK_STR(below_text(ct_dur_below(0, 999990)), "< 0.100 ms"); /* 100 us: the next unit */
	CHECK_STR(below_text(ct_dur_below(0, 12345670)), "< 1.300 ms");
	CHECK_STR(below_text(ct_dur_below(0, 70)), "< 0.007 us");
	CHECK_STR(below_text(ct_dur_below(0, 1500000000000ULL)), "<150.000  s");
	struct ct_buf b = {0};
	ct_buf_duration(&b, 1234);
	CHECK_EQ_U(b.n, strlen(below_text(ct_dur_below(0, 12340))));   /* the column stays aligned */
	buf_free(&b);
}

/* Durations and bounds in the tree's column, against printf's "%3u.%03u %s"
 * (and "%s%2u.%03u %s") at every magnitude and around each unit's edges:
 * they are written byte by byte, the widths no longer by a padded decimal. */
static void want_duration(char *s, size_t n, const char *mark, uint64_t ns, size_t nunits)
{
	static const char *const units[] = {"us", "ms", " s", " m", " h"};
	static const uint64_t unit_ns[] = {1000, 1000000, 1000000000, 60000000000, 3600000000000};
	size_t i = 0;
	if (!mark) { /* a duration: the largest unit it has one of, and the
		      * remainder in the unit below (seconds of a minute) */
		static const uint64_t next[] = {1000, 1000, 60, 24};
		uint64_t t = ns / 1000, mod = ns % 1000;
		while (i < 4 && t >= next[i]) {
			mod = t % next[i];
			t /= next[i];
			i++;
		}
		snprintf(s, n, "%3llu.%03llu %s", (unsigned long long)t, (unsigned long long)mod, units[i]);
		return;
	}
	while (i + 1 < nunits && ns >= 100 * unit_ns[i])
		i++;
	uint64_t milli = (uint64_t)(((unsigned __int128)ns * 1000 + unit_ns[i] - 1) / unit_ns[i]); /* (rounded up) */
	snprintf(s, n, "%s%2llu.%03llu %s", mark, (unsigned long long)(milli / 1000), (unsigned long long)(milli % 1000),
		 units[i]);
}

TEST(durations_match_printf)
{
	for (uint64_t p = 1; p <= 100000000000000000ULL; p *= 10)
		for (uint64_t k = 0; k < 12; k++) {
			uint64_t ns = p * (1 + k * 7 % 10) + k * (p / 3) - (k & 1);
			char want[64], text[64];
			struct ct_buf b = {0};
			ct_buf_duration(&b, ns);
			snprintf(text, sizeof(text), "%.*s", (int)b.n, (const char *)b.p);
			want_duration(want, sizeof(want), NULL, ns, 5);
			CHECK_STR(text, want);
			b.n = 0;
			ct_buf_duration_below(&b, ns);
			snprintf(text, sizeof(text), "%.*s", (int)b.n, (const char *)b.p);
			want_duration(want, sizeof(want), "<", ns, 3);
			CHECK_STR(text, want);
			b.n = 0;
			ct_buf_duration_at_most(&b, ns);
			snprintf(text, sizeof(text), "%.*s", (int)b.n, (const char *)b.p);
			want_duration(want, sizeof(want), "<=", ns, 5);
			CHECK_STR(text, want);
			buf_free(&b);
		}
}

/* An unobserved call's bound is corrected as a call ending at the event
 * that showed it over would be: the hits inside the window (its own
 * entry's end, a call inside it, that event's start) taken out, raw as
 * measured. */
TEST(correction_of_an_unobserved_calls_bound)
{
	enum { P_ENT, U_CHECK, C_ENT, C_RET, P_RET };
	static const struct ct_file_site k[] = {
		{P_ENT, 0x1000, 0, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
		{U_CHECK, 0x2004, 1, CT_SITE_CHECK, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
		{C_ENT, 0x3000, 2, CT_SITE_ENTRY, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
		{C_RET, 0x3010, 2, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
		{P_RET, 0x1010, 0, CT_SITE_RET, CT_NOFUNC, 0, UINT32_MAX, UINT32_MAX, 0},
	};
	/* P { U (no exit probe) { C } C }: the second C, at U's level,
	 * shows U over */
	static const struct {
		uint32_t site;
		uint64_t ts, key;
	} evs[] = {{P_ENT, 100000, 100}, {U_CHECK, 110000, 120}, {C_ENT, 120000, 130}, {C_RET, 130000, 130},
		   {C_ENT, 150000, 120},  {C_RET, 160000, 120},   {P_RET, 200000, 100}};
	static const struct ct_recon_ops ops = {NULL, on_exit_call, NULL, NULL};
	struct ct_costs c;
	CHECK(ct_costs_parse("emulated=1000 stepped=5000 emulated+stepped=1500 args=0 calls=100 ms=9.5 check=1300", &c));
	for (int corrected = 0; corrected < 2; corrected++) {
		struct ct_recon *r = ct_recon_new(k, 5, true, &ops, NULL);
		if (corrected)
			ct_recon_set_costs(r, &c);
		ngot = 0;
		for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
			struct ct_rec_event ev = {0};
			ev.goid = 1;
			ev.pid = ev.tid = 7;
			ev.key = evs[i].key;
			ev.site = evs[i].site;
			ev.kind = k[evs[i].site].kind;
			ev.ts = evs[i].ts;
			ct_recon_event(r, &ev);
		}
		ct_recon_finish(r, 300000);
		ct_recon_free(r);
		CHECK_EQ_U(ngot, 4);
		const struct ct_call *u = &got[1];
		CHECK(u->func == 1 && u->status == CT_CALL_UNOBSERVED && u->end_bound);
		CHECK_EQ_U(u->raw_exit - u->raw_entry, 150000 - 110000);
		/* corrected: less the CHECK's end (1300 less its start, 500 +
		 * 300 for the lookup), C's two whole emulated hits, and the
		 * revealing entry's start (half an emulated hit) */
		CHECK_EQ_U(u->ts_exit - u->ts_entry, corrected ? 40000 - 500 - 2 * 1000 - 500 : 40000);
		/* as the second C's entry on the same clock: U ended before it */
		CHECK_EQ_U(u->ts_exit, got[2].ts_entry);
		CHECK(!got[0].end_bound && !got[2].end_bound && !got[3].end_bound);
	}
}

/* A signal handler on the alternate signal stack, in a call whose
 * corrected clock is held at its floor (its hits were priced above the raw
 * time between them), in a C thread and on a Go thread's gsignal stack:
 * the handler's calls go on on the thread's corrected clock, not below the
 * floor (a CPython handler under -X faulthandler began ~100 us before the
 * call it interrupted), and their hits come out of the interrupted call as
 * any hit inside it does (they were left in it). */
TEST(correction_signal_stack_goes_on_on_the_threads_clock)
{
	struct ct_costs c;
	CHECK(ct_costs_parse("emulated=1000 stepped=5000 emulated+stepped=1500 args=300 calls=100 ms=9.5", &c));
	static const struct ct_recon_ops ops = {NULL, on_exit_call, NULL, NULL};
	const uint64_t top = 0x7ff000; /* the signal stack's frame keys: far from the thread's */
	struct {
		uint32_t site;
		uint64_t ts, key;
		uint16_t flags;
	} evs[] = {
		{S_P_ENT, 100000, 100, 0},
		{S_C_ENT, 101000, 200, 0}, /* a child whose exit (5000) is dearer than its */
		{S_C_RET, 102000, 200, 0}, /* 1000 ns: the clock stops at the floor */
		{S_C_ENT, 103000, top, CT_EV_ALTSTACK}, /* the handler */
		{S_C_RET, 110000, top, CT_EV_ALTSTACK},
		{S_P_RET, 160000, 100, 0},
	};
	/* as the same call nested on the thread's own stack (variant 2: no
	 * signal stack) */
	struct ct_call same[3];
	for (int v = 2; v >= 0; v--) {
		int go = v == 1, alt = v < 2;
		struct ct_recon *r = ct_recon_new(csites, NSITES, go, &ops, NULL);
		ct_recon_set_costs(r, &c);
		ngot = 0;
		for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
			struct ct_rec_event ev = {0};
			ev.pid = ev.tid = 7;
			ev.goid = (uint64_t)go;
			ev.key = alt || !evs[i].flags ? evs[i].key : 300;
			ev.site = evs[i].site;
			ev.kind = csites[evs[i].site].kind;
			ev.ts = evs[i].ts;
			ev.flags = alt ? evs[i].flags : 0;
			ct_recon_event(r, &ev);
		}
		ct_recon_finish(r, 300000);
		ct_recon_free(r);
		CHECK_EQ_U(ngot, 3);
		const struct ct_call *child = &got[0], *handler = &got[1], *parent = &got[2];
		CHECK_EQ_U(handler->raw_entry, 103000);
		/* nested in the call it interrupted, after the child before it
		 * (the clock held at the child's end: not before it) */
		CHECK(handler->ts_entry >= parent->ts_entry && handler->ts_exit <= parent->ts_exit);
		CHECK_EQ_U(handler->ts_entry, child->ts_exit);
		/* the parent: less the hits of both calls in it (what the floor
		 * held back, as on one stack) */
		CHECK(parent->ts_exit - parent->ts_entry < 60000 - 1500 - 5000);
		if (!alt) {
			memcpy(same, got, sizeof(same));
			continue;
		}
		for (size_t i = 0; i < 3; i++) {
			CHECK(got[i].ts_entry == same[i].ts_entry && got[i].ts_exit == same[i].ts_exit);
		}
	}
}
