"""What runs inside exit() (tests/fixtures/c/traps/atexit.c): an atexit
handler and a destructor, called by the call of exit the program made,
nest under that call, as uftrace shows them; the call never returns and
ends with the process (*exited*).  It ended at the PLT stub's jump into
libc, unobserved ("end not observed: it returns where no probe is", of a
call that does not return at all), and the handlers followed it as the
caller's next calls."""
from lib import fixture, record, replay_json, tmp, trees

OUT = "main 7\nbye 22\ndtor 28\n"


def test_handlers_nest_under_exit():
    for mode in ("auto", "ret"):
        p, out = record([fixture("traps_atexit"), "3"], f"--exit={mode}", "-F", "*", "-F", "*@plt",
                        out=tmp(f"atexit-{mode}.data"), check=False)
        assert (p.returncode, p.stdout) == (3, OUT), (mode, p.returncode, p.stdout, p.stderr)
        calls = replay_json(out)
        [root] = [r for roots in trees(calls).values() for r in roots]
        main = next(n for n in root.walk() if n.func == "main")
        [ex] = [n for n in main.children if n.func == "exit@plt"]
        assert [c.func for c in ex.children] == ["bye", "dtor", "__cxa_finalize@plt"], (mode, ex.shape())
        assert ex.children[0].shape() == "bye(work,printf@plt)", (mode, ex.shape())
        assert ex.call["status"] == "exited", (mode, ex.call)
        # nothing of main's after exit was called: the handlers are not main's
        assert main.children[-1] is ex, (mode, main.shape())


def test_handlers_after_main_returned():
    # main returned: exit runs in libc's start code, untraced; the handlers
    # are calls of their own, after main (as they were)
    p, out = record([fixture("traps_atexit")], "-F", "*", "-F", "*@plt", out=tmp("atexit-ret0.data"))
    assert p.stdout == OUT.replace("main 7", "main 4"), p.stdout
    calls = replay_json(out)
    roots = [r for rs in trees(calls).values() for r in rs]
    main = next(n for r in roots for n in r.walk() if n.func == "main")
    assert main.call["status"] == "returned", main.call
    assert "exit@plt" not in {n.func for r in roots for n in r.walk()}
