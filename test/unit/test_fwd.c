/* test_fwd.c - port forwarding specs (-t/-u/-T/-U): keywords, lists,
 * ranges, mappings, exclusions, bind prefixes, merging, and every class
 * of bad input with the message naming the bad part; the control
 * socket's run-time changes (fwd_spec_merge(), fwd_spec_remove()) and
 * listing (fwd_spec_items()). */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "fwd.h"
#include "unit.h"

static char err[256];

static struct fwd_spec *spec(void)
{
	err[0] = '\0';
	return calloc(1, sizeof(struct fwd_spec));
}

/* parse() - one value into f (allow_auto on). */
static bool parse(struct fwd_spec *f, const char *arg)
{
	return fwd_spec_parse(f, arg, true, err, sizeof(err));
}

/* count() - forwarded ports. */
static unsigned int count(const struct fwd_spec *f)
{
	unsigned int p, n = 0;

	for (p = 0; p < 65536; p++)
		n += fwd_port_set(f, (uint16_t)p);
	return n;
}

TEST(fwd_keywords)
{
	struct fwd_spec *f = spec();

	CHECK(parse(f, "none"));
	CHECK_EQ(f->mode, FWD_NONE);
	CHECK(f->given);
	CHECK_EQ(count(f), 0);
	CHECK(parse(f, "all"));
	CHECK_EQ(f->mode, FWD_ALL);
	CHECK_EQ(count(f), 65535);	/* port 0 never */
	CHECK(!fwd_port_set(f, 0));
	free(f);

	f = spec();
	CHECK(parse(f, "auto"));
	CHECK_EQ(f->mode, FWD_AUTO);
	CHECK_EQ(count(f), 0);
	free(f);

	f = spec();
	CHECK(!fwd_spec_parse(f, "auto", false, err, sizeof(err)));
	CHECK(strstr(err, "'auto'"));
	free(f);
}

TEST(fwd_lists_ranges_mappings)
{
	struct fwd_spec *f = spec();

	CHECK(parse(f, "22,80-82:8080-8082,1000-1010:2000,5000:6000"));
	CHECK_EQ(f->mode, FWD_SPEC);
	CHECK_EQ(count(f), 1 + 3 + 11 + 1);
	CHECK(fwd_port_set(f, 22) && fwd_target(f, 22) == 22);
	CHECK_EQ(fwd_target(f, 81), 8081);
	CHECK_EQ(fwd_target(f, 1010), 2010);
	CHECK_EQ(fwd_target(f, 5000), 6000);
	CHECK(!fwd_port_set(f, 83) && !fwd_port_set(f, 999));
	/* Target below the source: delta wraps, target is still right. */
	CHECK(parse(f, "9000:80"));
	CHECK_EQ(fwd_target(f, 9000), 80);
	CHECK(parse(f, "65535"));
	CHECK(fwd_port_set(f, 65535));
	free(f);
}

/* refused_saying() - whether parsing in fails with an error message on
 * one line that contains part (else it prints what it gave). */
static bool refused_saying(const char *in, const char *part)
{
	struct fwd_spec *f = spec();
	bool ok = !parse(f, in) && strstr(err, part) && !strchr(err, '\n');

	if (!ok)
		printf("  input '%s' gave '%s'\n", in, err);
	free(f);
	return ok;
}

TEST(fwd_bad_ports_named)
{
	static const struct { const char *in, *part; } bad[] = {
		{ "90-80", "bad port range '90-80'" },
		{ "0", "'0'" }, { "65536", "'65536'" }, { "abc", "'abc'" },
		{ "80,", "''" }, { ",80", "''" }, { "80-", "'80-'" },
		{ "-80", "'-80'" }, { "80:", "no target port after ':' in '80:'" },
		{ ":80", "no source port before" }, { "1-2-3", "'1-2-3'" },
		{ "127.0.0.1:8080:80", "127.0.0.1/8080:80" },
		{ "[2001:db8::1]:8080:80", "2001:db8::1/8080:80" },
		{ "+80", "'+80'" }, { " 80", "' 80'" }, { "100000", "'100000'" },
		{ "80-90:1000-1005", "differ in size" },
		{ "80:1000-1005", "differ in size" },
		{ "65530-65535:65534", "passes port 65535" },
		{ "~80:8080", "exclusion cannot have a target" },
		{ "", "no ports" },
	};
	struct fwd_spec *f;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(refused_saying(bad[i].in, bad[i].part));
	f = spec();
	CHECK(!parse(f, "90-80"));
	CHECK(!strcmp(err, "bad port range '90-80'"));
	free(f);
}

TEST(fwd_exclusions)
{
	struct fwd_spec *f = spec();

	/* Only exclusions: all but those (libvirt writes "~22"). */
	CHECK(parse(f, "~22,~100-199"));
	CHECK_EQ(f->mode, FWD_ALL);
	CHECK_EQ(count(f), 65535 - 1 - 100);
	CHECK(!fwd_port_set(f, 22) && !fwd_port_set(f, 150));
	CHECK(fwd_port_set(f, 21) && fwd_port_set(f, 200));
	/* A later "all" keeps the exclusions. */
	CHECK(parse(f, "all"));
	CHECK(!fwd_port_set(f, 22));
	free(f);

	/* Exclusion from the preceding list, also across values. */
	f = spec();
	CHECK(parse(f, "1000-1010,~1005"));
	CHECK_EQ(count(f), 10);
	CHECK(!fwd_port_set(f, 1005));
	CHECK(parse(f, "~1000"));
	CHECK_EQ(f->mode, FWD_SPEC);
	CHECK_EQ(count(f), 9);
	free(f);

	/* After auto: recorded for auto-forwarding to skip. */
	f = spec();
	CHECK(parse(f, "auto"));
	CHECK(parse(f, "~53"));
	CHECK_EQ(f->mode, FWD_AUTO);
	CHECK(f->excl[0] >> 53 & 1);
	free(f);
}

TEST(fwd_bind_prefixes)
{
	struct fwd_spec *f = spec();
	const struct fwd_bind *b;
	struct in6_addr a6;

	CHECK(parse(f, "198.51.100.1/8080-8080:80-80"));	/* podman */
	CHECK(f->has_addr4 && !f->has_addr6);
	CHECK_EQ(ntohl(f->addr4.s_addr), 0xc6336401);
	CHECK(parse(f, "[2001:db8::1]%eth0/443"));
	CHECK(parse(f, "%lo/22"));
	CHECK(parse(f, "2001:db8::2/53"));
	CHECK(parse(f, "9090"));
	CHECK_EQ(fwd_target(f, 8080), 80);
	b = fwd_port_bind(f, 8080);
	CHECK(b->has_addr4 && !b->ifname[0]);
	b = fwd_port_bind(f, 443);
	inet_pton(AF_INET6, "2001:db8::1", &a6);
	CHECK(b->has_addr6 && !memcmp(&b->addr6, &a6, 16));
	CHECK(!strcmp(b->ifname, "eth0"));
	b = fwd_port_bind(f, 22);
	CHECK(!b->has_addr4 && !b->has_addr6 && !strcmp(b->ifname, "lo"));
	CHECK(fwd_port_bind(f, 53)->has_addr6);
	b = fwd_port_bind(f, 9090);
	CHECK(!b->has_addr4 && !b->has_addr6 && !b->ifname[0]);
	/* Legacy single-bind fields still mirror the first prefix. */
	CHECK(f->has_addr4 && !f->has_addr6 && !f->ifname[0]);
	CHECK_EQ(f->nbinds, 5);
	free(f);

	/* libvirt: ADDR%DEV/ with "all", and %DEV/ alone. */
	f = spec();
	CHECK(parse(f, "198.51.100.1%eth0/all"));
	CHECK_EQ(f->mode, FWD_ALL);
	CHECK(!strcmp(fwd_port_bind(f, 1)->ifname, "eth0"));
	free(f);
}

TEST(fwd_bad_prefixes)
{
	static const struct { const char *in, *part; } bad[] = {
		{ "1.2.3/80", "bad bind address '1.2.3'" },
		{ "198.51.100.1%/80", "bad interface name" },
		{ "%abcdefghijklmnopq/80", "bad interface name" },
		{ "/80", "empty bind address" },
		{ "198.51.100.1/", "no ports" },
		{ "[198.51.100.1/80", "bad bind address" },
		{ "2001:db8::zz/80", "bad bind address" },
		{ "198.51.100.1/90-80", "'90-80'" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(refused_saying(bad[i].in, bad[i].part));
}

TEST(fwd_merging)
{
	struct fwd_spec *f = spec();
	char v[64];
	int i;

	/* "none" first, then ports (user option plus podman's -t): ports. */
	CHECK(parse(f, "none"));
	CHECK(parse(f, "80"));
	CHECK_EQ(f->mode, FWD_SPEC);
	CHECK(parse(f, "443"));
	CHECK_EQ(count(f), 2);
	CHECK(parse(f, "80"));			/* same mapping again: fine */
	CHECK(!parse(f, "80:8080"));		/* different target */
	CHECK(strstr(err, "port 80"));
	CHECK(!parse(f, "198.51.100.1/443"));	/* different bind */
	CHECK(!parse(f, "none"));
	CHECK(strstr(err, "'none'"));
	free(f);

	f = spec();
	CHECK(parse(f, "all"));
	CHECK(!parse(f, "auto"));
	CHECK(parse(f, "80:8080"));		/* explicit mapping in all */
	CHECK_EQ(fwd_target(f, 80), 8080);
	free(f);

	f = spec();
	CHECK(parse(f, "auto"));
	CHECK(!parse(f, "all"));
	CHECK(parse(f, "8080"));		/* auto plus fixed ports */
	CHECK_EQ(f->mode, FWD_AUTO);
	CHECK(fwd_port_set(f, 8080));
	free(f);

	/* Bounded bind table. */
	f = spec();
	for (i = 1; i < FWD_BIND_MAX; i++) {
		snprintf(v, sizeof(v), "198.51.100.%d/%d", i, 1000 + i);
		CHECK(parse(f, v));
	}
	CHECK(!parse(f, "203.0.113.1/2000"));	/* one more */
	CHECK(strstr(err, "bind prefixes"));
	free(f);
}

/* --- The control socket's spec changes (fwd.c) ----------------------- */

static struct fwd_spec *spec_of(const char *a, const char *b)
{
	struct fwd_spec *f = calloc(1, sizeof(*f));

	if (a && !fwd_spec_parse(f, a, false, err, sizeof(err)))
		return NULL;
	if (b && !fwd_spec_parse(f, b, false, err, sizeof(err)))
		return NULL;
	return f;
}

static char items[8][64];
static unsigned int nitems;

static void collect(void *arg, const char *item)
{
	(void)arg;
	if (nitems < 8)
		snprintf(items[nitems++], sizeof(items[0]), "%s", item);
}

static unsigned int list(const struct fwd_spec *f)
{
	nitems = 0;
	return fwd_spec_items(f, collect, NULL);
}

TEST(fwd_runtime_merge_remove)
{
	struct fwd_spec *live = spec_of("8080:80", NULL);
	struct fwd_spec *add = spec_of("8080:80,9000-9002", NULL);
	struct fwd_spec *bad = spec_of("8080:81", NULL);
	struct fwd_spec *del = spec_of("9001", NULL);
	uint64_t ch[FWD_BITMAP_WORDS];

	CHECK(live && add && bad && del);
	CHECK(fwd_spec_merge(live, add, ch, err, sizeof(err)));
	CHECK(!(ch[8080 / 64] >> (8080 % 64) & 1));	/* already there */
	CHECK(ch[9000 / 64] >> (9000 % 64) & 1);
	CHECK_EQ(list(live), 2);
	CHECK(!strcmp(items[0], "8080:80") && !strcmp(items[1], "9000-9002"));
	CHECK(!fwd_spec_merge(live, bad, ch, err, sizeof(err)));
	CHECK(strstr(err, "port 8080 is forwarded already"));
	CHECK(fwd_spec_remove(live, del, ch, err, sizeof(err)));
	CHECK_EQ(list(live), 3);
	CHECK(!strcmp(items[1], "9000") && !strcmp(items[2], "9002"));
	CHECK(!fwd_spec_remove(live, del, ch, err, sizeof(err)));
	CHECK(strstr(err, "port 9001 is not forwarded"));
	CHECK(!fwd_spec_remove(live, bad, ch, err, sizeof(err)));
	free(live);
	free(add);
	free(bad);
	free(del);
}

TEST(fwd_runtime_dual_stack)
{
	/* podman: one forward as 0.0.0.0/P and [::]/P */
	struct fwd_spec *both = spec_of("0.0.0.0/8080:80", "[::]/8080:80");
	struct fwd_spec *live = spec_of("0.0.0.0/8080:80", NULL);
	struct fwd_spec *v6 = spec_of("[::]/8080:80", NULL);
	struct fwd_spec *v4 = spec_of("0.0.0.0/8080:80", NULL);
	uint64_t ch[FWD_BITMAP_WORDS];

	CHECK(both && live && v6 && v4);
	CHECK_EQ(list(both), 2);
	CHECK(!strcmp(items[0], "0.0.0.0/8080:80") &&
	      !strcmp(items[1], "::/8080:80"));
	CHECK(fwd_spec_merge(live, v6, ch, err, sizeof(err)));
	CHECK(ch[8080 / 64] >> (8080 % 64) & 1);
	CHECK(fwd_port_bind(live, 8080)->has_addr4 &&
	      fwd_port_bind(live, 8080)->has_addr6);
	CHECK(fwd_spec_remove(live, v4, ch, err, sizeof(err)));
	CHECK(fwd_port_set(live, 8080));
	CHECK(!fwd_port_bind(live, 8080)->has_addr4 &&
	      fwd_port_bind(live, 8080)->has_addr6);
	CHECK(fwd_spec_remove(live, v6, ch, err, sizeof(err)));
	CHECK(!fwd_port_set(live, 8080));
	CHECK_EQ(list(live), 0);
	free(both);
	free(live);
	free(v6);
	free(v4);
}

/* podman's per-container form (container-libs pesto_linux.go,
 * portMappingsToPestoArgs()): "-t 0.0.0.0/8080:10.0.0.2/80 -t
 * [::]/8080:fd00::2/80", ranges "0.0.0.0/8000-8004:10.0.0.2/80-84". */
TEST(fwd_target_address)
{
	struct fwd_spec *both = spec_of("0.0.0.0/8080:198.51.100.7/80",
					"[::]/8080:2001:db8::7/80");
	struct fwd_spec *v4 = spec_of("0.0.0.0/8080:198.51.100.7/80", NULL);
	struct fwd_spec *v6 = spec_of("[::]/8080:2001:db8::7/80", NULL);
	struct fwd_spec *live = spec_of("0.0.0.0/8080:198.51.100.7/80", NULL);
	struct fwd_spec *rng = spec_of("127.0.0.1/8000-8004:198.51.100.7/80-84",
				       NULL);
	struct fwd_spec *bare = spec_of("0.0.0.0/8080", NULL);
	struct fwd_spec *wrong = spec_of("0.0.0.0/8080:198.51.100.8/80", NULL);
	struct fwd_spec *back;
	uint64_t ch[FWD_BITMAP_WORDS];
	struct in6_addr a6;
	struct in_addr a4;
	char s6[INET6_ADDRSTRLEN];

	CHECK(both && v4 && v6 && live && rng && bare && wrong);
	CHECK(fwd_port_set(v4, 8080) && fwd_target(v4, 8080) == 80);
	CHECK(fwd_target_addr(v4, 8080, false, &a4, &a6));
	CHECK(a4.s_addr == inet_addr("198.51.100.7"));
	CHECK(!fwd_target_addr(v4, 8080, true, &a4, &a6));
	CHECK(fwd_target_addr(both, 8080, true, &a4, &a6));
	inet_ntop(AF_INET6, &a6, s6, sizeof(s6));
	CHECK(!strcmp(s6, "2001:db8::7"));
	CHECK(fwd_target_addr(both, 8080, false, &a4, &a6));
	CHECK_EQ(list(both), 2);
	CHECK(!strcmp(items[0], "0.0.0.0/8080:198.51.100.7/80") &&
	      !strcmp(items[1], "::/8080:2001:db8::7/80"));
	back = spec_of(items[0], items[1]);	/* the listing parses back */
	CHECK(back && fwd_target_addr(back, 8080, true, &a4, &a6));
	CHECK_EQ(fwd_target(rng, 8004), 84);
	CHECK(fwd_target_addr(rng, 8004, false, &a4, &a6));
	CHECK_EQ(list(rng), 1);
	CHECK(!strcmp(items[0], "127.0.0.1/8000-8004:198.51.100.7/80-84"));
	/* at run time: the other family joins, then each half goes */
	CHECK(fwd_spec_merge(live, v6, ch, err, sizeof(err)));
	CHECK(fwd_target_addr(live, 8080, true, &a4, &a6) &&
	      fwd_target_addr(live, 8080, false, &a4, &a6));
	CHECK(fwd_spec_merge(live, both, ch, err, sizeof(err)));  /* again */
	CHECK(fwd_spec_remove(live, v4, ch, err, sizeof(err)));
	CHECK(fwd_port_set(live, 8080));
	CHECK(!fwd_target_addr(live, 8080, false, &a4, &a6) &&
	      fwd_target_addr(live, 8080, true, &a4, &a6));
	CHECK(fwd_spec_remove(live, v6, ch, err, sizeof(err)));
	CHECK(!fwd_port_set(live, 8080));
	/* a single-family forward with a target goes by its bind alone, as
	 * a dual-stack one's half does; a wrong target is refused */
	CHECK(fwd_spec_merge(live, v4, ch, err, sizeof(err)));
	CHECK(!fwd_spec_remove(live, wrong, ch, err, sizeof(err)));
	CHECK(strstr(err, "port 8080 is forwarded to another target"));
	CHECK(fwd_port_set(live, 8080));
	CHECK(fwd_spec_remove(live, bare, ch, err, sizeof(err)));
	CHECK(!fwd_port_set(live, 8080));
	CHECK(fwd_spec_merge(live, both, ch, err, sizeof(err)));
	CHECK(fwd_spec_remove(live, bare, ch, err, sizeof(err)));  /* half */
	CHECK(fwd_port_set(live, 8080));
	CHECK(!fwd_target_addr(live, 8080, false, &a4, &a6) &&
	      fwd_target_addr(live, 8080, true, &a4, &a6));
	free(both);
	free(v4);
	free(v6);
	free(live);
	free(rng);
	free(back);
	free(bare);
	free(wrong);
}

TEST(fwd_target_address_bad)
{
	static const struct { const char *in, *part; } bad[] = {
		{ "8080:198.51.100.7/80", "needs a bind address" },
		{ "0.0.0.0/8080:2001:db8::7/80", "another family" },
		{ "[::]/8080:198.51.100.7/80", "another family" },
		{ "0.0.0.0/8080:198.51.100.300/80",
		  "bad target address '198.51.100.300'" },
		{ "0.0.0.0/8080:198.51.100.7/", "no target port after the" },
		{ "0.0.0.0/8080:/80", "bad target address ''" },
		{ "0.0.0.0/~8080:198.51.100.7/80", "exclusion cannot have" },
		{ "0.0.0.0/8080-8081:198.51.100.7/80-82", "differ in size" },
	};
	struct fwd_spec *f;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(refused_saying(bad[i].in, bad[i].part));
	/* one port, one family: a second target is a conflict */
	f = spec();
	CHECK(parse(f, "0.0.0.0/8080:198.51.100.7/80"));
	CHECK(!parse(f, "0.0.0.0/8080:198.51.100.8/80"));
	CHECK(strstr(err, "port 8080 given twice"));
	free(f);
}
