// bench/wasm.py's comparison: the same instrumented module with its hooks in
// JavaScript (each hit timestamps and stores an event into a typed array),
// instead of calltrace's recorder module.  Not shipped; measures the design
// calltrace did not take.
//   node jshooks.cjs MODULE WASM_EXEC ARGV0 [ARGS...]
'use strict';
const fs = require('fs');
const [modPath, wasmExec, argv0, ...args] = process.argv.slice(2);
const mod = new WebAssembly.Module(fs.readFileSync(modPath));
const ev = new BigUint64Array(1 << 16);
const ev32 = new Uint32Array(ev.buffer);
let pos = 0;
function hit(site, goid, key) {
	const i = pos & 0xfff8;
	ev[i] = process.hrtime.bigint();
	ev[i + 1] = goid;
	ev[i + 2] = key;
	ev32[2 * i + 6] = site;
	pos += 5;
}
let depth = 0;
const calltrace = {
	enter(s) { depth++; hit(s, 0n, BigInt(depth)); },
	exit(s) { hit(s, 0n, BigInt(depth)); depth--; },
	depth() { return depth; },
	unwind(d) { depth = d + 1; },
	arg_i32() {}, arg_i64() {}, arg_f32() {}, arg_f64() {},
	enter1(s) { calltrace.enter(s); }, enter2(s) { calltrace.enter(s); }, enter3(s) { calltrace.enter(s); },
	enter4(s) { calltrace.enter(s); }, exit1(s) { calltrace.exit(s); },
	genter(s, resume, goid, key) { if (!resume) hit(s, goid, key); },
	gexit(s, unwinding, goid, key) { if (!unwinding) hit(s, goid, key); },
	grestart(s, goid, key) { hit(s, goid, key); },
};
if (WebAssembly.Module.imports(mod).some((i) => i.module === 'go')) {
	globalThis.require = require;
	globalThis.fs = fs;
	require(wasmExec);
	const go = new Go();
	go.argv = [argv0].concat(args);
	go.env = process.env;
	go.exit = (code) => process.exit(code);
	const inst = new WebAssembly.Instance(mod, Object.assign({ calltrace }, go.importObject));
	go.run(inst);
} else {
	const { WASI } = require('wasi');
	const wasi = new WASI({ version: 'preview1', args: [argv0].concat(args), env: process.env, returnOnExit: true });
	const inst = new WebAssembly.Instance(mod, Object.assign({ calltrace }, wasi.getImportObject()));
	process.exitCode = wasi.start(inst);
}
