"""The seccomp allow-list (seccomp.c) in each mode and link: namespace
mode, VM mode on a stream socket, vhost-user.

Once set up, ferry runs with a filter (/proc/PID/status: Seccomp 2;
NoNewPrivs is priv.c's, 0 here where the sandbox's root keeps root),
after serving the link (a guest's frames, a stream client
or a vhost-user front-end), and the test build's hook (SIGUSR2: ferry
calls execve(), which no list allows) kills it with SIGSYS: the filter
is in kill mode, as for the whole suite. The other integration tests
exercise the lists themselves: any call a mode makes that its list
lacks kills ferry there.
"""
import signal

import pytest

from conftest import GW4, wait_for
from test_rootless import status
from test_vhost_user import GET_FEATURES, FrontEnd
from vmguest import StreamClient, arp_request, ferry_vms, is_arp_reply


def filtered(f):
    """Wait for ferry f's filter (its start-up line), then check it."""
    wait_for(lambda: "seccomp:" in f.output() or f.proc.poll() is not None,
             10, "the seccomp filter")
    assert "system calls allowed" in f.output(), f.output()
    st = status(f.proc.pid)
    assert st["Seccomp"] == ["2"], st


def killed_by_sigsys(f):
    """SIGUSR2 (the test hook): ferry must die of SIGSYS."""
    f.proc.send_signal(signal.SIGUSR2)
    rc = f.wait_exit(10) if hasattr(f, "wait_exit") else f.proc.wait(20)
    assert rc == -signal.SIGSYS, (rc, f.output())
    assert "calling execve()" in f.output(), f.output()


def test_ns_filtered_and_killed(ferry_ns):
    f = ferry_ns(args=["-t", "none", "-u", "none"])
    filtered(f)
    f.guest(["ping", "-c1", "-W5", GW4])	# the link served, filter on
    killed_by_sigsys(f)


@pytest.fixture
def vm(tmp_path):
    with ferry_vms(tmp_path, "vm") as start:
        yield start


def test_vm_stream_filtered_and_killed(vm):
    f = vm(["-t", "none", "-u", "none"])
    filtered(f)
    cl = StreamClient(f.sock)
    cl.send_frame(arp_request(GW4))
    cl.wait_frame(is_arp_reply(GW4), what="ARP reply for the gateway")
    killed_by_sigsys(f)


def test_vhost_user_filtered_and_killed(vm):
    f = vm(["--vhost-user", "-t", "none", "-u", "none"])
    filtered(f)
    fe = FrontEnd(f.sock)
    assert fe.u64(GET_FEATURES)
    killed_by_sigsys(f)


def test_sandbox_off_no_filter(ferry_ns):
    """--sandbox=off (for debugging): no filter at all."""
    f = ferry_ns(args=["-t", "none", "-u", "none", "--sandbox=off"])
    f.guest(["ping", "-c1", "-W5", GW4])
    assert "seccomp:" not in f.output(), f.output()
    assert status(f.proc.pid)["Seccomp"] == ["0"]
