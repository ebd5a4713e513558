/* calltrace report: per-function statistics (to be written). */
#include <stdio.h>

#include "cmds/cmds.h"

int cmd_report(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "calltrace: report is not written yet\n");
	return 1;
}
