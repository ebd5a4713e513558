/* The commands, one per file, each taking argv from its own name on. */
#ifndef CT_CMDS_H
#define CT_CMDS_H

#define CT_VERSION "0.1.0"

int cmd_record(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_live(int argc, char **argv);

#endif
