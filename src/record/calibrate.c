/* What a probe hit costs on this machine, measured at the start of each
 * recording with the same BPF programs, so replay can take the tracer's own
 * time out of every duration (reconstruct.c, struct ct_costs).
 *
 * Four tiny functions of calltrace itself get probes in calltrace's own
 * process, the way a traced function does (one entry role, one exit role),
 * at instructions the kernel emulates (nop) or single-steps (mov); each is
 * called CALLS times and the events' timestamps give, for an empty call,
 * the time from its entry probe's clock read to its exit probe's (the
 * mean: see mean_cost):
 *   nop;nop  emulated entry, emulated exit: one whole emulated hit
 *   mov;mov  the same for single-stepped instructions
 *   nop;ret  emulated entry, single-stepped exit (a cheap Go entry + RET):
 *            the end of one plus the start of the other
 *   nop;nop  with a fetch program on both: a hit with argument capture
 * The probes carry the GOCREATE kind, which record-time limits never cut
 * (and never count), and site ids past the plan's; the events never reach
 * the file.  About 30 ms (closing the links would double it: they go with
 * the session's). */
#include "record/calibrate.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__asm__(".text\n"
	".p2align 4\n"
	".globl ct_calib_ee\n.type ct_calib_ee,@function\n"
	"ct_calib_ee:\n\tnop\n\tnop\n\tret\n.size ct_calib_ee, .-ct_calib_ee\n"
	".p2align 4\n"
	".globl ct_calib_ss\n.type ct_calib_ss,@function\n"
	"ct_calib_ss:\n\tmovq %rdi, %rax\n\tmovq %rdi, %rax\n\tret\n.size ct_calib_ss, .-ct_calib_ss\n"
	".p2align 4\n"
	".globl ct_calib_es\n.type ct_calib_es,@function\n"
	"ct_calib_es:\n\tnop\n\tret\n.size ct_calib_es, .-ct_calib_es\n"
	".p2align 4\n"
	".globl ct_calib_aa\n.type ct_calib_aa,@function\n"
	"ct_calib_aa:\n\tnop\n\tnop\n\tret\n.size ct_calib_aa, .-ct_calib_aa\n");
void ct_calib_ee(void);
void ct_calib_ss(void);
void ct_calib_es(void);
void ct_calib_aa(void);

#define CALLS 300
#define NFN 4

static const struct {
	void (*fn)(void);
	uint32_t entry_off, exit_off; /* from the function's start */
	bool fetch;
} fns[NFN] = {
	{ct_calib_ee, 0, 1, false},
	{ct_calib_ss, 0, 3, false},
	{ct_calib_es, 0, 1, false},
	{ct_calib_aa, 0, 1, true},
};

/* The file offset of code at ADDR in this process (from its mappings:
 * works for a stripped or PIE calltrace). */
static int64_t self_offset(uintptr_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int64_t off = -1;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, fo;
		if (sscanf(line, "%llx-%llx %*s %llx", &lo, &hi, &fo) == 3 && addr >= lo && addr < hi) {
			off = (int64_t)(addr - lo + fo);
			break;
		}
	}
	if (f)
		fclose(f);
	return off;
}

struct collect {
	uint32_t first_site;
	uint64_t last_entry[NFN];
	uint64_t *durs[NFN];
	size_t n[NFN];
};

static int on_calib_event(void *ctx, const struct ct_event *e, const void *payload)
{
	struct collect *c = ctx;
	if (e->site < c->first_site || e->site >= c->first_site + 2 * NFN)
		return 0;
	uint32_t k = (e->site - c->first_site) / 2;
	if ((e->site - c->first_site) % 2 == 0) {
		c->last_entry[k] = e->ts;
	} else if (c->last_entry[k] && c->n[k] < CALLS) {
		c->durs[k][c->n[k]++] = e->ts - c->last_entry[k];
		c->last_entry[k] = 0;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* What a hit costs on average: a probe hit now and then takes several
 * times its usual time (an interrupt, the hypervisor: a few percent of
 * hits, tens of microseconds each here), and the traced program's hits
 * pay that as often, so the mean, not the median, is what a thousand of
 * them cost.  A sample beyond ten times the median is the scheduler
 * running someone else (milliseconds on a loaded machine): not a probe's
 * cost, left out. */
static uint64_t mean_cost(uint64_t *v, size_t n)
{
	uint64_t med = median(v, n), sum = 0;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i] <= 10 * med) {
			sum += v[i];
			k++;
		}
	return k ? sum / k : med;
}

int ct_calibrate(struct ct_probes *p, uint32_t first_site, struct ct_costs *out)
{
	memset(out, 0, sizeof(*out));
	uint64_t t0 = now_mono_ns();
	uint64_t eo[NFN], ec[NFN], xo[NFN], xc[NFN];
	struct ct_fetch fetch = {0};
	/* like a function of two register arguments and a 16-byte struct */
	fetch.ops[0] = (struct ct_fetch_op){.code = CT_OP_REG, .reg = CT_RDI, .dst = 0};
	fetch.ops[1] = (struct ct_fetch_op){.code = CT_OP_REG, .reg = CT_RSI, .dst = 8};
	fetch.ops[2] = (struct ct_fetch_op){.code = CT_OP_STACK, .dst = 16, .size = 16, .off = 0};
	fetch.nops = 3;
	fetch.size = 16 + CT_MEM_HDR + 16;
	for (uint32_t k = 0; k < NFN; k++) {
		int64_t at = self_offset((uintptr_t)fns[k].fn);
		if (at < 0)
			return ct_fail("calibration: cannot find calltrace's own code in /proc/self/maps");
		struct ct_cookie_parts cp = {0};
		cp.kind = CT_SITE_GOCREATE; /* limits never cut it */
		cp.fetch = fns[k].fetch;
		cp.site = first_site + 2 * k;
		eo[k] = (uint64_t)at + fns[k].entry_off;
		ec[k] = CT_COOKIE(cp);
		cp.site++;
		xo[k] = (uint64_t)at + fns[k].exit_off;
		xc[k] = CT_COOKIE(cp);
		if (fns[k].fetch && (ct_probes_set_fetch(p, cp.site - 1, &fetch) || ct_probes_set_fetch(p, cp.site, &fetch)))
			return -1;
	}
	struct ct_attach a = {"/proc/self/exe", getpid(), eo, ec, NFN, xo, xc, NFN};
	if (ct_probes_attach(p, &a))
		return -1;
	struct collect c = {.first_site = first_site};
	for (uint32_t k = 0; k < NFN; k++)
		c.durs[k] = xcalloc(CALLS, sizeof(uint64_t));
	for (uint32_t k = 0; k < NFN; k++) {
		void (*volatile fn)(void) = fns[k].fn;
		for (int i = 0; i < CALLS; i++) {
			fn();
			if (i % 25 == 24) /* never let the ring buffer fill */
				ct_probes_poll(p, 0, on_calib_event, &c);
		}
		ct_probes_poll(p, 0, on_calib_event, &c);
	}
	/* The links stay until the session detaches its own: closing a
	 * sleepable program's link waits for an RCU grace period (~25 ms
	 * each), which start-up need not pay, and nothing calls these
	 * functions again.  Every hit's event is in the ring buffer already. */
	ct_probes_poll(p, 0, on_calib_event, &c);
	int rc = 0;
	for (uint32_t k = 0; k < NFN; k++)
		if (c.n[k] < CALLS / 2)
			rc = ct_fail("calibration: %zu of %d calls seen", c.n[k], CALLS);
	if (rc == 0) {
		/* whole hits by their mean; the extra of argument capture by
		 * medians (the rare slow hit would swamp a difference of means) */
		out->hit_ns[0] = mean_cost(c.durs[0], c.n[0]);
		out->hit_ns[1] = mean_cost(c.durs[1], c.n[1]);
		out->mixed_ns = mean_cost(c.durs[2], c.n[2]);
		uint64_t ee = median(c.durs[0], c.n[0]), aa = median(c.durs[3], c.n[3]);
		out->args_ns = aa > ee ? aa - ee : 0;
		out->calls = CALLS;
		out->ms = (now_mono_ns() - t0) / 1e6;
		out->ok = true;
	}
	for (uint32_t k = 0; k < NFN; k++)
		free(c.durs[k]);
	return rc;
}
