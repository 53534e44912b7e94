/* ctl_cmd.h - the control socket's command-line clients (ctl_cmd.c):
 * `ferry ctl PATH COMMAND ...` and `pesto` (a link of that name).
 */
#ifndef FERRY_CTL_CMD_H
#define FERRY_CTL_CMD_H

#define CTL_CMD_LINE_MAX	65536	/* a request's bytes (ctl.h CTL_LINE_MAX) */

/* ctl_main() - ferry ctl: argv[0] is "ctl", argv[1] the socket's path.
 * Returns the exit status (0: the reply was ok; errors exit 1). */
int ctl_main(int argc, char **argv);
/* pesto_main() - the pesto client's command line. Returns the exit
 * status as ctl_main(). */
int pesto_main(int argc, char **argv);

#endif /* FERRY_CTL_CMD_H */
