package approvals

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/termtext"
)

// completeTimeout bounds the question a completion asks auditd: a shell
// waiting on Tab must not hang on an auditd that does not answer.
const completeTimeout = 2 * time.Second

// completeID completes the ID argument of approve, deny, show and wait
// with the pending approvals auditd lists (issue 20), each described by
// its action, resource and requester. When auditd does not answer, or
// refuses, it offers nothing, and never file names.
func (o *Options) completeID(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	const none = cobra.ShellCompDirectiveNoFileComp
	if len(args) > 0 {
		return nil, none
	}
	// Cobra's __complete runs no PreRun: read --url, --token and
	// --ca-cert from the environment and config files as a run would.
	if err := cli.NewConfigLoader("approvals").Load(c); err != nil {
		return nil, none
	}
	cl, err := o.newClient()
	if err != nil {
		return nil, none
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	pending, err := cl.PendingApprovals(ctx)
	if err != nil {
		return nil, none
	}
	var out []cobra.Completion
	for _, r := range pending {
		// Both come from auditd: an ID a shell would split, or a
		// description with control characters, is not offered as is.
		if strings.HasPrefix(r.ID, toComplete) && r.ID != "" && termtext.OneLine(r.ID) == r.ID && !strings.ContainsAny(r.ID, " \t") {
			desc := fmt.Sprintf("%s %s:%s, requested by %s", r.Action, r.Resource.Type, r.Resource.Name, r.RequestedBy)
			out = append(out, cobra.CompletionWithDesc(r.ID, termtext.Truncate(termtext.OneLine(desc), 120)))
		}
	}
	return out, none
}
