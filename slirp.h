/* slirp.h - ferry started as slirp4netns: its command line turned into
 * ferry's own (see slirp.c). */
#ifndef FERRY_SLIRP_H
#define FERRY_SLIRP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define SLIRP_ARGV_MAX	48		/* the longest translation has ~40 */

/* A translated command line: argv[0..argc) point into buf or at
 * constants; argv[argc] is NULL. */
struct slirp_argv {
	int argc;
	char *argv[SLIRP_ARGV_MAX + 1];
	char buf[1024];
	size_t used;
};

enum slirp_result {
	SLIRP_RUN,		/* out holds the `ferry ns` command line */
	SLIRP_HELP,		/* -h, --help: print slirp_usage(), exit 0 */
	SLIRP_VERSION,		/* -v, --version */
	SLIRP_BAD,		/* err holds one line naming the option */
};

/* slirp_named() - whether the program name asks for slirp4netns's
 * command line (a basename beginning with "slirp4netns"). */
bool slirp_named(const char *argv0);

/* slirp_translate() - read slirp4netns's argv (argv[0] the program name)
 * into the equivalent `ferry ns` argv in *out (its argv[0] is
 * "slirp4netns"). On SLIRP_BAD, err holds one line (no newline). */
enum slirp_result slirp_translate(int argc, char **argv,
				  struct slirp_argv *out, char *err,
				  size_t errlen);

/* slirp_usage() - the help text, naming every option podman and
 * rootlesskit look for in it. */
void slirp_usage(FILE *out);

#endif /* FERRY_SLIRP_H */
