#include "format/calib.h"
#include "format/tracefile.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* each class's name in the text (enum ct_hit_class) */
static const char *const class_names[CT_HIT_CLASSES] = {
	[CT_HIT_EMULATED] = "emulated", [CT_HIT_STEPPED] = "stepped", [CT_HIT_CALL] = "call",
	[CT_HIT_RET] = "ret",	        [CT_HIT_CHECK] = "check",     [CT_HIT_NOTRAP] = "notrap",
};

void ct_costs_format(const struct ct_costs *c, char *buf, size_t n)
{
	int k = snprintf(buf, n, "emulated=%" PRIu64 " stepped=%" PRIu64 " emulated+stepped=%" PRIu64 " args=%" PRIu64
			 " calls=%u ms=%.1f",
			 c->hit_ns[CT_HIT_EMULATED], c->hit_ns[CT_HIT_STEPPED], c->mixed_ns, c->args_ns, c->calls, c->ms);
	if (k > 0 && (size_t)k < n && c->hit_ns[CT_HIT_CALL])
		k += snprintf(buf + k, n - (size_t)k, " call=%" PRIu64, c->hit_ns[CT_HIT_CALL]);
	if (k > 0 && (size_t)k < n && c->hit_ns[CT_HIT_RET])
		k += snprintf(buf + k, n - (size_t)k, " ret=%" PRIu64, c->hit_ns[CT_HIT_RET]);
	if (k > 0 && (size_t)k < n && c->hit_ns[CT_HIT_CHECK])
		k += snprintf(buf + k, n - (size_t)k, " check=%" PRIu64, c->hit_ns[CT_HIT_CHECK]);
	if (k > 0 && (size_t)k < n && c->hit_ns[CT_HIT_NOTRAP])
		k += snprintf(buf + k, n - (size_t)k, " notrap=%" PRIu64, c->hit_ns[CT_HIT_NOTRAP]);
	for (int i = 0; i < CT_HIT_CLASSES; i++)
		if (k > 0 && (size_t)k < n && c->bpf_pre_ns[i])
			k += snprintf(buf + k, n - (size_t)k, " bpfpre.%s=%" PRIu64, class_names[i], c->bpf_pre_ns[i]);
}

/* microseconds are what a hit costs: more than a millisecond is no
 * measurement of ours (a damaged file), and would wrap the clocks */
#define MAX_HIT_NS 1000000

bool ct_costs_parse(const char *s, struct ct_costs *out)
{
	memset(out, 0, sizeof(*out));
	unsigned long long e, st, m, a;
	int end = 0;
	if (!s || sscanf(s, "emulated=%llu stepped=%llu emulated+stepped=%llu args=%llu calls=%u ms=%lf%n", &e, &st, &m,
			 &a, &out->calls, &out->ms, &end) != 6 ||
	    !end)
		return false;
	if (e > MAX_HIT_NS || st > MAX_HIT_NS || m > MAX_HIT_NS || a > MAX_HIT_NS)
		return false;
	out->hit_ns[CT_HIT_EMULATED] = e;
	out->hit_ns[CT_HIT_STEPPED] = st;
	out->mixed_ns = m;
	out->args_ns = a;
	/* the classes measured when the recording had their sites */
	for (const char *p = s + end;;) {
		char name[24];
		unsigned long long v;
		int used = 0;
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (sscanf(p, "%23[a-z+.]=%llu%n", name, &v, &used) != 2 || !used || v > MAX_HIT_NS)
			return false;
		if (!strcmp(name, "call"))
			out->hit_ns[CT_HIT_CALL] = v;
		else if (!strcmp(name, "ret"))
			out->hit_ns[CT_HIT_RET] = v;
		else if (!strcmp(name, "check"))
			out->hit_ns[CT_HIT_CHECK] = v;
		else if (!strcmp(name, "notrap"))
			out->hit_ns[CT_HIT_NOTRAP] = v;
		else if (!strncmp(name, "bpfpre.", 7))
			for (int i = 0; i < CT_HIT_CLASSES; i++)
				if (!strcmp(name + 7, class_names[i]))
					out->bpf_pre_ns[i] = v;
		/* a field of a later calltrace: not ours to price */
		p += used;
	}
	out->ok = true;
	return true;
}

enum ct_hit_class ct_hit_class_of(uint8_t kind, uint16_t flags)
{
	if ((flags & CT_SITEF_NOTRAP) == CT_SITEF_NOTRAP)
		return CT_HIT_NOTRAP; /* a CHECK there too: its lookup is a small part */
	if (flags & CT_SITEF_RETINSN)
		return CT_HIT_RET;
	if (flags & CT_SITEF_STEPPED)
		return CT_HIT_STEPPED;
	/* a CALL a CHECK sent, or a CHECK's own (an unplanned call) */
	if ((flags & CT_SITEF_ATCHECK) || kind == CT_SITE_CHECK)
		return CT_HIT_CHECK;
	return flags & CT_SITEF_CALLINSN ? CT_HIT_CALL : CT_HIT_EMULATED;
}

void ct_costs_hit_prices(const struct ct_costs *c, uint64_t out[CT_HIT_CLASSES])
{
	memcpy(out, c->hit_ns, sizeof(c->hit_ns));
	/* classes the recording did not measure: as the kind of instruction
	 * they are (an older file's, or one without such sites) */
	if (!out[CT_HIT_CALL])
		out[CT_HIT_CALL] = out[CT_HIT_EMULATED];
	if (!out[CT_HIT_CHECK])
		out[CT_HIT_CHECK] = out[CT_HIT_EMULATED];
	if (!out[CT_HIT_RET])
		out[CT_HIT_RET] = out[CT_HIT_STEPPED];
	if (!out[CT_HIT_NOTRAP])
		out[CT_HIT_NOTRAP] = out[CT_HIT_EMULATED];
}
