"""make deb: the Debian package built by debhelper from this tree, installed
with apt as an operator would, then used from /usr/bin (record + replay of a
C fixture and of a WebAssembly one, man calltrace-record, bash completion
loaded by bash-completion), then purged.  The machine is left as it was found:
the package is purged even when a check fails, no other package is added or
removed, and one such test runs at a time on the machine (others' test runs
would install and purge the same package)."""
import fcntl
import glob
import json
import os
import re
import shutil

from lib import ROOT, ct, fixture, help_option_lines, run, tmp
from test_completion import complete

INSTALLED = "/usr/bin/calltrace"
APT_ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
LOCK = os.path.join("/run/lock" if os.path.isdir("/run/lock") else "/tmp", "calltrace-deb-test.lock")


def control_field(name):
    """A field of debian/control's source paragraph, as a list of package
    names (versions and comments left out)."""
    with open(os.path.join(ROOT, "debian", "control")) as f:
        text = "".join(l for l in f if not l.startswith("#"))
    m = re.search(rf"^{name}:(.*(?:\n[ \t].*)*)", text, re.M)
    assert m, f"debian/control has no {name}"
    return [re.sub(r"\s*\(.*\)", "", d).strip() for d in m.group(1).split(",") if d.strip()]


def owner(path):
    """The Debian package that installed PATH (/bin/x may be /usr/bin/x's)."""
    for candidate in (path, "/usr" + path):
        p = run(["dpkg-query", "-S", candidate])
        if p.returncode == 0:
            return p.stdout.split(":", 1)[0]
    assert False, f"no package owns {path}: {p.stderr.strip()}"


def test_build_depends_cover_what_the_build_uses():
    """Every library the link names (-lX) and every tool the build runs
    comes from a package in Build-Depends (or build-essential's libc6-dev):
    a library another helper adds to LDLIBS without a Build-Depends fails
    here rather than on a clean build machine."""
    deps = set(control_field("Build-Depends"))
    db = run(["make", "-s", "-C", ROOT, "-p", "-n", "all"], timeout=120).stdout
    ldlibs = re.search(r"^LDLIBS :?= (.*)$", db, re.M).group(1).split()
    assert "-lbpf" in ldlibs, ldlibs
    for flag in ldlibs:
        lib = flag[2:]
        for ext in ("so", "a"):
            path = run(["gcc", f"-print-file-name=lib{lib}.{ext}"]).stdout.strip()
            if os.path.isabs(path):
                break
        pkg = owner(os.path.normpath(path))
        assert pkg in deps or pkg == "libc6-dev", f"{flag} comes from {pkg}, not in Build-Depends {sorted(deps)}"
    # clang (BPF and the wasm recorder), wasm-ld, bpftool (skeleton,
    # vmlinux.h), help2man (man pages)
    for tool in ("clang", "wasm-ld", "bpftool", "help2man"):
        path = shutil.which(tool)
        assert path, f"{tool} is not installed"
        pkg = owner(path)
        assert pkg in deps, f"{tool} comes from {pkg}, not in Build-Depends {sorted(deps)}"


def installed_packages():
    return run(["dpkg-query", "-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\n"]).stdout


def apt(*args):
    return run(["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300", *args], timeout=600, env=APT_ENV)


def test_deb_installs_and_works():
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # other worktrees' runs of this test
        assert not os.path.exists(INSTALLED), f"{INSTALLED} exists: a calltrace package is already installed"
        p = run(["make", "-s", "-C", ROOT, "deb"], timeout=1800)
        assert p.returncode == 0, f"make deb failed: {p.stdout[-3000:]} {p.stderr[-3000:]}"
        debs = glob.glob(os.path.join(ROOT, "build", "calltrace_*_amd64.deb"))
        assert len(debs) == 1, debs
        deb = debs[0]
        assert not os.path.exists(os.path.join(ROOT, "build", "deb")), "make deb left build/deb"
        fields = run(["dpkg-deb", "-f", deb, "Version", "Depends", "Recommends"]).stdout
        assert f"Version: {ct('--version').stdout.split()[1]}\n" in fields, fields
        # Depends computed from the binary: the libraries it links, versioned
        for lib in ("libbpf1", "libc6", "libdw1", "libelf1", "libzydis", "zlib1g"):
            assert re.search(rf"Depends: .*\b{lib}[\w.]* \(>= ", fields), f"{lib} not in {fields}"
        assert "${" not in fields and "Recommends: nodejs" in fields, fields

        before = installed_packages()
        try:
            p = apt("install", "--no-install-recommends", deb)
            assert p.returncode == 0, f"apt-get install {deb}: {p.stdout[-2000:]} {p.stderr[-2000:]}"
            smoke_test()
        finally:
            p = apt("purge", "calltrace")
            assert p.returncode == 0, f"apt-get purge calltrace: {p.stderr[-2000:]}"
        assert not os.path.exists(INSTALLED)
        assert not os.path.exists("/usr/share/bash-completion/completions/calltrace")
        assert installed_packages() == before, "installing and purging the package changed other packages"


def smoke_test():
    assert run([INSTALLED, "--version"]).stdout == ct("--version").stdout
    # record + replay of a C program
    data = tmp("deb.data")
    p = run([INSTALLED, "record", "-o", data, "--", fixture("c_core"), "fib", "5"])
    assert p.returncode == 0, p.stderr
    calls = [json.loads(l) for l in run([INSTALLED, "replay", "--format=json", data]).stdout.splitlines()]
    fib = [c for c in calls if c.get("func") == "c_fib"]
    assert len(fib) == 15 and all(c["status"] == "returned" for c in fib), calls  # fib(5): 15 calls
    # a WebAssembly module: the runner and recorder come with the binary
    wdata = tmp("deb-wasm.data")
    p = run([INSTALLED, "record", "-o", wdata, "-F", "fib", "--", fixture("wasi_core.wasm")])
    assert p.returncode == 0, p.stderr
    wcalls = [json.loads(l) for l in run([INSTALLED, "replay", "--format=json", wdata]).stdout.splitlines()]
    assert any(c.get("func") == "fib" for c in wcalls), wcalls[:5]
    # man finds every page; calltrace-record shows the options record --help shows
    env = dict(os.environ, LC_ALL="C", MANPAGER="cat", MANWIDTH="400")
    page = run(["man", "--nh", "--nj", "calltrace-record"], env=env)
    assert page.returncode == 0, page.stderr
    for _, names in help_option_lines(run([INSTALLED, "record", "--help"]).stdout):
        for name in names:
            assert name in page.stdout, f"man calltrace-record lacks {name}"
    assert run(["man", "-w", "calltrace"]).stdout.strip() == "/usr/share/man/man1/calltrace.1.gz"
    # bash-completion loads the installed completion by the command's name,
    # and it completes commands and functions with the installed calltrace
    p = run(["bash", "--norc", "--noprofile", "-c",
             "source /usr/share/bash-completion/bash_completion && _completion_loader calltrace; complete -p calltrace"])
    assert p.stdout.strip() == "complete -F _calltrace calltrace", (p.stdout, p.stderr)
    script = "/usr/share/bash-completion/completions/calltrace"
    assert complete(f"{INSTALLED} rep", script=script) == ["replay", "report"]
    assert complete(f"{INSTALLED} record -F c_f| -- {fixture('c_core')}", script=script) == ["c_fib"]
