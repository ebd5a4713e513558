/* The commands, one per file, each taking argv from its own name on. */
#ifndef CT_CMDS_H
#define CT_CMDS_H

#include <stdbool.h>

#define CT_VERSION "0.1.0"

struct option;

int cmd_record(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_live(int argc, char **argv);

/* A bad option getopt_long returned to command CMD (C: '?', unknown, or
 * ':', without its value; the command's optstring starts with ':' after any
 * '+', and opterr is 0): one line naming it and pointing to CMD's --help,
 * never the whole usage (OPTS: its long options, to name an ambiguous
 * prefix).  Returns 2, the exit status. */
int ct_bad_option(const char *cmd, int c, char *const *argv, const struct option *opts);
/* -F or -N (OPT) given an empty ARG (an unset shell variable): one line
 * saying what it needs, true; else false. */
bool ct_empty_glob(int opt, const char *arg);

#endif
