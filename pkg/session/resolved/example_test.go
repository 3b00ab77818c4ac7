package resolved_test

import (
	"fmt"
	"time"

	"github.com/govkit/govkit/pkg/session/resolved"
)

// The homepage scenario of seed 000 Appendix A, as a reducer drives the
// context: bulk discovery, a user @mention, a file edit aimed at the host,
// and the retry on the child.
func Example() {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx := resolved.New(resolved.DefaultConfig())

	// tool_result.resources of a search: bulk, not explicit.
	for _, reg := range []resolved.Registration{
		{Kind: "node", ProviderUID: "delly", Name: "delly"},
		{Kind: "lxc", ProviderUID: "141", Name: "homepage-docker", HostUID: "delly", HostName: "delly"},
	} {
		if _, err := ctx.Register(reg, now, false); err != nil {
			panic(err)
		}
	}
	fmt.Println("after discovery:", ctx.CheckRouting("delly", now) == nil)

	// resolve{resource: "homepage-docker", explicit: true}: the user's @mention.
	ctx.MarkExplicitAccess("homepage-docker", now)

	// A write on something never discovered.
	if _, ok := ctx.Lookup("lxc:delly:999", now); !ok {
		fmt.Println(resolved.StrictResolution("lxc:delly:999", "restart").Error.Code)
	}
	// file_edit target_host="delly".
	if m := ctx.CheckRouting("delly", now); m != nil {
		resp := m.Response()
		fmt.Println(resp.Error.Code, resp.Error.Details["recovery_hint"])
	}
	// The retry with the child's id.
	fmt.Println("retry:", ctx.CheckRouting("lxc:delly:141", now) == nil)
	// Output:
	// after discovery: true
	// STRICT_RESOLUTION
	// ROUTING_MISMATCH Retry with target_resource_id='lxc:delly:141'
	// retry: true
}
