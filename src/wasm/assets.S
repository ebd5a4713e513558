/* The runner script and the recorder module, built into calltrace so that an
 * installed binary needs no data files (run.c writes them to a private
 * directory when it records).  RECORDER_WASM is the path of recorder.wasm in
 * the build directory. */
	.section .rodata
	.global ct_asset_runner, ct_asset_runner_end
	.global ct_asset_recorder, ct_asset_recorder_end
ct_asset_runner:
	.incbin "src/wasm/runner.cjs"
ct_asset_runner_end:
	.byte 0
	.balign 8
ct_asset_recorder:
	.incbin RECORDER_WASM
ct_asset_recorder_end:
	.byte 0
	.section .note.GNU-stack,"",@progbits
