"""Installing calltrace like a tool: man pages generated from each command's
--help (they must show every option and render without warnings), and make
install / make uninstall honouring PREFIX and DESTDIR."""
import os
import re

from lib import HELP_OPTION, ROOT, ct, ct_commands, help_option_lines, run, tmp


def make(*args):
    p = run(["make", "-s", "-C", ROOT, *args], timeout=300)
    assert p.returncode == 0, f"make {' '.join(args)} failed: {p.stderr.strip()[-2000:]}"
    return p


def render(page):
    """The page as man shows it, one paragraph per line (no hyphenation,
    wide lines), and what groff warned about."""
    p = run(["man", "--warnings=w", "--nh", "--nj", "-l", page],
            env=dict(os.environ, LC_ALL="C", MANWIDTH="400", MANPAGER="cat", MAN_KEEP_FORMATTING=""))
    assert p.returncode == 0, f"man -l {page}: {p.stderr}"
    strict = run(["groff", "-man", "-ww", "-z", page])
    return p.stdout, (p.stderr + strict.stderr).strip()


def tp_tags(page):
    """The tags of the page's .TP paragraphs, as plain text."""
    with open(page) as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines[:-1]):
        if line == ".TP":
            yield re.sub(r"\\f[BIRP]", "", lines[i + 1]).replace("\\-", "-")


def test_man_pages_show_every_option():
    make("man")
    mandir = os.path.join(ROOT, "build", "man")
    pages = {"calltrace": ct("--help").stdout}
    for c in ct_commands():
        pages[f"calltrace-{c}"] = ct(c, "--help").stdout
    assert sorted(f for f in os.listdir(mandir) if f.endswith(".1")) == sorted(f"{n}.1" for n in pages)
    for name, help_text in pages.items():
        text, warnings = render(os.path.join(mandir, f"{name}.1"))
        assert not warnings, f"{name}.1 renders with warnings: {warnings}"
        head = name.upper() + "(1)"
        assert text.startswith(head), f"{name}.1 title: {text[:80]!r}"
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
            assert f"\n{section}\n" in text, f"{name}.1 has no {section} section"
        missing = set(HELP_OPTION.findall(help_text)) - set(HELP_OPTION.findall(text))
        assert not missing, f"{name}.1 lacks options its --help shows: {sorted(missing)}"
        # Each option line of --help is a tagged paragraph (.TP) of its own,
        # not run into the text of another (help2man needs two spaces before
        # the description).
        tags = set(tp_tags(os.path.join(mandir, f"{name}.1")))
        for spec, opts in help_option_lines(help_text):
            assert spec in tags, f"{name}.1: '{spec}' is not an option paragraph of its own: {sorted(tags)}"
        # SEE ALSO names every other page.
        see = text.split("\nSEE ALSO\n", 1)[1]
        for other in pages:
            if other != name:
                assert f"{other}(1)" in see, f"{name}.1 SEE ALSO lacks {other}(1)"


def test_record_page_shows_the_synopsis_and_exit_status():
    text, _ = render(os.path.join(ROOT, "build", "man", "calltrace-record.1"))
    synopsis = text.split("\nSYNOPSIS\n", 1)[1].split("\n\n", 1)[0]
    assert "calltrace record [options] -p PID" in synopsis, synopsis
    status = text.split("\nEXIT STATUS\n", 1)[1].split("\nENVIRONMENT\n", 1)[0]
    for code in ("0", "1", "2"):
        assert re.search(rf"^       {code} ", status, re.M), f"exit status {code} not described: {status}"


def installed_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def expected_files(prefix):
    p = prefix.strip("/")
    files = [f"{p}/bin/calltrace", f"{p}/share/man/man1/calltrace.1",
             f"{p}/share/bash-completion/completions/calltrace", f"{p}/share/doc/calltrace/README.md"]
    files += [f"{p}/share/man/man1/calltrace-{c}.1" for c in ct_commands()]
    files += [f"{p}/share/doc/calltrace/docs/{d}" for d in os.listdir(os.path.join(ROOT, "docs"))
              if d.endswith(".md")]
    return sorted(files)


def test_make_install_and_uninstall():
    for prefix in (None, "/opt/calltrace"):
        dest = tmp(f"destdir-{prefix is None}")
        args = [f"DESTDIR={dest}"] + ([f"PREFIX={prefix}"] if prefix else [])
        make("install", *args)
        want = expected_files(prefix or "/usr/local")
        assert installed_files(dest) == want, f"installed {installed_files(dest)}, expected {want}"
        share = os.path.join(dest, (prefix or "/usr/local").strip("/"), "share")
        binary = os.path.join(share, "..", "bin", "calltrace")
        assert os.stat(binary).st_mode & 0o777 == 0o755
        assert run([binary, "--version"]).stdout == ct("--version").stdout
        for f in want:
            if not f.endswith("/bin/calltrace"):
                assert os.stat(os.path.join(dest, f)).st_mode & 0o777 == 0o644, f
        # man finds the pages by name under the prefix
        p = run(["man", "-M", os.path.join(share, "man"), "calltrace-record"],
                env=dict(os.environ, LC_ALL="C", MANPAGER="cat", MANWIDTH="200"))
        assert p.returncode == 0 and "--max-depth" in p.stdout, p.stderr
        # bash-completion loads the completion by the command's name from
        # the prefix's share directory
        p = run(["bash", "--norc", "--noprofile", "-c",
                 "source /usr/share/bash-completion/bash_completion && "
                 "_completion_loader calltrace; complete -p calltrace"],
                env=dict(os.environ, XDG_DATA_DIRS=share))
        assert p.stdout.strip() == "complete -F _calltrace calltrace", (p.stdout, p.stderr)
        make("uninstall", *args)
        left = installed_files(dest)
        assert not left, f"make uninstall left {left}"
        assert not os.path.exists(os.path.join(dest, (prefix or "/usr/local").strip("/"), "share/doc/calltrace"))
