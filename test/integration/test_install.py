"""Packaging as a distribution or a new user meets it: make install into a
fresh DESTDIR puts every file where the Makefile says, the binary is
stripped and runs, make uninstall takes all of it away again, and a tree
from git archive (no .git) builds and reports the VERSION file's version.
"""
import os
import shutil
import subprocess
import tempfile

from conftest import ROOT

PREFIX = "/usr/local"
FILES = ["bin/ferry", "bin/pasta.ferry", "bin/passt.ferry",
         "share/man/man1/ferry.1",
         "share/bash-completion/completions/ferry",
         "share/bash-completion/completions/pasta",
         "share/bash-completion/completions/passt",
         "lib/systemd/system/ferry.service",
         "share/doc/ferry/LICENSE", "share/doc/ferry/NEWS.md"]


def make(*args, cwd=ROOT, timeout=300):
    """Run make with ARGS in CWD; fail with its output if it fails."""
    r = subprocess.run(["make", "-s", *args], cwd=cwd, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, f"make {' '.join(args)}: {r.stdout}{r.stderr}"
    return r


def has_debug_info(path):
    """True if the ELF file at PATH still has DWARF sections."""
    out = subprocess.run(["readelf", "-S", "-W", path], capture_output=True,
                         text=True, check=True).stdout
    return ".debug_info" in out


def test_install_uninstall_round_trip(tmp_path):
    dest = tmp_path / "dest"
    make("install", f"DESTDIR={dest}", f"PREFIX={PREFIX}")
    root = dest / PREFIX.lstrip("/")
    for f in FILES:
        assert os.path.lexists(root / f), f"make install left out {f}"
    ferry = root / "bin" / "ferry"
    assert not has_debug_info(str(ferry)), "installed binary not stripped"
    assert has_debug_info(str(ROOT / "ferry")), "the build lost -g"
    r = subprocess.run([str(root / "bin" / "pasta.ferry"), "--version"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0 and r.stdout.startswith("ferry "), r
    unit = (root / "lib/systemd/system/ferry.service").read_text()
    assert f"ExecStart={PREFIX}/bin/ferry vm " in unit and "@" not in unit
    r = subprocess.run(["bash", "-n", str(root / FILES[4])],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    make("uninstall", f"DESTDIR={dest}", f"PREFIX={PREFIX}")
    left = [str(p.relative_to(dest)) for p in dest.rglob("*")
            if not p.is_dir()]
    assert left == [], f"make uninstall left {left}"


def test_install_links_round_trip(tmp_path):
    """make install-links: pasta, passt, pesto and passt-repair on PATH
    are links to ferry (libvirt, qemu, rootlesskit, KubeVirt run them by
    those names); make uninstall removes them and leaves nothing."""
    dest = tmp_path / "dest"
    make("install-links", f"DESTDIR={dest}", f"PREFIX={PREFIX}")
    bindir = dest / PREFIX.lstrip("/") / "bin"
    for name in ("pasta", "passt", "pesto", "passt-repair"):
        assert os.readlink(bindir / name) == "ferry", name
    r = subprocess.run([str(bindir / "passt"), "--version"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0 and r.stdout.startswith("ferry "), r
    make("uninstall", f"DESTDIR={dest}", f"PREFIX={PREFIX}")
    left = [str(p.relative_to(dest)) for p in dest.rglob("*")
            if not p.is_dir()]
    assert left == [], f"make uninstall left {left}"


def test_install_podman_drop_in_read_by_podman(tmp_path):
    """make install-podman: the pasta link in ferry's libexec directory and a
    containers.conf drop-in that podman itself reads (CONTAINERS_CONF: that
    file alone), with ferry's directory first and podman's own helpers
    (netavark) still found; the same file with only ferry's directory
    makes podman fail to find netavark, so the check can fail."""
    assert shutil.which("podman"), "needs podman (apt-get install podman)"
    dest = tmp_path / "dest"
    make("install-podman", f"DESTDIR={dest}", f"PREFIX={PREFIX}")
    link = dest / PREFIX.lstrip("/") / "libexec/ferry/pasta"
    pesto = dest / PREFIX.lstrip("/") / "libexec/ferry/pesto"
    assert os.readlink(pesto) == f"{PREFIX}/bin/ferry"     # podman's pesto
    assert os.readlink(link) == f"{PREFIX}/bin/ferry"
    conf = dest / "etc/containers/containers.conf.d/50-ferry.conf"
    text = conf.read_text()
    assert f'helper_binaries_dir = ["{PREFIX}/libexec/ferry", ' in text, text

    state = tempfile.mkdtemp(prefix="ferry-pi")	# podman: runroot <= 50
    os.chmod(state, 0o700)

    def backend(path, fmt="{{.Host.NetworkBackend}}"):
        env = dict(os.environ, CONTAINERS_CONF=str(path),
                   XDG_RUNTIME_DIR=state)
        return subprocess.run(["podman", "--root", f"{state}/root",
                               "--runroot", f"{state}/run",
                               "--storage-driver", "vfs", "info", "--format",
                               fmt], env=env,
                              capture_output=True, text=True, timeout=120)
    try:
        r = backend(conf)
        assert r.returncode == 0 and r.stdout.strip() == "netavark", r
        # podman 4.3 (no pasta mode) runs ferry as its slirp4netns
        slirp = dest / PREFIX.lstrip("/") / "libexec/ferry/slirp4netns"
        assert os.readlink(slirp) == f"{PREFIX}/bin/ferry"
        r = backend(conf, "{{.Host.Slirp4NetNS.Executable}}")
        assert r.stdout.strip() == f"{PREFIX}/libexec/ferry/slirp4netns", r
        only = tmp_path / "only-ferry.conf"
        only.write_text(f'[engine]\nhelper_binaries_dir = ["{PREFIX}/libexec/ferry"]\n')
        r = backend(only)
        assert r.returncode != 0 and "netavark" in r.stderr, r
    finally:
        shutil.rmtree(state, ignore_errors=True)
    make("uninstall", f"DESTDIR={dest}", f"PREFIX={PREFIX}")
    assert not conf.exists() and not os.path.lexists(link)
    assert not os.path.lexists(slirp)
    assert not os.path.lexists(pesto)


def test_install_debug_keeps_debug_info(tmp_path):
    dest = tmp_path / "dest"
    make("install-debug", f"DESTDIR={dest}", f"PREFIX={PREFIX}")
    assert has_debug_info(str(dest / PREFIX.lstrip("/") / "bin" / "ferry"))


def test_bash_completion_offers_options():
    """The completion asks the binary for its options: the mode's long
    options starting with what was typed come back."""
    script = (f"source {ROOT}/contrib/ferry.bash; "
              f"COMP_WORDS=({ROOT}/ferry vm --so); COMP_CWORD=2; _ferry; "
              "printf '%s\\n' \"${COMPREPLY[@]}\"")
    out = subprocess.run(["bash", "-c", script], capture_output=True,
                         text=True, timeout=20).stdout.split()
    assert "--socket" in out and "--socket-path" in out, out


def test_git_archive_tree_reports_version_file(tmp_path):
    """A tarball made by git archive has no .git: the version printed is
    the VERSION file's, not 'unknown'."""
    assert shutil.which("git"), "needs git (apt-get install git)"
    tree = tmp_path / "tree"
    tree.mkdir()
    arch = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(ROOT),
                           "archive", "--format=tar", "HEAD"],
                          capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=arch, check=True)
    assert not (tree / ".git").exists()
    make("ferry", cwd=tree, timeout=600)
    want = (tree / "VERSION").read_text().strip()
    r = subprocess.run([str(tree / "ferry"), "--version"],
                       capture_output=True, text=True, timeout=10)
    assert r.stdout.strip() == f"ferry {want}", r.stdout
