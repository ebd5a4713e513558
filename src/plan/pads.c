/* Landing pads (pads.h). */
#include "plan/pads.h"

#include <stdlib.h>
#include <string.h>

#include "plan/plt.h"
#include "plan/sites.h"
#include "target/fde.h"
#include "util/util.h"

/* Paths from a landing pad longer than this (a catch that goes on with the
 * rest of a big function) are not followed: its calls are in doubt. */
#define PAD_WALK_MAX 4096

/* The code from one landing pad, followed once (however many calls share
 * the pad). */
struct pad_walk {
	enum ct_pad_end how;
	struct ct_map seen; /* each instruction's address + 1 */
};

struct ct_pads {
	const struct ct_elf *e;
	const struct ct_target *t;
	bool read;
	struct ct_fde *fdes; /* by start */
	size_t nfdes;
	struct ct_map stubs; /* PLT stub -> the name of the symbol it jumps to */
	struct ct_plt_stub *stub_v;
	struct ct_map walks; /* pad -> struct pad_walk */
	bool twice_read;
	struct ct_map twice; /* FDE start -> 1: its code calls setjmp & co */
};

/* Calls to these return twice: a longjmp resumes right after them. */
static const char *const returns_twice[] = {
	"setjmp", "_setjmp", "__setjmp", "sigsetjmp", "__sigsetjmp", "savectx", "vfork", "getcontext",
	"__getcontext", NULL,
};

bool ct_returns_twice(const char *name, size_t n)
{
	for (const char *const *r = returns_twice; *r; r++)
		if (strlen(*r) == n && !strncmp(name, *r, n))
			return true;
	return false;
}

struct ct_pads *ct_pads_new(const struct ct_elf *e, const struct ct_target *t)
{
	struct ct_pads *pd = xcalloc(1, sizeof(*pd));
	pd->e = e;
	pd->t = t;
	return pd;
}

void ct_pads_free(struct ct_pads *pd)
{
	if (!pd)
		return;
	MAP_FOREACH(&pd->walks, i) {
		struct pad_walk *w = pd->walks.vals[i];
		map_free(&w->seen);
		free(w);
	}
	map_free(&pd->walks);
	map_free(&pd->twice);
	map_free(&pd->stubs);
	free(pd->stub_v);
	free(pd->fdes);
	free(pd);
}

static void read_tables(struct ct_pads *pd)
{
	pd->read = true;
	pd->nfdes = ct_fdes(pd->e, &pd->fdes);
	size_t n = ct_plt_stubs(pd->e, &pd->stub_v);
	for (size_t i = 0; i < n; i++)
		map_put(&pd->stubs, pd->stub_v[i].addr, (void *)pd->stub_v[i].name);
}

static const uint8_t *code_at(void *ctx, uint64_t addr, size_t *avail)
{
	const struct ct_pads *pd = ctx;
	for (size_t n = 16; n; n--) {
		const uint8_t *p = ct_elf_bytes_at(pd->e, addr, n);
		if (p) {
			*avail = n;
			return p;
		}
	}
	return NULL;
}

/* The functions a landing pad's code calls that do not come back: it ends
 * there, the exception going on up (or the program). */
static bool pad_noreturn(void *ctx, uint64_t callee)
{
	struct ct_pads *pd = ctx;
	const char *name = map_get(&pd->stubs, callee);
	const struct ct_func *f = name || !pd->t ? NULL : ct_target_func_at(pd->t, callee);
	if (f && f->entry == callee)
		name = f->name;
	return name && ct_noreturn_name(name) != CT_NORETURN_NO;
}

/* What the walk W says of a call whose end is seen at EXIT (TAIL: with its
 * caller's), NULL if nothing against it. */
static const char *judge(const struct pad_walk *w, uint64_t exit, bool tail)
{
	if (w->how == CT_PAD_UNKNOWN)
		return "its landing pad's code goes where it cannot be followed";
	if (tail && w->how == CT_PAD_LEAVES)
		return "it ends with its caller, which its landing pad may return from";
	if (!tail && !exit && w->how != CT_PAD_RESUMES)
		return "its landing pad may resume its caller (a catch)";
	if (!tail && exit && map_get((struct ct_map *)&w->seen, exit + 1))
		return "its landing pad may go on to where its return is seen";
	return NULL;
}

const char *ct_pads_rejoin(struct ct_pads *pd, uint64_t at, uint64_t ret, uint64_t exit, bool tail)
{
	if (!pd->read)
		read_tables(pd);
	const struct ct_fde *f = ct_fde_at(pd->fdes, pd->nfdes, ret - 1);
	uint64_t pad;
	if (!f || !f->lsda)
		return NULL;
	if (!ct_lsda_landing_pad(pd->e, f->lsda, f->start, ret, &pad) && pad == UINT64_MAX)
		return "its exception table cannot be read";
	if (!pad)
		return NULL;
	struct pad_walk *w = map_get(&pd->walks, pad);
	if (!w) {
		w = xcalloc(1, sizeof(*w));
		w->how = ct_pad_walk(pad, 0, code_at, pad_noreturn, pd, PAD_WALK_MAX, &w->seen);
		map_put(&pd->walks, pad, w);
	}
	const char *why = judge(w, exit, tail);
	if (why && at && w->how != CT_PAD_UNKNOWN) {
		/* again, each path ending where it comes back to the call (a
		 * catch in a loop): once for this call, the first walk being
		 * the pad's for every call it serves */
		struct pad_walk cw = {0};
		cw.how = ct_pad_walk(pad, at, code_at, pad_noreturn, pd, PAD_WALK_MAX, &cw.seen);
		why = judge(&cw, exit, tail);
		map_free(&cw.seen);
	}
	return why;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

/* The functions (by FDE) of the code that call one that returns twice:
 * directly (the file's own: libc's _setjmp) or through a PLT stub. */
static void read_twice(struct ct_pads *pd)
{
	pd->twice_read = true;
	if (!pd->read)
		read_tables(pd);
	CT_VEC(uint64_t) targets = {0};
	MAP_FOREACH(&pd->stubs, i) {
		const char *name = pd->stubs.vals[i];
		if (ct_returns_twice(name, strcspn(name, "@")))
			CT_VEC_PUSH(targets, pd->stubs.keys[i]);
	}
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(pd->e->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		GElf_Sym sym;
		for (int i = 0; i < (int)(sh.sh_size / sh.sh_entsize) && gelf_getsym(data, i, &sym); i++) {
			const char *name = elf_strptr(pd->e->elf, sh.sh_link, sym.st_name);
			if (name && sym.st_shndx != SHN_UNDEF && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
			    ct_returns_twice(name, strcspn(name, "@")))
				CT_VEC_PUSH(targets, sym.st_value);
		}
	}
	if (targets.n) {
		uint64_t *starts = xcalloc(pd->nfdes + 1, sizeof(*starts));
		for (size_t i = 0; i < pd->nfdes; i++)
			starts[i] = pd->fdes[i].start;
		qsort(targets.v, targets.n, sizeof(*targets.v), cmp_u64);
		struct ct_call_to *calls;
		size_t n = ct_calls_to(pd->e, starts, pd->nfdes, targets.v, targets.n, &calls);
		for (size_t i = 0; i < n; i++) {
			const struct ct_fde *f = ct_fde_at(pd->fdes, pd->nfdes, calls[i].at);
			if (f)
				map_put(&pd->twice, f->start + 1, (void *)1);
		}
		free(calls);
		free(starts);
	}
	CT_VEC_FREE(targets);
}

const struct ct_fde *ct_pads_fde_at(struct ct_pads *pd, uint64_t addr)
{
	if (!pd->read)
		read_tables(pd);
	return ct_fde_at(pd->fdes, pd->nfdes, addr);
}

bool ct_pads_twice(struct ct_pads *pd, uint64_t ret)
{
	if (!pd->twice_read)
		read_twice(pd);
	const struct ct_fde *f = ct_fde_at(pd->fdes, pd->nfdes, ret - 1);
	return f && map_get(&pd->twice, f->start + 1);
}
