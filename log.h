/* log.h - logging with levels to stderr, syslog or a size-bounded file.
 *
 * Levels follow syslog: errors and warnings always show (unless -q), info
 * shows by default, debug with -d, trace with --trace. The log state lives
 * in this file (a process-wide sink is the one deliberate global: it must
 * work before the context exists and from signal-free error paths).
 */
#ifndef FERRY_LOG_H
#define FERRY_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_LVL_ERR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG,
		 LOG_LVL_TRACE };

/* Set the threshold: messages above it are discarded. */
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
/* Send logs to a file: truncated, a header line, then timestamped lines;
 * bounded to max_size bytes by cutting the oldest lines (log.c). Returns 0
 * or -errno. */
int log_to_file(const char *path, size_t max_size);
/* The header's PID becomes the caller's (after daemonizing). */
void log_file_pid(void);
/* Stop logging to the file (back to stderr, or syslog if set). */
void log_file_close(void);
/* Send logs to syslog (after daemonizing without -l). */
void log_to_syslog(void);
/* Also copy to stderr while on syslog/file (foreground runs). */
void log_also_stderr(bool on);

/* Per-flow and per-segment lines are rate-limited (log.c). */
#define LOG_FLOW_BURST	1000	/* lines at once */
#define LOG_FLOW_RATE	200	/* lines a second after that */

/* log_flow_ok() - may a per-flow line of level lvl be written now? A
 * line held back is counted; the next one allowed is preceded by a line
 * saying how many were not written. */
bool log_flow_ok(enum log_level lvl);
/* log_flow_suppressed() - per-flow lines held back since start. */
uint64_t log_flow_suppressed(void);

void log_msg(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Print and exit(code): for fatal start-up errors. */
void die_code(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

#define err(...)	log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define warn(...)	log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define info(...)	log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define debug(...)	do { if (log_get_level() >= LOG_LVL_DEBUG) \
				log_msg(LOG_LVL_DEBUG, __VA_ARGS__); } while (0)
#define trace(...)	do { if (log_get_level() >= LOG_LVL_TRACE) \
				log_msg(LOG_LVL_TRACE, __VA_ARGS__); } while (0)
#define die(...)	die_code(1, __VA_ARGS__)

/* write_all() - write a whole buffer to a (blocking) fd, retrying on
 * EINTR and short writes; returns 0 or -errno. Not for the data path.
 * Here, below util.c: the log sink writes with it, and util.c logs. */
int write_all(int fd, const void *buf, size_t len);

#endif /* FERRY_LOG_H */
