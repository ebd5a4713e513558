// SPDX-License-Identifier: GPL-2.0
/* The kernel side of calltrace: one program for entry sites, one for exit
 * sites (RET, tail JMP, morestack CALL, goexit).  Each hit identifies the
 * thread of execution (goroutine or thread), computes the frame key that
 * survives Go stack copies, and sends a 40-byte event to user space.  All
 * interpretation (nesting, restarts, tail calls) happens in user space. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "event.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct ct_config cfg = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* resized by user space before load */
} events SEC(".maps");

/* Events dropped because the ring buffer was full, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* tgids to trace when one link cannot carry the pid filter (--follow). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} traced_pids SEC(".maps");

/* Per-site argument fetch programs, indexed by site id. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* resized by user space before load */
	__type(key, __u32);
	__type(value, struct ct_fetch);
} fetch SEC(".maps");

/* Per-CPU scratch where an event with arguments is assembled before it is
 * copied to the ring buffer.  `busy` guards against a second probe hit on
 * the same CPU while one is still assembling (possible on preemptible
 * kernels): that hit is sent without its arguments, flagged. */
struct scratch {
	__u64 busy;
	__u64 regs[24]; /* copy of struct pt_regs (21 slots) */
	struct ct_event e;
	__u8 payload[2 * CT_MAX_PAYLOAD];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_map SEC(".maps");

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;
	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline void count_lost(void)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&lost, &zero);
	if (n)
		*n += 1;
}

static __always_inline __u64 wake_flags(void)
{
	/* Wake the reader only when a good share of the buffer is pending: a
	 * wakeup per event costs more than the probe hit itself. */
	__u64 pending = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	return pending >= cfg.wake_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

#define PMASK (CT_MAX_PAYLOAD - 1)

/* Copies memory for one fetch op: header at dst, bytes at dst + 8. */
static __always_inline void fetch_mem(struct scratch *s, __u32 dst, __u32 size, __u64 addr, int str)
{
	dst &= PMASK & ~7U;
	size &= PMASK;
	__u16 *hdr = (__u16 *)&s->payload[dst];
	void *data = &s->payload[dst + CT_MEM_HDR];
	long n;
	if (!size) {
		*hdr = 0;
		return;
	}
	if (str) {
		n = bpf_probe_read_user_str(data, size, (void *)addr);
		*hdr = n > 0 ? (__u16)(n - 1) : CT_FETCH_FAILED; /* without the NUL */
		return;
	}
	n = bpf_probe_read_user(data, size, (void *)addr);
	*hdr = n == 0 ? (__u16)size : CT_FETCH_FAILED;
}

static __always_inline __u64 payload_u64(struct scratch *s, __u32 off)
{
	return *(__u64 *)&s->payload[off & PMASK & ~7U];
}

static int run_fetch(struct pt_regs *ctx, struct scratch *s, const struct ct_fetch *f)
{
	__u64 sp = PT_REGS_SP(ctx);
	if (bpf_probe_read_kernel(s->regs, sizeof(struct pt_regs), ctx))
		return -1;
	for (int i = 0; i < CT_MAX_OPS; i++) {
		if (i >= f->nops)
			break;
		const struct ct_fetch_op *op = &f->ops[i];
		__u32 dst = op->dst & PMASK;
		switch (op->code) {
		case CT_OP_REG:
			*(__u64 *)&s->payload[dst & ~7U] = s->regs[op->reg & 15];
			break;
		case CT_OP_STACK:
			fetch_mem(s, dst, op->size, sp + op->off, 0);
			break;
		case CT_OP_REGMEM:
			fetch_mem(s, dst, op->size, s->regs[op->reg & 15] + op->off, 0);
			break;
		case CT_OP_DEREF:
			fetch_mem(s, dst, op->size, payload_u64(s, op->src) + op->off, 0);
			break;
		case CT_OP_DEREF_LEN: {
			__u64 n = payload_u64(s, op->src2) * op->scale;
			if (n > op->size)
				n = op->size;
			fetch_mem(s, dst, (__u32)n, payload_u64(s, op->src) + op->off, 0);
			break;
		}
		case CT_OP_DEREF_STR:
			fetch_mem(s, dst, op->size, payload_u64(s, op->src) + op->off, 1);
			break;
		}
	}
	return 0;
}

/* Slow path: the site captures arguments or results. */
static __noinline int emit_fetch(struct pt_regs *ctx, __u32 site, __u64 goid, __u64 key, __u64 pid_tgid)
{
	__u32 zero = 0;
	const struct ct_fetch *f = bpf_map_lookup_elem(&fetch, &site);
	struct scratch *s = bpf_map_lookup_elem(&scratch_map, &zero);
	if (!f || !s)
		return 1;
	if (__sync_lock_test_and_set(&s->busy, 1))
		return 1; /* nested on this CPU: send the plain event */
	int ok = run_fetch(ctx, s, f) == 0;
	__u32 len = ok ? (f->size & PMASK) : 0;
	s->e.ts = bpf_ktime_get_ns();
	s->e.goid = goid;
	s->e.key = key;
	s->e.pid = pid_tgid >> 32;
	s->e.tid = (__u32)pid_tgid;
	s->e.site = site;
	s->e.len = len;
	s->e.flags = ok ? 0 : CT_EV_ARGS_DROPPED;
	if (bpf_ringbuf_output(&events, &s->e, sizeof(struct ct_event) + len, wake_flags()))
		count_lost();
	__sync_lock_test_and_set(&s->busy, 0);
	return 0;
}

static __always_inline int emit(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 gsrc = CT_COOKIE_GSRC(cookie);
	__u32 bin = CT_COOKIE_BIN(cookie);
	__u64 sp = PT_REGS_SP(ctx);
	__u64 g = 0, goid = 0, key;

	if (cfg.filter_pids && !bpf_map_lookup_elem(&traced_pids, &tgid))
		return 0;

	if (gsrc == CT_G_R14) {
		g = ctx->r14;
	} else if (gsrc == CT_G_TLS) {
		struct task_struct *task = (void *)bpf_get_current_task();
		__u64 fsbase = BPF_CORE_READ(task, thread.fsbase);
		g = read_u64(fsbase + cfg.bins[bin].tls_g_off);
	}
	if (g) {
		const volatile struct ct_bin_config *bc = &cfg.bins[bin];
		goid = read_u64(g + bc->goid_off);
		key = read_u64(g + bc->stack_hi_off) - sp;
	} else {
		key = CT_C_KEY_BASE - sp;
	}

	__u16 flags = 0;
	if (CT_COOKIE_FETCH(cookie)) {
		if (emit_fetch(ctx, CT_COOKIE_SITE(cookie), goid, key, pid_tgid) == 0)
			return 0;
		flags = CT_EV_ARGS_DROPPED;
	}
	struct ct_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost();
		return 0;
	}
	e->ts = bpf_ktime_get_ns();
	e->goid = goid;
	e->key = key;
	e->pid = tgid;
	e->tid = (__u32)pid_tgid;
	e->site = CT_COOKIE_SITE(cookie);
	e->len = 0;
	e->flags = flags;
	bpf_ringbuf_submit(e, wake_flags());
	return 0;
}

SEC("uprobe")
int ct_entry(struct pt_regs *ctx)
{
	return emit(ctx);
}

SEC("uprobe")
int ct_exit(struct pt_regs *ctx)
{
	return emit(ctx);
}
