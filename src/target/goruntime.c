#include "target/goruntime.h"

#include <stdio.h>
#include <string.h>

/* NAME without a trailing ".abi0" (the assembly wrappers' symbols) in BASE. */
static void base_name(const char *name, char *base, size_t cap)
{
	snprintf(base, cap, "%s", name);
	size_t n = strlen(base);
	if (n > 5 && !strcmp(base + n - 5, ".abi0"))
		base[n - 5] = 0;
}

/* Runtime code that switches stacks, runs without a valid g, or never
 * returns normally.  Probing it would report nonsense (and the issue list of
 * every Go tracer shows people tried); these are never probed. */
static const char *const go_noprobe[] = {
	"runtime.morestack", "runtime.morestack_noctxt", "runtime.systemstack",
	"runtime.systemstack_switch", "runtime.mcall", "runtime.gogo",
	"runtime.asmcgocall", "runtime.asmcgocall_no_g", "runtime.cgocallback",
	"runtime.rt0_go", "runtime.sigtramp", "runtime.cgoSigtramp",
	"runtime.sigreturn", "runtime.sigreturn__sigaction", "runtime.asyncPreempt",
	"runtime.goexit", "runtime.mstart", "runtime.mstart0",
	"runtime.gosave_systemstack_switch", "runtime.abort", "runtime.settls",
	"runtime.debugCallV2", "runtime.debugCallV1", "runtime.gcWriteBarrier",
	"runtime.setg", "runtime.setg_gcc", "runtime.gosave", "runtime.rt0_go.abi0",
	/* static in the runtime's assembly since Go 1.17 (`TEXT gogo<>`),
	 * named without the package: gogo jumps to another goroutine's
	 * stack; setg_gcc, which a cgo thread's C start calls, sets g (its
	 * entry sees none, its RET the new g0: another stack's key, it was
	 * unwound) */
	"gogo", "gosave_systemstack_switch", "setg_gcc",
	NULL,
};

bool ct_go_is_morestack(const char *name)
{
	return !strncmp(name, "runtime.morestack", 17);
}

/* Does S contain WORD followed by a digit? */
static bool has_numbered(const char *s, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = strstr(s, word); p; p = strstr(p + 1, word))
		if (p[n] >= '0' && p[n] <= '9')
			return true;
	return false;
}

bool ct_go_is_closure(const char *name)
{
	const char *slash = strrchr(name, '/');
	const char *last = slash ? slash : name;
	return has_numbered(last, ".func") || has_numbered(last, ".gowrap") || has_numbered(last, ".deferwrap");
}

size_t ct_go_closure_parent_len(const char *name)
{
	const char *slash = strrchr(name, '/'), *dot = strrchr(slash ? slash : name, '.');
	return dot ? (size_t)(dot - name) : 0;
}

bool ct_go_runs_closures(const char *name)
{
	char base[256];
	base_name(name, base, sizeof(base));
	/* runtime/panic.go: deferreturn's, gopanic's and deferCallSave's fn() */
	return !strcmp(base, CT_GO_DEFERRETURN) || !strcmp(base, "runtime.gopanic") ||
	       !strcmp(base, "runtime.deferCallSave");
}

bool ct_go_called_by_runtime(const char *name)
{
	if (!strcmp(name, "main.main") || ct_go_is_closure(name))
		return true;
	/* the last path element: "P.init", "P.init.N" (not a method "T.init") */
	const char *slash = strrchr(name, '/');
	const char *last = slash ? slash : name;
	const char *dot = strchr(last, '.');
	if (!dot || strncmp(dot, ".init", 5))
		return false;
	const char *p = dot + 5;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	return !*p && p[-1] != '.';
}

bool ct_go_is_goexit(const char *name)
{
	return !strcmp(name, "runtime.goexit") || !strcmp(name, "runtime.goexit.abi0");
}

bool ct_go_pclntab_must_not_probe(const char *name)
{
	return ct_go_must_not_probe(name) || !strcmp(name, "main");
}

bool ct_go_must_not_probe(const char *name)
{
	char base[256];
	base_name(name, base, sizeof(base));
	for (const char *const *p = go_noprobe; *p; p++)
		if (!strcmp(base, *p))
			return true;
	return !strncmp(base, "_rt0_", 5) || !strncmp(base, "runtime.debugCall", 17) ||
	       ct_go_is_morestack(base) || !strncmp(base, "runtime.sigreturn", 17);
}

/* runtime.g / runtime.m layout by Go version, for binaries without DWARF.
 * Each row was checked on real binaries by disassembling the stores of
 * runtime.newproc1 (newg.goid = pp.goidcache) and runtime.execute
 * (mp.curg = gp; gp.m = mp): go1.13.8, 1.14.2, 1.15, 1.16, 1.16.2, 1.17,
 * 1.19.1/.8, 1.21.1, 1.23.4/.6, 1.24.4, 1.25.3, 1.26.4 and 1.27.0 (esbuild
 * and lefthook releases, tests/fixtures/real/fetch.sh).
 *   g.stack.hi 8 and g.m 48 throughout;
 *   g.goid 152, but 160 in 1.23-1.24 (g.syscallbp inserted before it) and
 *   152 again from 1.25 (gobuf.ret removed from g.sched);
 *   m.curg 192 until 1.24, 184 from 1.25 (gobuf.ret gone from m.morebuf).
 *   g.gopc (newproc1: newg.gopc = callerpc) 280 in 1.13-1.16, 296 in
 *   1.17-1.20 (sched-latency tracking fields), 280 in 1.21-1.22 (tracer
 *   fields moved out, parentGoid before gopc), 288 in 1.23-1.24
 *   (syscallbp), 280 in 1.25 (gobuf.ret), 288 from 1.26 (g.secret); 1.18,
 *   1.20 and 1.22 follow from their runtime2.go, the others were seen in
 *   the binaries.  Unknown before 1.13 (0: creation sites not resolved). */
void ct_go_offsets_by_version(int minor, struct ct_bin_config *c)
{
	c->stack_hi_off = 8;
	c->m_off = 48;
	c->goid_off = (minor == 23 || minor == 24) ? 160 : 152;
	c->curg_off = minor >= 25 ? 184 : 192;
	c->gopc_off = minor < 13 ? 0 : minor <= 16 ? 280 : minor <= 20 ? 296 : minor <= 22 ? 280
		      : minor <= 24 ? 288 : minor == 25 ? 280 : 288;
}
