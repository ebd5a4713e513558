/* dump --events: the record's events as they are in the file, one line
 * each, before any reconstruction -- what the probes saw, for finding out
 * why a tree looks the way it does (a missing exit, an event attributed to
 * another goroutine, a key that does not match):
 *
 *   ts=1234567 pid=10 tid=10 goid=8 site=42 kind=retsite func=main.work+0x1d key=0x1f8 flags=0 len=0 call_site=41
 *
 * ts: ns since the trace started.  site: the probe's site id; kind, func
 * (the traced function and the site's offset in it; for a site in a
 * caller's code, a call or its return site, the function called and the
 * site's address: func=NAME at=0x...; or the marker's address) and, where the site has them, the call site a return site
 * closes (call_site), the site's key adjustment (key_adj) and the tail
 * jump's target (target).  key: the frame key the probe computed (Go:
 * g.stack.hi - SP, C: a base - SP; before key_adj).  flags: CT_EV_* of
 * probes/event.h, by name.  len: payload bytes (captured values).  Loss
 * records and process records (fork, exec, a thread's or a process's
 * exit) are lines of their own.  Filters do not apply: this is the raw stream. */
#include "render/render.h"
#include "util/util.h"

#include <inttypes.h>
#include <string.h>

static const char *const kind_names[CT_SITE_NKINDS] = {
	[CT_SITE_ENTRY] = "entry",	[CT_SITE_RET] = "ret",	       [CT_SITE_TAIL] = "tail",
	[CT_SITE_RESTART] = "restart",	[CT_SITE_GOEXIT] = "goexit",   [CT_SITE_CALL] = "call",
	[CT_SITE_RETSITE] = "retsite",	[CT_SITE_CHECK] = "check",     [CT_SITE_RECOVER] = "recover",
	[CT_SITE_DEFERRET] = "deferret", [CT_SITE_GOCREATE] = "gocreate", [CT_SITE_SPILL] = "spill",
	[CT_SITE_TAILRES] = "tailres",	[CT_SITE_TAILDIFF] = "taildiff", [CT_SITE_GOREADY] = "goready",
	[CT_SITE_CATCH] = "catch",
};

static const struct {
	uint16_t bit;
	const char *name;
} flag_names[] = {
	{CT_EV_ARGS_DROPPED, "args_dropped"}, {CT_EV_MARKER, "marker"},
	{CT_EV_SYSSTACK, "sysstack"},	      {CT_EV_DELAYED, "delayed"},
	{CT_EV_PROC, "proc"},		      {CT_EV_UNWATCHED, "unwatched"},
	{CT_EV_ALTSTACK, "altstack"},	      {CT_EV_UNOBSERVED_DONE, "unobserved_done"},
	{CT_EV_WATCHED, "watched"},	      {CT_EV_INTERIM_PASS, "interim_pass"},
	{CT_EV_NOT_TAKEN, "not_taken"},
};

static const char *proc_name(uint8_t what)
{
	switch (what) {
	case CT_PROC_FORK:
		return "fork";
	case CT_PROC_EXEC:
		return "exec";
	case CT_PROC_EXIT:
		return "exit";
	case CT_PROC_THREAD_EXIT:
		return "thread_exit";
	case CT_PROC_INTERIM_GONE:
		return "interim_gone";
	case CT_PROC_STALL:
		return "stall";
	case CT_PROC_PROBES_IN:
		return "probes_in";
	case CT_PROC_OFFCPU:
		return "off_cpu";
	case CT_PROC_READY:
		return "ready";
	default:
		return "?";
	}
}

static void put_flags(FILE *out, uint16_t flags)
{
	if (!flags) {
		fputs(" flags=0", out);
		return;
	}
	const char *sep = " flags=";
	for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
		if (flags & flag_names[i].bit) {
			fprintf(out, "%s%s", sep, flag_names[i].name);
			sep = ",";
			flags &= (uint16_t)~flag_names[i].bit;
		}
	if (flags)
		fprintf(out, "%s0x%x", sep, flags);
}

/* The site's function and offset, or its address when it names none; the
 * name is the file's (mangled, no spaces: one field). */
static void put_site(FILE *out, const struct ct_trace *t, const struct ct_file_site *s)
{
	fprintf(out, " kind=%s", s->kind < CT_SITE_NKINDS && kind_names[s->kind] ? kind_names[s->kind] : "?");
	if (s->func < t->nfuncs) {
		const struct ct_file_func *f = &t->funcs[s->func];
		fputs(" func=", out);
		for (const char *p = f->name; *p; p++)
			fputc(*p == ' ' || *p < 0x20 ? '_' : *p, out);
		if (s->addr >= f->entry && (!f->size || s->addr - f->entry < f->size))
			fprintf(out, "+0x%" PRIx64, s->addr - f->entry);
		else /* a caller-side site (call, return site): in the caller's
		      * code, named by the function whose call it sees */
			fprintf(out, " at=0x%" PRIx64, s->addr);
	} else {
		fprintf(out, " addr=0x%" PRIx64, s->addr);
	}
}

int ct_render_events(struct ct_trace *t, const struct ct_render_opts *o)
{
	FILE *out = o->out;
	struct ct_event_iter it;
	struct ct_rec_event ev;
	ct_iter_init(&it, t);
	fprintf(out, "# %s: events in file order (dump --events)\n", t->path);
	while (ct_iter_next(&it, &ev)) {
		fprintf(out, "ts=%" PRIu64, ct_rel_ts(t, ev.ts));
		if (ev.kind == CT_EV_LOST) {
			fprintf(out, " lost=%" PRIu64 "\n", ev.lost);
			continue;
		}
		fprintf(out, " pid=%" PRIu32 " tid=%" PRIu32, ev.pid, ev.tid);
		if (ev.kind == CT_EV_PROC_REC) {
			fprintf(out, " proc=%s", proc_name(ev.proc));
			if (ev.proc == CT_PROC_FORK)
				fprintf(out, " child=%" PRIu32, ev.child);
			if (ev.proc == CT_PROC_STALL)
				fprintf(out, " goid=%" PRIu64 " waited_ns=%" PRIu32, ev.goid, ev.child);
			if (ev.proc == CT_PROC_PROBES_IN)
				fputs(ev.child ? " phase=all" : " phase=begin", out);
			if (ev.proc == CT_PROC_OFFCPU)
				fprintf(out, " goid=%" PRIu64 " off_ns=%" PRIu64 "%s how=%s", ev.goid, ev.key,
					ev.child & CT_OFFCPU_AT_END ? " until=end" : "",
					!(ev.child & CT_OFFCPU_PREEMPTED)  ? "blocked"
					: ev.child & CT_OFFCPU_BY_TRACER ? "preempted_by_calltrace"
					: ev.child & CT_OFFCPU_GOSCHED	 ? "preempted_by_go"
									 : "preempted");
			if (ev.proc == CT_PROC_READY)
				fprintf(out, " goid=%" PRIu64, ev.goid);
			if (ev.proc == CT_PROC_INTERIM_GONE && ev.child < t->nfuncs)
				fprintf(out, " func=%s", t->funcs[ev.child].name);
			fputc('\n', out);
			continue;
		}
		fprintf(out, " goid=%" PRIu64 " site=%" PRIu32, ev.goid, ev.site);
		const struct ct_file_site *s = ev.site < t->nsites ? &t->sites[ev.site] : NULL;
		if (s)
			put_site(out, t, s);
		else
			fputs(" kind=? (a site the file does not list)", out);
		fprintf(out, " key=0x%" PRIx64, ev.key);
		put_flags(out, ev.flags);
		if (ev.silent) /* (hits before it that sent none, in emulated hits' worth) */
			fprintf(out, " silent=%.2f", (double)ev.silent / CT_SILENT_UNIT);
		if (ev.extra_ns) /* (its BPF program's time beyond the calibration's) */
			fprintf(out, " extra_ns=%d", (int)ev.extra_ns);
		fprintf(out, " len=%" PRIu32, ev.payload_len);
		if (s && s->call_site != UINT32_MAX)
			fprintf(out, " call_site=%" PRIu32, s->call_site);
		if (s && s->key_adj)
			fprintf(out, " key_adj=%" PRId32, s->key_adj);
		if (s && s->kind == CT_SITE_TAIL && s->target_func < t->nfuncs)
			fprintf(out, " target=%s", t->funcs[s->target_func].name);
		if (s && s->next != UINT32_MAX)
			fprintf(out, " next=%" PRIu32, s->next);
		fputc('\n', out);
	}
	ct_iter_free(&it);
	return 0;
}
