"""Command-line behaviour: bad input gets one clear line and exit 1; --help
documents every option of the table in conf.c; the man page too; the
command lines podman, libvirt and qemu use parse in the real binary."""
import json
import os
import re
import signal
import socket
import struct
import subprocess

import pytest

from conftest import FERRY, ROOT, wait_for


def ferry(*args, timeout=10, argv0=None):
    return subprocess.run([argv0 or FERRY, *args], capture_output=True,
                          text=True, timeout=timeout)


def table_options():
    """(name, modes) for every option in conf.c's opts[] table."""
    src = (ROOT / "conf.c").read_text()
    body = src[src.index("static const struct opt opts[]"):]
    body = body[:body.index("};")]
    full = re.findall(r'\{\s*"([a-z0-9-]+)",\s*(?:\'.\'|0),\s*'
                      r'(?:"[^"]*"|NULL),\s*(M_[A-Z]+)', body)
    flags = re.findall(r'FLAG\("([a-z0-9-]+)",\s*(M_[A-Z]+)', body)
    opts = full + flags
    assert len(opts) > 60, "option table not found in conf.c"
    return opts


def one_error_line(r, *parts):
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = r.stderr.strip("\n").split("\n")
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("ferry: "), lines[0]
    for p in parts:
        assert p in lines[0], (p, lines[0])
    assert r.stdout == ""


def test_version():
    for args in (["--version"], ["ns", "--version"], ["vm", "--version"]):
        r = ferry(*args)
        assert r.returncode == 0
        assert r.stdout.startswith("ferry ")
        assert len(r.stdout.splitlines()) == 1
        # scripts parse it: the VERSION file's release, then git's commit
        release = (ROOT / "VERSION").read_text().strip()
        assert re.fullmatch(re.escape(release) +
                            r"(-g[0-9a-f]{7,40}(-dirty)?)?",
                            r.stdout.split()[1]), r.stdout


def test_no_mode_is_an_error():
    r = ferry("bogus")
    assert r.returncode == 1
    assert "bogus" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_unknown_option_named():
    r = ferry("ns", "--no-such-option")
    one_error_line(r, "--no-such-option")


@pytest.mark.parametrize("args,parts", [
    (["ns", "--mtu", "70000"], ["--mtu", "'70000'", "68-65520"]),
    (["vm", "-m", "abc"], ["-m", "'abc'"]),
    (["ns", "-t", "90-80"], ["-t", "'90-80'"]),
    (["vm", "--udp-ports", "80:1000-1005"], ["--udp-ports", "80:1000-1005"]),
    (["ns", "-a", "198.51.100.1/40"], ["-a", "'40'"]),
    (["ns", "--netmask", "255.0.255.0"], ["--netmask", "255.0.255.0"]),
    (["vm", "--mac-addr", "9a:55:9a"], ["--mac-addr", "9a:55:9a"]),
    (["ns", "-4", "-6"], ["-6", "-4"]),
    (["ns", "--one-off"], ["--one-off", "vm"]),
    (["vm", "--netns", "/run/netns/x"], ["--netns", "ns"]),
    (["vm", "-T", "80"], ["-T", "ns"]),
    (["vm", "stray"], ["'stray'"]),
    (["ns", "--mtu"], ["--mtu", "value"]),
    (["ns", "-D", "not-an-address"], ["-D", "not-an-address"]),
    (["ns", "--log-size", "12"], ["--log-size", "'12'"]),
    (["ns", "--busy-poll", "1001"], ["--busy-poll", "'1001'", "0-1000"]),
    (["vm", "--busy-poll", "-5"], ["--busy-poll", "'-5'"]),
    (["ns", "--tcp-keepalive", "86401"], ["--tcp-keepalive", "'86401'",
                                          "0-86400"]),
    (["vm", "--tcp-keepalive", "5s"], ["--tcp-keepalive", "'5s'"]),
    (["ns", "--runas", "no-such-user-zz"], ["--runas", "no-such-user-zz"]),
    (["ns", "--hostname", "bad\nname"], ["--hostname", "bad?name"]),
    (["ns", "-I", "."], ["-I", "'.'"]),
    (["ns", "--outbound-if6", ".."], ["--outbound-if6", "'..'"]),
    (["vm", "-i", "eth0:1"], ["-i", "'eth0:1'"]),
    (["ns", "--fault", "seed=99999999999999999999999"], ["--fault", "seed"]),
    (["ns", "--fault", "seed=-1"], ["--fault", "seed"]),
    (["vm", "--splice-only"], ["--splice-only", "ns"]),
    (["ns", "--splice-only", "--config-net"], ["--splice-only",
                                               "--config-net"]),
    (["ns", "-I", "tap0", "--splice-only"], ["--splice-only", "--ns-ifname"]),
    (["ns", "--splice-only", "--ns-mac-addr", "9a:55:00:00:00:01"],
     ["--splice-only", "--ns-mac-addr"]),
    (["ns", "--splice-only", "--outbound-if6", "eth0"],
     ["--splice-only", "--outbound-if6"]),
    # issue 24: the part that is wrong, and the right form for a habit
    (["ns", "-t", "80:"], ["-t", "no target port", "'80:'"]),
    (["ns", "-u", ":53"], ["-u", "no source port", "':53'"]),
    (["ns", "-t", "127.0.0.1:8080:80"], ["-t", "'127.0.0.1:8080:80'",
                                         "127.0.0.1/8080:80"]),
    (["ns", "-t", "[::1]:8080:80"], ["-t", "::1/8080:80"]),
    (["vm", "-t", "auto"], ["-t", "'auto'", "namespace mode only"]),
])
def test_bad_value_one_line_exit_1(args, parts):
    one_error_line(ferry(*args), *parts)


def start_error_line(r, *parts):
    """A start-up failure (a log line, not a parse error): exit 1, one
    stderr line, naming what parts say."""
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = r.stderr.strip("\n").split("\n")
    assert len(lines) == 1, r.stderr
    for p in parts:
        assert p in lines[0], (p, lines[0])


def test_start_errors_name_the_option(tmp_path):
    """Values that parse but cannot be used at start-up: the error line
    names the option too (-q: nothing else is printed)."""
    start_error_line(ferry("vm", "-q", "-f", "--fd", "99"), "--fd", "99")
    with open(tmp_path / "file", "w") as f:
        r = subprocess.run([FERRY, "vm", "-q", "-f", "--fd", str(f.fileno())],
                           capture_output=True, text=True, timeout=10,
                           pass_fds=[f.fileno()])
    start_error_line(r, "--fd", "not a socket")
    # namespace mode creates its own tap: an inherited fd there was once
    # accepted and ignored; pasta's -F now fails naming the option
    for argv in (["ns", "-f", "-F", "3"], ["ns", "--fd", "3"]):
        r = ferry(*argv)
        assert r.returncode == 1, (argv, r.stderr)
        one_error_line(r)
        assert "-F" in r.stderr or "--fd" in r.stderr, r.stderr
        assert "only valid in vm (passt) mode" in r.stderr, r.stderr
    r = ferry("vm", "-q", "-f", "-1", "-s", str(tmp_path / "s"), "--pid",
              str(tmp_path / "no" / "such.pid"))
    start_error_line(r, "--pid", "such.pid")
    # a regular file where the socket should go: not "Address in use"
    (tmp_path / "plain").write_text("")
    r = ferry("vm", "-q", "-f", "-1", "-s", str(tmp_path / "plain"))
    start_error_line(r, "--socket", "not a socket")


def test_socket_in_use_named(tmp_path):
    """A second ferry on a live socket says another process listens, and
    finds that out without connecting: the first logs no guest coming and
    going (issue 24)."""
    path = str(tmp_path / "live.socket")
    first = subprocess.Popen([FERRY, "vm", "-f", "-s", path],
                             stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: os.path.exists(path), timeout=10)
        r = ferry("vm", "-q", "-f", "-1", "-s", path)
        start_error_line(r, "--socket", "in use")
    finally:
        first.terminate()
        out = first.communicate(timeout=20)[1]
    assert "guest connected" not in out, out


def test_missing_command_is_the_first_line():
    """ferry ns -- no-such-cmd: the error is the first (and only) line,
    before any start-up report, with the shell's status 127."""
    r = subprocess.run([FERRY, "ns", "--", "no-such-cmd-zz"],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 127, (r.returncode, r.stderr)
    lines = r.stderr.strip("\n").split("\n")
    assert lines[0] == ("ferry: cannot run no-such-cmd-zz: No such file "
                        "or directory"), r.stderr
    assert len(lines) == 1, r.stderr


def test_help_lists_every_option():
    opts = table_options()
    text = {}
    for mode in ("ns", "vm"):
        r = ferry(mode, "--help")
        assert r.returncode == 0 and r.stderr == ""
        assert r.stdout.startswith(f"Usage: ferry {mode}")
        text[mode] = r.stdout
    for name, modes in opts:
        want = {"M_ALL": ("ns", "vm"), "M_NS": ("ns",), "M_VM": ("vm",)}[modes]
        for mode in ("ns", "vm"):
            present = re.search(r"--%s\b(?!-)" % re.escape(name), text[mode])
            assert bool(present) == (mode in want), (name, mode)


def test_man_page_documents_every_option():
    man = (ROOT / "doc" / "ferry.1").read_text()
    plain = man.replace("\\-", "-").replace("\\fB", "").replace("\\fR", "") \
               .replace("\\fI", "")
    missing = [n for n, _ in table_options()
               if not re.search(r"--%s\b(?!-)" % re.escape(n), plain)]
    assert not missing, f"doc/ferry.1 lacks: {missing}"
    for section in (".SH SYNOPSIS", ".SH OPTIONS", ".SH EXIT STATUS",
                    ".SH EXAMPLES"):
        assert section in man


@pytest.fixture
def links(tmp_path):
    """pasta and passt links to the binary, as packagers install them."""
    for name in ("pasta", "passt"):
        os.symlink(FERRY, tmp_path / name)
    return tmp_path


def test_program_names_pick_the_mode(links):
    r = ferry("--help", argv0=str(links / "pasta"))
    assert r.returncode == 0 and "ferry ns" in r.stdout
    r = ferry("--help", argv0=str(links / "passt"))
    assert r.returncode == 0 and "ferry vm" in r.stdout
    one_error_line(ferry("--config-net", argv0=str(links / "passt")),
                   "--config-net")


def test_print_capabilities(links):
    r = ferry("--print-capabilities", argv0=str(links / "passt"))
    assert r.returncode == 0
    assert json.loads(r.stdout) == {"type": "net"}


# Options are all checked before a trailing --help stops the run, so these
# prove that the real command lines parse without starting anything.
PODMAN = ["--config-net", "-t", "127.0.0.1/8080-8080:80-80", "-u",
          "5353-5353:53-53", "--dns-forward", "169.254.1.1", "-T", "none",
          "-U", "none", "--no-map-gw", "--quiet", "--map-guest-addr",
          "169.254.1.2", "--pid", "/tmp/pasta.pid", "--netns",
          "/run/user/1000/netns/netns-1"]
LIBVIRT = ["--one-off", "--socket", "/run/libvirt/qemu/passt/vm-net0.socket",
           "--mac-addr", "52:54:00:12:34:56", "--pid", "/run/vm-passt.pid",
           "--mtu", "1500", "--interface", "eth0", "--log-file",
           "/tmp/passt.log", "--hostname", "vm1", "--fqdn", "vm1.example.test",
           "--address", "198.51.100.10", "--netmask", "24", "--tcp-ports",
           "198.51.100.1%eth0/2222:22", "--udp-ports", "~53"]
QEMU = ["--vhost-user", "--quiet", "--mtu", "9000", "--address",
        "198.51.100.5", "--netmask", "255.255.255.0", "--gateway",
        "198.51.100.1", "--dns", "198.51.100.53", "--search",
        "a.example.test b.example.test", "--freebind", "--ipv4-only",
        "--tcp-ports", "80,443", "--pid", "/tmp/qemu-passt.pid", "--fd", "3"]


@pytest.mark.parametrize("name,args", [("pasta", PODMAN), ("passt", LIBVIRT),
                                       ("passt", QEMU)])
def test_real_command_lines_parse(links, name, args):
    r = ferry(*args, "--help", argv0=str(links / name))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    # The same line with one value broken fails naming that option.
    broken = list(args)
    i = broken.index("--pid")
    broken[i + 1] = ""
    one_error_line(ferry(*broken, "--help", argv0=str(links / name)), "--pid")


def test_random_values_never_crash():
    """Seeded random option/value soup: exit 0 (trailing --help) or 1 with
    one stderr line, never a sanitizer report or another status. Only
    options with values, so nothing becomes a command to run."""
    import random
    rnd = random.Random(1234)
    opts = ["-t", "-u", "-T", "-U", "-a", "-n", "-m", "-M", "-g", "-D", "-S",
            "-H", "--fqdn", "--runas", "--log-size", "-F", "-s", "--netns",
            "-i", "--map-guest-addr", "--dns-forward", "-l", "--pid"]
    vals = ["", "0", "65535", "65536", "1-2-3", "~", "~1", ":", "a/b", "%/",
            "[::1]/80", "198.51.100.1%lo/all", "::/1", "all", "auto", "none",
            "255.255.255.0", "x" * 300, "9a:55:9a:55:9a:55", "-1", "1k",
            "4G", "root:root", ",,,", "80:90-91", "1000-1010:2000", "a\nb",
            "%", "/", "2001:db8::1/64", "70000", "1.2.3.4/33"]
    for _ in range(150):
        args = []
        for _ in range(rnd.randint(1, 6)):
            args += [rnd.choice(opts), rnd.choice(vals)]
        mode = rnd.choice(["ns", "vm"])
        r = ferry(mode, *args, "--help")
        assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr
        assert r.returncode in (0, 1), (mode, args, r.stderr)
        if r.returncode == 1:
            one_error_line(r)


def value_options():
    """(name, modes) of every option in conf.c's table that takes a value
    (h_ignore ones accept anything: left out)."""
    src = (ROOT / "conf.c").read_text()
    body = src[src.index("static const struct opt opts[]"):]
    body = body[:body.index("};")]
    opts = re.findall(r'\{\s*"([a-z0-9-]+)",\s*(?:\'.\'|0),\s*"[^"]*",\s*'
                      r'(M_[A-Z]+),\s*(h_[a-z0-9_]+)', body)
    assert len(opts) > 30, "option table not found in conf.c"
    return [(n, m) for n, m, h in opts if h != "h_ignore"]


def test_every_value_option_refuses_malformed():
    """Each option taking a value, in every mode it belongs to: an empty
    value, and for numbers a sign, an overflow and a garbage suffix, give
    one line naming the option and exit status 1 (--help after it would
    exit 0 had the value been taken)."""
    numeric = {"mtu", "fd", "log-size", "netmask", "busy-poll",
               "tcp-keepalive"}
    modes_of = {"M_ALL": ("ns", "vm"), "M_NS": ("ns",), "M_VM": ("vm",)}
    seen = 0
    for name, modes in value_options():
        vals = [""]
        if name in numeric:
            vals += ["-1", "+5", "99999999999999999999999", "12abc", "0x10"]
        for mode in modes_of[modes]:
            for v in vals:
                r = ferry(mode, "--" + name, v, "--help")
                assert "Sanitizer" not in r.stderr, (name, v, r.stderr)
                one_error_line(r, "--" + name)
                seen += 1
    assert seen > 60


# ------------------------------------------------ compatibility (compat.md)
# The command lines today's callers build, option for option, from their
# sources (doc/compat.md names them). A trailing --help proves each parses
# without starting anything; the tests after these run some for real.

NETNS = "/run/user/1000/netns/netns-0c9b1d7e"
CALLERS = {
    # podman 5 (containers/common libnetwork/pasta createPastaArgs()) for
    # `podman run --network pasta -p 8080:80 -p 127.0.0.1:5353:53/udp`
    "podman5": ("pasta", [
        "--config-net", "-t", "8080-8080:80-80", "-u",
        "127.0.0.1/5353-5353:53-53", "--dns-forward", "169.254.1.1", "-T",
        "none", "-U", "none", "--no-map-gw", "--quiet", "--netns", NETNS,
        "--map-guest-addr", "169.254.1.2"]),
    # ... with an IPv6 host address (-p [::1]:8443:443) and a port range
    "podman5-v6-range": ("pasta", [
        "--config-net", "-t", "::1/8443-8443:443-443", "-t",
        "9000-9002:9000-9002", "--dns-forward", "169.254.1.1", "-u",
        "none", "-T", "none", "-U", "none", "--no-map-gw", "--quiet",
        "--netns", NETNS, "--map-guest-addr", "169.254.1.2"]),
    # ... with podman's documented pasta_options example in
    # containers.conf (--map-gw removed by podman, so no --no-map-gw)
    "podman5-pasta_options": ("pasta", [
        "--config-net", "-I", "tap0", "--ipv4-only", "-a", "10.0.2.0",
        "-n", "24", "-g", "10.0.2.2", "--dns-forward", "10.0.2.3", "-m",
        "1500", "--no-ndp", "--no-dhcpv6", "--no-dhcp", "-t", "none", "-u",
        "none", "-T", "none", "-U", "none", "--quiet", "--netns", NETNS,
        "--map-guest-addr", "169.254.1.2"]),
    # ... with `--network pasta:-T,auto,-U,auto,--debug` (no --quiet)
    "podman5-cli-options": ("pasta", [
        "--config-net", "-T", "auto", "-U", "auto", "--debug",
        "--dns-forward", "169.254.1.1", "-t", "none", "-u", "none",
        "--no-map-gw", "--netns", NETNS, "--map-guest-addr",
        "169.254.1.2"]),
    # podman 5's rootless-netns for custom networks (netavark)
    "podman5-rootless-netns": ("pasta", [
        "--config-net", "--pid",
        "/run/user/1000/containers/networks/rootless-netns/"
        "rootless-netns-conn.pid", "--dns-forward", "169.254.1.1", "-t",
        "none", "-u", "none", "-T", "none", "-U", "none", "--no-map-gw",
        "--quiet", "--netns",
        "/run/user/1000/containers/networks/rootless-netns/rootless-netns",
        "--map-guest-addr", "169.254.1.2"]),
    # podman 4.x (libpod networking_pasta_linux.go, before --dns-forward
    # became the default): --dns none, no --map-guest-addr
    "podman4": ("pasta", [
        "--config-net", "-t", "8080-8080:80-80", "-u", "none", "-T",
        "none", "-U", "none", "--no-map-gw", "--dns", "none", "--quiet",
        "--netns", NETNS]),
    # libvirt 10/11 (qemu_passt.c qemuPasstBuildCommand()), vhost-user,
    # two addresses, <portForward> with address+dev, dev only, exclusion
    "libvirt-vhost-user": ("passt", [
        "--vhost-user", "--one-off", "--socket",
        "/run/libvirt/qemu/passt/1-vm1-net0.socket", "--pid",
        "/run/libvirt/qemu/passt/1-vm1-net0-passt.pid", "--mtu", "1500",
        "--interface", "eth0", "--log-file", "/tmp/vm1-passt.log",
        "--hostname", "vm1", "--fqdn", "vm1.example.test", "--address",
        "198.51.100.10", "--netmask", "24", "--address", "2001:db8::10",
        "--tcp-ports", "198.51.100.2%eth0/2222-2223:22-23", "--tcp-ports",
        "%eth0/8080", "--udp-ports", "5353:53,~5354", "--udp-ports",
        "all"]),
    # libvirt 9.0 (first passt support): --mac-addr with the guest's MAC
    "libvirt9": ("passt", [
        "--one-off", "--socket", "/run/libvirt/qemu/passt/vm1-net0.socket",
        "--mac-addr", "52:54:00:12:34:56", "--mtu", "1400", "--interface",
        "eth0", "--log-file", "/tmp/vm1-passt.log", "--address",
        "198.51.100.10", "--netmask", "24", "--tcp-ports",
        "198.51.100.2%eth0/2222:22"]),
    # qemu 10.1 -netdev passt (net/passt.c net_passt_decode_args()) with
    # every property that does not exclude another, in qemu's order
    "qemu10.1": ("passt", [
        "--quiet", "--mtu", "1500", "--address", "198.51.100.5",
        "--netmask", "255.255.255.0", "--mac-addr", "9a:55:9a:55:9a:01",
        "--gateway", "198.51.100.1", "--interface", "eth0", "--outbound",
        "198.51.100.2", "--outbound-if4", "eth0", "--outbound-if6", "eth0",
        "--dns", "198.51.100.53", "--fqdn", "vm.example.test",
        "--no-dhcp-dns", "--no-dhcp-search", "--map-host-loopback",
        "198.51.100.1", "--map-guest-addr", "198.51.100.4",
        "--dns-forward", "198.51.100.3", "--dns-host", "127.0.0.53",
        "--no-icmp", "--no-dhcp", "--no-ndp", "--no-dhcpv6", "--no-ra",
        "--freebind", "--ipv4-only", "--search",
        "a.example.test b.example.test", "--tcp-ports", "2222:22,8080",
        "--udp-ports", "5353:53,6000", "--debug", "--pid",
        "/tmp/passt-Q1W2E3.pid", "--fd", "3"]),
    # ... vhost-user=on, tcp=off, udp=off, ipv4=off, quiet=off
    "qemu10.1-vhost-user": ("passt", [
        "--vhost-user", "--no-tcp", "--no-udp", "--ipv6-only", "--pid",
        "/tmp/passt-Q1W2E3.pid", "--fd", "3"]),
    # crosvm/cuttlefish-style vhost-user launchers
    "vhost-user-launcher": ("passt", [
        "--vhost-user", "--foreground", "-s", "/tmp/vu-net.sock",
        "--repair-path", "none", "-4", "-a", "10.0.2.15", "-n", "24", "-g",
        "10.0.2.2", "--map-host-loopback", "10.0.2.2", "-D", "10.0.2.3"]),
    # sandboxing tools joining a namespace they made, staying root
    "sandbox-pasta": ("pasta", [
        "--foreground", "--quiet", "--config-net", "--no-copy-routes",
        "--userns", "/proc/1/ns/user", "--netns", "/proc/1/ns/net",
        "--map-host-loopback", "169.254.2.2", "--no-map-gw", "-t", "none",
        "-u", "none", "-T", "none", "-U", "none", "-I", "eth1",
        "--runas", "0:0"]),
    # sandboxing tools without a network for the sandbox, only forwards
    # between the loopbacks: nsjail's user_net without NAT (then PID)
    "nsjail-splice-only": ("pasta", [
        "-f", "-q", "-t", "none", "-u", "none", "-T", "8080", "-U", "5353",
        "--splice-only"]),
    # ... an agent sandbox (then "-- bwrap ...") and CI step runners
    # (-T with a bind address, or CONTAINER:HOST ports)
    "stado-splice-only": ("pasta", [
        "-q", "-f", "--runas", "0:0", "--splice-only", "-t", "none", "-u",
        "none", "-T", "3128", "-U", "none"]),
    "step-runner-splice-only": ("pasta", [
        "--splice-only", "-T", "127.0.0.1/5353", "-T", "127.0.0.1/8080",
        "-U", "127.0.0.1/5353", "-T", "22:40022"]),
}


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_callers_command_lines_parse(links, caller):
    name, args = CALLERS[caller]
    r = ferry(*args, "--help", argv0=str(links / name))
    assert r.returncode == 0, (caller, r.stderr)
    assert r.stderr == "", r.stderr
    assert r.stdout.startswith("Usage: ferry %s" %
                               ("ns" if name == "pasta" else "vm"))


@pytest.mark.parametrize("name,args,why", [
    ("pasta", ["--no-splice"], "splice()"),
    ("pasta", ["--nsrun-dir", "/run/netns"], "--netns"),
    ("pasta", ["--map-gw"], "--no-map-gw"),
])
def test_unsupported_pasta_options_named(links, name, args, why):
    """Options of pasta/passt whose effect ferry lacks fail by name with
    what is missing, even before --help: never run without the effect."""
    r = ferry(*args, "--help", argv0=str(links / name))
    one_error_line(r, args[0].split("=")[0], "not supported by ferry", why)


def test_stats_delay_parses(links):
    """pasta's and passt's --stats DELAY: accepted (it logs the counters
    every DELAY seconds, test_ns.py); a bad delay names the option."""
    for name, args in (("pasta", ["--stats", "1"]), ("passt", ["--stats=5"])):
        r = ferry(*args, "--help", argv0=str(links / name))
        assert r.returncode == 0, (name, r.stderr)
    one_error_line(ferry("ns", "--stats", "soon"), "--stats", "'soon'")


def test_mtu_zero_advertises_none(links):
    """pasta/passt -m 0: no MTU assignment (was refused as below 68)."""
    for name in ("pasta", "passt"):
        r = ferry("-m", "0", "--help", argv0=str(links / name))
        assert r.returncode == 0, r.stderr
    # 0 is not "below the IPv6 minimum": -6 with it stays valid
    assert ferry("ns", "--mtu", "0", "-6", "--help").returncode == 0
    one_error_line(ferry("ns", "-m", "67"), "-m", "'67'", "0: none")


def dhcp_offer(c):
    """(yiaddr, {option: bytes}) of the offer to a DISCOVER sent on the
    stream client c."""
    from vmguest import dhcp_discover, dhcp_parse
    c.send_frame(dhcp_discover())
    fr = c.wait_frame(lambda fr: dhcp_parse(fr) is not None, 5,
                      "DHCP offer")
    return dhcp_parse(fr)


def test_mtu_zero_dhcp_has_no_mtu_option(tmp_path):
    """passt -m 0 in a VM: the DHCP offer carries no MTU option (26);
    without -m it says 65520."""
    from vmguest import FerryVM, StreamClient
    for args, want in (([], 65520), (["-m", "0"], None)):
        d = tmp_path / f"m{len(args)}"
        d.mkdir()
        f = FerryVM(d, args)
        try:
            c = StreamClient(f.sock)
            _, opts = dhcp_offer(c)
            got = struct.unpack(">H", opts[26])[0] if 26 in opts else None
            assert got == want, (args, opts.get(26))
            c.close()
        finally:
            f.stop()


def test_mtu_zero_leaves_tap_mtu(ferry_ns):
    """pasta --config-net -m 0: the tap keeps the kernel's MTU (1500)
    instead of ferry's 65520."""
    mtus = []
    for args in ([], ["-m", "0"]):
        f = ferry_ns(args=args)
        link = f.guest("ip -o link show | grep -v ' lo:' | head -n1").stdout
        mtus.append(int(re.search(r" mtu (\d+)", link).group(1)))
        f.stop()
    assert mtus == [65520, 1500], mtus


def test_runas_in_the_sandbox(links, tmp_path):
    """Here ferry is root of a user namespace mapping only uid 0 (the
    sandbox; the caller's uid outside: the real root in CI, a user's uid
    in a rootless run). No other user can be changed to: --runas naming
    one fails at start, one line naming the option, before anything is
    opened; without --runas ferry stays uid 0 (nobody is not mapped) and
    says so at --debug; the current user (--runas 0:0, as tools pass it)
    is accepted. The real change of user: test_rootless.py, as root."""
    uid_map = open("/proc/self/uid_map").read().split()
    assert os.geteuid() == 0 and uid_map[0] == "0" and uid_map[2] == "1", \
        f"not the sandbox's user namespace: {uid_map}"
    me = f"{os.geteuid()}:{os.getegid()}"
    other = f"{os.geteuid() + 1}:{os.getegid() + 1}"
    sock = tmp_path / "s"
    r = ferry("-f", "-1", "-s", str(sock), "--runas", other,
              argv0=str(links / "passt"))
    one_error_line(r, "--runas", other, "not mapped in this user namespace")
    assert not sock.exists()
    p = subprocess.Popen([str(links / "passt"), "-f", "-d", "-s", str(sock)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    try:
        wait_for(lambda: sock.exists() or p.poll() is not None, 10,
                 "the socket")
        assert p.poll() is None, p.stderr.read()
        # uid 0 kept, but the sandbox sets no_new_privs (isolate.c), a
        # moment after the socket exists
        def confined():
            st = open(f"/proc/{p.pid}/status").read()
            return st if re.search(r"^NoNewPrivs:\s+1$", st, re.M) else None
        st = wait_for(confined, 10, "no_new_privs")
        assert re.search(r"^Uid:\s+0\s+0\s+0\s+0$", st, re.M), st
    finally:
        p.terminate()
        assert "staying uid 0: nobody" in p.communicate(timeout=10)[1]
    sock.unlink(missing_ok=True)
    # the same line with the current user starts (and -1 with a client
    # that leaves at once ends it)
    p = subprocess.Popen([str(links / "passt"), "-f", "-1", "-s", str(sock),
                          "--runas", me], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: sock.exists() or p.poll() is not None, 10,
                 "the socket")
        assert p.poll() is None, p.stderr.read()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(sock))
        s.close()
        assert p.wait(timeout=10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def proc_gone(pid):
    """The process is gone or a zombie (its parent may not reap it)."""
    try:
        return open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    except FileNotFoundError:
        return True


def run_as_qemu(argv, sock):
    """Run argv as qemu's net_passt_start_daemon() does: sock as fd 3,
    and wait for the exit (passt detaches once ready)."""
    n = sock.fileno()
    return subprocess.run(argv, close_fds=False,
                          preexec_fn=lambda: os.dup2(n, 3),
                          capture_output=True, text=True, timeout=30)


def test_qemu_netdev_passt_runs_ferry(links, tmp_path):
    """qemu 10.1's -netdev passt, exactly: qemu creates the pid file
    (empty), runs `passt OPTIONS --pid FILE --fd 3` with one end of a
    socketpair as fd 3 and no -f, waits for it to exit 0 (daemonized),
    reads the pid at once, speaks its stream protocol on the other end,
    and ends it with SIGTERM."""
    from vmguest import StreamClient
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pidf = tmp_path / "passt-Q1W2E3.pid"
    pidf.write_text("")
    argv = [str(links / "passt"), "--quiet", "--mtu", "1500", "--address",
            "198.51.100.10", "--netmask", "24", "--gateway", "198.51.100.1",
            "--dns", "198.51.100.53", "--search", "a.example.test",
            "--tcp-ports", "2222:22", "--pid", str(pidf), "--fd", "3"]
    r = run_as_qemu(argv, b)
    b.close()
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""	# --quiet
    pid = int(pidf.read_text())		# complete when passt returned
    try:
        assert not proc_gone(pid)
        yiaddr, opts = dhcp_offer(StreamClient(sock=a))
        assert yiaddr == "198.51.100.10"
        assert struct.unpack(">H", opts[26])[0] == 1500
        assert socket.inet_ntoa(opts[3]) == "198.51.100.1"
        assert socket.inet_ntoa(opts[6][:4]) == "198.51.100.53"
        os.kill(pid, signal.SIGTERM)		# net_passt_cleanup()
        wait_for(lambda: proc_gone(pid), 10, "passt to end on SIGTERM")
    finally:
        if not proc_gone(pid):
            os.kill(pid, signal.SIGKILL)
        a.close()


def test_qemu_netdev_passt_vhost_user_runs_ferry(links, tmp_path):
    """qemu 10.1's -netdev passt,vhost-user=on: the same daemonized start
    with --vhost-user; ferry answers the front-end on fd 3 and exits when
    qemu closes it."""
    from test_vhost_user import F_VERSION_1, GET_FEATURES, FrontEnd
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pidf = tmp_path / "passt-A1S2D3.pid"
    pidf.write_text("")
    argv = [str(links / "passt"), "--vhost-user", "--quiet", "--pid",
            str(pidf), "--fd", "3"]
    r = run_as_qemu(argv, b)
    b.close()
    assert r.returncode == 0, r.stderr
    pid = int(pidf.read_text())
    try:
        fe = FrontEnd.__new__(FrontEnd)
        fe.s = a
        assert fe.u64(GET_FEATURES) & F_VERSION_1
        fe.close()
        wait_for(lambda: proc_gone(pid), 10, "passt to exit with qemu")
    finally:
        if not proc_gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_version_and_capabilities_as_callers_run_them(links):
    """podman info runs `pasta --version` (exit 0, stdout shown as is);
    qemu and libvirt run `passt --print-capabilities` for vhost-user."""
    for name in ("pasta", "passt"):
        r = ferry("--version", argv0=str(links / name))
        assert r.returncode == 0 and r.stderr == ""
        assert re.fullmatch(r"ferry \S+\n", r.stdout), r.stdout
    r = ferry("--vhost-user", "--print-capabilities",
              argv0=str(links / "passt"))
    assert r.returncode == 0 and json.loads(r.stdout) == {"type": "net"}


def test_no_netns_quit(links, tmp_path):
    """pasta --netns PATH exits once PATH is deleted (podman relies on
    it), and keeps running with --no-netns-quit: both start, both paths
    are deleted; when the first has exited the second is still there."""
    from conftest import require, run
    require("unshare")
    started = []
    try:
        for extra in ([], ["--no-netns-quit"]):
            d = tmp_path / f"n{len(extra)}"
            d.mkdir()
            path, pidf = d / "netns", d / "pasta.pid"
            path.touch()
            run(["unshare", f"--net={path}", "true"])
            r = subprocess.run(
                [str(links / "pasta"), "--config-net", "-t", "none", "-u",
                 "none", "-T", "none", "-U", "none", "--quiet", "--pid",
                 str(pidf), *extra, "--netns", str(path)],
                capture_output=True, text=True, timeout=20,
                stdin=subprocess.DEVNULL)
            assert r.returncode == 0, r.stderr
            started.append((path, int(pidf.read_text())))
        for path, _ in started:
            run(["umount", "-l", str(path)])
            path.unlink()
        (_, quits), (_, stays) = started
        wait_for(lambda: proc_gone(quits), 10, "pasta to exit with its "
                 "namespace")
        assert not proc_gone(stays), "--no-netns-quit exited too"
        os.kill(stays, signal.SIGTERM)
        wait_for(lambda: proc_gone(stays), 10, "pasta to exit on SIGTERM")
    finally:
        for path, pid in started:
            if not proc_gone(pid):
                os.kill(pid, signal.SIGKILL)
            if path.exists():
                run(["umount", "-l", str(path)], check=False)
                path.unlink()
