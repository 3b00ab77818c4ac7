package mcpgate

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ListTools connects to a server as an MCP client (the SDK's, over t:
// initialize, initialized, tools/list page by page) and returns its tools
// in the server's order: what `gate mcp --print-kinds` classifies.
func ListTools(ctx context.Context, t mcp.Transport, version string) ([]Tool, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "gate", Version: version}, nil)
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("initializing: %w", err)
	}
	defer cs.Close()
	if cs.InitializeResult().Capabilities.Tools == nil {
		return nil, nil
	}
	var tools []Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if len(tools) >= maxPages*1000 {
			return nil, fmt.Errorf("tools/list: more than %d tools", maxPages*1000)
		}
		tools = append(tools, Tool{Name: tool.Name, Annotations: tool.Annotations, OutputSchema: tool.OutputSchema != nil})
	}
	return tools, nil
}
