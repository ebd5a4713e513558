"""Bash completion (completion/calltrace.bash) run for real: bash with
bash-completion sources it, COMP_WORDS/COMP_LINE/COMP_POINT are set as
readline would set them, _calltrace runs, COMPREPLY is checked -- against the
options of each command's --help and the functions of real fixture binaries
and record files."""
import os
import shlex
import subprocess
import time

from lib import CT, ROOT, ct, ct_commands, fixture, help_option_lines, record, tmp

COMPLETION = os.path.join(ROOT, "completion", "calltrace.bash")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"


def split_words(line):
    """COMP_WORDS as readline makes them: split at blanks outside quotes,
    and '=' and ':' (in COMP_WORDBREAKS) are words of their own."""
    words, w, quote = [], "", None
    for c in line:
        if quote:
            w += c
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
            w += c
        elif c == " ":
            if w:
                words.append(w)
            w = ""
        elif c in "=:":
            if w:
                words.append(w)
            words.append(c)
            w = ""
        else:
            w += c
    words.append(w)
    return words


def complete(line, cursor=None, cwd=None, script=COMPLETION):
    """COMPREPLY for LINE with the cursor at CURSOR (default: the end; a
    '|' in LINE marks it otherwise)."""
    if cursor is None and "|" in line:
        cursor = line.index("|")
        line = line.replace("|", "", 1)
    if cursor is None:
        cursor = len(line)
    words = split_words(line[:cursor])
    cword = len(words) - 1
    words = words[:-1] + split_words(line[cursor - len(words[-1]):])
    prog = f"""
source {BASH_COMPLETION}
source {shlex.quote(script)}
compopt() {{ :; }}  # readline's display options: no completion is running
COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})
COMP_CWORD={cword}
COMP_LINE={shlex.quote(line)}
COMP_POINT={cursor}
_calltrace
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog], capture_output=True, text=True,
                       cwd=cwd, timeout=60)
    assert p.returncode == 0 and not p.stderr, f"completing {line!r}: {p.stderr}"
    return [l for l in p.stdout.splitlines() if l]


def help_options(cmd):
    """Every option name an option line of 'calltrace CMD --help' defines."""
    return {name for _, names in help_option_lines(ct(cmd, "--help").stdout) for name in names}


def listed(binary, glob):
    """Function names 'calltrace list' prints for BINARY and GLOB."""
    p = ct("list", "--no-args", binary, glob)
    assert p.returncode == 0, p.stderr
    return {l.split(None, 4)[4] for l in p.stdout.splitlines() if l.startswith("  0x")}


def test_commands_and_options():
    assert complete(f"{CT} ") == ct_commands()
    assert complete(f"{CT} re") == [c for c in ct_commands() if c.startswith("re")]
    assert set(complete(f"{CT} -")) == {"--help", "--version"}
    for cmd in ct_commands():
        want = help_options(cmd) | {"--help"}
        got = complete(f"{CT} {cmd} -")
        assert set(got) == want and len(got) == len(want), f"{cmd}: completed {sorted(got)}, --help has {sorted(want)}"
    got = complete(f"{CT} record --max-")
    assert got and all(o.startswith("--max-") for o in got) and "--max-depth" in got, got
    # after an option's value, options again
    assert "--merge" in complete(f"{CT} replay --format json --m")


def test_option_values():
    assert complete(f"{CT} replay --format=") == ["text", "json", "yaml"]
    assert complete(f"{CT} replay -f j") == ["json"]
    assert complete(f"{CT} replay --color ") == ["auto", "always", "never"]
    assert {"chrome", "folded", "svg"} <= set(complete(f"{CT} dump --format "))
    assert set(complete(f"{CT} report -s ")) >= {"total", "self", "p99", "func"}
    assert complete(f"{CT} report --format=") == ["text", "json"]
    assert complete(f"{CT} replay --demangle ") == ["simple", "full", "no"]
    assert complete(f"{CT} record --otlp-protocol ") == ["http/protobuf", "http/json"]
    assert complete(f"{CT} record --exit ") == ["auto", "ret"]
    assert complete(f"{CT} list --exit ") == ["auto", "ret"]
    # values calltrace names no list of: nothing (not file names)
    assert complete(f"{CT} record --max-depth ") == []
    assert complete(f"{CT} record --otlp-endpoint ") == []


def test_record_files():
    d = tmp("completion-files")
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    for f in ("a.data", "b.data", "notes.txt"):
        open(os.path.join(d, f), "w").close()
    for line in (f"{CT} replay ", f"{CT} report -s self ", f"{CT} dump --svg ", f"{CT} info ",
                 f"{CT} record -o ", f"{CT} live --output=", f"{CT} report --diff "):
        assert sorted(complete(line, cwd=d)) == ["a.data", "b.data", "sub"], line
    assert sorted(complete(f"{CT} replay a", cwd=d)) == ["a.data"]
    # dump's -o is any output file, not a record
    assert sorted(complete(f"{CT} dump -o ", cwd=d)) == ["a.data", "b.data", "notes.txt", "sub"]


def test_function_names_from_the_program():
    c_core, go_args = fixture("c_core"), fixture("go_args")
    # after --, before it, -F/-N/-A/-R/--root alike
    want = sorted(listed(c_core, "c_*"))
    assert "c_fib" in want
    assert sorted(complete(f"{CT} record -F c_| -- {c_core} fib 3")) == want
    assert sorted(complete(f"{CT} record -F c_| -o x.data -- {c_core} fib 3")) == want
    for opt in ("-N", "--exclude", "-A", "-R", "--root", "--root="):
        sep = "" if opt.endswith("=") else " "
        assert sorted(complete(f"{CT} live {opt}{sep}c_| {c_core}")) == want, opt
    # Go names the shell would take apart, typed inside quotes (the cursor
    # before the closing one) or escaped
    got = complete(f"{CT} record -F 'main.(*P|' -- {go_args}")
    assert got == ["main.(*Point).Move"], got
    got = complete(f"{CT} record -F main.\\(\\*P| -- {go_args}")
    assert got == ["main.(*Point).Move"], got
    # names with [ come as globs that match them (Go generics)
    got = complete(f"{CT} record -A main.A| -- {go_args}")
    globs = {n.replace("[", "\\[") for n in listed(go_args, "main.A*")}
    assert set(got) == globs and "main.Add" in got and "main.Apply\\[go.shape.int_0]" in got, got
    for glob in got:
        assert len(listed(go_args, glob)) == 1, glob
    # list: the binary is its first argument
    assert sorted(complete(f"{CT} list {c_core} c_")) == want
    assert sorted(complete(f"{CT} list -v {c_core} c_fib c_")) == want
    # no program on the line: nothing to offer
    assert complete(f"{CT} record -F c_") == []


def test_function_names_from_a_pid():
    c_core = fixture("c_core")
    proc = subprocess.Popen([c_core, "wait"], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):  # until it has exec'd
            if os.path.realpath(f"/proc/{proc.pid}/exe") == os.path.realpath(c_core):
                break
            time.sleep(0.01)
        want = sorted(listed(c_core, "c_*"))
        assert sorted(complete(f"{CT} record -p {proc.pid} -F c_")) == want
        assert sorted(complete(f"{CT} record --pid={proc.pid} --root c_")) == want
    finally:
        proc.kill()
        proc.wait()


def test_function_names_from_the_record_file():
    _, data = record([fixture("c_core"), "fib", "4"], out=tmp("completion.data"))
    assert complete(f"{CT} replay -F c_f| {data}") == ["c_fib"]
    assert complete(f"{CT} report {data} --histogram c_f") == ["c_fib"]
    d = os.path.dirname(data)
    os.replace(data, os.path.join(d, "calltrace.data"))
    assert complete(f"{CT} dump -N c_f", cwd=d) == ["c_fib"]


def test_the_program_and_its_arguments():
    # the traced program's name completes like a command, its arguments by
    # its own completion (here: none, files)
    assert "echo" in complete(f"{CT} record -F x -- ech")
    assert "echo" in complete(f"{CT} record ech")
    d = tmp("completion-args")
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "input.txt"), "w").close()
    assert complete(f"{CT} record -- {fixture('c_core')} inp", cwd=d) == ["input.txt"]
