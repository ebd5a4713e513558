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

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;
	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
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

	struct ct_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&lost, &zero);
		if (n)
			*n += 1;
		return 0;
	}
	e->ts = bpf_ktime_get_ns();
	e->goid = goid;
	e->key = key;
	e->pid = tgid;
	e->tid = (__u32)pid_tgid;
	e->site = CT_COOKIE_SITE(cookie);
	e->len = 0;
	e->flags = 0;
	/* Wake the reader only when a good share of the buffer is pending: a
	 * wakeup per event costs more than the probe hit itself. */
	__u64 pending = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	bpf_ringbuf_submit(e, pending >= cfg.wake_bytes ? BPF_RB_FORCE_WAKEUP
							 : BPF_RB_NO_WAKEUP);
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
