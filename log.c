/* log.c - log sinks and formatting (see log.h).
 *
 * Messages go to stderr by default. With -l they go to a file whose size is
 * bounded by --log-size: when the next message would pass the bound, the
 * file is truncated and restarted with a line saying so, so a long-running
 * daemon can never fill a disk. After daemonizing without -l, syslog.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

static struct {
	enum log_level level;
	int file_fd;
	size_t file_max, file_used;
	bool syslog_on, stderr_too;
} log_sink = { LOG_LVL_INFO, -1, 0, 0, false, false };

void log_set_level(enum log_level lvl)
{
	log_sink.level = lvl;
}

enum log_level log_get_level(void)
{
	return log_sink.level;
}

int log_to_file(const char *path, size_t max_size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	if (log_sink.file_fd >= 0)
		close(log_sink.file_fd);
	log_sink.file_fd = fd;
	log_sink.file_max = max_size;
	log_sink.file_used = 0;
	return 0;
}

void log_to_syslog(void)
{
	openlog("ferry", LOG_PID, LOG_DAEMON);
	log_sink.syslog_on = true;
}

void log_also_stderr(bool on)
{
	log_sink.stderr_too = on;
}

/* file_write() - append to the log file, wrapping at the size bound. */
static void file_write(const char *line, size_t len)
{
	static const char wrap[] = "--- log wrapped: older lines dropped ---\n";

	if (log_sink.file_max && log_sink.file_used + len > log_sink.file_max) {
		if (ftruncate(log_sink.file_fd, 0) == 0 &&
		    lseek(log_sink.file_fd, 0, SEEK_SET) == 0) {
			log_sink.file_used = 0;
			if (write_all(log_sink.file_fd, wrap, sizeof(wrap) - 1) == 0)
				log_sink.file_used = sizeof(wrap) - 1;
		}
	}
	if (write_all(log_sink.file_fd, line, len) == 0)
		log_sink.file_used += len;
}

/* log_vmsg() - format one line (cut at 1 KiB) and write it to the
 * sinks: file or syslog, and stderr when neither is set or when asked. */
__attribute__((format(printf, 2, 0)))
static void log_vmsg(enum log_level lvl, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO,
				    LOG_DEBUG, LOG_DEBUG };
	char line[1024];
	int n;

	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	line[n] = '\0';

	if (log_sink.file_fd >= 0)
		file_write(line, (size_t)n);
	else if (log_sink.syslog_on)
		syslog(prio[lvl], "%s", line);
	if ((log_sink.file_fd < 0 && !log_sink.syslog_on) ||
	    log_sink.stderr_too) {
		if (write_all(STDERR_FILENO, line, (size_t)n) < 0)
			return;
	}
}

/* log_msg() - see log.h: drop above the level, else log_vmsg(). */
void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	if (lvl > log_sink.level)
		return;
	va_start(ap, fmt);
	log_vmsg(lvl, fmt, ap);
	va_end(ap);
}

void die_code(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LVL_ERR, fmt, ap);
	va_end(ap);
	exit(code);
}
