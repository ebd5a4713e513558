#include "util/files.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
	return S_ISLNK(m)    ? "a symbolic link"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISDIR(m)  ? "a directory"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
			     : "not a regular file";
}

/* A fresh name next to PATH (".NAME.XXXXXXXX": hidden, and saying whose
 * leftover it is), in *TMP_OUT: a new file's, opened with O_EXCL|O_NOFOLLOW
 * (which never opens anything that exists, whatever someone put there),
 * or, given FD, the unnamed file FD's.  The file's descriptor, or -1. */
static int fresh_entry(const char *path, int fd, mode_t mode, char **tmp_out)
{
	const char *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path) + 1 : 0;
	const char *base = slash ? slash + 1 : path;
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (int tries = 0; tries < 100; tries++) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = hash64(now_mono_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)tries);
		char *tmp = xasprintf("%.*s.%.200s.%08x", dirlen, path, base, (unsigned)r);
		int got = fd >= 0 ? (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) ? -1 : fd)
				  : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (got >= 0) {
			*tmp_out = tmp;
			return got;
		}
		int e = errno;
		free(tmp);
		if (e != EEXIST) {
			errno = e;
			return -1;
		}
	}
	errno = EEXIST;
	return -1;
}

/* A file with no name yet in PATH's directory (O_TMPFILE): whatever stops
 * calltrace before the output is whole (Ctrl-C, timeout, SIGKILL) leaves
 * nothing behind.  -1 where the file system has no O_TMPFILE. */
static int create_unnamed(const char *path, mode_t mode)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? xasprintf("%.*s", slash == path ? 1 : (int)(slash - path), path) : xstrdup(".");
	int fd = open(dir, O_WRONLY | O_TMPFILE | O_CLOEXEC, mode);
	free(dir);
	return fd;
}

/* Gives the unnamed output a fresh name next to its path (in o->tmp), once
 * all of it is written, for commit to rename it into place. */
static int name_unnamed(struct ct_output *o)
{
	if ((o->f && fflush(o->f)) || fresh_entry(o->path, o->fd, 0, &o->tmp) < 0)
		return -1;
	o->unnamed = false;
	return 0;
}

static int create_anonymous(struct ct_output *o)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	o->fd = open(dir, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	if (o->fd >= 0)
		return 0;
	char *base = xasprintf("%s/calltrace", dir);
	o->fd = fresh_entry(base, -1, 0600, &o->tmp); /* file systems without O_TMPFILE */
	free(base);
	if (o->fd < 0)
		return ct_fail("cannot create a temporary file in %s: %s", dir, strerror(errno));
	unlink(o->tmp);
	free(o->tmp);
	o->tmp = NULL;
	return 0;
}

/* Up to N bytes from the start of PATH (not through a link, never
 * blocking); how many. */
static size_t head_of(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t r = read(fd, buf, n);
	close(fd);
	return r > 0 ? (size_t)r : 0;
}

/* May PATH, a regular file of SIZE bytes, be replaced by an output of kind
 * MAGIC (NULL: any)?  Never an ELF file: `record -o prog -- ./prog` took the
 * program itself (or a library it loads) for the output; and where MAGIC
 * is given, only a file that starts with it, or an empty one. */
static bool replaceable(const char *path, off_t size, const char *magic, const char *what)
{
	char head[16];
	size_t n = size ? head_of(path, head, sizeof(head)) : 0;
	if (n >= 4 && !memcmp(head, "\177ELF", 4)) {
		ct_fail("%s%s is an ELF file (a program or a library: the traced one?); calltrace never replaces one: "
			"choose another output file",
			path, what);
		return false;
	}
	size_t m = magic ? strlen(magic) : 0;
	if (magic && size && (n < m || memcmp(head, magic, m))) {
		ct_fail("%s%s exists and is not a calltrace record file; calltrace replaces only its own: choose "
			"another output file, or remove it",
			path, what);
		return false;
	}
	return true;
}

int ct_output_create(struct ct_output *o, const char *path, unsigned flags)
{
	return ct_output_create_of(o, path, flags, NULL);
}

int ct_output_create_of(struct ct_output *o, const char *path, unsigned flags, const char *magic)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (!path)
		return create_anonymous(o);
	if (!*path)
		return ct_fail("the output file name is empty: give a file name");
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return ct_fail("%s is a symbolic link; calltrace does not write through links (it could "
				       "point anywhere): remove it or choose another file",
				       path);
		if (!S_ISREG(st.st_mode))
			return ct_fail("%s is %s; calltrace writes only regular files: choose another file", path,
				       kind_of(st.st_mode));
		if (!replaceable(path, st.st_size, magic, ""))
			return -1;
		if (flags & CT_OUT_KEEP_OLD) {
			char *old = xasprintf("%s.old", path);
			struct stat ost;
			/* (its entry goes: a link or a special file there is not written through) */
			if (lstat(old, &ost) == 0 && S_ISREG(ost.st_mode) &&
			    !replaceable(old, ost.st_size, magic, " (where the previous one would go)")) {
				free(old);
				return -1;
			}
			int rc = rename(path, old); /* replaces OLD's entry, never writes through it */
			int e = errno;
			if (rc)
				ct_fail("cannot move the previous %s to %s: %s", path, old, strerror(e));
			free(old);
			if (rc)
				return -1;
		}
	} else if (errno != ENOENT) {
		return ct_fail("cannot create %s: %s", path, strerror(errno));
	}
	mode_t mode = flags & CT_OUT_PRIVATE ? 0600 : 0666;
	o->fd = flags & CT_OUT_AT_ONCE ? -1 : create_unnamed(path, mode);
	o->unnamed = o->fd >= 0;
	if (o->fd < 0)
		o->fd = fresh_entry(path, -1, mode, &o->tmp);
	if (o->fd < 0)
		return ct_fail("cannot create %s: %s", path, strerror(errno));
	o->path = xstrdup(path);
	if (flags & CT_OUT_AT_ONCE) {
		if (rename(o->tmp, o->path)) {
			int e = errno;
			ct_output_discard(o);
			return ct_fail("cannot create %s: %s", path, strerror(e));
		}
		free(o->tmp);
		o->tmp = NULL;
		o->in_place = true;
	}
	return 0;
}

FILE *ct_output_stream(struct ct_output *o)
{
	if (!o->f && o->fd >= 0 && !(o->f = fdopen(o->fd, "w")))
		ct_fail("cannot write %s: %s", o->path ? o->path : "a temporary file", strerror(errno));
	return o->f;
}

static int close_output(struct ct_output *o)
{
	int rc = 0;
	if (o->f) {
		rc = ferror(o->f) ? -1 : 0;
		if (fclose(o->f) != 0)
			rc = -1;
	} else if (o->fd >= 0) {
		rc = close(o->fd);
	}
	o->f = NULL;
	o->fd = -1;
	return rc;
}

static void free_output(struct ct_output *o)
{
	free(o->path);
	free(o->tmp);
	o->path = o->tmp = NULL;
}

/* MINE: the output's identity, to remove the path only while it is ours. */
static void remove_written(struct ct_output *o, const struct stat *mine)
{
	struct stat there;
	if (o->tmp)
		unlink(o->tmp);
	else if (o->in_place && o->path && mine && lstat(o->path, &there) == 0 && there.st_dev == mine->st_dev &&
		 there.st_ino == mine->st_ino)
		unlink(o->path); /* no half-made file left */
	free_output(o);
}

void ct_output_discard(struct ct_output *o)
{
	struct stat mine;
	bool have = o->fd >= 0 && fstat(o->fd, &mine) == 0;
	close_output(o);
	remove_written(o, have ? &mine : NULL);
}

int ct_output_commit(struct ct_output *o)
{
	errno = 0;
	struct stat mine;
	bool have = o->fd >= 0 && fstat(o->fd, &mine) == 0;
	/* (the unnamed output is given its name before it is closed: the
	 * descriptor is how it is reached) */
	bool failed = o->unnamed && name_unnamed(o);
	int e = failed ? errno : 0;
	if (close_output(o) && !failed) {
		failed = true;
		e = errno;
	}
	if (failed) {
		ct_fail("writing %s failed: %s", o->path ? o->path : "a temporary file", e ? strerror(e) : "I/O error");
		remove_written(o, have ? &mine : NULL);
		return -1;
	}
	if (o->tmp && rename(o->tmp, o->path)) {
		e = errno;
		unlink(o->tmp);
		ct_fail("cannot create %s: %s", o->path, strerror(e));
		free_output(o);
		return -1;
	}
	free_output(o);
	return 0;
}

int ct_input_open(const char *path)
{
	struct stat st;
	if (!*path) {
		ct_fail("the file name is empty: give a file name");
		errno = EINVAL; /* (not ENOENT: said "does not exist") */
		return -1;
	}
	/* Look before opening: opening a FIFO blocks, a device may act. */
	if (stat(path, &st)) {
		int e = errno;
		ct_fail("cannot open %s: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if (!S_ISREG(st.st_mode))
		goto not_regular;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		ct_fail("cannot open %s: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) { /* swapped meanwhile */
		close(fd);
		goto not_regular;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
not_regular:
	ct_fail("%s is %s, not a regular file; calltrace reads only regular files", path, kind_of(st.st_mode));
	errno = EINVAL;
	return -1;
}

FILE *ct_input_fopen(const char *path)
{
	int fd = ct_input_open(path);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		int e = errno;
		close(fd);
		ct_fail("cannot open %s: %s", path, strerror(e));
		errno = e;
	}
	return f;
}

void ct_fwrite_direct(FILE *f, const void *p, size_t n)
{
	/* What F holds goes first, then P straight to its file descriptor:
	 * replay's stdout has a 1 MiB buffer, and fwrite copied every byte of
	 * the output into it (5% of replay --format=json's instructions).  A
	 * failed or short write leaves the rest to fwrite, which fails as it
	 * would have and sets F's error indicator; a stream without a
	 * descriptor (in memory) gets fwrite. */
	int fd = fileno(f);
	if (fd >= 0 && fflush(f) == 0) {
		while (n) {
			ssize_t k = write(fd, p, n);
			if (k <= 0)
				break;
			p = (const char *)p + k;
			n -= (size_t)k;
		}
	}
	if (n)
		fwrite(p, 1, n, f);
}
