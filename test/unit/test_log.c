/* test_log.c - the log file's layout (log.c): the header line, a
 * timestamp and level on every line, and the --log-size bound that drops
 * the oldest lines and keeps the newest, whole, in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "unit.h"

/* slurp() - the whole file at path as a string (free() it), its length
 * in *len. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 20);

	*len = f ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

/* log_lines_check() - every line after the header is "S.FFFF: info: line
 * N ...", N consecutive and ending at last, S.FFFF never decreasing;
 * returns the first N, or -1. */
static long log_lines_check(char *text, long last)
{
	char *line = strchr(text, '\n'), *next;
	double t, prev = -1;
	long n, first = -1, want = -1;

	for (line = line ? line + 1 : NULL; line && *line; line = next) {
		next = strchr(line, '\n');
		if (!next)
			return -1;		/* a cut line */
		*next++ = '\0';
		if (sscanf(line, "%lf: info: line %ld", &t, &n) != 2 ||
		    t < prev || (want >= 0 && n != want))
			return -1;
		if (first < 0)
			first = n;
		prev = t;
		want = n + 1;
	}
	return want == last + 1 ? first : -1;
}

TEST(log_file_header_and_timestamps)
{
	char path[] = "/tmp/ferry-log-XXXXXX", head[128];
	size_t len;
	char *text;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK(!log_to_file(path, 0));
	info("line 0 first");
	info("line 1 second");
	log_file_pid();
	text = slurp(path, &len);
	snprintf(head, sizeof(head), "ferry %s: %s (%d)", FERRY_VERSION, path,
		 (int)getpid());
	CHECK(!strncmp(text, head, strlen(head)));
	CHECK(log_lines_check(text, 1) == 0);
	free(text);
	log_file_close();
	unlink(path);
}

TEST(log_file_bound_keeps_newest_lines)
{
	char path[] = "/tmp/ferry-log-XXXXXX";
	size_t len, bound = 4096;
	long first;
	char *text;
	int fd = mkstemp(path), i;

	CHECK(fd >= 0);
	close(fd);
	CHECK(!log_to_file(path, bound));
	for (i = 0; i < 2000; i++)
		info("line %d %.*s", i, i % 97, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		     "xxxxxxx");
	text = slurp(path, &len);
	CHECK(len <= bound);
	CHECK(len >= bound / 2);		/* cut, not emptied */
	CHECK(!strncmp(text, "ferry ", 6));
	first = log_lines_check(text, 1999);
	CHECK(first > 0);			/* the oldest went, in order */
	free(text);
	log_file_close();
	unlink(path);
}
