"""Guest checks shared by test_vm.py (stream backend) and
test_vhost_user.py (vhost-user backend): the same assertions on the same
guest script lines and host-side records (vmguest.host_side), whichever
backend carried them.

Each test module imports these functions, so pytest collects them there
and hands them that module's `guest` fixture (a vmguest.GuestSession).
"""


def test_guest_tcp_upload(guest):
    guest.boot1.check("TCP upload", guest.ferry)
    got = guest.srv.results.get("up", b"")
    assert got == guest.up, f"host got {len(got)} of {len(guest.up)} bytes"


def test_guest_tcp_download(guest):
    guest.boot1.check("TCP download", guest.ferry)


def test_guest_tcp_inbound_forwarded_port(guest):
    guest.boot1.check("TCP inbound served", guest.ferry)
    assert guest.srv.results.get("inbound") == "ok", \
        guest.srv.results.get("inbound")


def boot2_served(guest):
    """Boot 2 (after qemu went away) got an address and a ping through."""
    b = guest.boot2
    assert b.rc == 0, b.describe() + "\n" + b.out + b.err
    b.check("DHCPv4 lease", guest.ferry)
    b.check("ping IPv4 gateway", guest.ferry)
