/* seccomp.h - the system call allow-list (seccomp.c). */
#ifndef FERRY_SECCOMP_H
#define FERRY_SECCOMP_H

struct ctx;

/* seccomp_install() - the last set-up step: load the filter for c's mode
 * and link (ns, vm stream, vhost-user) into ferry, and into the resident
 * namespace helper if there is one. A call not on the list kills the
 * process (SIGSYS). Returns 0, or -errno if the kernel refused it
 * (-E2BIG: the table does not fit a filter). */
int seccomp_install(const struct ctx *c);

/* seccomp_count() - how many system calls the list for c's mode allows
 * (the sanitizers' own calls of a test build not counted). */
unsigned int seccomp_count(const struct ctx *c);

#ifdef FERRY_TEST
/* seccomp_test_violate() - test builds, on SIGUSR2: make one call no list
 * allows (execve()); with the filter in place ferry dies of SIGSYS. */
void seccomp_test_violate(void);
#endif

#endif /* FERRY_SECCOMP_H */
