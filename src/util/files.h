/* Opening the files users name, safely.  calltrace runs as root in
 * directories other users may own, so a name given to it (or its default,
 * calltrace.data) may be a symlink, FIFO or device someone planted:
 *
 * - outputs never open the path itself: the data goes to a fresh file
 *   created with O_EXCL|O_NOFOLLOW in the same directory, renamed over the
 *   path (rename replaces a directory entry, it never writes through one);
 *   one that appears only when whole has no name until then (O_TMPFILE,
 *   where the file system has it), so an interrupted writer leaves nothing;
 *   An existing symlink or non-regular file at the path is refused, and so
 *   is an ELF file (the traced program, a library) or, for a record file,
 *   anything but an older record file;
 * - inputs must be regular files (a symlink to one is fine): a FIFO or
 *   device is refused without opening it, so nothing blocks. */
#ifndef CT_FILES_H
#define CT_FILES_H

#include <stdbool.h>
#include <stdio.h>

/* ct_output_create flags */
#define CT_OUT_PRIVATE 0x1  /* mode 0600 (it holds the traced program's memory);
			       otherwise 0666 minus the umask */
#define CT_OUT_KEEP_OLD 0x2 /* an existing PATH is renamed to PATH.old first */
#define CT_OUT_AT_ONCE 0x4  /* PATH appears now and grows while written (a
			       killed writer leaves what it wrote); otherwise
			       it appears, whole, at ct_output_commit */

struct ct_output {
	int fd;
	FILE *f;    /* ct_output_stream(), if used */
	char *path; /* NULL: an anonymous file (nothing to publish) */
	char *tmp;  /* the fresh file's name until it is renamed to path */
	bool unnamed; /* no name yet (O_TMPFILE): commit gives it one */
	bool in_place;
};

/* Creates the output for PATH (NULL: an unnamed temporary file in $TMPDIR or
 * /tmp, gone when closed).  Fails with one line (ct_fail) when PATH is a
 * symlink, not a regular file, or cannot be created. */
int ct_output_create(struct ct_output *o, const char *path, unsigned flags);
/* The same for an output of a kind that starts with MAGIC: an existing
 * PATH (and with CT_OUT_KEEP_OLD, PATH.old) is replaced only if it is one
 * too, or empty.  An ELF file is never replaced, by either. */
int ct_output_create_of(struct ct_output *o, const char *path, unsigned flags, const char *magic);
/* A stdio stream on the output (created once, closed by commit/discard). */
FILE *ct_output_stream(struct ct_output *o);
/* Flushes and closes; an output not yet at PATH is renamed there.  -1 (with
 * ct_fail) if writing failed: then the output is discarded. */
int ct_output_commit(struct ct_output *o);
/* Closes and removes what was written (nothing of someone else's). */
void ct_output_discard(struct ct_output *o);

/* Opens PATH for reading (O_CLOEXEC) if it is a regular file, following
 * symlinks.  A FIFO, device, socket or directory is refused without
 * blocking.  Returns the fd, or -1 with ct_fail() set and errno kept
 * (ENOENT: missing, so callers can say what to do about it). */
int ct_input_open(const char *path);
/* The same, as a stdio stream ("rb"). */
FILE *ct_input_fopen(const char *path);

/* N bytes at P to F, as fwrite, but not through F's buffer (a renderer's
 * blocks of output, already big). */
void ct_fwrite_direct(FILE *f, const void *p, size_t n);

#endif
