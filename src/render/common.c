#include "render/render.h"

#include <inttypes.h>
#include <string.h>

/* ".FFF UU" (7 bytes) at O: MOD thousandths of UNIT. */
static inline void put_frac_unit(char *o, uint64_t mod, const char *unit)
{
	o[0] = '.';
	o[1] = (char)('0' + mod / 100);
	o[2] = (char)('0' + mod / 10 % 10);
	o[3] = (char)('0' + mod % 10);
	o[4] = ' ';
	o[5] = unit[0];
	o[6] = unit[1];
}

/* WHOLE right-aligned in WIDTH, then ".FFF UU": a number past its column. */
static void buf_wide(struct ct_buf *b, uint64_t whole, unsigned width, uint64_t frac, const char *unit)
{
	buf_dec_pad(b, whole, width);
	buf_reserve(b, 7);
	put_frac_unit((char *)b->p + b->n, frac, unit);
	b->n += 7;
}

void ct_buf_duration(struct ct_buf *b, uint64_t ns)
{
	static const char *const units[] = {"us", "ms", " s", " m", " h"};
	/* each unit's size in the one before: below a millisecond (most
	 * calls) no division by a table's number, a `div` of tens of cycles */
	static const uint64_t next[] = {1000, 1000, 60, 24};
	uint64_t t = ns / 1000, mod = ns % 1000;
	size_t i = 0;
	while (i < 4 && t >= next[i]) {
		mod = t % next[i];
		t /= next[i];
		i++;
	}
	if (t >= 1000) { /* (hours only: past the column) */
		buf_wide(b, t, 3, mod, units[i]);
		return;
	}
	/* "%3u.%03u %s" as ten stores (the pieces one by one were a tenth of
	 * a tree's lines' cost) */
	buf_reserve(b, 10);
	char *o = (char *)b->p + b->n;
	o[0] = t >= 100 ? (char)('0' + t / 100) : ' ';
	o[1] = t >= 10 ? (char)('0' + t / 10 % 10) : ' ';
	o[2] = (char)('0' + t % 10);
	put_frac_unit(o + 3, mod, units[i]);
	b->n += 10;
}

/* The correction (reconstruct.c) takes out what each probe hit inside a
 * call cost by the calibration's estimate, which is good to about a tenth
 * of it: a hit's cost drifts by 5-10% from run to run, a real program's
 * hits miss caches the calibration's do not, and a tiny call's two hits
 * vary by as much (on the 2-vCPU VM: an emulated pair 5.6-5.8 us between
 * its quartiles, in lefthook's cobra).  A corrected duration below a tenth
 * of what was taken out from it cannot be told from none: "0.000 us" for
 * most leaves said more than is known. */
#define TAKEN_OUT_KNOWN_TO 10 /* one part in this many */

uint64_t ct_dur_below(uint64_t dur, uint64_t raw)
{
	uint64_t x = raw > dur ? (raw - dur) / TAKEN_OUT_KNOWN_TO : 0;
	if (dur >= x)
		return 0;
	/* rounded up to two significant digits: a bound, and no more precise
	 * than it is (the text and JSON/YAML's dur_below give this number) */
	uint64_t step = 1;
	while (x >= 100 * step) /* (x / step >= 100 without a division) */
		step *= 10;
	switch (step) { /* the common ones by a constant: no `div` */
	case 1:
		return x;
	case 10:
		return (x + 9) / 10 * 10;
	case 100:
		return (x + 99) / 100 * 100;
	case 1000:
		return (x + 999) / 1000 * 1000;
	default:
		return (x + step - 1) / step * step;
	}
}

uint64_t ct_dur_max(uint64_t bound, uint64_t raw)
{
	/* a bound corrected to below what the correction can tell from none
	 * says no more than that: at most that much, never "<= 0.000 us" */
	uint64_t below = ct_dur_below(bound, raw);
	return below > bound ? below : bound;
}

/* MARK, then NS in the first of the first NUNITS units (us, ms, s, m, h)
 * that keeps it below 100, thousandths rounded up (a bound stays one): as
 * wide as ct_buf_duration's column, MARK over its leading blanks. */
static void buf_bound(struct ct_buf *b, const char *mark, size_t mark_len, uint64_t ns, size_t nunits)
{
	static const char *const units[] = {"us", "ms", " s", " m", " h"};
	static const uint64_t unit_ns[] = {1000, 1000000, 1000000000, 60000000000, 3600000000000};
	size_t i = 0;
	while (i + 1 < nunits && ns >= 100 * unit_ns[i])
		i++;
	/* the unit's thousandths, rounded up: ns themselves in microseconds
	 * (most bounds), without a division */
	uint64_t milli_ns = unit_ns[i] / 1000;
	uint64_t milli = i == 0 ? ns : ns / milli_ns + (ns % milli_ns != 0);
	/* ("%s%2u.%03u %s" without printf: most lines of a tree of small
	 * calls have one, and vfprintf was ~8% of replay) */
	uint64_t frac = milli % 1000, whole = milli / 1000;
	buf_put(b, mark, mark_len);
	if (whole >= 100) { /* (the last unit's: past the column) */
		buf_wide(b, whole, 2, frac, units[i]);
		return;
	}
	buf_reserve(b, 9);
	char *o = (char *)b->p + b->n;
	o[0] = whole >= 10 ? (char)('0' + whole / 10) : ' ';
	o[1] = (char)('0' + whole % 10);
	put_frac_unit(o + 2, frac, units[i]);
	b->n += 9;
}

void ct_buf_duration_below(struct ct_buf *b, uint64_t ns)
{
	/* "<" and 6 characters of number, up to seconds; NS has two
	 * significant digits (ct_dur_below), so it is shown exactly */
	buf_bound(b, "<", 1, ns, 3);
}

void ct_buf_duration_at_most(struct ct_buf *b, uint64_t ns)
{
	/* "<=" over the column's leading blank: the line's other columns stay
	 * where they are, and no measured duration (a blank, then 3 digits)
	 * nor "< N" (a blank, then '<' and a blank or digit) looks like it */
	buf_bound(b, "<=", 2, ns, 5);
}

/* uftrace's duration format: value with 3 decimals and a 2-char unit. */
void ct_fmt_duration(char *buf, size_t n, uint64_t ns)
{
	struct ct_buf b = {0};
	ct_buf_duration(&b, ns);
	snprintf(buf, n, "%.*s", (int)b.n, (char *)b.p);
	buf_free(&b);
}

/* NS as "201.344 us", without the column's padding */
static void buf_duration_trim(struct ct_buf *b, uint64_t ns)
{
	size_t at = b->n, lead = 0;
	ct_buf_duration(b, ns);
	while (at + lead < b->n && b->p[at + lead] == ' ')
		lead++;
	memmove(b->p + at, b->p + at + lead, b->n - at - lead);
	b->n -= lead;
}

bool ct_buf_off_cpu(struct ct_buf *b, const struct ct_call *c)
{
	uint64_t pre = c->off_preempted, blk = c->off_blocked;
	if (!pre && !blk)
		return false;
	const char *by = c->off_tracer ? (c->off_tracer == pre ? " by calltrace" : ", partly by calltrace") : "";
	if (c->func == CT_FUNC_SCHED) { /* (--sched) its whole time was: only why */
		buf_cstr(b, blk ? "blocked" : "preempted");
		buf_cstr(b, by);
		if (c->status == CT_CALL_UNFINISHED) { /* (no duration: still off CPU at the end) */
			buf_cstr(b, " ");
			buf_duration_trim(b, pre + blk);
			buf_cstr(b, " until the end");
		}
		return true;
	}
	buf_cstr(b, "off CPU ");
	buf_duration_trim(b, pre + blk);
	if (!blk) {
		buf_printf(b, ", preempted%s", by);
	} else if (!pre) {
		buf_cstr(b, ", blocked");
	} else {
		buf_cstr(b, ": blocked ");
		buf_duration_trim(b, blk);
		buf_cstr(b, ", preempted ");
		buf_duration_trim(b, pre);
		buf_cstr(b, by);
	}
	return true;
}

const char *ct_func_name(const struct ct_trace *t, uint32_t func)
{
	if (func == CT_FUNC_SCHED) /* (--sched) */
		return "linux:schedule";
	return func < t->nfuncs ? ct_names_show(&t->func_names[func], t->funcs[func].name) : "?";
}

uint64_t ct_rel_ts(const struct ct_trace *t, uint64_t ts)
{
	return ts > t->first_ts ? ts - t->first_ts : 0;
}

bool ct_origin_shown(const struct ct_goroutine_origin *o)
{
	return o && o->parent; /* parent 0: made by the runtime's start (goroutine 1) */
}

void ct_buf_origin(struct ct_buf *b, const struct ct_trace *t, const struct ct_goroutine_origin *o)
{
	const struct ct_pcpos *pos = o->pc ? ct_trace_pcpos(t, o->site, o->pid, o->pc) : NULL;
	if (pos) {
		const char *slash = strrchr(pos->file, '/');
		buf_printf(b, "created by %s at %s:%u in goroutine %" PRIu64, pos->func, slash ? slash + 1 : pos->file,
			   pos->line, o->parent);
	} else {
		buf_printf(b, "created in goroutine %" PRIu64, o->parent);
	}
}

void ct_costs_note(FILE *out, struct ct_trace *t)
{
	struct ct_costs c;
	if (!ct_trace_costs(t, &c))
		return;
	char notrap[64] = "";
	if (c.hit_ns[CT_HIT_NOTRAP])
		snprintf(notrap, sizeof(notrap), ", %.1f us at a 5-byte nop", c.hit_ns[CT_HIT_NOTRAP] / 1e3);
	fprintf(out,
		"# durations corrected: calltrace's own time taken out (estimated %.1f us per probe hit, "
		"%.1f us per single-stepped one%s, +%.1f us capturing values); --raw: as measured\n",
		c.hit_ns[CT_HIT_EMULATED] / 1e3, c.hit_ns[CT_HIT_STEPPED] / 1e3, notrap, c.args_ns / 1e3);
}

void ct_bounds_note(FILE *out, bool below, bool at_most)
{
	if (below || at_most)
		fputc('\n', out);
	if (below)
		fputs("# \"< N\": below a tenth of what the correction took out of it, too short to tell from none\n",
		      out);
	if (at_most)
		fputs("# \"<=N\": a call whose end was not observed, over before the event that showed it: at most N\n",
		      out);
}
