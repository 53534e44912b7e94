"""make run's interactive path (test/demo.sh on a terminal): leaving the
shell after a failed command is not reported as a failure of ferry or of
make, and a ferry that cannot start the shell still fails."""
import os
import pty
import select
import time

from conftest import FERRY, ROOT, SLOW


def run_demo(keys, env_extra=None, timeout=30):
    """demo.sh under a pseudo-terminal; type keys once the shell is up.
    Returns (exit status, output)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update({"SHELL": "/bin/sh", "FERRY_BIN": FERRY,
                           **(env_extra or {})})
        os.execvp("bash", ["bash", str(ROOT / "test" / "demo.sh")])
    out = b""
    deadline = time.monotonic() + timeout * SLOW
    sent = False
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if not sent and b"'exit' leaves" in out:
            # typed ahead of the prompt: the tty holds it for the shell
            os.write(fd, keys)
            sent = True
    _, st = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(st), out.decode(errors="replace")


def test_shell_status_is_not_a_failure():
    rc, out = run_demo(b"exit 3\n")
    assert rc == 0, out
    assert "the shell exited with status 3" in out, out


def test_clean_exit_says_nothing_more():
    rc, out = run_demo(b"exit\n")
    assert rc == 0, out
    assert "exited with status" not in out, out


def test_ferry_that_cannot_start_still_fails():
    rc, out = run_demo(b"", env_extra={"FERRY_BIN": "/nonexistent/ferry"})
    assert rc != 0, out
