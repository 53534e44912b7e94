/* seccomp.c - the system call allow-list, installed last in start-up.
 *
 * Theory of operation
 *
 * Once set up, ferry only moves frames between its guest link and host
 * sockets it already has or opens the same few ways. seccomp_install()
 * is the last step of start-up (after the privilege drop and the other
 * sandbox layers): it loads a classic-BPF filter (seccomp(2), raw system
 * calls, no libseccomp) that allows those calls and kills the whole
 * process (SECCOMP_RET_KILL_PROCESS, the signal SIGSYS) on any other.
 * So a bug in a frame parser can at worst make ferry's own calls, never
 * execve(), open(), ptrace(), mount() or anything that reaches outside.
 *
 * The filter checks the architecture first: a call made through another
 * entry (x32 numbers, the 32-bit int 0x80 path, which report another
 * AUDIT_ARCH) would be read against the wrong numbers, so it kills. Then
 * each allowed number returns ALLOW; a few are allowed only with one of
 * a set of values in one argument (the low 32 bits: ioctl()'s request
 * and socket()'s family are ints), e.g. ioctl() only the requests ferry
 * issues. Calls with no argument check cost nothing after the first: the
 * kernel caches, per number, which ones a filter always allows.
 *
 * The list. There is one list per mode and link: ns (namespace mode: a
 * tap device, helper tasks in the guest's namespace), vm (VM mode, qemu's
 * stream socket: accept() for the next client) and vu (VM mode,
 * vhost-user: the guest's memory mmap()ed, eventfds). It is not written
 * here: each source file carries comment lines
 *
 *   seccomp(MODES): CALL CALL(N=VALUE) ...
 *
 * next to the code that makes the calls (the grammar is in
 * test/seccomp_gen.sh), and the build turns them into build/seccomp_tab.h
 * (never committed). make check runs test/seccomp_check.sh: for every
 * libc function an object file imports and every syscall(SYS_x) in its
 * source, the system calls it can make (test/seccomp_libc.txt) must be
 * annotated in that file, for a mode or as "setup" (start-up only); so a
 * new call cannot slip in unlisted, and the failure says what to add
 * where. The integration suite then runs with the filter in kill mode:
 * a call made after set-up but annotated "setup" fails a test.
 *
 * Helper tasks. ns_call()'s short-lived tasks are cloned from ferry
 * after the filter is in place and inherit it (the ns list has what they
 * do: setns(), sockets, their exit). The resident helper (ns.c
 * ns_agent_start()) was cloned before; it is a separate process sharing
 * ferry's memory, so a compromised ferry could have it run any code:
 * seccomp_install() posts it one job that installs the same filter in it.
 *
 * Test builds (FERRY_TEST) add the sanitizer runtime's own calls (mode
 * "test") and a hook: SIGUSR2 makes ferry call execve(), which is never
 * allowed, so the tests can see it die of SIGSYS in each mode. With
 * FERRY_SECCOMP_LOG=1 in the environment a test build's filter logs
 * (SECCOMP_RET_LOG: the kernel log names each call not allowed) instead
 * of killing, to find missing entries while developing; make check never
 * sets it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>

#include "ferry.h"
#include "log.h"
#include "ns.h"
#include "nsexec.h"
#include "seccomp.h"
#include "util.h"

/* seccomp(setup): seccomp prctl */
/* seccomp(test): sigaltstack madvise
 *   (the sanitizers' runtime in a test build; ASan clears a large shadow
 *    range with madvise(MADV_DONTNEED), as when a helper task on its own
 *    stack exits) */

#define SC_NS	1u
#define SC_VM	2u
#define SC_VU	4u
#define SC_TEST	8u

/* One annotated call: allowed in the modes of mask, with argument arg
 * (-1: any arguments) equal to val. */
struct sc_rule {
	int nr;
	const char *name;
	unsigned int mask;
	int arg;
	unsigned long val;
	const char *file;		/* where it is annotated (first) */
};

static const struct sc_rule sc_rules[] = {
#include "seccomp_tab.h"
};

#if defined(__x86_64__)
#define SC_ARCH		AUDIT_ARCH_X86_64
#define SC_X32_BIT	0x40000000u	/* __X32_SYSCALL_BIT */
#elif defined(__aarch64__)
#define SC_ARCH		AUDIT_ARCH_AARCH64
#else
#define SC_ARCH		0		/* no list: seccomp_install() refuses */
#endif

#define SC_MAX_INSNS	1024

/* A filter being built. */
struct sc_prog {
	struct sock_filter insn[SC_MAX_INSNS];
	unsigned int n;
	bool full;
};

/* sc_mode_mask() - the list for c's mode and link. */
static unsigned int sc_mode_mask(const struct ctx *c)
{
	unsigned int m;

	if (c->conf.mode == MODE_NS)
		m = SC_NS;
	else
		m = c->conf.vhost_user ? SC_VU : SC_VM;
#ifdef FERRY_TEST
	m |= SC_TEST;
#endif
	return m;
}

/* sc_in() - does rule r apply to the modes in mask? (A "test" rule
 * applies to every mode of a test build, whose mask has SC_TEST.) */
static bool sc_in(const struct sc_rule *r, unsigned int mask)
{
	return (r->mask & mask) != 0;
}

/* sc_emit() - append one instruction (marks the program full instead of
 * overrunning it). */
static void sc_emit(struct sc_prog *p, uint16_t code, uint32_t k, uint8_t jt,
		    uint8_t jf)
{
	if (p->n == SC_MAX_INSNS) {
		p->full = true;
		return;
	}
	p->insn[p->n++] = (struct sock_filter){ code, jt, jf, k };
}

/* sc_seen() - did a rule before index i already cover call nr? */
static bool sc_seen(unsigned int mask, size_t i, int nr)
{
	size_t j;

	for (j = 0; j < i; j++)
		if (sc_rules[j].nr == nr && sc_in(&sc_rules[j], mask))
			return true;
	return false;
}

/* sc_emit_call() - the test for call nr: ALLOW if any of its rules in
 * mask has no argument check or its argument matches; KILL if only
 * argument checks exist and none matches; else fall through. */
static void sc_emit_call(struct sc_prog *p, unsigned int mask, int nr,
			 uint32_t deny)
{
	unsigned int k = 0, i;
	bool any = false;

	for (i = 0; i < ARRAY_SIZE(sc_rules); i++) {
		if (sc_rules[i].nr != nr || !sc_in(&sc_rules[i], mask))
			continue;
		if (sc_rules[i].arg < 0)
			any = true;
		else
			k++;
	}
	if (any || !k) {
		sc_emit(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1);
		sc_emit(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
		return;
	}
	/* jf skips the block: k times (load, compare, allow), then kill. */
	sc_emit(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0,
		(uint8_t)(3 * k + 1));
	for (i = 0; i < ARRAY_SIZE(sc_rules); i++) {
		const struct sc_rule *r = &sc_rules[i];

		if (r->nr != nr || !sc_in(r, mask))
			continue;
		sc_emit(p, BPF_LD | BPF_W | BPF_ABS, (uint32_t)
			offsetof(struct seccomp_data, args[r->arg]), 0, 0);
		sc_emit(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)r->val, 0, 1);
		sc_emit(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
	}
	sc_emit(p, BPF_RET | BPF_K, deny, 0, 0);
}

/* sc_build() - the whole filter for mask: architecture, then each call
 * once, then deny. Returns false if it does not fit. */
static bool sc_build(struct sc_prog *p, unsigned int mask, uint32_t deny)
{
	size_t i;

	p->n = 0;
	p->full = false;
	sc_emit(p, BPF_LD | BPF_W | BPF_ABS,
		offsetof(struct seccomp_data, arch), 0, 0);
	sc_emit(p, BPF_JMP | BPF_JEQ | BPF_K, SC_ARCH, 1, 0);
	sc_emit(p, BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS, 0, 0);
	sc_emit(p, BPF_LD | BPF_W | BPF_ABS,
		offsetof(struct seccomp_data, nr), 0, 0);
#ifdef SC_X32_BIT
	sc_emit(p, BPF_JMP | BPF_JGE | BPF_K, SC_X32_BIT, 0, 1);
	sc_emit(p, BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS, 0, 0);
#endif
	for (i = 0; i < ARRAY_SIZE(sc_rules); i++)
		if (sc_in(&sc_rules[i], mask) &&
		    !sc_seen(mask, i, sc_rules[i].nr))
			sc_emit_call(p, mask, sc_rules[i].nr, deny);
	sc_emit(p, BPF_RET | BPF_K, deny, 0, 0);
	return !p->full;
}

/* sc_deny() - the action on a call not allowed: kill, or in a test build
 * with FERRY_SECCOMP_LOG=1, log. */
static uint32_t sc_deny(void)
{
#ifdef FERRY_TEST
	const char *v = getenv("FERRY_SECCOMP_LOG");

	if (v && !strcmp(v, "1"))
		return SECCOMP_RET_LOG;
#endif
	return SECCOMP_RET_KILL_PROCESS;
}

/* sc_load_once() - seccomp(2), or prctl() where that is missing: 0 or
 * -errno. */
static int sc_load_once(struct sock_fprog *fp)
{
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, fp) == 0)
		return 0;
	if (errno == ENOSYS &&
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fp, 0, 0) == 0)
		return 0;
	return -errno;
}

/* sc_load() - load prog into the calling task: 0 or -errno. */
static int sc_load(const struct sc_prog *p)
{
	struct sock_fprog fp = { (unsigned short)p->n,
				 (struct sock_filter *)p->insn };

	int rc = sc_load_once(&fp);

	/* Without CAP_SYS_ADMIN the kernel wants no_new_privs first; with
	 * it (root kept, --runas 0:0) the setting stays the caller's. */
	if (rc == -EACCES) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			return -errno;
		rc = sc_load_once(&fp);
	}
	return rc;
}

/* The filter built by seccomp_install(), for the resident helper's job
 * (shared memory: it runs in ferry's address space). */
static struct sc_prog sc_built;

/* sc_agent_job() - an ns_call() job: load the filter in the resident
 * helper that runs it. */
static int sc_agent_job(void *arg)
{
	(void)arg;
	return sc_load(&sc_built);
}

int seccomp_install(const struct ctx *c)
{
	unsigned int mask = sc_mode_mask(c);
	int rc;

	if (!SC_ARCH)
		return -EOPNOTSUPP;
	if (!sc_build(&sc_built, mask, sc_deny()))
		return -E2BIG;
	if ((rc = sc_load(&sc_built)))
		return rc;
	if (c->ns_agent && (rc = ns_call(c, sc_agent_job, NULL)))
		return rc;
	return 0;
}

unsigned int seccomp_count(const struct ctx *c)
{
	unsigned int mask = sc_mode_mask(c) & ~SC_TEST, n = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sc_rules); i++)
		if (sc_in(&sc_rules[i], mask) &&
		    !sc_seen(mask, i, sc_rules[i].nr))
			n++;
	return n;
}

#ifdef FERRY_TEST
void seccomp_test_violate(void)
{
	static char *const argv[] = { "/bin/true", NULL };

	/* seccomp(setup): execve */
	info("test: seccomp: calling execve(), which no list allows");
	execve(argv[0], argv, argv + 1);
	err("test: seccomp: execve() returned: %s", strerror(errno));
}
#endif
