/* The file the kernel maps for a file on overlayfs (every Docker or podman
 * container's files are).
 *
 * Since kernel 6.6 a mapping of an overlay file is of the file under it --
 * the upper layer's copy, or that of the first lower layer holding it -- and
 * the kernel side's lookups by file (bpf_find_vma's vm_file: file_rets,
 * file_calls) see that file's device and inode, which stat() of the
 * overlay's path and /proc/PID/maps do not show.  Found here as overlayfs
 * finds it: the mount's layers (mountinfo), upper first, then each lower;
 * a copy in the upper layer that holds only metadata (metacopy) has its data
 * below.  No kernel, no BPF. */
#ifndef CT_OVERLAY_H
#define CT_OVERLAY_H

#include <stdbool.h>
#include <sys/stat.h>

/* Is PATH a file on overlayfs? */
bool ct_on_overlay(const char *path);

/* The file under overlay file PATH, stat()ed into *OUT.  PATH is a path in
 * this process's mount namespace, or one of another process's
 * ("/proc/PID/root/..." or a mapping's link "/proc/PID/map_files/LO-HI"):
 * that process's mountinfo places it then.  false if PATH is not on
 * overlayfs or its layers cannot be found from here (then the kernel's
 * identity of it is learnt from the kernel side's reports). */
bool ct_overlay_backing(const char *path, struct stat *out);

#endif
