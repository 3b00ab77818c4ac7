package gate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/serve"
	"github.com/govkit/govkit/pkg/session/conversation"
	"github.com/govkit/govkit/pkg/table"
)

// ConversationsOptions are the flags of gate conversations.
type ConversationsOptions struct {
	*Options
	Server string
	Output cli.Format
}

func newCmdConversations(opts *Options) *cobra.Command {
	o := &ConversationsOptions{Options: opts}
	cmd := &cobra.Command{
		Use:   "conversations",
		Short: "Talk to gate serve: list, show, send, cancel, watch, mode",
		Long: `Conversations is gate serve's command-line client, for people at a terminal:
text on a terminal, JSON Lines when piped (-o json). --server names the
server: http://127.0.0.1:PORT, https://HOST:PORT or unix:PATH (GOVKIT_SERVE).
A server started with --tokens needs --token (GOVKIT_TOKEN), and an https://
one with a private CA --ca-cert (GOVKIT_CA_CERT).

A message sent while the agent works is refused (AGENT_BUSY): wait for it
('watch ID') or cancel it ('cancel ID') first. 'send --wait' follows the
turn it starts until the agent is idle again; 'watch' follows a conversation
until interrupted, starting with its state and recent messages.

Exit status:

    0  success
    1  refused by the conversation's rules: AGENT_BUSY, CONTEXT_EXHAUSTED,
       an upgrade to decide in auditd (the message says which)
    2  send --wait: the turn ended in error or with the context exhausted
    3  usage error, gate serve unreachable, no such conversation, internal
       failure`,
		Example: `  gate conversations new --cwd ~/src/app
  gate conversations send conv_1a2b 'run the tests and fix what fails' --wait
  gate conversations watch conv_1a2b
  gate conversations mode conv_1a2b downgrade`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.Server, "server", "http://127.0.0.1:8700", "gate serve's `ADDRESS`: http://HOST:PORT, https://HOST:PORT or unix:PATH")
	cli.KeepEnv(pf, "server", "GOVKIT_SERVE")
	// Persistent, unlike cli.AddOutputFlag's: -o goes after the
	// subcommand (gate conversations list -o json), where people put it.
	pf.VarP(&o.Output, "output", "o", "output `format`: text or json (default: text on a terminal, json otherwise)")
	_ = cmd.RegisterFlagCompletionFunc("output",
		cobra.FixedCompletions([]string{string(cli.FormatText), string(cli.FormatJSON)}, cobra.ShellCompDirectiveNoFileComp))

	var all bool
	list := &cobra.Command{Use: "list", Short: "List conversations (not sub-agents)", Args: cobra.NoArgs,
		RunE: o.wrap(func(ctx context.Context, c *serve.Client, _ []string) error {
			path := serve.PathConversations
			if all {
				path += "?include_subagents=true"
			}
			var out struct {
				Conversations []serve.StateView `json:"conversations"`
			}
			if err := c.Do(ctx, http.MethodGet, path, nil, &out); err != nil {
				return err
			}
			if o.json() {
				return lines(o.IO.Out, out.Conversations)
			}
			rows := [][]string{}
			for _, v := range out.Conversations {
				rows = append(rows, []string{v.ID, string(v.State), string(v.Mode), v.Model, v.Cwd})
			}
			return o.table([]string{"ID", "STATE", "MODE", "MODEL", "CWD"}, rows)
		})}
	list.Flags().BoolVar(&all, "all", false, "include sub-agents")

	var cwd, model, mode string
	create := &cobra.Command{Use: "new --cwd DIR", Short: "Start a conversation in a working directory", Args: cobra.NoArgs,
		RunE: o.wrap(func(ctx context.Context, c *serve.Client, _ []string) error {
			var v serve.StateView
			if err := c.Do(ctx, http.MethodPost, serve.PathConversations, serve.CreateInput{Cwd: cwd, Model: model, Mode: mode}, &v); err != nil {
				return err
			}
			return o.state(v)
		})}
	create.Flags().StringVar(&cwd, "cwd", ".", "the conversation's fixed working `DIR`")
	create.Flags().StringVar(&model, "model", "", "the `MODEL` (default: the server's)")
	create.Flags().StringVar(&mode, "mode", "", "the conversation's `MODE`: restricted (the default where Landlock works) or unrestricted")
	_ = create.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{"restricted", "unrestricted"}, cobra.ShellCompDirectiveNoFileComp))

	show := &cobra.Command{Use: "show ID", Short: "Show a conversation and its messages", Args: cobra.ExactArgs(1),
		RunE: o.wrap(func(ctx context.Context, c *serve.Client, args []string) error {
			var v serve.ConversationView
			if err := c.Do(ctx, http.MethodGet, at(serve.PathConversation, args[0]), nil, &v); err != nil {
				return err
			}
			if o.json() {
				return lines(o.IO.Out, []serve.ConversationView{v})
			}
			if err := o.state(v.StateView); err != nil {
				return err
			}
			for _, m := range v.Messages {
				fmt.Fprintln(o.IO.Out, messageLine(m))
			}
			return nil
		})}

	var images []string
	var wait bool
	send := &cobra.Command{Use: "send ID TEXT", Short: "Send a message (refused while the agent is busy: cancel first)", Args: cobra.ExactArgs(2),
		RunE: o.wrap(func(ctx context.Context, c *serve.Client, args []string) error {
			in := serve.MessageInput{Text: args[1]}
			for _, f := range images {
				b, err := os.ReadFile(f)
				if err != nil {
					return cli.Failf("--image %v", unwrapPath(err))
				}
				in.Images = append(in.Images, serve.ImageInput{MediaType: http.DetectContentType(b), Data: base64.StdEncoding.EncodeToString(b)})
			}
			var v serve.StateView
			if err := c.Do(ctx, http.MethodPost, at(serve.PathMessages, args[0]), in, &v); err != nil {
				return err
			}
			if !wait {
				return o.state(v)
			}
			return o.follow(ctx, c, args[0], v.Messages)
		})}
	send.Flags().StringArrayVar(&images, "image", nil, "attach the image `FILE` (repeatable)")
	send.Flags().BoolVar(&wait, "wait", false, "follow the conversation until the agent is idle again")

	cancel := &cobra.Command{Use: "cancel ID", Short: "Cancel what the agent is doing (LLM request, running tool)", Args: cobra.ExactArgs(1),
		RunE: o.post(serve.PathCancel, nil)}
	cont := &cobra.Command{Use: "continue ID", Short: "Summarise the conversation to continue in a new one", Args: cobra.ExactArgs(1),
		RunE: o.post(serve.PathContinue, nil)}
	var untilIdle bool
	watch := &cobra.Command{Use: "watch ID", Short: "Follow a conversation's state and messages as they happen", Args: cobra.ExactArgs(1),
		Long: `Watch prints the conversation's state and recent messages, then every state
change and message as it is persisted, until interrupted: one JSON line per
event when piped ({"event":"state"|"message"|…,"data":{…}}), text on a
terminal. With --until-idle it returns once the agent is idle (or in error,
or with its context exhausted): at once if it is already.`,
		RunE: o.wrap(func(ctx context.Context, c *serve.Client, args []string) error {
			after := -1
			if untilIdle {
				after = 0
			}
			return o.follow(ctx, c, args[0], after)
		})}
	watch.Flags().BoolVar(&untilIdle, "until-idle", false, "return once the agent is idle (or in error, or exhausted)")

	var reason string
	modeCmd := &cobra.Command{Use: "mode ID downgrade|approve|deny", Short: "Downgrade a conversation, or decide its upgrade request", Args: cobra.ExactArgs(2),
		RunE: o.wrap(func(ctx context.Context, c *serve.Client, args []string) error {
			var v serve.StateView
			if err := c.Do(ctx, http.MethodPost, at(serve.PathMode, args[0]), serve.ModeInput{Action: args[1], Reason: reason}, &v); err != nil {
				return err
			}
			return o.state(v)
		})}
	modeCmd.Flags().StringVar(&reason, "reason", "", "why, as `TEXT` kept with the decision")

	cmd.AddCommand(list, create, show, send, cancel, cont, watch, modeCmd)
	return cmd
}

// at fills a route's {id}; a sub-agent's id holds slashes.
func at(pattern, id string) string { return strings.Replace(pattern, "{id}", url.PathEscape(id), 1) }

func (o *ConversationsOptions) json() bool { return o.Output.Resolve(o.IO) == cli.FormatJSON }

func (o *ConversationsOptions) wrap(fn func(context.Context, *serve.Client, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 && strings.TrimSpace(args[0]) == "" {
			return cli.Failf("the conversation ID is empty").WithHint("list them with 'gate conversations list'")
		}
		roots, err := client.LoadCACert(o.CACert)
		if err != nil {
			return cli.CACertFailure(o.flags, err)
		}
		c, err := serve.NewClient(o.Server, serve.WithToken(o.Token), serve.WithRootCAs(roots))
		if err != nil {
			return cli.Failf("--server: %v", err).WithHint("pass --server http://127.0.0.1:PORT or --server unix:PATH (GOVKIT_SERVE)")
		}
		ctx, stop := cli.RunContext(o.Context)
		defer stop()
		err = fn(ctx, c, args)
		var e *serve.APIError
		if errors.As(err, &e) {
			id := "ID"
			if len(args) > 0 {
				id = args[0]
			}
			fail := cli.Failf("%s", e.Message).WithHint(hintFor(e, id))
			if e.Status == http.StatusConflict {
				// A rule refused it (busy, exhausted, …): not a usage
				// error, so a script can tell the two apart.
				fail.Code = exitRefused
			}
			return fail
		}
		if errors.Is(err, serve.ErrUnreachable) {
			return cli.Fail(err, "is gate serve running at "+o.Server+"? Start it with 'gate serve --llm URL --model M', or give its address with --server (GOVKIT_SERVE)")
		}
		return err
	}
}

// gate conversations' exit statuses besides 0 and 3 (its --help).
const (
	exitRefused   = 1 // a 409: the conversation's rules refused the request
	exitTurnError = 2 // send --wait: the turn ended in error or exhausted
)

func hintFor(e *serve.APIError, id string) string {
	switch e.Code {
	case "AGENT_BUSY":
		return "wait for the agent ('gate conversations watch " + id + "') or cancel it ('gate conversations cancel " + id + "')"
	case "CONTEXT_EXHAUSTED":
		return "start a new conversation from its summary (POST /api/v1/conversations/" + id + "/continuation)"
	case "unauthenticated":
		return "pass --token TOKEN (or set GOVKIT_TOKEN) with a token of gate serve's --tokens file"
	case "not_found":
		return "list them with 'gate conversations list'"
	}
	return ""
}

func (o *ConversationsOptions) post(pattern string, in any) func(*cobra.Command, []string) error {
	return o.wrap(func(ctx context.Context, c *serve.Client, args []string) error {
		var v serve.StateView
		if err := c.Do(ctx, http.MethodPost, at(pattern, args[0]), in, &v); err != nil {
			return err
		}
		return o.state(v)
	})
}

func (o *ConversationsOptions) state(v serve.StateView) error {
	if o.json() {
		return lines(o.IO.Out, []serve.StateView{v})
	}
	fmt.Fprintf(o.IO.Out, "%s  %s  %s  %s  %s\n", v.ID, v.State, v.Mode, v.Model, v.Cwd)
	return nil
}

// lines writes each item as one line of JSON.
func lines[T any](w io.Writer, items []T) error {
	for _, it := range items {
		if err := cli.WriteJSON(w, it); err != nil {
			return err
		}
	}
	return nil
}

func (o *ConversationsOptions) table(head []string, rows [][]string) error {
	s, err := table.Render("", head, rows)
	if err != nil {
		return err
	}
	_, err = io.WriteString(o.IO.Out, s)
	return err
}

// follow prints the stream. With after ≥ 0 (send --wait: the number of
// messages once the user's message was added, which is its seq) it skips
// the history before that message and returns once the agent is idle (or
// in error, or exhausted) again with more messages than that, or after
// having been busy; a turn that ended in error or exhausted is exit 2.
func (o *ConversationsOptions) follow(ctx context.Context, c *serve.Client, id string, after int) error {
	untilIdle := after >= 0
	busy := false
	var last serve.StateView
	var seen int64 // the last message printed
	stopErr := errors.New("done")
	err := c.Watch(ctx, id, func(f serve.Frame) error {
		if untilIdle && f.Event == "message" {
			var m struct {
				Seq int64 `json:"seq"`
			}
			if json.Unmarshal(f.Data, &m) == nil {
				if m.Seq < int64(after) {
					return nil
				}
				seen = max(seen, m.Seq)
			}
		}
		if f.Event == "state" && untilIdle {
			_ = json.Unmarshal(f.Data, &last)
			switch last.State {
			case conversation.Idle, conversation.Error, conversation.ContextExhausted:
				if busy || last.Messages > after {
					// The stream sends the state before the recent
					// messages: when the turn is over already, they
					// come from the conversation itself, then the state.
					if err := o.catchUp(ctx, c, id, max(seen+1, int64(after))); err != nil {
						return err
					}
					o.frame(f)
					return stopErr
				}
			default:
				busy = true
			}
		}
		o.frame(f)
		return nil
	})
	if err == stopErr {
		if last.State == conversation.Error || last.State == conversation.ContextExhausted {
			hint := "send a new message to continue it"
			if last.State == conversation.ContextExhausted {
				hint = "start a new conversation from its summary (POST /api/v1/conversations/" + id + "/continuation)"
			}
			return &cli.ExitError{Code: exitTurnError, Err: fmt.Errorf("the turn ended in state %s (its last messages say why)", last.State), Hint: hint}
		}
		return nil
	}
	if err == nil && untilIdle && ctx.Err() == nil {
		return cli.Failf("gate serve closed the stream before the turn ended").WithHint("see 'gate conversations show " + id + "'")
	}
	return err
}

// catchUp prints the conversation's messages from seq from on, as the
// stream would have.
func (o *ConversationsOptions) catchUp(ctx context.Context, c *serve.Client, id string, from int64) error {
	var v serve.ConversationView
	if err := c.Do(ctx, http.MethodGet, at(serve.PathConversation, id), nil, &v); err != nil {
		return err
	}
	for _, m := range v.Messages {
		if m.Seq < from {
			continue
		}
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		o.frame(serve.Frame{Event: "message", Data: data})
	}
	return nil
}

// frame prints one stream event: a JSON line, or text.
func (o *ConversationsOptions) frame(f serve.Frame) {
	if o.json() {
		fmt.Fprintf(o.IO.Out, "{\"event\":%q,\"data\":%s}\n", f.Event, f.Data)
	} else {
		o.printFrame(f)
	}
}

func (o *ConversationsOptions) printFrame(f serve.Frame) {
	switch f.Event {
	case "message":
		var m conversation.Message
		if json.Unmarshal(f.Data, &m) == nil {
			fmt.Fprintln(o.IO.Out, messageLine(m))
		}
	case "state":
		var v serve.StateView
		if json.Unmarshal(f.Data, &v) == nil {
			fmt.Fprintf(o.IO.Out, "[state] %s\n", v.State)
		}
	default:
		// notify, reject, error, schedule_retry, …: their words when
		// they have some.
		var e struct{ Text, Detail, Code string }
		if json.Unmarshal(f.Data, &e) == nil && (e.Text != "" || e.Detail != "") {
			msg := strings.TrimSpace(e.Text + " " + e.Detail)
			if e.Code != "" {
				msg = e.Code + ": " + msg
			}
			fmt.Fprintf(o.IO.Out, "[%s] %s\n", f.Event, msg)
			return
		}
		fmt.Fprintf(o.IO.Out, "[%s] %s\n", f.Event, f.Data)
	}
}

func messageLine(m conversation.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", m.Seq, m.Role)
	if m.Kind != "" {
		b.WriteString(" (" + m.Kind + ")")
	}
	if m.Tool != "" {
		b.WriteString(" " + m.Tool)
	}
	if m.IsError {
		b.WriteString(" error")
	}
	if text := strings.TrimRight(m.Text, "\n"); text != "" {
		// A tool's output runs over lines: indented under its message.
		b.WriteString(": " + strings.ReplaceAll(text, "\n", "\n    "))
	}
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(&b, "\n    → %s %s", tc.Name, tc.Args)
	}
	return b.String()
}
