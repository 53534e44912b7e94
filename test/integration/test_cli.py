"""Command-line behaviour: bad input gets one clear line and exit 1."""
import subprocess

from conftest import FERRY


def ferry(*args, timeout=10):
    return subprocess.run([FERRY, *args], capture_output=True, text=True,
                          timeout=timeout)


def test_version():
    r = ferry("--version")
    assert r.returncode == 0
    assert r.stdout.startswith("ferry ")


def test_no_mode_is_an_error():
    r = ferry("bogus")
    assert r.returncode == 1
    assert "bogus" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_unknown_option_named():
    r = ferry("ns", "--no-such-option")
    assert r.returncode == 1
    assert "--no-such-option" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
