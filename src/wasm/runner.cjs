// calltrace's runner for WebAssembly modules, embedded in calltrace and
// written to a private directory at run time (src/wasm/runner.c).
//
//   node runner.cjs CONFIG.json MODULE ARGV0 [ARGS...]   traced (by calltrace)
//   node runner.cjs - MODULE ARGV0 [ARGS...]             plain, the same run untraced
//
// WASI modules run on node's own `node:wasi`; Go GOOS=js modules on the
// wasm_exec.js of the Go installation (its node glue of Go 1.19 no longer
// runs on node 20, so this file does what that glue did).  Arguments,
// environment, standard streams and the exit status pass through.  When
// traced, the module's hook imports ("calltrace") are the exports of the
// recorder module, so a hook is a wasm-to-wasm call; the recorder hands
// batches of events to flush(), which writes them to calltrace's pipe.
'use strict';
const fs = require('fs');

const [cfgPath, modPath, argv0, ...args] = process.argv.slice(2);
const traced = cfgPath !== '-';
const cfg = traced ? JSON.parse(fs.readFileSync(cfgPath, 'utf8')) : {};

// The program runs on this thread alone; node's other threads so far are
// V8's platform workers (4 whatever the cores), which compile the program's
// hot functions with TurboFan in the background.  A Go module's runtime
// keeps them busy for its first ~0.5 s (mallocgc, allocSpan, unicode.init:
// ~250 ms of CPU, in plain runs too); on a machine of few cores, busy with
// other work, the program's thread (and calltrace's reader) took turns with
// them and waited on the run queue about as long as it ran: Go fib's first
// run traced 490 -> 235 ns/call, untraced 52 -> 11, at loadavg 8 on 2 cores.
// 10 nicer than the program, they take what it leaves, and still a tenth of
// a core when it leaves nothing, so the tier-up of its own hot code is not
// starved (nice 19 delayed it: ~10 ns/call more CPU in warm runs).  Traced or not,
// the same runner.  (libuv's pool, which serves file calls, starts later.)
const helperNice = Math.min(19, require('os').getPriority() + 10);
for (const t of fs.readdirSync('/proc/self/task')) {
	if (+t === process.pid)
		continue;
	try {
		require('os').setPriority(+t, helperNice); // one thread: on Linux a tid is a pid to setpriority
	} catch (e) {
		// a thread gone, or no setpriority in a sandbox: scheduled as before
	}
}

const wasmModule = new WebAssembly.Module(fs.readFileSync(modPath));
const isGo = WebAssembly.Module.imports(wasmModule).some((i) => i.module === 'go' || i.module === 'gojs');

let rec = null;
let finished = false;

function writeAll(fd, bytes) {
	let off = 0;
	while (off < bytes.length)
		off += fs.writeSync(fd, bytes, off, bytes.length - off);
}

// The recorder's hooks run millions of times from the program's first call:
// all compiled by TurboFan up front (the module is small: about a
// millisecond), not lazily by Liftoff on first call with a tier-up later.
// That tier-up is queued on V8's background compiler behind the program's
// own hot functions: a Go module's runtime keeps it busy for 100-200 ms at
// start, hooks in Liftoff code all that time.  The flags are V8's defaults
// again before the program's code runs, which compiles as it would untraced.
function compileOptimized(bytes) {
	const v8 = require('v8');
	v8.setFlagsFromString('--no-liftoff');
	v8.setFlagsFromString('--no-wasm-lazy-compilation');
	try {
		return new WebAssembly.Module(bytes);
	} finally {
		v8.setFlagsFromString('--wasm-lazy-compilation');
		v8.setFlagsFromString('--liftoff');
	}
}

function setupRecorder() {
	// The recorder's clock: node:wasi's clock_time_get (CLOCK_MONOTONIC, as
	// the BPF side's timestamps) writing into the recorder's own memory;
	// "clock": "none" only in bench/wasm.py, to measure what the clock costs
	const { WASI } = require('wasi');
	const clock = new WASI({ version: 'preview1' });
	const wasiImport = cfg.clock === 'none' ? { clock_time_get: () => 0 } : clock.wasiImport;
	const inst = new WebAssembly.Instance(compileOptimized(fs.readFileSync(cfg.recorder)), {
		wasi_snapshot_preview1: wasiImport,
		env: {
			flush(ptr, len) {
				try {
					writeAll(cfg.fd, new Uint8Array(rec.memory.buffer, ptr, len));
				} catch (e) {
					// calltrace stopped reading (--duration, --max-size, killed):
					// the program runs on, untraced
					rec.stop();
				}
			},
		},
	});
	rec = inst.exports;
	clock.initialize(inst); // binds clock_time_get to the recorder's memory
	const c = rec.config();
	let dv = new DataView(rec.memory.buffer);
	const L = cfg.limits;
	dv.setUint32(c + 0, process.pid, true);
	dv.setUint32(c + 4, L.flags, true);
	dv.setUint32(c + 8, L.max_depth, true);
	dv.setUint32(c + 12, L.sample_n, true);
	dv.setUint32(c + 16, L.sample_g_n, true);
	dv.setUint32(c + 20, cfg.sites.length, true);
	dv.setBigUint64(c + 24, BigInt(L.min_dur_ns), true);
	dv.setBigUint64(c + 32, BigInt(L.max_events), true);
	const st = rec.site_table();
	new Uint32Array(rec.memory.buffer, st, cfg.sites.length).set(cfg.sites);
	const hooks = {};
	for (const name of ['enter', 'exit', 'depth', 'unwind', 'arg_i32', 'arg_i64', 'arg_f32', 'arg_f64',
		'enter1', 'enter2', 'enter3', 'enter4', 'exit1', 'genter', 'gexit', 'grestart'])
		hooks[name] = rec[name];
	return hooks;
}

function finishTrace(trapped) {
	if (!rec || finished)
		return;
	finished = true;
	rec.finish(trapped ? 1 : 0);
}

// What node prints for an uncaught error, less what differs between the
// instrumented and the original module (code offsets, the runner's frames).
function reportTrap(e) {
	let text = String(e && e.stack ? e.stack : e);
	if (e instanceof WebAssembly.RuntimeError || e instanceof RangeError) {
		const lines = text.split('\n');
		text = [lines[0]].concat(lines.slice(1).filter((l) => l.includes('wasm://'))
			.map((l) => l.replace(/\s*\(?wasm:\/\/[^)]*\)?/, ''))).join('\n');
	}
	process.stderr.write(text + '\n');
}

const imports = {};
if (traced)
	imports.calltrace = setupRecorder();

if (isGo) {
	const wasmExec = traced ? cfg.wasm_exec : process.env.CALLTRACE_GO_WASM_EXEC;
	globalThis.require = require;
	globalThis.fs = fs;
	// Go 1.19's node glue assigned globalThis.crypto, which node 20 made a
	// getter; node 20 has crypto.getRandomValues, performance and
	// TextEncoder/TextDecoder built in.
	require(wasmExec);
	const go = new Go();
	go.argv = [argv0].concat(args);
	go.env = Object.assign({ TMPDIR: require('os').tmpdir() }, process.env);
	go.exit = (code) => {
		finishTrace(false);
		process.exit(code);
	};
	Object.assign(imports, go.importObject);
	const inst = new WebAssembly.Instance(wasmModule, imports);
	process.on('exit', (code) => { // node exits when no event is pending
		if (code === 0 && !go.exited) {
			// deadlock: let Go print its error and stacks
			go._pendingEvent = { id: 0 };
			go._resume();
		}
		finishTrace(false);
	});
	go.run(inst).catch((err) => {
		finishTrace(true);
		reportTrap(err);
		process.exit(1);
	});
} else {
	const { WASI } = require('wasi');
	const wasi = new WASI({
		version: 'preview1',
		args: [argv0].concat(args),
		env: process.env,
		preopens: { '/': '/', '.': '.' },
		returnOnExit: true,
	});
	Object.assign(imports, wasi.getImportObject());
	let code = 0;
	try {
		const inst = new WebAssembly.Instance(wasmModule, imports);
		code = wasi.start(inst);
		finishTrace(false);
	} catch (e) {
		finishTrace(true);
		reportTrap(e);
		code = 1;
	}
	process.exitCode = code;
}
