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

TEST(goruntime_called_by_runtime_main_initializers_closures)
{
	CHECK(ct_go_called_by_runtime("main.main"));
	CHECK(ct_go_called_by_runtime("main.init"));
	CHECK(ct_go_called_by_runtime("main.init.0"));
	CHECK(ct_go_called_by_runtime("github.com/evanw/esbuild/internal/compat.init"));
	CHECK(ct_go_called_by_runtime("net/http.init.12"));
	CHECK(ct_go_called_by_runtime("main.init.func1"));
	CHECK(ct_go_called_by_runtime("main.goroutines.func1"));
	CHECK(ct_go_called_by_runtime("main.(*T).run.func2.1"));
	CHECK(ct_go_called_by_runtime("net/http.(*Server).Serve.gowrap3"));
	CHECK(ct_go_called_by_runtime("main.f.deferwrap1"));
	CHECK(!ct_go_called_by_runtime("main.(*byK).init"));
	CHECK(!ct_go_called_by_runtime("main.(*byK).scale"));
	CHECK(!ct_go_called_by_runtime("main.initialize"));
	CHECK(!ct_go_called_by_runtime("main.init."));
	CHECK(!ct_go_called_by_runtime("main.funcs"));
	CHECK(!ct_go_called_by_runtime("example.com/x.init/y.f"));
	CHECK(!ct_go_called_by_runtime("main.mainly"));
}

TEST(goruntime_closure_parent)
{
	CHECK_EQ_U(ct_go_closure_parent_len("main.f.func1"), strlen("main.f"));
	CHECK_EQ_U(ct_go_closure_parent_len("main.f.func1.2"), strlen("main.f.func1"));
	CHECK_EQ_U(ct_go_closure_parent_len("main.(*T).run.func2"), strlen("main.(*T).run"));
	CHECK_EQ_U(ct_go_closure_parent_len("net/http.(*Server).Serve.gowrap3"), strlen("net/http.(*Server).Serve"));
	CHECK_EQ_U(ct_go_closure_parent_len("example.com/x.v1/y.F.func1"), strlen("example.com/x.v1/y.F"));
	CHECK_EQ_U(ct_go_closure_parent_len("nodot"), 0);
}

TEST(goruntime_goexit_with_and_without_abi0)
{
	CHECK(ct_go_is_goexit("runtime.goexit"));
	CHECK(ct_go_is_goexit("runtime.goexit.abi0"));
	CHECK(!ct_go_is_goexit("runtime.goexit1"));
}
