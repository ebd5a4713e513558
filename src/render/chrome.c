/* Chrome trace-event JSON, for the Perfetto UI (ui.perfetto.dev),
 * chrome://tracing and speedscope:
 *
 *   {"traceEvents":[
 *   {"ph":"M","name":"process_name","ts":0,"pid":41,"tid":41,"args":{"name":"server --port 80"}},
 *   {"ph":"M","name":"thread_name","ts":0,"pid":41,"tid":1,"args":{"name":"goroutine 1"}},
 *   {"ph":"B","name":"main.add","ts":12.345,"pid":41,"tid":1,"args":{"arguments":[...]}},
 *   {"ph":"E","name":"main.add","ts":13.001,"pid":41,"tid":1,"args":{"results":[...]}},
 *   ...],
 *   "displayTimeUnit":"ns","metadata":{...}}
 *
 * Tracks: one per goroutine or thread.  pid is the real process id.  For a
 * goroutine, tid is its goroutine id ("goroutine N"): a goroutine keeps one
 * track while it moves between threads (the thread of each call is in its
 * args).  For a thread, tid is the kernel thread id ("thread N").  In a Go
 * trace, calls on no goroutine (g0/system stacks) get tid 2^30 + thread id
 * ("thread N (no goroutine)"), so they can never share a track with a
 * goroutine; kernel thread ids stay below 2^22.  Viewers take tids as 32-bit
 * numbers, so a goroutine id of 2^30 or more (not seen from the Go runtime in
 * practice) gets 2^31 + a number in order of appearance instead.  A thread's
 * calls on another stack it switched to (a coroutine, "context" n) get a
 * track of their own: tid 2^29 + a number in order of appearance ("thread T
 * context N").
 *
 * Events are written as the reconstruction produces them: B at entry, E at
 * exit, so memory stays bounded and each track is in time order with E before
 * B at equal times (a frame closes before the next opens), E named like its
 * B.  Files interleave tracks in the order events were recorded; viewers sort
 * by time, and both Perfetto (stable sort when there are no X events) and
 * speedscope (per track, file order at equal times) keep that per-track
 * order.  Timestamps are µs since the trace started with 3 decimals (ns).
 *
 * Goroutine lineage: for a goroutine whose creation was seen and that has a
 * slice, an instant event "go" (args: the new goroutine, the `go`
 * statement's position) on the creating goroutine's track at the creation,
 * and a flow (v1: "s" right after that instant, "f" with "bp":"e" right
 * after the new goroutine's first B, same id, cat and name) from it to the
 * new goroutine's first slice.  Perfetto binds "s" to the
 * topmost slice on the track, which is the instant itself (dur 0, still on
 * its stack at that ts), so the arrow starts at the moment of creation.
 *
 * A slice is as long as the call's corrected duration; a returned call's
 * E args carry "dur_below_ns":N where that is too short to tell from none
 * (the text's "< N", ct_dur_below), with the values (not under --no-args);
 * one whose thread was off CPU while it ran, "off_cpu_preempted_ns" and
 * "off_cpu_blocked_ns" (JSON's off_cpu; also on a call that did not return).
 *
 * Calls that did not return are closed where the reconstruction ended them,
 * E args {"status":"unwound"}, {"status":"unfinished"}, {"status":"exited"}, {"status":"lost"} or
 * {"status":"unobserved"} -- the slice of an unobserved call ends at the
 * event that showed it over, or at its thread's or the trace's end; in the
 * first case "dur_max_ns":N says it lasted at most that (JSON's dur_max),
 * as the slice's length does.  Losses are global
 * instant events "LOST N events".
 *
 * Perfetto quirks honoured: no array-valued key at the top level of an event
 * (its tokenizer rejects them while looking for "ts"), thread names keyed by
 * unique tids.  speedscope quirks: M events carry "ts" (older versions demand
 * it); it names frames by name + args, so --no-args gives one frame per
 * function there. */
#include "render/render.h"
#include "render/values.h"
#include "util/util.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#define NO_GOROUTINE_TID (1u << 30)
#define BIG_GOID_TID (1u << 31)
#define CONTEXT_TID (1u << 29) /* + n: another stack of a thread (a coroutine) */

struct chrome {
	struct ct_trace *t;
	FILE *out;
	bool with_values;
	bool go;
	struct ct_values *vals;
	struct ct_buf ev;     /* the event being built */
	struct ct_map tracks; /* pid << 32 | track tid -> last ts + 1 */
	struct ct_map pids;   /* processes named so far */
	struct ct_map big_goids; /* hash of (pid, goid) -> tid, for goids >= 2^30 */
	uint32_t nbig_goids;
	struct ct_map contexts; /* thread key of a coroutine's calls -> tid */
	uint32_t ncontexts;
	uint64_t nevents;
	uint64_t calls, unwound, unfinished, exited, cut_by_loss, unobserved; /* shown */
	char *process_name;
	struct ct_map flows;  /* goroutine_key of a goroutine made -> its origin */
	uint64_t nflows;
};

static uint64_t goroutine_key(uint32_t pid, uint32_t image, uint64_t goid)
{
	return ((uint64_t)pid << 42 ^ goid) ^ (image ? hash64(~(uint64_t)image) : 0);
}

#define put(ch, ...) buf_printf(&(ch)->ev, __VA_ARGS__)

static void put_string(struct chrome *ch, const char *s)
{
	ct_buf_json_string(&ch->ev, s, strlen(s));
}

/* "12.345": µs with ns precision, exact (no floating point). */
static void put_ts(struct chrome *ch, uint64_t rel_ns)
{
	put(ch, "%" PRIu64 ".%03u", rel_ns / 1000, (unsigned)(rel_ns % 1000));
}

static void begin_event(struct chrome *ch)
{
	ch->ev.n = 0;
	put(ch, "%s{", ch->nevents ? ",\n" : "");
}

static void end_event(struct chrome *ch)
{
	put(ch, "}");
	fwrite(ch->ev.p, 1, ch->ev.n, ch->out);
	ch->nevents++;
}

static uint32_t track_tid(struct chrome *ch, const struct ct_call *c)
{
	if (!c->goid && c->context) {
		void **slot = map_slot(&ch->contexts, ct_call_thread_key(c), true);
		if (!*slot)
			*slot = (void *)(uintptr_t)(CONTEXT_TID + ch->ncontexts++);
		return (uint32_t)(uintptr_t)*slot;
	}
	if (!c->goid)
		return ch->go ? NO_GOROUTINE_TID | c->tid : c->tid;
	if (c->goid < NO_GOROUTINE_TID && !c->image)
		return (uint32_t)c->goid;
	/* a huge id, or a goroutine of a program its process exec'd (which
	 * numbers its goroutines anew): a track of its own */
	void **slot = map_slot(&ch->big_goids, goroutine_key(c->pid, c->image, c->goid), true);
	if (!*slot)
		*slot = (void *)(uintptr_t)(BIG_GOID_TID + ch->nbig_goids++);
	return (uint32_t)(uintptr_t)*slot;
}

static void name_event(struct chrome *ch, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
	begin_event(ch);
	put(ch, "\"ph\":\"M\",\"name\":\"%s\",\"ts\":0,\"pid\":%u,\"tid\":%u,\"args\":{\"name\":", what, pid, tid);
	put_string(ch, name);
	put(ch, "}");
	end_event(ch);
}

/* Names the process and the track on first sight; returns the track's key. */
static uint64_t track_of(struct chrome *ch, const struct ct_call *c)
{
	uint32_t tid = track_tid(ch, c);
	uint64_t key = (uint64_t)c->pid << 32 | tid;
	if (!map_get(&ch->pids, c->pid)) {
		/* The record keeps only the launched command line, not which pid
		 * ran it nor what the processes record --follow picked up exec'd:
		 * all carry the command's name, told apart by pid. */
		map_put(&ch->pids, c->pid, (void *)1);
		name_event(ch, "process_name", c->pid, c->pid, ch->process_name);
	}
	if (!map_get(&ch->tracks, key)) {
		char name[64];
		if (c->goid)
			snprintf(name, sizeof(name), "goroutine %" PRIu64, c->goid);
		else if (c->context)
			snprintf(name, sizeof(name), "thread %u context %u", c->tid, c->context);
		else if (ch->go && ct_trace_func_is_go(ch->t, c->func))
			snprintf(name, sizeof(name), "thread %u (no goroutine)", c->tid);
		else
			snprintf(name, sizeof(name), "thread %u", c->tid);
		name_event(ch, "thread_name", c->pid, tid, name);
		map_put(&ch->tracks, key, (void *)1);
	}
	return key;
}

/* Per-track time never goes back: the reconstruction already guarantees it
 * (a goroutine's events are causally ordered), this keeps the file valid
 * even for a damaged trace. */
static uint64_t track_ts(struct chrome *ch, uint64_t key, uint64_t ts)
{
	uint64_t rel = ct_rel_ts(ch->t, ts);
	uint64_t last = (uint64_t)(uintptr_t)map_get(&ch->tracks, key) - 1;
	if (rel < last)
		rel = last;
	map_put(&ch->tracks, key, (void *)(uintptr_t)(rel + 1));
	return rel;
}

static void put_head(struct chrome *ch, char ph, const struct ct_call *c, uint64_t rel)
{
	begin_event(ch);
	put(ch, "\"ph\":\"%c\",\"name\":", ph);
	put_string(ch, ct_func_name(ch->t, c->func));
	put(ch, ",\"ts\":");
	put_ts(ch, rel);
	put(ch, ",\"pid\":%u,\"tid\":%u", c->pid, track_tid(ch, c));
}

/* The instant "go" on the creator's track at the creation, and the flow's
 * start.  Written when the new goroutine's first slice is, so later than
 * events of that track after the creation: viewers sort by time (the
 * per-track order the file keeps is that of B/E events). */
static void put_creation(struct chrome *ch, const struct ct_goroutine_origin *o, uint64_t id)
{
	struct ct_call creator = {0};
	creator.pid = o->pid;
	creator.tid = o->tid;
	creator.goid = o->parent;
	creator.image = o->image;
	track_of(ch, &creator);
	uint32_t tid = track_tid(ch, &creator);
	uint64_t rel = ct_rel_ts(ch->t, o->ts);
	begin_event(ch);
	put(ch, "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"goroutine\",\"name\":\"go\",\"ts\":");
	put_ts(ch, rel);
	put(ch, ",\"pid\":%u,\"tid\":%u,\"args\":{\"goroutine\":%" PRIu64, o->pid, tid, o->goid);
	const struct ct_pcpos *pos = o->pc ? ct_trace_pcpos(ch->t, o->site, o->pid, o->pc) : NULL;
	if (pos) {
		put(ch, ",\"func\":");
		put_string(ch, pos->func);
		put(ch, ",\"file\":");
		put_string(ch, pos->file);
		put(ch, ",\"line\":%u", pos->line);
	}
	put(ch, "}");
	end_event(ch);
	begin_event(ch);
	put(ch, "\"ph\":\"s\",\"id\":%" PRIu64 ",\"cat\":\"goroutine\",\"name\":\"go\",\"ts\":", id);
	put_ts(ch, rel);
	put(ch, ",\"pid\":%u,\"tid\":%u", o->pid, tid);
	end_event(ch);
}

static void on_enter(void *ctx, const struct ct_call *c)
{
	struct chrome *ch = ctx;
	uint64_t key = track_of(ch, c);
	put_head(ch, 'B', c, track_ts(ch, key, c->ts_entry));
	ch->calls++;
	if (ch->with_values) {
		size_t start = ch->ev.n;
		const char *sep = ",\"args\":{";
		if (ct_values_load_args(ch->vals, c)) {
			put(ch, "%s\"arguments\":", sep);
			ct_values_json(ch->vals, &ch->ev);
			sep = ",";
		}
		if (c->goid) {
			put(ch, "%s\"thread\":%u", sep, c->tid);
			sep = ",";
		}
		if (c->tail)
			put(ch, "%s\"tail_call\":true", sep);
		if (ch->ev.n > start)
			put(ch, "}");
	}
	end_event(ch);
	struct ct_goroutine_origin *o;
	if (ch->flows.n && c->goid && !c->sysstack && (o = map_get(&ch->flows, goroutine_key(c->pid, c->image, c->goid)))) {
		map_del(&ch->flows, goroutine_key(c->pid, c->image, c->goid));
		put_creation(ch, o, ++ch->nflows);
		/* the goroutine's first slice: where the arrow ends */
		begin_event(ch);
		put(ch, "\"ph\":\"f\",\"bp\":\"e\",\"id\":%" PRIu64 ",\"cat\":\"goroutine\",\"name\":\"go\",\"ts\":",
		    ch->nflows);
		put_ts(ch, track_ts(ch, key, c->ts_entry));
		put(ch, ",\"pid\":%u,\"tid\":%u", c->pid, track_tid(ch, c));
		end_event(ch);
		free(o);
	}
}

/* A goroutine was made: kept until its first slice (most of the runtime's
 * own goroutines never have one, and get no arrow). */
static void on_spawn(void *ctx, const struct ct_goroutine_origin *o)
{
	struct chrome *ch = ctx;
	if (!ct_origin_shown(o))
		return;
	struct ct_goroutine_origin *copy = xmalloc(sizeof(*copy));
	*copy = *o;
	void **slot = map_slot(&ch->flows, goroutine_key(o->pid, o->image, o->goid), true);
	free(*slot);
	*slot = copy;
}

/* How long the call's thread was off CPU (JSON's off_cpu), if at all,
 * after SEP */
static void put_off_cpu(struct chrome *ch, const struct ct_call *c, const char *sep)
{
	if (!c->off_preempted && !c->off_blocked)
		return;
	put(ch, "%s\"off_cpu_preempted_ns\":%" PRIu64 ",\"off_cpu_blocked_ns\":%" PRIu64, sep, c->off_preempted,
	    c->off_blocked);
	if (c->off_tracer)
		put(ch, ",\"off_cpu_by_calltrace_ns\":%" PRIu64, c->off_tracer);
}

static void on_exit_call(void *ctx, const struct ct_call *c)
{
	struct chrome *ch = ctx;
	uint64_t key = track_of(ch, c);
	put_head(ch, 'E', c, track_ts(ch, key, c->ts_exit));
	if (c->status != CT_CALL_RETURNED) {
		put(ch, ",\"args\":{\"status\":\"%s\"", ct_status_name(c->status));
		/* the slice ends at the event that showed an unobserved call
		 * over: it lasted at most that long (JSON's dur_max) */
		if (c->status == CT_CALL_UNOBSERVED && c->end_bound)
			put(ch, ",\"dur_max_ns\":%" PRIu64,
			    ct_dur_max(c->ts_exit - c->ts_entry, c->raw_exit - c->raw_entry));
		put_off_cpu(ch, c, ",");
		put(ch, "}");
		if (c->status == CT_CALL_UNWOUND)
			ch->unwound++;
		else if (c->status == CT_CALL_LOST)
			ch->cut_by_loss++;
		else if (c->status == CT_CALL_EXITED)
			ch->exited++;
		else if (c->status == CT_CALL_UNOBSERVED)
			ch->unobserved++;
		else
			ch->unfinished++;
	} else if (ch->with_values) {
		size_t start = ch->ev.n;
		const char *sep = ",\"args\":{";
		if (ct_values_load(ch->vals, c->exit_site, c->ret, c->ret_len)) {
			put(ch, "%s\"results\":", sep);
			ct_values_json(ch->vals, &ch->ev);
			sep = ",";
		}
		/* the slice's length is the corrected duration: where that is too
		 * short to tell from none, what it is below (the text's "< N") */
		uint64_t below = ct_dur_below(c->ts_exit - c->ts_entry, c->raw_exit - c->raw_entry);
		if (below) {
			put(ch, "%s\"dur_below_ns\":%" PRIu64, sep, below);
			sep = ",";
		}
		put_off_cpu(ch, c, sep);
		if (ch->ev.n > start)
			put(ch, "}");
	}
	end_event(ch);
}

/* A global instant: no pid/tid, so it makes no thread of its own in a
 * viewer (Perfetto files it with the idle process 0, which always exists). */
static void on_lost(void *ctx, uint64_t ts, uint64_t n)
{
	struct chrome *ch = ctx;
	begin_event(ch);
	put(ch, "\"ph\":\"i\",\"s\":\"g\",\"name\":\"LOST %" PRIu64 " events\",\"ts\":", n);
	put_ts(ch, ct_rel_ts(ch->t, ts));
	put(ch, ",\"args\":{\"lost\":%" PRIu64 "}", n);
	end_event(ch);
}

char *ct_command_name(const struct ct_trace *t)
{
	const char *cmd = ct_trace_meta(t, "record.cmdline");
	if (!cmd || !*cmd)
		cmd = ct_trace_meta(t, "target.path");
	if (!cmd || !*cmd)
		return xstrdup("traced program");
	const char *end = strchr(cmd, ' ');
	const char *slash = NULL;
	for (const char *p = cmd; *p && (!end || p < end); p++)
		if (*p == '/')
			slash = p;
	return xstrdup(slash ? slash + 1 : cmd);
}

static void meta_string(struct chrome *ch, const char *key, const char *val)
{
	put(ch, ",\"%s\":", key);
	put_string(ch, val ? val : "");
}

static void write_metadata(struct chrome *ch, const struct ct_recon_stats *st)
{
	struct ct_trace *t = ch->t;
	ch->ev.n = 0;
	put(ch, "\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":{\"source\":\"calltrace\"");
	meta_string(ch, "calltrace_version", ct_trace_meta(t, "calltrace.version"));
	meta_string(ch, "command_line", ct_trace_meta(t, "record.cmdline"));
	meta_string(ch, "target", ct_trace_meta(t, "target.path"));
	meta_string(ch, "language", ct_trace_meta(t, "target.lang"));
	const char *real = ct_trace_meta(t, "clock.realtime_ns");
	if (real) {
		time_t secs = (time_t)(strtoull(real, NULL, 10) / 1000000000ULL);
		struct tm tm;
		char when[32];
		if (gmtime_r(&secs, &tm) && strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
			meta_string(ch, "recorded_time", when);
	}
	meta_string(ch, "timestamps", "ts in microseconds since the trace started (CLOCK_MONOTONIC), ns precision");
	meta_string(ch, "tracks",
		    ch->go ? "pid = process id; tid = goroutine id (thread_name \"goroutine N\"); calls on no goroutine: tid = 2^30 + thread id"
			   : "pid = process id; tid = thread id");
	put(ch, ",\"calls\":%" PRIu64 ",\"unwound\":%" PRIu64 ",\"unfinished\":%" PRIu64 ",\"exited\":%" PRIu64
		",\"lost\":%" PRIu64 ",\"unobserved\":%" PRIu64 ",\"lost_events\":%" PRIu64 ",\"truncated\":%s}}\n",
	    ch->calls, ch->unwound, ch->unfinished, ch->exited, ch->cut_by_loss, ch->unobserved, st->lost,
	    t->truncated ? "true" : "false");
	fwrite(ch->ev.p, 1, ch->ev.n, ch->out);
}

int ct_render_chrome(struct ct_trace *t, const struct ct_render_opts *o, bool with_values)
{
	struct chrome ch;
	memset(&ch, 0, sizeof(ch));
	ch.t = t;
	ch.out = o->out;
	ch.with_values = with_values;
	ch.go = ct_trace_has_go(t);
	ch.vals = ct_values_new(t);
	ch.process_name = ct_command_name(t);
	fputs("{\"traceEvents\":[\n", ch.out);
	struct ct_recon_ops ops = {on_enter, on_exit_call, on_lost, on_spawn};
	struct ct_recon_stats st = ct_filter_run(t, o->filter, &ops, &ch);
	write_metadata(&ch, &st);
	map_free(&ch.tracks);
	map_free(&ch.pids);
	map_free(&ch.big_goids);
	MAP_FOREACH(&ch.flows, i) free(ch.flows.vals[i]);
	map_free(&ch.flows);
	map_free(&ch.contexts);
	buf_free(&ch.ev);
	ct_values_free(ch.vals);
	free(ch.process_name);
	return 0;
}
