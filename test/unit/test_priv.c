/* test_priv.c - the pieces of priv.c that do not need root: reading
 * nobody from a passwd file as plain text, and whether an id map covers
 * an id. (The drop itself: test_rootless.py, as the real root.) */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "icmp.h"
#include "priv.h"
#include "unit.h"

/* tmp_file() - a temporary file holding text; its path in buf. */
static bool tmp_file(char *buf, size_t len, const char *text)
{
	FILE *f;
	int fd;

	snprintf(buf, len, "/tmp/ferry-unit-priv.XXXXXX");
	fd = mkstemp(buf);
	if (fd < 0 || !(f = fdopen(fd, "w")))
		return false;
	fputs(text, f);
	return !fclose(f);
}

TEST(priv_passwd_nobody_as_text)
{
	char path[64];
	uid_t u = 1;
	gid_t g = 1;

	CHECK(tmp_file(path, sizeof(path),
		       "root:x:0:0:root:/root:/bin/bash\n"
		       "nobodyx:x:5:5::/:/bin/false\n"	/* longer name */
		       "# nobody:x:7:7 a comment\n"
		       "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
		       "nobody:x:9:9::/:/bin/false\n"));	/* first wins */
	CHECK(priv_passwd_find(path, "nobody", &u, &g));
	CHECK_EQ(u, 65534);
	CHECK_EQ(g, 65534);
	CHECK(priv_passwd_find(path, "nobodyx", &u, &g));
	CHECK_EQ(u, 5);
	CHECK(priv_passwd_find(path, "root", &u, &g));
	CHECK_EQ(u, 0);
	CHECK_EQ(g, 0);
	CHECK(!priv_passwd_find(path, "nobod", &u, &g));
	CHECK(!priv_passwd_find(path, "daemon", &u, &g));
	unlink(path);
	CHECK(!priv_passwd_find(path, "nobody", &u, &g));	/* no file */

	/* malformed entries are skipped */
	CHECK(tmp_file(path, sizeof(path),
		       "nobody\n"
		       "nobody:x\n"
		       "nobody:x::65534:\n"
		       "nobody:x:12a:1:\n"
		       "nobody:x:1:-:\n"
		       "nobody:x:4294967295:1:\n"
		       "nobody:x: 5:1:\n"
		       "nobody:x:99999999999999999999999:1:\n"
		       "nobody:x:99:98:ok:/:/bin/false\n"));
	CHECK(priv_passwd_find(path, "nobody", &u, &g));
	CHECK_EQ(u, 99);
	CHECK_EQ(g, 98);
	unlink(path);
}

TEST(priv_id_map_ranges)
{
	char path[64];

	/* unshare -r: only our own root */
	CHECK(tmp_file(path, sizeof(path), "         0       1000          1\n"));
	CHECK(priv_id_mapped(path, 0));
	CHECK(!priv_id_mapped(path, 1));
	CHECK(!priv_id_mapped(path, 65534));
	unlink(path);
	/* the initial user namespace */
	CHECK(tmp_file(path, sizeof(path), "0 0 4294967295\n"));
	CHECK(priv_id_mapped(path, 0));
	CHECK(priv_id_mapped(path, 65534));
	CHECK(priv_id_mapped(path, 4294967294u));
	CHECK(!priv_id_mapped(path, 4294967295u));
	unlink(path);
	/* several ranges (newuidmap) */
	CHECK(tmp_file(path, sizeof(path), "0 1000 1\n1 100000 65536\n"));
	CHECK(priv_id_mapped(path, 1));
	CHECK(priv_id_mapped(path, 65534));
	CHECK(priv_id_mapped(path, 65536));
	CHECK(!priv_id_mapped(path, 65537));
	unlink(path);
	/* a line that is not a map maps nothing */
	CHECK(tmp_file(path, sizeof(path), "x y z\n5\n7 7 1\n"));
	CHECK(!priv_id_mapped(path, 0));
	CHECK(!priv_id_mapped(path, 5));
	CHECK(priv_id_mapped(path, 7));
	unlink(path);
	CHECK(!priv_id_mapped(path, 0));			/* no file */
}

TEST(icmp_group_allowed_reads_the_range)
{
	char path[64];

	CHECK(tmp_file(path, sizeof(path), "0\t0\n"));
	CHECK(icmp_group_allowed(path, 0));
	CHECK(!icmp_group_allowed(path, 65534));
	unlink(path);
	CHECK(tmp_file(path, sizeof(path), "1\t0\n"));	/* the kernel's default */
	CHECK(!icmp_group_allowed(path, 0));
	CHECK(!icmp_group_allowed(path, 1));
	unlink(path);
	CHECK(tmp_file(path, sizeof(path), "0\t2147483647\n"));
	CHECK(icmp_group_allowed(path, 65534));
	CHECK(!icmp_group_allowed(path, 4294967294u));
	unlink(path);
	CHECK(tmp_file(path, sizeof(path), "x y\n"));
	CHECK(!icmp_group_allowed(path, 0));
	unlink(path);
	CHECK(!icmp_group_allowed(path, 0));			/* no file */
}
