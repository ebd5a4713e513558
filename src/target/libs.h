/* Shared libraries of a program, for selections such as -F 'libc.so.6:malloc':
 * which file a library name means for a running process (its mappings) or,
 * before the program starts, for an executable (its DT_NEEDED entries found
 * the way the dynamic linker finds them).  No kernel, no BPF. */
#ifndef CT_LIBS_H
#define CT_LIBS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Does the file name BASE (no directory) answer to the library name LIB?
 * LIB is a file name ("libc.so.6"), or a prefix of one that ends where a
 * version or suffix starts: "libc.so" and "libc" match "libc.so.6" and
 * "libc-2.36.so", not "libcrypto.so.3".  A LIB with a '/' never matches a
 * bare name (compare paths instead). */
bool ct_lib_name_matches(const char *lib, const char *base);

/* "libc.so.6:malloc", "libc:malloc", "/path/x.so:f": is G a glob for a
 * library's functions (record -F 'LIB:GLOB'), not a Go name with a colon
 * ("type:.eq.main.T")?  *COLON gets the length of LIB. */
bool ct_lib_glob(const char *g, size_t *colon);

/* The file mapped into process PID that LIB names (a library name as
 * above, or an absolute path), from /proc/PID/maps.  Returns a malloc'd path
 * openable from calltrace's own mount namespace: "/proc/PID/root" + the
 * process's path, so a process in another mount namespace (a container)
 * works too.  *SHOWN (if not NULL) gets the path as the process sees it
 * (malloc'd).  NULL with ct_fail() if nothing mapped matches. */
char *ct_lib_resolve_pid(pid_t pid, const char *lib, char **shown);
/* "/proc/PID/map_files/LO-HI" (malloc'd): the file PID maps at [LO, HI),
 * openable here whatever mount namespace PID sees its paths in (the path
 * /proc/PID/maps shows may name nothing here: a container's). */
char *ct_mapping_link(pid_t pid, unsigned long long lo, unsigned long long hi);

/* The library LIB that executable EXE would load, found as ld.so finds it:
 * breadth-first through DT_NEEDED (the executable's, then its libraries'),
 * each name searched in DT_RPATH (if no DT_RUNPATH), LD_LIBRARY_PATH,
 * DT_RUNPATH ($ORIGIN expanded), /etc/ld.so.cache, then the default
 * directories (/lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu, /lib64,
 * /usr/lib64, /lib, /usr/lib).  An absolute LIB is returned as is if it
 * exists.  Returns a malloc'd path, or NULL with ct_fail(). */
char *ct_lib_resolve_exe(const char *exe, const char *lib);

/* Looks NAME (a DT_NEEDED entry such as "libz.so.1") up in the x86-64
 * entries of the ld.so cache file CACHE (normally /etc/ld.so.cache, both
 * the old "ld.so-1.7.0" and the "glibc-ld.so.cache1.1" format).  malloc'd
 * path or NULL. */
char *ct_ldcache_lookup(const char *cache, const char *name);

#endif
