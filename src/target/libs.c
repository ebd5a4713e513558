#include "target/libs.h"
#include "target/elf.h"
#include "util/files.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

bool ct_lib_name_matches(const char *lib, const char *base)
{
	if (!*lib || strchr(lib, '/'))
		return false;
	size_t n = strlen(lib);
	return !strncmp(base, lib, n) && (!base[n] || base[n] == '.' || base[n] == '-');
}

bool ct_lib_glob(const char *g, size_t *colon)
{
	const char *c = strchr(g, ':');
	if (!c)
		return false;
	size_t n = (size_t)(c - g);
	bool lib = memchr(g, '/', n) || (n > 3 && memmem(g, n, ".so", 3)) || (n > 3 && !strncmp(g, "lib", 3));
	*colon = n;
	return lib;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ------------------------------------------------------------------ */
/* A running process: /proc/PID/maps */

/* Is DIR(PATH)/LIB the file PATH itself, in PID's mount namespace?  Maps
 * show the file a soname link points to ("libelf.so.1" is mapped as
 * "libelf-0.188.so").  stat() through /proc/PID/root follows the process's
 * root even in another mount namespace, where realpath() would not. */
static bool same_inode_in_dir(pid_t pid, const char *path, const char *lib)
{
	const char *slash = strrchr(path, '/');
	if (!slash || !*lib || strchr(lib, '/'))
		return false;
	char *a = xasprintf("/proc/%d/root%s", (int)pid, path);
	char *b = xasprintf("/proc/%d/root%.*s/%s", (int)pid, (int)(slash - path), path, lib);
	struct stat sa, sb;
	bool same = !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	free(a);
	free(b);
	return same;
}

char *ct_mapping_link(pid_t pid, unsigned long long lo, unsigned long long hi)
{
	return xasprintf("/proc/%d/map_files/%llx-%llx", (int)pid, lo, hi);
}

char *ct_lib_resolve_pid(pid_t pid, const char *lib, char **shown)
{
	char maps[64];
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(maps, "r");
	if (!f) {
		ct_fail("cannot read %s: %s", maps, strerror(errno));
		return NULL;
	}
	char line[4096], *found = NULL, *replaced = NULL;
	unsigned long long lo = 0, hi = 0, ino = 0, rlo = 0, rhi = 0, rino = 0;
	unsigned maj = 0, min = 0;
	/* a path is the file, by whichever name: ldd's /lib/x86_64-linux-gnu
	 * is the maps' /usr/lib/x86_64-linux-gnu on a merged /usr */
	struct stat want;
	bool want_ok = lib[0] == '/' && stat(lib, &want) == 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %*s %*s %x:%x %llu", &lo, &hi, &maj, &min, &ino) != 5)
			continue;
		/* start-end perms offset dev inode path */
		char *path = NULL, *p = line;
		for (int field = 0; field < 5 && p; field++) {
			p = strchr(p, ' ');
			if (p)
				p += strspn(p, " ");
		}
		if (!p || *p != '/')
			continue;
		path = p;
		path[strcspn(path, "\n")] = 0;
		size_t n = strlen(path);
		if (n > 10 && !strcmp(path + n - 10, " (deleted)")) {
			/* its file replaced since it was mapped (a package
			 * upgrade): the process runs the old one, reached
			 * through the mapping's link; taken if no file of that
			 * name that is still there is mapped */
			path[n - 10] = 0;
			if (!replaced && (lib[0] == '/' ? !strcmp(path, lib) : ct_lib_name_matches(lib, base_name(path)))) {
				replaced = xstrdup(path);
				rlo = lo, rhi = hi, rino = ino;
			}
			continue;
		}
		if (lib[0] == '/' ? !strcmp(path, lib) || (want_ok && want.st_ino == (ino_t)ino &&
							     want.st_dev == makedev(maj, min))
				  : ct_lib_name_matches(lib, base_name(path)))
			found = xstrdup(path);
		else if (lib[0] != '/' && same_inode_in_dir(pid, path, lib))
			found = xstrdup(path);
	}
	fclose(f);
	if (!found && replaced) {
		found = replaced;
		lo = rlo, hi = rhi, ino = rino;
		replaced = NULL;
	}
	free(replaced);
	if (!found) {
		ct_fail("process %d has no library %s loaded (see /proc/%d/maps)", (int)pid, lib, (int)pid);
		return NULL;
	}
	char *out = xasprintf("/proc/%d/root%s", (int)pid, found);
	struct stat st;
	if (stat(out, &st) || st.st_ino != (ino_t)ino) {
		/* a path in a mount namespace whose root is not the process's
		 * own (a container's overlay root, mounted in its namespace
		 * only) */
		free(out);
		out = ct_mapping_link(pid, lo, hi);
	}
	if (shown)
		*shown = found;
	else
		free(found);
	return out;
}

/* ------------------------------------------------------------------ */
/* /etc/ld.so.cache (glibc elf/cache.c, sysdeps/generic/dl-cache.h) */

#define OLD_MAGIC "ld.so-1.7.0"
#define NEW_MAGIC "glibc-ld.so.cache"
#define NEW_VERSION "1.1"
#define FLAG_TYPE_MASK 0x00ff
#define FLAG_ELF_LIBC6 0x0003
#define FLAG_REQUIRED_MASK 0xff00
#define FLAG_X8664_LIB64 0x0300

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

char *ct_ldcache_lookup(const char *cache, const char *name)
{
	int fd = ct_input_open(cache);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) || st.st_size < 48) {
		close(fd);
		return NULL;
	}
	size_t size = (size_t)st.st_size;
	const uint8_t *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	size_t hdr = 0;
	if (!memcmp(m, OLD_MAGIC, strlen(OLD_MAGIC))) {
		/* struct cache_file {magic[11]; nlibs} + 12-byte entries,
		 * then the new format, aligned to 8. */
		uint64_t nold = rd32(m + 12);
		hdr = (size_t)((16 + nold * 12 + 7) / 8 * 8);
	}
	char *out = NULL;
	if (hdr + 48 <= size && !memcmp(m + hdr, NEW_MAGIC, strlen(NEW_MAGIC)) &&
	    !memcmp(m + hdr + 17, NEW_VERSION, 3)) {
		const uint8_t *base = m + hdr;
		size_t avail = size - hdr;
		uint64_t nlibs = rd32(base + 20);
		if (nlibs > (avail - 48) / 24)
			nlibs = 0;
		for (uint64_t i = 0; i < nlibs && !out; i++) {
			const uint8_t *e = base + 48 + i * 24;
			uint32_t flags = rd32(e), key = rd32(e + 4), value = rd32(e + 8);
			if ((flags & FLAG_TYPE_MASK) != FLAG_ELF_LIBC6 ||
			    (flags & FLAG_REQUIRED_MASK) != FLAG_X8664_LIB64 || key >= avail || value >= avail)
				continue;
			const char *k = (const char *)base + key, *v = (const char *)base + value;
			if (!memchr(k, 0, avail - key) || !memchr(v, 0, avail - value))
				continue;
			if (!strcmp(k, name))
				out = xstrdup(v);
		}
	}
	munmap((void *)m, size);
	return out;
}

/* ------------------------------------------------------------------ */
/* Before the program runs: DT_NEEDED, as ld.so searches */

struct dyninfo {
	CT_VEC(char *) needed;
	char *rpath, *runpath;
};

static void dyninfo_free(struct dyninfo *d)
{
	for (size_t i = 0; i < d->needed.n; i++)
		free(d->needed.v[i]);
	CT_VEC_FREE(d->needed);
	free(d->rpath);
	free(d->runpath);
}

static bool read_dynamic(const char *path, struct dyninfo *d)
{
	memset(d, 0, sizeof(*d));
	struct ct_elf e;
	if (ct_elf_open(&e, path))
		return false;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e.elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t n = data ? data->d_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(data, (int)i, &dyn))
				continue;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH && dyn.d_tag != DT_RUNPATH)
				continue;
			const char *s = elf_strptr(e.elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED)
				CT_VEC_PUSH(d->needed, xstrdup(s));
			else if (dyn.d_tag == DT_RPATH && !d->rpath)
				d->rpath = xstrdup(s);
			else if (dyn.d_tag == DT_RUNPATH && !d->runpath)
				d->runpath = xstrdup(s);
		}
	}
	ct_elf_close(&e);
	return true;
}

/* NAME in the ':'-separated directory list DIRS ($ORIGIN = ORIGIN). */
static char *search_dirs(const char *dirs, const char *origin, const char *name)
{
	if (!dirs)
		return NULL;
	char *copy = xstrdup(dirs), *save = NULL, *out = NULL;
	for (char *dir = strtok_r(copy, ":", &save); dir && !out; dir = strtok_r(NULL, ":", &save)) {
		char *d = NULL;
		if (!strncmp(dir, "$ORIGIN", 7))
			d = xasprintf("%s%s", origin, dir + 7);
		else if (!strncmp(dir, "${ORIGIN}", 9))
			d = xasprintf("%s%s", origin, dir + 9);
		else
			d = xstrdup(dir);
		char *p = xasprintf("%s/%s", *d ? d : ".", name);
		if (is_file(p))
			out = p;
		else
			free(p);
		free(d);
	}
	free(copy);
	return out;
}

static const char default_dirs[] =
	"/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64:/usr/lib64:/lib:/usr/lib";

/* Where ld.so would find the DT_NEEDED entry NAME of the object OBJ (with
 * OBJ's rpath/runpath). */
static char *find_needed(const char *name, const char *obj, const struct dyninfo *d)
{
	if (strchr(name, '/'))
		return is_file(name) ? xstrdup(name) : NULL;
	char *origin = xstrdup(obj);
	char *slash = strrchr(origin, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(origin, ".");
	char *p = NULL;
	if (!d->runpath)
		p = search_dirs(d->rpath, origin, name);
	if (!p)
		p = search_dirs(getenv("LD_LIBRARY_PATH"), origin, name);
	if (!p)
		p = search_dirs(d->runpath, origin, name);
	if (!p) {
		p = ct_ldcache_lookup("/etc/ld.so.cache", name);
		if (p && !is_file(p)) {
			free(p);
			p = NULL;
		}
	}
	if (!p)
		p = search_dirs(default_dirs, origin, name);
	free(origin);
	return p;
}

char *ct_lib_resolve_exe(const char *exe, const char *lib)
{
	if (lib[0] == '/') {
		if (is_file(lib))
			return xstrdup(lib);
		ct_fail("library %s does not exist", lib);
		return NULL;
	}
	/* Breadth-first over the dependency graph, each object once. */
	CT_VEC(char *) queue = {0};
	CT_VEC(char *) names = {0}; /* DT_NEEDED names seen */
	CT_VEC_PUSH(queue, xstrdup(exe));
	char *found = NULL;
	bool exe_ok = true;
	for (size_t qi = 0; qi < queue.n && !found; qi++) {
		struct dyninfo d;
		if (!read_dynamic(queue.v[qi], &d)) {
			if (qi == 0)
				exe_ok = false;
			continue;
		}
		for (size_t i = 0; i < d.needed.n && !found; i++) {
			const char *name = d.needed.v[i];
			bool seen = false;
			for (size_t j = 0; j < names.n && !seen; j++)
				seen = !strcmp(names.v[j], name);
			if (seen)
				continue;
			CT_VEC_PUSH(names, xstrdup(name));
			char *path = find_needed(name, queue.v[qi], &d);
			if (!path)
				continue;
			/* (or the file its name links to: libstdc++.so.6.0.30,
			 * which is what `ls` shows) */
			char *real = realpath(path, NULL);
			if (ct_lib_name_matches(lib, name) || ct_lib_name_matches(lib, base_name(path)) ||
			    (real && ct_lib_name_matches(lib, base_name(real))))
				found = path;
			else
				CT_VEC_PUSH(queue, path);
			free(real);
		}
		dyninfo_free(&d);
	}
	for (size_t i = 0; i < queue.n; i++)
		free(queue.v[i]);
	for (size_t i = 0; i < names.n; i++)
		free(names.v[i]);
	CT_VEC_FREE(queue);
	CT_VEC_FREE(names);
	if (!found) {
		if (exe_ok)
			ct_fail("%s does not load a library named %s (not among its DT_NEEDED libraries and theirs); a library opened with dlopen needs -p PID",
				exe, lib);
		/* else ct_elf_open() said why */
	}
	return found;
}
