/* What a probe hit costs on this machine, measured with the same BPF
 * programs, so replay can take the tracer's own time out of every duration
 * (reconstruct.c, struct ct_costs).
 *
 * Tiny functions of calltrace itself get probes in calltrace's own
 * process, the way a traced function does (one entry role, one exit role),
 * at instructions of each class the program's probes have
 * (format/calib.h); they are called in turns, CALLS times each (fewer at
 * start-up, a fallback, which must stay short), and the
 * events' timestamps give, for an empty call, the time from its entry
 * probe's clock read to its exit probe's (the mean: see mean_cost):
 *   nop;nop    emulated entry, emulated exit: one whole emulated hit
 *   mov;mov    the same for single-stepped instructions
 *   nop;mov    emulated entry, single-stepped exit (a cheap Go entry + RET):
 *              the end of one plus the start of the other
 *   nop;nop    with a fetch program on both: a hit with argument capture
 *   call;call  an emulated `call` (a caller-side entry, --exit=auto), which
 *              also writes the return address: measured ~90 ns dearer than
 *              a nop here, when the plan has such probes
 *   ret;ret    a single-stepped `ret` (RET exits): ~130 ns dearer than a
 *              stepped mov, when the plan has such probes
 *   check;check  hits of the CHECK kind at two functions' emulated entries,
 *              called from planned call sites (the BPF program looks the
 *              call site up, before its clock read): ~50-180 ns dearer than
 *              a nop, when the plan has CHECKs
 *   nop5;nop5  5-byte nops, which the kernel (6.18+) reaches by a call to
 *              its trampoline after their first hit, no trap: ~1.3 us
 *              against ~5.5 for a nop here, when the plan has such probes
 *              (on an older kernel it measures an emulated hit, as it is)
 * The hits read a g as a Go program's do (a fake one in R14).  The probes
 * carry the GOCREATE kind (the CHECKs excepted), which record-time limits
 * never cut (and never count), and site ids past the plan's; the events
 * never reach the file.
 *
 * What a hit costs depends on the CPU, and on a VM it changes with time: on
 * the 2-vCPU VM calltrace is developed on, one vCPU takes ~6.4 us per
 * emulated hit while the other takes ~5.0, and which one is the slow one
 * changes every few tens of seconds.  So the start-up measurement (~30 ms,
 * on whichever CPU calltrace runs) is only the fallback; at the end of the
 * recording, before the probes go, it is measured again on each CPU that
 * ran the program's hits (a per-CPU count in the BPF program), and their
 * costs are averaged by those hits. */
#include "record/calibrate.h"
#include "record/insitu.h"
#include "format/tracefile.h"
#include "util/util.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Each: rdi is the g its probes see in R14 (a Go target's), kept for the
 * caller (R14 is callee-saved); _in and _out are the probed instructions. */
#define CALIB_FN(name, in, out)                                                        \
	".p2align 4\n.globl " #name "\n.type " #name ",@function\n" #name ":\n"        \
	"\tpushq %r14\n\tmovq %rdi, %r14\n"                                               \
	".globl " #name "_in\n" #name "_in:\n\t" in "\n"                                \
	".globl " #name "_out\n" #name "_out:\n\t" out "\n"                             \
	"\tpopq %r14\n\tret\n.size " #name ", .-" #name "\n"
/* A function that returns at once, at instruction NAME (probed). */
#define CALIB_RET(name) ".p2align 4\n.globl " #name "\n" #name ":\n\tret\n"
__asm__(".text\n" CALIB_FN(ct_calib_ee, "nop", "nop") CALIB_FN(ct_calib_ss, "movq %rdi, %rax", "movq %rdi, %rax")
	CALIB_FN(ct_calib_es, "nop", "movq %rdi, %rax") CALIB_FN(ct_calib_aa, "nop", "nop")
	CALIB_FN(ct_calib_cc, "call ct_calib_back", "call ct_calib_back") CALIB_RET(ct_calib_back)
	/* its probes are at the `ret`s of the two functions it calls */
	".p2align 4\n.globl ct_calib_rr\n.type ct_calib_rr,@function\nct_calib_rr:\n\tpushq %r14\n\tmovq %rdi, %r14\n"
	"\tcall ct_calib_rr_in\n\tcall ct_calib_rr_out\n\tpopq %r14\n\tret\n.size ct_calib_rr, .-ct_calib_rr\n"
	CALIB_RET(ct_calib_rr_in) CALIB_RET(ct_calib_rr_out)
	/* the probes are at the entries of the two functions it calls, from
	 * call sites planned for them (returning to _back1 and _back2) */
	".p2align 4\n.globl ct_calib_kk\n.type ct_calib_kk,@function\nct_calib_kk:\n\tpushq %r14\n\tmovq %rdi, %r14\n"
	"\tcall ct_calib_kk_in\n.globl ct_calib_kk_back1\nct_calib_kk_back1:\n\tcall ct_calib_kk_out\n"
	".globl ct_calib_kk_back2\nct_calib_kk_back2:\n\tpopq %r14\n\tret\n.size ct_calib_kk, .-ct_calib_kk\n"
	".p2align 4\n.globl ct_calib_kk_in\nct_calib_kk_in:\n\tnop\n\tret\n"
	".p2align 4\n.globl ct_calib_kk_out\nct_calib_kk_out:\n\tnop\n\tret\n"
	/* 16-byte aligned, 15 bytes long: the nops never cross a page */
	CALIB_FN(ct_calib_nn, ".byte 0x0f,0x1f,0x44,0x00,0x00", ".byte 0x0f,0x1f,0x44,0x00,0x00"));
extern const char ct_calib_kk_back1[], ct_calib_kk_back2[];
#define CALIB_DECL(name) void name(void *g); extern const char name##_in[], name##_out[];
CALIB_DECL(ct_calib_ee)
CALIB_DECL(ct_calib_ss)
CALIB_DECL(ct_calib_es)
CALIB_DECL(ct_calib_aa)
CALIB_DECL(ct_calib_cc)
CALIB_DECL(ct_calib_rr)
CALIB_DECL(ct_calib_kk)
CALIB_DECL(ct_calib_nn)

#define CALLS 300
#define CALLS_START 200
/* Start-up's measurement is the fallback (live, or when the end's fails)
 * and must stay short: on a loaded machine the scheduler stretches each
 * round (235 ms for 200 rounds at load 6 on the 2-vCPU VM, ~30 ms at
 * load 1), so it stops after this time with at least MIN_ROUNDS. */
#define START_BUDGET_NS 30000000ULL
#define MIN_ROUNDS 60
#define NFN 8
enum { FN_EE, FN_SS, FN_ES, FN_AA, FN_CC, FN_RR, FN_KK, FN_NN };
/* what each measures (a whole hit of a class), -1: a part of one */
static const int class_of[NFN] = {[FN_EE] = CT_HIT_EMULATED, [FN_SS] = CT_HIT_STEPPED, [FN_ES] = -1, [FN_AA] = -1,
				  [FN_CC] = CT_HIT_CALL,     [FN_RR] = CT_HIT_RET,     [FN_KK] = CT_HIT_CHECK,
				  [FN_NN] = CT_HIT_NOTRAP};
/* CPUs measured again at the end: the one with most of the program's hits
 * and the others with at least 1/MIN_SHARE of them, at most MAX_CPUS */
#define MIN_SHARE 8
#define MAX_CPUS 4
#define NCPU_MAX 1024

static const struct {
	void (*fn)(void *);
	const char *in, *out;
	bool fetch;
	bool always; /* else measured only when the program's probes have
			its class */
} fns[NFN] = {
	[FN_EE] = {ct_calib_ee, ct_calib_ee_in, ct_calib_ee_out, false, true},
	[FN_SS] = {ct_calib_ss, ct_calib_ss_in, ct_calib_ss_out, false, true},
	[FN_ES] = {ct_calib_es, ct_calib_es_in, ct_calib_es_out, false, true},
	[FN_AA] = {ct_calib_aa, ct_calib_aa_in, ct_calib_aa_out, true, true},
	[FN_CC] = {ct_calib_cc, ct_calib_cc_in, ct_calib_cc_out, false, false},
	[FN_RR] = {ct_calib_rr, ct_calib_rr_in, ct_calib_rr_out, false, false},
	[FN_KK] = {ct_calib_kk, ct_calib_kk_in, ct_calib_kk_out, false, false},
	[FN_NN] = {ct_calib_nn, ct_calib_nn_in, ct_calib_nn_out, false, false},
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
	int calls;
	ct_event_cb cb; /* other sites' events */
	void *ctx;
	uint64_t last_entry[NFN];
	uint64_t *durs[NFN];
	size_t n[NFN];
	/* At start-up (LEARN: the BPF side knows no calibration yet), each
	 * class's hits: the BPF program's time before its clock read
	 * (ct_event.extra_ns, less the previous hit's end carried on it,
	 * ct_event.pad), and after it (an exit's pad: its entry's; POST_AA:
	 * the entries capturing values) */
	bool learn;
	uint64_t *pre[CT_HIT_CLASSES], *post[CT_HIT_CLASSES], *post_aa;
	size_t npre[CT_HIT_CLASSES], npost[CT_HIT_CLASSES], npost_aa;
};

/* The class of the hits at the entry (OUT: exit) probe of calibration
 * function K; -1: none measured there (argument capture). */
static int pre_class_of(uint32_t k, bool out)
{
	if (k == FN_ES)
		return out ? CT_HIT_STEPPED : CT_HIT_EMULATED;
	return k == FN_AA ? -1 : class_of[k];
}

static int on_calib_event(void *ctx, const struct ct_event *e, const void *payload)
{
	struct collect *c = ctx;
	if ((e->flags & CT_EV_PROC) || e->site < c->first_site || e->site >= c->first_site + 2 * NFN)
		return c->cb ? c->cb(c->ctx, e, payload) : 0;
	uint32_t k = (e->site - c->first_site) / 2;
	bool out = (e->site - c->first_site) % 2;
	int cls = pre_class_of(k, out);
	if (c->learn && cls >= 0 && c->npre[cls] < 2 * NFN * (size_t)c->calls) {
		int64_t pre = (int64_t)e->extra_ns - e->pad;
		c->pre[cls][c->npre[cls]++] = pre > 0 ? (uint64_t)pre : 0;
	}
	int in_cls = pre_class_of(k, false);
	if (c->learn && out && in_cls >= 0 && c->npost[in_cls] < 2 * NFN * (size_t)c->calls)
		c->post[in_cls][c->npost[in_cls]++] = e->pad;
	else if (c->learn && out && k == FN_AA && c->npost_aa < (size_t)c->calls)
		c->post_aa[c->npost_aa++] = e->pad;
	if ((e->site - c->first_site) % 2 == 0) {
		c->last_entry[k] = e->ts;
	} else if (c->last_entry[k] && c->n[k] < (size_t)c->calls) {
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

struct ct_calib {
	struct ct_probes *p;
	uint32_t first_site;
	uint64_t *g; /* the fake g the hits read, or NULL */
	bool use[NFN]; /* the functions measured: the program's classes */
	uint64_t hits0[NCPU_MAX]; /* hits per CPU when the program's began */
	size_t ncpus;
	uint32_t bpf_pre[CT_HIT_CLASSES], bpf_post[CT_HIT_CLASSES]; /* what the BPF side was told */
	uint32_t bpf_args;
	bool bpf_pre_set;
};

/* Context switches of this thread so far (-1: unknown). */
static long switches(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nivcsw + ru.ru_nvcsw;
}

/* The medians of what measure takes the mean of. */
struct medians {
	uint64_t hit[CT_HIT_CLASSES], mixed;
	uint64_t bpf_pre[CT_HIT_CLASSES], bpf_post[CT_HIT_CLASSES], bpf_args; /* (means) */
};

/* CALLS calls (at most CALLS) of each function, in turns (whatever the
 * machine does meanwhile falls on every kind alike), where this thread
 * runs; with BUDGET_NS, fewer (at least MIN_ROUNDS) once that time is
 * spent. */
static int measure(struct ct_calib *cal, int calls, uint64_t budget_ns, ct_event_cb cb, void *ctx,
		   struct ct_costs *out, struct medians *med)
{
	uint64_t t0 = now_mono_ns();
	struct collect c = {.first_site = cal->first_site, .calls = calls, .cb = cb, .ctx = ctx};
	for (uint32_t k = 0; k < NFN; k++)
		c.durs[k] = xcalloc((size_t)calls, sizeof(uint64_t));
	for (uint32_t k = 0; k < CT_HIT_CLASSES; k++) {
		c.pre[k] = xcalloc(2 * NFN * (size_t)calls, sizeof(uint64_t));
		c.post[k] = xcalloc(2 * NFN * (size_t)calls, sizeof(uint64_t));
	}
	c.post_aa = xcalloc((size_t)calls, sizeof(uint64_t));
	c.learn = !cal->bpf_pre_set;
	/* A round in which the scheduler ran someone else on this CPU (a
	 * context switch) measured the wait, no probe's cost: left out. */
	bool switched[CALLS];
	long sw = switches();
	for (int i = 0; i < calls; i++) {
		for (uint32_t k = 0; k < NFN; k++) {
			if (!cal->use[k])
				continue;
			void (*volatile fn)(void *) = fns[k].fn;
			fn(cal->g);
		}
		long was = sw;
		sw = switches();
		switched[i] = sw >= 0 && was != sw;
		if (i % 25 == 24) { /* never let the ring buffer fill */
			ct_probes_poll(cal->p, 0, on_calib_event, &c);
			sw = switches();
		}
		if (budget_ns && i + 1 >= MIN_ROUNDS && now_mono_ns() - t0 > budget_ns) {
			calls = i + 1;
			break;
		}
	}
	/* every hit's event is in the ring buffer already (a drain the
	 * forwarded callback paused is taken up again) */
	for (int i = 0; i < 64 && ct_probes_poll(cal->p, 0, on_calib_event, &c) > 0; i++)
		;
	int rc = 0;
	for (uint32_t k = 0; k < NFN; k++) {
		/* each round gave one sample of each (none lost: the buffer was
		 * drained in time) */
		if (c.n[k] == (size_t)calls) {
			size_t m = 0;
			for (size_t i = 0; i < (size_t)calls; i++)
				if (!switched[i])
					c.durs[k][m++] = c.durs[k][i];
			c.n[k] = m;
		}
		if (cal->use[k] && c.n[k] < (size_t)calls / 2)
			rc = ct_fail("calibration: %zu of %d calls measured", c.n[k], calls);
	}
	if (rc == 0) {
		memset(out, 0, sizeof(*out));
		/* whole hits by their mean; the extra of argument capture by
		 * medians (the rare slow hit would swamp a difference of means;
		 * taken in turns, both kinds see as many) */
		memset(med, 0, sizeof(*med));
		for (uint32_t k = 0; k < NFN; k++)
			if (class_of[k] >= 0 && cal->use[k]) {
				out->hit_ns[class_of[k]] = mean_cost(c.durs[k], c.n[k]);
				med->hit[class_of[k]] = median(c.durs[k], c.n[k]);
			}
		out->mixed_ns = mean_cost(c.durs[FN_ES], c.n[FN_ES]);
		med->mixed = median(c.durs[FN_ES], c.n[FN_ES]);
		uint64_t ee = median(c.durs[FN_EE], c.n[FN_EE]), aa = median(c.durs[FN_AA], c.n[FN_AA]);
		out->args_ns = aa > ee ? aa - ee : 0;
		ct_debug("calibration: medians %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " ns (nop, mov, nop;mov, "
			 "args), %zu of %d rounds kept", ee, median(c.durs[FN_SS], c.n[FN_SS]),
			 median(c.durs[FN_ES], c.n[FN_ES]), aa, c.n[FN_EE], calls);
		out->calls = (unsigned)calls;
		out->ms = (now_mono_ns() - t0) / 1e6;
		out->ok = true;
		for (uint32_t k = 0; k < CT_HIT_CLASSES; k++) {
			med->bpf_pre[k] = c.npre[k] ? mean_cost(c.pre[k], c.npre[k]) : 0;
			med->bpf_post[k] = c.npost[k] ? mean_cost(c.post[k], c.npost[k]) : 0;
		}
		uint64_t aa_post = c.npost_aa ? mean_cost(c.post_aa, c.npost_aa) : 0;
		med->bpf_args = aa_post > med->bpf_post[CT_HIT_EMULATED] ? aa_post - med->bpf_post[CT_HIT_EMULATED] : 0;
	}
	for (uint32_t k = 0; k < NFN; k++)
		free(c.durs[k]);
	for (uint32_t k = 0; k < CT_HIT_CLASSES; k++) {
		free(c.pre[k]);
		free(c.post[k]);
	}
	free(c.post_aa);
	return rc;
}

/* NS as the BPF side's times are kept (it subtracts them as s32) */
static uint32_t bpf_ns(uint64_t ns)
{
	return ns > INT32_MAX ? INT32_MAX : (uint32_t)ns;
}

/* What the BPF side was told of its own times (the start-up's timed
 * hits: each hit's extra_ns is relative to them, at the end too), in OUT
 * for replay.  Capturing values is the BPF program's work, which each
 * capturing hit's extra_ns says it took beyond bpf_args: priced at that,
 * it costs what the hit measured (the difference of whole hits with and
 * without, args_ns so far, is that and its own noise, +-50 ns here: the
 * error of every capturing hit's correction).  The part before the clock
 * read of each class measured: see ct_recon_set_costs. */
static void keep_bpf_times(const struct ct_calib *cal, struct ct_costs *out)
{
	if (!cal->bpf_pre_set)
		return;
	out->args_ns = cal->bpf_args;
	for (int k = 0; k < CT_HIT_CLASSES; k++)
		out->bpf_pre_ns[k] = out->hit_ns[k] ? cal->bpf_pre[k] : 0;
}

struct ct_calib *ct_calib_start(struct ct_probes *p, uint32_t first_site, const struct ct_bin_config *gcfg,
				uint8_t gsrc, unsigned classes, struct ct_costs *out)
{
	memset(out, 0, sizeof(*out));
	uint64_t t0 = now_mono_ns();
	struct ct_calib *cal = xcalloc(1, sizeof(*cal));
	cal->p = p;
	cal->first_site = first_site;
	for (uint32_t k = 0; k < NFN; k++)
		cal->use[k] = fns[k].always || (classes & 1u << class_of[k]);
	if (gsrc == CT_G_R14) {
		/* its goroutine id and stack top where the program's are */
		uint32_t top = gcfg->goid_off > gcfg->stack_hi_off ? gcfg->goid_off : gcfg->stack_hi_off;
		cal->g = xcalloc(top / 8 + 1, 8);
		cal->g[gcfg->goid_off / 8] = 1;
		cal->g[gcfg->stack_hi_off / 8] = (uintptr_t)&top + 65536;
	} else {
		gsrc = CT_G_NONE;
	}
	uint64_t eo[NFN], ec[NFN], xo[NFN], xc[NFN];
	struct ct_fetch fetch = {0};
	/* like a function of two register arguments and a 16-byte struct */
	fetch.ops[0] = (struct ct_fetch_op){.code = CT_OP_REG, .reg = CT_RDI, .dst = 0};
	fetch.ops[1] = (struct ct_fetch_op){.code = CT_OP_REG, .reg = CT_RSI, .dst = 8};
	fetch.ops[2] = (struct ct_fetch_op){.code = CT_OP_STACK, .dst = 16, .size = 16, .off = 0};
	fetch.nops = 3;
	fetch.size = 16 + CT_MEM_HDR + 16;
	for (uint32_t k = 0; k < NFN; k++) {
		int64_t in = self_offset((uintptr_t)fns[k].in), at_out = self_offset((uintptr_t)fns[k].out);
		if (in < 0 || at_out < 0) {
			ct_fail("calibration: cannot find calltrace's own code in /proc/self/maps");
			ct_calib_free(cal);
			return NULL;
		}
		struct ct_cookie_parts cp = {0};
		cp.kind = k == FN_KK ? CT_SITE_CHECK : CT_SITE_GOCREATE; /* limits never cut GOCREATE */
		cp.fetch = fns[k].fetch;
		cp.gsrc = gsrc;
		cp.site = first_site + 2 * k;
		eo[k] = (uint64_t)in;
		ec[k] = CT_COOKIE(cp);
		cp.site++;
		xo[k] = (uint64_t)at_out;
		xc[k] = CT_COOKIE(cp);
		if (k == FN_KK) {
			/* each CHECK's call site: its event is sent as the CHECK's own site */
			struct ct_planned_call in_call = {.site = cp.site - 1}, out_call = {.site = cp.site};
			int64_t in_ret = (int64_t)((uintptr_t)ct_calib_kk_back1 - (uintptr_t)ct_calib_kk_in),
				out_ret = (int64_t)((uintptr_t)ct_calib_kk_back2 - (uintptr_t)ct_calib_kk_out);
			if (ct_probes_add_planned(p, CT_PLANNED_KEY(cp.site - 1, in_ret), &in_call) ||
			    ct_probes_add_planned(p, CT_PLANNED_KEY(cp.site, out_ret), &out_call)) {
				ct_calib_free(cal);
				return NULL;
			}
		}
		if (fns[k].fetch && (ct_probes_set_fetch(p, cp.site - 1, &fetch) || ct_probes_set_fetch(p, cp.site, &fetch))) {
			ct_calib_free(cal);
			return NULL;
		}
	}
	/* The links stay until the session detaches its own: closing a
	 * sleepable program's link waits for an RCU grace period (~25 ms
	 * each), which start-up need not pay, and ct_calib_again uses them. */
	struct ct_attach a = {"/proc/self/exe", getpid(), eo, ec, NFN, xo, xc, NFN};
	struct medians med;
	/* Two passes: every hit of the first is timed, to learn the BPF
	 * side's times (below); from then on calltrace's own hits are never
	 * timed (the program's are, a thread's first CT_TIMED_FIRST and one in
	 * CT_TIMED_EVERY after, and add what their clock reads took to their
	 * extra_ns), and the second measures what a hit without them costs
	 * (~100 ns less here) */
	if (ct_probes_attach(p, &a) || measure(cal, CALLS_START, START_BUDGET_NS / 3, NULL, NULL, out, &med)) {
		ct_calib_free(cal);
		return NULL;
	}
	/* from now on a hit's event says how much longer its BPF program took
	 * than these (ct_event.extra_ns) */
	for (int k = 0; k < CT_HIT_CLASSES; k++) {
		/* (a class not measured has no hits in the program's plan) */
		cal->bpf_pre[k] = bpf_ns(med.bpf_pre[k] ? med.bpf_pre[k] : med.bpf_pre[CT_HIT_EMULATED]);
		cal->bpf_post[k] = bpf_ns(med.bpf_post[k] ? med.bpf_post[k] : med.bpf_post[CT_HIT_EMULATED]);
	}
	cal->bpf_args = bpf_ns(med.bpf_args);
	cal->bpf_pre_set = true;
	ct_debug("calibration: the BPF program's time before its clock read / after it: emulated %u/%u ns, stepped "
		 "%u/%u, call %u/%u, ret %u/%u, check %u/%u, 5-byte nop %u/%u; capturing values %u more",
		 cal->bpf_pre[CT_HIT_EMULATED], cal->bpf_post[CT_HIT_EMULATED], cal->bpf_pre[CT_HIT_STEPPED],
		 cal->bpf_post[CT_HIT_STEPPED], cal->bpf_pre[CT_HIT_CALL], cal->bpf_post[CT_HIT_CALL],
		 cal->bpf_pre[CT_HIT_RET], cal->bpf_post[CT_HIT_RET], cal->bpf_pre[CT_HIT_CHECK],
		 cal->bpf_post[CT_HIT_CHECK], cal->bpf_pre[CT_HIT_NOTRAP], cal->bpf_post[CT_HIT_NOTRAP], cal->bpf_args);
	ct_probes_set_bpf_times(p, cal->bpf_pre, cal->bpf_post, cal->bpf_args);
	struct medians unused;
	if (measure(cal, CALLS_START, START_BUDGET_NS * 2 / 3, NULL, NULL, out, &unused)) {
		ct_calib_free(cal);
		return NULL;
	}
	keep_bpf_times(cal, out);
	out->ms = (now_mono_ns() - t0) / 1e6;
	cal->ncpus = ct_probes_hits(p, cal->hits0, NCPU_MAX);
	return cal;
}

int ct_calib_again(struct ct_calib *cal, ct_event_cb cb, void *ctx, struct ct_insitu *in, struct ct_costs *out)
{
	uint64_t t0 = now_mono_ns(), hits[NCPU_MAX], total = 0;
	size_t n = ct_probes_hits(cal->p, hits, NCPU_MAX);
	if (!n || n != cal->ncpus)
		return ct_fail("calibration: no per-CPU hit counts");
	for (size_t i = 0; i < n; i++) {
		hits[i] -= cal->hits0[i];
		total += hits[i];
	}
	if (!total)
		return ct_fail("calibration: no probe hits to measure for");
	cpu_set_t was;
	bool pinned = sched_getaffinity(0, sizeof(was), &was) == 0;
	double hit[CT_HIT_CLASSES] = {0}, mixed = 0, args = 0, weight = 0;
	double hit_med[CT_HIT_CLASSES] = {0}, mixed_med = 0;
	int rc = 0;
	for (int m = 0; m < MAX_CPUS && rc == 0; m++) {
		size_t best = n;
		for (size_t i = 0; i < n; i++)
			if (hits[i] && (m == 0 || hits[i] * MIN_SHARE >= total) && (best == n || hits[i] > hits[best]))
				best = i;
		if (best == n)
			break;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(best, &one);
		if (pinned && sched_setaffinity(0, sizeof(one), &one))
			ct_debug("calibration: cannot run on CPU %zu: %s", best, strerror(errno));
		struct ct_costs c;
		struct medians med;
		rc = measure(cal, CALLS, 0, cb, ctx, &c, &med);
		if (rc == 0) {
			ct_debug("calibration on CPU %zu (%" PRIu64 " of %" PRIu64 " hits): emulated %" PRIu64
				 " ns, stepped %" PRIu64 " ns, call %" PRIu64 " ns, ret %" PRIu64 " ns, 5-byte nop %" PRIu64
				 " ns", best, hits[best], total, c.hit_ns[CT_HIT_EMULATED], c.hit_ns[CT_HIT_STEPPED],
				 c.hit_ns[CT_HIT_CALL], c.hit_ns[CT_HIT_RET], c.hit_ns[CT_HIT_NOTRAP]);
			double w = (double)hits[best];
			for (int k = 0; k < CT_HIT_CLASSES; k++) {
				hit[k] += w * c.hit_ns[k];
				hit_med[k] += w * med.hit[k];
			}
			mixed += w * c.mixed_ns;
			mixed_med += w * med.mixed;
			args += w * c.args_ns;
			weight += w;
		}
		hits[best] = 0;
	}
	if (pinned)
		sched_setaffinity(0, sizeof(was), &was);
	if (rc || weight == 0)
		return rc ? rc : ct_fail("calibration: nothing measured");
	memset(out, 0, sizeof(*out));
	uint64_t med_ns[CT_HIT_CLASSES];
	for (int k = 0; k < CT_HIT_CLASSES; k++) {
		out->hit_ns[k] = hit[k] / weight + 0.5;
		med_ns[k] = hit_med[k] / weight + 0.5;
	}
	out->mixed_ns = mixed / weight + 0.5;
	double tail;
	if (in && ct_insitu_tail(in, med_ns, &tail)) {
		/* the typical hit from here, the slow ones as the program had
		 * them (insitu.c) */
		ct_debug("calibration: the program's tiny calls say its hits cost %.1f %% over their median (the "
			 "calibration's: emulated %.1f %%, stepped %.1f %%)", 100 * tail,
			 100.0 * out->hit_ns[CT_HIT_EMULATED] / med_ns[CT_HIT_EMULATED] - 100,
			 100.0 * out->hit_ns[CT_HIT_STEPPED] / med_ns[CT_HIT_STEPPED] - 100);
		for (int k = 0; k < CT_HIT_CLASSES; k++)
			if (med_ns[k])
				out->hit_ns[k] = med_ns[k] * (1 + tail) + 0.5;
		out->mixed_ns = mixed_med / weight * (1 + tail) + 0.5;
	}
	out->args_ns = (uint64_t)(args / weight + 0.5);
	out->calls = CALLS;
	out->ms = (now_mono_ns() - t0) / 1e6;
	keep_bpf_times(cal, out);
	out->ok = true;
	return 0;
}

void ct_calib_free(struct ct_calib *cal)
{
	if (!cal)
		return;
	free(cal->g);
	free(cal);
}
