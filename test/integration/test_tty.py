"""ferry ns under a terminal (issue 25 item 3): an interactive shell on a
pseudo-terminal (python's pty module) runs ferry in the foreground and
in the background. In the foreground ferry hands the terminal to the
command and takes it back; in the background (ferry ns -- cmd & wait)
it must leave the terminal to the shell, which then still reads its
next command.
"""
import fcntl
import os
import pty
import select
import subprocess
import termios
import time

import pytest

from conftest import FERRY, SLOW, require
from tcp_util import PY

# dash: a shell that does not take its terminal back by itself (bash
# does, after its wait), as issue 25's shell
SHELL_ARGV = ["dash", "-i"]
FG_PY = "import os\nprint('FG', os.tcgetpgrp(0) == os.getpgrp())\n"


class Shell:
    """An interactive shell on a new pty, the session's controlling
    terminal; output read with a deadline."""

    def __init__(self):
        require("dash")
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            SHELL_ARGV, stdin=slave,
            stdout=slave, stderr=slave, start_new_session=True,
            env={**os.environ, "PS1": "$ ", "TERM": "dumb"},
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.out = b""

    def send(self, line):
        os.write(self.master, line.encode() + b"\n")

    def expect(self, text, timeout=30):
        deadline = time.monotonic() + timeout * SLOW
        while text.encode() not in self.out:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise AssertionError(f"no {text!r} (shell "
                                     f"{self.proc.poll()}):\n"
                                     + self.out.decode(errors="replace"))
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                try:
                    self.out += os.read(self.master, 65536)
                except OSError:
                    pass
        return self.out

    def fg_pgrp(self):
        return os.tcgetpgrp(self.master)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


@pytest.fixture
def fg(tmp_path):
    """A command printing "FG True" when it is in the terminal's
    foreground process group."""
    p = tmp_path / "fg.py"
    p.write_text(FG_PY)
    return f'"{PY}" "{p}"'


@pytest.fixture
def shell():
    s = Shell()
    s.send("echo READY")
    s.expect("READY\r\n")
    yield s
    s.close()


def test_tty_foreground_command_gets_terminal(shell, fg):
    """In the foreground, the command runs in the terminal's foreground
    process group; the shell gets its terminal back."""
    shell.send(f'"{FERRY}" ns -q -- sh -c \'{fg}; exit 3\'; echo RC=$?')
    out = shell.expect("RC=3")
    assert b"FG True" in out, out
    shell.send("echo ALIVE")
    shell.expect("ALIVE\r\n")
    assert shell.fg_pgrp() == shell.proc.pid


def test_tty_background_leaves_terminal(shell, fg):
    """ferry ns -- cmd & wait: ferry in a background process group
    neither hands the terminal on nor takes it when the command exits;
    the shell keeps it and reads its next command."""
    shell.send(f'"{FERRY}" ns -q -- sh -c \'{fg}; exit 4\' & wait $!; '
               'echo RC=$?')
    out = shell.expect("RC=4")
    assert b"FG False" in out, out
    assert shell.fg_pgrp() == shell.proc.pid
    shell.send("echo ALIVE")
    shell.expect("ALIVE\r\n")
    assert shell.proc.poll() is None
