/* Tests for src/target/goruntime.c's name rules (the runtime.g table is
 * checked against DWARF on real binaries in test_target.c). */
#include "target/goruntime.h"
#include "unit.h"

TEST(goruntime_never_probed_with_and_without_abi0)
{
	CHECK(ct_go_must_not_probe("runtime.mcall"));
	CHECK(ct_go_must_not_probe("runtime.systemstack_switch.abi0"));
	CHECK(ct_go_must_not_probe("runtime.morestack_noctxt.abi0"));
	CHECK(ct_go_must_not_probe("runtime.debugCall32768"));
	CHECK(ct_go_must_not_probe("_rt0_amd64_linux"));
	CHECK(!ct_go_must_not_probe("runtime.newproc1"));
	CHECK(!ct_go_must_not_probe("main.mcall"));
	CHECK(!ct_go_must_not_probe("runtime.goexit1"));
}

TEST(goruntime_morestack_family)
{
	CHECK(ct_go_is_morestack("runtime.morestack"));
	CHECK(ct_go_is_morestack("runtime.morestack_noctxt"));
	CHECK(ct_go_is_morestack("runtime.morestack_noctxt.abi0"));
	CHECK(!ct_go_is_morestack("runtime.newstack"));
	CHECK(!ct_go_is_morestack("main.morestack"));
}
