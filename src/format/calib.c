#include "format/calib.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void ct_costs_format(const struct ct_costs *c, char *buf, size_t n)
{
	snprintf(buf, n, "emulated=%" PRIu64 " stepped=%" PRIu64 " emulated+stepped=%" PRIu64 " args=%" PRIu64
		 " calls=%u ms=%.1f",
		 c->hit_ns[0], c->hit_ns[1], c->mixed_ns, c->args_ns, c->calls, c->ms);
}

bool ct_costs_parse(const char *s, struct ct_costs *out)
{
	memset(out, 0, sizeof(*out));
	unsigned long long e, st, m, a;
	if (!s || sscanf(s, "emulated=%llu stepped=%llu emulated+stepped=%llu args=%llu calls=%u ms=%lf", &e, &st, &m,
			 &a, &out->calls, &out->ms) != 6)
		return false;
	/* microseconds are what a hit costs: more than a millisecond is no
	 * measurement of ours (a damaged file), and would wrap the clocks */
	if (e > 1000000 || st > 1000000 || m > 1000000 || a > 1000000)
		return false;
	out->hit_ns[0] = e;
	out->hit_ns[1] = st;
	out->mixed_ns = m;
	out->args_ns = a;
	out->ok = true;
	return true;
}
