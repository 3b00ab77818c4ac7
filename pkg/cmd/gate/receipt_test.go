package gate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/session/receipt"
)

func TestReceiptVerifyArgs(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		tty     bool
		key     string
		input   string
		wantErr string
	}{
		{args: []string{"r.json"}, input: "r.json"},
		{args: []string{"--key", "k", "-"}, key: "k", input: "-"},
		{args: nil, input: "-"},
		{args: nil, tty: true, wantErr: "no receipt given"},
		{args: []string{"a", "b"}, wantErr: "accepts at most 1 arg"},
	} {
		streams, _, _, _ := cli.Test()
		streams.SetStdinTTY(tc.tty)
		var got *ReceiptVerifyOptions
		cmd := newCmdReceiptVerify(&Options{IO: streams}, func(o *ReceiptVerifyOptions) error { got = o; return nil })
		cmd.SetArgs(tc.args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.KeyFile != tc.key || got.Input != tc.input {
			t.Errorf("%v: %v, options %+v", tc.args, err, got)
		}
	}
}

func TestReceiptVerifyRun(t *testing.T) {
	dir := t.TempDir()
	key := []byte("0123456789abcdef0123456789abcde\n")
	keyFile := filepath.Join(dir, "receipt.key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	r := receipt.Receipt{ReceiptID: "rcpt_00112233aabbccdd", ToolID: "file_locator", Inputs: json.RawMessage(`{"q":"<x>"}`)}
	receipt.Sign(&r, key)
	good, _ := json.Marshal(r)
	r.Outputs = "changed"
	bad, _ := json.Marshal(r)
	effect := `{"type":"receipt","seq":1,"receipt":` + string(good) + `}`

	for _, tc := range []struct {
		name, in string
		format   cli.Format
		code     int
		out      string
	}{
		{"one valid", string(good), cli.FormatJSON, 0,
			`{"schema_version":1,"line":1,"receipt_id":"rcpt_00112233aabbccdd","valid":true}` + "\n"},
		{"text", string(good) + "\n\n" + effect + "\n" + string(bad) + "\n", cli.FormatText, 1,
			"standard input:1: rcpt_00112233aabbccdd valid\nstandard input:3: rcpt_00112233aabbccdd valid\nstandard input:4: rcpt_00112233aabbccdd invalid: bad signature\n"},
		{"long id bounded", strings.Replace(string(good), "rcpt_00112233aabbccdd", strings.Repeat("é", 100), 1), cli.FormatText, 1,
			"standard input:1: " + strings.Repeat("é", 40) + "… invalid: bad signature\n"},
		{"effect without receipt", `{"type":"receipt"}`, cli.FormatJSON, 3, ""},
		{"array", `[]`, cli.FormatJSON, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			streams, in, out, errOut := cli.Test()
			in.WriteString(tc.in)
			err := receiptVerifyRun(&ReceiptVerifyOptions{IO: streams, Output: tc.format, KeyFile: keyFile, Input: "-"})
			code := 0
			var ee *cli.ExitError
			if errors.As(err, &ee) {
				code = ee.Code
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || out.String() != tc.out {
				t.Errorf("exit %d (%v), out:\n%s\nwant exit %d, out:\n%s", code, err, out, tc.code, tc.out)
			}
			if strings.Contains(out.String()+errOut.String(), string(key[:16])) || err != nil && strings.Contains(err.Error(), string(key[:16])) {
				t.Error("the key shows")
			}
		})
	}
}
